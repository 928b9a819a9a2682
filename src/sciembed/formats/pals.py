"""PALs, projected attention layers (Stickland & Murray 2019), one set per task format (SciRepEval).

SciRepEval (Singh et al. 2023) compares ways of giving each task format its own embedding from one
shared BERT. One of them adds a PAL per format to every layer ("BERT and PALs", Stickland & Murray,
ICML 2019, arXiv:1902.02671). The adapters library (1.3.0) has no PALs, so this module builds them the
way the library builds its methods: a small config dataclass, weights attached to an unmodified
transformers encoder, one format active at a time, and save / load next to a clean base.

What SciRepEval does, read from its code (``allenai/scirepeval``: ``bert_pals.py``, classes
``BERTPals``, ``BERTLayer``, ``BERTEncoder``, ``BertPalsEncoder``, ``bert_pals_config/pals.config.json``):

- The PAL of layer l for format f is ``PAL(h) = gelu(V^D_f · SA_{l,f}(V^E_f · h))``, with the encoder
  ``V^E_f`` (d -> 204) and decoder ``V^D_f`` (204 -> d) Linear layers (with biases) *shared by all
  layers* of a format, and ``SA_{l,f}`` a multi-head self-attention of the layer's own in the 204-dim
  space, 6 heads, "without the final matrix multiply" (query / key / value only: ``V^D`` follows) and
  dropout 0.1 on the attention probabilities (``attention_probs_dropout_prob``). Every layer has one
  (``hidden_size_aug: 204``, ``BERTSelfAttention(config, 6)``).
- Where it is added: inside the layer, before its final LayerNorm. With ``a = LN(h + SA(h))`` the
  attention sub-layer's output, the layer computes ``LN(FFN(a) + a + PAL(h))`` instead of
  ``LN(FFN(a) + a)`` (``self.output(intermediate_output, attention_output + extra)`` where
  ``extra = multi_layers[i](hidden_states, attention_mask)``): the PAL reads the layer's *input* ``h``
  and runs in parallel with the whole layer, and its output joins the feed-forward residual. This
  module adds it there, with hooks (below).
- Initialisation: ``BertPalsEncoder`` applies BERT's init to the whole model (Linear weights
  N(0, initializer_range = 0.02), biases 0) and then copies the pretrained weights over every non-PAL
  parameter. The PALs keep that random init, so the model's output at step 0 is close to the base's but
  not equal (each projection multiplies by ~0.02·√fan-in < 1, so the PAL output is small next to the
  residual stream). We do the same, with the base config's ``initializer_range``, rather than
  zero-initialising ``V^D``: a zero ``V^D`` would make step 0 exact but would also zero the gradient of
  ``V^E`` and the attentions until ``V^D`` moves, a departure from the method that SciRepEval trained.
  ``active_format = None`` gives the base encoder's output exactly.

Size: per format, ``(d·p + p) + (p·d + d) + L · 3(p² + p)`` parameters for model width ``d``, ``L``
layers and PAL width ``p`` (:func:`parameter_count`). For BERT-base (d = 768, L = 12, p = 204) that is
1,819,836 ≈ 1.8M per format (the "~2M" quoted for SciRepEval's PALs), 7.3M for the four formats. It
agrees with the PALs paper, whose abstract reports matching separately fine-tuned BERTs on the 8 GLUE
tasks "with roughly 7 times fewer parameters": 8 × 110M / (110M + 8 × 1.82M) ≈ 7.1.

Mechanism: :func:`add_pals` registers the PALs module as ``model.pals`` (so ``model.parameters()``,
``model.to``, ``model.train()``, a ``transformers.Trainer`` and its checkpoints all include it) and
puts two forward pre-hooks on each encoder layer of ``model.base_model.encoder.layer``: one on the
layer reads its input ``h`` and attention mask and computes ``PAL(h)``. One on the layer's ``output``
sub-module (BertOutput: ``LN(dropout(dense(x)) + input_tensor)``) adds it to ``input_tensor``. No
modeling code is forked, and any BERT-style encoder works: ``BertModel``, a model with a BERT base
(``BertForSequenceClassification``), and sciembed's families (Multi2SPEModel, ControlCodeModel,
MoEBertModel, whose layers call ``output(x, attention_output)`` alike). The hooks are bound methods of
the PALs module, so ``copy.deepcopy(model)`` gives a copy that uses its own PALs. ``nn.DataParallel``
replicas share the original hooks, so train with DistributedDataParallel (``torchrun`` / accelerate).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .names import FORMATS, PALS_CONFIG_FILE, PALS_FOLDER, PALS_WEIGHTS_FILE  # noqa: F401  (the file names are this module's too)


@dataclass(frozen=True)
class PALsConfig:
    """Configuration of format PALs. The defaults are SciRepEval's (``bert_pals_config/pals.config.json``).

    Args:
        hidden_size: the PAL width ``p`` (SciRepEval and the PALs paper: 204).
        num_attention_heads: heads of the attention in the ``p``-dim space (6). Must divide ``hidden_size``.
        formats: the task formats that get PALs, a subset of :data:`sciembed.formats.FORMATS`.
        dropout: dropout on the PAL attention probabilities (SciRepEval: ``attention_probs_dropout_prob`` 0.1).
    """

    hidden_size: int = 204
    num_attention_heads: int = 6
    formats: tuple[str, ...] = FORMATS
    dropout: float = 0.1

    def __post_init__(self) -> None:
        # JSON gives a list; a tuple keeps the config hashable and comparable.
        object.__setattr__(self, "formats", tuple(self.formats))
        for name in ("hidden_size", "num_attention_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PALsConfig.{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"PALsConfig.hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if not self.formats:
            raise ValueError(f"PALsConfig.formats is empty; choose from {', '.join(FORMATS)}")
        unknown = [name for name in self.formats if name not in FORMATS]
        if unknown:
            raise ValueError(
                f"unknown format(s) {', '.join(map(repr, unknown))}; the formats are {', '.join(FORMATS)}"
            )
        if len(set(self.formats)) != len(self.formats):
            raise ValueError(f"PALsConfig.formats repeats a format: {self.formats}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"PALsConfig.dropout must be in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready values (``formats`` as a list)."""
        return {**asdict(self), "formats": list(self.formats)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PALsConfig:
        """The config from :meth:`to_dict`'s output. Unknown keys are an error, not silently dropped."""
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown PALsConfig key(s) {', '.join(unknown)}; the keys are {', '.join(sorted(known))}"
            )
        return cls(**values)


