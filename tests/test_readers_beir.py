"""The BEIR-layout reader, on a small fixture written in the layout MTEB / BEIR ship."""

from __future__ import annotations

import json

import pytest

from sciembed import InvalidPaperError
from sciembed.data.beir import read_beir


def _folder(root, *, corpus=None, queries=None, qrels=None):
    root.mkdir()
    corpus = corpus or [
        {"_id": "d1", "title": "Garbage collection", "text": "We reclaim memory."},
        {"_id": "d2", "title": "", "text": "Join ordering."},
        {"_id": 3, "title": "Only a title", "text": ""},
    ]
    queries = queries or [{"_id": "q1", "text": "memory reclamation", "metadata": {}}, {"_id": "q2", "text": "joins"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels").mkdir()
    for split, text in (qrels or {"test": "q1\td1\t1\nq2\td2\t2\nq2\t3\t0\n", "dev": "q1\td1\t1\n"}).items():
        (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + text)
    return root


def test_fixture_loads_with_counts(tmp_path):
    beir = read_beir(_folder(tmp_path / "scifact"))
    assert beir.corpus.to_dict() == {
        "paper_id": ["d1", "d2", "3"],
        "title": ["Garbage collection", "", "Only a title"],
        "abstract": ["We reclaim memory.", "Join ordering.", ""],
    }
    assert beir.queries["query_id"] == ["q1", "q2"]
    assert set(beir.qrels) == {"test", "dev"}
    assert beir.qrels["test"].to_dict() == {
        "query_id": ["q1", "q2", "q2"],
        "cand_id": ["d1", "d2", "3"],
        "score": [1, 2, 0],
    }
    assert (beir.stats["corpus"], beir.stats["test_qrels"], beir.stats["test_unknown_ids"]) == (3, 3, 0)


def test_qrels_line_with_wrong_field_count_names_file_and_line(tmp_path):
    folder = _folder(tmp_path / "b", qrels={"test": "q1\td1\t1\nq1 d2 1\n"})
    with pytest.raises(ValueError, match=r"qrels/test\.tsv, line 3: a qrels line is .* \(3 fields\), got 1"):
        read_beir(folder)


def test_qrels_header_is_checked(tmp_path):
    folder = _folder(tmp_path / "b")
    (folder / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    with pytest.raises(ValueError, match=r"test\.tsv, line 1: expected the header"):
        read_beir(folder)


def test_malformed_corpus_line_names_file_line_and_id(tmp_path):
    folder = _folder(tmp_path / "b")
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write('{"_id": "d4", "title": \n{"_id": "d1", "title": "again", "text": ""}\n')
    with pytest.raises(InvalidPaperError, match=r"corpus\.jsonl, line 4: malformed JSON"):
        read_beir(folder)
    beir = read_beir(folder, skip_invalid=True)
    reports = [str(p).split(", ", 1)[1] for p in beir.skipped]
    assert reports[0].startswith("line 4: malformed JSON (Expecting value")
    assert reports[1] == "line 5 (paper_id 'd1'): duplicate _id (first at line 1)"
    assert len(beir.corpus) == 3


def test_a_query_line_with_an_unknown_key_is_refused_naming_the_key_meant(tmp_path):
    queries = [{"_id": "q1", "text": "memory", "title": "", "metadata": {}}, {"_id": "q2", "txt": "joins"}]
    with pytest.raises(
        InvalidPaperError, match=r"queries.jsonl, line 2 .*unknown key 'txt' \(did you mean 'text'\?\)"
    ):
        read_beir(_folder(tmp_path / "beir", queries=queries))


def test_qrels_naming_unknown_ids_fail_or_are_counted(tmp_path):
    folder = _folder(tmp_path / "b", qrels={"test": "q1\td1\t1\nq1\tdx\t1\nq9\td1\t1\n"})
    with pytest.raises(InvalidPaperError, match=r"2 invalid") as error:
        read_beir(folder)
    assert "test.tsv, line 3 (paper_id 'dx'): cand_id not in corpus.jsonl" in str(error.value)
    assert "test.tsv, line 4 (paper_id 'q9'): query_id not in queries.jsonl" in str(error.value)
    beir = read_beir(folder, skip_invalid=True)
    assert beir.stats["test_unknown_ids"] == 2 and beir.qrels["test"]["cand_id"] == ["d1"]


def test_missing_file_is_named(tmp_path):
    folder = _folder(tmp_path / "b")
    (folder / "queries.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="no queries.jsonl"):
        read_beir(folder)
