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

#: model_type -> (module under sciembed.modeling, sequence-classification class name): SPECTROID's MLP
#: classification heads (Capuano et al.) on a plain BERT encoder ("spectroid", the SPECTER / SciNCL setting)
#: and on each family's paper embedding. "spectroid" is no entry of FAMILIES: its encoder is a plain BERT
#: with [CLS] pooling, which sciembed embeds as any transformers encoder.
CLASSIFIERS: dict[str, tuple[str, str]] = {
    "spectroid": ("spectroid", "SpectroidForSequenceClassification"),
    "multi2spe": ("multi2spe", "Multi2SPEForSequenceClassification"),
    "control_code": ("control_code", "ControlCodeForSequenceClassification"),
    "moe_bert": ("moe_bert", "MoEBertForSequenceClassification"),
}


def classifier_heads() -> dict[str, tuple[int, ...]]:
    """SPECTROID's classification heads by name (``CH1``, ``CH2``, ``CH3``) -> hidden-layer sizes."""
    from .modeling.spectroid.modeling_spectroid import SPECTROID_HEADS

    return dict(SPECTROID_HEADS)


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
    _check_options(family, options, model_class.config_class, BertConfig)
    tokenizer = AutoTokenizer.from_pretrained(base)
    return model_class.from_bert(str(base), tokenizer=tokenizer, **options), tokenizer


def classifier_from_bert(
    family: str,
    base: str | os.PathLike[str],
    head: str | list[int] = "CH2",
    num_labels: int | None = None,
    **options: Any,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Build a SPECTROID classifier from the BERT checkpoint ``base``; returns (model, tokenizer).

    ``family`` is ``"spectroid"`` (a plain BERT encoder, [CLS] embedding) or one of :data:`FAMILIES` (the
    head then sits on that family's paper embedding); ``head`` is ``"CH1"``, ``"CH2"``, ``"CH3"`` or a
    list of hidden sizes. Save the pair with ``model.save_pretrained`` and ``tokenizer.save_pretrained``:
    the folder loads with ``AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)``,
    and its encoder alone with ``AutoModel``.
    """
    from transformers import AutoTokenizer, BertConfig, PretrainedConfig

    if family not in CLASSIFIERS:
        raise ValueError(f"unknown classifier family {family!r}; choose one of {', '.join(CLASSIFIERS)}")
    module, name = CLASSIFIERS[family]
    register_families()
    model_class = getattr(importlib.import_module(f"sciembed.modeling.{module}"), name)
    # PretrainedConfig's fields too: a classifier's labels (id2label, problem_type, ...) are options.
    _check_options(family, options, model_class.config_class, BertConfig, PretrainedConfig)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if family in FAMILIES:  # the families add their tokens (control codes, domain or CLS tokens) to it
        options["tokenizer"] = tokenizer
    return model_class.from_bert(str(base), head=head, num_labels=num_labels, **options), tokenizer


def _check_options(family: str, options: dict[str, Any], *config_classes: type) -> None:
    """Refuse options that are parameters of none of ``config_classes``."""
    # PretrainedConfig keeps unknown keyword arguments silently; a misspelt option must not vanish.
    known = {name for config_class in config_classes for name in inspect.signature(config_class.__init__).parameters}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown {family} option(s) {', '.join(unknown)}")


def save_pretrained(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, folder: str | os.PathLike[str], *,
    normalize: bool = False, max_seq_length: int | None = None,
) -> Path:
    """Save a family model with its tokenizer and remote code, plus sentence-transformers files.

    The folder then loads with ``AutoModel.from_pretrained(folder, trust_remote_code=True)`` without
    sciembed, and with ``SentenceTransformer(folder, trust_remote_code=True)``, whose embedding is the
    family's ``pooler_output`` (read by the Transformer module itself, so no Pooling module sees the
    longer-than-input hidden states of families that insert tokens), followed by a Normalize module
    with ``normalize`` (a model trained in unit vectors), truncated at ``max_seq_length`` tokens when given.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Transformer

    if family_of(model) is None:
        raise ValueError(f"{type(model).__name__} is not a sciembed model family ({', '.join(FAMILIES)})")
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    register_families()
    module = Transformer(
        str(folder),
        max_seq_length=max_seq_length,
        modality_config={"text": {"method": "forward", "method_output_name": "pooler_output"}},
        module_output_name="sentence_embedding",
    )
    modules = [module, Normalize()] if normalize else [module]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder), create_model_card=False)
    return folder
