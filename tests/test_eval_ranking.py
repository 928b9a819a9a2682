"""Ranking evaluators against their references: pytrec_eval, SciDocs' run-file route, SciRepEval's
scoring (scikit-learn distances), BEIR's exact search, and hand / brute-force computations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import pytrec_eval
from sklearn.metrics.pairwise import cosine_similarity, euclidean_distances

from sciembed.evaluation import ranking
from sciembed.evaluation.ranking import (
    MissingVectorsError,
    proximity_run,
    ranking_metrics,
    reviewer_matching_metrics,
    reviewer_run,
    search_run,
)


def reference_means(qrels, run, measures, relevance_level=1):
    """SciDocs' get_qrel_metrics without its rounding: pytrec_eval, aggregated, x 100."""
    results = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=relevance_level).evaluate(run)
    return {
        measure: 100
        * pytrec_eval.compute_aggregated_measure(measure, [values[measure] for values in results.values()])
        for measure in measures
    }, results


def random_qrels_and_run(rng):
    qrels, run = {}, {}
    for q in range(40):
        query = f"q{q}"
        candidates = [f"d{i}" for i in rng.choice(60, size=rng.integers(3, 25), replace=False)]
        qrels[query] = {c: int(rng.integers(0, 4)) for c in candidates}
        # One decimal: many exact ties, which trec_eval breaks by candidate id.
        run[query] = {c: float(np.round(rng.normal(), 1)) for c in candidates + [f"x{q}"]}
    qrels["q0"] = {c: 0 for c in qrels["q0"]}  # no relevant candidate
    del run["q1"]  # judged, not in the run
    run["unjudged"] = {"d1": 1.0}
    return qrels, run


MEASURES = ["map", "ndcg", "ndcg_cut_10", "ndcg_cut_5", "recall_100", "P_5", "P_10", "recip_rank"]


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_ranking_metrics_equals_pytrec_eval(relevance_level):
    qrels, run = random_qrels_and_run(np.random.default_rng(0))
    expected, results = reference_means(qrels, run, MEASURES, relevance_level)
    got = ranking_metrics(qrels, run, MEASURES, relevance_level=relevance_level)
    for measure in MEASURES:
        assert got.mean[measure] == pytest.approx(expected[measure], abs=1e-9)
        for query in results:
            assert got.per_query[query][measure] == pytest.approx(results[query][measure], abs=1e-12)
    assert set(got.per_query) == set(results) == set(qrels) - {"q1"}
    assert got.num_queries == 39 and got.unevaluated_queries == 1
    assert got.num_candidates == sum(len(run[q]) for q in results)
    # The query without positives counts, with zeros; the judged query missing from the run does not.
    assert all(value == 0 for value in got.per_query["q0"].values())
    without_q0 = {q: v for q, v in qrels.items() if q != "q0"}
    assert ranking_metrics(without_q0, run, ["map"]).mean["map"] > got.mean["map"]


