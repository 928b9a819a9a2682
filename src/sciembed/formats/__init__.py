"""Multi-format embeddings: one embedding per task format (SciRepEval).

SciRepEval (Singh et al. 2023) embeds a paper differently for each task format: classification,
regression, proximity and ad-hoc search queries (``adhoc_query``; search candidates take the
proximity format). A model does this in one of three ways, and this package is the one place that
knows how to ask each for a format:

- control codes (:class:`ControlCodeModel`): the format is an argument of the forward pass;
- format adapters and AdapterFusion (:mod:`.adapters`, in AdapterHub's files): the format's adapter
  (or its fusion) is made the active adapter setup;
- PALs (:mod:`.pals`): the format's projected attention layers are made active.

:func:`model_formats` lists the formats a model has; :func:`activate_format` switches a model to one
and returns the forward arguments that go with it. :mod:`sciembed.encode` and the trainers call it
before every forward pass, so a shared model can serve several formats in turn. (The package sits
below ``encode`` rather than in ``training`` because inference needs it as much as training does.)
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from .names import DEFAULT_FORMAT, FORMATS  # noqa: F401  (the package's names for them)


def model_formats(model: Any) -> tuple[str, ...]:
    """The formats ``model`` embeds differently (empty for a single-embedding model)."""
    if "task_format" in inspect.signature(model.forward).parameters:
        return tuple(getattr(model.config, "control_codes", None) or ())
    from .adapters import adapter_formats
    from .pals import has_pals, pals_formats

    if has_pals(model):
        return pals_formats(model)
    return adapter_formats(model)


def activate_format(model: Any, task_format: str | None) -> dict[str, Any]:
    """Switch ``model`` to ``task_format``; returns the keyword arguments its forward pass then needs.

    ``None`` means the model's default: a control-code model's own default code, and for format
    adapters or PALs the proximity format (SPECTER2's embedding for general use), else the first one.

    Raises:
        ValueError: a format the model does not have (its formats are named).
    """
    formats = model_formats(model)
    if task_format is not None and task_format not in formats:
        known = ", ".join(formats) if formats else "none: it embeds every format alike"
        raise ValueError(f"{type(model).__name__} has no task format {task_format!r}; its formats: {known}")
    if "task_format" in inspect.signature(model.forward).parameters:
        return {} if task_format is None else {"task_format": task_format}
    from .adapters import activate_adapter_format
    from .pals import has_pals, set_active_format

    if task_format is None and formats:
        task_format = DEFAULT_FORMAT if DEFAULT_FORMAT in formats else formats[0]
    if has_pals(model):
        set_active_format(model, task_format)
    elif formats:
        activate_adapter_format(model, task_format)
    return {}


def load_format_modules(model: Any, folder: str | os.PathLike[str]) -> tuple[str, ...]:
    """Attach the format modules saved next to a base in ``folder`` (format adapters and fusions in
    AdapterHub's layout, or PALs); returns the formats found (empty when there are none)."""
    from .adapters import has_format_adapters, load_format_adapters
    from .pals import has_saved_pals, load_pals

    if has_saved_pals(folder):
        load_pals(model, folder)
        return model_formats(model)
    if has_format_adapters(folder):
        return load_format_adapters(model, folder)
    return ()


def save_with_format_modules(model: Any, folder: str | os.PathLike[str]) -> bool:
    """Save a model with format adapters or PALs as a clean base (``model.safetensors`` without their
    weights, loadable by ``AutoModel``) plus the modules in their own layout; returns False, saving
    nothing, for a model without such modules."""
    from transformers import PreTrainedModel

    from .adapters import adapter_formats, save_format_adapters
    from .adapters import base_state_dict as adapter_free
    from .pals import base_state_dict as pals_free
    from .pals import has_pals, save_pals

    if has_pals(model):
        PreTrainedModel.save_pretrained(model, folder, state_dict=pals_free(model))
        save_pals(model, folder)
        return True
    if adapter_formats(model):
        PreTrainedModel.save_pretrained(model, folder, state_dict=adapter_free(model))
        save_format_adapters(model, folder)
        return True
    return False


def format_parameter_counts(model: Any) -> dict[str, dict[str, int]]:
    """Parameters each format adds to the shared encoder, by kind (SciRepEval Table 5).

    Returns ``{format: {"control_code" | "adapter" | "fusion" | "pals": count}}``: a control code is
    one row of the word embeddings (``hidden_size``); an adapter or a fusion layer counts its weights;
    PALs count the format's shared projections and per-layer attentions.
    """
    formats = model_formats(model)
    if "task_format" in inspect.signature(model.forward).parameters:
        return {f: {"control_code": model.config.hidden_size} for f in formats}
    from .adapters import fusion_of, has_fusion
    from .pals import has_pals, parameter_count

    if has_pals(model):
        return {f: {"pals": parameter_count(model, f)} for f in formats}
    counts: dict[str, dict[str, int]] = {}
    for f in formats:
        counts[f] = {"adapter": sum(p.numel() for n, p in model.named_parameters() if f".adapters.{f}." in n)}
        if has_fusion(model, f):
            marker = f".adapter_fusion_layer.{fusion_of(f, formats).name}."
            counts[f]["fusion"] = sum(p.numel() for n, p in model.named_parameters() if marker in n)
    return counts
