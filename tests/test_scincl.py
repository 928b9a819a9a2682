"""SciNCL sampler: kNN rank ranges checked against a brute-force ranking, on planted communities and CACM."""

from __future__ import annotations

import numpy as np
import pytest

from sciembed.data.graph import CitationGraph
from sciembed.data.graph_embedding import align_vectors, citation_graph_embedding
from sciembed.data.samplers import Triplets
from sciembed.data.scincl import SciNCLConfig, SciNCLStats, sample_scincl_triplets

DIM = 16  # small embeddings keep the tests fast; the rules do not depend on the dimension


@pytest.fixture(scope="module")
def cacm_vectors(cacm_graph) -> np.ndarray:
    return citation_graph_embedding(cacm_graph, DIM, seed=0)


def planted_graph(communities: int = 4, size: int = 40, seed: int = 0) -> tuple[CitationGraph, np.ndarray]:
    """Dense links inside each community (p=0.3), sparse across (p=0.01); also the community labels."""
    rng = np.random.default_rng(seed)
    n = communities * size
    label = np.repeat(np.arange(communities), size)
    same = label[:, None] == label[None, :]
    links = np.triu(rng.random((n, n)) < np.where(same, 0.3, 0.01), k=1)
    a, b = np.nonzero(links)
    ids = np.array([f"p{i:03d}" for i in range(n)])  # zero-padded: index order == sorted id order
    graph = CitationGraph.from_undirected_pairs(ids[a], ids[b], papers_with_text=ids[::1])
    assert (graph.ids == ids).all()
    return graph, label


def brute_force_rank_bounds(
    vectors: np.ndarray, candidates: np.ndarray, query: int, paper: int, metric: str = "euclidean"
) -> tuple[int, int]:
    """(papers strictly nearer than ``paper``, papers at most as near) among the candidates other than the query."""
    vectors = vectors.astype(np.float64)  # float32 norms of a row and of a block may round differently
    others = candidates[candidates != query]
    if metric == "cosine":
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        distance = 1.0 - unit[others] @ unit[query]
        target = 1.0 - unit[paper] @ unit[query]
    else:
        distance = np.linalg.norm(vectors[others] - vectors[query], axis=1)
        target = np.linalg.norm(vectors[paper] - vectors[query])
    eps = 1e-9 * max(1.0, float(np.abs(distance).max()))
    return int((distance < target - eps).sum()), int((distance <= target + eps).sum())


def assert_ranks(triplets: Triplets, vectors: np.ndarray, candidates: np.ndarray, metric: str = "euclidean") -> None:
    """Every positive / hard negative sits in its rank range of a brute-force ranking of the same vectors."""
    stats = triplets.stats
    (a1, b1), (a2, b2) = stats.positive_ranks_used, stats.hard_negative_ranks_used
    for q, p, neg, hard in zip(triplets.query, triplets.positive, triplets.negative, triplets.hard):
        nearer, at_most = brute_force_rank_bounds(vectors, candidates, q, p, metric)
        assert nearer <= b1 - 1 and at_most >= a1 + 1, (
            f"positive {p} of {q} at ranks [{nearer}, {at_most}) not in [{a1}, {b1})"
        )
        nearer, at_most = brute_force_rank_bounds(vectors, candidates, q, neg, metric)
        if hard:
            assert nearer <= b2 - 1 and at_most >= a2 + 1, f"hard negative {neg} of {q} not in [{a2}, {b2})"
        else:
            assert nearer >= b1, f"easy negative {neg} of {q} is among its {b1} nearest"


def test_planted_communities(caplog):
    graph, label = planted_graph()
    vectors = citation_graph_embedding(graph, 8, seed=1)  # the sampler's own embedding for seed=1
    triplets = sample_scincl_triplets(
        graph, config=SciNCLConfig(positive_ranks=(2, 7), hard_negative_ranks=(150, 152), embedding_dim=8), seed=1
    )
    stats = triplets.stats
    assert isinstance(triplets, Triplets) and isinstance(stats, SciNCLStats)
    candidates = np.nonzero(np.isfinite(vectors).all(axis=1))[0]
    assert stats.candidates == len(candidates) == 160 and stats.ranks_adjusted == "no"
    assert len(triplets) == 5 * 160 and stats.hard_negatives == 2 * 160 and stats.queries_used == 160
    # Each query: 5 distinct positives (all of ranks 2..6), negatives 3 easy then 2 hard.
    assert all(len(set(triplets.positive[triplets.query == q])) == 5 for q in range(160))
    assert_ranks(triplets, vectors, candidates)
    # The embedding recovers the planted structure: near ranks share the community, far ranks do not.
    q, p, n, hard = triplets.query, triplets.positive, triplets.negative, triplets.hard
    assert (label[p] == label[q]).mean() > 0.95
    assert (label[n[hard]] != label[q[hard]]).mean() > 0.95
    assert (label[n[~hard]] == label[q[~hard]]).mean() < 0.4  # easy negatives are random: about 1 in 4


