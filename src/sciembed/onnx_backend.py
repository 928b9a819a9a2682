"""The ONNX Runtime backend of :class:`~sciembed.encode.PaperEncoder`: the same batches, another engine.

``PaperEncoder(..., backend="onnx")`` tokenizes, length-sorts and batches exactly as the PyTorch path does
and hands each batch's inputs (:meth:`PaperEncoder.features`) to an ONNX Runtime session instead of the
model. The session runs an export of :meth:`PaperEncoder.forward` itself (the model, the task format, the
pooling and the normalisation), so every family exports through the one function that embeds it:
Multi²SPE's inserted CLS tokens, a control code per format, format adapters and PALs (the active format's
weights), mixture-of-experts routing (``domain_ids`` is an input), sentence-transformers modules.

An export is made once per encoder and format, in ``<cache>/onnx/<fingerprint>/`` (see
:func:`sciembed.io.default_cache_dir`), and checked before it is used: on texts of other lengths and another
batch size than it was traced with, its vectors must equal PyTorch's within :data:`EXPORT_TOLERANCE`. It is
traced with eager attention, whose pattern ``onnxruntime.transformers.optimizer`` then fuses (attention,
LayerNorm, GELU) before the graph is checked again. A fused graph that misses the tolerance is not used (the
plain export is, with a warning). What cannot be exported raises :class:`OnnxExportError` naming the model
and the reason.

int8 (``quantization="int8"``) is ONNX Runtime's dynamic quantisation of the fused export (its products and
fused attention become int8 operators, run by the VNNI or AMX kernels the CPU has): int8 weights, and
activations quantised with one scale per batch, so a paper's int8 vector depends slightly on the papers it
is batched with. It is refused until :func:`sciembed.evaluation.int8_gate.check_int8` has compared it with
fp32 on a held-out citation set and written a passing verdict next to it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import shutil
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from .choices import StrChoice, choices, parse_choice
from .io import check_finite, default_cache_dir, replace_folder
from .quantization import WeightQuantization

if TYPE_CHECKING:
    from .encode import PaperEncoder

logger = logging.getLogger(__name__)

Quantization = Literal["fp32", "int8"]
QUANTIZATIONS: tuple[Quantization, ...] = ("fp32", "int8")

#: Largest absolute difference allowed between an export's vectors and PyTorch's.
EXPORT_TOLERANCE = 1e-4
#: The ONNX opset exports are written in.
OPSET = 17
#: The opset of the dynamo exporter (it writes opset 18 and later).
DYNAMO_OPSET = 18
#: The most rows of one part of a batch that :attr:`Parallelism.BATCH` cuts.
PART_ROWS = 4
#: ONNX Runtime's session setting for whether idle intra-op threads spin; sessions set it off.
ALLOW_SPINNING = "session.intra_op.allow_spinning"


class Exporter(StrChoice):
    """The torch exporter that writes the ONNX graph."""

    TORCHSCRIPT = "torchscript"
    DYNAMO = "dynamo"


EXPORTERS = choices(Exporter)
FP32_FILE, INT8_FILE, GATE_FILE, EXPORT_FILE = "model.onnx", "model_int8.onnx", "int8_gate.json", "export.json"

# Traced on one batch, checked on another of other lengths and size, so that no shape is baked in.
_TRACE_TEXTS = ["Citation graphs for paper embeddings", "A short title"]
_CHECK_TEXTS = [
    "Scientific documents are embedded from their titles and abstracts. " * 6,
    "Graph neural networks",
    "Transformers pretrained on papers learn representations that transfer to classification, search and "
    "recommendation of scientific documents.",
    "x",
    "Contrastive learning with citation triplets",
]


class OnnxExportError(ValueError):
    """The encoder cannot run on ONNX Runtime (the message names the model and why)."""


def onnx_available() -> bool:
    """Whether the ``onnx`` extra (onnxruntime and onnx) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def require_onnx() -> None:
    if not onnx_available():
        raise ImportError("the ONNX backend needs the onnx extra: pip install 'sciembed[onnx]' (onnxruntime, onnx)")


