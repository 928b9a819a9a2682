"""`sciembed evaluate` on a user's own files, with no benchmark layout: a labelled CSV (classification, equal to
scikit-learn's LinearSVC grid search on the same split and vectors) and a qrels file (retrieval, equal to
pytrec_eval on the same run), their errors, and the benchmark layouts shown by --help and the README."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from helpers import WORDS
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.svm import LinearSVC

from sciembed import InvalidPaperError
from sciembed.cli import main
from sciembed.evaluation import evaluate, load_tasks
from sciembed.evaluation.benchmarks import ClassificationOptions, Reading, RetrievalOptions
from sciembed.evaluation.custom import read_labels, read_qrels, read_queries

README = Path(__file__).resolve().parents[1] / "docs" / "evaluation.md"  # the benchmark layouts page


def _papers(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    return [
        {"paper_id": f"d{i}", "title": " ".join(rng.choice(WORDS, 4)), "abstract": " ".join(rng.choice(WORDS, 14))}
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def papers_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("own") / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in _papers(60)))
    return path


@pytest.fixture(scope="module")
def vectors(tiny_encoder) -> dict[str, np.ndarray]:
    papers = _papers(60)
    return dict(zip([p["paper_id"] for p in papers], tiny_encoder.encode(papers, show_progress_bar=False)))


def _svm_f1(vectors, train, test) -> float:
    """SciDocs' classification protocol with scikit-learn: LinearSVC (squared hinge, no intercept), 3-fold grid search
    over C in logspace(-4, 2, 7), macro-F1."""
    svm = GridSearchCV(
        LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42),
        cv=3,
        param_grid={"C": np.logspace(-4, 2, 7)},
    )
    svm.fit(np.array([vectors[p] for p, _ in train]), [y for _, y in train])
    return 100 * f1_score([y for _, y in test], svm.predict(np.array([vectors[p] for p, _ in test])), average="macro")


def _labels(i: int) -> str:
    return ("physics", "math", "cs")[i % 3]


def test_a_labelled_csv_with_a_split_column_equals_scikit_learn(tiny_encoder, papers_file, vectors, tmp_path):
    labels = tmp_path / "arxiv-labels.csv"
    rows = [(f"d{i}", _labels(i), "train" if i < 36 else "test") for i in range(48)]
    labels.write_text("split,paper_id,label,source\n" + "".join(f"{s},{p},{y},arxiv\n" for p, y, s in rows))
    report = evaluate(
        tiny_encoder,
        "classification",
        labels,
        use_cache=False,
        show_progress_bar=False,
        n_jobs=1,
        options=ClassificationOptions(papers=papers_file),
    )
    (result,) = report.results
    assert (result.task, result.task_id, result.kind) == ("arxiv-labels", "arxiv-labels", "classification")
    expected = _svm_f1(
        vectors, [(p, y) for p, y, s in rows if s == "train"], [(p, y) for p, y, s in rows if s == "test"]
    )
    assert result.metrics["f1_macro"] == pytest.approx(expected, abs=1e-9)
    assert result.counts["num_train"] == 36 and result.counts["num_test"] == 12 and result.counts["num_labels"] == 3
    assert report.settings["papers"] == str(papers_file)


def test_a_labelled_csv_without_a_split_is_split_stratified_and_seeded(
    tiny_bert, vectors, papers_file, tmp_path, capsys
):
    labels = tmp_path / "labels.tsv"
    ids = [f"d{i}" for i in range(60)]
    labels.write_text("paper_id\tlabel\n" + "".join(f"{p}\t{_labels(i)}\n" for i, p in enumerate(ids)))
    output = tmp_path / "results.json"
    assert (
        main(
            [
                "-q",
                "evaluate",
                "--model",
                str(tiny_bert),
                "--benchmark",
                "classification",
                "--data",
                str(labels),
                "--papers",
                str(papers_file),
                "--test-size",
                "0.25",
                "--seed",
                "3",
                "--no-cache",
                "--no-progress",
                "--jobs",
                "1",
                "--output",
                str(output),
            ]
        )
        == 0
    )
    assert "f1_macro" in capsys.readouterr().out
    train, test = train_test_split(
        list(range(60)), test_size=0.25, stratify=[_labels(i) for i in range(60)], random_state=3
    )
    expected = _svm_f1(vectors, [(ids[i], _labels(i)) for i in train], [(ids[i], _labels(i)) for i in test])
    written = json.loads(output.read_text())
    assert written["benchmark"] == "classification" and written["settings"]["test_size"] == 0.25
    (row,) = written["results"]
    assert (
        row["task"] == "labels"
        and row["value"] == pytest.approx(expected, abs=1e-9)
        and row["counts"]["num_test"] == 15
    )


def test_label_rows_naming_missing_papers_are_refused_or_skipped(tiny_encoder, papers_file, tmp_path, caplog):
    labels = tmp_path / "labels.csv"
    labels.write_text("paper_id,label\n" + "".join(f"d{i},{_labels(i)}\n" for i in range(30)) + "ghost,cs\n")
    with pytest.raises(
        InvalidPaperError, match=r"labels.csv, line 32 \(paper_id 'ghost'\): paper_id not in papers.jsonl"
    ):
        load_tasks("classification", labels, ClassificationOptions(papers=papers_file))
    report = evaluate(
        tiny_encoder,
        "classification",
        labels,
        use_cache=False,
        show_progress_bar=False,
        n_jobs=1,
        reading=Reading(skip_invalid=True),
        options=ClassificationOptions(papers=papers_file),
    )
    assert report.to_dict()["skipped_records"]["count"] == 1 and "ghost" in report.skipped_records[0]
    assert "left out 1 label row(s) naming papers not in the papers file of 31" in caplog.text
    assert "skipped: 1 record(s)" in report.table()
    # A label held by one paper cannot be split: refused with its line, or left out.
    single = tmp_path / "single.csv"
    single.write_text("paper_id,label\n" + "".join(f"d{i},{_labels(i)}\n" for i in range(30)) + "d40,biology\n")
    with pytest.raises(
        ValueError, match=r"single.csv, line 32 \(paper_id 'd40'\): label 'biology' has a single paper"
    ):
        load_tasks("classification", single, ClassificationOptions(papers=papers_file))
    assert (
        len(
            load_tasks("classification", single, ClassificationOptions(papers=papers_file), skip_invalid=True)
            .tasks[0]
            .documents
        )
        == 30
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id;label\nd1;cs\n", r"line 1: expected a header naming the paper id column"),
        ("paper_id,label\nd1,cs\nd2\n", r"line 3: 1 field\(s\), the header names 2"),
        ("paper_id,label\nd1,cs\nd1,math\n", r"line 3 \(paper_id 'd1'\): labelled again \(first at line 2\)"),
        ("paper_id,label,split\nd1,cs,holdout\n", r"line 2 \(paper_id 'd1'\): split 'holdout'"),
        ("paper_id,label\nd1,\n", r"line 2: empty label \(paper_id 'd1'\)"),
    ],
)
def test_malformed_labels_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "labels.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"labels.csv, {message}"):
        read_labels(path)


# Retrieval ------------------------------------------------------------------------------------------------


def _cosine_run(queries: dict[str, np.ndarray], documents: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Every query against every document (itself left out), by float64 cosine."""
    ids = list(documents)
    matrix = np.array([documents[d] for d in ids], dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    run = {}
    for query, vector in queries.items():
        vector = vector.astype(np.float64) / np.linalg.norm(vector)
        run[query] = {d: float(s) for d, s in zip(ids, matrix @ vector) if d != query}
    return run


#: What every ranking result reports besides its headline measures, at the default cut-offs 5, 10, 20 and 100.
EVERY_MEASURE = ("map", "ndcg", "Rprec") + tuple(
    f"{m}_{k}" for m in ("ndcg_cut", "P", "recall") for k in (5, 10, 20, 100)
)


def _pytrec(qrels, run, measures) -> dict[str, float]:
    results = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    return {m: 100 * float(np.mean([r[m] for r in results.values()])) for m in measures}


def test_qrels_with_paper_queries_rank_every_paper_as_pytrec_eval_scores_them(tiny_encoder, papers_file, tmp_path):
    rng = np.random.default_rng(1)
    qrels = {
        f"d{q}": {
            f"d{c}": int(rng.integers(1, 3)) for c in rng.choice([i for i in range(60) if i != q], 3, replace=False)
        }
        for q in range(0, 50, 5)
    }
    path = tmp_path / "my.qrels"
    path.write_text(
        "# query 0 document relevance\n"
        + "".join(f"{q} 0 {d} {r}\n" for q, ds in qrels.items() for d, r in ds.items())
    )
    (task,) = load_tasks("retrieval", path, RetrievalOptions(papers=papers_file)).tasks
    assert task.query_format is None and task.document_format == "proximity"  # query papers are embedded as papers
    # The same run scored by the task and by pytrec_eval: random vectors, so that no two scores are near a tie.
    vectors = {f"d{i}": v for i, v in enumerate(rng.standard_normal((60, 16)).astype(np.float32))}
    result = task.evaluate(vectors, {q: vectors[q] for q in task.queries})
    expected = _pytrec(qrels, _cosine_run({q: vectors[q] for q in qrels}, vectors), EVERY_MEASURE)
    assert list(result.metrics)[:4] == ["map", "ndcg", "ndcg_cut_10", "recall_100"]  # the headline first
    assert set(result.metrics) == set(EVERY_MEASURE)
    for metric, value in expected.items():
        assert result.metrics[metric] == pytest.approx(value, abs=1e-9), metric
    assert result.counts == {"queries": 10, "documents": 60} and result.task == "my"
    # End to end with a model: the same task, the model's vectors.
    report = evaluate(
        tiny_encoder,
        "retrieval",
        path,
        use_cache=False,
        show_progress_bar=False,
        options=RetrievalOptions(papers=papers_file),
    )
    assert report.results[0].task == "my" and set(report.results[0].metrics) == set(expected)


def test_qrels_judged_only_follow_scidocs_proximity(tiny_encoder, papers_file, vectors, tmp_path):
    rows = [(f"d{q}", f"d{(q * 7 + k) % 60}", int(k < 2)) for q in range(8) for k in range(1, 7)]
    path = tmp_path / "cite.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows))
    report = evaluate(
        tiny_encoder,
        "retrieval",
        path,
        use_cache=False,
        show_progress_bar=False,
        options=RetrievalOptions(papers=papers_file, candidates="judged"),
    )
    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in rows:
        qrels.setdefault(q, {})[d] = r
    # SciDocs: minus the Euclidean distance, rounded to 5 decimals as its run file writes it.
    run = {
        q: {d: float(np.round(-np.linalg.norm(vectors[q].astype(np.float64) - vectors[d]), 5)) for d in ds}
        for q, ds in qrels.items()
    }
    expected = _pytrec(qrels, run, EVERY_MEASURE)
    assert report.results[0].metrics == pytest.approx(expected, abs=1e-9)
    assert report.results[0].counts["candidates"] == len(rows)


def test_graded_judged_candidates_report_every_measure_and_query_as_pytrec_eval(
    tiny_bert, papers_file, vectors, tmp_path, caplog
):
    """The re-ranking mode (SciDocs' protocol) with grades 0-3: nDCG@10, P@k, recall@k, R-precision and every query's
    values in the results JSON, equal to pytrec_eval on the model's vectors; the JSON states the gain and MAP's
    threshold."""
    rng = np.random.default_rng(5)
    qrels = {f"d{q}": {f"d{(q * 7 + k) % 60}": int(rng.integers(0, 4)) for k in range(1, 13)} for q in range(8)}
    qrels["d0"]["d7"] = 3  # every query has a relevant paper
    path = tmp_path / "graded.qrels"
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, ds in qrels.items() for d, r in ds.items()))
    output = tmp_path / "graded.json"
    argv = ["evaluate", "--model", str(tiny_bert), "--benchmark", "retrieval", "--data", str(path)]
    argv += ["--papers", str(papers_file), "--candidates", "judged", "--no-cache", "--no-progress"]
    assert main([*argv, "--output", str(output)]) == 0
    (task,) = json.loads(output.read_text())["tasks"]
    run = {
        q: {d: float(np.round(-np.linalg.norm(vectors[q].astype(np.float64) - vectors[d]), 5)) for d in ds}
        for q, ds in qrels.items()
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(EVERY_MEASURE)).evaluate(run)
    assert set(task["metrics"]) == set(EVERY_MEASURE) and task["primary_metrics"] == ["map", "ndcg"]
    assert task["metrics"] == pytest.approx(_pytrec(qrels, run, EVERY_MEASURE), abs=1e-9)
    assert 0 < task["metrics"]["ndcg_cut_10"] < 100
    assert set(task["details"]["per_query"]) == set(qrels)
    for query, values in task["details"]["per_query"].items():
        assert values == pytest.approx({m: 100 * v for m, v in reference[query].items()}, abs=1e-9), query
    stated = task["details"]["measures"]
    assert stated["relevance_level"] == 1 and stated["ndcg_gain"].startswith("linear")
    # Other cut-offs are asked for by name.
    assert main([*argv, "--output", str(tmp_path / "cut.json"), "--cutoffs", "3", "7"]) == 0
    (cut,) = json.loads((tmp_path / "cut.json").read_text())["tasks"]
    assert {"ndcg_cut_3", "P_7", "recall_3"} <= set(cut["metrics"]) and "ndcg_cut_10" not in cut["metrics"]
    assert main([*argv, "--cutoffs", "0", "10"]) == 2  # refused before the model loads
    assert "rank cut-offs must be positive integers, got [0]" in caplog.text


