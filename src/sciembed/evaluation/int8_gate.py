"""The quality gate of int8 and bf16 models: each must rank papers as fp32 does.

A lower-precision model is used only once it has passed.

:func:`check_int8` quantises an encoder's ONNX export (:func:`sciembed.onnx_backend.quantize`) or OpenVINO model
(:func:`sciembed.openvino_backend.quantize`), embeds the papers of a held-out citation task (SciDocs' cite
protocol on a CACM or SciDocs folder) with fp32 and with int8, scores both, and writes the verdict next to the
model. OpenVINO's bf16 runs the fp32 model, so the gate only scores it. OpenVINO's int8 is calibrated on papers
the gate does not score: a seeded draw of the check set's papers, left out of the task it scores, or papers the
caller gives, less any the check set holds.
``PaperEncoder(..., backend="onnx" or "openvino", quantization="int8")`` reads that verdict and refuses int8
unless it passed: the cite MAP of int8 is at most ``tolerance`` (0.5 MAP
points) below fp32's. The smallest cosine between a paper's int8 and fp32 vectors is reported with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import openvino_backend
from ..backends import ENGINES, Backend
from ..encode import PaperEncoder
from ..io import atomic_path
from ..logs import progress_enabled
from ..onnx_backend import GATE_FILE, INT8_FILE, export_folder, quantize
from ..quantization import WeightQuantization
from .loaders import load_tasks
from .tasks import ProximityTask

logger = logging.getLogger(__name__)

#: Benchmarks whose folders hold a cite task the gate can score.
GATE_BENCHMARKS = ("cacm", "scidocs")
#: The largest cite MAP drop (in MAP points, 0-100) that int8 may show against fp32.
MAP_TOLERANCE = 0.5


@dataclass(frozen=True)
class Int8Verdict:
    """What the gate measured, and whether int8 passed.

    It holds the cite MAP of fp32 and int8 on the check set, their difference, and the smallest cosine between a
    paper's two vectors. ``papers`` and ``papers_digest`` describe the records scored. ``calibration_papers`` and
    ``calibration_digest`` describe those int8 was calibrated on (none for int8 kinds without calibration). The two
    sets share no text. ``inference_precision`` is the arithmetic of OpenVINO's float operations (``f32`` or
    ``bf16``), which a verdict holds for."""

    passed: bool
    fp32_map: float
    int8_map: float
    map_drop: float
    tolerance: float
    min_cosine: float
    mean_cosine: float
    papers: int
    queries: int
    skipped_records: int
    benchmark: str
    check_set: str
    reason: str
    backend: str
    quantization: str
    calibration_papers: int
    papers_digest: str = ""
    calibration_digest: str = ""
    calibration_source: str = ""
    inference_precision: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_int8(
    encoder: PaperEncoder,
    check_set: str | os.PathLike[str],
    *,
    benchmark: str = "cacm",
    tolerance: float = MAP_TOLERANCE,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    calibration: Sequence[str] | None = None,
    seed: int = 0,
) -> Int8Verdict:
    """Pass or fail ``encoder``'s int8 or bf16 model on a cite task.

    The model is the encoder's ONNX or OpenVINO one, and the cite task that of ``check_set``.

    Args:
        encoder: an encoder with ``backend="onnx"`` or ``"openvino"``. The gate is for its model, format and
            quantization (``int8`` when the encoder is fp32).
        check_set: a folder with a cite task held out from the model's training (``benchmark`` says its kind).
        benchmark: ``cacm`` (a SMART collection folder: ``cacm.all``) or ``scidocs``.
        tolerance: the largest cite MAP drop allowed, in MAP points.
        batch_size: as for :meth:`~sciembed.encode.PaperEncoder.encode`.
        show_progress_bar: show progress while embedding (``None``: when the ``sciembed`` logger shows INFO).
        calibration: OpenVINO ``int8`` only: paper texts to calibrate on (the collection to embed). Texts the check
            set also holds are left out. ``None``: a seeded draw of the check set's papers, which the gate then
            leaves out of the task it scores.
        seed: the seed of that draw.

    Returns:
        The verdict, also written to ``int8_gate.json`` beside the export (which is what lets int8 load).
    """
    backend = Backend(encoder.backend)
    if backend not in ENGINES:
        raise ValueError(
            "the int8 gate checks an ONNX export or OpenVINO model: load the encoder with backend='onnx' or "
            "backend='openvino'"
        )
    if benchmark not in GATE_BENCHMARKS:
        raise ValueError(
            f"the int8 gate scores a cite task: benchmark must be one of {GATE_BENCHMARKS}, got {benchmark!r}"
        )
    # A record the reader cannot use is skipped and counted (CACM's collection has one broken record).
    suite = load_tasks(benchmark, check_set, tasks=["cite"], skip_invalid=True)
    if not suite.tasks:
        raise ValueError(f"{check_set}: no cite task found for the int8 gate ({benchmark} folder expected)")
    task = suite.tasks[0]
    kind = WeightQuantization(encoder.quantization)
    kind = WeightQuantization.INT8 if kind is WeightQuantization.FP32 else kind
    fp32 = encoder.with_quantization(WeightQuantization.FP32)
    int8 = encoder.with_quantization(kind, gated=False)
    calibrated = backend is Backend.OPENVINO and kind is WeightQuantization.INT8
    calibration_texts: list[str] = []
    source = ""
    if calibrated and calibration is not None:
        held = set(fp32.texts({**task.documents, **task.queries}.values(), task.fields))
        calibration_texts = [text for text in calibration if text not in held]
        if not calibration_texts:
            raise ValueError(
                f"every one of the {len(calibration)} calibration papers is also in the check set {check_set}; "
                "give papers the gate does not score, or none (a seeded part of the check set calibrates)"
            )
        source = f"given ({len(calibration) - len(calibration_texts)} also in the check set left out)"
    elif calibrated:
        task, calibration_texts = split_calibration(task, fp32, openvino_backend.CALIBRATION_SIZE, seed)
        source = f"check set, seeded draw (seed {seed}), left out of the scored task"
    records = {**task.documents, **task.queries}
    ids = list(records)
    texts = fp32.texts(records.values(), task.fields)
    calibration_digest = ""
    if backend is Backend.ONNX:
        folder = export_folder(fp32, fp32.engine_cache / ENGINES[fp32.backend].cache_name)
        quantize(folder)
        gate = folder / GATE_FILE
    else:
        folder = openvino_backend.model_folder(fp32, fp32.engine_cache / ENGINES[fp32.backend].cache_name)
        if kind in openvino_backend.QUANTIZED_MODELS:  # bf16 runs the fp32 model: nothing to make
            model = openvino_backend.quantize(
                folder,
                kind,
                fp32,
                calibration_texts,
                subset_size=max(1, len(calibration_texts)),
                show_progress_bar=progress_enabled(show_progress_bar),
            )
            calibration_digest = json.loads(model.with_suffix(".json").read_text(encoding="utf-8")).get(
                "calibration_digest", ""
            )
        gate = folder / openvino_backend.gate_file(kind)
    scores, vectors = {}, {}
    for label, chosen in (("fp32", fp32), ("int8", int8)):
        matrix = chosen.encode(
            texts,
            batch_size=batch_size,
            show_progress_bar=progress_enabled(show_progress_bar),
            progress_desc=f"Gate ({label})",
        )
        by_id = dict(zip(ids, matrix))
        documents = {i: by_id[i] for i in task.documents}
        queries = {i: by_id[i] for i in task.queries}
        scores[label] = task.evaluate(documents, queries, n_jobs=1).metrics["map"]
        vectors[label] = matrix
    cosines = _row_cosines(vectors["fp32"], vectors["int8"])
    drop = scores["fp32"] - scores["int8"]
    passed = drop <= tolerance
    verdict = Int8Verdict(
        passed=passed,
        fp32_map=round(scores["fp32"], 4),
        int8_map=round(scores["int8"], 4),
        map_drop=round(drop, 4),
        tolerance=tolerance,
        min_cosine=float(cosines.min()),
        mean_cosine=float(cosines.mean()),
        papers=len(ids),
        queries=len(task.qrels),
        skipped_records=len(suite.skipped),
        benchmark=benchmark,
        check_set=str(check_set),
        reason=f"cite MAP {scores['int8']:.2f} against fp32's {scores['fp32']:.2f}: "
        f"{'within' if passed else 'more than'} {tolerance} points",
        backend=encoder.backend,
        quantization=kind,
        calibration_papers=len(calibration_texts),
        papers_digest=_digest(texts),
        calibration_digest=calibration_digest,
        calibration_source=source,
        inference_precision=openvino_backend.inference_precision(kind) if backend is Backend.OPENVINO else "",
    )
    with atomic_path(gate) as temporary:
        temporary.write_text(json.dumps(verdict.as_dict(), indent=2) + "\n", encoding="utf-8")
    logger.info(
        "%s gate for %s (%s): %s; min cosine to fp32 %.6f",
        kind,
        encoder.name_or_path,
        folder / (INT8_FILE if backend is Backend.ONNX else openvino_backend.model_file(kind)),
        verdict.reason,
        verdict.min_cosine,
    )
    return verdict


def split_calibration(
    task: ProximityTask, encoder: PaperEncoder, size: int, seed: int = 0
) -> tuple[ProximityTask, list[str]]:
    """Draw calibration papers from ``task``'s documents and return the task without them.

    Args:
        task: the cite task of the check set.
        encoder: the encoder whose texts (fields joined as it joins them) are compared.
        size: the most papers drawn. At most a quarter of the task's documents.
        seed: the seed of the draw.

    Returns:
        The task without any record whose text is a calibration text (nor judgements of one, nor queries left
        without a candidate), and the calibration texts.

    Raises:
        ValueError: the task has nothing left to score.
    """
    ids = list(task.documents)
    texts = dict(zip(ids, encoder.texts(task.documents.values(), task.fields)))
    count = max(1, min(size, len(ids) // 4))
    chosen: list[str] = []
    for i in np.random.default_rng(seed).permutation(len(ids)):  # distinct texts: a collection repeats some
        if len(chosen) == count:
            break
        if texts[ids[i]] not in chosen:
            chosen.append(texts[ids[i]])
    taken = set(chosen)
    left = {key for key, text in texts.items() if text in taken}
    qrels = {
        query: {paper: grade for paper, grade in judged.items() if paper not in left}
        for query, judged in task.qrels.items()
        if query not in left
    }
    queries = {key: value for key, value in task.queries.items() if key not in left}
    if task.queries:
        query_texts = dict(zip(queries, encoder.texts(queries.values(), task.fields)))
        queries = {key: value for key, value in queries.items() if query_texts[key] not in taken}
    scored = dataclasses.replace(
        task,
        documents={key: value for key, value in task.documents.items() if key not in left},
        queries=queries,
        qrels={query: judged for query, judged in qrels.items() if judged},
    )
    if scored.lacking() is not None:
        raise ValueError(
            f"the int8 gate's check set is too small to hold out {len(chosen)} calibration papers: "
            f"{scored.lacking()}; give a larger check set"
        )
    return scored, chosen


def _digest(texts: Sequence[str]) -> str:
    """A digest of ``texts`` in order (what a verdict names its paper sets by)."""
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