def test_real_cacm_graph_ranks_text_and_scaled_ranges(cacm_graph, cacm_vectors):
    triplets = sample_scincl_triplets(cacm_graph, vectors=cacm_vectors, seed=0)
    stats = triplets.stats
    has_vector = np.isfinite(cacm_vectors).all(axis=1)
    candidates = np.nonzero(cacm_graph.has_text & has_vector)[0]
    # CACM: 2,191 linked-or-abstract papers, 1,586 with an abstract, 1,144 of those with a link.
    assert stats.candidates == len(candidates) == 1144
    assert stats.queries == 1586 and stats.queries_without_vector == 442 and stats.queries_used == 1144
    assert len(triplets) == 5 * 1144 and stats.slots_without_negative == 0
    # 1,143 other candidates < 4,000: ranges scaled (starts x 1143/4000), widths kept, and reported.
    assert stats.ranks_adjusted == "scaled"
    assert stats.positive_ranks_requested == (20, 25) and stats.positive_ranks_used == (5, 10)
    assert stats.hard_negative_ranks_used == (1141, 1143)
    g = cacm_graph
    assert (
        g.has_text[triplets.query].all()
        and g.has_text[triplets.positive].all()
        and g.has_text[triplets.negative].all()
    )
    assert (triplets.negative != triplets.query).all() and (triplets.positive != triplets.negative).all()
    sample = np.isin(triplets.query, triplets.query[::97])  # brute-force check on a spread of queries
    sub = Triplets(
        g, triplets.query[sample], triplets.positive[sample], triplets.negative[sample], triplets.hard[sample], stats
    )
    assert len(sub) > 50
    assert_ranks(sub, cacm_vectors, candidates)
    # Positives are graph-near, hard negatives graph-far: share of each within two hops of the query.
    near = np.array(
        [p in set(g.cited(q)) | set(g.two_hop(q).tolist()) for q, p in zip(triplets.query, triplets.positive)]
    )
    far = np.array(
        [x in set(g.cited(q)) | set(g.two_hop(q).tolist()) for q, x in zip(triplets.query, triplets.negative)]
    )
    assert near.mean() > 0.2 and far[triplets.hard].mean() < 0.01


def test_nearest_keeps_the_ranges_meaning_on_small_graphs(cacm_graph, cacm_vectors):
    g = cacm_graph
    nearest = sample_scincl_triplets(g, config=SciNCLConfig(rank_overflow="nearest"), vectors=cacm_vectors, seed=0)
    scaled = sample_scincl_triplets(g, config=SciNCLConfig(rank_overflow="scale"), vectors=cacm_vectors, seed=0)
    stats = nearest.stats
    # 1,143 other candidates: positives from the top ranks, hard negatives from the nearest tenth (int(114.3) = 114).
    assert stats.ranks_adjusted == "nearest"
    assert stats.positive_ranks_used == (0, 5) and stats.hard_negative_ranks_used == (114, 116)
    assert_ranks(
        Triplets(g, nearest.query[::97], nearest.positive[::97], nearest.negative[::97], nearest.hard[::97], stats),
        cacm_vectors,
        np.nonzero(g.has_text & np.isfinite(cacm_vectors).all(axis=1))[0],
    )

    def cited(triplets):
        return np.mean([p in set(g.cited(q)) | set(g.citing(q)) for q, p in zip(triplets.query, triplets.positive)])

    assert cited(nearest) > 2 * cited(scaled)
    # A graph large enough for the paper's ranges uses them in every mode.
    fits = sample_scincl_triplets(
        g, config=SciNCLConfig(hard_negative_ranks=(998, 1000), rank_overflow="nearest"), vectors=cacm_vectors, seed=0
    )
    assert fits.stats.ranks_adjusted == "no" and fits.stats.positive_ranks_used == (20, 25)