def test_ranking_metrics_equals_hand_computed_ap_and_ndcg():
    qrels = {"q": {"a": 3, "b": 0, "c": 1, "d": 2, "e": 1}}
    # x is unjudged; c and d tie, and trec_eval ranks the larger id first: b, x, d, c, a.
    run = {"q": {"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.5, "x": 0.7}}
    gains = [0, 0, 2, 1, 3]
    dcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(gains))
    ideal = sorted(qrels["q"].values(), reverse=True)
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    for level in (1, 2):
        relevant = sum(v >= level for v in qrels["q"].values())
        hits, precision_sum = 0, 0.0
        for rank, g in enumerate(gains, start=1):
            if g >= level:
                hits += 1
                precision_sum += hits / rank
        got = ranking_metrics(qrels, run, ["map", "ndcg", "P_5"], relevance_level=level)
        assert got.mean["map"] == pytest.approx(100 * precision_sum / relevant, abs=1e-9)
        assert got.mean["ndcg"] == pytest.approx(100 * dcg / idcg, abs=1e-9)
        assert got.mean["P_5"] == pytest.approx(100 * sum(g >= level for g in gains) / 5, abs=1e-9)


def test_ranking_metrics_names_and_errors():
    qrels, run = {"q": {"a": 1, "b": 0}}, {"q": {"a": 0.2, "b": 0.7}}
    got = ranking_metrics(qrels, run, ["ndcg_cut.10", "P.1", "ndcg_cut_10", "num_q"])
    assert set(got.mean) == {"ndcg_cut.10", "P.1", "ndcg_cut_10", "num_q"}
    assert got.mean["ndcg_cut.10"] == got.mean["ndcg_cut_10"] == pytest.approx(100 / math.log2(3))
    assert got.mean["P.1"] == 0 and got.mean["num_q"] == 1  # counts are summed, not scaled
    with pytest.raises(ValueError, match="gives .* values"):
        ranking_metrics(qrels, run, ["P"])
    with pytest.raises(ValueError, match="unknown measure 'nope'"):
        ranking_metrics(qrels, run, ["nope"])
    with pytest.raises(ValueError, match="query 'q', candidate 'b'.*nan"):
        ranking_metrics(qrels, {"q": {"a": 1.0, "b": float("nan")}}, ["map"])
    with pytest.raises(ValueError, match="query 'q', candidate 'a'.*integer"):
        ranking_metrics({"q": {"a": 1.5}}, run, ["map"])
    with pytest.raises(ValueError, match="no query is both judged"):
        ranking_metrics(qrels, {"other": {"a": 1.0}}, ["map"])
    # numpy integers and floats are accepted (pytrec_eval itself refuses numpy integers).
    assert ranking_metrics({"q": {"a": np.int64(1)}}, {"q": {"a": np.float32(0.5)}}, ["map"]).mean["map"] == 100


def random_vectors(rng, ids, dim=16):
    return {i: rng.normal(size=dim).astype(np.float32) for i in ids}


def scidocs_file_route(tmp_path, qrels, vectors):
    """SciDocs end to end: embeddings through jsonl, run file with np.round(-distance, 5), pytrec_eval parsers."""
    embeddings_file, qrel_file, run_file = tmp_path / "emb.jsonl", tmp_path / "test.qrel", tmp_path / "temp.run"
    embeddings_file.write_text(
        "".join(json.dumps({"paper_id": k, "embedding": v.tolist()}) + "\n" for k, v in vectors.items())
    )
    qrel_file.write_text("".join(f"{q} 0 {c} {r}\n" for q, judged in qrels.items() for c, r in judged.items()))
    embeddings = {}
    for line in embeddings_file.read_text().splitlines():
        record = json.loads(line)
        embeddings[record["paper_id"]] = np.array(record["embedding"])
    lines = []
    for query, judged in qrels.items():
        distances = [(c, -np.linalg.norm(embeddings[query] - np.array(embeddings[c]))) for c in judged]
        for rank, (c, d) in enumerate(sorted(distances, key=lambda item: item[1])):
            lines.append(f"{query} 0 {c} {int(rank < 5)} {np.round(d, 5)!s} n/a\n")
    run_file.write_text("".join(lines))
    with qrel_file.open() as f_qrel, run_file.open() as f_run:
        return reference_means(pytrec_eval.parse_qrel(f_qrel), pytrec_eval.parse_run(f_run), ["map", "ndcg"])


def test_proximity_run_reproduces_scidocs_run_file(tmp_path):
    rng = np.random.default_rng(1)
    papers = [f"p{i}" for i in range(60)]
    vectors = random_vectors(rng, papers)
    qrels = {}
    for query in papers[:15]:
        candidates = rng.choice([p for p in papers if p != query], size=12, replace=False)
        qrels[query] = {str(c): int(k < 3) for k, c in enumerate(candidates)}
    # c_a (relevant) is nearer than c_b, but both distances round to 1.0: tied, trec_eval puts c_b first.
    vectors.update(
        {
            "q_tie": np.zeros(16, np.float32),
            "c_a": np.eye(16, dtype=np.float32)[0] * np.float32(1.000001),
            "c_b": np.eye(16, dtype=np.float32)[0] * np.float32(1.000003),
        }
    )
    qrels["q_tie"] = {"c_a": 1, "c_b": 0}

    expected, results = scidocs_file_route(tmp_path, qrels, vectors)
    scored = proximity_run(qrels, vectors, score_decimals=5)
    got = ranking_metrics(qrels, scored.run, ["map", "ndcg"])
    assert got.mean == pytest.approx(expected, abs=1e-9)
    assert got.per_query["q_tie"]["map"] == results["q_tie"]["map"] == 0.5
    assert scored.run["q_tie"] == {"c_a": -1.0, "c_b": -1.0}
    # Unrounded, the nearer relevant candidate comes first: the rounding is what SciDocs measures.
    unrounded = ranking_metrics(qrels, proximity_run(qrels, vectors).run, ["map"])
    assert unrounded.per_query["q_tie"]["map"] == 1.0


def test_proximity_run_matches_scirepeval_euclidean_distances():
    rng = np.random.default_rng(2)
    papers = [f"p{i}" for i in range(80)]
    vectors = random_vectors(rng, papers, dim=32)
    qrels = {
        q: {str(c): int(rng.integers(0, 2)) for c in rng.choice(papers, size=20, replace=False)} for q in papers[:25]
    }
    reference = {}
    for query, judged in qrels.items():  # SciRepEval's IREvaluator.retrieval
        candidates = list(judged)
        distances = euclidean_distances(
            np.array([vectors[c] for c in candidates]), np.array([vectors[query]])
        ).flatten()
        reference[query] = {c: -float(d) for c, d in zip(candidates, distances)}
    expected, _ = reference_means(qrels, reference, ["map", "ndcg"])
    scored = proximity_run(qrels, vectors)
    assert ranking_metrics(qrels, scored.run, ["map", "ndcg"]).mean == pytest.approx(expected, abs=1e-9)
    for query in qrels:
        assert scored.run[query] == pytest.approx(reference[query], abs=1e-4)
    # Ad-hoc search, judged candidates: the same scores with query vectors from their own mapping.
    queries = {f"text-{q}": vectors[q] for q in qrels}
    search_qrels = {f"text-{q}": judged for q, judged in qrels.items()}
    searched = search_run(queries, vectors, search_qrels, similarity="l2")
    assert searched.run == {f"text-{q}": scores for q, scores in scored.run.items()}
    top = search_run(queries, vectors, search_qrels, similarity="l2", top_k=3).run["text-p0"]
    assert list(top) == sorted(scored.run["p0"], key=scored.run["p0"].get, reverse=True)[:3]


def test_cosine_and_dot_similarities():
    rng = np.random.default_rng(3)
    vectors = random_vectors(rng, [f"p{i}" for i in range(10)], dim=8)
    vectors["zero"] = np.zeros(8, np.float32)
    qrels = {"p0": {c: 1 for c in ["p1", "p2", "p3", "zero"]}}
    candidates = np.array([vectors[c] for c in qrels["p0"]], dtype=np.float64)
    cosine = proximity_run(qrels, vectors, similarity="cosine").run["p0"]
    dot = proximity_run(qrels, vectors, similarity="dot").run["p0"]
    assert list(cosine.values()) == pytest.approx(
        cosine_similarity(candidates, vectors["p0"][None].astype(np.float64)).ravel(), abs=1e-12
    )
    assert list(dot.values()) == pytest.approx(candidates @ vectors["p0"].astype(np.float64), abs=1e-12)
    assert cosine["zero"] == 0.0


def test_min_facet_l2_equals_brute_force(monkeypatch):
    rng = np.random.default_rng(4)
    facets = {f"p{i}": rng.normal(size=(3, 6)).astype(np.float32) for i in range(40)}
    facets["q2"] = rng.normal(size=(2, 6)).astype(np.float32)  # a query with fewer facets
    qrels = {"p0": {f"p{i}": 1 for i in range(1, 40)}, "q2": {"p1": 1, "p5": 0}}
    monkeypatch.setattr(ranking, "_FACET_BLOCK_BYTES", 8 * 3 * 3 * 6 * 7)  # blocks of 7 candidates
    run = proximity_run(qrels, facets, similarity="min_facet_l2").run
    for query, judged in qrels.items():
        for candidate in judged:
            expected = -min(
                np.linalg.norm(facets[query][i].astype(np.float64) - facets[candidate][j])
                for i in range(len(facets[query]))
                for j in range(3)
            )
            assert run[query][candidate] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match=r"paper 'p0'.*\(K, d\)"):
        proximity_run(qrels, {k: v[0] for k, v in facets.items()}, similarity="min_facet_l2")