def require_onnxscript() -> None:
    """Refuse the dynamo exporter without ``onnxscript``, naming how to install it."""
    import importlib.util

    if importlib.util.find_spec("onnxscript") is None:
        raise ImportError(
            "the dynamo ONNX exporter needs onnxscript: pip install 'sciembed[onnx]', or use exporter='torchscript'"
        )


def cpu_threads() -> int:
    """Physical cores this process may run on: ONNX Runtime's intra-op threads.

    A second thread per core shares the core's vector units and slows the matrix products down.
    ``$SCIEMBED_ONNX_THREADS`` overrides.
    """
    if os.environ.get("SCIEMBED_ONNX_THREADS"):
        value = os.environ["SCIEMBED_ONNX_THREADS"]
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"$SCIEMBED_ONNX_THREADS must be a positive whole number of threads, got {value!r}")
        return int(value)
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    cores: set[tuple[str, str]] = set()
    try:
        for block in Path("/proc/cpuinfo").read_text().split("\n\n"):
            fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
            fields = {key.strip(): value.strip() for key, value in fields.items()}
            if "processor" in fields and int(fields["processor"]) in allowed:
                cores.add((fields.get("physical id", "0"), fields.get("core id", fields["processor"])))
    except OSError:
        pass
    return max(1, len(cores) or len(allowed))


#: The CPU features that decide which float32 and int8 kernels ONNX Runtime runs.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")


def cpu_flags() -> dict[str, bool]:
    """Which of :data:`CPU_FLAGS` the CPU has (all false where ``/proc/cpuinfo`` cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    present = set(line.split(":", 1)[-1].split())
    return {flag: flag in present for flag in CPU_FLAGS}


def cpu_has_vnni() -> bool:
    """Whether the CPU has 8-bit dot-product instructions (AVX-512 VNNI, AVX-VNNI or AMX). Without them
    int8 matrix products on x86 can saturate, and the quantiser uses 7-bit weights (``reduce_range``)."""
    flags = cpu_flags()
    return flags["avx512_vnni"] or flags["avx_vnni"] or flags["amx_int8"]


def session_options(threads: int | None = None) -> Any:
    """ONNX Runtime's session options for the backend's sessions.

    Args:
        threads: intra-op threads (default: :func:`cpu_threads`).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or cpu_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle threads sleep rather than spin, so that they leave shared cores to the threads with work.
    options.add_session_config_entry(ALLOW_SPINNING, "0")
    return options


class Parallelism(StrChoice):
    """How a session spreads one batch over its threads."""

    #: ONNX Runtime's intra-op threads share each operator.
    OPERATORS = "operators"
    #: The batch is cut into parts of at most :data:`PART_ROWS` rows, each run whole on one thread.
    BATCH = "batch"


