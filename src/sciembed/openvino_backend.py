"""The OpenVINO backend of :class:`~sciembed.encode.PaperEncoder`: the ONNX export, compiled for CPU.

``PaperEncoder(..., backend="openvino")`` tokenizes, length-sorts and batches as the PyTorch and ONNX paths do,
and runs each batch through OpenVINO. The model is the export of :meth:`PaperEncoder.forward` that the ONNX
backend makes (:func:`sciembed.onnx_backend.export_encoder`, unfused), read by OpenVINO's ONNX reader and saved
as OpenVINO IR in ``<cache>/openvino/<fingerprint>/``. Its vectors must equal PyTorch's within
:data:`~sciembed.onnx_backend.EXPORT_TOLERANCE` before it is kept, so every family that exports to ONNX runs here.

Two int8 models can be made beside it, and one more way to run it. Each is refused until the int8 gate
(:func:`sciembed.evaluation.int8_gate.check_int8`) has passed it:

- ``int8``: NNCF's post-training quantization (weights and activations), calibrated on papers of the collection,
  each tokenized as the encoder tokenizes it. :class:`Int8Recipe` says what it quantizes.
- ``int8_weights``: NNCF's weight-only compression (int8 weights, float activations), which needs no papers.
- ``bf16``: the float32 model run in bfloat16 arithmetic, on CPUs that have it (AVX-512 BF16 or AMX).

nncf reports usage to Intel unless the user has opted out. sciembed imports it with that reporting off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import platform
import shutil
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import onnx_backend
from .choices import StrChoice
from .io import atomic_path
from .quantization import WeightQuantization

if TYPE_CHECKING:
    from .encode import PaperEncoder

logger = logging.getLogger(__name__)

OpenVinoQuantization = Literal["fp32", "int8", "int8_weights", "bf16"]
OPENVINO_QUANTIZATIONS: tuple[OpenVinoQuantization, ...] = ("fp32", "int8", "int8_weights", "bf16")
#: The quantizations that :func:`quantize` writes a model file for (the others run ``model.xml``).
QUANTIZED_MODELS = (WeightQuantization.INT8, WeightQuantization.INT8_WEIGHTS)
#: The quantizations whose batches run as parts, one single-thread stream per core (see :func:`parallelism`).
BATCH_PARTS = (WeightQuantization.FP32, WeightQuantization.INT8)
#: Token columns each input of a :data:`BUCKETED` quantization is padded to a multiple of. OpenVINO builds its
#: kernels for every input shape it has not seen, so fewer widths make a collection's first pass faster.
SHAPE_BUCKET = 16
#: The quantizations whose inputs are padded to a multiple of :data:`SHAPE_BUCKET` tokens. int8 ran faster so,
#: on new widths and on widths seen before; fp32 did not.
BUCKETED = (WeightQuantization.INT8,)
#: Papers NNCF calibrates int8 activations on (one paper per calibration step, without padding).
CALIBRATION_SIZE = 300
CONVERT_FILE = "convert.json"


class Int8Preset(StrChoice):
    """NNCF's quantization preset: symmetric activations (performance) or asymmetric ones (mixed)."""

    PERFORMANCE = "performance"
    MIXED = "mixed"


@dataclass(frozen=True)
class Int8Recipe:
    """What NNCF's post-training quantization puts in int8, and how.

    Args:
        preset: symmetric or asymmetric activations (NNCF's default for transformers is mixed).
        smooth_quant_alpha: SmoothQuant's migration strength for products. A negative value turns it off.
        float_attention: keep the attention core (QK^T, softmax, AV) in float.
    """

    preset: Int8Preset = Int8Preset.MIXED
    smooth_quant_alpha: float = 0.95
    float_attention: bool = False

    def nncf_options(self, nncf: Any) -> dict[str, Any]:
        """The keyword arguments of ``nncf.quantize`` for this recipe.

        Args:
            nncf: the imported nncf module (see :func:`_import_nncf`).
        """
        from nncf.quantization.advanced_parameters import (
            AdvancedQuantizationParameters,
            AdvancedSmoothQuantParameters,
        )

        options: dict[str, Any] = {
            "preset": nncf.QuantizationPreset(self.preset.value),
            "advanced_parameters": AdvancedQuantizationParameters(
                smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=self.smooth_quant_alpha)
            ),
        }
        if self.float_attention:  # the two products between activations in each layer's self-attention
            options["ignored_scope"] = nncf.IgnoredScope(patterns=[ATTENTION_PRODUCTS])
        return options

    def describe(self) -> dict[str, Any]:
        """The recipe as JSON values (written beside the model it made)."""
        return {**asdict(self), "preset": self.preset.value}


