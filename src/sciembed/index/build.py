"""Building an index folder from an embedding output, block by block, and writing it atomically.

One pass reads the ids (refusing an id given twice) and a seeded sample of the vectors. The ranges, the mean and
the faiss quantizers are trained on the sample. A second pass adds the codes, fills the int8 rescore store and
finds the exact neighbours of held-out papers, on which the probes and the rescore multiplier are tuned.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..io import NpyRowWriter, ReleasedRows, refuse_replacing, replace_folder
from ..quantization import calibration_ranges
from .blocks import EmbeddingSource, open_embeddings
from .codes import IndexCodes, int8_codes, nearest_rows, sign_bits
from .ids import IdTableWriter
from .manifest import Manifest
from .model import ModelStamp, read_sidecar, stamp_of
from .settings import (
    IndexKind,
    IndexSettings,
    choose_kind,
    default_memory,
    default_nlist,
    default_pq_m,
    uses_ivf,
)
from .tuning import ExactTruth, Tuned, tune

if TYPE_CHECKING:
    from ..encode import Encoder

logger = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
STORE_FILE = "store.npy"
RANGES_FILE = "ranges.npy"
MEAN_FILE = "mean.npy"
REPORT_FILE = "report.json"
#: Training points faiss asks for per centroid.
_POINTS_PER_CENTROID = 39
#: k-means steps of the IVF centroids (faiss's default for an IVF quantizer).
_KMEANS_STEPS = 10


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """faiss on one thread inside the block, so k-means gives the same centroids each run."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def build_index(
    embeddings: str | os.PathLike[str],
    output: str | os.PathLike[str],
    settings: IndexSettings,
    *,
    model: str | Encoder | None = None,
    overwrite: bool = False,
    trained_like: str | os.PathLike[str] | None = None,
    rows: tuple[int, int] | None = None,
) -> Path:
    """Build the index of ``embeddings`` into the folder ``output``.

    The folder appears whole or not at all.

    Args:
        embeddings: a ``sciembed embed`` output (``.npy`` + ids, ``.jsonl``, ``.parquet`` or a folder of parts).
        output: the index folder.
        settings: kind, memory budget, target recall, seed and sizes.
        model: the model that embedded them, when the output carries no stamp (``<output>.meta.json``): a name
            (stated), or an encoder (fingerprinted). Checked against the stamp when there is one.
        overwrite: replace an index already at ``output``.
        trained_like: an index folder whose kind, ranges, mean and quantizers are reused instead of trained (shards
            and parts of one collection then share their codes).

    Raises:
        FileExistsError: ``output`` exists and ``overwrite`` is false (before any work).
        ValueError: bad vectors or ids (named), another model than the stamp's, or no kind fits the memory budget.
    """
    started = time.perf_counter()
    output = refuse_replacing(output, overwrite=overwrite)
    source = open_embeddings(embeddings, rows=rows)
    stamp = _model_stamp(source, model)
    if stamp is not None and stamp.dim not in (None, source.dim):
        raise ValueError(
            f"{source.path}: vectors of size {source.dim}, but {stamp.name} embeds in {stamp.dim} dimensions; give "
            "the model that embedded them (--model)"
        )
    memory = settings.memory or default_memory()
    if trained_like is not None:
        like = Manifest.read(trained_like)
        if like.dim != source.dim:
            raise ValueError(
                f"{source.path}: vectors of size {source.dim}, the index {trained_like} (--trained-like) holds size "
                f"{like.dim}: the parts of one index hold vectors of one model; give a part built from these vectors"
            )
        kind = like.kind
    elif settings.kind is not None:
        kind = settings.kind
    else:
        kind, pq_m = choose_kind(source.count, source.dim, memory, settings.pq_m)
        settings = dataclasses.replace(settings, pq_m=pq_m or settings.pq_m)
    if trained_like is None:
        _check_sizes(kind, source, settings)
    logger.info("building a %s index of %d vectors of size %d from %s", kind, source.count, source.dim, source.path)
    rng = np.random.default_rng(settings.seed)
    sample_rows = np.sort(rng.choice(source.count, min(settings.sample_size, source.count), replace=False))
    query_rows = np.sort(rng.choice(source.count, min(settings.tuning_queries, source.count), replace=False))
    if kind == IndexKind.EXACT:
        query_rows = query_rows[:0]  # exact by construction: nothing to tune or measure
    staging = staging_folder(output)
    try:
        sample, queries = _first_pass(source, staging, sample_rows, query_rows)
        if trained_like is None:
            codes, factory, nlist = _trained(kind, source, sample, settings)
        else:
            codes, factory, nlist = trained_codes(trained_like, source.dim)
        truth = ExactTruth(queries, query_rows)
        _second_pass(source, codes, truth, staging)
        trained = time.perf_counter()
        tuned = Tuned(1, None, 1.0)  # exact by construction
        if kind != IndexKind.EXACT:
            tuned = tune(codes, truth, settings.target_recall, nlist, confidence=settings.confidence)
        manifest = Manifest(
            kind=kind,
            factory=factory,
            dim=source.dim,
            papers=source.count,
            seed=settings.seed,
            target_recall=settings.target_recall,
            centred=codes.mean is not None,
            multiplier=tuned.multiplier,
            nprobe=tuned.nprobe,
            recall=tuned.recall,
            recall_lower_bound=tuned.lower_bound,
            confidence=settings.confidence,
            tuning_queries=tuned.queries,
            tuned_papers=source.count,
            model=stamp.to_dict() if stamp is not None else None,
            **versions(),
        )
        write_codes(staging, codes)
        _write_report(staging, manifest, trained - started, time.perf_counter() - trained)
        manifest.write(staging)
        replace_folder(staging, output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logger.info(
        "wrote %s: recall@10 %.3f on %d held-out papers, lower bound %.3f",
        output,
        tuned.recall,
        tuned.queries,
        tuned.lower_bound,
    )
    return output


def _check_sizes(kind: IndexKind, source: EmbeddingSource, settings: IndexSettings) -> None:
    """Refuse IVF cells or PQ sub-quantizers that these vectors cannot have, before any work. Warn of unused ones."""
    ivf = uses_ivf(kind, source.count)
    if settings.nlist is not None:
        most = max(1, min(settings.sample_size, source.count) // _POINTS_PER_CENTROID)
        if not ivf:
            logger.warning(
                "--nlist (nlist=) is unused: a %s index of %d papers is not an inverted file", kind, source.count
            )
        elif settings.nlist > most:
            raise ValueError(
                f"--nlist {settings.nlist} (nlist=) needs {_POINTS_PER_CENTROID} training vectors per cell, and "
                f"{source.path} gives a sample of {min(settings.sample_size, source.count)}: give --nlist {most} or "
                "fewer, or leave it out"
            )
    if kind != IndexKind.PQ:
        if settings.pq_m is not None and settings.kind is not None:
            logger.warning("--pq-m (pq_m=) is unused: a %s index has no product quantizer", kind)
        return
    m = settings.pq_m or default_pq_m(source.dim)
    if source.dim % m:
        raise ValueError(
            f"--pq-m {m} (pq_m=) must divide the dimension {source.dim} of {source.path}: give one of "
            f"{', '.join(str(d) for d in range(1, source.dim + 1) if source.dim % d == 0)}"
        )


def staging_folder(output: Path) -> Path:
    """A new folder beside ``output`` for its next version, with a new folder's permissions."""
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=output.parent, prefix=f".{output.name}.building."))
    mask = os.umask(0)
    os.umask(mask)
    staging.chmod(0o777 & ~mask)
    return staging


