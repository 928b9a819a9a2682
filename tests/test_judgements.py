"""Judgements made from citation data: SciDocs' cite protocol and CACM's category labels."""

from __future__ import annotations

from sciembed.data.judgements import cacm_categories, cite_qrels


def test_cite_qrels_follow_scidocs_protocol():
    papers = {str(i): {"paper_id": str(i), "title": f"paper {i}"} for i in range(100)}
    neighbours = {"1": {str(i) for i in range(10, 18)}, "2": {"3", "missing"}, "missing": {"1"}, "4": {"missing"}}
    qrels = cite_qrels(papers, neighbours, seed=3)
    assert sorted(qrels) == ["1", "2"]  # "missing" has no text; "4" has no linked paper with text
    for query, judged in qrels.items():
        relevant = [p for p, label in judged.items() if label == 1]
        unlinked = [p for p, label in judged.items() if label == 0]
        assert set(relevant) <= neighbours[query] and len(relevant) == min(
            5, len(set(neighbours[query]) & set(papers))
        )
        assert len(unlinked) == 25 and not set(unlinked) & (neighbours[query] | {query})
    assert cite_qrels(papers, neighbours, seed=3) == qrels and cite_qrels(papers, neighbours, seed=4) != qrels
    assert sorted(cite_qrels(papers, neighbours, query_ids=["2"], seed=3)) == ["2"]


def test_cacm_categories_take_the_top_class_of_the_first_category_of_classes_large_enough():
    papers = [{"paper_id": f"a{i}", "categories": "3.7, 4.2"} for i in range(6)]
    papers += [{"paper_id": f"b{i}", "categories": "5.1"} for i in range(5)]  # too few for a stratified split
    papers += [{"paper_id": "c", "categories": ""}, {"paper_id": "d"}]
    assert cacm_categories(papers) == {f"a{i}": 3 for i in range(6)}
    assert cacm_categories(papers, min_papers=5) == {
        **{f"a{i}": 3 for i in range(6)},
        **{f"b{i}": 5 for i in range(5)},
    }
