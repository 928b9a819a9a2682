"""sciembed's model families: their registry, building them from BERT, and saving them.

sciembed's model families seen from the library: the one registry that names them (:data:`REGISTRY`, read by the CLI,
the model cards, the export's code check and the packaging test), building them from BERT, and saving them so that
transformers (with or without sciembed) and sentence-transformers both load them.

The families themselves live in ``modeling/`` (installed as ``sciembed.modeling``). Importing
``sciembed.modeling`` registers them with ``AutoConfig`` / ``AutoModel``, which every loader here does
first, so sciembed's own code never needs ``trust_remote_code``. (``modeling/`` imports nothing of
sciembed, so its registration lists its own classes, a test checks it agrees with the registry.)
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass(frozen=True)
class Family:
    """One of sciembed's remote-code model types, as every part of the library names it.

    Attributes:
        name: the ``model_type`` in ``config.json``, and the folder under ``modeling/`` (``sciembed.modeling.<name>``).
        model_class: the encoder's class (``AutoModel``). ``None`` for SPECTROID, whose encoder is a plain BERT
            with [CLS] pooling, which sciembed embeds as any transformers encoder.
        classifier_class: the class with SPECTROID's MLP head on the family's paper embedding
            (``AutoModelForSequenceClassification``).
        title: how a model card names the family.
        citations: the keys (of ``hub_cards/citations.bib``) a card cites for it.
    """

    name: str
    model_class: str | None
    classifier_class: str
    title: str
    citations: tuple[str, ...]

    @property
    def remote_code(self) -> tuple[str, str]:
        """The files that ship next to the weights: what ``trust_remote_code=True`` loads."""
        return f"configuration_{self.name}.py", f"modeling_{self.name}.py"


#: Every remote-code model type by name: the three families with an embedding of their own, and SPECTROID.
REGISTRY: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            "multi2spe",
            "Multi2SPEModel",
            "Multi2SPEForSequenceClassification",
            "Multi²SPE model (multiple CLS tokens)",
            ("seoh-etal-2023-multi2spe",),
        ),
        Family(
            "control_code",
            "ControlCodeModel",
            "ControlCodeForSequenceClassification",
            "SciRepEval control-code model",
            ("singh-etal-2023-scirepeval",),
        ),
        Family(
            "moe_bert",
            "MoEBertModel",
            "MoEBertForSequenceClassification",
            "MoE BERT model (mixture of experts)",
            ("hallee-etal-2024-moe",),
        ),
        Family(
            "spectroid",
            None,
            "SpectroidForSequenceClassification",
            "SPECTROID classifier",
            ("capuano-spectroid", "cohan-etal-2020-specter"),
        ),
    )
}
#: The families with a paper embedding of their own (what ``from_bert`` builds), by name.
FAMILIES: dict[str, Family] = {name: family for name, family in REGISTRY.items() if family.model_class is not None}


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


def foreign_code(folder: str | os.PathLike[str], own: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """The Python files in ``folder`` that are not sciembed's own remote code.

    The Python files directly in ``folder`` that are not byte-for-byte one of sciembed's own remote-code files of the
    same name (``sciembed/modeling/<family>/``, and the files ``own`` names, such as the format routes' modules,
    :func:`sciembed.formats.route_code_paths`): what loading with ``trust_remote_code`` would run that sciembed did not
    write.
    """
    from .io import file_sha256

    root = Path(importlib.import_module("sciembed.modeling").__file__).parent
    known = {
        name: file_sha256(root / family.name / name) for family in REGISTRY.values() for name in family.remote_code
    }
    known.update({Path(path).name: file_sha256(path) for path in own})
    return sorted(path.name for path in Path(folder).glob("*.py") if file_sha256(path) != known.get(path.name))


def family_class(family: str) -> type[PreTrainedModel]:
    """The model class of a family, e.g. ``family_class("multi2spe") is Multi2SPEModel``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; choose one of {', '.join(FAMILIES)}")
    register_families()
    return getattr(importlib.import_module(f"sciembed.modeling.{family}"), FAMILIES[family].model_class)


def from_bert(
    family: str, base: str | os.PathLike[str], *, trust_remote_code: bool = False, **options: Any
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Build ``family`` from the BERT checkpoint ``base`` (Hub id or folder). Returns (model, tokenizer).

    The tokenizer is the base's, with whatever tokens the family adds (control codes, domain tokens,
    extra CLS tokens), so the pair can be saved together with :func:`save_pretrained`. ``trust_remote_code``
    lets a tokenizer that is the base's own code load. A sentence-transformers folder whose transformer sits in a
    module subfolder is given as that subfolder (:func:`sciembed.checkpoint_files.transformer_path`).
    """
    from transformers import AutoTokenizer, BertConfig

    from .checkpoint_weights import check_weights_fit

    model_class = family_class(family)
    _check_options(family, options, model_class.config_class, BertConfig)
    check_weights_fit(base)  # transformers would start a layer the weights lack at random
    tokenizer = AutoTokenizer.from_pretrained(base, trust_remote_code=trust_remote_code)
    return model_class.from_bert(str(base), tokenizer=tokenizer, **options), tokenizer


def classifier_from_bert(
    family: str,
    base: str | os.PathLike[str],
    head: str | list[int] = "CH2",
    num_labels: int | None = None,
    *,
    trust_remote_code: bool = False,
    **options: Any,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Build a SPECTROID classifier from the BERT checkpoint ``base``. Returns (model, tokenizer).

    ``family`` is ``"spectroid"`` (a plain BERT encoder, [CLS] embedding) or one of :data:`FAMILIES` (the
    head then sits on that family's paper embedding). ``head`` is ``"CH1"``, ``"CH2"``, ``"CH3"`` or a
    list of hidden sizes. ``trust_remote_code`` as for :func:`from_bert`. Save the pair with
    ``model.save_pretrained`` and ``tokenizer.save_pretrained``: the folder loads with
    ``AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)``, and its encoder alone
    with ``AutoModel``.
    """
    from transformers import AutoTokenizer, BertConfig, PretrainedConfig

    from .checkpoint_weights import check_weights_fit

    if family not in REGISTRY:
        raise ValueError(f"unknown classifier family {family!r}; choose one of {', '.join(REGISTRY)}")
    register_families()
    model_class = getattr(importlib.import_module(f"sciembed.modeling.{family}"), REGISTRY[family].classifier_class)
    # PretrainedConfig's fields too: a classifier's labels (id2label, problem_type, ...) are options.
    _check_options(family, options, model_class.config_class, BertConfig, PretrainedConfig)
    check_weights_fit(base)
    tokenizer = AutoTokenizer.from_pretrained(base, trust_remote_code=trust_remote_code)
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
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    folder: str | os.PathLike[str],
    *,
    normalize: bool = False,
    max_seq_length: int | None = None,
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