def test_missing_vectors_raise_or_are_skipped_and_counted():
    rng = np.random.default_rng(5)
    vectors = random_vectors(rng, ["q1", "q3", "a", "b", "c"])
    qrels = {
        "q1": {"a": 1, "gone1": 0, "b": 0},
        "q2": {"a": 1, "b": 0},  # query vector missing: skipped entirely
        "q3": {"gone2": 1, "gone3": 0},  # no candidate vector: skipped
    }
    with pytest.raises(
        MissingVectorsError, match=r"4 query or candidate id\(s\) have no vector: 'q2', 'gone1', 'gone2', 'gone3'"
    ) as caught:
        proximity_run(qrels, vectors)
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    assert caught.value.missing == ["q2", "gone1", "gone2", "gone3"]
    many = {f"q{i}": {"a": 1} for i in range(10)}
    with pytest.raises(MissingVectorsError, match=r"8 .*'q0', 'q2', 'q4', 'q5', 'q6' \(and 3 more\)"):
        proximity_run(many, vectors)

    scored = proximity_run(qrels, vectors, skip_missing=True)
    assert set(scored.run) == {"q1"} and set(scored.run["q1"]) == {"a", "b"}
    assert (scored.skipped_queries, scored.skipped_candidates) == (2, 3)
    assert scored.missing_ids == ["q2", "gone1", "gone2", "gone3"]
    assert (scored.num_queries, scored.num_candidates) == (1, 2)
    with pytest.raises(ValueError, match=r"paper 'c' has a vector of shape \(3,\), paper 'b' one of shape \(16,\)"):
        proximity_run({"a": {"b": 1, "c": 0}}, {"a": np.ones(16), "b": np.ones(16), "c": np.ones(3)})
    with pytest.raises(ValueError, match="query 'a' has dimension 16, its candidates 3"):
        proximity_run({"a": {"c": 1}}, {"a": np.ones(16), "c": np.ones(3)})


