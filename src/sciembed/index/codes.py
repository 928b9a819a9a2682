"""An index's codes and how they are searched.

faiss finds candidates, then each is scored again in float64.
Candidates come from the faiss index (exact inner product, int8 scalar quantizer, Hamming distance of sign bits, or
IVF-PQ). Their vectors are then read back (the float rows of an exact index, the decoded codes of a flat int8 one,
else the int8 rescore store, dequantized by its calibrated ranges) and scored against the float query in float64,
ties by row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .settings import IndexKind

#: Candidates beyond the results that exact and int8 indexes rescore, so float32 ties do not decide the order.
RESCORE_MARGIN = 16
#: Queries rescored together, at most.
_QUERY_BLOCK = 64
#: Bytes of float64 candidate vectors rescored at a time.
_RESCORE_BYTES = 1 << 27
#: Candidate lists at least this wide are selected by counting Hamming distances rather than by a heap.
_HEAP_WIDTH = 128
#: Queries from which a flat int8 index is searched by matrix products of decoded codes rather than faiss's scan.
_BLAS_QUERIES = 20
#: The int8 codes span 256 steps, stored as -128 .. 127.
_STEPS = 255


def int8_codes(vectors: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """``vectors`` as int8 codes of the per-dimension ``ranges`` (``(2, dim)``: minima, maxima), clipped to them."""
    low, span = ranges[0], np.maximum(ranges[1] - ranges[0], np.finfo(np.float32).tiny)
    steps = np.rint((vectors - low) / span * _STEPS)
    return (np.clip(steps, 0, _STEPS) - 128).astype(np.int8)


def dequantized(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """The float64 vectors int8 ``codes`` stand for under ``ranges``."""
    low, span = ranges[0].astype(np.float64), (ranges[1] - ranges[0]).astype(np.float64)
    return low + (codes.astype(np.float64) + 128) / _STEPS * span


def clipped_share(vectors: np.ndarray, ranges: np.ndarray) -> float:
    """The share of components of ``vectors`` outside ``ranges``, which int8 codes clip."""
    if vectors.size == 0:
        return 0.0
    return float(((vectors < ranges[0]) | (vectors > ranges[1])).mean())


def top_inner_products(queries: np.ndarray, vectors: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's ``keep`` rows of ``vectors`` with the largest inner products, best first.

    Ties go by row.
    The products are numpy matrix products over blocks of rows (numpy's BLAS is tuned to the processor, faiss's
    bundled one may not be), kept in faiss's heaps.

    Args:
        queries: ``(q, dim)`` float32 vectors.
        vectors: ``(n, dim)`` float32 vectors, or rows that slicing decodes.
        keep: rows kept per query, at most ``n``.

    Returns:
        ``(scores, rows)``, ``(q, keep)`` float32 and int64.
    """
    import faiss

    heap = faiss.ResultHeap(len(queries), keep, keep_max=True)
    every = np.arange(len(queries), dtype=np.int64)
    block = max(1, _RESCORE_BYTES // (4 * max(1, len(queries))))
    for start in range(0, len(vectors), block):
        products = queries @ np.asarray(vectors[start : start + block], dtype=np.float32).T
        heap.add_result_subset(every, products, np.arange(start, start + products.shape[1], dtype=np.int64))
    heap.finalize()
    order = np.lexsort((heap.I, -heap.D), axis=1)
    scores, rows = np.take_along_axis(heap.D, order, axis=1), np.take_along_axis(heap.I, order, axis=1)
    return scores, rows


def nearest_rows(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Each query's row of ``vectors`` with the largest inner product, ties by the lower row.

    The rows :func:`top_inner_products` keeps with ``keep=1``, without its heaps.

    Args:
        queries: ``(q, dim)`` float32 vectors.
        vectors: ``(n, dim)`` float32 vectors, ``n >= 1``.
    """
    every = np.arange(len(queries))
    best = np.full(len(queries), -np.inf, dtype=np.float32)
    rows = np.zeros(len(queries), dtype=np.int64)
    block = max(1, _RESCORE_BYTES // (4 * max(1, len(queries))))
    for start in range(0, len(vectors), block):
        products = queries @ np.asarray(vectors[start : start + block], dtype=np.float32).T
        top = products.argmax(axis=1)
        better = products[every, top] > best
        best[better] = products[every[better], top[better]]
        rows[better] = top[better] + start
    return rows


def sign_bits(vectors: np.ndarray, mean: np.ndarray | None) -> np.ndarray:
    """Packed sign bits of ``vectors`` (less ``mean`` when given), for a faiss binary index."""
    centred = vectors - mean if mean is not None else vectors
    return np.packbits(centred > 0, axis=1)


@dataclass
class IndexCodes:
    """The searchable parts of an index.

    Attributes:
        kind: ``exact``, ``int8``, ``binary`` or ``pq``.
        index: the faiss index (an ``IndexBinary`` for ``binary``).
        store: the int8 rescore store ``(n, dim)`` (``binary``, ``pq`` and IVF ``int8``), memory-mapped when read.
        ranges: the calibrated ``(2, dim)`` ranges of the int8 codes.
        mean: the collection mean the binary codes are centred on.
        ivf: whether the index is an inverted file (searched with ``nprobe``).
    """

    kind: IndexKind
    index: object
    store: np.ndarray | None = None
    ranges: np.ndarray | None = None
    mean: np.ndarray | None = None
    ivf: bool = False

    def __post_init__(self) -> None:
        self.kind = IndexKind(self.kind)

    @property
    def papers(self) -> int:
        """The papers the codes hold."""
        return self.index.ntotal

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The float64 vectors the index holds for ``rows`` (each a valid row)."""
        if self.store is not None:
            return dequantized(np.asarray(self.store[rows]), self.ranges)
        return self.index.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64)).astype(np.float64)

    def search(
        self,
        queries: np.ndarray,
        top_k: int,
        exclude: np.ndarray,
        *,
        multiplier: int = 1,
        nprobe: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``top_k`` rows nearest each unit query, and their float64 scores.

        Rows are best first, ties by row.

        Args:
            queries: ``(q, dim)`` unit float32 vectors.
            top_k: results per query.
            exclude: per query, a row left out of its results (its own paper), or -1.
            multiplier: candidates per result rescored (``binary``, ``pq``).
            nprobe: IVF cells probed.

        Returns:
            ``(rows, scores)``, ``(q, top_k)``. A row of -1 (score ``-inf``) where fewer candidates were found.
        """
        _, labels = self.candidates(queries, self.width(top_k, multiplier), nprobe)
        return self.rescored(queries, labels, top_k, exclude)

    def width(self, top_k: int, multiplier: int = 1) -> int:
        """The candidates per query :meth:`search` rescores for ``top_k`` results at ``multiplier``."""
        depth = top_k + 1
        width = depth * multiplier if self.kind.multiplied else depth + RESCORE_MARGIN
        return int(min(width, self.papers))

    def rescored(
        self, queries: np.ndarray, labels: np.ndarray, top_k: int, exclude: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``top_k`` of each query's candidate ``labels`` by float64 score, best first.

        A label of -1 is no candidate. Ties go by row.

        Args:
            queries: ``(q, dim)`` unit float32 vectors.
            labels: ``(q, width)`` candidate rows from :meth:`candidates`.
            top_k: results per query.
            exclude: per query, a row left out of its results (its own paper), or -1.
        """
        labels = np.where(labels == exclude[:, None], -1, labels)
        if labels.shape[1] < top_k:  # fewer papers than results asked for
            labels = np.pad(labels, ((0, 0), (0, top_k - labels.shape[1])), constant_values=-1)
        rows = np.empty((len(queries), top_k), dtype=np.int64)
        scores = np.empty((len(queries), top_k))
        step = max(1, min(_QUERY_BLOCK, _RESCORE_BYTES // (8 * labels.shape[1] * queries.shape[1] + 1)))
        for start in range(0, len(queries), step):
            block = slice(start, start + step)
            rows[block], scores[block] = self._rescored(queries[block], labels[block], top_k)
        return rows, scores

    def _rescored(self, queries: np.ndarray, labels: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``top_k`` of each query's candidate ``labels`` (-1: none) by float64 score, ties by row."""
        labels = self._shortlist(queries, labels, top_k + RESCORE_MARGIN)
        valid = labels >= 0
        values = np.full(labels.shape, -np.inf)
        vectors = self.vectors(labels[valid])
        values[valid] = np.einsum(
            "ij,ij->i", vectors, np.repeat(queries.astype(np.float64), valid.sum(axis=1), axis=0)
        )
        keys = np.where(valid, labels, np.iinfo(np.int64).max)
        order = np.lexsort((keys, -values), axis=1)[:, :top_k]
        rows = np.take_along_axis(labels, order, axis=1)
        scores = np.take_along_axis(values, order, axis=1)
        rows[~np.isfinite(scores)] = -1
        return rows, scores

    def _shortlist(self, queries: np.ndarray, labels: np.ndarray, keep: int) -> np.ndarray:
        """The ``keep`` best of each query's candidates by a float32 score of the int8 store.

        All are kept when there are fewer.
        A dequantized vector's score is ``query . low + (query * step) . (code + 128)``: the first term and the 128
        are the same for every candidate, so the codes are ranked by ``(query * step) . code`` alone, without building
        their float64 vectors. Only the shortlist is scored again in float64.
        """
        if self.store is None or labels.shape[1] <= keep:
            return labels
        step = (self.ranges[1] - self.ranges[0]).astype(np.float64) / _STEPS
        shortlist = np.full((len(labels), keep), -1, dtype=np.int64)
        for row, (query, candidates) in enumerate(zip(queries.astype(np.float64), labels, strict=True)):
            candidates = candidates[candidates >= 0]
            if len(candidates) > keep:
                codes = np.asarray(self.store[np.sort(candidates)], dtype=np.float32)
                approximate = codes @ (query * step).astype(np.float32)
                candidates = np.sort(candidates)[np.argpartition(-approximate, keep - 1)[:keep]]
            shortlist[row, : len(candidates)] = candidates
        return shortlist

    def candidates(self, queries: np.ndarray, width: int, nprobe: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Each query's ``width`` nearest rows by the faiss index, and their faiss distances.

        Args:
            queries: ``(q, dim)`` unit float32 vectors.
            width: candidates per query.
            nprobe: IVF cells probed.
        """
        import faiss

        if self.kind == IndexKind.BINARY:
            # faiss's counting selection finds the same rows as its heap, and faster for wide candidate lists.
            self.index.use_heap = width < _HEAP_WIDTH
            return self.index.search(sign_bits(queries, self.mean), width)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self.kind == IndexKind.INT8 and not self.ivf and len(queries) >= _BLAS_QUERIES:
            return self._decoded_candidates(queries, width)
        params = faiss.SearchParametersIVF(nprobe=nprobe) if self.ivf and nprobe else None
        return self.index.search(queries, width, params=params)

    def _decoded_candidates(self, queries: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Each query's ``width`` best rows of a flat int8 index.

        Rows are ranked by inner products with the index's decoded codes.
        faiss's scalar-quantizer scan has no matrix-product path, so a batch of queries is scored by matrix products
        with blocks of decoded codes. The scores are those of the scan up to float32 rounding.
        """
        return top_inner_products(queries, _Decoded(self.index), width)


@dataclass
class _Decoded:
    """The vectors of a faiss index's codes, decoded when a block of rows is sliced.

    Attributes:
        index: a faiss index that reconstructs its rows.
    """

    index: object

    def __len__(self) -> int:
        return self.index.ntotal

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, _ = rows.indices(len(self))
        return self.index.reconstruct_n(start, max(0, stop - start))