def test_qrels_with_a_queries_file_search_every_paper(tiny_encoder, papers_file, tmp_path):
    queries = {f"q{i}": " ".join(WORDS[i : i + 4]) for i in range(6)}
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    qrels = {q: {f"d{3 * i}": 1, f"d{3 * i + 1}": 2} for i, q in enumerate(queries)}
    path = tmp_path / "qrels.csv"
    path.write_text("".join(f"{q},{d},{r}\n" for q, ds in qrels.items() for d, r in ds.items()))
    (task,) = load_tasks(
        "retrieval", path, RetrievalOptions(papers=papers_file, queries=tmp_path / "queries.jsonl")
    ).tasks
    assert task.kind == "search" and task.query_format == "adhoc_query" and task.queries == queries
    rng = np.random.default_rng(2)
    vectors = {f"d{i}": v for i, v in enumerate(rng.standard_normal((60, 16)).astype(np.float32))}
    query_vectors = {q: v for q, v in zip(queries, rng.standard_normal((6, 16)).astype(np.float32))}
    result = task.evaluate(vectors, query_vectors)
    expected = _pytrec(qrels, _cosine_run(query_vectors, vectors), EVERY_MEASURE)
    assert result.metrics == pytest.approx(expected, abs=1e-9)
    report = evaluate(
        tiny_encoder,
        "retrieval",
        path,
        use_cache=False,
        show_progress_bar=False,
        options=RetrievalOptions(papers=papers_file, queries=tmp_path / "queries.jsonl"),
    )
    assert report.results[0].counts == {"queries": 6, "documents": 60}


