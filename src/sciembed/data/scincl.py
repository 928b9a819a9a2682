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

- **Graph embedding.** The paper trains PyTorch-BigGraph on S2ORC's citation graph. Here
  :func:`citation_graph_embedding` computes an embedding that needs no training: FastRP (Chen et al.
  2019), random projections of each paper's 1- to 3-hop neighbourhood in the undirected citation
  graph, seeded. Papers that share neighbourhoods get near rows, the similarity PBG's link-prediction
  objective also learns. Precomputed vectors (PBG output, an ``(n, d)`` array aligned with
  ``graph.ids``; :func:`align_vectors` puts a ``(ids, vectors)`` pair in graph order) are honoured
  as given.
- **Exact kNN in blocks.** Distances from a block of queries to every candidate are computed as one
  matrix product and cut with ``numpy.argpartition`` at the range boundaries, so memory stays at
  ``block x candidates`` numbers whatever the number of queries (exact, O(queries x candidates x d)
  time; for millions of papers pass vectors and queries in shards, or use an ANN index outside).
- **Ranks** are 0-based among the *candidates* (papers with text and a vector, not excluded), the query
  itself left out, as in the release's ``[1:]``. Ranking among candidates only means that a paper
  without text never takes a rank slot, so every requested slot can be filled.
- **Small graphs.** When the hard-negative range ends beyond the number of candidates, the ranges are
  scaled (``rank_overflow="scale"``: both starts multiplied by ``candidates / hard_end``, widths kept)
  or clipped (``"clip"``: the hard range moved to the far end, positives kept) or refused
  (``"error"``); :class:`SciNCLStats` reports the ranges requested and used.
- **No leakage.** ``exclude`` (e.g. every SciDocs test paper) is removed before anything else: such a
  paper is never a query, positive or negative, and the computed embedding is built on the graph
  without its links (the paper's "w/o leakage" setting trained the graph embedding on S2ORC without the
  SciDocs papers). Precomputed vectors are used as given: train them without those papers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from .graph import CitationGraph
from .samplers import Triplets

logger = logging.getLogger(__name__)

#: The paper's setting (Ostendorff et al. 2022, sec. 4 / the release's "without leakage" command):
#: 5 positives from kNN ranks [20, 25), 2 hard negatives from [3998, 4000), 3 easy random negatives.
POSITIVES = 5
POSITIVE_RANKS = (20, 25)
HARD_NEGATIVES = 2
HARD_NEGATIVE_RANKS = (3998, 4000)
EASY_NEGATIVES = 3
#: Dimensions and propagation steps of the computed FastRP embedding.
EMBEDDING_DIM = 64
PROPAGATION_STEPS = 3
METRICS = ("euclidean", "cosine", "dot")
RANK_OVERFLOW = ("scale", "clip", "error")

# Distance-matrix entries per kNN block (float64): 8M entries = 64 MB plus the argpartition indices.
_BLOCK_ENTRIES = 8_000_000
_MAX_ROUNDS = 12

SeedLike = int | np.random.Generator | None
PaperRefs = Iterable[int | str] | np.ndarray | None