def test_clip_and_error_on_small_graphs(cacm_graph, cacm_vectors):
    clipped = sample_scincl_triplets(
        cacm_graph, config=SciNCLConfig(rank_overflow="clip"), vectors=cacm_vectors, seed=0
    )
    assert clipped.stats.ranks_adjusted == "clipped"
    assert clipped.stats.positive_ranks_used == (20, 25) and clipped.stats.hard_negative_ranks_used == (1141, 1143)
    with pytest.raises(ValueError, match="exceed the 1143 candidates"):
        sample_scincl_triplets(cacm_graph, config=SciNCLConfig(rank_overflow="error"), vectors=cacm_vectors)
    fits = sample_scincl_triplets(
        cacm_graph,
        config=SciNCLConfig(hard_negative_ranks=(998, 1000), rank_overflow="error"),
        vectors=cacm_vectors,
        seed=0,
    )
    assert fits.stats.ranks_adjusted == "no" and fits.stats.hard_negative_ranks_used == (998, 1000)


def test_excluded_test_papers_never_appear(cacm_graph):
    rng = np.random.default_rng(0)
    with_text = np.nonzero(cacm_graph.has_text)[0]
    test_papers = rng.choice(with_text, size=300, replace=False)
    triplets = sample_scincl_triplets(
        cacm_graph, config=SciNCLConfig(embedding_dim=DIM), exclude=cacm_graph.ids[test_papers], seed=0
    )
    used = np.concatenate([triplets.query, triplets.positive, triplets.negative])
    assert not np.isin(used, test_papers).any()
    assert triplets.stats.excluded_papers == 300 and triplets.stats.queries_excluded == 300
    assert len(triplets) > 0
    # The computed embedding is built without the excluded papers' links (no leakage through the graph).
    vectors = citation_graph_embedding(cacm_graph, DIM, exclude=test_papers, seed=0)
    assert np.isnan(vectors[test_papers]).all()
    candidates = np.nonzero(cacm_graph.has_text & np.isfinite(vectors).all(axis=1))[0]
    assert triplets.stats.candidates == len(candidates)
    sample = np.isin(triplets.query, triplets.query[::131])
    assert_ranks(
        Triplets(
            cacm_graph,
            *(a[sample] for a in (triplets.query, triplets.positive, triplets.negative, triplets.hard)),
            triplets.stats,
        ),
        vectors,
        candidates,
    )


def test_same_seed_same_triplets(cacm_graph, cacm_vectors):
    first = sample_scincl_triplets(cacm_graph, config=SciNCLConfig(embedding_dim=DIM), seed=5)
    again = sample_scincl_triplets(cacm_graph, config=SciNCLConfig(embedding_dim=DIM), seed=5)
    other = sample_scincl_triplets(cacm_graph, config=SciNCLConfig(embedding_dim=DIM), seed=6)
    assert all((a == b).all() for a, b in zip(first.ids(), again.ids()))
    assert not all((a == b).all() for a, b in zip(first.ids(), other.ids()))
    # Blocks only bound memory: a tiny block size gives the same triplets.
    small = sample_scincl_triplets(cacm_graph, config=SciNCLConfig(block_size=7), vectors=cacm_vectors, seed=5)
    whole = sample_scincl_triplets(cacm_graph, vectors=cacm_vectors, seed=5)
    assert (small.positive == whole.positive).all() and (small.negative == whole.negative).all()


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_precomputed_vectors_are_honoured(metric):
    # A graph with no links at all: only the given vectors can produce neighbours.
    n = 120
    ids = [f"x{i:03d}" for i in range(n)]
    graph = CitationGraph.from_edges(np.array([], dtype=str), np.array([], dtype=str), papers_with_text=ids)
    vectors = np.random.default_rng(3).standard_normal((n, 5))
    triplets = sample_scincl_triplets(
        graph,
        config=SciNCLConfig(metric=metric, positive_ranks=(0, 5), hard_negative_ranks=(100, 102)),
        vectors=vectors,
        seed=0,
    )
    assert triplets.stats.embedding == "precomputed-5" and len(triplets) == 5 * n
    assert_ranks(triplets, vectors, np.arange(n), metric)
    # Positives are exactly the 5 brute-force nearest (no ties among random floats).
    q = 17
    if metric == "cosine":
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        distance = 1 - unit @ unit[q]
    else:
        distance = np.linalg.norm(vectors - vectors[q], axis=1)
    distance[q] = np.inf
    assert set(triplets.positive[triplets.query == q]) == set(np.argsort(distance)[:5].tolist())


