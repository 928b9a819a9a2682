"""The engines a :class:`~sciembed.encode.PaperEncoder` runs its batches on, and the weight quantizations of each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .choices import StrChoice, choices
from .onnx_backend import QUANTIZATIONS as ONNX_QUANTIZATIONS
from .onnx_backend import CachedEngine, OnnxBackend
from .openvino_backend import OPENVINO_QUANTIZATIONS, OpenVinoBackend
from .openvino_backend import check_quantization as check_openvino_quantization
from .quantization import WeightQuantization


class Backend(StrChoice):
    """The engine a :class:`~sciembed.encode.PaperEncoder` runs its batches on."""

    PYTORCH = "pytorch"
    ONNX = "onnx"
    OPENVINO = "openvino"


BACKENDS = choices(Backend)
#: The quantizations each backend offers.
BACKEND_QUANTIZATIONS: dict[str, tuple[str, ...]] = {
    Backend.PYTORCH: (WeightQuantization.FP32.value,),
    Backend.ONNX: ONNX_QUANTIZATIONS,
    Backend.OPENVINO: OPENVINO_QUANTIZATIONS,
}
#: Every quantization of some backend, in order.
WEIGHT_QUANTIZATIONS: tuple[str, ...] = tuple(dict.fromkeys(q for qs in BACKEND_QUANTIZATIONS.values() for q in qs))
#: How messages name each backend.
BACKEND_NAMES = {Backend.PYTORCH: "PyTorch", Backend.ONNX: "ONNX", Backend.OPENVINO: "OpenVINO"}
#: The engine class of each backend but PyTorch, which runs the model itself.
ENGINES: dict[Backend, type[CachedEngine]] = {Backend.ONNX: OnnxBackend, Backend.OPENVINO: OpenVinoBackend}


def check_backend(backend: Any, quantization: Any = WeightQuantization.FP32, device: Any = None) -> Backend:
    """Refuses a backend, quantization and device that do not go together.

    A backend whose extra is not installed is refused too.

    Args:
        backend: ``pytorch``, ``onnx`` or ``openvino``.
        quantization: the weights' quantization asked for.
        device: the device asked for (``None``: the default).

    Raises:
        ValueError: naming the value and what the backend takes, or ``bf16`` on a CPU without bfloat16 arithmetic.
        ImportError: the backend's extra is not installed, naming the ``pip install`` that adds it.
    """
    import torch

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if quantization not in BACKEND_QUANTIZATIONS[backend]:
        offering = [f"backend={str(name)!r}" for name, kinds in BACKEND_QUANTIZATIONS.items() if quantization in kinds]
        if offering:
            raise ValueError(f"quantization {quantization!r} needs {' or '.join(offering)}")
        raise ValueError(
            f"quantization must be one of {BACKEND_QUANTIZATIONS[backend]} for backend={backend!r}, "
            f"got {quantization!r}"
        )
    if backend in ENGINES and device is not None and torch.device(device).type != "cpu":
        raise ValueError(
            f"the {BACKEND_NAMES[backend]} backend runs on CPU; device {device!r} is for backend='pytorch'"
        )
    if backend in ENGINES:
        ENGINES[backend].require()
    if backend == Backend.OPENVINO:
        check_openvino_quantization(quantization)
    return Backend(backend)


def make_engine(
    backend: str,
    quantization: str,
    engine_cache: str | os.PathLike[str] | Path | None,
    *,
    threads: int | None = None,
    gated: bool = True,
) -> OnnxBackend | OpenVinoBackend | None:
    """The engine running ``backend`` (``None`` for PyTorch, which runs the model itself).

    Args:
        backend: ``pytorch``, ``onnx`` or ``openvino``.
        quantization: the weights' quantization.
        engine_cache: the folder holding each engine's own (``onnx/``, ``openvino/``). ``None``: the sciembed cache.
        threads: inference threads (``None``: the physical cores).
        gated: refuse int8 its gate has not passed (``False`` only for the gate itself).
    """
    if backend not in ENGINES:
        return None
    engine = ENGINES[backend]
    cache_dir = Path(engine_cache) / engine.cache_name if engine_cache is not None else None
    return engine(quantization, cache_dir, threads=threads, gated=gated)
