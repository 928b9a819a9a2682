"""The SMART collection reader, on a hand-written file with CACM's quirks and on the real CACM."""

from __future__ import annotations

import logging

import pytest
from helpers import shared_data

from sciembed import InvalidPaperError
from sciembed.data.smart import CACM_CITATION, CACM_COCITATION, read_smart_collection

SMART = """.I 1
.T
Compiling Algebraic
Formulas
.W
A method for
translating formulas.
.A
Doe, J.
Roe, R.
.X
2\t5\t1
2\t5\t1
1\t5\t1
3\t6\t1
9\t5\t1
.I 2
.T
Syntax Analysis
.X
1\t5\t2
.I 3
.B
CACM 1960
.X
1\t6\t3
.I 4
.T
Broken
.I 4
5
.T
A record whose id line broke
.X
1\t5\t45
"""


def _write(tmp_path, text=SMART, newline="\r\n"):
    path = tmp_path / "tiny.all"
    path.write_bytes(text.replace("\n", newline).encode())
    return path


def test_reads_records_fields_and_undirected_links(tmp_path):
    collection = read_smart_collection(_write(tmp_path), skip_invalid=True)
    papers = {p["paper_id"]: p for p in collection.papers}
    assert list(papers) == ["1", "2", "4"]
    assert papers["1"]["title"] == "Compiling Algebraic Formulas"
    assert papers["1"]["abstract"] == "A method for translating formulas."
    assert papers["1"]["authors"] == ["Doe, J.", "Roe, R."]
    assert collection.links[CACM_CITATION] == {("1", "2")}
    assert collection.links[CACM_COCITATION] == {("1", "3")}
    stats = collection.link_stats[CACM_CITATION]
    assert (stats["lines"], stats["self_pairs"], stats["dangling"], stats["repeats"], stats["pairs"]) == (
        5,
        1,
        1,
        2,
        1,
    )  # the skipped record's own .X lines are not read
    assert collection.neighbours()["2"] == {"1"}


def test_textless_and_broken_records_are_reported(tmp_path):
    collection = read_smart_collection(_write(tmp_path), skip_invalid=True)
    reasons = [str(problem) for problem in collection.skipped]
    assert len(reasons) == 2
    assert "line 22 (paper_id '3'): neither title nor abstract" in reasons[0]
    assert "line 30 (paper_id '4')" in reasons[1]
    assert "text between .I and the first field ('5'" in reasons[1]
    assert "duplicate id (first at line 27)" in reasons[1]
    assert "its .X lines from line 35 name the record 45" in reasons[1]