class OnnxSession:
    """An exported encoder on ONNX Runtime: batch inputs (tensors or arrays) to float32 vectors.

    Args:
        path: the ONNX file.
        threads: threads (default: :func:`cpu_threads`).
        parallelism: how a batch is spread over the threads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        threads: int | None = None,
        parallelism: Parallelism = Parallelism.OPERATORS,
    ):
        require_onnx()
        import onnxruntime as ort

        self.path = Path(path)
        self.threads = threads or cpu_threads()
        self.parallelism = parallelism
        split = parallelism is Parallelism.BATCH and self.threads > 1
        # ONNX Runtime runs one session from several threads at once: the parts share one copy of the weights.
        options = session_options(1 if split else self.threads)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [node.name for node in self.session.get_inputs()]
        self._pool = ThreadPoolExecutor(self.threads) if split else None
        self.part_rows = PART_ROWS

    def __call__(self, features: Mapping[str, Any]) -> np.ndarray:
        feed = {name: _as_numpy(features[name]) for name in self.input_names}
        rows = len(next(iter(feed.values())))
        if self._pool is None or rows < 2:
            return _run(self.session, feed)
        return np.concatenate(
            list(self._pool.map(partial(_run, self.session), batch_parts(feed, self.threads, self.part_rows)))
        )

    def settings(self) -> dict[str, Any]:
        """The session settings, as benchmarks record them."""
        return {
            "parallelism": self.parallelism.value,
            "threads": self.threads,
            "intra_op_threads": self.session.get_session_options().intra_op_num_threads,
            "allow_spinning": self.session.get_session_options().get_session_config_entry(ALLOW_SPINNING),
        }


def _run(session: Any, feed: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.asarray(session.run(None, dict(feed))[0], dtype=np.float32)


def batch_parts(
    feed: Mapping[str, np.ndarray], threads: int, part_rows: int = PART_ROWS
) -> list[dict[str, np.ndarray]]:
    """A batch cut into consecutive parts, each trimmed to its own longest text.

    Args:
        feed: the batch's model inputs, rows first.
        threads: the threads that run the parts (at least one part each).
        part_rows: the most rows of one part.
    """
    rows = len(next(iter(feed.values())))
    return [_trimmed({name: value[part] for name, value in feed.items()}) for part in _parts(rows, threads, part_rows)]


def _parts(rows: int, threads: int, part_rows: int) -> list[slice]:
    """Consecutive row ranges of a batch, at least one per thread, none empty.

    Args:
        rows: the batch's rows.
        threads: the threads that run the parts.
        part_rows: the most rows of one part.
    """
    count = min(rows, max(threads, -(-rows // part_rows)))
    bounds = np.linspace(0, rows, count + 1).round().astype(int)
    return [slice(start, end) for start, end in zip(bounds[:-1], bounds[1:])]


def _trimmed(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``feed`` without the trailing token columns that its ``attention_mask`` masks in every row.

    The part then is the batch its texts make on their own. Left padding keeps every column.
    """
    mask = feed.get("attention_mask")
    if mask is None or mask.ndim != 2:
        return feed
    used = np.flatnonzero(mask.any(axis=0))
    width = int(used[-1]) + 1 if used.size else mask.shape[1]
    if width == mask.shape[1]:
        return feed
    return {
        name: value[:, :width] if value.ndim == 2 and value.shape[1] == mask.shape[1] else value
        for name, value in feed.items()
    }


#: A session of an engine: batch inputs to float32 vectors.
Session = Callable[[Mapping[str, Any]], np.ndarray]


class CachedEngine(ABC):
    """What the ONNX and OpenVINO engines share: a quantization, a cache, sessions.

    One session per format.

    Args:
        quantization: one of the engine's :attr:`quantizations`.
        cache_dir: where models are kept (default: the engine's folder in :func:`sciembed.io.default_cache_dir`).
        threads: inference threads (default: the physical cores, or ``$SCIEMBED_ONNX_THREADS``).
        gated: refuse an int8 model its gate has not passed (``False`` only for the gate itself).
    """

    #: The quantizations the engine runs.
    quantizations: ClassVar[tuple[str, ...]]
    #: The engine's folder in the sciembed cache.
    cache_name: ClassVar[str]

    def __init__(
        self,
        quantization: WeightQuantization | str = WeightQuantization.FP32,
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        gated: bool = True,
    ):
        self.require()
        if quantization not in self.quantizations:
            raise ValueError(f"quantization must be one of {self.quantizations}, got {quantization!r}")
        self.quantization = WeightQuantization(quantization)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir() / self.cache_name
        self.threads = threads
        self.gated = gated
        self._sessions: dict[str, Session] = {}

    @staticmethod
    @abstractmethod
    def require() -> None:
        """Refuse to go on without the engine's extra, naming how to install it."""

    @abstractmethod
    def open(self, encoder: PaperEncoder) -> Session:
        """A new session embedding as ``encoder`` does, its model made or read from the cache."""

    def session(self, encoder: PaperEncoder) -> Session:
        """The session embedding as ``encoder`` does (its format and domain), made on first use."""
        key = json.dumps([encoder.forward_options, encoder.facets], sort_keys=True)
        if key not in self._sessions:
            self._sessions[key] = self.open(encoder)
        return self._sessions[key]