def test_align_vectors_and_papers_without_vector():
    graph = CitationGraph.from_edges(["a", "b"], ["b", "c"], papers_with_text=["a", "b", "c", "d"])
    aligned = align_vectors(graph, ["c", "a", "zz", "b"], np.arange(8.0).reshape(4, 2))
    assert aligned[graph.index_of("a")].tolist() == [2.0, 3.0] and aligned[graph.index_of("c")].tolist() == [0.0, 1.0]
    assert np.isnan(aligned[graph.index_of("d")]).all()
    one = SciNCLConfig(
        positives=1, positive_ranks=(0, 1), hard_negatives=1, hard_negative_ranks=(1, 2), easy_negatives=0
    )
    triplets = sample_scincl_triplets(graph, config=one, vectors=aligned, seed=0)
    assert triplets.stats.queries_without_vector == 1 and triplets.stats.candidates == 3
    assert "d" not in set(np.concatenate(triplets.ids()).tolist())


def test_clear_errors_for_bad_arguments(cacm_graph, cacm_vectors):
    g, v = cacm_graph, cacm_vectors
    cases = [
        (dict(positive_ranks=(25, 20)), "0 <= start < end"),
        (dict(positive_ranks=(-1, 4)), "0 <= start < end"),
        (dict(positive_ranks=(20, 23)), "fewer than the 5 requested"),
        (dict(hard_negative_ranks=(10, 12)), "overlap or follow"),
        (dict(hard_negative_ranks=(3998,)), r"\(start, end\) pair"),
        (dict(positives=4), "must equal hard_negatives"),
        (dict(metric="manhattan"), "unknown metric"),
        (dict(rank_overflow="wrap"), "unknown rank_overflow"),
        (dict(block_size=0), "block_size"),
        (dict(vectors=v[:-1]), r"vectors must have shape \(2191, d\)"),
        (dict(vectors=v[:, 0]), r"vectors must have shape"),
        (dict(embedding_dim=0), "embedding dim must be a positive integer"),
        (dict(embedding_dim=2.5), "embedding dim must be a positive integer"),
    ]
    for kwargs, message in cases:
        vectors = kwargs.pop("vectors", None if "embedding_dim" in kwargs else v)
        with pytest.raises(ValueError, match=message):
            sample_scincl_triplets(g, config=SciNCLConfig(**kwargs), vectors=vectors)
    with pytest.raises(KeyError, match="not in the graph"):
        sample_scincl_triplets(g, vectors=v, exclude=["no-such-paper"])
    tiny, _ = planted_graph(communities=1, size=6)
    with pytest.raises(ValueError, match="too few for a positive range"):
        sample_scincl_triplets(tiny, config=SciNCLConfig(embedding_dim=2))


# ---------------------------------------------------------------------- the IVF (approximate kNN) index


@pytest.fixture(scope="module")
def clustered() -> tuple[CitationGraph, np.ndarray, np.ndarray]:
    """4,000 linkless papers with vectors in 40 Gaussian clusters of ~100, and their exact distance matrix."""
    n = 4000
    rng = np.random.default_rng(0)
    centres = 2.0 * rng.standard_normal((40, 16))
    vectors = centres[rng.integers(0, 40, n)] + rng.standard_normal((n, 16))
    ids = [f"x{i:04d}" for i in range(n)]
    graph = CitationGraph.from_edges(np.array([], dtype=str), np.array([], dtype=str), papers_with_text=ids)
    squared = np.einsum("ij,ij->i", vectors, vectors)
    distance = np.sqrt(np.maximum(squared[:, None] + squared[None, :] - 2.0 * vectors @ vectors.T, 0.0))
    np.fill_diagonal(distance, np.inf)
    return graph, vectors, distance


# Probe 19 of the 63 cells (round(sqrt(4000))), about 30 % of the candidates: approximate, yet deep enough for
# rank 600.
IVF = dict(index="ivf", hard_negative_ranks=(598, 600), ivf_nprobe=19)


def true_ranks(distance: np.ndarray, query: np.ndarray, paper: np.ndarray) -> np.ndarray:
    """0-based exact rank of each ``paper`` among the other papers of its ``query`` (strictly nearer ones)."""
    return (distance[query] < distance[query, paper][:, None]).sum(axis=1)