def beir_brute_force(queries, corpus, top_k):
    """BEIR exact search in float64: every paper scored, the query's own id dropped, the top_k kept."""
    ids = list(corpus)
    scores = cosine_similarity(
        np.array([queries[q] for q in queries], np.float64), np.array([corpus[c] for c in ids], np.float64)
    )
    run = {}
    for row, query in enumerate(queries):
        ranked = sorted(((s, c) for s, c in zip(scores[row], ids) if c != query), reverse=True)[:top_k]
        run[query] = {c: float(s) for s, c in ranked}
    return run


def test_beir_full_corpus_search_equals_brute_force():
    rng = np.random.default_rng(6)
    corpus = random_vectors(rng, [f"d{i}" for i in range(150)], dim=8)
    queries = random_vectors(rng, [f"query{i}" for i in range(15)], dim=8)
    queries.update({f"d{i}": corpus[f"d{i}"] * 2 for i in range(5)})  # share an id with, and point at, a paper
    qrels = {q: {f"d{i}": int(rng.integers(0, 3)) for i in rng.choice(150, size=30, replace=False)} for q in queries}
    for top_k in (1000, 7):
        expected = beir_brute_force(queries, corpus, top_k)
        # Precondition: no two scores closer than float32 can resolve, so the float64 order is the order.
        gaps = [np.diff(sorted(scores.values())) for scores in expected.values()]
        assert min(g.min() for g in gaps) > 1e-6
        got = search_run(queries, corpus, top_k=top_k).run
        for query in queries:
            assert list(got[query]) == list(expected[query])
            assert list(got[query].values()) == pytest.approx(list(expected[query].values()), abs=1e-5)
    measures = ["ndcg_cut_10", "recall_100"]
    reference, _ = reference_means(qrels, beir_brute_force(queries, corpus, 1000), measures)
    assert ranking_metrics(
        qrels, search_run(queries, corpus).run, ["ndcg_cut.10", "recall.100"]
    ).mean == pytest.approx({"ndcg_cut.10": reference["ndcg_cut_10"], "recall.100": reference["recall_100"]}, abs=1e-9)
    assert all(q not in search_run(queries, corpus).run[q] for q in queries)
    kept = search_run(queries, corpus, top_k=3, exclude_identical_ids=False).run
    assert all(next(iter(kept[f"d{i}"])) == f"d{i}" for i in range(5))


