"""Vectors to neighbours: unit rows, nearest rows by cosine, and faiss rank search.

Vectors to neighbours: rows scaled to unit length, each row's nearest other rows by cosine, and the faiss rank search
(exact or IVF) that SciNCL's sampler (:mod:`.scincl`) cuts its rank ranges from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..choices import StrChoice

# Ranks per kNN search block (queries x depth): 8M int64 labels and float32 distances, about 100 MB.
BLOCK_ENTRIES = 8_000_000
#: Default IVF probes: enough cells to hold, on average, this many times the deepest rank searched, so that
#: most of a query's true neighbourhood down to that rank lies in the probed cells.
IVF_SCAN_FACTOR = 4


def unit_rows(matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to unit length (into ``out`` if given, which may be ``matrix``). A zero row stays zero
    (scikit-learn's ``normalize``, BEIR divides by a tiny epsilon the same way): it has no direction."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, np.maximum(norms, np.finfo(matrix.dtype).tiny), out=out)


def nearest_neighbours(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine similarities of each row's ``k`` nearest other rows, most similar first.

    They are computed ``block`` rows at a time, so memory stays at ``block x len(vectors)``.
    """
    k = min(k, len(vectors) - 1)
    unit = unit_rows(np.asarray(vectors, dtype=np.float32))
    indices = np.empty((len(vectors), k), dtype=np.int64)
    scores = np.empty((len(vectors), k), dtype=np.float32)
    for start in range(0, len(vectors), block):
        similarity = unit[start : start + block] @ unit.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, rows + start] = -np.inf
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(similarity, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        indices[start : start + block] = np.take_along_axis(top, order, axis=1)
        scores[start : start + block] = np.take_along_axis(top_scores, order, axis=1)
    return indices, scores


# ---------------------------------------------------------------------- rank search (SciNCL's kNN ranges)
#
# The search yields ``(rows, ranked)`` per block of queries: ``rows`` the block's positions in the query
# array, ``ranked(lo, hi)`` a ``(len(rows), hi - lo)`` array of the candidates (positions into the candidate
# array) at ranks ``lo .. hi - 1`` of each query, sorted by position, so that a draw from the range does
# not depend on how the index ordered it.

Ranked = Callable[[int, int], np.ndarray]
SearchBlocks = Iterator[tuple[slice, Ranked]]

#: Ranks on either side of each range boundary whose order is re-checked in float64 (faiss ranks in float32).
RESCORE_MARGIN = 16


class KnnMetric(StrChoice):
    """The distance a kNN search ranks by."""

    EUCLIDEAN = "euclidean"
    COSINE = "cosine"
    DOT = "dot"


@dataclass(frozen=True)
class IVFSettings:
    """An inverted-file index (faiss ``IndexIVFFlat``): ``cells`` k-means cells, ``nprobe`` probed per query."""

    cells: int
    nprobe: int
    seed: int


def faiss_rank_search(
    matrix: np.ndarray,
    query: np.ndarray,
    candidates: np.ndarray,
    metric: str,
    cuts: Sequence[int],
    rows: int,
    ivf: IVFSettings | None = None,
) -> SearchBlocks:
    """kNN ranks of every query among the candidates, with faiss.

    The query itself is left out. Queries are searched ``rows`` at a time.

    ``ivf=None`` is exact search (``IndexFlat``). Otherwise an ``IndexIVFFlat`` trained on the candidates
    with ``ivf``'s seed, whose ranks count only the candidates of the probed cells. faiss scores in float32.
    The ranks within :data:`RESCORE_MARGIN` of each of ``cuts`` (the range boundaries the caller slices
    at) are then re-ordered by float64 distances computed pair by pair, so that exact search cuts where
    a float64 ranking does (the test oracle's) and a query's result does not depend on its block mates.
    Memory: the float32 candidate vectors once, plus ``rows x (max(cuts) + margin)`` ranks per block.
    """
    import faiss  # imported here: only SciNCL's sampler needs it

    vectors = np.ascontiguousarray(matrix[candidates], dtype=np.float32)
    dim = vectors.shape[1]
    faiss_metric = faiss.METRIC_L2 if metric == KnnMetric.EUCLIDEAN else faiss.METRIC_INNER_PRODUCT
    if ivf is None:
        index = faiss.IndexFlat(dim, faiss_metric)
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlat(dim, faiss_metric), dim, ivf.cells, faiss_metric)
        index.cp.seed = ivf.seed
        index.train(vectors)
        index.nprobe = ivf.nprobe
    index.add(vectors)
    del vectors

    position_of = np.full(len(matrix), -1, dtype=np.int64)
    position_of[candidates] = np.arange(len(candidates))
    depth = min(max(cuts) + RESCORE_MARGIN, len(candidates) - 1)
    windows = _windows(cuts, depth)
    for start in range(0, len(query), rows):
        block = query[start : start + rows]
        own = position_of[block]
        labels = _search(index, ivf, np.ascontiguousarray(matrix[block], dtype=np.float32), depth + 1)
        mine = labels == own[:, None]
        mine[~mine.any(axis=1), -1] = (
            True  # the query missing from its own list (a tie at distance 0): drop the deepest
        )
        labels = labels[~mine].reshape(len(block), depth)
        for lo, hi in windows:
            labels[:, lo:hi] = _rescored(matrix, block, candidates, labels[:, lo:hi], metric)
        yield slice(start, start + len(block)), lambda lo, hi, labels=labels: np.sort(labels[:, lo:hi], axis=1)


