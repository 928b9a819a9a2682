"""Embedding quantization as sentence-transformers does it: float32 vectors to int8, uint8 or packed bits.

``int8`` and ``uint8`` cut each dimension's range into 256 steps. The range (its minimum and maximum) is read from
calibration vectors, from ranges stored with the model (:data:`RANGES_FILE`), or, failing both, from the vectors
being quantized. ``binary`` and ``ubinary`` keep one bit per dimension (positive or not), eight to a byte.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .choices import StrChoice, choices
from .io import atomic_path

logger = logging.getLogger(__name__)


class WeightQuantization(StrChoice):
    """The weights and arithmetic of an ONNX or OpenVINO model (``quantization=``), not the vectors' precision."""

    FP32 = "fp32"
    INT8 = "int8"
    INT8_WEIGHTS = "int8_weights"
    BF16 = "bf16"


OutputPrecision = Literal["float32", "int8", "uint8", "binary", "ubinary"]


class Precision(StrChoice):
    """The precision of the output vectors (``precision=``)."""

    FLOAT32 = "float32"
    INT8 = "int8"
    UINT8 = "uint8"
    BINARY = "binary"
    UBINARY = "ubinary"


OUTPUT_PRECISIONS = choices(Precision)
#: The precisions that keep one bit per dimension.
_BITS = (Precision.BINARY, Precision.UBINARY)

#: The file beside a saved model that holds its calibrated int8 / uint8 ranges.
RANGES_FILE = "sciembed_quantization.json"

#: Fewer vectors than this give unstable ranges when they calibrate themselves (a warning says so).
MIN_CALIBRATION = 100


def check_precision(precision: Any) -> Precision:
    """Refuse a ``precision`` that is not one of :data:`OUTPUT_PRECISIONS`, naming the ONNX option for ``fp32``.

    Args:
        precision: the output precision asked for.

    Raises:
        ValueError: naming the value and the choices.
    """
    if precision in OUTPUT_PRECISIONS:
        return Precision(precision)
    hint = (
        "; the precision of the ONNX model's weights is quantization= (--onnx-quantization)"
        if precision == "fp32"
        else ""
    )
    raise ValueError(f"precision must be one of {', '.join(OUTPUT_PRECISIONS)}, got {precision!r}{hint}")


def calibration_ranges(embeddings: np.ndarray) -> np.ndarray:
    """The per-dimension ranges of float ``embeddings`` ``(n, dim)``: a ``(2, dim)`` array of minima and maxima.

    Args:
        embeddings: float vectors representative of those to quantize.

    Raises:
        ValueError: fewer than two vectors, or not a matrix.
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or len(embeddings) < 2:
        raise ValueError(
            f"int8 ranges need at least two calibration vectors (n, dim), got shape {embeddings.shape}; "
            "give calibration_embeddings= from a representative set of papers, or ranges="
        )
    return np.vstack((embeddings.min(axis=0), embeddings.max(axis=0)))


def quantize(
    embeddings: np.ndarray,
    precision: OutputPrecision,
    *,
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
) -> np.ndarray:
    """Quantize float ``embeddings`` to ``precision`` by sentence-transformers' ``quantize_embeddings``.

    The int8 / uint8 ranges come from ``ranges``, else ``calibration_embeddings``, else the vectors themselves (with a
    warning).

    Args:
        embeddings: float vectors. The last axis is the dimension.
        precision: one of :data:`OUTPUT_PRECISIONS`.
        ranges: int8 / uint8 only: the ``(2, dim)`` minima and maxima per dimension.
        calibration_embeddings: int8 / uint8 only, without ``ranges``: vectors to read the ranges from.

    Raises:
        ValueError: an unknown precision, or int8 / uint8 ranges read from fewer than two vectors.
    """
    from sentence_transformers.util import quantize_embeddings

    precision = check_precision(precision)
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if precision is Precision.FLOAT32:
        return embeddings
    if precision in _BITS:
        return quantize_embeddings(embeddings, precision.value)
    if ranges is None:
        if calibration_embeddings is None:
            flat = embeddings.reshape(-1, embeddings.shape[-1])
            if len(flat) < MIN_CALIBRATION:
                logger.warning(
                    "%s ranges read from the %d vectors being quantized; give calibration_embeddings= or "
                    "calibrated ranges (Encoder.calibrate) from at least %d for stable ranges",
                    precision,
                    len(flat),
                    MIN_CALIBRATION,
                )
            calibration_embeddings = flat
        ranges = calibration_ranges(calibration_embeddings)
    ranges = np.asarray(ranges, dtype=np.float32)
    if ranges.shape != (2, embeddings.shape[-1]):
        raise ValueError(f"ranges must have shape (2, {embeddings.shape[-1]}), got {ranges.shape}")
    return quantize_embeddings(embeddings, precision.value, ranges=ranges)


def save_ranges(folder: str | os.PathLike[str], ranges: dict[str, np.ndarray]) -> Path:
    """Write calibrated ``ranges`` (``{task format or "": (2, dim)}``) to ``folder``'s :data:`RANGES_FILE`.

    Args:
        folder: a saved model folder.
        ranges: the ranges per task format. ``""`` for the model's default format.
    """
    path = Path(folder) / RANGES_FILE
    payload = {"ranges": {name: np.asarray(value, dtype=np.float32).tolist() for name, value in ranges.items()}}
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(payload) + "\n", encoding="utf-8")
    return path


def load_ranges(folder: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The calibrated ranges stored in ``folder``'s :data:`RANGES_FILE` (empty when it has none).

    Args:
        folder: a model folder.

    Raises:
        ValueError: the file is not ranges as :func:`save_ranges` writes them. The message names it.
    """
    path = Path(folder) / RANGES_FILE
    if not path.is_file():
        return {}
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))["ranges"]
        ranges = {str(name): np.asarray(value, dtype=np.float32) for name, value in stored.items()}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as e:
        raise ValueError(
            f"{path}: not calibrated ranges as sciembed writes them ({e}); delete it or calibrate again"
        ) from None
    for name, value in ranges.items():
        if value.ndim != 2 or value.shape[0] != 2 or not np.isfinite(value).all():
            raise ValueError(f"{path}: the ranges of {name or 'the default format'!r} are not two finite rows")
    return ranges