#: The export file of each ONNX quantization.
ONNX_FILES = {WeightQuantization.FP32: FP32_FILE, WeightQuantization.INT8: INT8_FILE}


class OnnxBackend(CachedEngine):
    """The exports and sessions of one :class:`~sciembed.encode.PaperEncoder` and its format copies.

    One session per format, made (or read from the cache) on first use.
    """

    quantizations = QUANTIZATIONS
    cache_name = "onnx"
    require = staticmethod(require_onnx)

    def open(self, encoder: PaperEncoder) -> OnnxSession:
        folder = export_folder(encoder, self.cache_dir)
        if self.quantization == WeightQuantization.INT8 and self.gated:
            refuse_ungated(read_gate(folder), f"int8 for {encoder.name_or_path}")
        # int8 quantises each batch's activations with one scale, so its batches stay whole.
        fp32 = self.quantization == WeightQuantization.FP32
        parallelism = Parallelism.BATCH if fp32 else Parallelism.OPERATORS
        return OnnxSession(folder / ONNX_FILES[self.quantization], threads=self.threads, parallelism=parallelism)


def export_folder(encoder: PaperEncoder, cache_dir: str | os.PathLike[str]) -> Path:
    """The cache folder of ``encoder``'s export, exported and checked if it is not there yet.

    It holds ``model.onnx`` and ``export.json``, and appears whole or not at all.

    Args:
        encoder: the encoder, in the format to export.
        cache_dir: the ONNX folder of the cache.
    """

    def build(staging: Path) -> None:
        report = export_encoder(encoder, staging / FP32_FILE)
        (staging / EXPORT_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    return cached_folder(Path(cache_dir) / encoder.model_fingerprint()[:32], (EXPORT_FILE, FP32_FILE), build)


def cached_folder(folder: Path, files: Sequence[str], build: Callable[[Path], None]) -> Path:
    """``folder`` of the cache, built beside it by ``build`` unless it holds ``files``.

    The folder appears whole or not at all. When another process finishes the same folder first, its copy is kept.

    Args:
        folder: the cache folder.
        files: the files a finished folder holds. The first of them is written last.
        build: writes the folder's files into the staging folder it is given.
    """
    if all((folder / name).is_file() for name in files):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.{uuid.uuid4().hex[:8]}.partial"  # mkdir, not mkdtemp: the umask's modes
    staging.mkdir()
    try:
        build(staging)
        if (folder / files[0]).is_file():  # another process finished the same folder meanwhile
            shutil.rmtree(staging)
        else:
            replace_folder(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def refuse_ungated(verdict: Mapping[str, Any] | None, what: str) -> None:
    """Refuse a quantized model whose quality gate has not run or did not pass.

    Args:
        verdict: the gate's verdict read from the cache (``None``: never checked).
        what: the model as messages name it (``"int8 for NAME"``).
    """
    if verdict is not None and verdict.get("passed"):
        return
    reason = "it has not been checked" if verdict is None else f"it failed its quality gate ({verdict.get('reason')})"
    raise ValueError(
        f"{what} is refused: {reason}. Check it first against fp32 on held-out citations: "
        "sciembed.evaluation.int8_gate.check_int8(encoder, check_set), or --int8-check-set PATH on the command line"
    )


def export_encoder(
    encoder: PaperEncoder,
    path: str | os.PathLike[str],
    *,
    optimize: bool = True,
    exporter: Exporter | str = Exporter.TORCHSCRIPT,
) -> dict[str, Any]:
    """Export ``encoder``'s :meth:`~sciembed.encode.PaperEncoder.forward` to ``path``, checked against PyTorch.

    The graph is of the encoder's current format. ONNX Runtime's transformer optimizer fuses it where that keeps
    the vectors.

    Args:
        encoder: a float32 encoder on CPU, in the format to export.
        path: the ONNX file written.
        optimize: fuse the graph with ONNX Runtime's transformer optimizer.
        exporter: ``torchscript`` (the default) or ``dynamo`` (``torch.export``, needs ``onnxscript``).

    Returns what was done: the graph kind (``fused`` or ``plain``), the inputs, the largest difference to
    PyTorch on the check texts, the versions.

    Raises:
        OnnxExportError: the export fails or its vectors differ from PyTorch's by more than
            :data:`EXPORT_TOLERANCE`.
    """
    require_onnx()
    import onnxruntime
    import torch

    exporter = parse_choice(Exporter, exporter, "exporter")
    if exporter is Exporter.DYNAMO:
        require_onnxscript()
    path = Path(path)
    name = f"{type(encoder.transformer).__name__} ({encoder.name_or_path})"
    if encoder.device.type != "cpu":
        raise OnnxExportError(f"{name}: the ONNX backend runs on CPU; load the encoder with device='cpu'")
    plain = path.with_name(path.stem + ".plain.onnx")
    # no_grad, not inference_mode: the tracer may not take inference tensors when it runs outside that mode.
    with torch.no_grad():
        traced = encoder.features(_TRACE_TEXTS)
        check = encoder.features(_CHECK_TEXTS)
        expected = encoder.forward(check).float().numpy()
    check_finite(
        expected,
        lambda rows: [f"check text #{i}" for i in rows],
        f"model {encoder.name_or_path}",
        "nothing was exported; the model computes NaN or infinity in PyTorch (damaged weights, a training run that "
        "diverged)",
    )
    names = [key for key, value in traced.items() if isinstance(value, torch.Tensor)]
    constants = {key: value for key, value in traced.items() if not isinstance(value, torch.Tensor)}
    try:
        with _eager_attention(encoder.transformer):
            _trace(
                lambda tensors: encoder.forward({**constants, **tensors}),
                encoder.model,
                traced,
                names,
                plain,
                "embedding",
                exporter,
            )
    except Exception as error:  # the exporter's errors have many types; each is this model's reason
        cause = error
        while cause.__cause__ is not None:  # torch.export wraps the reason in a step-by-step guide
            cause = cause.__cause__
        reason = (str(cause).strip().splitlines() or [""])[0]
        dynamo = exporter is Exporter.DYNAMO
        raise OnnxExportError(
            f"{name} does not export to ONNX{' with the dynamo exporter' if dynamo else ''}: "
            f"{type(cause).__name__}: {reason}" + ("; export it with exporter='torchscript'" if dynamo else "")
        ) from error
    plain_error = _difference(plain, check, expected)
    if not plain_error <= EXPORT_TOLERANCE:
        raise OnnxExportError(
            f"{name}: the ONNX export's vectors differ from PyTorch's by {plain_error:.2e} "
            f"(> {EXPORT_TOLERANCE:g}); it cannot run on ONNX Runtime"
        )
    kind, error, fused = "plain", plain_error, {}
    if optimize:
        fused_error, operators = _fuse(plain, path, encoder.transformer.config, check, expected)
        if fused_error is not None and fused_error <= EXPORT_TOLERANCE:
            kind, error, fused = "fused", fused_error, operators
            plain.unlink()
        else:
            logger.warning(
                "%s: the fused ONNX graph %s; using the plain export",
                name,
                "could not be built" if fused_error is None else f"differs from PyTorch by {fused_error:.2e}",
            )
    if plain.exists():  # the fused graph was not kept
        plain.replace(path)
    logger.info("%s exported to ONNX (%s graph, max abs difference to PyTorch %.2e)", name, kind, error)
    return {
        "graph": kind,
        "fused_operators": fused,
        "exporter": exporter,
        "inputs": names,
        "max_abs_difference_to_pytorch": error,
        "tolerance": EXPORT_TOLERANCE,
        "forward_options": encoder.forward_options,
        "opset": DYNAMO_OPSET if exporter is Exporter.DYNAMO else OPSET,
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "machine": platform.machine(),
    }


def export_transformer(folder: str | os.PathLike[str], path: str | os.PathLike[str]) -> dict[str, Any]:
    """Export a plain transformer as sentence-transformers' ONNX backend reads it.

    Export the plain transformer saved in ``folder`` as sentence-transformers' ONNX backend (optimum) reads it: inputs
    ``input_ids``, ``attention_mask`` (and ``token_type_ids``), output ``last_hidden_state``, to which
    sentence-transformers applies the folder's own pooling and normalisation. Checked against PyTorch.

    Raises:
        OnnxExportError: a sciembed family (its embedding is not a pooling of token states: use
            ``backend="onnx"`` of sciembed), or vectors off by more than :data:`EXPORT_TOLERANCE`.
    """
    require_onnx()
    import torch
    from transformers import AutoModel, AutoTokenizer

    from .families import family_of, register_families

    register_families()
    model = AutoModel.from_pretrained(folder).eval()
    if family_of(model) is not None:
        raise OnnxExportError(
            f"{folder}: a {family_of(model)} model embeds with its own forward, which sentence-transformers' ONNX "
            "backend (token states, then its Pooling) does not run; embed it with sciembed's backend='onnx'"
        )
    tokenizer = AutoTokenizer.from_pretrained(folder)
    limit = min(tokenizer.model_max_length, model.config.max_position_embeddings, 512)

    def features(texts: list[str]) -> dict[str, Any]:
        return dict(tokenizer(texts, padding=True, truncation=True, max_length=limit, return_tensors="pt"))

    traced, check = features(_TRACE_TEXTS), features(_CHECK_TEXTS)
    names = list(traced)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _trace(lambda tensors: model(**tensors).last_hidden_state, model, traced, names, path, "last_hidden_state")
    except Exception as error:  # the exporter's errors have many types; each is this model's reason
        raise OnnxExportError(
            f"{folder}: {type(model).__name__} does not export to ONNX: {type(error).__name__}: {error}"
        ) from error
    with torch.inference_mode():
        expected = model(**check).last_hidden_state.numpy()
    error = _difference(path, check, expected)
    if not error <= EXPORT_TOLERANCE:
        path.unlink()
        raise OnnxExportError(
            f"{folder}: the ONNX export's token states differ from PyTorch's by {error:.2e} (> {EXPORT_TOLERANCE:g})"
        )
    return {"inputs": names, "output": "last_hidden_state", "max_abs_difference_to_pytorch": error}


def quantize(folder: str | os.PathLike[str]) -> Path:
    """Write ``model_int8.onnx`` beside the fp32 export in ``folder``: ONNX Runtime's dynamic quantisation.

    Weights are int8 (7-bit on CPUs without VNNI), and activations are quantised per batch.

    Args:
        folder: the export folder.
    """
    require_onnx()
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = Path(folder)
    target = folder / INT8_FILE
    staging = folder / f".{INT8_FILE}.partial"
    # The fused operators (Attention, SkipLayerNormalization) are outside ONNX's shape inference: their
    # outputs are float32, which the quantiser must be told.
    quantize_dynamic(
        folder / FP32_FILE,
        staging,
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=not cpu_has_vnni(),
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )
    os.replace(staging, target)
    return target


def read_gate(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The int8 quality verdict stored in an export ``folder`` (``None`` before any check)."""
    path = Path(folder) / GATE_FILE
    if not path.is_file() or not (Path(folder) / INT8_FILE).is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _trace(
    forward: Any,
    module: Any,
    traced: Mapping[str, Any],
    names: list[str],
    path: Path,
    output: str,
    exporter: Exporter = Exporter.TORCHSCRIPT,
) -> None:
    """Export ``forward`` with free batch and sequence axes.

    Export ``forward`` (a function of the tensors ``names`` of ``traced``, ``module`` holds its weights) with every
    input's batch and sequence axes, and the output's leading ones, left free.

    Args:
        forward: the function exported.
        module: the module holding ``forward``'s weights.
        traced: example inputs.
        names: the tensor inputs of ``traced``, in order.
        path: the ONNX file written.
        output: the output's name.
        exporter: ``torchscript`` (the tracer) or ``dynamo`` (``torch.export``, through onnxscript).
    """
    import warnings

    import torch

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = module  # registered, so that its weights become the graph's initialisers

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return forward(dict(zip(names, tensors)))

    example = tuple(traced[key] for key in names)
    if exporter is Exporter.DYNAMO:
        batch, sequence = torch.export.Dim.DYNAMIC, torch.export.Dim.DYNAMIC
        shapes = tuple({0: batch, 1: sequence} if traced[key].dim() == 2 else {0: batch} for key in names)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.export's notes on every guard; the export is checked instead
            program = torch.onnx.export(
                Forward().eval(),
                example,
                input_names=names,
                dynamic_shapes=(shapes,),
                opset_version=DYNAMO_OPSET,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        _name_output(program.model.graph, output)
        program.save(str(path), external_data=False)
        return
    axes = {key: ({0: "batch", 1: "sequence"} if traced[key].dim() == 2 else {0: "batch"}) for key in names}
    output_axes = {0: "batch", 1: "sequence"} if output == "last_hidden_state" else {0: "batch"}
    with warnings.catch_warnings():
        # The tracer warns of every Python value it records; the export is checked on other shapes instead.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(
            Forward().eval(),
            example,
            str(path),
            input_names=names,
            output_names=[output],
            dynamic_axes={**axes, output: output_axes},
            opset_version=OPSET,
            dynamo=False,
        )


def _name_output(graph: Any, output: str) -> None:
    """Name the only output of an ``onnx_ir`` ``graph`` ``output``.

    An inner value that has that name is renamed. The dynamo exporter names values after their operators, so an
    ``embedding`` lookup is ``embedding``.
    """
    result = graph.outputs[0]
    for node in graph:
        for value in node.outputs:
            if value.name == output and value is not result:
                value.name = f"{output}_inner"
    result.name = output


def _fuse(
    plain: Path, path: Path, config: Any, check: Mapping[str, Any], expected: np.ndarray
) -> tuple[float | None, dict[str, int]]:
    """Fuse ``plain`` into ``path`` and check the fused graph.

    Fuse ``plain`` into ``path``: the fused graph's largest difference to ``expected`` on the inputs ``check``
    (``None``: the optimizer could not fuse it) and the count of each fused operator in it.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    heads, hidden = getattr(config, "num_attention_heads", 0), getattr(config, "hidden_size", 0)
    try:
        optimized = optimize_model(str(plain), model_type="bert", num_heads=heads, hidden_size=hidden)
        optimized.save_model_to_file(str(path))
        operators = {name: int(count) for name, count in optimized.get_fused_operator_statistics().items() if count}
    except Exception as error:  # an architecture the optimizer does not know
        logger.info("onnxruntime's optimizer did not fuse %s: %s", plain, error)
        return None, {}
    return _difference(path, check, expected), operators


@contextlib.contextmanager
def _eager_attention(model: Any) -> Iterator[None]:
    """Run ``model``'s attention as explicit products and softmax while it is exported.

    The model's own attention is restored after. ONNX Runtime's optimizer fuses that pattern into its Attention
    operator, and not a traced SDPA call.
    """
    own = getattr(model.config, "_attn_implementation", None)
    if own in (None, "eager") or not hasattr(model, "set_attn_implementation"):
        yield
        return
    try:
        model.set_attn_implementation("eager")
    except (ValueError, ImportError) as error:  # a model without an eager attention exports as it is
        logger.info("%s keeps %s attention in its export: %s", type(model).__name__, own, error)
        yield
        return
    try:
        yield
    finally:
        model.set_attn_implementation(own)


def _difference(path: Path, check: Mapping[str, Any], expected: np.ndarray) -> float:
    """The largest absolute difference between the export at ``path`` on the inputs ``check`` and ``expected``."""
    got = OnnxSession(path, threads=1)(check)
    return float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")


def _as_numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