#: The products between activations (QK^T and AV) in the exported BERT-style graph.
ATTENTION_PRODUCTS = r".*/attention/self/MatMul(_1)?$"
#: The recipe of ``quantization="int8"``.
INT8_RECIPE = Int8Recipe(preset=Int8Preset.PERFORMANCE)


class OpenVinoError(ValueError):
    """The encoder cannot run on OpenVINO (the message names the model and why)."""


class InferencePrecision(StrChoice):
    """The precision of the float operations OpenVINO runs (its ``INFERENCE_PRECISION_HINT``)."""

    F32 = "f32"
    BF16 = "bf16"


def openvino_available() -> bool:
    """Whether the ``openvino`` extra (openvino, nncf and the ONNX exporter) is installed."""
    import importlib.util

    return onnx_backend.onnx_available() and all(
        importlib.util.find_spec(name) is not None for name in ("openvino", "nncf")
    )


def require_openvino() -> None:
    """Refuse to go on without the ``openvino`` extra, naming how to install it."""
    if not openvino_available():
        raise ImportError(
            "the OpenVINO backend needs the openvino extra: pip install 'sciembed[openvino]' (openvino, nncf, and "
            "onnxruntime and onnx for the export)"
        )


def model_file(quantization: str) -> str:
    """The IR file of a ``quantization`` in a model folder (``model.xml``, ``model_int8.xml``, ...)."""
    return f"model_{quantization}.xml" if quantization in QUANTIZED_MODELS else "model.xml"


def inference_precision(quantization: str) -> InferencePrecision:
    """The precision OpenVINO runs a ``quantization``'s float operations in.

    ``bf16`` runs them in bfloat16. The others run them in float32, ``int8`` included: its float operations (layer
    norms, additions, requantization) cost as much in bfloat16 and lose more of fp32's vectors.

    Args:
        quantization: one of :data:`OPENVINO_QUANTIZATIONS`.
    """
    if quantization == WeightQuantization.BF16:
        return InferencePrecision.BF16
    return InferencePrecision.F32


def parallelism(quantization: str) -> onnx_backend.Parallelism:
    """How OpenVINO spreads a batch of a ``quantization`` over the threads.

    fp32 and int8 run batch parts side by side, as ONNX fp32 does. bf16 and ``int8_weights`` share each operator
    between the threads.

    Args:
        quantization: one of :data:`OPENVINO_QUANTIZATIONS`.
    """
    if quantization in BATCH_PARTS:
        return onnx_backend.Parallelism.BATCH
    return onnx_backend.Parallelism.OPERATORS


@functools.cache
def cpu_capabilities() -> tuple[str, ...]:
    """The precisions OpenVINO's CPU plugin can compute in here (``FP32``, ``BF16``, ``INT8``, ...).

    Read once per process.
    """
    require_openvino()
    import openvino as ov

    return tuple(ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))


def check_quantization(quantization: str) -> None:
    """Refuse a ``quantization`` this CPU cannot compute, naming what it can and what to use.

    Args:
        quantization: one of :data:`OPENVINO_QUANTIZATIONS`.

    Raises:
        OpenVinoError: ``bf16`` on a CPU without bfloat16 arithmetic.
    """
    if quantization == WeightQuantization.BF16 and "BF16" not in cpu_capabilities():
        raise OpenVinoError(
            "quantization 'bf16' needs a CPU with bfloat16 arithmetic (AVX-512 BF16 or AMX); OpenVINO finds "
            f"{', '.join(cpu_capabilities())} here. Use quantization 'fp32', or 'int8' behind its gate"
        )


def gate_file(quantization: str) -> str:
    """The file holding the int8 gate's verdict on a ``quantization`` (``int8_gate.json``, ...)."""
    return f"{quantization}_gate.json"