def _search(index, ivf: IVFSettings | None, vectors: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest candidates of each row. With IVF, rows whose probed cells held fewer than ``k``
    are searched again with twice the probes until they are full."""
    import faiss

    _, labels = index.search(vectors, k)
    nprobe = ivf.nprobe if ivf is not None else 0
    short = np.nonzero((labels < 0).any(axis=1))[0]
    while len(short):
        nprobe = min(2 * nprobe, ivf.cells)
        _, labels[short] = index.search(vectors[short], k, params=faiss.SearchParametersIVF(nprobe=nprobe))
        short = short[(labels[short] < 0).any(axis=1)]
        if len(short) and nprobe == ivf.cells:
            raise ValueError(f"{len(short)} queries have fewer than {k - 1} other candidates in the whole index")
    return labels


def _windows(cuts: Sequence[int], depth: int) -> list[tuple[int, int]]:
    """The rank intervals re-ordered in float64: ``RESCORE_MARGIN`` ranks either side of each cut, merged."""
    windows: list[tuple[int, int]] = []
    for cut in sorted(set(cuts)):
        lo, hi = max(0, cut - RESCORE_MARGIN), min(depth, cut + RESCORE_MARGIN)
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(hi, windows[-1][1]))
        elif lo < hi:
            windows.append((lo, hi))
    return windows


def _rescored(
    matrix: np.ndarray, block: np.ndarray, candidates: np.ndarray, labels: np.ndarray, metric: str
) -> np.ndarray:
    """``labels`` (candidate positions, one row per query) re-ordered by float64 distance, ties by position."""
    queries = matrix[block].astype(np.float64)[:, None, :]
    others = matrix[candidates[labels]].astype(np.float64)
    if metric == KnnMetric.EUCLIDEAN:
        difference = others - queries
        distance = np.einsum("qkd,qkd->qk", difference, difference)
    else:
        distance = -np.einsum("qkd,qkd->qk", others, np.broadcast_to(queries, others.shape))
    return np.take_along_axis(labels, np.lexsort((labels, distance), axis=1), axis=1)


# ---------------------------------------------------------------------- top-k neighbours by cosine (faiss)


def faiss_neighbours(
    vectors: np.ndarray,
    k: int,
    *,
    queries: np.ndarray | Sequence[int] | None = None,
    ivf: IVFSettings | None = None,
    rows: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest other rows of each query row by cosine similarity, most similar first.

    They are searched with faiss.

    The rows are scaled to unit length and put in an inner-product index: exact (``IndexFlatIP``) by default,
    or an ``IndexIVFFlat`` with ``ivf``'s cells, probes and seed for large collections. faiss ranks in
    float32. The ``k + RESCORE_MARGIN`` best of each query are then scored again in float64 and ordered by
    that score, ties by position, so the neighbours and scores are those of a float64 brute-force search
    (exact index) and a query's list does not depend on the other queries of its block. The query itself is
    never its own neighbour (a row with the same vector is).

    Args:
        vectors: ``(n, d)`` float array, one row per paper.
        k: neighbours per query (at most ``n - 1``).
        queries: positions of the query rows in ``vectors`` (default: every row).
        ivf: an inverted-file index instead of exact search.
        rows: queries searched per block (memory: ``rows x (k + margin)`` candidates of dimension ``d`` in float64).

    Returns:
        ``(indices, scores)``: ``(len(queries), k)`` positions into ``vectors`` and their cosine similarities
        (float64).

    Raises:
        ValueError: fewer than two rows, ``k < 1``, or a query position outside ``vectors``.
    """
    import faiss  # imported here: only neighbour search and SciNCL's sampler need it

    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or len(matrix) < 2:
        raise ValueError(f"need at least two vectors to find neighbours, got an array of shape {matrix.shape}")
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    n, dim = matrix.shape
    k = min(k, n - 1)
    query = np.arange(n) if queries is None else np.asarray(queries, dtype=np.int64).reshape(-1)
    if len(query) and (query.min() < 0 or query.max() >= n):
        raise ValueError(f"query positions must lie in [0, {n}), got {query.min()} .. {query.max()}")
    unit = unit_rows(matrix.astype(np.float32))
    if ivf is None:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, ivf.cells, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = ivf.seed
        index.train(unit)
        index.nprobe = ivf.nprobe
    index.add(unit)

    depth = min(k + RESCORE_MARGIN, n - 1)
    indices = np.empty((len(query), k), dtype=np.int64)
    scores = np.empty((len(query), k), dtype=np.float64)
    for start in range(0, len(query), rows):
        block = query[start : start + rows]
        labels = _search(index, ivf, unit[block], depth + 1)
        mine = labels == block[:, None]
        mine[~mine.any(axis=1), -1] = (
            True  # the query missing from its own list (ties with copies of it): drop the deepest
        )
        labels = labels[~mine].reshape(len(block), depth)
        others = matrix[labels].astype(np.float64)
        others /= np.maximum(np.linalg.norm(others, axis=2, keepdims=True), np.finfo(np.float64).tiny)
        exact = np.einsum("qkd,qd->qk", others, unit_rows(matrix[block].astype(np.float64)))
        order = np.lexsort((labels, -exact), axis=1)[:, :k]
        indices[start : start + len(block)] = np.take_along_axis(labels, order, axis=1)
        scores[start : start + len(block)] = np.take_along_axis(exact, order, axis=1)
    return indices, scores