def versions() -> dict[str, str]:
    """The faiss and sciembed versions, for a manifest."""
    from importlib.metadata import version

    import faiss

    return {"faiss_version": faiss.__version__, "sciembed_version": version("sciembed")}


def _model_stamp(source: EmbeddingSource, model: str | Encoder | None) -> ModelStamp | None:
    stamp = read_sidecar(source.path)
    if model is None:
        if stamp is None:
            logger.warning(
                "%s carries no model stamp: the index takes vectors and ids as queries, not text; pass --model NAME "
                "(model=) to state the model that embedded it",
                source.path,
            )
        return stamp
    given = ModelStamp(name=str(model)) if isinstance(model, (str, os.PathLike)) else stamp_of(model)
    if stamp is None:
        return given
    differs = stamp.matches(given) is False if given.probe is not None else given.name != stamp.name
    if differs:
        raise ValueError(
            f"{source.path} was embedded with {stamp.name} (revision {stamp.revision}), not {given.name}: leave "
            "--model out, or embed the papers again with the model you mean"
        )
    return stamp


def _first_pass(
    source: EmbeddingSource, staging: Path, sample_rows: np.ndarray, query_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Write the id table block by block and gather the sample and the held-out queries.

    Repeated ids are refused.
    """
    table = IdTableWriter(staging, source.count)
    sample = np.empty((len(sample_rows), source.dim), dtype=np.float32)
    queries = np.empty((len(query_rows), source.dim), dtype=np.float32)
    start = 0
    for ids, vectors in source.blocks():
        stop = start + len(ids)
        table.append(ids)
        for wanted, out in ((sample_rows, sample), (query_rows, queries)):
            lo, hi = np.searchsorted(wanted, [start, stop])
            out[lo:hi] = vectors[wanted[lo:hi] - start]
        start = stop
    table.finish(str(source.path))
    return sample, queries


def _trained(
    kind: IndexKind, source: EmbeddingSource, sample: np.ndarray, settings: IndexSettings
) -> tuple[IndexCodes, str, int | None]:
    """The empty, trained codes of ``kind``, their faiss factory string and IVF cells."""
    import faiss

    dim, ivf = source.dim, uses_ivf(kind, source.count)
    nlist = None
    if ivf:
        nlist = min(settings.nlist or default_nlist(source.count), max(1, len(sample) // _POINTS_PER_CENTROID))
    ranges = calibration_ranges(sample) if len(sample) > 1 else np.vstack([sample[0], sample[0]])
    if kind == IndexKind.EXACT:
        return IndexCodes(kind, faiss.IndexFlatIP(dim)), "Flat", None
    if kind == IndexKind.BINARY:
        mean = sample.mean(axis=0).astype(np.float32) if settings.centre else None
        index = faiss.IndexBinaryFlat(8 * ((dim + 7) // 8))
        return IndexCodes(kind, index, ranges=ranges, mean=mean), "BFlat", None
    if kind == IndexKind.INT8:
        factory = f"IVF{nlist},SQ8" if ivf else "SQ8"
    else:
        m = settings.pq_m or default_pq_m(dim)
        bits = int(min(8, max(1, np.log2(max(2, len(sample) // (4 * _POINTS_PER_CENTROID))))))
        factory = f"IVF{nlist},PQ{m}x{bits}"
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    if ivf:
        inverted = faiss.extract_index_ivf(index)
        inverted.quantizer.add(_centroids(sample, nlist, settings.seed))  # faiss then trains only the codes
        if kind == IndexKind.PQ:
            pq_index = faiss.downcast_index(index)
            pq_index.pq.cp.seed = settings.seed
            pq_index.do_polysemous_training = False  # Hamming filtering is not used; it costs a long training
    with single_thread():
        if ivf:
            _train_ivf_codes(index, sample)
        else:
            index.train(sample)
    if kind == IndexKind.INT8 and not ivf:
        trained = faiss.vector_to_array(index.sq.trained).reshape(2, dim)
        ranges = np.vstack([trained[0], trained[0] + trained[1]])
    return IndexCodes(kind, index, ranges=ranges, ivf=ivf), factory, nlist


def _train_ivf_codes(index: object, sample: np.ndarray) -> None:
    """Train the codes of the IVF ``index``, whose cells hold their centroids, as ``index.train`` would.

    The sample is assigned to the cells by :func:`nearest_rows` (numpy's matrix products) rather than by faiss's
    quantizer. An encoder that faiss trains on a subsample is trained by faiss.

    Args:
        index: an IVF index whose quantizer holds the centroids.
        sample: ``(n, dim)`` unit float32 training vectors.
    """
    import faiss

    inverted = faiss.extract_index_ivf(index)
    most = inverted.train_encoder_num_vectors()
    if 0 < most < len(sample):
        index.train(sample)
        return
    train = np.ascontiguousarray(sample, dtype=np.float32)
    cells = np.ascontiguousarray(nearest_rows(train, inverted.quantizer.reconstruct_n(0, inverted.nlist)))
    if inverted.by_residual:
        train = np.ascontiguousarray(train - inverted.quantizer.reconstruct_n(0, inverted.nlist)[cells])
    inverted.train_encoder(len(train), faiss.swig_ptr(train), faiss.swig_ptr(cells))
    inverted.is_trained = True
    index.is_trained = True


def _centroids(sample: np.ndarray, cells: int, seed: int) -> np.ndarray:
    """Unit k-means centroids of ``sample`` under inner product, for the IVF cells.

    Each step assigns the sample with :func:`nearest_rows` (numpy's matrix products) and sums each cell's rows with
    a sparse matrix product. A cell left empty takes a seeded sample row.

    Args:
        sample: ``(n, dim)`` unit float32 training vectors, ``n >= cells``.
        cells: centroids.
        seed: seeds the initial centroids and the rows given to empty cells.
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    centroids = sample[np.sort(rng.choice(len(sample), cells, replace=False))]
    every, ones = np.arange(len(sample)), np.ones(len(sample), dtype=np.float32)
    for _ in range(_KMEANS_STEPS):
        nearest = nearest_rows(sample, centroids)
        members = sp.csr_matrix((ones, (nearest, every)), shape=(cells, len(sample)))
        sums = np.asarray(members @ sample, dtype=np.float32)
        empty = np.bincount(nearest, minlength=cells) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = sums / np.maximum(norms, np.finfo(np.float32).tiny)
    return centroids


def trained_codes(folder: str | os.PathLike[str], dim: int) -> tuple[IndexCodes, str, int | None]:
    """The trained, empty codes of the index in ``folder``, its factory string and IVF cells.

    Args:
        folder: an index folder.
        dim: the dimension of the vectors to add, which must be the index's.
    """
    import faiss

    manifest = Manifest.read(folder)
    if manifest.dim != dim:
        raise ValueError(f"{folder} indexes vectors of size {manifest.dim}, these have size {dim}")
    folder = Path(folder)
    binary = manifest.kind == IndexKind.BINARY
    index = (faiss.read_index_binary if binary else faiss.read_index)(str(folder / INDEX_FILE))
    index.reset()
    ivf = manifest.ivf
    nlist = faiss.extract_index_ivf(index).nlist if ivf else None

    def optional(name: str) -> np.ndarray | None:
        return np.load(folder / name) if (folder / name).is_file() else None

    codes = IndexCodes(manifest.kind, index, ranges=optional(RANGES_FILE), mean=optional(MEAN_FILE), ivf=ivf)
    return codes, manifest.factory, nlist


def _second_pass(source: EmbeddingSource, codes: IndexCodes, truth: ExactTruth, staging: Path) -> None:
    """Add every block's codes (and int8 store rows), and find the held-out queries' exact neighbours.

    The store is written block by block, then mapped for tuning with its pages released as they are read.
    """
    store = NpyRowWriter(staging / STORE_FILE, np.int8, (source.count, source.dim)) if needs_store(codes) else None
    start = 0
    with store or contextlib.nullcontext():
        for _, vectors in source.blocks():
            add_codes(codes, vectors, store)
            truth.update(vectors, start)
            start += len(vectors)
    if store is not None:
        codes.store = ReleasedRows(np.load(store.path, mmap_mode="r"))


def needs_store(codes: IndexCodes) -> bool:
    """Whether ``codes`` rescore from an int8 store (binary, pq, IVF int8)."""
    return codes.kind.multiplied or codes.ivf


def add_codes(codes: IndexCodes, vectors: np.ndarray, store: NpyRowWriter | None = None) -> None:
    """Append the unit ``vectors`` to the faiss index, and their int8 codes to any ``store``.

    Args:
        codes: the index being built.
        vectors: ``(n, dim)`` unit float32 vectors.
        store: the int8 rescore store being written.
    """
    if codes.kind == IndexKind.BINARY:
        codes.index.add(sign_bits(vectors, codes.mean))
    elif codes.ivf:
        _add_assigned(codes.index, np.ascontiguousarray(vectors, dtype=np.float32))
    else:
        codes.index.add(vectors)
    if store is not None:
        store.write(int8_codes(vectors, codes.ranges))


def _add_assigned(index: object, vectors: np.ndarray) -> None:
    """Add ``vectors`` to the IVF ``index``, each to its nearest cell.

    A vector's cell is the one whose centroid has its largest inner product. The cells are found by
    :func:`nearest_rows` (numpy's matrix products), ties by the lower cell.
    """
    import faiss
    from faiss.contrib.ivf_tools import add_preassigned

    inverted = faiss.extract_index_ivf(index)
    centroids = inverted.quantizer.reconstruct_n(0, inverted.nlist)
    add_preassigned(inverted, vectors, nearest_rows(vectors, centroids))


def link_files(folder: Path, staging: Path, skip: set[str]) -> None:
    """Hard-link the files of ``folder`` but ``skip`` into ``staging`` (copied where links are not possible)."""
    for path in folder.iterdir():
        if path.is_file() and path.name not in skip and not path.name.startswith("."):
            try:
                os.link(path, staging / path.name)
            except OSError:
                shutil.copy2(path, staging / path.name)


def check_added_model(source: EmbeddingSource, stamp: ModelStamp | None, folder: Path) -> None:
    """Refuse vectors to add whose stamp names another model than the index's ``stamp``.

    Args:
        source: the vectors to add.
        stamp: the index's model, if known.
        folder: the index folder, for the error.
    """
    added = read_sidecar(source.path)
    if stamp is None or added is None:
        if stamp is not None:
            logger.warning(
                "%s carries no model stamp: its vectors are taken to come from %s, the model of %s",
                source.path,
                stamp.name,
                folder,
            )
        return
    fingerprinted = stamp.probe is not None and added.probe is not None
    if not stamp.matches(added) if fingerprinted else added.name != stamp.name:
        raise ValueError(
            f"{source.path} was embedded with {added.name} (revision {added.revision}), {folder} with {stamp.name} "
            f"(revision {stamp.revision}): vectors of two models do not compare; embed the new papers with "
            f"{stamp.name}"
        )


def write_index_file(folder: Path, codes: IndexCodes) -> None:
    """Write the faiss index of ``codes`` into ``folder``."""
    import faiss

    if codes.kind == IndexKind.BINARY:
        faiss.write_index_binary(codes.index, str(folder / INDEX_FILE))
    else:
        faiss.write_index(codes.index, str(folder / INDEX_FILE))


def write_codes(folder: Path, codes: IndexCodes) -> None:
    """Write the faiss index, the ranges and the mean of ``codes`` into ``folder``.

    The store is written apart.
    """
    write_index_file(folder, codes)
    if codes.ranges is not None:
        np.save(folder / RANGES_FILE, codes.ranges.astype(np.float32))
    if codes.mean is not None:
        np.save(folder / MEAN_FILE, codes.mean)


def _write_report(folder: Path, manifest: Manifest, build_seconds: float, tune_seconds: float) -> None:
    """Write the measured report of a build into ``folder``.

    It holds recall and its lower bound, bytes per paper in RAM and on disk, and timings.
    """
    report = {
        "kind": manifest.kind,
        "papers": manifest.papers,
        "recall_at_10": manifest.recall,
        "recall_at_10_lower_bound": manifest.recall_lower_bound,
        "confidence": manifest.confidence,
        "tuning_queries": manifest.tuning_queries,
        "recall_bounded": manifest.recall_bounded,
        "multiplier": manifest.multiplier,
        "nprobe": manifest.nprobe,
        "ram_bytes_per_paper": manifest.bytes_per_paper()[0],
        "disk_bytes_per_paper": manifest.bytes_per_paper()[1],
        "build_seconds": round(build_seconds, 3),
        "tune_seconds": round(tune_seconds, 3),
    }
    (folder / REPORT_FILE).write_text(json.dumps(report, indent=2), encoding="utf-8")
