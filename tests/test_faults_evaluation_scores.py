"""Faults that once gave evaluation scores with exit code 0 that were silently wrong (issue 51, items 6-9).

Judgement files read the wrong way round or with a judgement taken for a header, a query paper ranked as its own
candidate, and text fields asked for but not embedded. Each case writes its own files, runs what a user would, and
asserts the exit code, the message (file, line, the switch that helps) or the scores.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import WORDS, shared_data

from sciembed import PaperEncoder
from sciembed.cli import main
from sciembed.data.beir import read_beir
from sciembed.data.scidocs_recomm import Click, SciDocsRecomm
from sciembed.data.smart import read_smart_qrels
from sciembed.evaluation import load_tasks
from sciembed.evaluation.benchmarks import RetrievalOptions
from sciembed.evaluation.custom import read_qrels
from sciembed.evaluation.recommendation import evaluate_recommendations
from sciembed.evaluation.tasks import ProximityTask


def _papers(path, n=60, **extra):
    rng = np.random.default_rng(0)
    papers = [
        {
            "paper_id": f"d{i}",
            "title": " ".join(rng.choice(WORDS, 4)),
            "abstract": " ".join(rng.choice(WORDS, 12)),
            **{name: f"{value} {i}" for name, value in extra.items()},
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    return path


def _evaluate(*arguments):
    return main(["evaluate", "--benchmark", "retrieval", "--no-progress", *map(str, arguments)])


# 6. A judgement file with its query and document columns swapped ----------------------------------------------

# Three query papers, each judged against 20 papers: written backwards, 60 "queries" judged once against 3.
_JUDGED = [(f"d{q}", f"d{3 + 20 * q + k}", 1 + k % 3) for q in range(3) for k in range(20) if 3 + 20 * q + k < 60]
_SWAPPED = {
    "trec.qrels": "".join(f"{d} 0 {q} {r}\n" for q, d, r in _JUDGED),
    "beir.tsv": "query-id\tcorpus-id\tscore\n" + "".join(f"{d}\t{q}\t{r}\n" for q, d, r in _JUDGED),
    "named.tsv": "corpus-id\tquery-id\tscore\n" + "".join(f"{d}\t{q}\t{r}\n" for q, d, r in _JUDGED[:6]),
    "plain.csv": "".join(f"{d},{q},{r}\n" for q, d, r in _JUDGED),
}


@pytest.mark.parametrize("name", sorted(_SWAPPED))
def test_swapped_qrels_columns_stop_before_the_model_loads_and_the_switch_reads_them(
    tiny_bert, tmp_path, caplog, name
):
    papers, qrels = _papers(tmp_path / "papers.jsonl"), tmp_path / name
    qrels.write_text(_SWAPPED[name])
    # An absent model: the diagnosis comes before any model is loaded.
    assert _evaluate("--data", qrels, "--papers", papers, "--model", tmp_path / "no-model") == 2
    assert f"{name}: the query and document columns look swapped" in caplog.text or (
        f"{name}, line 1: the header names the document column first" in caplog.text
    )
    assert "--qrels-columns document-query" in caplog.text and "no-model" not in caplog.text
    output = tmp_path / "out.json"
    arguments = ("--data", qrels, "--papers", papers, "--model", tiny_bert, "--output", output)
    assert _evaluate(*arguments, "--qrels-columns", "document-query") == 0
    report = json.loads(output.read_text())
    assert report["tasks"][0]["counts"]["queries"] == (1 if name == "named.tsv" else 3)
    assert report["settings"]["qrels_columns"] == "document-query"


def test_swapped_columns_with_a_queries_file_are_named_not_called_unknown_ids(tmp_path, caplog):
    papers, queries, qrels = _papers(tmp_path / "papers.jsonl"), tmp_path / "queries.tsv", tmp_path / "qrels.txt"
    queries.write_text("".join(f"q{i}\t{' '.join(WORDS[i : i + 3])}\n" for i in range(4)))
    qrels.write_text("".join(f"d{2 * i + k}\tq{i}\t1\n" for i in range(4) for k in range(2)))
    assert _evaluate("--data", qrels, "--papers", papers, "--queries", queries) == 2
    assert "qrels.txt: the query and document columns look swapped: 8 of 8 judgements" in caplog.text
    assert "--skip-invalid" not in caplog.text
    (task,) = load_tasks(
        "retrieval", qrels, RetrievalOptions(papers=papers, queries=queries, qrels_columns="document-query")
    ).tasks
    assert task.qrels == {f"q{i}": {f"d{2 * i}": 1, f"d{2 * i + 1}": 1} for i in range(4)}


@pytest.mark.parametrize("layout", ["{d}\t{q}\t1\n", "{d} 0 {q} 2\n"], ids=["tsv", "trec"])
@pytest.mark.parametrize("shape", [(1, 3), (2, 2)], ids=["one query", "two queries"])
def test_swapped_columns_whose_queries_are_absent_from_the_queries_file_are_named(tmp_path, caplog, layout, shape):
    papers, queries, qrels = _papers(tmp_path / "papers.jsonl"), tmp_path / "queries.tsv", tmp_path / "qrels.txt"
    queries.write_text("".join(f"q{i}\t{' '.join(WORDS[i : i + 3])}\n" for i in range(4)))
    qrels.write_text(
        "".join(layout.format(d=f"d{5 * i + k}", q=f"x{i}") for i in range(shape[0]) for k in range(shape[1]))
    )
    assert _evaluate("--data", qrels, "--papers", papers, "--queries", queries, "--model", tmp_path / "none") == 2
    assert "qrels.txt: " in caplog.text and "query and document columns" in caplog.text and "swapped" in caplog.text
    assert "--qrels-columns document-query" in caplog.text and "SMART" not in caplog.text


def test_benchmark_judgement_files_read_backwards_are_refused(tmp_path):
    smart = tmp_path / "qrels.text"
    smart.write_text("10 01 0 0\n11 01 0 0\n12 02 0 0\n")
    with pytest.raises(ValueError, match=r"qrels\.text: the query and document columns look swapped"):
        read_smart_qrels(smart, query_ids={"1", "2"}, paper_ids={"10", "11", "12"})
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": "memory"}) + "\n" for i in (1, 2))
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "garbage"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nd1\tq1\t1\nd2\tq1\t0\n")
    with pytest.raises(ValueError, match=r"test\.tsv: the query and document columns look swapped"):
        read_beir(folder)
    assert read_beir(folder, qrels_columns="document-query").qrels["test"]["query_id"] == ["q1", "q1"]
    with pytest.raises(ValueError, match=r"--qrels-columns: not for --benchmark cocitation, which does not take it"):
        load_tasks("cocitation", folder, qrels_columns="document-query")  # never silently ignored


@pytest.mark.parametrize(
    ("queries", "judged", "pool", "relevant"),
    [(2, 5, 60, 5), (6, 15, 30, 15), (20, 30, 100, 5)],  # small; judged 3 times read backwards; SciDocs' 5 + 25
)
def test_swapped_columns_of_every_size_and_grading_are_refused(tmp_path, queries, judged, pool, relevant):
    papers = _papers(tmp_path / "papers.jsonl", n=pool + queries)
    rng = np.random.default_rng(1)
    rows = [
        (f"d{pool + q}", f"d{d}", int(k < relevant))
        for q in range(queries)
        for k, d in enumerate(rng.choice(pool, judged, replace=False))
    ]
    path = tmp_path / "swapped.qrels"
    path.write_text("".join(f"{d} 0 {q} {r}\n" for q, d, r in rows))
    with pytest.raises(ValueError, match=r"swapped\.qrels: the query and document columns look swapped"):
        load_tasks("retrieval", path, RetrievalOptions(papers=papers))
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows))
    assert len(load_tasks("retrieval", path, RetrievalOptions(papers=papers)).tasks[0].qrels) == queries


@pytest.mark.parametrize(
    "rows",
    [
        [(f"d{q}", f"d{10 + 3 * q + k}", 1) for q in range(2) for k in range(3)],  # 6 "queries" judged once
        [
            (f"d{q}", f"d{10 + 2 * q + k}", int(k == 0)) for q in range(2) for k in range(2)
        ],  # half with nothing relevant
    ],
    ids=["judged once", "graded"],
)
def test_small_files_read_backwards_are_refused_before_the_model_loads(tmp_path, caplog, rows):
    papers, path = _papers(tmp_path / "papers.jsonl"), tmp_path / "small.qrels"
    path.write_text("".join(f"{d} 0 {q} {r}\n" for q, d, r in rows))
    assert _evaluate("--data", path, "--papers", papers, "--model", tmp_path / "no-model") == 2
    assert "small.qrels: the query and document columns look swapped" in caplog.text
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows))
    assert len(load_tasks("retrieval", path, RetrievalOptions(papers=papers)).tasks[0].qrels) == 2


@pytest.mark.parametrize(
    "pairs",
    [
        [(q, 10 + 3 * q + k) for q in range(3) for k in range(3)],  # three queries, three documents each
        [(q, 10 + q) for q in range(4)],  # known items
        [(1, 11), (2, 11), (3, 12), (4, 12)],  # query papers sharing their one relevant paper
        [(q, 10 + (q + k) % 4) for q in range(5) for k in range(2)],  # five queries re-ranking four papers
        [(q, 10 + q) for q in range(6)] + [(10 + q, q) for q in range(6)],  # papers that cite each other
    ],
    ids=["three by three", "known items", "shared answers", "small pool", "both ways"],
)
def test_small_legitimate_files_are_read_as_written(tmp_path, pairs):
    papers, path = _papers(tmp_path / "papers.jsonl"), tmp_path / "small.qrels"
    path.write_text("".join(f"d{q} 0 d{d} 1\n" for q, d in pairs))
    assert set(load_tasks("retrieval", path, RetrievalOptions(papers=papers)).tasks[0].qrels) == {
        f"d{q}" for q, _ in pairs
    }


def test_a_relevance_column_holding_document_ids_is_refused(tmp_path, caplog):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({"paper_id": i, "title": f"{WORDS[i]} graphs"}) + "\n" for i in range(40)))
    path = tmp_path / "qrels.tsv"
    path.write_text("".join(f"{q}\t{k % 2}\t{20 + 3 * q + k}\n" for q in range(3) for k in range(3)))  # qid rel docid
    assert _evaluate("--data", path, "--papers", papers, "--model", tmp_path / "no-model") == 2
    assert "qrels.tsv: the relevance column holds document ids: 9 of 9 relevance values are ids" in caplog.text
    path.write_text("".join(f"{q}\t{20 + 3 * q + k}\t{k % 2}\n" for q in range(3) for k in range(3)))
    assert len(load_tasks("retrieval", path, RetrievalOptions(papers=papers)).tasks[0].qrels) == 3


@pytest.mark.parametrize("grade", ["1_0", "+1", "\u0661"])
def test_only_ascii_integers_are_grades(tmp_path, grade):
    path = tmp_path / "grades.tsv"
    path.write_text(f"d1\td2\t{grade}\nd3\td4\t1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"grades\.tsv, line 1: relevance must be an integer"):
        read_qrels(path)


def test_a_file_that_judges_nothing_relevant_is_refused_naming_the_likely_column(tmp_path):
    path = tmp_path / "qrels.trec"
    path.write_text("".join(f"d{i} 1 d{i + 10} 0\n" for i in range(6)))  # the grade in the iteration field
    with pytest.raises(ValueError, match=r"no judgement is relevant.*\(field 2 holds a grade of 1 or more on every"):
        read_qrels(path)
    path.write_text("".join(f"d{i} 0 d{i + 10} 1.5\n" for i in range(6)))  # grades that are not integers
    with pytest.raises(ValueError, match=r"relevance must be an integer, got '1\.5'; relevance grades are integers"):
        read_qrels(path)


def test_legitimate_shapes_are_not_called_swapped(tmp_path):
    papers = _papers(tmp_path / "papers.jsonl")
    known_item = tmp_path / "known.qrels"  # every query judged once, against documents many and distinct
    known_item.write_text("".join(f"d{i} 0 d{i + 30} 1\n" for i in range(30)))
    assert len(load_tasks("retrieval", known_item, RetrievalOptions(papers=papers)).tasks[0].qrels) == 30
    pool = tmp_path / "pool.qrels"  # ten query papers re-ranking one pool of eight, each with a relevant paper
    pool.write_text("".join(f"d{q} 0 d{50 + d} {int(d == q % 8)}\n" for q in range(10) for d in range(8)))
    assert len(load_tasks("retrieval", pool, RetrievalOptions(papers=papers)).tasks[0].qrels) == 10
    cacm = load_tasks("cacm", shared_data("cacm"), tasks=["search"], skip_invalid=True)  # SMART's qrels.text
    assert len(cacm.tasks[0].qrels) == 52


# 7. A first line whose grade is not an integer, taken for a header ----------------------------------------------


@pytest.mark.parametrize("line", [1, 5])
@pytest.mark.parametrize("grade", ["1.5", "Identical", "-1", "2.0", "relevant"])
def test_a_grade_is_read_by_one_rule_on_every_line(tmp_path, grade, line):
    rows = [f"d{i} d{i + 10} {i % 2}" for i in range(6)]
    rows[line - 1] = f"d{line - 1} d{line + 9} {grade}"
    path = tmp_path / "grades.tsv"
    path.write_text("\n".join(rows) + "\n")
    if grade == "-1":
        columns, lines = read_qrels(path)
        assert lines == [1, 2, 3, 4, 5, 6] and columns["score"][line - 1] == -1
    else:
        with pytest.raises(
            ValueError, match=rf"grades\.tsv, line {line}: relevance must be an integer, got '{grade}'"
        ):
            read_qrels(path)


def test_one_query_and_document_judged_twice_with_two_grades_is_refused(tmp_path, caplog):
    path = tmp_path / "qrels.tsv"
    path.write_text("d1\td2\t1\nd1\td4\t1\nd3\td5\t2\nd1\td2\t1\n")  # the same grade again reads
    assert read_qrels(path)[1] == [1, 2, 3, 4]
    path.write_text("d1\td2\t1\nd1\td4\t1\nd3\td5\t2\nd1\td4\t0\n")
    assert _evaluate("--data", path, "--papers", _papers(tmp_path / "papers.jsonl")) == 2
    assert "line 4: 'd1' judges 'd4' 0, but line 2 judged it 1" in caplog.text


def test_only_column_names_make_a_header_and_a_wrong_column_order_is_named(tmp_path, caplog):
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nd1\td2\t1\n")
    assert read_qrels(path)[1] == [2]
    path.write_text("".join(f"d{i}\t{i % 2}\td{i + 1}\n" for i in range(5)))  # qid rel docid
    assert _evaluate("--data", path, "--papers", _papers(tmp_path / "papers.jsonl")) == 2
    assert "qrels.tsv, line 1: relevance must be an integer, got 'd1'; no line has an integer relevance" in caplog.text
    assert "(field 2 holds an integer on every line)" in caplog.text and "--skip-invalid" not in caplog.text
    path.write_text("01 10 0 0\n02 11 0 0\n")  # SMART's qrels.text read as TREC: every document '0'
    with pytest.raises(ValueError, match=r"every judgement names the same document '0' \(field 3 of 'qid 0 docid"):
        read_qrels(path)
    caplog.clear()
    path.write_text("1 0 2 1\n3 0 4 1\n")  # every line names unknown ids: no row to skip, the ids are wrong
    assert _evaluate("--data", path, "--papers", tmp_path / "papers.jsonl") == 2
    assert "(no judgement names a known query and document: check the column order" in caplog.text
    assert "--skip-invalid" not in caplog.text


# 8. A query paper ranked as its own candidate ---------------------------------------------------------------------


@pytest.mark.parametrize("candidates", ["judged", "all"])
def test_a_query_paper_is_never_its_own_candidate(tmp_path, caplog, candidates):
    papers = _papers(tmp_path / "papers.jsonl")
    rows = [f"d{q} 0 d{q + k} {int(k < 3)}" for q in range(5) for k in range(1, 8)]
    plain, with_self = tmp_path / "plain.qrels", tmp_path / "self.qrels"
    plain.write_text("\n".join(rows) + "\n")
    with_self.write_text("\n".join(["d0 0 d0 1", *rows]) + "\n")
    vectors = {f"d{i}": v for i, v in enumerate(np.random.default_rng(1).standard_normal((60, 8)).astype(np.float32))}

    def scored(path):
        (task,) = load_tasks("retrieval", path, RetrievalOptions(papers=papers, candidates=candidates)).tasks
        return task.evaluate(vectors, {q: vectors[q] for q in task.queries})

    expected, result = scored(plain), scored(with_self)
    assert result.metrics == pytest.approx(expected.metrics, abs=1e-12)
    assert result.skipped == {"self_judgements": 1} and "left out 1 judgement(s) of a query paper to itself" in (
        caplog.text
    )
    # A benchmark's proximity task (SciDocs' cite, co-view, ..., Multi-SciDocs) keeps the same rule.
    task = ProximityTask("scidocs", "cite", {}, qrels={"d0": {"d0": 1, "d1": 1, "d2": 0}})
    assert task.evaluate(vectors, {}).counts == {"queries": 1, "candidates": 2}


@pytest.mark.parametrize("candidates", ["all", "judged"])
def test_queries_judged_relevant_to_themselves_alone_are_refused_before_the_model_loads(tmp_path, caplog, candidates):
    papers, qrels = _papers(tmp_path / "papers.jsonl"), tmp_path / "self.qrels"
    qrels.write_text("".join(f"d{q} 0 d{q} 1\nd{q} 0 d{q + 20} 0\n" for q in range(4)))
    command = ["--data", qrels, "--papers", papers, "--candidates", candidates, "--model", tmp_path / "none"]
    assert _evaluate(*command) == 2
    assert "self.qrels: the retrieval task 'self' has nothing to score: none of its 4 judged queries" in caplog.text
    assert "a query paper is never its own candidate; 4 left out" in caplog.text


def test_a_query_paper_is_never_its_own_recommendation(caplog):
    rng = np.random.default_rng(0)
    vectors = {f"p{i}": v for i, v in enumerate(rng.standard_normal((40, 8)).astype(np.float32))}
    clicks = {}
    for split, count in (("train", 60), ("val", 20), ("test", 30)):
        drawn = [[f"p{i}" for i in rng.choice(40, 6, replace=False)] for _ in range(count)]
        clicks[split] = [Click(query, shown[0], tuple(shown), line) for line, (query, *shown) in enumerate(drawn, 2)]
    plain = SciDocsRecomm("plain", clicks, np.ones(5))
    # The query paper shown after the others, and a click of a query paper on itself: neither is ranked.
    test = [Click(c.query_id, c.clicked_id, (*c.shown_ids, c.query_id), c.line) for c in clicks["test"]]
    own = SciDocsRecomm("own", {**clicks, "test": [*test, Click("p1", "p1", ("p1", "p2"), 99)]}, np.ones(6))
    expected, result = evaluate_recommendations(plain, vectors), evaluate_recommendations(own, vectors)
    assert (result["ndcg"], result["P@1"]) == (expected["ndcg"], expected["P@1"]) and result["self_clicks"] == 1
    assert "own: left out 1 click(s) of a query paper on itself" in caplog.text


# 9. --text-fields asked for but not embedded ------------------------------------------------------------------------


def test_evaluate_embeds_the_text_fields_asked_for_records_them_and_never_reuses_other_texts_vectors(
    tiny_bert, tmp_path, monkeypatch
):
    papers = _papers(tmp_path / "papers.jsonl", text="garbage collection memory")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"d{q} 0 d{q + k} 1\n" for q in range(4) for k in range(1, 4)))
    encoded: list[str] = []
    original = PaperEncoder.encode

    def encode(self, papers, **kwargs):
        encoded.extend(p for p in papers if isinstance(p, str))
        return original(self, papers, **kwargs)

    monkeypatch.setattr(PaperEncoder, "encode", encode)

    def run(*fields):
        encoded.clear()
        output = tmp_path / f"{'-'.join(fields)}.json"
        arguments = ("--data", qrels, "--papers", papers, "--model", tiny_bert, "--cache-dir", tmp_path / "cache")
        assert _evaluate(*arguments, "--output", output, "--text-fields", *fields) == 0
        return json.loads(output.read_text())

    titles = run("title")
    assert encoded and not any("garbage collection memory" in text for text in encoded)
    both = run("title", "text")
    assert sum("garbage collection memory" in text for text in encoded) == 60  # every paper, embedded anew
    assert both["embedding"]["texts_encoded"] == 60 and titles["settings"]["text_fields"] == ["title"]
    assert both["settings"]["text_fields"] == ["title", "text"] and both["tasks"][0]["details"]["text_fields"] == [
        "title",
        "text",
    ]


def test_text_fields_no_paper_has_are_refused_before_the_model_loads(tmp_path, caplog):
    papers, qrels = _papers(tmp_path / "papers.jsonl"), tmp_path / "qrels.txt"
    qrels.write_text("d1 0 d2 1\n")
    assert (
        _evaluate(
            "--data", qrels, "--papers", papers, "--model", tmp_path / "no-model", "--text-fields", "title", "body"
        )
        == 2
    )
    assert f"{papers}: no paper has text in body, named as a text field (--text-fields title body)" in caplog.text


def _text_field_run(command, tmp_path, *fields):
    """``command`` over papers whose ``body`` is absent from d3 and empty in d4, with ``--text-fields fields``."""
    papers = [
        {"paper_id": f"d{i}", "title": f"graphs {i}", "abstract": "trees", "body": f"body {i}"} for i in range(6)
    ]
    del papers[3]["body"]
    papers[4]["body"] = ""
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    (tmp_path / "qrels.txt").write_text("d1 0 d2 1\nd2 0 d5 1\n")
    if command == "embed":
        argv = ["embed", "--input", path, "--output", tmp_path / "out.jsonl", "--no-progress"]
    elif command == "neighbours":
        argv = ["neighbours", "--papers", path, "-k", "2", "--output", tmp_path / "out.csv", "--no-progress"]
    else:
        argv = ["evaluate", "--benchmark", "retrieval", "--data", tmp_path / "qrels.txt", "--papers", path]
        argv += ["--no-cache", "--no-progress"]
    return main([str(a) for a in [*argv, "--text-fields", *fields]])


@pytest.mark.parametrize("command", ["embed", "evaluate", "neighbours"])
def test_papers_lacking_a_text_field_are_named_before_the_model_loads(command, tmp_path, caplog, monkeypatch):
    def loaded(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(PaperEncoder, "from_pretrained", loaded)
    assert _text_field_run(command, tmp_path, "body") == 2
    assert (
        f"{tmp_path / 'papers.jsonl'}, line 4 (paper_id 'd3'): no text in body; it has paper_id, title, abstract"
        in (caplog.text)
    )
    assert "--skip-invalid" in caplog.text


@pytest.mark.parametrize("command", ["embed", "evaluate", "neighbours"])
def test_papers_lacking_one_of_the_text_fields_are_counted_and_named(command, tiny_bert, tmp_path, caplog):
    assert _text_field_run(command, tmp_path, "title", "body", "--model", str(tiny_bert)) == 0
    assert "papers.jsonl: 2 of 6 papers lack text in some of the text fields (title body)" in caplog.text
    assert "line 4 (paper_id 'd3'): no body; it has paper_id, title, abstract" in caplog.text
    assert "line 5 (paper_id 'd4'): no body; it has paper_id, title, abstract" in caplog.text


@pytest.mark.parametrize("command", ["embed", "evaluate", "neighbours"])
def test_text_fields_no_paper_has_are_one_error_naming_the_fields_papers_have(command, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(PaperEncoder, "from_pretrained", lambda *a, **k: pytest.fail("the model was loaded"))
    assert _text_field_run(command, tmp_path, "Title", "Abstract") == 2
    assert "no valid papers (all 6 record(s) invalid): none has text in Title, Abstract" in caplog.text
    assert "the records' fields: paper_id, title, abstract, body" in caplog.text
    assert "--skip-invalid" not in caplog.text