def test_beir_chunking_and_ties_at_the_cut():
    rng = np.random.default_rng(7)
    # Small integers and dot products: exact in float32, so equal scores are truly equal in every chunking.
    corpus = {f"d{i:03d}": rng.integers(-2, 3, size=4).astype(np.float32) for i in range(90)}
    queries = {f"q{i}": rng.integers(-2, 3, size=4).astype(np.float32) for i in range(11)}
    queries["d005"] = corpus["d005"]
    whole = search_run(queries, corpus, similarity="dot", top_k=10).run
    for query_chunk, corpus_chunk in [(3, 17), (1, 1), (5, 10), (11, 89)]:
        chunked = search_run(
            queries, corpus, similarity="dot", top_k=10, query_chunk_size=query_chunk, corpus_chunk_size=corpus_chunk
        ).run
        assert chunked == whole
        assert all(list(chunked[q]) == list(whole[q]) for q in queries)
    for query, vector in queries.items():
        ordered = sorted(((float(vector @ v), c) for c, v in corpus.items() if c != query), reverse=True)
        assert list(whole[query].items()) == [(c, s) for s, c in ordered[:10]]
    assert any(
        len({s for s, _ in sorted(((float(v @ w), c) for c, w in corpus.items()), reverse=True)[8:12]}) < 4
        for v in queries.values()
    ), "no tie at the cut: the test data should have one"
    with pytest.raises(ValueError, match="not available over the whole corpus"):
        search_run(queries, corpus, similarity="l2")


def reference_reviewer_run(vectors, reviewer_papers, qrels):
    """SciRepEval's ReviewerMatchingEvaluator.retrieval."""
    run = {}
    for qid in qrels:
        query = np.array([vectors[qid]])
        cand_papers = {
            cid: np.array([vectors[pid] for pid in reviewer_papers[cid]])
            for cid in qrels[qid]
            if cid in reviewer_papers
        }
        scores = {cid: cosine_similarity(cand_papers[cid], query).flatten() for cid in cand_papers}
        run[qid] = {cid: float(np.mean(sorted(s, reverse=True)[:3])) for cid, s in scores.items()}
    return run