def numpy_rank_sets(vectors: np.ndarray, ranges: list[tuple[int, int]]) -> list[np.ndarray]:
    """The oracle: for each range, each query's papers at those ranks of a float64 numpy argsort (sorted ids)."""
    out = [np.empty((len(vectors), hi - lo), dtype=np.int64) for lo, hi in ranges]
    for start in range(0, len(vectors), 250):
        block = np.arange(start, min(start + 250, len(vectors)))
        distance = ((vectors[block, None, :] - vectors[None, :, :]) ** 2).sum(axis=2)
        distance[np.arange(len(block)), block] = np.inf
        order = np.argsort(distance, axis=1, kind="stable")
        for result, (lo, hi) in zip(out, ranges):
            result[block] = np.sort(order[:, lo:hi], axis=1)
    return out


def per_query(triplets: Triplets, hard: bool, width: int) -> np.ndarray:
    """Each query's positives (``hard=False``) or hard negatives, as a sorted row per query in query order."""
    keep = triplets.hard if hard else np.ones(len(triplets), dtype=bool)
    values = (triplets.negative if hard else triplets.positive)[keep]
    order = np.argsort(triplets.query[keep], kind="stable")
    return np.sort(values[order].reshape(-1, width), axis=1)


def test_exact_faiss_search_cuts_where_a_float64_numpy_ranking_does(clustered):
    graph, vectors, _ = clustered
    triplets = sample_scincl_triplets(
        graph, config=SciNCLConfig(hard_negative_ranks=(598, 600)), vectors=vectors, seed=0
    )
    assert triplets.stats.index == "exact" and len(triplets) == 5 * len(vectors)
    positives, hards = numpy_rank_sets(vectors, [(20, 25), (598, 600)])
    assert (per_query(triplets, False, 5) == positives).all()
    assert (per_query(triplets, True, 2) == hards).all()


def test_ivf_agrees_with_exact_search(clustered):
    graph, vectors, distance = clustered
    n = len(vectors)
    # Ranks [0, 25) as the 25 positives: every query's whole IVF top-25 comes back.
    top = sample_scincl_triplets(
        graph,
        config=SciNCLConfig(positives=25, positive_ranks=(0, 25), easy_negatives=23, **IVF),
        vectors=vectors,
        seed=0,
    )
    stats = top.stats
    assert stats.index == "ivf" and stats.index_params["cells"] == 63 and stats.index_params["nprobe"] == 19
    ivf_top = per_query(top, False, 25)
    exact_top = np.argpartition(distance, 24, axis=1)[:, :25]
    recall = np.mean([len(np.intersect1d(a, b)) for a, b in zip(ivf_top, exact_top)]) / 25
    assert recall >= 0.9

    triplets = sample_scincl_triplets(graph, config=SciNCLConfig(**IVF), vectors=vectors, seed=0)
    assert len(triplets) == 5 * n and triplets.stats.hard_negatives == 2 * n
    positive_rank = true_ranks(distance, triplets.query, triplets.positive)
    assert ((positive_rank >= 20) & (positive_rank < 25)).mean() >= 0.9
    # A probed subset can only hide nearer papers: the IVF rank never exceeds the true rank, so hard negatives
    # sit at true rank >= 598, and not far beyond when the probes cover most of the neighbourhood.
    hard_rank = true_ranks(distance, triplets.query[triplets.hard], triplets.negative[triplets.hard])
    assert (hard_rank >= 598).all() and np.median(hard_rank) <= 700
    # Easy negatives keep their rule: never among the query's 25 nearest (by the IVF ranking).
    easy = ~triplets.hard
    for q, x in zip(triplets.query[easy][::50], triplets.negative[easy][::50]):
        assert x not in ivf_top[q] and x != q


def test_ivf_probing_every_cell_is_exact(clustered):
    graph, vectors, _ = clustered
    exact = sample_scincl_triplets(graph, config=SciNCLConfig(hard_negative_ranks=(598, 600)), vectors=vectors, seed=2)
    full = sample_scincl_triplets(
        graph,
        config=SciNCLConfig(hard_negative_ranks=(598, 600), index="ivf", ivf_cells=20, ivf_nprobe=20),
        vectors=vectors,
        seed=2,
    )
    assert full.stats.index_params["nprobe"] == full.stats.index_params["cells"] == 20
    assert (per_query(exact, False, 5) == per_query(full, False, 5)).all()
    assert (per_query(exact, True, 2) == per_query(full, True, 2)).all()


