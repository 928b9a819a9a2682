"""Format adapters and AdapterFusion (SciRepEval sec. 4; SPECTER2) on the adapters library.

One bottleneck adapter (adapters' ``seq_bn``) per format on a shared encoder, named after the format
(``classification``, ``regression``, ``proximity``, ``adhoc_query``). Training happens in two stages:
first the adapters with the base frozen (:func:`train_format_adapters`), then, for each format, an
AdapterFusion layer ``Fuse(own, *others)`` with the adapters frozen (:func:`add_format_fusion`,
:func:`train_format_fusion`). Activating a format (:func:`activate_adapter_format`) uses its fusion
when the model has one, else its adapter.

Saving writes the adapters library's own layout next to a clean base (:func:`save_format_adapters`):
``model.safetensors`` without adapter weights, one folder per format with ``adapter_config.json`` and
the weights, and ``fusion_<format>/`` with ``adapter_fusion_config.json``. The adapters library loads
ours (``model.load_adapter(folder / "proximity", load_as="proximity")``), and
:func:`load_format_adapters` reads a local copy of SPECTER2 laid out the same way: the base model
(``allenai/specter2_base``) with its adapter repositories (``specter2``, ``specter2_adhoc_query``,
``specter2_classification``, ``specter2_regression``) as sub-folders.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .names import FORMATS

ADAPTER_CONFIG_FILE = "adapter_config.json"
FUSION_CONFIG_FILE = "adapter_fusion_config.json"
FUSION_PREFIX = "fusion_"
#: SPECTER2's proximity adapter repository (``allenai/specter2``); its others are ``specter2_<format>``.
SPECTER2_PROXIMITY = "specter2"

# Where adapters finds the parts of a BERT layer in sciembed's families, whose model types it does not
# know (verified on adapters 1.3.0, see ENV.md).
_BERT_INTERFACE = dict(
    adapter_methods=["bottleneck", "lora", "reft", "prompt_tuning"], model_embeddings="embeddings", model_layers="encoder.layer",
    layer_self_attn="attention", layer_cross_attn=None, attn_q_proj="self.query", attn_k_proj="self.key",
    attn_v_proj="self.value", attn_o_proj="output.dense", layer_intermediate_proj="intermediate.dense",
    layer_output_proj="output.dense",
)


def _init_adapters(model: Any) -> None:
    import adapters

    if hasattr(model, "adapters_config"):
        return
    try:
        adapters.init(model)
    except ValueError:
        # "not pre-supported": a sciembed family; its layers are BERT layers.
        adapters.init(model, interface=adapters.AdapterModelInterface(**_BERT_INTERFACE))


def add_format_adapters(model: Any, formats: Sequence[str] = FORMATS, config: str | dict = "seq_bn") -> Any:
    """Add one adapter per format to ``model`` (any BERT encoder, sciembed's families included)."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(unknown)}; the formats are {', '.join(FORMATS)}")
    _init_adapters(model)
    for name in formats:
        model.add_adapter(name, config=config)
    return model


def adapter_formats(model: Any) -> tuple[str, ...]:
    """The formats ``model`` has an adapter for, in :data:`FORMATS` order."""
    config = getattr(model, "adapters_config", None)
    if config is None:
        return ()
    return tuple(name for name in FORMATS if name in config.adapters)


def fusion_of(task_format: str, formats: Sequence[str]) -> Any:
    """``Fuse(task_format, *others)``: the format's own adapter first, as SciRepEval fuses them."""
    from adapters.composition import Fuse

    return Fuse(task_format, *[name for name in formats if name != task_format])


def add_format_fusion(model: Any) -> Any:
    """Add, for every format adapter of ``model``, its AdapterFusion layer over all of them."""
    formats = adapter_formats(model)
    if len(formats) < 2:
        raise ValueError(f"AdapterFusion needs at least two format adapters; the model has {', '.join(formats) or 'none'}")
    for name in formats:
        model.add_adapter_fusion(fusion_of(name, formats))
    return model


def has_fusion(model: Any, task_format: str) -> bool:
    """Whether ``model`` has an AdapterFusion layer for ``task_format``."""
    fusion = fusion_of(task_format, adapter_formats(model))
    return fusion.name in getattr(model.adapters_config, "fusions", {})


def activate_adapter_format(model: Any, task_format: str | None) -> None:
    """Make ``task_format``'s fusion (if any) or adapter the active setup; ``None`` deactivates all."""
    if task_format is None:
        model.set_active_adapters(None)
    elif has_fusion(model, task_format):
        model.set_active_adapters(fusion_of(task_format, adapter_formats(model)))
    else:
        model.set_active_adapters(task_format)


def train_format_adapters(model: Any) -> None:
    """Stage 1: freeze the base, train every format adapter.

    adapters' ``train_adapter`` freezes the base and unfreezes one adapter setup; the other formats'
    adapters are unfrozen by name, since each batch activates the adapter of each of its tasks' format
    (a list or ``Stack`` setup would instead mean running them together).
    """
    formats = adapter_formats(model)
    model.train_adapter(formats[0])
    _unfreeze(model, [f".adapters.{name}." for name in formats])


def _unfreeze(model: Any, markers: list[str]) -> None:
    for name, parameter in model.named_parameters():
        if any(marker in name for marker in markers):
            parameter.requires_grad = True


def train_format_fusion(model: Any) -> None:
    """Stage 2: freeze base and adapters, train every format's fusion layer.

    adapters' ``train_adapter_fusion`` unfreezes one fusion setup; the others are unfrozen by name,
    since every format's fusion trains at once in SciRepEval's multi-task batches.
    """
    formats = adapter_formats(model)
    if not all(has_fusion(model, name) for name in formats):
        raise ValueError("add the fusion layers first (add_format_fusion)")
    model.train_adapter_fusion(fusion_of(formats[0], formats))
    _unfreeze(model, [".adapter_fusion_layer."])


def base_state_dict(model: Any) -> dict[str, Any]:
    """The state dict of the shared encoder alone, without adapter or fusion weights (nor the reference
    to the word embeddings that ``adapters.init`` adds for prompt tuning)."""
    return {
        k: v for k, v in model.state_dict().items()
        if ".adapters." not in k and ".adapter_fusion_layer." not in k and not k.startswith("prompt_tuning.")
    }


def save_format_adapters(model: Any, folder: str | os.PathLike[str]) -> Path:
    """Write each format adapter (``folder/<format>/``) and fusion (``folder/fusion_<format>/``) in the
    adapters library's format."""
    folder = Path(folder)
    formats = adapter_formats(model)
    for name in formats:
        model.save_adapter(str(folder / name), name)
        if has_fusion(model, name):
            model.save_adapter_fusion(str(folder / f"{FUSION_PREFIX}{name}"), fusion_of(name, formats))
    return folder


def format_of_folder(name: str) -> str | None:
    """The format an adapter folder holds, from its name: the format itself (sciembed's layout), or
    SPECTER2's repository names ``specter2_<format>`` and ``specter2`` (the proximity adapter, renamed
    from ``specter2_proximity`` in August 2023)."""
    if name in FORMATS:
        return name
    if name == SPECTER2_PROXIMITY:
        return "proximity"
    prefix = f"{SPECTER2_PROXIMITY}_"
    return name[len(prefix):] if name.startswith(prefix) and name[len(prefix):] in FORMATS else None


def load_format_adapters(model: Any, folder: str | os.PathLike[str]) -> tuple[str, ...]:
    """Load the format adapters (and fusions) found in ``folder``: sub-folders holding
    ``adapter_config.json``, named after their format (sciembed) or after SPECTER2's adapter
    repositories (:func:`format_of_folder`); returns the formats loaded.

    Raises:
        ValueError: two sub-folders hold adapters for the same format.
    """
    folder = Path(folder)
    found: dict[str, Path] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and (p / ADAPTER_CONFIG_FILE).is_file()):
        task_format = format_of_folder(path.name)
        if task_format is None:
            continue
        if task_format in found:
            raise ValueError(f"{folder}: both {found[task_format].name}/ and {path.name}/ hold a {task_format} adapter")
        found[task_format] = path
    if not found:
        return ()
    _init_adapters(model)
    for task_format, path in found.items():
        model.load_adapter(str(path), load_as=task_format, set_active=False)
    for path in sorted(folder.glob(f"{FUSION_PREFIX}*")):
        if (path / FUSION_CONFIG_FILE).is_file():
            model.load_adapter_fusion(str(path), set_active=False)
    return adapter_formats(model)


def has_format_adapters(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds format adapters in the adapters library's layout (see :func:`load_format_adapters`)."""
    folder = Path(folder)
    return folder.is_dir() and any(
        p.is_dir() and format_of_folder(p.name) and (p / ADAPTER_CONFIG_FILE).is_file() for p in folder.iterdir()
    )