class OpenVinoModel:
    """One compiled OpenVINO model of an encoder: batch inputs to float32 vectors.

    Args:
        path: the model's IR file (``model.xml``, ...).
        threads: inference threads (default: the physical cores, or ``$SCIEMBED_ONNX_THREADS``).
        precision: the precision of the float operations. OpenVINO's own default is bf16 where the CPU has it.
        parallelism: how a batch is spread over the threads. By batch, each thread runs whole parts on its own stream.
        max_width: the widest input the model takes (the encoder's ``max_length``); no input is padded past it.
            ``None``: inputs run as they come.
        bucket: token columns each input is padded to a multiple of, masked (default :data:`SHAPE_BUCKET`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        threads: int | None = None,
        precision: InferencePrecision = InferencePrecision.F32,
        parallelism: onnx_backend.Parallelism = onnx_backend.Parallelism.OPERATORS,
        max_width: int | None = None,
        bucket: int | None = None,
    ):
        require_openvino()
        import openvino as ov

        self.path = Path(path)
        self.threads = threads or onnx_backend.cpu_threads()
        self.parallelism = onnx_backend.Parallelism(parallelism)
        self.part_rows = onnx_backend.PART_ROWS
        self.max_width = max_width
        self.bucket = SHAPE_BUCKET if bucket is None else bucket
        split = self.parallelism is onnx_backend.Parallelism.BATCH and self.threads > 1
        config: dict[str, Any] = {
            "INFERENCE_PRECISION_HINT": InferencePrecision(precision).value,
            "INFERENCE_NUM_THREADS": self.threads,
        }
        # One stream of one thread per part in flight, or one stream whose threads share each operator.
        config.update({"NUM_STREAMS": self.threads} if split else {"PERFORMANCE_HINT": "LATENCY"})
        self.compiled = ov.Core().compile_model(str(path), "CPU", config)
        self.request = self.compiled.create_infer_request()
        self.input_names = [port.get_any_name() for port in self.compiled.inputs]
        self._queue = ov.AsyncInferQueue(self.compiled, self.threads) if split else None

    def __call__(self, features: Mapping[str, Any]) -> np.ndarray:
        feed = {name: _as_numpy(features[name]) for name in self.input_names}
        if self._queue is None or len(feed[self.input_names[0]]) < 2:
            # A copy: the request reuses its output buffer on the next batch.
            return np.array(self.request.infer(self._bucketed(feed))[self.compiled.output(0)], dtype=np.float32)
        parts = [self._bucketed(part) for part in onnx_backend.batch_parts(feed, self.threads, self.part_rows)]
        vectors: list[np.ndarray | None] = [None] * len(parts)

        def keep(request: Any, index: int) -> None:
            vectors[index] = np.array(request.get_output_tensor(0).data, dtype=np.float32)

        self._queue.set_callback(keep)
        for index, part in enumerate(parts):
            self._queue.start_async(part, index)
        self._queue.wait_all()
        return np.concatenate(vectors)

    def _bucketed(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``feed`` with masked token columns added to a multiple of :attr:`bucket`, at most :attr:`max_width`.

        Args:
            feed: model inputs, rows first, right-padded as :func:`~sciembed.onnx_backend.batch_parts` leaves them.
        """
        mask = feed.get("attention_mask")
        if mask is None or mask.ndim != 2 or self.max_width is None:
            return feed
        width = mask.shape[1]
        target = max(width, min(-(-width // self.bucket) * self.bucket, self.max_width))
        if target == width:
            return feed
        columns = ((0, 0), (0, target - width))
        return {
            name: np.pad(value, columns) if value.ndim == 2 and value.shape[1] == width else value
            for name, value in feed.items()
        }

    def settings(self) -> dict[str, Any]:
        """The compiled model's settings, as benchmarks record them."""
        names = ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS", "PERFORMANCE_HINT")
        return {
            "parallelism": self.parallelism.value,
            "part_rows": self.part_rows if self._queue is not None else None,
            "shape_bucket": self.bucket if self.max_width is not None else None,
            "max_width": self.max_width,
            **{name.lower(): str(self.compiled.get_property(name)) for name in names},
        }


class OpenVinoBackend(onnx_backend.CachedEngine):
    """The OpenVINO models of one :class:`~sciembed.encode.PaperEncoder`, one compiled model per format.

    Its format copies share it. Each model is converted, or read from the cache, on first use.

    Args:
        quantization: ``fp32``, ``int8``, ``int8_weights`` or ``bf16``.
        cache_dir: where models are kept (default ``openvino/`` in :func:`sciembed.io.default_cache_dir`).
        threads: inference threads (default: the physical cores, or ``$SCIEMBED_ONNX_THREADS``).
        gated: refuse an int8 model its gate has not passed (``False`` only for the gate itself).
    """

    quantizations = OPENVINO_QUANTIZATIONS
    cache_name = "openvino"
    require = staticmethod(require_openvino)

    def open(self, encoder: PaperEncoder) -> OpenVinoModel:
        folder = model_folder(encoder, self.cache_dir)
        if self.quantization != WeightQuantization.FP32 and self.gated:
            onnx_backend.refuse_ungated(
                read_gate(folder, self.quantization), f"OpenVINO {self.quantization} for {encoder.name_or_path}"
            )
        return OpenVinoModel(
            folder / model_file(self.quantization),
            threads=self.threads,
            precision=inference_precision(self.quantization),
            parallelism=parallelism(self.quantization),
            max_width=encoder.max_length if self.quantization in BUCKETED else None,
        )

    def calibration_digest(self, model_fingerprint: str) -> str:
        """What made the cached int8 model: its papers' digest and recipe (empty otherwise).

        Args:
            model_fingerprint: the PyTorch encoder's fingerprint, which names the model folder.
        """
        path = self.cache_dir / model_fingerprint[:32] / Path(model_file(self.quantization)).with_suffix(".json")
        if self.quantization != WeightQuantization.INT8 or not path.is_file():
            return ""
        report = json.loads(path.read_text(encoding="utf-8"))
        recipe = report.get("recipe")  # a report without one gives the papers' digest alone
        return report.get("calibration_digest", "") + (json.dumps(recipe, sort_keys=True) if recipe else "")


def model_folder(encoder: PaperEncoder, cache_dir: str | os.PathLike[str]) -> Path:
    """The cache folder of ``encoder``'s OpenVINO model, made if it is not there yet.

    It holds ``model.xml``, ``model.bin`` and ``convert.json``. The folder appears whole or not at all.

    Args:
        encoder: the encoder whose model the folder holds.
        cache_dir: the OpenVINO model cache.
    """

    def build(staging: Path) -> None:
        report = convert_encoder(encoder, staging)
        (staging / CONVERT_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    folder = Path(cache_dir) / encoder.model_fingerprint()[:32]
    return onnx_backend.cached_folder(folder, (CONVERT_FILE, model_file(WeightQuantization.FP32)), build)


def convert_encoder(encoder: PaperEncoder, folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Export ``encoder``'s forward to ONNX and save it as OpenVINO IR (``model.xml``) in ``folder``.

    Args:
        encoder: a float32 encoder on CPU, in the format to convert.
        folder: where the IR files go. The ONNX file is removed once read.

    Returns:
        What was done: the inputs, the largest difference to PyTorch on the check texts, the versions.

    Raises:
        OpenVinoError: the export fails, or OpenVINO's vectors differ from PyTorch's by more than
            :data:`~sciembed.onnx_backend.EXPORT_TOLERANCE`.
    """
    require_openvino()
    import openvino as ov
    import torch

    folder = Path(folder)
    name = f"{type(encoder.transformer).__name__} ({encoder.name_or_path})"
    onnx_file = folder / "model.onnx"
    try:
        export = onnx_backend.export_encoder(encoder, onnx_file, optimize=False)
    except onnx_backend.OnnxExportError as error:
        raise OpenVinoError(f"{error}; the OpenVINO backend reads that export") from error
    try:
        model = ov.Core().read_model(str(onnx_file))
    except Exception as error:  # the reader's errors have many types; each is this model's reason
        raise OpenVinoError(f"{name}: OpenVINO cannot read its ONNX export: {type(error).__name__}: {error}") from None
    ov.save_model(model, str(folder / model_file(WeightQuantization.FP32)), compress_to_fp16=False)
    for path in folder.glob("model.onnx*"):
        path.unlink()
    with torch.no_grad():
        check = encoder.features(onnx_backend._CHECK_TEXTS)
        expected = encoder.forward(check).float().numpy()
    got = OpenVinoModel(folder / model_file(WeightQuantization.FP32), threads=1)(check)
    error = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")
    if not error <= onnx_backend.EXPORT_TOLERANCE:
        raise OpenVinoError(
            f"{name}: the OpenVINO model's vectors differ from PyTorch's by {error:.2e} "
            f"(> {onnx_backend.EXPORT_TOLERANCE:g}); it cannot run on OpenVINO"
        )
    logger.info("%s converted to OpenVINO (max abs difference to PyTorch %.2e)", name, error)
    return {
        "inputs": export["inputs"],
        "max_abs_difference_to_pytorch": error,
        "tolerance": onnx_backend.EXPORT_TOLERANCE,
        "forward_options": encoder.forward_options,
        "torch": torch.__version__,
        "openvino": ov.__version__,
        "machine": platform.machine(),
    }


def quantize(
    folder: str | os.PathLike[str],
    quantization: OpenVinoQuantization,
    encoder: PaperEncoder,
    texts: Sequence[str] = (),
    *,
    subset_size: int = CALIBRATION_SIZE,
    show_progress_bar: bool = False,
    recipe: Int8Recipe = INT8_RECIPE,
) -> Path:
    """Write the ``quantization`` model beside the fp32 one, with a JSON file describing it.

    Args:
        folder: a model folder of :func:`model_folder`.
        quantization: ``int8`` (post-training quantization) or ``int8_weights`` (weight-only compression).
        encoder: the encoder the folder holds. It tokenizes the calibration texts.
        texts: ``int8`` only: the collection's paper texts. ``subset_size`` of them, spread evenly, calibrate.
        subset_size: the most texts calibration uses.
        show_progress_bar: show NNCF's progress and tables.
        recipe: ``int8`` only: what post-training quantization puts in int8.

    Raises:
        ValueError: an unknown ``quantization``, or ``int8`` without texts.
        OpenVinoError: a ``recipe`` that keeps layers in float which this model does not have.
    """
    from .truncation import cut_texts

    if quantization not in QUANTIZED_MODELS:
        raise ValueError(f"quantization must be int8 or int8_weights, got {quantization!r}")
    if quantization == WeightQuantization.INT8 and not texts:
        raise ValueError("int8 post-training quantization needs papers to calibrate on; none were given")
    nncf = _import_nncf()
    import openvino as ov

    folder = Path(folder)
    model = ov.Core().read_model(str(folder / model_file(WeightQuantization.FP32)))
    report: dict[str, Any] = {"quantization": quantization, "nncf": nncf.__version__}
    with _nncf_output(show_progress_bar):
        if quantization == WeightQuantization.INT8_WEIGHTS:
            quantized = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)
        else:
            chosen = list(texts)[:: max(1, len(texts) // subset_size)][:subset_size]
            chosen = cut_texts(chosen, encoder.tokenizer, encoder.max_length)
            items = [_tensors(encoder.features([text])) for text in chosen]
            try:
                quantized = nncf.quantize(
                    model,
                    nncf.Dataset(items),
                    subset_size=len(items),
                    model_type=nncf.ModelType.TRANSFORMER,
                    **recipe.nncf_options(nncf),
                )
            except nncf.ValidationError as error:  # an ignored scope that names no layer of this model
                reason = " ".join(str(error).split())
                raise OpenVinoError(
                    f"{folder}: the int8 recipe {recipe.describe()} does not fit this model: {reason} "
                    "Use a recipe with float_attention=False"
                ) from None
            digest = hashlib.sha256("\n".join(chosen).encode()).hexdigest()
            report.update(calibration_papers=len(chosen), calibration_digest=digest, recipe=recipe.describe())
    target = folder / model_file(quantization)
    staging = folder / f".{target.stem}.{uuid.uuid4().hex[:8]}.partial"
    staging.mkdir()
    try:
        ov.save_model(quantized, str(staging / target.name), compress_to_fp16=False)
        (folder / gate_file(quantization)).unlink(missing_ok=True)  # a verdict on the model this one replaces
        for path in staging.iterdir():
            os.replace(path, folder / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    with atomic_path(target.with_suffix(".json")) as temporary:
        temporary.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return target


def read_gate(folder: str | os.PathLike[str], quantization: str) -> dict[str, Any] | None:
    """The int8 gate's verdict on ``quantization`` stored in a model ``folder``.

    ``None`` before any check, and for a verdict on other arithmetic than ``quantization`` runs in here.

    Args:
        folder: a model folder of :func:`model_folder`.
        quantization: one of :data:`OPENVINO_QUANTIZATIONS`.
    """
    path = Path(folder) / gate_file(quantization)
    if not path.is_file() or not (Path(folder) / model_file(quantization)).is_file():
        return None
    verdict = json.loads(path.read_text(encoding="utf-8"))
    if verdict.get("inference_precision", InferencePrecision.F32) != inference_precision(quantization):
        return None
    return verdict


def _import_nncf() -> Any:
    """nncf, imported with its usage reports off.

    nncf sends them unless the user has opted out.
    """
    if "nncf" not in sys.modules:
        # nncf reads NNCF_CI, and openvino_telemetry reads CI, once, when nncf is first imported.
        saved = {name: os.environ.get(name) for name in ("NNCF_CI", "CI")}
        os.environ.update(NNCF_CI="1", CI="true")
        try:
            import nncf  # noqa: F401
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return sys.modules["nncf"]


@contextlib.contextmanager
def _nncf_output(show: bool) -> Any:
    """nncf's log lines, tables and progress bars, shown or kept off the terminal."""
    if show:
        yield
        return
    nncf_logger = logging.getLogger("nncf")
    level = nncf_logger.level
    nncf_logger.setLevel(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        nncf_logger.setLevel(level)


def _tensors(features: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The tensors of one batch's model inputs, as numpy arrays (what OpenVINO's inputs are)."""
    return {key: _as_numpy(value) for key, value in features.items() if hasattr(value, "shape")}


def _as_numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