FACETS = ("background", "method", "result")


def _facet_files(folder: Path, facets: tuple[str, ...]) -> tuple[Path, Path]:
    """A queries file holding each of ``facets`` of papers d0 .. d5 (its own text, naming its paper) and their qrels,
    which judge the query's own paper too."""
    folder.mkdir(exist_ok=True)
    queries, qrels = [], []
    for i in range(6):
        for facet in facets:
            query, k = f"d{i}-{facet}", FACETS.index(facet)
            text = " ".join(WORDS[(i * 5 + k * 11 + j) % len(WORDS)] for j in range(6))
            queries.append({"query_id": query, "paper_id": f"d{i}", "facet": facet, "text": text})
            judged = [i, *((i * 7 + k * 3 + j) % 60 for j in (1, 2, 3, 4))]
            qrels += [f"{query}\td{d}\t{(d + k) % 3}\n" for d in dict.fromkeys(judged)]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels.tsv").write_text("".join(qrels))
    return folder / "qrels.tsv", folder / "queries.jsonl"


@pytest.mark.parametrize("candidates", ["all", "judged"])
def test_a_three_facet_query_file_scores_each_facet_in_one_run(tiny_encoder, papers_file, tmp_path, candidates):
    def scored(facets):
        qrels, queries = _facet_files(tmp_path / "-".join(facets), facets)
        report = evaluate(
            tiny_encoder,
            "retrieval",
            qrels,
            cache_dir=tmp_path / "cache",
            show_progress_bar=False,
            options=RetrievalOptions(papers=papers_file, queries=queries, candidates=candidates),
        )
        return report.results[0]

    together = scored(FACETS)
    assert together.counts["queries"] == 18 and together.skipped == {"self_judgements": 18}
    for facet in FACETS:
        alone = scored((facet,))
        assert together.details["per_group"][facet] == pytest.approx({"queries": 6, **alone.metrics}, abs=1e-9)
        assert alone.skipped == {"self_judgements": 6}