def test_ivf_is_deterministic_by_seed(clustered):
    graph, vectors, _ = clustered
    first = sample_scincl_triplets(graph, config=SciNCLConfig(**IVF), vectors=vectors, seed=7)
    again = sample_scincl_triplets(graph, config=SciNCLConfig(**IVF), vectors=vectors, seed=7)
    other = sample_scincl_triplets(graph, config=SciNCLConfig(**IVF), vectors=vectors, seed=8)
    assert all((a == b).all() for a, b in zip(first.ids(), again.ids()))
    assert first.stats.index_params == again.stats.index_params
    assert not all((a == b).all() for a, b in zip(first.ids(), other.ids()))
    assert first.stats.index_params["kmeans_seed"] != other.stats.index_params["kmeans_seed"]
    # Blocks bound memory without changing the result.
    small = sample_scincl_triplets(graph, config=SciNCLConfig(block_size=33, **IVF), vectors=vectors, seed=7)
    assert (small.positive == first.positive).all() and (small.negative == first.negative).all()


def test_ivf_gives_the_same_triplets_with_any_number_of_faiss_threads(clustered):
    """Ranks on different machines (or ranks of one job) with other core counts must agree: k-means training
    and the search are split over OpenMP threads, and the result may not depend on how."""
    import faiss

    graph, vectors, _ = clustered
    before = faiss.omp_get_max_threads()
    runs = []
    try:
        for threads in (1, 2, 3):
            faiss.omp_set_num_threads(threads)
            runs.append(sample_scincl_triplets(graph, config=SciNCLConfig(**IVF), vectors=vectors, seed=7))
    finally:
        faiss.omp_set_num_threads(before)
    for other in runs[1:]:
        assert other.stats.index_params == runs[0].stats.index_params
        assert (other.positive == runs[0].positive).all() and (other.negative == runs[0].negative).all()


def test_ivf_with_exclusions_and_other_metrics(clustered):
    graph, vectors, _ = clustered
    test_papers = np.arange(0, len(vectors), 10)
    for metric in ("cosine", "dot"):
        triplets = sample_scincl_triplets(
            graph, config=SciNCLConfig(metric=metric, **IVF), vectors=vectors, exclude=test_papers, seed=0
        )
        used = np.concatenate([triplets.query, triplets.positive, triplets.negative])
        assert not np.isin(used, test_papers).any() and (triplets.positive != triplets.query).all()
        assert triplets.stats.index == "ivf" and len(triplets) == 5 * (len(vectors) - len(test_papers))
        if (
            metric == "cosine"
        ):  # near ranks survive: positives are among each query's 40 cosine-nearest (of the non-excluded)
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            cosine = 1.0 - unit @ unit.T
            cosine[:, test_papers] = np.inf
            np.fill_diagonal(cosine, np.inf)
            assert (true_ranks(cosine, triplets.query, triplets.positive) < 40).mean() > 0.95


def test_default_index_is_exact(cacm_graph, cacm_vectors):
    triplets = sample_scincl_triplets(cacm_graph, vectors=cacm_vectors, seed=0)
    assert triplets.stats.index == "exact" and set(triplets.stats.index_params) == {"block_size"}


def test_ivf_parameter_errors(clustered):
    graph, vectors, _ = clustered
    cases = [
        (dict(index="hnsw"), "unknown index 'hnsw'"),
        (dict(index="auto"), "unknown index 'auto'"),
        (dict(index="ivf", ivf_cells=0), "ivf_cells must be a positive integer"),
        (dict(index="ivf", ivf_nprobe=-1), "ivf_nprobe must be a positive integer"),
        (dict(index="ivf", ivf_nprobe=2.5), "ivf_nprobe must be a positive integer"),
        (dict(index="ivf", ivf_nprobe=True), "ivf_nprobe must be a positive integer"),
        (dict(ivf_nprobe=4), "apply to index='ivf'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            sample_scincl_triplets(
                graph, config=SciNCLConfig(hard_negative_ranks=(598, 600), **kwargs), vectors=vectors
            )


def test_ivf_probes_more_cells_for_queries_whose_cells_are_too_small(clustered):
    # 400 cells of about 10 papers, 1 probed: no query has 600 others there, so every query is searched
    # again with more probes until its 600 ranks are filled, and no rank is left empty.
    graph, vectors, _ = clustered
    triplets = sample_scincl_triplets(
        graph,
        config=SciNCLConfig(hard_negative_ranks=(598, 600), index="ivf", ivf_cells=400, ivf_nprobe=1),
        vectors=vectors,
        seed=0,
    )
    assert len(triplets) == 5 * len(vectors) and (triplets.negative >= 0).all()
