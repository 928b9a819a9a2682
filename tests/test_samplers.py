"""SPECTER / SPECTROID samplers: the papers' rules on real graphs (CACM, SPECTER sample) and by statistics."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import shared_data
from scipy.stats import chisquare

from sciembed.data.graph import CitationGraph
from sciembed.data.samplers import sample_specter_triplets, sample_spectroid_triplets

SAMPLERS = [sample_specter_triplets, sample_spectroid_triplets]


def assert_specter_rules(graph: CitationGraph, triplets) -> None:
    q, p, n = triplets.query, triplets.positive, triplets.negative
    assert len(q) > 0
    assert graph.has_text[q].all() and graph.has_text[p].all() and graph.has_text[n].all()
    assert graph.has_edge(q, p).all(), "every positive is cited by its query"
    assert not graph.has_edge(q, n).any(), "no negative is cited by its query"
    assert (n != q).all()
    for query, negative in zip(q[triplets.hard], n[triplets.hard]):
        assert negative in set(graph.two_hop(query).tolist()), "a hard negative is two hops away"


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_rules_on_the_real_cacm_graph(cacm_graph, sampler):
    triplets = sampler(cacm_graph, seed=3)
    assert_specter_rules(cacm_graph, triplets)
    stats = triplets.stats
    assert stats.queries == int(cacm_graph.has_text.sum())
    assert stats.triplets == len(triplets) == 5 * stats.queries_used
    assert stats.hard_negatives == int(triplets.hard.sum()) > 0
    # Per query: 2 hard slots, each hard or (when the query has no two-hop paper with text) easy.
    assert stats.hard_negatives + stats.hard_slots_filled_easy == 2 * stats.queries_used
    # A query whose two-hop pool (with text) is non-empty never loses its hard slots.
    counts = np.bincount(triplets.query[triplets.hard], minlength=cacm_graph.num_papers)
    for query in np.unique(triplets.query):
        pool = cacm_graph.two_hop(query)
        assert counts[query] == (2 if cacm_graph.has_text[pool].any() else 0)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_seed_same_triplets_other_seed_other_triplets(cacm_graph, sampler):
    first, again, other = sampler(cacm_graph, seed=11), sampler(cacm_graph, seed=11), sampler(cacm_graph, seed=12)
    assert all(np.array_equal(a, b) for a, b in zip(first.ids(), again.ids()))
    assert not np.array_equal(first.negative, other.negative)
    assert not np.array_equal(first.positive, other.positive)


def test_real_specter_sample():
    folder = shared_data("specter", "training")
    data = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    metadata = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    # count 5 = the query cites the candidate (count 1 = cited by a cited paper, not an edge we know).
    edges = [(q, c) for q, candidates in data.items() for c, v in candidates.items() if v["count"] == 5]
    assert len(edges) == 85
    graph = CitationGraph.from_edges([q for q, _ in edges], [c for _, c in edges], papers_with_text=list(metadata))
    assert graph.stats.papers_with_text == 17
    # The sample's cited papers have no metadata, so with the text rule no triplet may be emitted.
    strict = sample_specter_triplets(graph)
    assert len(strict) == 0
    assert strict.stats.queries == 17 and strict.stats.queries_without_positive == 17

    # Treating every paper as having text, the citation rules still hold on the real ids.
    everything = CitationGraph.from_edges([q for q, _ in edges], [c for _, c in edges])
    triplets = sample_specter_triplets(everything, queries=list(data), seed=0)
    assert_specter_rules(everything, triplets)
    assert triplets.stats.queries_used == 20 and len(triplets) == 100
    query_ids, positive_ids, negative_ids = triplets.ids()
    assert all(data[q][p]["count"] == 5 for q, p in zip(query_ids, positive_ids))
    assert all(data[q].get(n, {}).get("count") != 5 for q, n in zip(query_ids, negative_ids))
    # No cited paper of the sample cites anything, so every hard slot falls back to an easy negative.
    assert triplets.stats.hard_negatives == 0 and triplets.stats.hard_slots_filled_easy == 40
    dataset = triplets.to_dataset()
    assert dataset.column_names == ["query_id", "positive_id", "negative_id", "hard"] and len(dataset) == 100


def _skewed_graph() -> tuple[CitationGraph, int, np.ndarray]:
    """Query 0 cites papers 1..4; paper k (1..4) is also cited by 3*k - 1 other papers."""
    citing, cited = [0, 0, 0, 0], [1, 2, 3, 4]
    other = 5
    for k in range(1, 5):
        for _ in range(3 * k - 1):
            citing.append(other)
            cited.append(k)
            other += 1
    graph = CitationGraph.from_indices(np.array(citing), np.array(cited), other)
    return graph, 0, np.array([1, 2, 3, 4])


def test_spectroid_positives_follow_in_citation_counts():
    graph, query, cited = _skewed_graph()
    assert graph.in_degree[cited].tolist() == [3, 6, 9, 12]
    # Many slots of one query: every draw is keyed by (query, slot), so asking a query twice repeats its draws.
    draws = sample_spectroid_triplets(graph, queries=[query], triplets_per_query=20_000, hard_ratio=0.0, seed=5)
    observed = np.array([(draws.positive == c).sum() for c in cited])
    expected = len(draws) * graph.in_degree[cited] / graph.in_degree[cited].sum()
    assert chisquare(observed, expected).pvalue > 1e-3
    # The same test rejects SPECTER's uniform positives: the check has power.
    uniform = sample_specter_triplets(graph, queries=[query], triplets_per_query=20_000, hard_ratio=0.0, seed=5)
    observed_uniform = np.array([(uniform.positive == c).sum() for c in cited])
    assert chisquare(observed_uniform, expected).pvalue < 1e-6
    assert chisquare(observed_uniform).pvalue > 1e-3


def test_hard_negatives_are_uniform_over_the_distinct_two_hop_papers():
    # 0 cites 1, 2, 3; all three cite 10 (reached by 3 paths), only 1 cites 11 and 12.
    edges = [(0, 1), (0, 2), (0, 3), (1, 10), (2, 10), (3, 10), (1, 11), (1, 12), (2, 3)]
    graph = CitationGraph.from_indices(np.array([e[0] for e in edges]), np.array([e[1] for e in edges]), 13)
    assert graph.two_hop(0).tolist() == [10, 11, 12]  # 3 is cited by 0 itself: excluded
    triplets = sample_specter_triplets(graph, queries=[0], triplets_per_query=15_000, hard_ratio=1.0, seed=2)
    hard = triplets.negative[triplets.hard]
    assert len(hard) == 15000
    observed = np.array([(hard == x).sum() for x in (10, 11, 12)])
    assert chisquare(observed).pvalue > 1e-3  # path-weighted draws would give 10 three times as often


def test_hard_ratio_and_triplets_per_query(cacm_graph):
    none = sample_specter_triplets(cacm_graph, hard_ratio=0.0, triplets_per_query=3, seed=0)
    assert none.stats.hard_negatives == 0 and len(none) == 3 * none.stats.queries_used
    assert_specter_rules(cacm_graph, none)
    every = sample_specter_triplets(cacm_graph, hard_ratio=1.0, triplets_per_query=2, seed=0)
    assert every.stats.hard_negatives + every.stats.hard_slots_filled_easy == 2 * every.stats.queries_used
    with pytest.raises(ValueError, match="hard_ratio"):
        sample_specter_triplets(cacm_graph, hard_ratio=1.5)
    with pytest.raises(ValueError, match="triplets_per_query"):
        sample_specter_triplets(cacm_graph, triplets_per_query=0)
    with pytest.raises(KeyError, match="no-such-paper"):
        sample_specter_triplets(cacm_graph, queries=["no-such-paper"])


def test_queries_without_text_or_positive_are_counted_not_dropped_silently():
    graph = CitationGraph.from_edges(["a", "b", "c"], ["b", "c", "z"], papers_with_text=["a", "b", "c", "d"])
    triplets = sample_specter_triplets(graph, queries=["a", "b", "c", "d", "z"], seed=0)
    stats = triplets.stats
    assert stats.queries == 5
    assert stats.queries_without_text == 1  # z
    assert stats.queries_without_positive == 2  # c cites only z (no text); d cites nothing
    assert set(triplets.ids()[0]) == {"a", "b"}