def test_strict_mode_stops_at_the_first_bad_record(tmp_path):
    with pytest.raises(InvalidPaperError, match="paper_id '3'"):
        read_smart_collection(_write(tmp_path, newline="\n"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stray\n.I 1\n.T\nX\n", "line 1: text before the first .I record"),
        (".I 1\n.Q\nX\n", "line 2: unknown field marker"),
        (".I 1\n.T\nX\n.X\n1 5\n", "line 5: .X line must be"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_smart_collection(_write(tmp_path, text))


def test_real_cacm():
    collection = read_smart_collection(shared_data("cacm"), skip_invalid=True)
    assert len(collection.papers) == 3203
    assert sum(1 for p in collection.papers if p["abstract"]) == 1586
    # README: 2,720 citation links; 9 of them touch record 2856, whose id line is broken in the file.
    assert len(collection.links[CACM_CITATION]) == 2711
    assert collection.link_stats[CACM_CITATION]["dangling"] == 9
    [problem] = collection.skipped
    assert problem.location == "line 92798" and "2856" in problem.reason


def test_queries_and_qrels(tmp_path):
    from sciembed.data.smart import read_smart_qrels, read_smart_queries

    queries = tmp_path / "query.text"
    queries.write_text(".I 1\n.W\n What is\n time sharing?\n.N\n 1. note\n.I 2\n.W\nGarbage collection\n.A\nDoe, J.\n")
    loaded = read_smart_queries(queries)
    assert loaded["query_id"] == ["1", "2"] and loaded["text"] == ["What is time sharing?", "Garbage collection"]
    assert loaded["authors"] == [[], ["Doe, J."]]
    qrels = tmp_path / "qrels.text"
    qrels.write_text("01 10 0 0\n01 11 0 0\n02 12 0 0\n")
    judged = read_smart_qrels(qrels, query_ids={"1", "2"}, paper_ids={"10", "11", "12"})
    assert list(zip(judged["query_id"], judged["cand_id"], judged["score"])) == [
        ("1", "10", 1),
        ("1", "11", 1),
        ("2", "12", 1),
    ]
    with pytest.raises(ValueError, match=r"1 judgement\(s\) name unknown queries or papers: line 3 \('2', '12'\)"):
        read_smart_qrels(qrels, paper_ids={"10", "11"})
    assert len(read_smart_qrels(qrels, paper_ids={"10", "11"}, skip_invalid=True)) == 2
    qrels.write_text("01 10 0 0\n01 10\n")
    with pytest.raises(ValueError, match=r"qrels\.text, line 2: expected 'qid docid 0 0'"):
        read_smart_qrels(qrels)
    qrels.write_text("01 10 0 0\n1 10 0 0\n")
    with pytest.raises(ValueError, match=r"line 2: judgement \('1', '10'\) repeats line 1"):
        read_smart_qrels(qrels)


def test_real_cacm_queries_and_qrels():
    from sciembed.data.smart import read_smart_qrels, read_smart_queries

    queries = read_smart_queries(shared_data("cacm", "query.text"))
    assert len(queries) == 64
    papers = {p["paper_id"] for p in read_smart_collection(shared_data("cacm"), skip_invalid=True).papers}
    qrels = read_smart_qrels(shared_data("cacm", "qrels.text"), query_ids=set(queries["query_id"]), paper_ids=papers)
    assert len(qrels) == 796 and len(set(qrels["query_id"])) == 52


# ---------------------------------------------------------------------- other collections: CISI's weights

# CISI's .X lines read `other<TAB>weight<TAB>record`: the middle column counts, it is no CACM link type.
CISI = """.I 1
.T
18 Editions of the Dewey Decimal Classifications
.W
The present study is a history of the Dewey Decimal Classification.
.X
1\t5\t1
2\t1\t1
3\t1\t1
3\t1\t1
.I 2
.T
Use Made of Technical Libraries
.X
1\t1\t2
3\t2\t2
2\t5\t2
.I 3
.T
Two Kinds of Power
.W
An essay on documentation.
.X
1\t1\t3
2\t2\t3
"""


def test_a_cisi_shaped_file_is_refused_with_counts_and_read_when_told(tmp_path, caplog):
    (tmp_path / "cisi").mkdir()
    path = tmp_path / "cisi" / "CISI.ALL"  # SMART file names are matched without case
    path.write_text(CISI)
    with pytest.raises(
        ValueError,
        match=r"CISI\.ALL: 7 of 9 \.X lines have a middle column that is not a CACM link type \(4 coupling, "
        r"5 citation, 6 co-citation\): 1 on 5 line\(s\), 2 on 2 line\(s\); the first, line 8: '2\\t1\\t1'\. "
        r".*pass links='all' \(on the command line: --smart-links all\)",
    ):
        read_smart_collection(tmp_path / "cisi")
    with caplog.at_level(logging.INFO, logger="sciembed"):
        collection = read_smart_collection(tmp_path / "cisi", links="all")
    assert collection.link_reading == "all" and list(collection.links) == [CACM_CITATION]
    assert collection.links[CACM_CITATION] == {("1", "2"), ("1", "3"), ("2", "3")}
    [line] = [r.getMessage() for r in caplog.records if r.name == "sciembed.data.smart"]
    assert line.endswith(
        "CISI.ALL: 3 papers with text, 0 record(s) skipped; .X citation links (every .X line, links='all'): "
        "9 lines -> 3 undirected links (4 repeats, 2 self pairs, 0 naming no record)"
    )
    with pytest.raises(ValueError, match=r"unknown \.X link reading 'weights'; one of cacm, all"):
        read_smart_collection(path, links="weights")


def test_a_cisi_shaped_collection_is_evaluated_when_told_how_to_read_its_links(tiny_encoder, tmp_path):
    from sciembed.evaluation import evaluate
    from sciembed.evaluation.benchmarks import CacmOptions, Reading

    (tmp_path / "cisi").mkdir()
    (tmp_path / "cisi" / "CISI.ALL").write_text(CISI)
    with pytest.raises(ValueError, match="--smart-links all"):
        evaluate(
            tiny_encoder,
            "cacm",
            tmp_path / "cisi",
            use_cache=False,
            show_progress_bar=False,
            reading=Reading(tasks=["cite"]),
        )
    report = evaluate(
        tiny_encoder,
        "cacm",
        tmp_path / "cisi",
        use_cache=False,
        show_progress_bar=False,
        reading=Reading(tasks=["cite"]),
        options=CacmOptions(smart_links="all"),
    )
    assert [result.task_id for result in report.results] == ["cite"] and report.results[0].counts["queries"] == 3


def test_reader_counts_are_one_line_and_undirected_links_read_as_links(tmp_path, caplog):
    from sciembed.training.examples import read_citation_source

    path = _write(tmp_path)
    path = path.rename(tmp_path / "Tiny.All")
    with caplog.at_level(logging.INFO, logger="sciembed"):
        source = read_citation_source(path)  # skips the bad records, as training does
    [counts] = [
        r.getMessage() for r in caplog.records if r.name == "sciembed.data.smart" and r.levelno == logging.INFO
    ]
    assert counts.endswith(
        "Tiny.All: 3 papers with text, 2 record(s) skipped; .X type 5 (citation): 5 lines -> 1 undirected links "
        "(2 repeats, 1 self pairs, 1 naming no record); type 6 (co-citation): 2 lines -> 1 undirected links "
        "(1 repeats, 0 self pairs, 0 naming no record)"
    )
    [graph] = [r.getMessage() for r in caplog.records if r.name == "sciembed.data.graph"]
    assert "1 undirected link(s) given, 1 kept (stored both ways: 2 citations)" in graph  # not "2 kept of 1 given"
    assert source.graph.num_citations == 2


def test_training_on_a_cisi_shaped_collection_needs_the_link_reading(tmp_path, tiny_bert, caplog):
    from sciembed.cli import main
    from sciembed.training.run import prepare

    extra = "".join(
        f".I {i}\n.T\nPaper {i} on libraries\n.W\nIndexing and documentation.\n.X\n{i - 1}\t1\t{i}\n{i + 1}\t1\t{i}\n"
        for i in range(4, 9)
    )
    (tmp_path / "cisi").mkdir()
    (tmp_path / "cisi" / "cisi.all").write_text(CISI + extra)
    assert (
        main(
            [
                "train",
                "--recipe",
                "specter",
                "--base",
                str(tiny_bert),
                "--data",
                str(tmp_path / "cisi"),
                "--output",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    assert (
        "17 of 19 .X lines have a middle column that is not a CACM link type" in caplog.text
        and "--smart-links all" in caplog.text
    )
    run = prepare(
        "specter",
        tiny_bert,
        tmp_path / "cisi",
        tmp_path / "out",
        {"max_steps": 1, "embedding.max_length": 32},
        smart_links="all",
    )
    assert run.data["smart_links"] == "all" and run.data["queries"] == 8 and len(run.trainer.train_dataset) > 0
