"""sciembed's model families seen from the library: building them from BERT, and saving them so that
transformers (with or without sciembed) and sentence-transformers both load them.

The families themselves live in ``modeling/`` (installed as ``sciembed.modeling``); importing
``sciembed.modeling`` registers them with ``AutoConfig`` / ``AutoModel``, which every loader here does
first, so sciembed's own code never needs ``trust_remote_code``.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

#: model_type -> (module under sciembed.modeling, model class name)
FAMILIES: dict[str, tuple[str, str]] = {
    "multi2spe": ("multi2spe", "Multi2SPEModel"),
    "control_code": ("control_code", "ControlCodeModel"),
    "moe_bert": ("moe_bert", "MoEBertModel"),
}


def register_families() -> None:
    """Register every family with the transformers Auto classes (idempotent)."""
    importlib.import_module("sciembed.modeling")


def family_of(model: Any) -> str | None:
    """The family name of a model (``"multi2spe"``, ...) or ``None`` for any other model.

    Works for models loaded as remote code too, whose classes are not sciembed's own objects.
    """
    model_type = getattr(type(getattr(model, "config", None)), "model_type", None)
    return model_type if model_type in FAMILIES else None


def family_class(family: str) -> type[PreTrainedModel]:
    """The model class of a family, e.g. ``family_class("multi2spe") is Multi2SPEModel``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; choose one of {', '.join(FAMILIES)}")
    module, name = FAMILIES[family]
    register_families()
    return getattr(importlib.import_module(f"sciembed.modeling.{module}"), name)


def from_bert(
    family: str, base: str | os.PathLike[str], **options: Any
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Build ``family`` from the BERT checkpoint ``base`` (Hub id or folder); returns (model, tokenizer).

    The tokenizer is the base's, with whatever tokens the family adds (control codes, domain tokens,
    extra CLS tokens), so the pair can be saved together with :func:`save_pretrained`.
    """
    from transformers import AutoTokenizer, BertConfig

    model_class = family_class(family)
    # PretrainedConfig keeps unknown keyword arguments silently; a misspelt option must not vanish.
    known = set(inspect.signature(model_class.config_class.__init__).parameters) | set(
        inspect.signature(BertConfig.__init__).parameters
    )
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown {family} option(s) {', '.join(unknown)}")
    tokenizer = AutoTokenizer.from_pretrained(base)
    return model_class.from_bert(str(base), tokenizer=tokenizer, **options), tokenizer


def save_pretrained(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, folder: str | os.PathLike[str]
) -> Path:
    """Save a family model with its tokenizer and remote code, plus sentence-transformers files.

    The folder then loads with ``AutoModel.from_pretrained(folder, trust_remote_code=True)`` without
    sciembed, and with ``SentenceTransformer(folder, trust_remote_code=True)``, whose embedding is the
    family's ``pooler_output`` (read by the Transformer module itself, so no Pooling module sees the
    longer-than-input hidden states of families that insert tokens).
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer

    if family_of(model) is None:
        raise ValueError(f"{type(model).__name__} is not a sciembed model family ({', '.join(FAMILIES)})")
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    register_families()
    module = Transformer(
        str(folder),
        modality_config={"text": {"method": "forward", "method_output_name": "pooler_output"}},
        module_output_name="sentence_embedding",
    )
    SentenceTransformer(modules=[module], device="cpu").save(str(folder), create_model_card=False)
    return folder