def test_reviewer_matching_equals_scirepeval():
    rng = np.random.default_rng(8)
    papers = random_vectors(rng, [f"s{i}" for i in range(7)] + [f"w{i}" for i in range(60)], dim=12)
    reviewer_papers = {f"r{i}": [f"w{j}" for j in rng.choice(60, size=1 + i % 6, replace=False)] for i in range(14)}
    hard = {f"s{i}": {f"r{j}": int(rng.integers(0, 2)) for j in range(14)} for i in range(6)}
    hard["s0"]["stranger"] = 1  # not a reviewer with papers: skipped, as the reference does
    hard["s6"] = {"stranger": 1}  # no known reviewer: the reference keeps it, empty, and it scores 0
    soft = {q: {r: max(v, int(rng.integers(0, 2))) for r, v in judged.items()} for q, judged in hard.items()}
    expected_run = reference_reviewer_run(papers, reviewer_papers, hard)

    scored = reviewer_run(papers, reviewer_papers, hard)
    assert scored.unknown_candidates == 2 and scored.skipped_queries == 0
    assert scored.run["s6"] == expected_run["s6"] == {}
    # We compute in float64; SciRepEval in the precision of its vectors (float32 here).
    float64_run = reference_reviewer_run({k: v.astype(np.float64) for k, v in papers.items()}, reviewer_papers, hard)
    for query in hard:
        assert scored.run[query] == pytest.approx(float64_run[query], abs=1e-12)
        assert scored.run[query] == pytest.approx(expected_run[query], abs=1e-6)
    result = reviewer_matching_metrics(papers, reviewer_papers, hard, soft)
    expected = {}
    for split, qrels in (("hard", hard), ("soft", soft)):
        means, _ = reference_means(qrels, expected_run, ["P_5", "P_10"])
        expected.update({f"{split}_{m}": v for m, v in means.items()})
    expected["average"] = sum(expected.values()) / 4
    assert result.metrics == pytest.approx(expected, abs=1e-9)
    assert result.hard.num_queries == result.soft.num_queries == 7
    assert result.hard.per_query["s6"] == {"P_5": 0.0, "P_10": 0.0}
    # Reviewer papers may live in their own mapping.
    split_vectors = {k: v for k, v in papers.items() if k.startswith("w")}
    assert reviewer_run(papers, reviewer_papers, hard, split_vectors).run == scored.run


def test_reviewer_run_top_k_and_missing_papers():
    unit = np.eye(3, dtype=np.float32)
    vectors = {"s": unit[0], "a": unit[0], "b": unit[1], "c": unit[0] + unit[1], "d": -unit[0]}
    reviewer_papers = {"one": ["b"], "four": ["a", "b", "c", "d"], "empty": [], "lost": ["gone"]}
    qrels = {"s": {"one": 1, "four": 0, "empty": 0, "lost": 1}, "t": {"one": 1}}
    with pytest.raises(MissingVectorsError, match=r"2 paper id\(s\) have no vector: 't', 'gone'"):
        reviewer_run(vectors, reviewer_papers, qrels)
    scored = reviewer_run(vectors, reviewer_papers, qrels, skip_missing=True)
    # top 3 of (1, 0, 1/sqrt2, -1) -> mean(1, 1/sqrt2, 0); one paper -> its cosine.
    assert scored.run == {"s": pytest.approx({"one": 0.0, "four": (1 + 2**-0.5) / 3}, abs=1e-12)}
    assert (scored.unknown_candidates, scored.skipped_candidates, scored.skipped_queries) == (1, 1, 1)
    assert reviewer_run(vectors, reviewer_papers, {"s": {"lost": 1}}, skip_missing=True).run == {"s": {}}
    assert reviewer_run(vectors, reviewer_papers, qrels, top_k=1, skip_missing=True).run["s"]["four"] == pytest.approx(
        1.0
    )