def test_a_facet_query_never_ranks_its_own_paper():
    from sciembed.evaluation.ranking import search_run

    papers = {"d1": np.array([1.0, 0.0]), "d2": np.array([0.8, 0.6]), "d3": np.array([0.0, 1.0])}
    run = search_run({"d1-method": papers["d1"]}, papers, query_papers={"d1-method": "d1"}).run
    assert list(run["d1-method"]) == ["d2", "d3"]


def test_a_facet_query_naming_an_unknown_paper_or_no_facet_is_refused(papers_file, tmp_path, caplog):
    qrels, queries = _facet_files(tmp_path, FACETS)
    lines = queries.read_text().splitlines()
    queries.write_text("\n".join([*lines[:4], lines[4].replace('"paper_id": "d1"', '"paper_id": "x9"'), *lines[5:]]))
    with pytest.raises(ValueError, match=r"queries.jsonl, line 5 \(query 'd1-method'\): paper_id 'x9' is not in"):
        load_tasks("retrieval", qrels, RetrievalOptions(papers=papers_file, queries=queries))
    queries.write_text("\n".join([*lines[:2], lines[2].replace(', "facet": "result"', ""), *lines[3:]]))
    with pytest.raises(ValueError, match=r"line 3 \(query 'd0-result'\): no facet, while line 1 names one"):
        load_tasks("retrieval", qrels, RetrievalOptions(papers=papers_file, queries=queries))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"paper_id": None}, r"line 3 \(query 'd0-result'\): facet 'result' without paper_id; a facet query names"),
        ({"facet": 3}, r"line 3 \(query 'd0-result'\): facet must be a non-empty text, got 3"),
        ({"_id": "x"}, r"line 3: the query id is given twice, differently \(_id \"x\", query_id \"d0-result\"\)"),
        ({"text": ["a", "b"]}, r"line 3 \(query 'd0-result'\): text must be a string, the query's text, got \["),
        (None, r"queries.tsv, line 1: a query line is 'id<TAB>text' \(2 tab-separated fields\), got 3: .*\.jsonl"),
    ],
    ids=["facet-without-paper", "facet-number", "two-ids", "text-list", "tsv-three-columns"],
)
def test_a_facet_query_line_that_is_not_as_read_is_refused_naming_line_and_key(
    papers_file, tmp_path, caplog, monkeypatch, change, message
):
    from sciembed import PaperEncoder

    monkeypatch.setattr(PaperEncoder, "from_pretrained", lambda *a, **k: pytest.fail("the model was loaded"))
    qrels, queries = _facet_files(tmp_path, FACETS)
    records = [json.loads(line) for line in queries.read_text().splitlines()]
    if change is None:  # the facet layout written as tab-separated columns
        queries = tmp_path / "queries.tsv"
        queries.write_text("".join(f"{r['query_id']}\t{r['paper_id']}\t{r['text']}\n" for r in records))
    else:
        records[2] = {key: value for key, value in {**records[2], **change}.items() if value is not None}
        queries.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["evaluate", "--benchmark", "retrieval", "--data", qrels, "--papers", papers_file, "--queries", queries]
    assert main([str(a) for a in [*argv, "--no-cache", "--no-progress"]]) == 2
    assert re.search(message, caplog.text)


