"""Vectors to neighbours: rows scaled to unit length, each row's nearest other rows by cosine, and the
blocked exact and IVF rank searches that SciNCL's sampler (:mod:`.scincl`) cuts its rank ranges from."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator

import numpy as np

logger = logging.getLogger(__name__)

# Distance-matrix entries per kNN block (float64): 8M entries = 64 MB plus the argpartition indices.
BLOCK_ENTRIES = 8_000_000
#: Default IVF scan depth as a multiple of the hard-negative range end: each query scans at least this many
#: times 4,000 candidates, so that most of its true 4,000-neighbourhood lies in the scanned cells.
IVF_SCAN_FACTOR = 4
# k-means training points per IVF cell: FAISS warns below 39 and subsamples above 256; 64 keeps training to
# seconds at a million papers, and cell quality only affects speed, never the distances inside a cell.
_IVF_TRAIN_PER_CELL = 64
_IVF_KMEANS_EPOCHS = 20


def unit_rows(matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to unit length (into ``out`` if given, which may be ``matrix``). A zero row stays zero
    (scikit-learn's ``normalize``; BEIR divides by a tiny epsilon the same way): it has no direction."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, np.maximum(norms, np.finfo(matrix.dtype).tiny), out=out)


def nearest_neighbours(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine similarities of each row's ``k`` nearest other rows, most similar first, computed
    ``block`` rows at a time so memory stays at ``block x len(vectors)``."""
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
# Both searches yield ``(rows, ranked)`` per block of queries: ``rows`` the block's positions in the query
# array, ``ranked(lo, hi)`` a ``(len(rows), hi - lo)`` array of the candidates (positions into the candidate
# array) at ranks ``lo .. hi - 1`` of each query, in no particular order within the range; it is exact at
# the range boundaries ``kth`` the search was given (``numpy.argpartition``).

Ranked = Callable[[int, int], np.ndarray]
SearchBlocks = Iterator[tuple["slice | np.ndarray", Ranked]]


def exact_rank_search(matrix: np.ndarray, query: np.ndarray, candidates: np.ndarray, metric: str, rows: int, kth: np.ndarray) -> SearchBlocks:
    """Exact kNN: each block of ``rows`` queries against every candidate, in float64."""
    n = len(matrix)
    cand_vectors = matrix[candidates]
    cand_norms = np.einsum("ij,ij->i", cand_vectors, cand_vectors)
    position_of = np.full(n, -1, dtype=np.int64)
    position_of[candidates] = np.arange(len(candidates))
    for start in range(0, len(query), rows):
        block = query[start : start + rows]
        distance = -(matrix[block] @ cand_vectors.T)
        if metric == "euclidean":
            # ||q - c||^2 = ||q||^2 - 2 q.c + ||c||^2; the ||q||^2 term is the same for the whole row.
            distance = 2.0 * distance + cand_norms
        distance[np.arange(len(block)), position_of[block]] = np.inf  # the query is not its own neighbour
        order = np.argpartition(distance, kth, axis=1)
        yield slice(start, start + len(block)), lambda lo, hi, order=order: order[:, lo:hi]


def _scores(vectors: np.ndarray, others: np.ndarray, other_norms: np.ndarray, metric: str) -> np.ndarray:
    """Row-wise ranking scores of ``others`` for each row of ``vectors`` (smaller = nearer).

    ``||c||^2 - 2 v.c`` (squared euclidean distance less the row constant ``||v||^2``) for euclidean and
    for cosine (whose vectors are unit rows by then), ``-v.c`` for dot.
    """
    product = vectors @ others.T
    if metric == "dot":
        return np.negative(product, out=product)
    product *= -2.0
    product += other_norms
    return product


