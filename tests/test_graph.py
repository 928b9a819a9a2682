"""CitationGraph: build counts, neighbourhoods against brute force, and the real CACM graph."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_data

from sciembed.data.graph import CitationGraph


def test_from_edges_counts_self_duplicate_and_dangling():
    citing = ["a", "a", "a", "b", "b", "c", "c", "x"]
    cited = ["b", "b", "a", "c", "zz", "a", "yy", "a"]
    graph = CitationGraph.from_edges(citing, cited, ids=["a", "b", "c", "d"], papers_with_text=["a", "b", "d"])
    stats = graph.stats
    assert stats.edges_given == 8
    assert stats.self_citations == 1  # a -> a
    assert stats.duplicate_edges == 1  # second a -> b
    assert stats.dangling_references == 2  # b -> zz, c -> yy
    assert stats.dangling_papers == 2
    assert stats.unknown_citing == 1  # x -> a
    assert stats.citations == 6
    # Unknown papers stay in the graph, without text; d (text, no links) is kept as a paper.
    assert graph.ids.tolist() == ["a", "b", "c", "d", "x", "yy", "zz"]
    assert graph.has_text.tolist() == [True, True, False, True, False, False, False]
    a, b, c = graph.index_of(["a", "b", "c"])
    assert graph.cited(a).tolist() == [b]
    assert graph.citing(a).tolist() == sorted([c, graph.index_of("x")])


def test_drop_dangling_removes_unknown_ends():
    graph = CitationGraph.from_edges(["a", "b", "x"], ["b", "zz", "a"], ids=["a", "b"], drop_dangling=True)
    assert graph.ids.tolist() == ["a", "b"]
    assert graph.stats.dropped_dangling == 2
    assert graph.num_citations == 1


def test_from_undirected_pairs_stores_both_directions_and_counts_reversed_repeats():
    graph = CitationGraph.from_undirected_pairs(["1", "2", "2", "3"], ["2", "1", "2", "1"])
    assert graph.stats.duplicate_edges == 1  # (2, 1) repeats (1, 2)
    assert graph.stats.self_citations == 1
    assert graph.stats.citations == 4  # links 1-2 and 1-3, each way
    one = graph.index_of("1")
    assert graph.ids[graph.cited(one)].tolist() == ["2", "3"]
    assert graph.ids[graph.citing(one)].tolist() == ["2", "3"]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="differ in length"):
        CitationGraph.from_edges(["a"], ["b", "c"])
    graph = CitationGraph.from_edges(["a"], ["b"])
    with pytest.raises(KeyError, match="'nope'"):
        graph.index_of(["a", "nope"])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        CitationGraph.from_indices(np.array([0]), np.array([3]), 3)


def test_neighbourhoods_match_brute_force_on_a_random_graph():
    rng = np.random.default_rng(7)
    n = 60
    citing, cited = rng.integers(0, n, 400), rng.integers(0, n, 400)
    graph = CitationGraph.from_indices(citing, cited, n)
    dense = np.zeros((n, n), dtype=int)
    for s, d in zip(citing, cited):
        if s != d:
            dense[s, d] = 1
    assert graph.stats.duplicate_edges == int((citing != cited).sum() - dense.sum())
    assert np.array_equal(graph.adjacency.toarray(), dense)
    assert np.array_equal(graph.out_degree, dense.sum(1))
    assert np.array_equal(graph.in_degree, dense.sum(0))
    paths = dense @ dense
    assert np.array_equal(graph.two_hop_counts().toarray(), paths)
    cocited = dense.T @ dense
    np.fill_diagonal(cocited, 0)
    assert np.array_equal(graph.cocitation_counts().toarray(), cocited)
    for block in (7, 60, 1000):  # the row-block pairs are the upper triangle, whatever the block
        a, b, count = graph.cocited_pairs(block=block)
        upper = np.triu(cocited, k=1)
        assert (a < b).all() and np.array_equal(count, upper[a, b]) and len(a) == np.count_nonzero(upper)
        assert np.array_equal(np.lexsort((b, a)), np.arange(len(a)))
    for i in range(n):
        assert graph.cited(i).tolist() == np.nonzero(dense[i])[0].tolist()
        assert graph.citing(i).tolist() == np.nonzero(dense[:, i])[0].tolist()
        expected = (
            {x for c in np.nonzero(dense[i])[0] for x in np.nonzero(dense[c])[0]} - {i} - set(np.nonzero(dense[i])[0])
        )
        assert graph.two_hop(i).tolist() == sorted(expected)
        j = (i * 7) % n
        assert graph.cocitation(i, j) == cocited[i, j]
    pairs = rng.integers(0, n, (500, 2))
    assert np.array_equal(graph.has_edge(pairs[:, 0], pairs[:, 1]), dense[pairs[:, 0], pairs[:, 1]] == 1)


def test_real_cacm_citation_graph():
    from sciembed.data.smart import CACM_CITATION, read_smart_collection

    collection = read_smart_collection(shared_data("cacm"), skip_invalid=True)
    links = sorted(collection.links[CACM_CITATION])
    with_text = [p["paper_id"] for p in collection.papers]
    graph = CitationGraph.from_undirected_pairs(
        [a for a, _ in links], [b for _, b in links], papers_with_text=with_text, ids=with_text
    )
    # 2,711 distinct pairs: the README's 2,720 links less the 9 that name an id without a record.
    assert len(links) == 2711
    assert graph.stats.citations == 2 * 2711
    assert graph.stats.self_citations == graph.stats.duplicate_edges == 0  # the reader already removed them
    assert graph.stats.dangling_references == 0
    assert graph.num_papers == len(with_text) == graph.stats.papers_with_text
    assert np.array_equal(graph.in_degree, graph.out_degree)  # undirected: symmetric
    neighbours = collection.neighbours(CACM_CITATION)
    for paper_id in ("1", "1410", "3025"):
        if paper_id in neighbours:
            assert set(graph.ids[graph.cited(graph.index_of(paper_id))]) == neighbours[paper_id]


def test_ids_from_arrow_arrays_lists_and_numpy_give_the_same_graph():
    import pyarrow as pa

    rng = np.random.default_rng(3)
    ids = np.array([f"{i:040x}" for i in rng.integers(0, 2**62, 300)])  # 40-character ids, as Semantic Scholar's
    citing, cited = ids[rng.integers(0, 300, 2000)], ids[rng.integers(0, 300, 2000)]
    from_numpy = CitationGraph.from_edges(citing, cited, papers_with_text=ids[::2])
    from_lists = CitationGraph.from_edges(citing.tolist(), cited.tolist(), papers_with_text=ids[::2].tolist())
    chunked = pa.chunked_array([pa.array(citing[:700]), pa.array(citing[700:])])
    from_arrow = CitationGraph.from_edges(
        chunked, pa.array(cited, pa.large_string()), papers_with_text=pa.array(ids[::2])
    )
    for graph in (from_lists, from_arrow):
        assert graph.ids.tolist() == from_numpy.ids.tolist() == sorted(set(ids.tolist()))
        assert np.array_equal(graph.out_indptr, from_numpy.out_indptr) and np.array_equal(
            graph.out_indices, from_numpy.out_indices
        )
        assert np.array_equal(graph.has_text, from_numpy.has_text) and graph.stats == from_numpy.stats
    # Integer ids number as their decimal strings sort, from Arrow as from Python.
    numbers = CitationGraph.from_edges(pa.array([9, 10, 9]), pa.array([10, 2, 2]))
    assert numbers.ids.tolist() == ["10", "2", "9"] == CitationGraph.from_edges([9, 10, 9], [10, 2, 2]).ids.tolist()
    with pytest.raises(ValueError, match="citing_ids must hold string or integer ids, got Arrow type double"):
        CitationGraph.from_edges(pa.array([1.5]), pa.array(["a"]))


def test_a_graph_holds_its_ids_as_arrow_strings_and_looks_them_up_by_hash():
    rng = np.random.default_rng(4)
    ids = np.array([f"{i:040x}" for i in rng.integers(0, 2**62, 500)])
    graph = CitationGraph.from_edges(ids[rng.integers(0, 500, 3000)], ids[rng.integers(0, 500, 3000)])
    oracle = np.unique(ids)  # the numbering np.unique gives, and the fixed-width array the graph used to hold
    assert graph.ids.nbytes / len(graph.ids) < 49 < oracle.nbytes / len(oracle) == 160
    picks = rng.integers(0, len(oracle), 50)
    assert graph.ids[int(picks[0])] == oracle[picks[0]]
    assert graph.ids[picks].tolist() == oracle[picks].tolist()
    assert graph.ids[::7].tolist() == oracle[::7].tolist()
    mask = rng.random(len(oracle)) < 0.3
    assert graph.ids[mask].tolist() == oracle[mask].tolist()
    assert np.array_equal(np.asarray(graph.ids), oracle) and list(graph.ids) == oracle.tolist()
    assert np.array_equal(graph.index_of(oracle[picks]), picks) and graph.index_of(str(oracle[3])) == 3
    assert np.array_equal(graph.ids.positions([oracle[5], "not-a-paper"]), [5, -1])
    assert np.array_equal(graph.ids.isin(oracle[picks].tolist()), np.isin(oracle, oracle[picks]))
    assert oracle[9] in graph and "not-a-paper" not in graph
    with pytest.raises(KeyError, match="1 paper id\\(s\\) not in the graph, e.g. 'not-a-paper'"):
        graph.index_of([oracle[0], "not-a-paper"])
