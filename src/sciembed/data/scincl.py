"""SciNCL triplets: positives and hard negatives by nearest-neighbour rank in a citation-graph embedding.

SciNCL (Ostendorff et al. 2022, "Neighborhood Contrastive Learning for Scientific Document
Representations with Citation Embeddings", sec. 3) replaces SPECTER's discrete citation rules by
*controlled nearest-neighbour sampling* over citation-graph embeddings: for a query paper, the papers at
k-nearest-neighbour ranks ``[20, 25)`` are its (easy) positives, the papers at ranks ``[3998, 4000)``
its hard negatives, and three random papers its easy negatives, giving five triplets per query. The
gap between the two rank ranges is the "sampling margin" that keeps positives and negatives from
colliding. The authors' release (``gdt/triples_miner`` of malteos/scincl) takes the neighbours of a
paper excluding the paper itself (``search(k_max + 1)[:, 1:]``), slices ``nearest[k_min:k_max]``,
draws ``count`` of them at random when the range is wider than ``count``, draws easy negatives
"random without kNN" (random papers outside the query's neighbour list), and zips the positives with
``easy + hard`` negatives into triplets. This module follows those rules with numpy arrays:

- **Graph embedding** (:mod:`.graph_embedding`). The paper trains PyTorch-BigGraph on S2ORC's citation graph.
  Here :func:`~.graph_embedding.citation_graph_embedding` computes an embedding that needs no training: FastRP
  (Chen et al. 2019), random projections of each paper's 1- to 3-hop neighbourhood in the undirected citation
  graph, seeded. Papers that share neighbourhoods get near rows, the similarity PBG's link-prediction
  objective also learns. Precomputed vectors (PBG output, an ``(n, d)`` array aligned with
  ``graph.ids``, :func:`~.graph_embedding.align_vectors` puts a ``(ids, vectors)`` pair in graph order) are honoured
  as given.
- **kNN index** (:mod:`.knn`), with faiss, the library of SciNCL's own release. ``index="exact"`` (the
  default) is faiss's ``IndexFlat``: every query against every candidate, the paper's ranks exactly, in
  blocks of queries so that memory stays at ``block x 4,000`` ranks whatever the number of queries. faiss
  scores in float32. The ranks next to each range boundary are re-ordered in float64, so the cut falls
  where a float64 ranking puts it. Time is O(queries x candidates x d). ``benchmarks/scincl_scale.py`` times
  it, and the benchmarks page shows the timings. ``index="ivf"`` is faiss's
  ``IndexIVFFlat``: seeded k-means cuts the candidates into ``ivf_cells`` cells, each query ranks only the
  candidates of its ``ivf_nprobe`` nearest cells, so time grows with the probed cells instead of the
  corpus. Its ranks are approximate: a paper's IVF rank counts only the nearer papers that were probed,
  so it never exceeds the true rank. Near ranks (the positives) are almost always right, hard negatives'
  true ranks run above the requested range when the probes miss part of the query's 4,000-neighbourhood
  (``benchmarks/scincl_scale.py --tradeoff`` measures how often, against the time saved).
- **Ranks** are 0-based among the *candidates* (papers with text and a vector, not excluded), the query
  itself left out, as in the release's ``[1:]``. Ranking among candidates only means that a paper
  without text never takes a rank slot, so every requested slot can be filled.
- **Small graphs.** When the hard-negative range ends beyond the number of candidates, the paper's ranges
  cannot apply: in the paper's graph of tens of millions rank 4,000 is still among a query's nearest, in a graph of
  a few thousand papers it is past the last one. ``rank_overflow`` chooses what replaces them:
  ``"nearest"`` keeps each range's meaning at the graph's scale (positives from the top ranks ``[0, w)``, hard
  negatives from the nearest tenth of the candidates, ``[pool // 10, pool // 10 + w)``, still topical but
  outside the positives' neighbourhood). ``"scale"`` multiplies both starts by ``candidates / hard_end``
  (widths kept), which puts the hard negatives among the *farthest* papers. ``"clip"`` moves the hard range to
  the far end and keeps the positives. ``"error"`` refuses. The default is ``"scale"``. The ``scincl``
  recipe uses ``"nearest"`` (on CACM's training graph its positives are far more often cited by their query than
  with ``"scale"``: ``benchmarks/results/triplet_positives.json``). :class:`SciNCLStats` reports the ranges
  requested and used.
- **No leakage.** ``exclude`` (e.g. every SciDocs test paper) is removed before anything else: such a
  paper is never a query, positive or negative, and the computed embedding is built on the graph
  without its links (the paper's "w/o leakage" setting trained the graph embedding on S2ORC without the
  SciDocs papers). Precomputed vectors are used as given: train them without those papers.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..choices import StrChoice, choices
from .graph import CitationGraph, PaperRefs, paper_indices
from .graph_embedding import EMBEDDING_DIM, citation_graph_embedding
from .keyed_random import SeedLike, base_seed, keyed_uniform
from .knn import BLOCK_ENTRIES, IVF_SCAN_FACTOR, IVFSettings, KnnMetric, faiss_rank_search, unit_rows
from .samplers import Triplets, rank_share

logger = logging.getLogger(__name__)

#: The paper's setting (Ostendorff et al. 2022, sec. 4 / the release's "without leakage" command):
#: 5 positives from kNN ranks [20, 25), 2 hard negatives from [3998, 4000), 3 easy random negatives.
POSITIVES = 5
POSITIVE_RANKS = (20, 25)
HARD_NEGATIVES = 2
HARD_NEGATIVE_RANKS = (3998, 4000)
EASY_NEGATIVES = 3
METRICS = choices(KnnMetric)


class RankOverflow(StrChoice):
    """What to do when the hard-negative range ends beyond the candidates per query."""

    SCALE = "scale"
    NEAREST = "nearest"
    CLIP = "clip"
    ERROR = "error"


class RankAdjustment(StrChoice):
    """How the rank ranges were fitted to the candidates (``no``: used as given)."""

    NO = "no"
    SCALED = "scaled"
    NEAREST = "nearest"
    CLIPPED = "clipped"


class KnnIndex(StrChoice):
    """The kNN search: exact (faiss ``IndexFlat``) or inverted-file (``IndexIVFFlat``)."""

    EXACT = "exact"
    IVF = "ivf"


RANK_OVERFLOW = choices(RankOverflow)
#: ``rank_overflow="nearest"``: hard negatives start at this share of the candidates per query.
NEAREST_HARD_SHARE = 0.1
INDEXES = choices(KnnIndex)

_MAX_ROUNDS = 12
# Streams of keyed random numbers (see .keyed_random); easy-negative rounds add their round number.
_POSITIVE, _HARD, _EASY, _EASY_EXACT = 0, 1, 100, 200


@dataclass(frozen=True)
class SciNCLStats:
    """What :func:`sample_scincl_triplets` did.

    Attributes:
        queries: queries asked for.
        queries_excluded: queries dropped because they are in ``exclude`` (test papers).
        queries_without_text: queries dropped because the paper has no text.
        queries_without_vector: queries dropped because the paper has no embedding (no link left in the
            graph for a computed embedding, a non-finite row of precomputed vectors).
        queries_used: queries that gave at least one triplet.
        triplets: triplets emitted.
        hard_negatives: triplets whose negative is a kNN hard negative.
        slots_without_negative: easy-negative slots left empty (no candidate outside the query's
            nearest neighbours, only on tiny graphs), dropping their triplet.
        excluded_papers: papers in ``exclude``.
        candidates: papers that can be a positive or negative (text, vector, not excluded).
        embedding: ``"fastrp-<d>"`` for a computed embedding, ``"precomputed-<d>"`` for given vectors.
        metric: the kNN distance.
        positive_ranks_requested, positive_ranks_used: the positive kNN rank range ``[start, end)``.
        hard_negative_ranks_requested, hard_negative_ranks_used: the hard-negative rank range.
        ranks_adjusted: ``"no"``, ``"scaled"``, ``"nearest"`` or ``"clipped"`` (the graph had too few candidates).
        index: the kNN search that ran, ``"exact"`` or ``"ivf"``.
        index_params: its parameters: the block size. For IVF also the cells, ``nprobe`` and k-means seed.
    """

    queries: int
    queries_excluded: int
    queries_without_text: int
    queries_without_vector: int
    queries_used: int
    triplets: int
    hard_negatives: int
    slots_without_negative: int
    excluded_papers: int
    candidates: int
    embedding: str
    metric: str
    positive_ranks_requested: tuple[int, int]
    positive_ranks_used: tuple[int, int]
    hard_negative_ranks_requested: tuple[int, int]
    hard_negative_ranks_used: tuple[int, int]
    ranks_adjusted: str
    index: str = "exact"
    index_params: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class SciNCLConfig:
    """Settings of :func:`sample_scincl_triplets` (defaults: the paper's).

    Attributes:
        positives, hard_negatives, easy_negatives: counts per query. ``positives`` must equal
            ``easy_negatives + hard_negatives`` (triplet i pairs positive i with negative i).
        positive_ranks, hard_negative_ranks: ``(start, end)`` kNN rank ranges, end exclusive. The
            positive range must end at or before the hard-negative range starts.
        metric: ``"euclidean"`` (the release's default index metric), ``"cosine"`` or ``"dot"``.
        rank_overflow: what to do when the hard range ends beyond the candidates: ``"scale"``,
            ``"nearest"``, ``"clip"`` or ``"error"`` (see the module docstring). Reported in the stats.
        block_size: queries per kNN search. By default as many as keep a block near 8M ranks. It bounds
            memory and does not change the result.
        index: ``"exact"`` (faiss ``IndexFlat``, the paper's ranks) or ``"ivf"`` (faiss ``IndexIVFFlat``,
            approximate, for graphs too large for exact search, see the module docstring).
        ivf_cells: IVF k-means cells. By default ``round(sqrt(candidates))``.
        ivf_nprobe: cells each query probes. By default enough to hold, on average,
            :data:`~.knn.IVF_SCAN_FACTOR` times the hard-negative range end (16,000 candidates for
            [3998, 4000)). More is more accurate and proportionally slower.
        embedding_dim: dimensions of the computed FastRP embedding (when no vectors are given).
    """

    positives: int = POSITIVES
    positive_ranks: tuple[int, int] = POSITIVE_RANKS
    hard_negatives: int = HARD_NEGATIVES
    hard_negative_ranks: tuple[int, int] = HARD_NEGATIVE_RANKS
    easy_negatives: int = EASY_NEGATIVES
    metric: KnnMetric = KnnMetric.EUCLIDEAN
    embedding_dim: int = EMBEDDING_DIM
    rank_overflow: RankOverflow = RankOverflow.SCALE
    block_size: int | None = None
    index: KnnIndex = KnnIndex.EXACT
    ivf_cells: int | None = None
    ivf_nprobe: int | None = None

    def __post_init__(self):
        _check_arguments(
            self.positives,
            self.positive_ranks,
            self.hard_negatives,
            self.hard_negative_ranks,
            self.easy_negatives,
            self.metric,
            self.rank_overflow,
            self.block_size,
        )
        _check_index(self.index, self.ivf_cells, self.ivf_nprobe)
        object.__setattr__(self, "metric", KnnMetric(self.metric))
        object.__setattr__(self, "rank_overflow", RankOverflow(self.rank_overflow))
        object.__setattr__(self, "index", KnnIndex(self.index))
        # Rank ranges from JSON settings arrive as lists.
        object.__setattr__(self, "positive_ranks", tuple(int(r) for r in self.positive_ranks))
        object.__setattr__(self, "hard_negative_ranks", tuple(int(r) for r in self.hard_negative_ranks))


def sample_scincl_triplets(
    graph: CitationGraph,
    queries: PaperRefs = None,
    config: SciNCLConfig | None = None,
    *,
    vectors: np.ndarray | None = None,
    exclude: PaperRefs = None,
    seed: SeedLike = 0,
    rank: int = 0,
    world_size: int = 1,
) -> Triplets:
    """SciNCL triplets (Ostendorff et al. 2022, sec. 3): kNN-rank positives and hard negatives.

    For each query paper q (with text, a vector, not excluded), with its candidates ranked by distance
    to q in the embedding (rank 0 = nearest other candidate), and the settings of ``config``:

    - ``positives`` papers drawn without replacement from ranks ``positive_ranks = [a, b)`` (all of
      them when the range width equals the count, as with the paper's 5 from [20, 25)).
    - ``hard_negatives`` papers drawn the same way from ranks ``hard_negative_ranks`` ([3998, 4000)).
    - ``easy_negatives`` papers drawn uniformly from the candidates outside q's nearest ``b``
      (the positive range's end), so an easy negative never collides with a positive.

    Positive ``i`` is paired with negative ``i`` of ``easy + hard`` (the release's ``zip``), giving
    ``positives`` triplets per query. ``positives`` must equal ``easy_negatives + hard_negatives``.

    Args:
        graph: the citation graph. Only papers with ``graph.has_text`` are emitted.
        queries: query papers (indices or ids). By default every paper with text.
        vectors: precomputed ``(n, d)`` embeddings aligned with ``graph.ids`` (see
            :func:`~.graph_embedding.align_vectors`). Rows with a non-finite value count as papers without a
            vector. ``None`` computes :func:`~.graph_embedding.citation_graph_embedding` with the config's
            ``embedding_dim`` dimensions and ``seed``.
        exclude: papers (indices or ids) that must never appear: not as query, positive or negative.
        config: the counts, rank ranges, metric and kNN index (:class:`SciNCLConfig`, default: the paper's).
        seed: an int seed or a ``numpy.random.Generator``. It also seeds the FastRP embedding and the IVF
            k-means. Every draw is keyed by the seed and its query, so a query's triplets do not depend
            on the other queries sampled with it.
        rank, world_size: sample only every ``world_size``-th query, starting at the ``rank``-th. The
            shares of all ranks together are exactly the triplets of ``world_size=1``.

    Returns:
        :class:`~sciembed.data.samplers.Triplets` whose ``stats`` is a :class:`SciNCLStats`.

    Raises:
        ValueError: bad vectors or dimensions, or too few
            candidates (bad counts, ranges, metric or index settings are refused by :class:`SciNCLConfig`).
    """
    config = config or SciNCLConfig()
    positives, easy_negatives, hard_negatives, metric = (
        config.positives,
        config.easy_negatives,
        config.hard_negatives,
        config.metric,
    )
    positive_ranks, hard_negative_ranks, index = config.positive_ranks, config.hard_negative_ranks, config.index
    seed = base_seed(seed)
    n = graph.num_papers
    excluded = paper_indices(graph, exclude, "exclude")
    is_excluded = np.zeros(n, dtype=bool)
    is_excluded[excluded] = True

    if vectors is None:
        matrix = citation_graph_embedding(graph, config.embedding_dim, exclude=excluded, seed=seed)
        embedding = f"fastrp-{config.embedding_dim}"
    else:
        matrix = np.asarray(vectors)
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
            raise ValueError(
                f"vectors must have shape ({n}, d) with d >= 1 (one row per graph paper, in graph.ids order), got "
                f"{matrix.shape}"
            )
        if matrix.dtype.kind not in "fiu":
            raise ValueError(f"vectors must be numeric, got dtype {matrix.dtype}")
        matrix = matrix.astype(matrix.dtype if matrix.dtype.kind == "f" else np.float64, copy=False)
        embedding = f"precomputed-{matrix.shape[1]}"
    has_vector = np.isfinite(matrix).all(axis=1)
    matrix = np.where(has_vector[:, None], matrix, 0.0)  # NaN rows would poison the block products
    if metric == KnnMetric.COSINE:
        has_vector &= np.linalg.norm(matrix, axis=1) > 0  # a zero vector has no direction
        matrix = unit_rows(matrix)

    is_candidate = graph.has_text & has_vector & ~is_excluded
    candidates = np.nonzero(is_candidate)[0]
    asked = paper_indices(graph, queries, "queries") if queries is not None else np.nonzero(graph.has_text)[0]
    asked = rank_share(asked, rank, world_size)
    dropped_excluded = is_excluded[asked]
    dropped_text = ~dropped_excluded & ~graph.has_text[asked]
    dropped_vector = ~dropped_excluded & ~dropped_text & ~has_vector[asked]
    query = asked[is_candidate[asked]]

    pool = len(candidates) - 1  # every query is itself a candidate and is left out of its own ranking
    pos_used, hard_used, adjusted = _fit_ranges(positive_ranks, hard_negative_ranks, pool, config.rank_overflow)
    if adjusted is not RankAdjustment.NO:
        logger.warning(
            "SciNCL: hard-negative ranks %s exceed the %d candidates per query; rank_overflow=%r: positives %s, "
            "hard negatives %s",
            hard_negative_ranks,
            pool,
            config.rank_overflow,
            pos_used,
            hard_used,
        )

    index_params: dict[str, object] = {}
    ivf = None
    if index == KnnIndex.IVF:
        cells = min(config.ivf_cells or max(1, round(math.sqrt(len(candidates)))), len(candidates))
        nprobe = min(config.ivf_nprobe or math.ceil(IVF_SCAN_FACTOR * hard_used[1] * cells / len(candidates)), cells)
        ivf = IVFSettings(cells, nprobe, seed % 2**31)
        index_params.update(cells=cells, nprobe=nprobe, kmeans_seed=ivf.seed)
    logger.info("SciNCL kNN: %s index over %d candidates for %d queries", index, len(candidates), len(query))

    nq, k = len(query), positives
    positive = np.full((nq, k), -1, dtype=np.int64)
    negative = np.full((nq, k), -1, dtype=np.int64)
    near = np.empty((nq, pos_used[1]), dtype=np.int64)  # each query's nearest candidates up to the positive end
    if nq:
        positive_keys = keyed_uniform(seed, query[:, None], _POSITIVE, np.arange(pos_used[1] - pos_used[0]))
        hard_keys = keyed_uniform(seed, query[:, None], _HARD, np.arange(hard_used[1] - hard_used[0]))
        rows = config.block_size or max(1, BLOCK_ENTRIES // hard_used[1])
        index_params["block_size"] = int(rows)
        cuts = [*pos_used, *hard_used]
        for rows_of, ranked in faiss_rank_search(matrix, query, candidates, metric, cuts, rows, ivf):
            near[rows_of] = candidates[ranked(0, pos_used[1])]
            positive[rows_of] = _draw(candidates[ranked(*pos_used)], positives, positive_keys[rows_of])
            negative[rows_of, easy_negatives:] = _draw(
                candidates[ranked(*hard_used)], hard_negatives, hard_keys[rows_of]
            )
        if easy_negatives:
            flat = _easy_negatives(query, near, candidates, easy_negatives, seed)
            negative[:, :easy_negatives] = flat.reshape(nq, easy_negatives)

    hard = np.zeros((nq, k), dtype=bool)
    hard[:, easy_negatives:] = True
    valid = negative >= 0
    stats = SciNCLStats(
        queries=len(asked),
        queries_excluded=int(dropped_excluded.sum()),
        queries_without_text=int(dropped_text.sum()),
        queries_without_vector=int(dropped_vector.sum()),
        queries_used=int(valid.any(axis=1).sum()),
        triplets=int(valid.sum()),
        hard_negatives=int((hard & valid).sum()),
        slots_without_negative=int((~valid).sum()),
        excluded_papers=len(excluded),
        candidates=len(candidates),
        embedding=embedding,
        metric=metric,
        positive_ranks_requested=tuple(int(r) for r in positive_ranks),
        positive_ranks_used=pos_used,
        hard_negative_ranks_requested=tuple(int(r) for r in hard_negative_ranks),
        hard_negative_ranks_used=hard_used,
        ranks_adjusted=adjusted,
        index=index,
        index_params=index_params,
    )
    logger.info("SciNCL triplets: %s", stats.as_dict())
    query_grid = np.broadcast_to(query[:, None], (nq, k))
    return Triplets(graph, query_grid[valid], positive[valid], negative[valid], hard[valid], stats)  # type: ignore[arg-type]


def _check_arguments(
    positives, positive_ranks, hard_negatives, hard_negative_ranks, easy_negatives, metric, rank_overflow, block_size
) -> None:
    for name, value in (
        ("positives", positives),
        ("hard_negatives", hard_negatives),
        ("easy_negatives", easy_negatives),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if positives < 1:
        raise ValueError(f"positives must be at least 1, got {positives}")
    if positives != hard_negatives + easy_negatives:
        raise ValueError(
            f"positives ({positives}) must equal hard_negatives + easy_negatives ({hard_negatives} + "
            f"{easy_negatives}): triplet i pairs positive i with negative i"
        )
    for name, ranks, count in (
        ("positive_ranks", positive_ranks, positives),
        ("hard_negative_ranks", hard_negative_ranks, hard_negatives),
    ):
        if len(ranks) != 2 or not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) for r in ranks):
            raise ValueError(f"{name} must be a (start, end) pair of integers, got {ranks!r}")
        start, end = ranks
        if start < 0 or end <= start:
            raise ValueError(f"{name} must satisfy 0 <= start < end, got [{start}, {end})")
        if end - start < count:
            raise ValueError(f"{name} [{start}, {end}) holds {end - start} rank(s), fewer than the {count} requested")
    if positive_ranks[1] > hard_negative_ranks[0]:
        raise ValueError(
            f"positive_ranks {tuple(positive_ranks)} overlap or follow hard_negative_ranks "
            f"{tuple(hard_negative_ranks)}: the positive range must end at or before the hard-negative range starts "
            "(SciNCL's sampling margin)"
        )
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if rank_overflow not in RANK_OVERFLOW:
        raise ValueError(f"unknown rank_overflow {rank_overflow!r}; use one of {', '.join(RANK_OVERFLOW)}")
    if block_size is not None and (not isinstance(block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")


def _check_index(index, ivf_cells, ivf_nprobe) -> None:
    if index not in INDEXES:
        raise ValueError(f"unknown index {index!r}; use one of {', '.join(INDEXES)}")
    for name, value in (("ivf_cells", ivf_cells), ("ivf_nprobe", ivf_nprobe)):
        if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    if index == KnnIndex.EXACT and (ivf_cells, ivf_nprobe) != (None, None):
        raise ValueError("ivf_cells and ivf_nprobe apply to index='ivf', not to index='exact'")


def _fit_ranges(
    positive_ranks, hard_ranks, pool: int, mode: RankOverflow
) -> tuple[tuple[int, int], tuple[int, int], RankAdjustment]:
    """The rank ranges to use with ``pool`` candidates per query (ranks ``0 .. pool - 1``)."""
    (a1, b1), (a2, b2) = (int(r) for r in positive_ranks), (int(r) for r in hard_ranks)
    if b2 <= pool:
        return (a1, b1), (a2, b2), RankAdjustment.NO
    w1, w2 = b1 - a1, b2 - a2
    if mode is RankOverflow.ERROR:
        raise ValueError(
            f"hard_negative_ranks [{a2}, {b2}) exceed the {pool} candidates per query "
            "(pass rank_overflow='nearest', 'scale' or 'clip')"
        )
    if pool < w1 + w2:
        raise ValueError(
            f"only {pool} candidates per query: too few for a positive range of {w1} and a hard range of {w2} ranks"
        )
    if mode is RankOverflow.NEAREST:
        start = min(max(int(pool * NEAREST_HARD_SHARE), w1), pool - w2)
        return (0, w1), (start, start + w2), RankAdjustment.NEAREST
    hard = (pool - w2, pool)
    if mode is RankOverflow.CLIP:
        if b1 > hard[0]:
            raise ValueError(
                f"positive_ranks [{a1}, {b1}) reach the clipped hard range {hard} ({pool} candidates per query)"
            )
        return (a1, b1), hard, RankAdjustment.CLIPPED
    factor = pool / b2
    hard = (min(int(math.floor(a2 * factor)), pool - w2), pool)
    start = min(int(math.floor(a1 * factor)), hard[0] - w1)
    return (start, start + w1), hard, RankAdjustment.SCALED


def _draw(choices: np.ndarray, count: int, keys: np.ndarray) -> np.ndarray:
    """``count`` entries of each row of ``choices`` without replacement, vectorised.

    The entries with the ``count`` smallest random ``keys`` of their row: the first ``count`` of a
    uniform random permutation (all of them, in random order, when ``count`` equals the width).
    """
    picked = np.argsort(keys, axis=1, kind="stable")[:, :count]
    return np.take_along_axis(choices, picked, axis=1)


def _easy_negatives(
    query: np.ndarray, near: np.ndarray, candidates: np.ndarray, per_query: int, seed: int
) -> np.ndarray:
    """``per_query`` uniform candidates for each query, not the query, not among its ``near`` neighbours.

    The release's "random without kNN" rule. Rejection in vectorised rounds. The few slots left are
    drawn from the exact pool. -1 where that pool is empty. Draws are with replacement across slots.
    """
    slot_query = np.repeat(np.arange(len(query)), per_query)
    slot = np.tile(np.arange(per_query), len(query))
    result = np.full(len(slot_query), -1, dtype=np.int64)
    pending = np.arange(len(slot_query))
    for round_ in range(_MAX_ROUNDS):
        if not len(pending):
            break
        rows = slot_query[pending]
        u = keyed_uniform(seed, query[rows], _EASY + round_, slot[pending])
        x = candidates[np.minimum((u * len(candidates)).astype(np.int64), len(candidates) - 1)]
        ok = (x != query[rows]) & ~(near[rows] == x[:, None]).any(axis=1)
        result[pending[ok]] = x[ok]
        pending = pending[~ok]
    for index in pending:
        row = slot_query[index]
        pool = np.setdiff1d(candidates, np.append(near[row], query[row]))
        if len(pool):
            result[index] = pool[
                min(int(keyed_uniform(seed, query[row], _EASY_EXACT, slot[index]) * len(pool)), len(pool) - 1)
            ]
    return result
