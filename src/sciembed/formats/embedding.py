"""A multi-format model's embedding: its formats, switching to one, and pooling its output.

sciembed's encoder and trainers ask models for their formats here, and so do the sentence-transformers modules of
:mod:`.format_routes`. The module imports only its own package, torch and transformers, because exported models ship
it as remote code (:func:`sciembed.encoders.router.add_format_routes`) to run where sciembed is not installed.
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any

from .names import DEFAULT_FORMAT

if TYPE_CHECKING:
    import torch

#: The poolings of any encoder: its ``[CLS]`` hidden state, or the mean over its real tokens.
POOLINGS = ("cls", "mean")
#: The pooling of sciembed's families: their forward returns the paper embedding as ``pooler_output``.
FAMILY_POOLING = "family"


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
    """Switch ``model`` to ``task_format``. Returns the keyword arguments its forward pass then needs.

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
    """Attaches the format modules saved next to a base in ``folder``.

    The modules are format adapters and fusions in AdapterHub's layout, or PALs. Returns the formats found (empty
    when there are none). A model that has such modules already takes the saved weights into them (their configs
    must be the same).
    """
    from .adapters import has_format_adapters, load_format_adapters
    from .pals import has_saved_pals, load_pals

    if has_saved_pals(folder):
        load_pals(model, folder)
        return model_formats(model)
    if has_format_adapters(folder):
        return load_format_adapters(model, folder)
    return ()


def save_with_format_modules(model: Any, folder: str | os.PathLike[str]) -> bool:
    """Save a model with format adapters or PALs as a clean base plus the modules.

    Save a model with format adapters or PALs as a clean base (``model.safetensors`` without their weights, loadable by
    ``AutoModel``) plus the modules in their own layout. Returns False, saving nothing, for a model without such
    modules.
    """
    from transformers import PreTrainedModel

    from .adapters import adapter_formats, save_format_adapters
    from .pals import has_pals, save_pals

    if not (has_pals(model) or adapter_formats(model)):
        return False
    PreTrainedModel.save_pretrained(model, folder, state_dict=base_state_dict(model))
    (save_pals if has_pals(model) else save_format_adapters)(model, folder)
    return True


def base_state_dict(model: Any) -> dict[str, Any]:
    """``model``'s state dict without its format modules' weights.

    The format modules are PALs, or format adapters and fusions. This is what :func:`save_with_format_modules`
    saves as the base.
    """
    from .adapters import base_state_dict as adapter_free
    from .pals import base_state_dict as pals_free
    from .pals import has_pals

    return pals_free(model) if has_pals(model) else adapter_free(model)


def format_parameter_counts(model: Any) -> dict[str, dict[str, int]]:
    """Parameters each format adds to the shared encoder, by kind (SciRepEval Table 5).

    Returns ``{format: {"control_code" | "adapter" | "fusion" | "pals": count}}``: a control code is
    one row of the word embeddings (``hidden_size``). An adapter or a fusion layer counts its weights.
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


def pool(outputs: Any, attention_mask: torch.Tensor, pooling: str, *, normalize: bool = False) -> torch.Tensor:
    """The paper embedding in a transformers model output.

    The family's ``pooler_output`` (``pooling="family"``), the ``[CLS]`` hidden state (``"cls"``) or the mean over real
    tokens (``"mean"``), L2-normalised with ``normalize``. Training takes its embeddings here too, so a model is
    trained on exactly the vector it is later encoded with.
    """
    import torch

    pooler = _POOLERS.get(pooling) if isinstance(pooling, str) else None
    if pooler is None:
        raise ValueError(f"pooling must be one of {(FAMILY_POOLING, *POOLINGS)}, got {pooling!r}")
    embeddings = pooler(outputs, attention_mask)
    return torch.nn.functional.normalize(embeddings, dim=-1) if normalize else embeddings


def _mean(outputs: Any, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of the hidden states over the real tokens."""
    hidden = outputs.last_hidden_state
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


#: How each pooling reads the embedding from a model output and its attention mask.
_POOLERS = {
    FAMILY_POOLING: lambda outputs, attention_mask: outputs.pooler_output,
    "cls": lambda outputs, attention_mask: outputs.last_hidden_state[:, 0],
    "mean": _mean,
}