@dataclass(frozen=True)
class SciNCLStats:
    """What :func:`sample_scincl_triplets` did.

    Attributes:
        queries: queries asked for.
        queries_excluded: queries dropped because they are in ``exclude`` (test papers).
        queries_without_text: queries dropped because the paper has no text.
        queries_without_vector: queries dropped because the paper has no embedding (no link left in the
            graph for a computed embedding; a non-finite row of precomputed vectors).
        queries_used: queries that gave at least one triplet.
        triplets: triplets emitted.
        hard_negatives: triplets whose negative is a kNN hard negative.
        slots_without_negative: easy-negative slots left empty (no candidate outside the query's
            nearest neighbours; only on tiny graphs), dropping their triplet.
        excluded_papers: papers in ``exclude``.
        candidates: papers that can be a positive or negative (text, vector, not excluded).
        embedding: ``"fastrp-<d>"`` for a computed embedding, ``"precomputed-<d>"`` for given vectors.
        metric: the kNN distance.
        positive_ranks_requested, positive_ranks_used: the positive kNN rank range ``[start, end)``.
        hard_negative_ranks_requested, hard_negative_ranks_used: the hard-negative rank range.
        ranks_adjusted: ``"no"``, ``"scaled"`` or ``"clipped"`` (the graph had too few candidates).
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

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


# ---------------------------------------------------------------------- the graph embedding


def citation_graph_embedding(
    graph: CitationGraph,
    dim: int = EMBEDDING_DIM,
    *,
    exclude: PaperRefs = None,
    seed: SeedLike = 0,
    steps: int = PROPAGATION_STEPS,
) -> np.ndarray:
    """A citation-graph embedding by random projection of neighbourhoods: ``(n, dim)`` rows aligned with ``graph.ids``.

    The method is FastRP (Chen et al. 2019, "Fast and Accurate Network Embeddings via Very Sparse
    Random Projection"): with ``S = A + A^T`` the undirected 0/1 citation graph
    (:meth:`CitationGraph.symmetric_adjacency`), ``P = D^-1 S`` its random-walk matrix and ``R`` an
    ``(n, dim)`` Gaussian matrix drawn from ``seed``, ``N_1 = P R``, ``N_k = P N_{k-1}``, each row of
    each ``N_k`` scaled to unit length, and the embedding is ``sum_k N_k`` (``k = 1 .. steps``) with
    unit rows. Row i is thus a random projection of the papers reachable from i in up to ``steps``
    hops, weighted by walk probability, so papers that share neighbourhoods get near rows (the
    similarity PBG's link-prediction training also captures), and the inner product of two rows
    estimates the overlap of their neighbourhoods (Johnson-Lindenstrauss). It needs only ``steps``
    sparse products (linear in the citations, fine for millions of papers) and is exact and
    deterministic for a seed. A truncated SVD of the normalised adjacency was tried first and
    rejected: citation graphs have many small components, each contributing an eigenvalue 1, so the top
    singular vectors are component indicators and a truncation through that degenerate eigenspace is
    arbitrary (not even reproducible between runs). Papers without links (and the ``exclude``d papers,
    whose links are removed first) get a row of NaN, which :func:`sample_scincl_triplets` counts as a
    paper without a vector. Rows have unit length, so euclidean and cosine kNN rank alike.

    Raises:
        ValueError: ``dim`` or ``steps`` is not a positive integer.
    """
    n = graph.num_papers
    for name, value in (("embedding dim", dim), ("steps", steps)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    sym = graph.symmetric_adjacency().astype(np.float64)
    excluded = _indices(graph, exclude, "exclude")
    if len(excluded):
        keep = np.ones(n, dtype=np.float64)
        keep[excluded] = 0.0
        mask = sp.diags_array(keep)
        sym = (mask @ sym @ mask).tocsr()
        sym.eliminate_zeros()
    degree = np.asarray(sym.sum(axis=1)).ravel()
    inverse = np.zeros(n)
    np.divide(1.0, degree, out=inverse, where=degree > 0)
    walk = (sp.diags_array(inverse) @ sym).tocsr()

    layer = rng.standard_normal((n, dim))
    embedding = np.zeros((n, dim))
    for _ in range(steps):
        layer = _unit_rows(walk @ layer)
        embedding += layer
    embedding = _unit_rows(embedding)
    # No link, no position: NaN rather than a zero row, which would look like a real point.
    embedding[degree == 0] = np.nan
    logger.info("FastRP citation-graph embedding: %d papers x %d dims, %d steps, %d without links", n, dim, steps, int((degree == 0).sum()))
    return embedding


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def align_vectors(graph: CitationGraph, ids: Iterable[str | int], vectors: np.ndarray) -> np.ndarray:
    """Put precomputed vectors given as ``(ids, vectors)`` (e.g. PyTorch-BigGraph's ``entity_names`` and
    embeddings) into the order of ``graph.ids``.

    Graph papers without a vector get a row of NaN (counted as "without vector" by the sampler); ids not
    in the graph are ignored. Both counts are logged.

    Raises:
        ValueError: ``vectors`` is not 2-d, or its rows do not match ``ids``.
    """
    vectors = np.asarray(vectors)
    id_array = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids)).astype(str)
    if vectors.ndim != 2 or vectors.shape[0] != len(id_array) or vectors.shape[1] < 1:
        raise ValueError(f"vectors must be a 2-d array with one row per id: {len(id_array)} ids, vectors of shape {vectors.shape}")
    aligned = np.full((graph.num_papers, vectors.shape[1]), np.nan, dtype=np.float64)
    in_graph = np.isin(id_array, graph.ids)
    aligned[graph.index_of(id_array[in_graph])] = vectors[in_graph]
    missing = int(np.isnan(aligned[:, 0]).sum())
    logger.info("aligned vectors: %d of %d ids are graph papers; %d graph papers have no vector",
                int(in_graph.sum()), len(id_array), missing)
    return aligned


# ---------------------------------------------------------------------- the sampler


def sample_scincl_triplets(
    graph: CitationGraph,
    queries: PaperRefs = None,
    *,
    vectors: np.ndarray | None = None,
    exclude: PaperRefs = None,
    positives: int = POSITIVES,
    positive_ranks: tuple[int, int] = POSITIVE_RANKS,
    hard_negatives: int = HARD_NEGATIVES,
    hard_negative_ranks: tuple[int, int] = HARD_NEGATIVE_RANKS,
    easy_negatives: int = EASY_NEGATIVES,
    metric: str = "euclidean",
    embedding_dim: int = EMBEDDING_DIM,
    rank_overflow: str = "scale",
    block_size: int | None = None,
    seed: SeedLike = 0,
) -> Triplets:
    """SciNCL triplets (Ostendorff et al. 2022, sec. 3): kNN-rank positives and hard negatives.

    For each query paper q (with text, a vector, not excluded), with its candidates ranked by distance
    to q in the embedding (rank 0 = nearest other candidate):

    - ``positives`` papers drawn without replacement from ranks ``positive_ranks = [a, b)`` (all of
      them when the range width equals the count, as with the paper's 5 from [20, 25));
    - ``hard_negatives`` papers drawn the same way from ranks ``hard_negative_ranks`` ([3998, 4000));
    - ``easy_negatives`` papers drawn uniformly from the candidates outside q's nearest ``b``
      (the positive range's end), so an easy negative never collides with a positive.

    Positive ``i`` is paired with negative ``i`` of ``easy + hard`` (the release's ``zip``), giving
    ``positives`` triplets per query; ``positives`` must equal ``easy_negatives + hard_negatives``.

    Args:
        graph: the citation graph; only papers with ``graph.has_text`` are emitted.
        queries: query papers (indices or ids); by default every paper with text.
        vectors: precomputed ``(n, d)`` embeddings aligned with ``graph.ids`` (see :func:`align_vectors`);
            rows with a non-finite value count as papers without a vector. ``None`` computes
            :func:`citation_graph_embedding` with ``embedding_dim`` dimensions and ``seed``.
        exclude: papers (indices or ids) that must never appear: not as query, positive or negative.
        positives, hard_negatives, easy_negatives: counts per query.
        positive_ranks, hard_negative_ranks: ``(start, end)`` kNN rank ranges, end exclusive; the
            positive range must end at or before the hard-negative range starts.
        metric: ``"euclidean"`` (the release's default index metric), ``"cosine"`` or ``"dot"``.
        rank_overflow: what to do when the hard range ends beyond the candidates: ``"scale"``,
            ``"clip"`` or ``"error"`` (see the module docstring); reported in the stats.
        block_size: queries per kNN block; by default as many as keep a block near 8M distances.
        seed: an int seed or a ``numpy.random.Generator``.

    Returns:
        :class:`~sciembed.data.samplers.Triplets` whose ``stats`` is a :class:`SciNCLStats`.

    Raises:
        ValueError: bad counts, rank ranges, metric, vectors or dimensions, or too few candidates.
    """
    _check_arguments(positives, positive_ranks, hard_negatives, hard_negative_ranks, easy_negatives, metric, rank_overflow, block_size)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = graph.num_papers
    excluded = _indices(graph, exclude, "exclude")
    is_excluded = np.zeros(n, dtype=bool)
    is_excluded[excluded] = True

    if vectors is None:
        matrix = citation_graph_embedding(graph, embedding_dim, exclude=excluded, seed=rng)
        embedding = f"fastrp-{embedding_dim}"
    else:
        matrix = np.asarray(vectors)
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
            raise ValueError(f"vectors must have shape ({n}, d) with d >= 1 (one row per graph paper, in graph.ids order), got {matrix.shape}")
        if matrix.dtype.kind not in "fiu":
            raise ValueError(f"vectors must be numeric, got dtype {matrix.dtype}")
        matrix = matrix.astype(np.float64, copy=False)
        embedding = f"precomputed-{matrix.shape[1]}"
    has_vector = np.isfinite(matrix).all(axis=1)
    matrix = np.where(has_vector[:, None], matrix, 0.0)  # NaN rows would poison the block products
    if metric == "cosine":
        norms = np.linalg.norm(matrix, axis=1)
        has_vector &= norms > 0  # a zero vector has no direction
        matrix = matrix / np.where(norms > 0, norms, 1.0)[:, None]

    is_candidate = graph.has_text & has_vector & ~is_excluded
    candidates = np.nonzero(is_candidate)[0]
    asked = _indices(graph, queries, "queries") if queries is not None else np.nonzero(graph.has_text)[0]
    dropped_excluded = is_excluded[asked]
    dropped_text = ~dropped_excluded & ~graph.has_text[asked]
    dropped_vector = ~dropped_excluded & ~dropped_text & ~has_vector[asked]
    query = asked[is_candidate[asked]]

    pool = len(candidates) - 1  # every query is itself a candidate and is left out of its own ranking
    pos_used, hard_used, adjusted = _fit_ranges(positive_ranks, hard_negative_ranks, pool, rank_overflow)
    if adjusted != "no":
        logger.warning("SciNCL: hard-negative ranks %s exceed the %d candidates per query; %s to positives %s, hard negatives %s",
                       hard_negative_ranks, pool, adjusted, pos_used, hard_used)

    nq, k = len(query), positives
    positive = np.full((nq, k), -1, dtype=np.int64)
    negative = np.full((nq, k), -1, dtype=np.int64)
    near = np.empty((nq, pos_used[1]), dtype=np.int64)  # each query's nearest candidates up to the positive end
    if nq:
        rows = block_size or max(1, _BLOCK_ENTRIES // max(len(candidates), 1))
        cand_vectors = matrix[candidates]
        cand_norms = np.einsum("ij,ij->i", cand_vectors, cand_vectors)
        position_of = np.full(n, -1, dtype=np.int64)
        position_of[candidates] = np.arange(len(candidates))
        kth = np.unique([pos_used[0], pos_used[1] - 1, hard_used[0], hard_used[1] - 1])
        # Random keys for all queries up front, so the draws do not depend on the block size.
        positive_keys = rng.random((nq, pos_used[1] - pos_used[0]))
        hard_keys = rng.random((nq, hard_used[1] - hard_used[0]))
        for start in range(0, nq, rows):
            block = query[start : start + rows]
            distance = -(matrix[block] @ cand_vectors.T)
            if metric == "euclidean":
                # ||q - c||^2 = ||q||^2 - 2 q.c + ||c||^2; the ||q||^2 term is the same for the whole row.
                distance = 2.0 * distance + cand_norms
            distance[np.arange(len(block)), position_of[block]] = np.inf  # the query is not its own neighbour
            order = np.argpartition(distance, kth, axis=1)
            stop = start + len(block)
            near[start:stop] = candidates[order[:, : pos_used[1]]]
            positive[start:stop] = _draw(candidates[order[:, pos_used[0] : pos_used[1]]], positives, positive_keys[start:stop])
            negative[start:stop, easy_negatives:] = _draw(candidates[order[:, hard_used[0] : hard_used[1]]], hard_negatives, hard_keys[start:stop])
        if easy_negatives:
            flat = _easy_negatives(query, near, candidates, easy_negatives, rng)
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
    )
    logger.info("SciNCL triplets: %s", stats.as_dict())
    query_grid = np.broadcast_to(query[:, None], (nq, k))
    return Triplets(graph, query_grid[valid], positive[valid], negative[valid], hard[valid], stats)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- helpers


def _check_arguments(positives, positive_ranks, hard_negatives, hard_negative_ranks, easy_negatives, metric, rank_overflow, block_size) -> None:
    for name, value in (("positives", positives), ("hard_negatives", hard_negatives), ("easy_negatives", easy_negatives)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if positives < 1:
        raise ValueError(f"positives must be at least 1, got {positives}")
    if positives != hard_negatives + easy_negatives:
        raise ValueError(f"positives ({positives}) must equal hard_negatives + easy_negatives ({hard_negatives} + {easy_negatives}): "
                         "triplet i pairs positive i with negative i")
    for name, ranks, count in (("positive_ranks", positive_ranks, positives), ("hard_negative_ranks", hard_negative_ranks, hard_negatives)):
        if len(ranks) != 2 or not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) for r in ranks):
            raise ValueError(f"{name} must be a (start, end) pair of integers, got {ranks!r}")
        start, end = ranks
        if start < 0 or end <= start:
            raise ValueError(f"{name} must satisfy 0 <= start < end, got [{start}, {end})")
        if end - start < count:
            raise ValueError(f"{name} [{start}, {end}) holds {end - start} rank(s), fewer than the {count} requested")
    if positive_ranks[1] > hard_negative_ranks[0]:
        raise ValueError(f"positive_ranks {tuple(positive_ranks)} overlap or follow hard_negative_ranks {tuple(hard_negative_ranks)}: "
                         "the positive range must end at or before the hard-negative range starts (SciNCL's sampling margin)")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if rank_overflow not in RANK_OVERFLOW:
        raise ValueError(f"unknown rank_overflow {rank_overflow!r}; use one of {', '.join(RANK_OVERFLOW)}")
    if block_size is not None and (not isinstance(block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")


def _fit_ranges(positive_ranks, hard_ranks, pool: int, mode: str) -> tuple[tuple[int, int], tuple[int, int], str]:
    """The rank ranges to use with ``pool`` candidates per query (ranks ``0 .. pool - 1``)."""
    (a1, b1), (a2, b2) = (int(r) for r in positive_ranks), (int(r) for r in hard_ranks)
    if b2 <= pool:
        return (a1, b1), (a2, b2), "no"
    w1, w2 = b1 - a1, b2 - a2
    if mode == "error":
        raise ValueError(f"hard_negative_ranks [{a2}, {b2}) exceed the {pool} candidates per query "
                         "(pass rank_overflow='scale' or 'clip')")
    if pool < w1 + w2:
        raise ValueError(f"only {pool} candidates per query: too few for a positive range of {w1} and a hard range of {w2} ranks")
    hard = (pool - w2, pool)
    if mode == "clip":
        if b1 > hard[0]:
            raise ValueError(f"positive_ranks [{a1}, {b1}) reach the clipped hard range {hard} ({pool} candidates per query)")
        return (a1, b1), hard, "clipped"
    factor = pool / b2
    hard = (min(int(math.floor(a2 * factor)), pool - w2), pool)
    start = min(int(math.floor(a1 * factor)), hard[0] - w1)
    return (start, start + w1), hard, "scaled"


def _draw(choices: np.ndarray, count: int, keys: np.ndarray) -> np.ndarray:
    """``count`` entries of each row of ``choices`` without replacement, vectorised.

    The entries with the ``count`` smallest random ``keys`` of their row: the first ``count`` of a
    uniform random permutation (all of them, in random order, when ``count`` equals the width).
    """
    picked = np.argsort(keys, axis=1, kind="stable")[:, :count]
    return np.take_along_axis(choices, picked, axis=1)


def _easy_negatives(query: np.ndarray, near: np.ndarray, candidates: np.ndarray, per_query: int, rng: np.random.Generator) -> np.ndarray:
    """``per_query`` uniform candidates for each query, not the query, not among its ``near`` neighbours.

    The release's "random without kNN" rule. Rejection in vectorised rounds; the few slots left are
    drawn from the exact pool; -1 where that pool is empty. Draws are with replacement across slots.
    """
    slot_query = np.repeat(np.arange(len(query)), per_query)
    result = np.full(len(slot_query), -1, dtype=np.int64)
    pending = np.arange(len(slot_query))
    for _ in range(_MAX_ROUNDS):
        if not len(pending):
            break
        rows = slot_query[pending]
        x = candidates[np.minimum((rng.random(len(pending)) * len(candidates)).astype(np.int64), len(candidates) - 1)]
        ok = (x != query[rows]) & ~(near[rows] == x[:, None]).any(axis=1)
        result[pending[ok]] = x[ok]
        pending = pending[~ok]
    for slot in pending:
        row = slot_query[slot]
        pool = np.setdiff1d(candidates, np.append(near[row], query[row]))
        if len(pool):
            result[slot] = pool[min(int(rng.random() * len(pool)), len(pool) - 1)]
    return result


def _indices(graph: CitationGraph, refs: PaperRefs, name: str) -> np.ndarray:
    """Paper indices from indices or ids (unique, sorted for ``exclude``; as given for queries)."""
    if refs is None:
        return np.zeros(0, dtype=np.int64)
    array = np.asarray(refs if isinstance(refs, np.ndarray) else list(refs))
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind in "iu":
        if array.min() < 0 or array.max() >= graph.num_papers:
            raise IndexError(f"{name} indices must lie in [0, {graph.num_papers})")
        indices = array.astype(np.int64)
    else:
        indices = np.asarray(graph.index_of(array.astype(str)), dtype=np.int64)
    return np.unique(indices) if name == "exclude" else indices