def test_beir_float32_prefilter_keeps_the_float64_order_of_near_ties_and_never_copies_the_corpus_to_float64():
    import tracemalloc

    rng = np.random.default_rng(11)
    dim, n = 64, 20_000
    base = rng.standard_normal(dim)
    # 40 papers around the top-10 cut whose cosines to the query differ by ~1e-9, below float32's resolution
    # (~6e-8): a float32 ranking orders them by rounding noise, the float64 reference by their true values.
    near = (base + 1e-4 * rng.standard_normal((40, dim))).astype(np.float32)
    corpus = {
        f"d{i:05d}": v
        for i, v in enumerate(np.concatenate([near, rng.standard_normal((n - 40, dim)).astype(np.float32)]))
    }
    queries = {"q": base.astype(np.float32)}
    expected = beir_brute_force(queries, corpus, 10)["q"]
    gaps = np.diff(
        sorted(cosine_similarity(base[None].astype(np.float32).astype(np.float64), near.astype(np.float64))[0])
    )
    assert gaps.min() < 1e-7, "the test needs near-ties float32 cannot resolve"
    for chunk in (50_000, 777):
        got = search_run(queries, corpus, top_k=10, corpus_chunk_size=chunk).run["q"]
        assert list(got) == list(expected) and list(got.values()) == pytest.approx(list(expected.values()), abs=1e-12)
    tracemalloc.start()
    search_run(queries, corpus, top_k=10, corpus_chunk_size=2_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # Less than a float64 copy of the corpus alone would take (the float32 one, the ids and one block fit).
    assert peak < n * dim * 8, f"peak {peak / 1e6:.1f} MB: more than a float64 corpus ({n * dim * 8 / 1e6:.1f} MB)"


def test_a_proximity_task_keeps_each_query_s_pytrec_eval_values():
    """What paired intervals resample (``sciembed compare``): every query's measures (0-100), as pytrec_eval gives
    them, kept unless turned off."""
    from sciembed.evaluation.tasks import ProximityTask

    rng = np.random.default_rng(3)
    qrels = {f"q{q}": {f"d{(q + k) % 30}": int(k < 2) for k in range(1, 7)} for q in range(10)}
    ids = {p for q, cands in qrels.items() for p in (q, *cands)}
    vectors = {p: rng.normal(size=4) for p in ids}
    documents = {p: {"title": p} for p in ids}
    plain = ProximityTask("b", "cite", documents, qrels=qrels, keep_per_query=False).evaluate(vectors, {})
    kept = ProximityTask("b", "cite", documents, qrels=qrels).evaluate(vectors, {})
    assert "per_query" not in plain.details and kept.metrics == plain.metrics
    run = {q: {c: -float(np.linalg.norm(vectors[q] - vectors[c])) for c in cands} for q, cands in qrels.items()}
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(kept.metrics)).evaluate(run)
    for query, values in kept.details["per_query"].items():
        assert values == pytest.approx({m: 100 * reference[query][m] for m in kept.metrics}, abs=1e-9)
    assert np.mean([v["map"] for v in kept.details["per_query"].values()]) == pytest.approx(
        kept.metrics["map"], abs=1e-9
    )


def test_a_search_task_keeps_each_query_s_pytrec_eval_values_when_asked():
    """keep_per_query on a search task (text queries against their judged candidates, as SciRepEval search): every
    query's nDCG as pytrec_eval gives it (the option was accepted and ignored before)."""
    from sciembed.evaluation.tasks import SearchTask

    rng = np.random.default_rng(4)
    qrels = {f"q{q}": {f"d{(q + k) % 30}": int(k % 3) for k in range(1, 7)} for q in range(10)}
    documents = {d: {"title": d} for cands in qrels.values() for d in cands}
    doc_vectors = {d: rng.normal(size=4) for d in documents}
    query_vectors = {q: rng.normal(size=4) for q in qrels}
    task = SearchTask(
        "s",
        "search",
        documents,
        queries={q: q for q in qrels},
        qrels=qrels,
        measures=("ndcg",),
        similarity="l2",
        keep_per_query=True,
    )
    kept = task.evaluate(doc_vectors, query_vectors)
    run = {
        q: {d: -float(np.linalg.norm(query_vectors[q] - doc_vectors[d])) for d in cands} for q, cands in qrels.items()
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)
    assert set(kept.details["per_query"]) == set(qrels)
    for query, values in kept.details["per_query"].items():
        assert values["ndcg"] == pytest.approx(100 * reference[query]["ndcg"], abs=1e-9)
