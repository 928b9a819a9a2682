"""Training triplets from a citation graph: the rules of SPECTER and SPECTROID, vectorised.

Every sampler takes a :class:`~sciembed.data.graph.CitationGraph`, a seed (or a ``numpy.random.Generator``)
and returns :class:`Triplets`: parallel index arrays ``(query, positive, negative)`` plus the counts of
what could not be sampled. The same graph and seed always give the same triplets, and a query's triplets
do not depend on the other queries of the run: every random number is keyed by the seed and the query
(:mod:`.keyed_random`), so queries split over processes (``rank`` / ``world_size``) give, together,
exactly the triplets of one process. (A query asked twice repeats its triplets: ask for more
``triplets_per_query`` instead.) Draws are made for all queries at once (one array of random numbers
per round), so sampling a million queries takes seconds, not the minutes of a per-query Python loop
(``benchmarks/sampling_scale.py`` measures both).

Only papers with text (``graph.has_text``) are ever emitted, as query, positive or negative. Papers
without text still carry the graph: a hard negative may be reached *through* a cited paper that has
no text.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from .graph import CitationGraph, _row_positions
from .keyed_random import SeedLike, base_seed, keyed_uniform

logger = logging.getLogger(__name__)

#: SPECTER's setting (Cohan et al. 2020, sec. 3.2): 5 triplets per query, 2 of them with a hard negative.
TRIPLETS_PER_QUERY = 5
HARD_RATIO = 0.4

# Rejection rounds before the exact (materialised) fallback takes over for the slots still empty.
_MAX_ROUNDS = 12
# Rows per sparse product in the exact fallback, to bound its memory on large graphs.
_FALLBACK_CHUNK = 20_000

# Streams of keyed random numbers: one per purpose; rejection rounds add their round number.
_POSITIVE, _HARD_PATH, _HARD_ACCEPT, _HARD_EXACT, _EASY, _EASY_EXACT = 0, 100, 200, 300, 400, 500


@dataclass(frozen=True)
class SamplingStats:
    """What a sampler did with the queries it was given.

    Attributes:
        queries: queries asked for.
        queries_without_text: queries skipped because the query paper has no text.
        queries_without_positive: queries skipped because the query cites no paper with text.
        queries_used: queries that gave at least one triplet.
        triplets: triplets emitted.
        hard_negatives: triplets whose negative is a hard (two-hop) negative.
        hard_slots_filled_easy: hard slots given an easy negative because the query has no paper with
            text two hops away (as SPECTER's release does: the easy count makes up the difference).
        slots_without_negative: slots dropped because no paper with text is left that the query does
            not cite (only on tiny graphs).
    """

    queries: int
    queries_without_text: int
    queries_without_positive: int
    queries_used: int
    triplets: int
    hard_negatives: int
    hard_slots_filled_easy: int
    slots_without_negative: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Triplets:
    """Sampled triplets as parallel arrays of paper indices into ``graph`` (row ``k`` is one triplet)."""

    graph: CitationGraph
    query: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    hard: np.ndarray
    stats: SamplingStats

    def __len__(self) -> int:
        return len(self.query)

    def ids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The triplets as paper ids: ``(query_ids, positive_ids, negative_ids)``."""
        ids = self.graph.ids
        return ids[self.query], ids[self.positive], ids[self.negative]

    def to_dataset(self):
        """A ``datasets.Dataset`` with columns ``query_id``, ``positive_id``, ``negative_id``, ``hard``."""
        import datasets

        query, positive, negative = self.ids()
        return datasets.Dataset.from_dict(
            {
                "query_id": query.tolist(),
                "positive_id": positive.tolist(),
                "negative_id": negative.tolist(),
                "hard": self.hard.tolist(),
            }
        )


def sample_specter_triplets(
    graph: CitationGraph,
    queries: Iterable[int | str] | np.ndarray | None = None,
    *,
    triplets_per_query: int = TRIPLETS_PER_QUERY,
    hard_ratio: float = HARD_RATIO,
    seed: SeedLike = 0,
    rank: int = 0,
    world_size: int = 1,
) -> Triplets:
    """SPECTER triplets (Cohan et al. 2020, sec. 3.2 "Selecting negative distractors").

    For each query paper P (with text) the sampler emits ``triplets_per_query`` triplets
    ``(P, P+, P-)``:

    - ``P+`` is a paper P cites, drawn uniformly (with replacement, once per triplet, as the
      release's ``triplet_sampling`` does) among the cited papers with text.
    - for ``ceil(hard_ratio * triplets_per_query)`` triplets (2 of 5 by default) ``P-`` is a *hard*
      negative: a paper cited by a paper P cites, but not cited by P (nor P itself), drawn uniformly
      from that set.
    - for the rest ``P-`` is an *easy* negative: a random paper with text that P does not cite.

    When P has no paper with text two hops away, its hard slots get easy negatives instead (the
    release does the same: its easy count is ``samples_per_query`` minus the hard ones found), and
    :attr:`SamplingStats.hard_slots_filled_easy` counts them. Queries without text, or citing no
    paper with text, are skipped and counted. The release excluded the query's two-hop candidates from
    its easy pool as well. Here, as in the paper's text, an easy negative is only required not to be
    cited by P, which keeps the draw a single vectorised rejection test.

    Args:
        graph: the citation graph.
        queries: query papers (indices or ids). By default every paper with text.
        triplets_per_query: triplets per query (5 in the paper).
        hard_ratio: share of hard negatives, rounded up (0.4 gives 2 of 5, the paper's setting, the
            release's ``0.3`` gives the same 2 after rounding up).
        seed: an int seed or a ``numpy.random.Generator``.
        rank, world_size: sample only every ``world_size``-th query, starting at the ``rank``-th (the
            share of one of ``world_size`` processes). The shares of all ranks together are exactly the
            triplets of ``world_size=1``.
    """
    return _sample(graph, queries, triplets_per_query, hard_ratio, seed, rank, world_size, weighted_positives=False)


def sample_spectroid_triplets(
    graph: CitationGraph,
    queries: Iterable[int | str] | np.ndarray | None = None,
    *,
    triplets_per_query: int = TRIPLETS_PER_QUERY,
    hard_ratio: float = HARD_RATIO,
    seed: SeedLike = 0,
    rank: int = 0,
    world_size: int = 1,
) -> Triplets:
    """SPECTROID triplets (Capuano et al.): SPECTER's rules, but the positive drawn by in-citations.

    The positive ``P+`` among the cited papers with text ``c_1..c_m`` of the query is drawn with
    probability ``in(c_i) / sum_j in(c_j)`` (eq. 2 of the SPECTROID report), where ``in(c)`` is c's
    in-citation count in the graph. The count is used as is, without add-one smoothing: that is what
    the authors' release does (``find_incitations`` counts the direct citations of each paper and
    ``_get_triplet_prob`` divides by their sum), and no smoothing is needed because a cited paper is
    cited at least once, by the query itself. Negatives, counts and arguments as in
    :func:`sample_specter_triplets`.
    """
    return _sample(graph, queries, triplets_per_query, hard_ratio, seed, rank, world_size, weighted_positives=True)


# ---------------------------------------------------------------------- the shared sampler


def _sample(
    graph: CitationGraph,
    queries: Iterable[int | str] | np.ndarray | None,
    k: int,
    hard_ratio: float,
    seed: SeedLike,
    rank: int,
    world_size: int,
    *,
    weighted_positives: bool,
) -> Triplets:
    if k < 1:
        raise ValueError(f"triplets_per_query must be at least 1, got {k}")
    if not 0.0 <= hard_ratio <= 1.0:
        raise ValueError(f"hard_ratio must lie in [0, 1], got {hard_ratio}")
    n_hard = min(k, math.ceil(hard_ratio * k - 1e-9))
    seed = base_seed(seed)

    asked = rank_share(_query_indices(graph, queries), rank, world_size)
    with_text = asked[graph.has_text[asked]]

    # Cited papers with text, as a filtered CSR: the positive pool of every query.
    indptr, indices = graph.out_indptr, graph.out_indices
    text_mask = graph.has_text[indices]
    kept_before = np.zeros(len(indices) + 1, dtype=np.int64)
    np.cumsum(text_mask, out=kept_before[1:])
    pool = indices[text_mask]
    pool_start = kept_before[indptr[with_text]]
    pool_size = kept_before[indptr[with_text + 1]] - pool_start
    query = with_text[pool_size > 0]
    pool_start, pool_size = pool_start[pool_size > 0], pool_size[pool_size > 0]
    nq = len(query)

    # Positives: one per triplet slot, an (nq, k) grid.
    u = keyed_uniform(seed, query[:, None], _POSITIVE, np.arange(k))
    if weighted_positives:
        cumulative = np.cumsum(graph.in_degree[pool].astype(np.int64))
        before = np.where(pool_start > 0, cumulative[np.maximum(pool_start - 1, 0)], 0)
        total = cumulative[pool_start + pool_size - 1] - before
        target = before[:, None] + np.minimum(np.floor(u * total[:, None]).astype(np.int64), total[:, None] - 1)
        chosen = np.searchsorted(cumulative, target, side="right")
    else:
        chosen = pool_start[:, None] + np.minimum((u * pool_size[:, None]).astype(np.int64), pool_size[:, None] - 1)
    positive = pool[chosen]

    negative = np.full((nq, k), -1, dtype=np.int64)
    hard = np.zeros((nq, k), dtype=bool)
    if n_hard:
        hard_rows = np.repeat(np.arange(nq), n_hard)
        found = _hard_negatives(graph, query[hard_rows], np.tile(np.arange(n_hard), nq), seed)
        negative[:, :n_hard] = found.reshape(nq, n_hard)
        hard[:, :n_hard] = found.reshape(nq, n_hard) >= 0
    hard_short = int(n_hard * nq - hard.sum())

    need = negative < 0
    rows, slots = np.nonzero(need)
    negative[need] = _easy_negatives(graph, query[rows], slots, seed)
    valid = negative >= 0

    stats = SamplingStats(
        queries=len(asked),
        queries_without_text=int(len(asked) - len(with_text)),
        queries_without_positive=int(len(with_text) - nq),
        queries_used=int(valid.any(axis=1).sum()),
        triplets=int(valid.sum()),
        hard_negatives=int(hard.sum()),
        hard_slots_filled_easy=hard_short,
        slots_without_negative=int((~valid).sum()),
    )
    name = "SPECTROID" if weighted_positives else "SPECTER"
    logger.info("%s triplets: %s", name, stats.as_dict())
    query_grid = np.broadcast_to(query[:, None], (nq, k))
    return Triplets(graph, query_grid[valid], positive[valid], negative[valid], hard[valid], stats)


def rank_share(queries: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """The queries of process ``rank`` of ``world_size``: every ``world_size``-th, starting at the ``rank``-th."""
    if isinstance(world_size, bool) or not isinstance(world_size, (int, np.integer)) or world_size < 1:
        raise ValueError(f"world_size must be a positive integer, got {world_size!r}")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < world_size:
        raise ValueError(f"rank must be an integer in [0, {world_size}), got {rank!r}")
    return queries[rank::world_size]


def _query_indices(graph: CitationGraph, queries: Iterable[int | str] | np.ndarray | None) -> np.ndarray:
    if queries is None:
        return np.nonzero(graph.has_text)[0]
    array = np.asarray(queries if isinstance(queries, np.ndarray) else list(queries))
    if array.dtype.kind in "iu":
        if len(array) and (array.min() < 0 or array.max() >= graph.num_papers):
            raise IndexError(f"query indices must lie in [0, {graph.num_papers})")
        return array.astype(np.int64)
    return np.asarray(graph.index_of(array.astype(str)), dtype=np.int64)


def _hard_negatives(graph: CitationGraph, query: np.ndarray, slot: np.ndarray, seed: int) -> np.ndarray:
    """One hard negative per entry of ``query`` (its ``slot``-th), uniform over its two-hop pool. -1 where
    the pool is empty.

    The pool of q is H(q) = {x : q -> c -> x for some c} minus q, minus the papers q cites, restricted
    to papers with text. Drawing a uniformly random path q -> c -> x (c with probability proportional
    to its out-degree, then x uniform among c's citations) reaches x with probability proportional to
    m(x), the number of q's cited papers that cite x. Accepting it with probability 1 / m(x) makes the
    accepted x uniform over the distinct papers, and rejecting the ones outside H(q) makes it uniform
    over H(q). Slots still empty after a few rounds (small or empty pools) are drawn exactly from the
    materialised pool.
    """
    indptr, indices = graph.out_indptr, graph.out_indices
    path_weight = np.cumsum(graph.out_degree[indices].astype(np.int64))
    row_start, row_end = indptr[query], indptr[query + 1]
    before = np.where(row_start > 0, path_weight[np.maximum(row_start - 1, 0)], 0)
    paths = np.where(row_end > row_start, path_weight[np.maximum(row_end - 1, 0)] - before, 0)

    result = np.full(len(query), -1, dtype=np.int64)
    pending = np.nonzero(paths > 0)[0]
    for round_ in range(_MAX_ROUNDS):
        if not len(pending):
            break
        q, s = query[pending], slot[pending]
        draw = before[pending] + np.minimum(
            (keyed_uniform(seed, q, _HARD_PATH + round_, s) * paths[pending]).astype(np.int64), paths[pending] - 1
        )
        entry = np.searchsorted(path_weight, draw, side="right")
        cited = indices[entry].astype(np.int64)
        offset = draw - (path_weight[entry] - graph.out_degree[cited])
        x = indices[indptr[cited] + offset].astype(np.int64)
        ok = (x != q) & graph.has_text[x]
        ok[ok] = ~graph.has_edge(q[ok], x[ok])
        accept = keyed_uniform(seed, q, _HARD_ACCEPT + round_, s)
        candidates = np.nonzero(ok)[0]
        multiplicity = _paths_to(graph, q[candidates], x[candidates])
        ok[candidates] = accept[candidates] * multiplicity < 1.0
        result[pending[ok]] = x[ok]
        pending = pending[~ok]
    if len(pending):
        result[pending] = _exact_hard(graph, query[pending], slot[pending], seed)
    return result


def _paths_to(graph: CitationGraph, q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each pair, how many of q's cited papers cite x (vectorised over the pairs)."""
    positions = _row_positions(graph.out_indptr, q)
    pair = np.repeat(np.arange(len(q)), graph.out_degree[q])
    hits = graph.has_edge(graph.out_indices[positions], x[pair])
    return np.bincount(pair[hits], minlength=len(q))


def _exact_hard(graph: CitationGraph, query: np.ndarray, slot: np.ndarray, seed: int) -> np.ndarray:
    """Hard negatives drawn from the materialised two-hop pools (chunked sparse products)."""
    result = np.full(len(query), -1, dtype=np.int64)
    unique_rows, slot_row = np.unique(query, return_inverse=True)
    adjacency = graph.adjacency
    for start in range(0, len(unique_rows), _FALLBACK_CHUNK):
        rows = unique_rows[start : start + _FALLBACK_CHUNK]
        reach = sp.csr_array(adjacency[rows] @ adjacency)
        row_of = np.repeat(np.arange(len(rows)), np.diff(reach.indptr))
        x = reach.indices.astype(np.int64)
        q = rows[row_of]
        ok = (x != q) & graph.has_text[x]
        ok[ok] = ~graph.has_edge(q[ok], x[ok])
        x, row_of = x[ok], row_of[ok]
        order = np.lexsort((x, row_of))  # deterministic order within each row
        x, row_of = x[order], row_of[order]
        counts = np.bincount(row_of, minlength=len(rows))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slots = np.nonzero((slot_row >= start) & (slot_row < start + len(rows)))[0]
        local = slot_row[slots] - start
        has_pool = counts[local] > 0
        slots, local = slots[has_pool], local[has_pool]
        u = keyed_uniform(seed, query[slots], _HARD_EXACT, slot[slots])
        pick = starts[local] + np.minimum((u * counts[local]).astype(np.int64), counts[local] - 1)
        result[slots] = x[pick]
    return result


def _easy_negatives(graph: CitationGraph, query: np.ndarray, slot: np.ndarray, seed: int) -> np.ndarray:
    """One easy negative per entry of ``query``, its ``slot``-th.

    It is a uniform paper with text that is not q and not cited by q, or -1 if there is none.
    """
    text = np.nonzero(graph.has_text)[0]
    result = np.full(len(query), -1, dtype=np.int64)
    if not len(text):
        return result
    pending = np.arange(len(query))
    for round_ in range(_MAX_ROUNDS):
        if not len(pending):
            break
        q = query[pending]
        u = keyed_uniform(seed, q, _EASY + round_, slot[pending])
        x = text[np.minimum((u * len(text)).astype(np.int64), len(text) - 1)]
        ok = x != q
        ok[ok] = ~graph.has_edge(q[ok], x[ok])
        result[pending[ok]] = x[ok]
        pending = pending[~ok]
    # Left over only when a query cites most papers with text: draw from its exact pool.
    for index in pending:
        q = query[index]
        pool = np.setdiff1d(text, np.append(graph.cited(q), q), assume_unique=True)
        if len(pool):
            result[index] = pool[min(int(keyed_uniform(seed, q, _EASY_EXACT, slot[index]) * len(pool)), len(pool) - 1)]
    return result