class ProjectedSelfAttention(nn.Module):
    """Multi-head self-attention in the PAL space, without an output projection.

    The PAL's ``V^D`` follows (Stickland & Murray 2019, SciRepEval's ``BERTSelfAttention(config, 6)``).
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.dropout = dropout
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """``hidden_states`` ``(batch, n, p)``. ``attention_mask`` as the encoder layer received it: ``None``
        or a mask broadcastable to ``(batch, heads, n, n)``, additive (0 / large negative) or boolean."""
        batch, length, width = hidden_states.shape

        def heads(projection: nn.Linear) -> torch.Tensor:
            return projection(hidden_states).view(batch, length, self.num_heads, -1).transpose(1, 2)

        query, key, value = heads(self.query), heads(self.key), heads(self.value)
        if attention_mask is not None and attention_mask.is_floating_point():
            # Under autocast the projections come out in half precision while the mask stays float32;
            # scaled_dot_product_attention needs the two alike.
            attention_mask = attention_mask.to(query.dtype)
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, dropout_p=self.dropout if self.training else 0.0
        )
        return context.transpose(1, 2).reshape(batch, length, width)


class PALs(nn.Module):
    """Per-format PALs for an encoder of ``num_layers`` layers of width ``model_hidden_size``.

    Parameters: ``encoders[f]`` (``V^E``) and ``decoders[f]`` (``V^D``), shared by the layers of format
    ``f``, and ``attentions[f][l]`` for layer ``l``. :attr:`active_format` selects the format whose PALs
    the hooks add. ``None`` (the default after :func:`add_pals`) leaves the encoder's output unchanged.
    """

    def __init__(self, config: PALsConfig, model_hidden_size: int, num_layers: int) -> None:
        super().__init__()
        self.config = config
        width = config.hidden_size
        self.encoders = nn.ModuleDict({f: nn.Linear(model_hidden_size, width) for f in config.formats})
        self.decoders = nn.ModuleDict({f: nn.Linear(width, model_hidden_size) for f in config.formats})
        self.attentions = nn.ModuleDict(
            {
                f: nn.ModuleList(
                    ProjectedSelfAttention(width, config.num_attention_heads, config.dropout)
                    for _ in range(num_layers)
                )
                for f in config.formats
            }
        )
        self._active_format: str | None = None
        # PAL(h) of each layer, from the layer's pre-hook to its output's pre-hook within one forward pass.
        self._pending: dict[int, torch.Tensor | None] = {}

    @property
    def formats(self) -> tuple[str, ...]:
        return self.config.formats

    @property
    def active_format(self) -> str | None:
        return self._active_format

    @active_format.setter
    def active_format(self, task_format: str | None) -> None:
        if task_format is not None:
            self._check_format(task_format)
        self._active_format = task_format

    def _check_format(self, task_format: str) -> None:
        if task_format not in self.config.formats:
            known = ", ".join(self.config.formats)
            raise ValueError(f"no PALs for format {task_format!r}; the PALs' formats are {known}")

    def reset_parameters(self, initializer_range: float) -> None:
        """SciRepEval's init (BERT's ``init_weights``): Linear weights N(0, initializer_range), biases 0."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=initializer_range)
                nn.init.zeros_(module.bias)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, layer: int) -> torch.Tensor:
        """``PAL(h) = gelu(V^D · SA_l(V^E · h))`` of the active format for ``layer``, ``(batch, n, d)``."""
        if self._active_format is None:
            raise RuntimeError("no active PALs format; set active_format first")
        task_format = self._active_format
        projected = self.encoders[task_format](hidden_states)
        attended = self.attentions[task_format][layer](projected, attention_mask)
        return F.gelu(self.decoders[task_format](attended))

    def format_parameter_count(self, task_format: str) -> int:
        """The number of parameters format ``task_format`` uses (its ``V^E``, ``V^D`` and attentions)."""
        self._check_format(task_format)
        parts = (self.encoders[task_format], self.decoders[task_format], self.attentions[task_format])
        return sum(p.numel() for part in parts for p in part.parameters())

    def _layer_pre_hook(self, index: int, layer: nn.Module, args: tuple, kwargs: dict) -> None:
        """Before layer ``index``, computes the active format's PAL of the layer input.

        Without an active format it clears the slot.
        """
        if self._active_format is None:
            self._pending[index] = None
            return
        hidden_states = args[0] if args else kwargs["hidden_states"]
        attention_mask = args[1] if len(args) > 1 else kwargs.get("attention_mask")
        self._pending[index] = self(hidden_states, attention_mask, index)

    def _output_pre_hook(self, index: int, output: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        """Before the layer's ``output(x, input_tensor)``, adds the PAL to ``input_tensor``.

        ``input_tensor`` is the residual that joins the feed-forward output ahead of the final LayerNorm
        (SciRepEval's placement).
        """
        extra = self._pending.pop(index, None)
        if extra is None:
            return None
        if len(args) > 1:
            return (args[0], args[1] + extra, *args[2:]), kwargs
        return args, {**kwargs, "input_tensor": kwargs["input_tensor"] + extra}

    def attach(self, layers: nn.ModuleList) -> None:
        """Hook this module into ``layers`` (each with an ``output`` sub-module, see the module docstring)."""
        for index, layer in enumerate(layers):
            layer.register_forward_pre_hook(partial(self._layer_pre_hook, index), with_kwargs=True)
            layer.output.register_forward_pre_hook(partial(self._output_pre_hook, index), with_kwargs=True)


def _encoder_layers(model: nn.Module) -> nn.ModuleList:
    """The BERT-style layers of ``model``'s base encoder, checked to be hookable."""
    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        raise TypeError(
            f"{type(model).__name__} has no BERT-style encoder: PALs need `base_model.encoder.layer`, a list of layers"
        )
    for index, layer in enumerate(layers):
        if not isinstance(getattr(layer, "output", None), nn.Module):
            raise TypeError(
                f"encoder layer {index} ({type(layer).__name__}) has no `output` sub-module to add the PAL before"
            )
        if getattr(layer, "chunk_size_feed_forward", 0):
            # Chunking calls `output` once per slice of the sequence; the PAL is computed for the whole.
            raise ValueError("PALs do not support chunk_size_feed_forward; set it to 0 in the model config")
    return layers


def _pals(model: nn.Module) -> PALs:
    module = getattr(model, "pals", None)
    if not isinstance(module, PALs):
        raise ValueError(
            f"{type(model).__name__} has no PALs; add them with add_pals(model) or load_pals(model, folder)"
        )
    return module


def _new_pals(model: nn.Module, config: PALsConfig) -> tuple[PALs, nn.ModuleList]:
    """PALs shaped for ``model``, on its device and dtype, not yet attached."""
    layers = _encoder_layers(model)
    if has_pals(model):
        raise ValueError(f"{type(model).__name__} already has PALs (formats {', '.join(pals_formats(model))})")
    reference = next(model.parameters())
    module = PALs(config, model.config.hidden_size, len(layers))
    module.reset_parameters(getattr(model.config, "initializer_range", 0.02))
    return module.to(device=reference.device, dtype=reference.dtype), layers


def _attach(model: nn.Module, module: PALs, layers: nn.ModuleList) -> PALs:
    module.train(model.training)
    module.attach(layers)
    model.pals = module  # a registered submodule: parameters(), to(), state_dict() and Trainer include it
    return module


def add_pals(model: nn.Module, config: PALsConfig | None = None) -> PALs:
    """Add one set of PALs per format of ``config`` (default: SciRepEval's) to ``model``'s encoder layers.

    The PALs start inactive (the base output). Select a format with :func:`set_active_format`. They
    train with the rest of the network: nothing is frozen.

    Raises:
        TypeError: ``model`` has no BERT-style ``base_model.encoder.layer``.
        ValueError: ``model`` already has PALs, or chunks its feed-forward.
    """
    module, layers = _new_pals(model, config or PALsConfig())
    return _attach(model, module, layers)


def has_pals(model: Any) -> bool:
    """Whether PALs are attached to ``model``."""
    return isinstance(getattr(model, "pals", None), PALs)


def pals_formats(model: nn.Module) -> tuple[str, ...]:
    """The formats ``model`` has PALs for, in its config's order."""
    return _pals(model).formats


def set_active_format(model: nn.Module, task_format: str | None) -> None:
    """Make ``task_format``'s PALs active in ``model``'s forward pass. ``None`` turns PALs off.

    Raises:
        ValueError: ``model`` has no PALs, or none for ``task_format`` (the known formats are named).
    """
    _pals(model).active_format = task_format


def parameter_count(model: nn.Module, task_format: str) -> int:
    """The number of PALs parameters that ``task_format`` uses in ``model`` (see the module docstring)."""
    return _pals(model).format_parameter_count(task_format)


def base_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s state dict without the PALs, for ``model.save_pretrained(folder, state_dict=...)``."""
    return {key: value for key, value in model.state_dict().items() if not key.startswith(f"{PALS_FOLDER}.")}


def save_pals(model: nn.Module, folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/pals/pals_config.json`` and ``folder/pals/pals.safetensors``. Returns ``folder/pals``.

    The weights are keyed as in the PALs module (``encoders.<format>.weight``, ...). Save the base next
    to them with ``model.save_pretrained(folder, state_dict=base_state_dict(model))``.
    """
    from safetensors.torch import save_file

    module = _pals(model)
    target = Path(folder) / PALS_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    (target / PALS_CONFIG_FILE).write_text(json.dumps(module.config.to_dict(), indent=2) + "\n", encoding="utf-8")
    state = {key: value.detach().cpu().contiguous() for key, value in module.state_dict().items()}
    save_file(state, str(target / PALS_WEIGHTS_FILE), metadata={"format": "pt"})
    return target


def has_saved_pals(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds PALs written by :func:`save_pals`."""
    return (Path(folder) / PALS_FOLDER / PALS_CONFIG_FILE).is_file()


def _read_config(path: Path) -> PALsConfig:
    if not path.is_file():
        raise FileNotFoundError(f"no PALs config at {path} (save_pals writes it)")
    try:
        return PALsConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError, ValueError) as error:
        raise ValueError(f"{path} is not a valid PALs config: {error}") from error


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not path.is_file():
        raise FileNotFoundError(f"no PALs weights at {path} (save_pals writes them)")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise ValueError(f"{path} is not a readable safetensors file: {error}") from error


def load_pals(model: nn.Module, folder: str | os.PathLike[str]) -> PALs:
    """Attach the PALs saved in ``folder`` (by :func:`save_pals`) to ``model`` and return them, inactive.

    If ``model`` already has PALs of the same config, their weights are replaced.

    Raises:
        FileNotFoundError: ``folder/pals/pals_config.json`` or ``pals.safetensors`` is missing.
        ValueError: a file is corrupt, its config differs from ``model``'s PALs, or its weights do not fit
            ``model`` (the file and the mismatch are named). ``model`` is left as it was.
    """
    source = Path(folder) / PALS_FOLDER
    config = _read_config(source / PALS_CONFIG_FILE)
    weights_path = source / PALS_WEIGHTS_FILE
    state = _read_weights(weights_path)
    if has_pals(model):
        module, layers = _pals(model), None
        if module.config != config:
            raise ValueError(f"{source / PALS_CONFIG_FILE} holds {config}, but the model's PALs are {module.config}")
    else:
        module, layers = _new_pals(model, config)
    # Checked before anything is copied: load_state_dict copies the tensors that fit before it raises.
    expected = {key: tuple(value.shape) for key, value in module.state_dict().items()}
    found = {key: tuple(value.shape) for key, value in state.items()}
    problems = [f"missing {key}" for key in sorted(expected.keys() - found.keys())]
    problems += [f"unexpected {key}" for key in sorted(found.keys() - expected.keys())]
    problems += [
        f"{key} has shape {found[key]}, the model needs {expected[key]}"
        for key in sorted(expected.keys() & found.keys())
        if found[key] != expected[key]
    ]
    if problems:
        raise ValueError(f"{weights_path} does not fit {type(model).__name__}'s PALs: {'; '.join(problems)}")
    module.load_state_dict(state)
    return module if layers is None else _attach(model, module, layers)