@pytest.mark.parametrize(
    ("wrong", "meant"), [("paperid", "paper_id"), ("facets", "facet"), ("querry_id", "query_id"), ("Text", "text")]
)
def test_a_query_line_with_an_unknown_key_is_refused_naming_the_key_meant(
    papers_file, tmp_path, caplog, monkeypatch, wrong, meant
):
    from sciembed import PaperEncoder

    monkeypatch.setattr(PaperEncoder, "from_pretrained", lambda *a, **k: pytest.fail("the model was loaded"))
    qrels, queries = _facet_files(tmp_path, FACETS)
    records = [json.loads(line) for line in queries.read_text().splitlines()]
    records[2][wrong] = records[2].pop(meant)
    queries.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["evaluate", "--benchmark", "retrieval", "--data", qrels, "--papers", papers_file, "--queries", queries]
    assert main([str(a) for a in [*argv, "--no-cache", "--no-progress"]]) == 2
    assert "queries.jsonl, line 3" in caplog.text and f"unknown key {wrong!r} (did you mean {meant!r}?)" in caplog.text


def test_beir_s_title_and_metadata_on_a_query_line_are_read(tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": "graphs", "title": "G", "metadata": {"a": 1}}) + "\n")
    assert read_queries(queries) == {"q1": "graphs"}


def test_qrels_errors_name_the_file_line_and_id(papers_file, tmp_path, caplog):
    path = tmp_path / "qrels.txt"
    path.write_text("d1 0 d2 1\nd1 0 ghost 1\nnobody 0 d3 1\n")
    with pytest.raises(InvalidPaperError) as error:
        load_tasks("retrieval", path, RetrievalOptions(papers=papers_file))
    assert str(error.value).startswith("2 judgement(s) naming unknown ids:\n")
    assert "qrels.txt, line 2 (document id 'ghost'): not in papers.jsonl" in str(error.value)
    assert "qrels.txt, line 3 (query id 'nobody'): not in papers.jsonl" in str(error.value)
    suite = load_tasks("retrieval", path, RetrievalOptions(papers=papers_file), skip_invalid=True)
    assert len(suite.skipped) == 2 and suite.tasks[0].qrels == {"d1": {"d2": 1}}
    for text, message in (
        ("d1 0 d2 1\nd1 0 d3 x\n", r"line 2: relevance must be an integer, got 'x'"),
        ("d1 0 d2 x\n", r"line 1: relevance must be an integer, got 'x'"),
        ("qid 0 docid rel\n", r"no judgements \(line 1, 'qid 0 docid rel', was read as a header\)"),
        ("d1 d2 1\nd1 0 d3 1\n", r"line 2: a qrels line is 3 fields as the lines before, got 4"),
        ("d1 d2\n", r"line 1: a qrels line is 'qid 0 docid rel' \(4 fields\) or 'qid docid rel' \(3 fields\), got 2"),
    ):
        path.write_text(text)
        with pytest.raises(ValueError, match=rf"qrels.txt(, |: ){message}"):
            read_qrels(path)
    queries = tmp_path / "queries.tsv"
    queries.write_text("query_id\ttext\nq1\tgraph search\nq1\tagain\n")
    with pytest.raises(ValueError, match=r"queries.tsv, line 3 \(query 'q1'\): repeated \(first at line 2\)"):
        read_queries(queries)
    with pytest.raises(ValueError, match="--papers"):
        load_tasks("retrieval", path)
    with pytest.raises(
        ValueError, match="--papers: not for --benchmark cacm.* for --benchmark classification or retrieval"
    ):
        load_tasks("cacm", tmp_path, papers=papers_file)
    assert (
        main(
            [
                "evaluate",
                "--benchmark",
                "retrieval",
                "--data",
                str(tmp_path / "absent.txt"),
                "--papers",
                str(papers_file),
            ]
        )
        == 2
    )
    assert "absent.txt (--data): no such file" in caplog.text
    caplog.clear()
    argv = ["evaluate", "--benchmark", "retrieval", "--data", str(tmp_path), "--papers", str(papers_file)]
    assert main(argv) == 2 and f"{tmp_path} (--data) is a folder; --data takes a file" in caplog.text


# The layouts, as --help and the README show them -----------------------------------------------------------


def _example_files(example: str) -> dict[str, str]:
    files: dict[str, list[str]] = {}
    current: list[str] = []
    for line in example.splitlines():
        heading = re.match(r"==> (\S+) <==", line)
        if heading:
            current = files.setdefault(heading.group(1), [])
        else:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def test_every_file_example_of_the_layouts_reads(tmp_path):
    from sciembed.data.beir import read_beir
    from sciembed.data.papers import read_papers
    from sciembed.data.scidocs import _read_label_csv, read_qrel_file
    from sciembed.data.smart import read_smart_collection
    from sciembed.evaluation.names import BENCHMARK_LAYOUTS

    readers = {
        "paper_metadata_view_cite_read.json": read_papers,
        "cite/test.qrel": read_qrel_file,
        "mag/train.csv": _read_label_csv,
        "query_fields.json": lambda path: json.loads(path.read_text()),
        "cacm.all": read_smart_collection,
        "labels.csv": read_labels,
        "papers.jsonl": read_papers,
        "qrels.txt": read_qrels,
        "queries.jsonl": read_queries,
    }
    for layout in BENCHMARK_LAYOUTS:
        folder = tmp_path / layout.name
        files = _example_files(layout.example)
        assert len(layout.example.splitlines()) <= 7, layout.name  # tiny
        if not files:  # a Hub dataset's configs, described rather than shown as files
            assert "config" in layout.example or "split" in layout.example, layout.name
            continue
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        if layout.name == "beir":
            assert len(read_beir(folder).corpus) == 1
            continue
        for name in files:
            if name in readers:
                assert readers[name](folder / name), (layout.name, name)


def test_help_and_readme_list_every_benchmark_with_its_layout(capsys):
    from sciembed.evaluation.names import BENCHMARK_LAYOUTS, layouts_text

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    printed = "".join(capsys.readouterr().out.split())  # compared without white space: argparse wraps lines at hyphens
    readme = README.read_text(encoding="utf-8")
    assert layouts_text() in readme
    for layout in BENCHMARK_LAYOUTS:
        assert "".join(f"{layout.name}: {layout.reads}".split()) in printed, layout.name  # --benchmark's help
        assert (
            "".join(f"[{layout.name}] --data: {layout.reads}\n{layout.example}".split()) in printed
        )  # the epilog's examples
        assert f"`{layout.name}`" in readme
