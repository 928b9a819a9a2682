"""Format adapters and AdapterFusion (SciRepEval sec. 4, SPECTER2), in AdapterHub's files.

One bottleneck adapter per format on a shared encoder, named after the format (``classification``,
``regression``, ``proximity``, ``adhoc_query``): the sequential bottleneck of Pfeiffer et al.
("AdapterFusion: Non-Destructive Task Composition for Transfer Learning", EACL 2021, arXiv:2005.00247),
AdapterHub's ``seq_bn`` (Pfeiffer et al., "AdapterHub: A Framework for Adapting Transformers", EMNLP 2020
demos, arXiv:2007.07779). Training happens in two stages: first the adapters with the base frozen
(:func:`train_format_adapters`), then, for each format, an AdapterFusion layer ``Fuse(own, *others)`` with
the adapters frozen (:func:`add_format_fusion`, :func:`train_format_fusion`). Activating a format
(:func:`activate_adapter_format`) uses its fusion when the model has one, else its adapter.

The math, in a BERT layer's output block ``LN(dropout(dense(x)) + r)``, with ``h = dropout(dense(x))``,
``z = h + r`` and ``q = LN(z)`` (seq_bn's defaults: the original LayerNorm before and after, the adapter's
residual taken before it):

- adapter: ``up(q) = scaling * W_up act(W_down q)``, the block returns ``LN(dropout(up(q)) + z)``, the same
  LayerNorm module twice,
- AdapterFusion (the dynamic variant, Pfeiffer et al. 2021): per adapter ``i``, ``u_i = up_i(q)``,
  ``p = softmax_i((Q q) . (K u_i))``, the block returns ``LN(sum_i p_i V u_i + z)``, with ``V`` initialised to
  the identity.

Mechanism: the adapters library (1.3.0) installs only with transformers 4.57.6, so these modules are
sciembed's own, built as that library builds them (small config dataclasses, ``Fuse`` composition, AdapterHub's
files and state-dict keys), and tested against it in a side venv (``tests/test_adapters_reference.py``). Each
encoder layer's ``output`` module gets two child ``ModuleDict``s, ``adapters`` and ``adapter_fusion_layer``, so
the weights' keys are exactly AdapterHub's (``encoder.layer.0.output.adapters.proximity.adapter_up.weight``),
and one forward hook on its ``LayerNorm``, whose input is ``z`` and whose output is ``q``: the hook returns the
adapter's (or fusion's) result instead. No modeling code is forked, and any BERT-style encoder works:
``BertModel``, a model with a BERT base, and sciembed's families (whose layers end in
``output.LayerNorm(f(x) + input_tensor)`` alike). The configs and the active setup live in a plain object on
the base model that the hooks read, so ``copy.deepcopy(model)`` gives a copy that switches formats on its own,
``nn.DataParallel`` replicas would run the original's adapters, so train with DistributedDataParallel, and
gradient checkpointing recomputes a layer with the setup active at backward time, so a step that switches
formats between forward passes (SciRepEval's multi-task batches) must not checkpoint.

Saving writes AdapterHub's layout next to a clean base (:func:`save_format_adapters`): ``model.safetensors``
without adapter weights, one folder per format with ``adapter_config.json`` and ``pytorch_adapter.bin`` (the
names ``model.load_adapter`` reads by default), and ``fusion_<format>/`` with ``adapter_fusion_config.json``
and ``pytorch_model_adapter_fusion.bin``. The adapters library loads ours
(``model.load_adapter(folder / "proximity", load_as="proximity")``), and :func:`load_format_adapters` reads a
local copy of SPECTER2 laid out the same way: the base model (``allenai/specter2_base``) with its adapter
repositories (``specter2``, ``specter2_adhoc_query``, ``specter2_classification``, ``specter2_regression``) as
sub-folders, safetensors (``adapter.safetensors``) or ``.bin`` (read with ``weights_only=True``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from .names import (  # noqa: F401  (the file names are this module's too)
    ADAPTER_CONFIG_FILE,
    ADAPTER_SAFE_WEIGHTS_FILE,
    ADAPTER_WEIGHTS_FILE,
    FORMATS,
    FUSION_CONFIG_FILE,
    FUSION_PREFIX,
    FUSION_SAFE_WEIGHTS_FILE,
    FUSION_WEIGHTS_FILE,
)

#: SPECTER2's proximity adapter repository (``allenai/specter2``); its others are ``specter2_<format>``.
SPECTER2_PROXIMITY = "specter2"
#: The ``version`` written into the JSON files: the AdapterHub format they follow. Its presence also tells
#: readers that activation names are current (files without one predate the ``gelu`` -> ``gelu_new`` rename).
FILE_VERSION = "adapters.1.3.0"
_ACTIVATION_RENAME = {"gelu": "gelu_new", "gelu_orig": "gelu"}
# AdapterFusion's value regularisation weight (adapters' get_fusion_regularization_loss).
FUSION_REGULARIZATION_WEIGHT = 0.01
# The names older libraries (adapter-transformers) gave the adapters' module dicts in weight keys.
_LEGACY_MODULE_NAMES = {
    "attention_text_task_adapters": "adapters",
    "attention_text_lang_adapters": "adapters",
    "layer_text_task_adapters": "adapters",
    "layer_text_lang_adapters": "adapters",
    "invertible_lang_adapters": "invertible_adapters",
}


class AdapterInit(StrEnum):
    """How an adapter's weights start (AdapterHub's ``init_weights``)."""

    BERT = "bert"
    MAM_ADAPTER = "mam_adapter"
    HOULSBY = "houlsby"


_INIT_WEIGHTS = tuple(init.value for init in AdapterInit)


def _refuse(source: str, key: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"{source}: {key}={value!r} is not supported by sciembed's adapters ({expected})")


# ---------------------------------------------------------------------------------------------- configs


# seq_bn options sciembed does not implement, with the only value it accepts.
_BOTTLENECK_FIXED = {
    "mh_adapter": False,
    "output_adapter": True,
    "original_ln_before": True,
    "original_ln_after": True,
    "residual_before_ln": True,
    "ln_after": False,
    "is_parallel": False,
    "use_gating": False,
    "inv_adapter": None,
    "cross_adapter": False,
    "phm_layer": False,
    "stochastic_depth": 0.0,
}
# Options that change nothing while the fixed ones hold (the PHM layer's, the invertible adapter's, the
# residual around a LayerNorm after the adapter): any value is read, AdapterHub's default is written.
_BOTTLENECK_INERT = {
    "adapter_residual_before_ln": False,
    "inv_adapter_reduction_factor": None,
    "phm_dim": 4,
    "factorized_phm_W": True,
    "shared_W_phm": False,
    "shared_phm_rule": True,
    "factorized_phm_rule": False,
    "phm_c_init": "normal",
    "phm_init_range": 0.0001,
    "learn_phm": True,
    "hypercomplex_nonlinearity": "glorot-uniform",
    "phm_rank": 1,
    "phm_bias": True,
}


def _checked(cls: type, values: Mapping[str, Any], source: str) -> Any:
    """A config dataclass from ``values``, with its defaults for what they lack.

    A config dataclass from ``values`` (its defaults for what they lack), built without ``__init__`` so that the checks
    of ``_settle`` name ``source`` (the file) rather than the class.
    """
    config = cls.__new__(cls)
    for field in fields(cls):
        object.__setattr__(config, field.name, values.get(field.name, field.default))
    config._settle(source)
    return config


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class BottleneckConfig:
    """A sequential bottleneck adapter, AdapterHub's ``seq_bn`` (``SeqBnConfig``).

    Field names and defaults are adapters', so :meth:`to_dict` / :meth:`from_dict` write and read the ``config``
    of ``adapter_config.json``.

    Args:
        reduction_factor: hidden size / bottleneck size. A number, or a mapping from layer index (as a string)
            to a number with a ``"default"`` for the other layers (``{"0": 8, "default": 16}``).
        non_linearity: the activation between the projections, by its name in transformers' ``ACT2FN``.
        scaling: the factor on the adapter's output (He et al. 2021).
        ln_before: a LayerNorm of the adapter's own before the down-projection.
        dropout: dropout on the adapter's output (not on the outputs AdapterFusion reads, as in adapters).
        leave_out: layer indices that get no adapter.
        init_weights: ``bert`` (N(0, 0.02), zero biases), ``mam_adapter`` (a zero up-projection: the identity at
            the start) or ``houlsby`` (truncated N(0, 0.01)).
        init_weights_seed: when set, every layer's adapter starts from this seed (the same weights in each).

    Every other ``SeqBnConfig`` option keeps its seq_bn value. A file that changes one is refused.
    """

    reduction_factor: float | Mapping[str, float] = 16
    non_linearity: str = "relu"
    scaling: float = 1.0
    ln_before: bool = False
    dropout: float = 0.0
    leave_out: tuple[int, ...] = ()
    init_weights: AdapterInit = AdapterInit.BERT
    init_weights_seed: int | None = None

    def __post_init__(self) -> None:
        self._settle("BottleneckConfig")

    def _settle(self, source: str) -> None:
        """Normalise the containers and check every value.

        Normalise the containers (JSON gives lists, a tuple keeps the config comparable) and check every value, raising
        a ValueError that names ``source`` and the key of the first unsupported one.
        """
        if isinstance(self.leave_out, (list, tuple)):
            object.__setattr__(self, "leave_out", tuple(self.leave_out))
        if isinstance(self.reduction_factor, Mapping):
            object.__setattr__(self, "reduction_factor", dict(self.reduction_factor))
        factors = (
            self.reduction_factor.items() if isinstance(self.reduction_factor, dict) else [("", self.reduction_factor)]
        )
        for layer, factor in factors:
            if layer not in ("", "default") and not (isinstance(layer, str) and layer.isdigit()):
                raise _refuse(
                    source, "reduction_factor", self.reduction_factor, 'its keys are layer indices and "default"'
                )
            if not _is_number(factor) or factor <= 0:
                raise _refuse(
                    source, "reduction_factor", self.reduction_factor, "a positive number, or a mapping to them"
                )
        if not isinstance(self.non_linearity, str) or self.non_linearity.lower() not in ACT2FN:
            raise _refuse(
                source,
                "non_linearity",
                self.non_linearity,
                f"one of transformers' ACT2FN: {', '.join(sorted(ACT2FN))}",
            )
        if not _is_number(self.scaling):
            raise _refuse(source, "scaling", self.scaling, "a number; a learned scaling is not implemented")
        if not isinstance(self.ln_before, bool):
            raise _refuse(source, "ln_before", self.ln_before, "true or false")
        if not _is_number(self.dropout) or not 0 <= self.dropout < 1:
            raise _refuse(source, "dropout", self.dropout, "a probability in [0, 1)")
        if not isinstance(self.leave_out, tuple) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in self.leave_out
        ):
            raise _refuse(source, "leave_out", self.leave_out, "a list of layer indices")
        if self.init_weights not in _INIT_WEIGHTS:
            raise _refuse(source, "init_weights", self.init_weights, f"one of {', '.join(_INIT_WEIGHTS)}")
        object.__setattr__(self, "init_weights", AdapterInit(self.init_weights))
        if self.init_weights_seed is not None and (
            isinstance(self.init_weights_seed, bool) or not isinstance(self.init_weights_seed, int)
        ):
            raise _refuse(source, "init_weights_seed", self.init_weights_seed, "an integer or null")

    def bottleneck_size(self, hidden_size: int, layer: int) -> int:
        """The adapter's width in ``layer``, as adapters computes it (``int(hidden // factor)``, at least 1)."""
        factor = self.reduction_factor
        if isinstance(factor, dict):
            if str(layer) not in factor and "default" not in factor:
                raise ValueError(f'reduction_factor {factor} names no factor for layer {layer} and has no "default"')
            factor = factor.get(str(layer), factor.get("default"))
        return max(1, int(hidden_size // factor))

    def to_dict(self) -> dict[str, Any]:
        """The full ``config`` object of AdapterHub's ``adapter_config.json`` (every ``SeqBnConfig`` field)."""
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        return {**_BOTTLENECK_FIXED, **_BOTTLENECK_INERT, **values, "leave_out": list(self.leave_out)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "adapter config") -> BottleneckConfig:
        """Read the ``config`` object of an ``adapter_config.json``. Missing keys take seq_bn's defaults.

        Raises:
            ValueError: an option sciembed does not implement is set (``phm_layer``, ``is_parallel``,
                ``mh_adapter``, ``use_gating``, ``inv_adapter``, ``ln_after``, ``original_ln_before`` false,
                ``residual_before_ln`` other than true, a learned ``scaling``, ...) or a key is unknown. The
                message names ``source`` and the key.
        """
        known = {field.name for field in fields(cls)}
        for key, value in values.items():
            if key in _BOTTLENECK_FIXED:
                expected = _BOTTLENECK_FIXED[key]
                alike = type(value) is type(expected) or (_is_number(value) and _is_number(expected))
                if value != expected or not alike:
                    raise _refuse(source, key, value, f"seq_bn's {json.dumps(expected)} only")
            elif key == "architecture" and value is not None:
                raise _refuse(source, key, value, "a bottleneck adapter (no architecture key)")
            elif key == "invertible_adapter" and value:
                raise _refuse(source, key, value, "no invertible adapter")
            elif key not in known | set(_BOTTLENECK_INERT) | {"architecture", "invertible_adapter"}:
                raise ValueError(f"{source}: unknown adapter option {key!r}")
        return _checked(cls, values, source)


_FUSION_FIXED = {
    "key": True,
    "query": True,
    "value": True,
    "query_before_ln": False,
    "residual_before": False,
    "temperature": False,
    "value_before_softmax": True,
}


@dataclass(frozen=True)
class FusionConfig:
    """AdapterFusion, the dynamic variant: query, key and value projections.

    This is adapters' ``DynamicAdapterFusionConfig``, the default of ``add_adapter_fusion``. The value is
    initialised to the identity.

    Args:
        regularization: add ``0.01 * ||I - V||^2`` over the value matrices to the training loss (Pfeiffer et al.
            2021). The trainers do (``adapter_training="fusion"``).
        dropout_prob: dropout on the attention scores. ``None`` (or 0, as adapters reads it) takes the model's
            ``attention_probs_dropout_prob``.
        value_initialized: start the value matrix at the identity (off-diagonal 1e-6), else N(0, 0.02).

    The other ``AdapterFusionConfig`` flags keep the dynamic values. A file that changes one is refused.
    """

    regularization: bool = True
    dropout_prob: float | None = None
    value_initialized: bool = True

    def __post_init__(self) -> None:
        self._settle("FusionConfig")

    def _settle(self, source: str) -> None:
        """Checks every value.

        Raises:
            ValueError: naming ``source`` and the key of the first unsupported value.
        """
        for key in ("regularization", "value_initialized"):
            if not isinstance(getattr(self, key), bool):
                raise _refuse(source, key, getattr(self, key), "true or false")
        if self.dropout_prob is not None and (not _is_number(self.dropout_prob) or not 0 <= self.dropout_prob < 1):
            raise _refuse(source, "dropout_prob", self.dropout_prob, "null or a probability in [0, 1)")

    def to_dict(self) -> dict[str, Any]:
        """The full ``config`` object of AdapterHub's ``adapter_fusion_config.json``."""
        return {**_FUSION_FIXED, **{field.name: getattr(self, field.name) for field in fields(self)}}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "fusion config") -> FusionConfig:
        """Read the ``config`` object of an ``adapter_fusion_config.json``. Missing keys take the dynamic defaults.

        Raises:
            ValueError: a flag differs from the dynamic variant (``temperature``, ``query_before_ln``,
                ``residual_before``, a static fusion without ``value``, ...) or a key is unknown. The message
                names ``source`` and the key.
        """
        known = {field.name for field in fields(cls)}
        for key, value in values.items():
            if key in _FUSION_FIXED:
                if value is not _FUSION_FIXED[key]:
                    raise _refuse(
                        source, key, value, f"the dynamic AdapterFusion's {json.dumps(_FUSION_FIXED[key])} only"
                    )
            elif key not in known:
                raise ValueError(f"{source}: unknown AdapterFusion option {key!r}")
        return _checked(cls, values, source)


class Fuse:
    """The composition ``Fuse(a, b, ...)``: AdapterFusion over the named adapters (adapters' ``Fuse`` block).

    Its :attr:`name`, the names joined by commas, names its weights (``adapter_fusion_layer.<name>.``)."""

    __slots__ = ("adapter_names",)

    def __init__(self, *adapter_names: str) -> None:
        if len(adapter_names) < 2 or len(set(adapter_names)) != len(adapter_names):
            raise ValueError(f"Fuse needs two or more distinct adapters, got {adapter_names}")
        self.adapter_names = tuple(adapter_names)

    @property
    def name(self) -> str:
        return ",".join(self.adapter_names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fuse) and other.adapter_names == self.adapter_names

    def __hash__(self) -> int:
        return hash(self.adapter_names)

    def __repr__(self) -> str:
        return f"Fuse[{', '.join(self.adapter_names)}]"


# ---------------------------------------------------------------------------------------------- modules


class _Activation(nn.Module):
    """The non-linearity, held as adapters holds it (``f``).

    So a parametric one has AdapterHub's keys.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.f = ACT2FN[name.lower()]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.f(x)


class BottleneckAdapter(nn.Module):
    """One layer's bottleneck: ``forward(q) = scaling * adapter_up(act(adapter_down(q)))`` (the residual and the
    LayerNorm are the hook's). The attributes mirror adapters' ``Adapter`` so the state-dict keys are equal: the
    optional LayerNorm and the activation are registered both by name and inside ``adapter_down``."""

    def __init__(self, config: BottleneckConfig, hidden_size: int, bottleneck_size: int) -> None:
        super().__init__()
        self.scaling = float(config.scaling)
        down: list[nn.Module] = []
        if config.ln_before:
            self.adapter_norm_before = nn.LayerNorm(hidden_size)
            down.append(self.adapter_norm_before)
        self.non_linearity = _Activation(config.non_linearity)
        self.adapter_down = nn.Sequential(*down, nn.Linear(hidden_size, bottleneck_size), self.non_linearity)
        self.adapter_up = nn.Linear(bottleneck_size, hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self._initialize(config)

    @torch.no_grad()
    def _initialize(self, config: BottleneckConfig) -> None:
        generator = (
            None if config.init_weights_seed is None else torch.Generator().manual_seed(config.init_weights_seed)
        )
        linears = [m for m in self.adapter_down if isinstance(m, nn.Linear)] + [self.adapter_up]
        for linear in linears:
            nn.init.zeros_(linear.bias)
            if config.init_weights is AdapterInit.BERT:
                nn.init.normal_(linear.weight, 0.0, 0.02, generator=generator)
            elif config.init_weights is AdapterInit.HOULSBY:
                nn.init.trunc_normal_(linear.weight, 0.0, 1e-2, -2e-2, 2e-2, generator=generator)
            elif linear is self.adapter_up:  # mam_adapter: the adapter starts as the identity
                nn.init.zeros_(linear.weight)
            else:
                nn.init.kaiming_uniform_(linear.weight, a=5**0.5, generator=generator)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.adapter_up(self.adapter_down(hidden_states)) * self.scaling


class AdapterFusion(nn.Module):
    """One layer's AdapterFusion: attention over the adapters' outputs.

    One layer's AdapterFusion (adapters' ``BertFusion``, dynamic): attention of the layer's ``q`` over the adapters'
    outputs ``u_i``, returning ``sum_i p_i V u_i`` (the residual and the LayerNorm are the hook's).
    """

    def __init__(self, config: FusionConfig, hidden_size: int, dropout: float) -> None:
        super().__init__()
        self.config = config
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.dropout = nn.Dropout(dropout)
        with torch.no_grad():
            for linear in (self.query, self.key, self.value):
                nn.init.normal_(linear.weight, 0.0, 0.02)
                if linear.bias is not None:
                    nn.init.zeros_(linear.bias)
            if config.value_initialized:
                self.value.weight.fill_(1e-6).fill_diagonal_(1.0)

    def forward(self, query_states: torch.Tensor, adapter_outputs: torch.Tensor) -> torch.Tensor:
        """``query_states`` ``(..., d)``. ``adapter_outputs`` ``(..., n_adapters, d)``. Returns ``(..., d)``."""
        keys = self.key(adapter_outputs)
        scores = torch.matmul(self.query(query_states).unsqueeze(-2), keys.transpose(-2, -1)).squeeze(-2)
        # Dropout on the scores before the softmax, where adapters puts it.
        probabilities = torch.softmax(self.dropout(scores), dim=-1)
        return torch.matmul(probabilities.unsqueeze(-2), self.value(adapter_outputs)).squeeze(-2)


class _AdapterSetup:
    """What a model holds besides the weights, read by the LayerNorm hooks.

    That is each adapter's and fusion's config and the active setup. It is a plain object on the base model, not
    a module, since nothing of it is a weight.
    """

    def __init__(self) -> None:
        self.adapters: dict[str, BottleneckConfig] = {}
        self.fusions: dict[str, FusionConfig] = {}
        self.active: str | Fuse | None = None


_SETUP_ATTRIBUTE = "_sciembed_adapter_setup"


def _after_layer_norm(
    setup: _AdapterSetup, output: nn.Module, layer_norm: nn.LayerNorm, args: tuple, normed: torch.Tensor
) -> torch.Tensor | None:
    """Forward hook of a layer's ``output.LayerNorm``: its input is ``z = h + r``, its output ``q = LN(z)``.
    With an active adapter (or fusion) in this layer, return ``LN(delta + z)`` instead, where ``delta`` is the
    adapter's output (or the fusion of the adapters' outputs). ``F.layer_norm`` rather than the module: calling
    the module would run this hook again."""
    active = setup.active
    if active is None:
        return None
    names = active.adapter_names if isinstance(active, Fuse) else (active,)
    adapters = [output.adapters[name] for name in names if name in output.adapters]
    if not adapters:  # the adapters leave this layer out
        return None
    if isinstance(active, Fuse):
        delta = output.adapter_fusion_layer[active.name](normed, torch.stack([a(normed) for a in adapters], dim=-2))
    else:
        delta = adapters[0].dropout(adapters[0](normed))
    return F.layer_norm(
        delta + args[0], layer_norm.normalized_shape, layer_norm.weight, layer_norm.bias, layer_norm.eps
    )


def _encoder_outputs(model: nn.Module) -> list[nn.Module]:
    """The ``output`` block of every layer of ``model``'s base encoder.

    Each is checked to end in a LayerNorm.
    """
    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        raise TypeError(
            f"{type(model).__name__} has no BERT-style encoder: "
            "format adapters need `base_model.encoder.layer`, a list of layers"
        )
    outputs = [getattr(layer, "output", None) for layer in layers]
    for index, output in enumerate(outputs):
        if not isinstance(getattr(output, "LayerNorm", None), nn.LayerNorm):
            raise TypeError(
                f"encoder layer {index} ({type(layers[index]).__name__}) has no `output.LayerNorm` "
                "to put an adapter before"
            )
    return outputs


def _setup(model: Any) -> _AdapterSetup | None:
    return getattr(getattr(model, "base_model", model), _SETUP_ATTRIBUTE, None)


def _setup_or_create(model: nn.Module) -> _AdapterSetup:
    """The model's adapter setup. The first call hooks every layer and gives it empty ``adapters`` and
    ``adapter_fusion_layer`` dicts (which add nothing to the state dict while empty)."""
    setup = _setup(model)
    if setup is not None:
        return setup
    outputs = _encoder_outputs(model)
    setup = _AdapterSetup()
    for output in outputs:
        output.adapters = nn.ModuleDict()
        output.adapter_fusion_layer = nn.ModuleDict()
        output.LayerNorm.register_forward_hook(partial(_after_layer_norm, setup, output))
    setattr(getattr(model, "base_model", model), _SETUP_ATTRIBUTE, setup)
    return setup


def _hidden_size(model: nn.Module) -> int:
    return int(model.config.hidden_size)


def _placed(model: nn.Module, module: nn.Module) -> nn.Module:
    reference = next(model.parameters())
    return module.to(device=reference.device, dtype=reference.dtype).train(model.training)


def _new_adapters(model: nn.Module, config: BottleneckConfig, source: str) -> dict[int, BottleneckAdapter]:
    """One adapter per layer not left out, on the model's device and dtype.

    The adapters are not yet attached.
    """
    hidden = _hidden_size(model)
    layers = [index for index in range(len(_encoder_outputs(model))) if index not in config.leave_out]
    try:
        sizes = {index: config.bottleneck_size(hidden, index) for index in layers}
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None
    return {index: _placed(model, BottleneckAdapter(config, hidden, size)) for index, size in sizes.items()}


def _new_fusions(model: nn.Module, config: FusionConfig) -> dict[int, AdapterFusion]:
    """One fusion layer per encoder layer (left-out layers included, as adapters saves them)."""
    # As adapters reads dropout_prob: unset (or 0) takes the model's attention dropout.
    dropout = config.dropout_prob or getattr(model.config, "attention_probs_dropout_prob", 0.0)
    return {
        index: _placed(model, AdapterFusion(config, _hidden_size(model), dropout))
        for index in range(len(_encoder_outputs(model)))
    }


def _attach_adapter(
    model: nn.Module, name: str, config: BottleneckConfig, modules: Mapping[int, BottleneckAdapter]
) -> None:
    setup = _setup_or_create(model)
    outputs = _encoder_outputs(model)
    for index, module in modules.items():
        outputs[index].adapters[name] = module
    setup.adapters[name] = config


def _attach_fusion(model: nn.Module, fuse: Fuse, config: FusionConfig, modules: Mapping[int, AdapterFusion]) -> None:
    setup = _setup_or_create(model)
    outputs = _encoder_outputs(model)
    for index, module in modules.items():
        outputs[index].adapter_fusion_layer[fuse.name] = module
    setup.fusions[fuse.name] = config


def _copy_into(model: nn.Module, kind: str, name: str, modules: Mapping[int, nn.Module]) -> None:
    """Copy ``modules``' weights into the model's own ``kind`` modules named ``name``.

    The configs must be the same (checked). The weights are copied rather than swapped in, so that an optimiser's
    parameters and what is frozen stay the model's.
    """
    outputs = _encoder_outputs(model)
    for index, module in modules.items():
        getattr(outputs[index], kind)[name].load_state_dict(module.state_dict())


# ---------------------------------------------------------------------------------------------- public API


#: The adapter configs known by name.
_NAMED_CONFIGS = {"seq_bn": BottleneckConfig()}


def _bottleneck_config(config: str | Mapping[str, Any] | BottleneckConfig) -> BottleneckConfig:
    if isinstance(config, BottleneckConfig):
        return config
    if isinstance(config, str) and config in _NAMED_CONFIGS:
        return _NAMED_CONFIGS[config]
    if isinstance(config, Mapping):
        return BottleneckConfig.from_dict(config, source="adapter config")
    raise ValueError(
        f"adapter config {config!r}: give 'seq_bn', a BottleneckConfig or its dict (AdapterHub's seq_bn fields)"
    )


def add_format_adapters(
    model: Any, formats: Sequence[str] = FORMATS, config: str | Mapping[str, Any] | BottleneckConfig = "seq_bn"
) -> Any:
    """Add one adapter per format to ``model`` (any BERT encoder, sciembed's families included). Returns it.

    ``config``: ``"seq_bn"`` (AdapterHub's defaults: reduction factor 16, ReLU), a :class:`BottleneckConfig`,
    or its dict. The adapters start inactive.

    Raises:
        ValueError: an unknown format, one that already has an adapter, or an unsupported config value.
        TypeError: ``model`` has no BERT-style encoder.
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(unknown)}; the formats are {', '.join(FORMATS)}")
    config = _bottleneck_config(config)
    present = [name for name in formats if name in adapter_formats(model)]
    if present:
        raise ValueError(f"{type(model).__name__} already has an adapter for {', '.join(present)}")
    for name in formats:
        _attach_adapter(model, name, config, _new_adapters(model, config, "adapter config"))
    return model


def adapter_formats(model: Any) -> tuple[str, ...]:
    """The formats ``model`` has an adapter for, in :data:`FORMATS` order."""
    setup = _setup(model)
    return tuple(name for name in FORMATS if setup is not None and name in setup.adapters)


def fusion_of(task_format: str, formats: Sequence[str]) -> Fuse:
    """``Fuse(task_format, *others)``: the format's own adapter first, as SciRepEval fuses them."""
    return Fuse(task_format, *[name for name in formats if name != task_format])


def add_format_fusion(model: Any, config: FusionConfig | None = None) -> Any:
    """Add, for every format adapter of ``model``, its AdapterFusion layer over all of them. Returns ``model``.

    Raises:
        ValueError: fewer than two format adapters, adapters that leave out different layers, or a fusion
            that exists already.
    """
    formats = adapter_formats(model)
    if len(formats) < 2:
        raise ValueError(
            f"AdapterFusion needs at least two format adapters; the model has {', '.join(formats) or 'none'}"
        )
    config = config or FusionConfig()
    setup = _setup(model)
    for name in formats:
        fuse = fusion_of(name, formats)
        _check_fusable(fuse, setup.adapters, setup.fusions, repr(fuse))
        _attach_fusion(model, fuse, config, _new_fusions(model, config))
    return model


def _check_fusable(
    fuse: Fuse, adapters: Mapping[str, BottleneckConfig], fusions: Mapping[str, Any], source: str
) -> None:
    if len({frozenset(adapters[name].leave_out) for name in fuse.adapter_names}) > 1:
        # Fusing in a layer where some of the adapters are absent is undefined (adapters fails there too).
        raise ValueError(f"{source}: the fused adapters leave out different layers")
    if fuse.name in fusions:
        raise ValueError(f"{source}: the model already has the AdapterFusion {fuse.name}")


def has_fusion(model: Any, task_format: str) -> bool:
    """Whether ``model`` has an AdapterFusion layer for ``task_format``."""
    setup = _setup(model)
    formats = adapter_formats(model)
    return (
        setup is not None
        and task_format in formats
        and len(formats) > 1
        and fusion_of(task_format, formats).name in setup.fusions
    )


def activate_adapter_format(model: Any, task_format: str | None) -> None:
    """Make ``task_format``'s fusion (if any) or adapter the active setup. ``None`` deactivates all.

    Raises:
        ValueError: ``model`` has no adapter for ``task_format``.
    """
    formats = adapter_formats(model)
    if task_format is not None and task_format not in formats:
        raise ValueError(
            f"{type(model).__name__} has no adapter for format {task_format!r}; its formats: "
            f"{', '.join(formats) or 'none'}"
        )
    setup = _setup(model)
    if setup is None:
        return
    if task_format is None:
        setup.active = None
    elif has_fusion(model, task_format):
        setup.active = fusion_of(task_format, formats)
    else:
        setup.active = task_format


def active_adapter_setup(model: Any) -> str | Fuse | None:
    """The active setup: a format's adapter name, its :class:`Fuse`, or ``None``."""
    setup = _setup(model)
    return None if setup is None else setup.active


def _is_adapter_parameter(name: str) -> bool:
    return ".adapters." in name or ".adapter_fusion_layer." in name


def _set_trainable(model: Any, marker: str) -> None:
    for name, parameter in model.named_parameters():
        parameter.requires_grad = marker in name


def train_format_adapters(model: Any) -> None:
    """Stage 1: freezes the base and trains every format adapter.

    Only ``requires_grad`` is set: the mode is the caller's.

    Every format's adapter is unfrozen, since each batch activates the adapter of each of its tasks' format.
    """
    if not adapter_formats(model):
        raise ValueError(f"{type(model).__name__} has no format adapters; add them first (add_format_adapters)")
    _set_trainable(model, ".adapters.")


def train_format_fusion(model: Any) -> None:
    """Stage 2: freeze base and adapters, train every format's fusion layer (``requires_grad`` only).

    Every format's fusion trains at once, in SciRepEval's multi-task batches.
    """
    formats = adapter_formats(model)
    if not formats or not all(has_fusion(model, name) for name in formats):
        raise ValueError("add the fusion layers first (add_format_fusion)")
    _set_trainable(model, ".adapter_fusion_layer.")


def trainable_base_parameters(model: Any) -> list[str]:
    """Names of ``model``'s parameters that require grad, outside the adapters and fusions."""
    return [
        name
        for name, parameter in model.named_parameters()
        if parameter.requires_grad and not _is_adapter_parameter(name)
    ]


def fusion_regularization_loss(model: Any) -> torch.Tensor | None:
    """AdapterFusion's value regularisation (Pfeiffer et al. 2021).

    It is ``0.01 * sum ||I - V||^2`` over the value matrices being trained of the fusions whose config has
    ``regularization``. ``None`` when there are none.
    """
    if _setup(model) is None:
        return None
    total = None
    for output in _encoder_outputs(model):
        for fusion in output.adapter_fusion_layer.values():
            weight = fusion.value.weight
            if fusion.config.regularization and weight.requires_grad:
                identity = torch.eye(weight.shape[0], device=weight.device, dtype=weight.dtype)
                term = FUSION_REGULARIZATION_WEIGHT * (identity - weight).pow(2).sum()
                total = term if total is None else total + term
    return total


def base_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The state dict of the shared encoder alone, without adapter or fusion weights."""
    return {k: v for k, v in model.state_dict().items() if not _is_adapter_parameter(k)}


# ---------------------------------------------------------------------------------------------- files


def _base_prefix(model: nn.Module) -> str:
    """How ``model``'s state-dict keys name its base model's (``bert.`` for a model with a head)."""
    return "" if model.base_model is model else f"{model.base_model_prefix}."


def _file_header(model: nn.Module, name: str) -> dict[str, Any]:
    config = model.config
    return {
        "hidden_size": getattr(config, "hidden_size", None),
        "model_class": type(model).__name__,
        "model_name": getattr(config, "name_or_path", "") or "",
        "model_type": config.model_type,
        "name": name,
        "version": FILE_VERSION,
    }


def _write(
    folder: Path, config_file: str, weights_file: str, header: dict[str, Any], state: dict[str, torch.Tensor]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / config_file).write_text(json.dumps(header, indent=2, sort_keys=True), encoding="utf-8")
    torch.save({key: value.detach().cpu().contiguous() for key, value in state.items()}, folder / weights_file)


def _module_state(model: nn.Module, kind: str, name: str) -> dict[str, torch.Tensor]:
    prefix = _base_prefix(model)
    state: dict[str, torch.Tensor] = {}
    for index, output in enumerate(_encoder_outputs(model)):
        modules = getattr(output, kind)
        if name in modules:
            state.update(
                {
                    f"{prefix}encoder.layer.{index}.output.{kind}.{name}.{k}": v
                    for k, v in modules[name].state_dict().items()
                }
            )
    return state


def save_format_adapters(model: Any, folder: str | os.PathLike[str]) -> Path:
    """Writes each format adapter and fusion of ``model`` in AdapterHub's files.

    An adapter goes to ``folder/<format>/`` (``adapter_config.json`` + ``pytorch_adapter.bin``), a fusion to
    ``folder/fusion_<format>/`` (``adapter_fusion_config.json`` + ``pytorch_model_adapter_fusion.bin``). The
    weights are keyed as the adapters library keys them for ``model``.
    """
    folder = Path(folder)
    setup = _setup(model)
    formats = adapter_formats(model)
    for name in formats:
        header = {**_file_header(model, name), "config": setup.adapters[name].to_dict()}
        _write(
            folder / name, ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, header, _module_state(model, "adapters", name)
        )
        if has_fusion(model, name):
            fuse = fusion_of(name, formats)
            header = {
                **_file_header(model, fuse.name),
                "adapter_names": list(fuse.adapter_names),
                "config": setup.fusions[fuse.name].to_dict(),
            }
            _write(
                folder / f"{FUSION_PREFIX}{name}",
                FUSION_CONFIG_FILE,
                FUSION_WEIGHTS_FILE,
                header,
                _module_state(model, "adapter_fusion_layer", fuse.name),
            )
    return folder


def format_of_folder(name: str) -> str | None:
    """The format an adapter folder holds, from its name.

    The format itself (sciembed's layout), or SPECTER2's repository names ``specter2_<format>`` and ``specter2`` (the
    proximity adapter, renamed from ``specter2_proximity`` in August 2023).
    """
    if name in FORMATS:
        return name
    if name == SPECTER2_PROXIMITY:
        return "proximity"
    prefix = f"{SPECTER2_PROXIMITY}_"
    return name[len(prefix) :] if name.startswith(prefix) and name[len(prefix) :] in FORMATS else None


def _read_header(path: Path, model: nn.Module) -> dict[str, Any]:
    """An AdapterHub JSON file, checked against ``model``'s hidden size, activation names brought up to date."""
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a readable AdapterHub config: {error}") from error
    if (
        not isinstance(header, dict)
        or not isinstance(header.get("config"), dict)
        or not isinstance(header.get("name"), str)
    ):
        raise ValueError(f'{path} is not an AdapterHub config: it needs a "name" and a "config" object')
    hidden = header.get("hidden_size")
    if hidden is not None and hidden != _hidden_size(model):
        raise ValueError(
            f"{path} is for a model of hidden size {hidden}; {type(model).__name__}'s is {_hidden_size(model)}"
        )
    if "version" not in header and header["config"].get("non_linearity") in _ACTIVATION_RENAME:
        # Written before adapters renamed its activations: its "gelu" is today's "gelu_new".
        header["config"]["non_linearity"] = _ACTIVATION_RENAME[header["config"]["non_linearity"]]
    return header


def _read_weights(folder: Path, safe_name: str, name: str) -> tuple[Path, dict[str, torch.Tensor]]:
    """The weights in ``folder``: safetensors when present, else the ``.bin`` (tensors only, ``weights_only``)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = folder / safe_name if (folder / safe_name).is_file() else folder / name
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no weights ({safe_name} or {name})")
    try:
        state = (
            load_file(str(path))
            if path.suffix == ".safetensors"
            else torch.load(path, map_location="cpu", weights_only=True)
        )
    except (SafetensorError, OSError, RuntimeError, ValueError, EOFError) as error:
        raise ValueError(f"{path} is not a readable weights file: {error}") from error
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{path} does not hold a dict of tensors")
    return path, state


def _rename(
    path: Path, state: Mapping[str, torch.Tensor], kind: str, old: str, new: str
) -> dict[tuple[int, str], torch.Tensor]:
    """``state``'s keys as ``(layer, key within the module)`` for the module ``old``.

    ``kind`` is ``adapters`` or ``adapter_fusion_layer``. Keys are read relative to the base model: a model with a head
    (``BertAdapterModel``, as SPECTER2 was saved) prefixes them with its base model's name, and older libraries named
    the adapters' dicts differently. Any other key is an error naming the file.
    """
    pattern = re.compile(rf"^(?:\w+\.)?encoder\.layer\.(\d+)\.output\.{kind}\.{re.escape(old)}\.(.+)$")
    renamed = {}
    for key, value in state.items():
        modern = key
        for legacy, current in _LEGACY_MODULE_NAMES.items():
            modern = modern.replace(legacy, current)
        match = pattern.match(modern)
        if match is None:
            raise ValueError(
                f"{path}: key {key!r} matches no {kind[:-1] if kind == 'adapters' else 'AdapterFusion'} "
                f"module of {old!r} (loaded as {new!r})"
            )
        renamed[int(match.group(1)), match.group(2)] = value
    return renamed


def _load_into(
    path: Path, modules: Mapping[int, nn.Module], state: Mapping[tuple[int, str], torch.Tensor], kind: str, name: str
) -> None:
    """Copy ``state`` into ``modules`` after checking, before anything is copied, that it fits exactly."""
    expected = {
        (index, key): tuple(value.shape)
        for index, module in modules.items()
        for key, value in module.state_dict().items()
    }
    described = {
        (index, key): f"encoder.layer.{index}.output.{kind}.{name}.{key}"
        for index, key in expected.keys() | state.keys()
    }
    problems = [f"unexpected {described[k]} (no such module)" for k in sorted(state.keys() - expected.keys())]
    problems += [f"missing {described[k]}" for k in sorted(expected.keys() - state.keys())]
    problems += [
        f"{described[k]} has shape {tuple(state[k].shape)}, the model needs {expected[k]}"
        for k in sorted(expected.keys() & state.keys())
        if tuple(state[k].shape) != expected[k]
    ]
    if problems:
        raise ValueError(f"{path} does not fit: {'; '.join(problems)}")
    for index, module in modules.items():
        module.load_state_dict({key: value for (layer, key), value in state.items() if layer == index})


def _read_adapter(
    model: nn.Module, folder: Path, load_as: str
) -> tuple[BottleneckConfig, dict[int, BottleneckAdapter]]:
    config_path = folder / ADAPTER_CONFIG_FILE
    header = _read_header(config_path, model)
    config = BottleneckConfig.from_dict(header["config"], source=str(config_path))
    modules = _new_adapters(model, config, str(config_path))
    path, state = _read_weights(folder, ADAPTER_SAFE_WEIGHTS_FILE, ADAPTER_WEIGHTS_FILE)
    _load_into(path, modules, _rename(path, state, "adapters", header["name"], load_as), "adapters", load_as)
    return config, modules


def _read_fusion(
    model: nn.Module,
    folder: Path,
    task_format: str,
    adapters: Mapping[str, BottleneckConfig],
) -> tuple[Fuse, FusionConfig, dict[int, AdapterFusion]]:
    config_path = folder / FUSION_CONFIG_FILE
    header = _read_header(config_path, model)
    config = FusionConfig.from_dict(header["config"], source=str(config_path))
    names = header.get("adapter_names", header["name"].split(","))
    expected = fusion_of(task_format, [name for name in FORMATS if name in adapters])
    if list(names) != list(expected.adapter_names):
        raise ValueError(
            f"{config_path}: fuses {names}; {folder.name}/ must hold {expected} over the model's format adapters"
        )
    _check_fusable(expected, adapters, {}, str(config_path))
    modules = _new_fusions(model, config)
    path, state = _read_weights(folder, FUSION_SAFE_WEIGHTS_FILE, FUSION_WEIGHTS_FILE)
    _load_into(
        path,
        modules,
        _rename(path, state, "adapter_fusion_layer", header["name"], expected.name),
        "adapter_fusion_layer",
        expected.name,
    )
    return expected, config, modules


def load_format_adapters(model: Any, folder: str | os.PathLike[str]) -> tuple[str, ...]:
    """Load the format adapters (and fusions) found in ``folder``.

    Sub-folders holding ``adapter_config.json``, named after their format (sciembed) or after SPECTER2's adapter
    repositories (:func:`format_of_folder`), each loaded as its format whatever name its file gives it. And
    ``fusion_<format>/`` folders, each ``Fuse(format, *others)`` over the formats loaded. Returns the model's formats.
    Everything is read and checked before anything is attached or copied.

    A model that has format adapters already takes only a folder saved from a model like it (the same
    formats and fusions, with the same configs), whose weights replace its own, as :func:`~.pals.load_pals`
    replaces PALs: this is how a training model takes back weights it saved. What is trainable stays so.

    Raises:
        ValueError: two sub-folders hold adapters for the same format. The model has format adapters and
            the folder holds other formats, fusions or configs. A config option sciembed does not implement.
            A config for another hidden size. A weight whose key matches no adapter module or whose shape
            does not fit. A fusion over other adapters (each names the file and the key).
        FileNotFoundError: a folder without its weights file.
    """
    folder = Path(folder)
    found: dict[str, Path] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and (p / ADAPTER_CONFIG_FILE).is_file()):
        task_format = format_of_folder(path.name)
        if task_format is None:
            continue
        if task_format in found:
            raise ValueError(
                f"{folder}: both {found[task_format].name}/ and {path.name}/ hold a {task_format} adapter"
            )
        found[task_format] = path
    if not found:
        return adapter_formats(model)
    adapters = {task_format: _read_adapter(model, path, task_format) for task_format, path in found.items()}
    configs = {name: config for name, (config, _) in adapters.items()}
    fusions = []
    for path in sorted(p for p in folder.glob(f"{FUSION_PREFIX}*") if (p / FUSION_CONFIG_FILE).is_file()):
        task_format = path.name[len(FUSION_PREFIX) :]
        if task_format not in configs:
            raise ValueError(
                f"{path}: an AdapterFusion for {task_format!r}, which has no adapter here (formats: "
                f"{', '.join(configs)})"
            )
        fusions.append(_read_fusion(model, path, task_format, configs))
    if adapter_formats(model):
        setup = _setup(model)
        saved = (configs, {fuse.name: config for fuse, config, _ in fusions})
        if saved != (setup.adapters, setup.fusions):
            fused = {fuse.adapter_names[0] for fuse, _, _ in fusions}
            raise ValueError(
                f"{folder} holds adapters for {', '.join(n for n in FORMATS if n in configs)} with fusions for "
                f"{', '.join(n for n in FORMATS if n in fused) or 'none'}; {type(model).__name__} has adapters "
                f"for {', '.join(adapter_formats(model))} with fusions for "
                f"{', '.join(n for n in adapter_formats(model) if has_fusion(model, n)) or 'none'}, "
                "or other configs: load it into a model without format adapters, or into one like the model it "
                "was saved from"
            )
        for task_format, (_, modules) in adapters.items():
            _copy_into(model, "adapters", task_format, modules)
        for fuse, _, modules in fusions:
            _copy_into(model, "adapter_fusion_layer", fuse.name, modules)
        return adapter_formats(model)
    for task_format, (config, modules) in adapters.items():
        _attach_adapter(model, task_format, config, modules)
    for fuse, config, modules in fusions:
        _attach_fusion(model, fuse, config, modules)
    return adapter_formats(model)


def has_format_adapters(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds format adapters in AdapterHub's layout (see :func:`load_format_adapters`)."""
    folder = Path(folder)
    return folder.is_dir() and any(
        p.is_dir() and format_of_folder(p.name) and (p / ADAPTER_CONFIG_FILE).is_file() for p in folder.iterdir()
    )