def ivf_rank_search(matrix: np.ndarray, query: np.ndarray, candidates: np.ndarray, metric: str, kth: np.ndarray, hard_end: int,
                cells: int | None, nprobe: int | None, scan: int | None, block_size: int | None, seed: int,
                report: dict[str, object]) -> SearchBlocks:
    """Approximate kNN with an inverted-file index (IVF-Flat), float32; fills ``report`` with its parameters.

    Seeded mini-batch k-means on a sample of the candidates gives the cells; every candidate joins its
    nearest centroid's cell. Each query probes its nearest cells (by the same score against the centroids)
    until at least ``nprobe`` cells and ``scan`` candidates are covered, and is ranked by exact distance
    among the candidates of those cells only (see :func:`_ivf_block`), so each query's ranking depends on
    its own probe only, not on its block mates. Queries are visited in the order of their two nearest
    cells, so that a block's queries share cells and each cell's matrix product covers many rows. Memory:
    the float32 candidate vectors twice (as given and grouped by cell), the ragged probe lists
    (queries x cells probed), and one ``block x widest scan`` buffer.
    """
    from sklearn.cluster import MiniBatchKMeans  # scikit-learn is needed only for the IVF index

    vectors = matrix[candidates].astype(np.float32)
    m = len(vectors)
    cells = min(int(cells) if cells else max(1, round(math.sqrt(m))), m)
    nprobe = min(int(nprobe) if nprobe else 1, cells)
    scan = min(int(scan) if scan else IVF_SCAN_FACTOR * hard_end, m)
    train_points = min(m, _IVF_TRAIN_PER_CELL * cells)
    sample = np.sort(np.random.default_rng(seed).choice(m, train_points, replace=False)) if train_points < m else np.arange(m)
    kmeans = MiniBatchKMeans(n_clusters=cells, batch_size=min(4096, train_points), n_init=1, max_iter=_IVF_KMEANS_EPOCHS,
                             random_state=seed, compute_labels=False)
    kmeans.fit(vectors[sample])
    centroids = kmeans.cluster_centers_.astype(np.float32)
    centroid_norms = np.einsum("ij,ij->i", centroids, centroids)

    # Cell of every candidate (nearest centroid by the search score), in blocks of bounded size.
    step = max(1, BLOCK_ENTRIES // cells)
    cell_of = np.concatenate([_scores(vectors[i : i + step], centroids, centroid_norms, metric).argmin(axis=1)
                              for i in range(0, m, step)])
    sizes = np.bincount(cell_of, minlength=cells)
    by_cell = np.argsort(cell_of, kind="stable")  # candidate positions grouped by cell (the inverted lists)
    slot_of = np.empty(m, dtype=np.int64)
    slot_of[by_cell] = np.arange(m)
    cell_vectors = vectors[by_cell]
    cell_norms = np.einsum("ij,ij->i", cell_vectors, cell_vectors)

    # Each query's probe list, ragged: the nearest cells until nprobe cells and scan candidates are covered.
    position_of = np.full(len(matrix), -1, dtype=np.int64)
    position_of[candidates] = np.arange(m)
    query_pos = position_of[query]
    nq = len(query)
    probe_count = np.empty(nq, dtype=np.int64)
    scanned = np.empty(nq, dtype=np.int64)
    probe_lists = []
    # Cells a query is expected to need, with room for smaller-than-average cells; rows short of that fall
    # back to a full sort of their centroid scores.
    want = min(cells, max(nprobe, math.ceil(2.0 * scan * cells / m)) + 8)
    for i in range(0, nq, step):
        score = _scores(vectors[query_pos[i : i + step]], centroids, centroid_norms, metric)
        if want < cells:
            top = np.argpartition(score, want - 1, axis=1)[:, :want]
            top = np.take_along_axis(top, np.argsort(np.take_along_axis(score, top, axis=1), axis=1, kind="stable"), axis=1)
        else:
            top = np.argsort(score, axis=1, kind="stable")
        covered = np.cumsum(sizes[top], axis=1)
        short = covered[:, -1] < scan
        if short.any():  # rare: the `want` nearest cells are unusually small
            top = np.argsort(score, axis=1, kind="stable") if want < cells else top
            covered = np.cumsum(sizes[top], axis=1)
        count = np.maximum(nprobe, (covered < scan).sum(axis=1) + 1)
        probe_count[i : i + step] = count
        scanned[i : i + step] = covered[np.arange(len(count)), count - 1]
        probe_lists.append(top[np.arange(top.shape[1]) < count[:, None]])  # row-major: each row's cells in turn
    probe_flat = np.concatenate(probe_lists)
    probe_start = np.concatenate([[0], np.cumsum(probe_count)])
    first = probe_flat[probe_start[:-1]]
    second = np.where(probe_count > 1, probe_flat[np.minimum(probe_start[:-1] + 1, len(probe_flat) - 1)], -1)
    visit = np.lexsort((np.arange(nq), second, first))

    report.update(cells=cells, nprobe=nprobe, scan=scan, train_points=train_points, kmeans_seed=seed,
                  kmeans_epochs=int(kmeans.n_iter_), dtype="float32",
                  cells_probed_mean=round(float(probe_count.mean()), 2), cells_probed_max=int(probe_count.max()),
                  scanned_mean=round(float(scanned.mean()), 1), scanned_min=int(scanned.min()), scanned_max=int(scanned.max()))
    logger.info("IVF index: %d cells (%d training points, %d k-means epochs); per query %.1f cells, %.0f candidates scanned on average",
                cells, train_points, kmeans.n_iter_, probe_count.mean(), scanned.mean())

    rows = block_size or max(1, BLOCK_ENTRIES // int(scanned.max()))
    cell_start = np.concatenate([[0], np.cumsum(sizes)])
    for start in range(0, nq, rows):
        rows_of = visit[start : start + rows]
        yield rows_of, _ivf_block(rows_of, query_pos, vectors, cell_vectors, cell_norms, by_cell, slot_of, cell_of, cell_start,
                                  probe_flat, probe_start, probe_count, metric, kth)


def _partition(score: np.ndarray, kth: np.ndarray) -> np.ndarray:
    """The column order of ``np.argpartition(score, kth, axis=1)`` up to the last ``kth``, in two passes.

    One pass at the deepest rank keeps the nearest ``kth[-1] + 1`` columns; a second pass places the other
    boundaries among those few. A single multi-``kth`` argpartition over the whole scan is about 1.5 times
    slower, and this selection is most of the IVF search time.
    """
    last = int(kth[-1])
    order = np.argpartition(score, last, axis=1)[:, : last + 1]
    rest = kth[:-1]
    if len(rest):
        inner = np.argpartition(np.take_along_axis(score, order[:, :last], axis=1), rest, axis=1)
        order[:, :last] = np.take_along_axis(order[:, :last], inner, axis=1)
    return order


def _ivf_block(rows_of: np.ndarray, query_pos: np.ndarray, vectors: np.ndarray, cell_vectors: np.ndarray, cell_norms: np.ndarray,
               by_cell: np.ndarray, slot_of: np.ndarray, cell_of: np.ndarray, cell_start: np.ndarray, probe_flat: np.ndarray,
               probe_start: np.ndarray, probe_count: np.ndarray, metric: str, kth: np.ndarray) -> Ranked:
    """Rank one block of queries among the candidates of their probed cells.

    Row ``r`` of a ``(rows, widest scan)`` float32 buffer holds query r's scores against its probed cells
    laid end to end (infinity as padding). The buffer is filled cell by cell: one matrix product of the
    block's queries that probe a cell against that cell's inverted list, written at each query's offset
    for the cell, so no score is computed for a cell a query does not probe.
    """
    rows = len(rows_of)
    counts = probe_count[rows_of]
    entry_row = np.repeat(np.arange(rows), counts)
    first_entry = np.cumsum(counts) - counts
    entry = np.arange(counts.sum())
    entry_cell = probe_flat[entry - np.repeat(first_entry, counts) + np.repeat(probe_start[rows_of], counts)]
    entry_size = cell_start[entry_cell + 1] - cell_start[entry_cell]
    ends = np.cumsum(entry_size)
    entry_offset = ends - entry_size - np.repeat((ends - entry_size)[first_entry], counts)  # offset within the row
    width = int((entry_offset + entry_size).max())

    block_vectors = vectors[query_pos[rows_of]]
    score = np.full((rows, width), np.inf, dtype=np.float32)
    by_entry_cell = np.argsort(entry_cell, kind="stable")
    cells_here, first = np.unique(entry_cell[by_entry_cell], return_index=True)
    bounds = np.append(first, len(by_entry_cell))
    for cell, lo, hi in zip(cells_here.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        entries = by_entry_cell[lo:hi]
        a, b = int(cell_start[cell]), int(cell_start[cell + 1])
        block_rows = entry_row[entries]
        part = _scores(block_vectors[block_rows], cell_vectors[a:b], cell_norms[a:b], metric)
        score[block_rows[:, None], entry_offset[entries][:, None] + np.arange(b - a)] = part
    # The query is not its own neighbour: its slot in its own cell, where that cell was probed.
    own = slot_of[query_pos[rows_of]]
    own_entry = np.nonzero(entry_cell == cell_of[by_cell[own[entry_row]]])[0]
    own_row = entry_row[own_entry]
    score[own_row, entry_offset[own_entry] + own[own_row] - cell_start[entry_cell[own_entry]]] = np.inf
    order = _partition(score, kth)

    # Column -> candidate: the probed cell that holds the column, then the slot inside that cell.
    padded_offset = np.full((rows, int(counts.max())), width, dtype=np.int64)
    padded_cell = np.zeros((rows, int(counts.max())), dtype=np.int64)
    column_of_entry = entry - np.repeat(first_entry, counts)
    padded_offset[entry_row, column_of_entry] = entry_offset
    padded_cell[entry_row, column_of_entry] = entry_cell

    def ranked(lo: int, hi: int) -> np.ndarray:
        column = order[:, lo:hi]
        k = (padded_offset[:, None, :] <= column[:, :, None]).sum(axis=2) - 1
        cell = np.take_along_axis(padded_cell, k, axis=1)
        # Sorted, so the draws within a rank range do not depend on where the block put the columns.
        return np.sort(by_cell[cell_start[cell] + column - np.take_along_axis(padded_offset, k, axis=1)], axis=1)

    return ranked


# ---------------------------------------------------------------------- helpers
