"""Paper text assembly and the .jsonl / .json / .csv readers, including their bad-input reports."""

from __future__ import annotations

import json

import pytest
from helpers import shared_data

from sciembed import InvalidPaperError, paper_text, read_papers


def test_text_is_title_sep_abstract():
    assert paper_text({"title": " A title ", "abstract": "An abstract.\n"}, "[SEP]") == "A title[SEP]An abstract."


@pytest.mark.parametrize(
    ("paper", "expected"),
    [
        ({"title": "Only a title", "abstract": ""}, "Only a title"),
        ({"title": "Only a title", "abstract": None}, "Only a title"),
        ({"title": "Only a title"}, "Only a title"),
        ({"title": "  ", "abstract": "Only an abstract"}, "Only an abstract"),
        ({"abstract": "Only an abstract"}, "Only an abstract"),
    ],
)
def test_text_with_one_field(paper, expected):
    assert paper_text(paper, "</s>") == expected


@pytest.mark.parametrize("paper", [{"paper_id": "x1"}, {"paper_id": "x1", "title": " ", "abstract": None}])
def test_text_without_title_and_abstract_names_the_paper(paper):
    with pytest.raises(ValueError, match="x1.*neither a title nor an abstract"):
        paper_text(paper, "[SEP]")


def test_text_rejects_fields_that_are_neither_text_nor_numbers():
    with pytest.raises(ValueError, match="'x2'.*title must be a string, got list"):
        paper_text({"paper_id": "x2", "title": ["A", "title"]}, "[SEP]")


def test_text_of_other_fields_writes_numbers_as_text():
    """SciRepEval's search task embeds title, abstract, venue and year, the year a number."""
    paper = {"paper_id": "x3", "title": "A title", "abstract": None, "venue": " CACM ", "year": 1975}
    assert paper_text(paper, "[SEP]", ("title", "abstract", "venue", "year")) == "A title[SEP]CACM[SEP]1975"
    with pytest.raises(ValueError, match="'x3' has no text in venue, year"):
        paper_text({"paper_id": "x3", "title": "A title"}, "[SEP]", ("venue", "year"))


RECORDS = [
    {"paper_id": "a", "title": "First", "abstract": "One.", "year": 2020},
    {"paper_id": "b", "title": "Second", "abstract": ""},
    {"paper_id": "c", "title": "", "abstract": "Third abstract."},
]


def _write(path, records, kind):
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    elif kind == "json-list":
        path.write_text(json.dumps(records), encoding="utf-8")
    elif kind == "json-dict":
        path.write_text(
            json.dumps({r["paper_id"]: {k: v for k, v in r.items() if k != "paper_id"} for r in records}),
            encoding="utf-8",
        )
    return path


@pytest.mark.parametrize(("kind", "suffix"), [("jsonl", ".jsonl"), ("json-list", ".json"), ("json-dict", ".json")])
def test_json_readers(tmp_path, kind, suffix):
    result = read_papers(_write(tmp_path / f"papers{suffix}", RECORDS, kind))
    assert [p["paper_id"] for p in result.papers] == ["a", "b", "c"]
    assert [p["title"] for p in result.papers] == ["First", "Second", ""]
    assert result.papers[0]["year"] == 2020
    assert result.skipped == []


def test_csv_reader(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text('paper_id,title,abstract\na,First,"One, with a comma."\nb,Second,\n', encoding="utf-8")
    result = read_papers(path)
    assert [(p["paper_id"], p["title"], p["abstract"]) for p in result.papers] == [
        ("a", "First", "One, with a comma."),
        ("b", "Second", ""),
    ]


def test_integer_ids_and_id_field(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"corpus_id": 7, "title": "T"}, {"corpus_id": 8, "title": "U"}], "jsonl")
    assert [p["paper_id"] for p in read_papers(path).papers] == ["7", "8"]
    path = _write(tmp_path / "q.jsonl", [{"paper_id": "x", "sha": "s1", "title": "T"}], "jsonl")
    assert read_papers(path, id_field="sha").papers[0]["paper_id"] == "s1"


def test_malformed_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"paper_id": "a", "title": "T"}\n\n{"paper_id": "b", "title": \n', encoding="utf-8")
    with pytest.raises(InvalidPaperError, match=r"bad\.jsonl, line 3: malformed JSON"):
        read_papers(path)


def test_malformed_json_file_names_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[\n{"paper_id": "a"},\n{oops}\n]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json, line 3: malformed JSON"):
        read_papers(path)


def test_textless_record_is_reported_with_its_id(tmp_path):
    path = _write(tmp_path / "p.jsonl", [RECORDS[0], {"paper_id": "empty", "title": "", "abstract": None}], "jsonl")
    with pytest.raises(InvalidPaperError, match=r"p\.jsonl, line 2 \(paper_id 'empty'\): neither title nor abstract"):
        read_papers(path)


def test_duplicate_id_is_reported(tmp_path):
    path = _write(tmp_path / "p.jsonl", [RECORDS[0], RECORDS[1], {**RECORDS[0], "title": "Again"}], "jsonl")
    with pytest.raises(InvalidPaperError, match=r"line 3 \(paper_id 'a'\): duplicate paper_id \(first at line 1\)"):
        read_papers(path)


def test_csv_problem_names_line(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("paper_id,title,abstract\na,T,\n,No id,\n", encoding="utf-8")
    with pytest.raises(InvalidPaperError, match=r"p\.csv, line 3: no paper id"):
        read_papers(path)


def test_skip_invalid_skips_counts_and_keeps_the_rest(tmp_path):
    path = tmp_path / "p.jsonl"
    lines = [
        json.dumps(RECORDS[0]),
        "{not json",
        json.dumps({"paper_id": "e", "title": ""}),
        json.dumps(RECORDS[0]),
        json.dumps(RECORDS[2]),
        json.dumps({"title": "no id"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = read_papers(path, skip_invalid=True)
    assert [p["paper_id"] for p in result.papers] == ["a", "c"]
    assert [(s.location, s.paper_id) for s in result.skipped] == [
        ("line 2", None),
        ("line 3", "e"),
        ("line 4", "a"),
        ("line 6", None),
    ]
    assert "duplicate paper_id" in str(result.skipped[2])


def test_json_dict_key_must_match_record_id(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"k1": {"paper_id": "other", "title": "T"}}), encoding="utf-8")
    with pytest.raises(InvalidPaperError, match="key 'k1'.*differs from its key"):
        read_papers(path)


@pytest.mark.parametrize("content", ["", "\n\n", "[]", "{}"])
def test_empty_input_is_an_error(tmp_path, content):
    path = tmp_path / ("p.jsonl" if content.strip() == "" else "p.json")
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidPaperError, match="no papers"):
        read_papers(path)


def test_all_invalid_is_an_error_even_when_skipping(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"paper_id": "x"}], "jsonl")
    with pytest.raises(InvalidPaperError, match=r"no valid papers \(all 1 record\(s\) invalid\)") as raised:
        read_papers(path, skip_invalid=True)
    assert "1 invalid paper record(s):" in str(raised.value) and "--skip-invalid" not in str(raised.value)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_records_without_an_id_field_point_to_id_field_not_skip_invalid(tmp_path, suffix):
    """A file whose ids are in a column of another name: every record lacks an id, so skipping cannot help; the
    message names the fields the record has and the option that reads them, and counts the file's records."""
    rows = [{"pid": f"a{i}", "title": f"Title {i}", "abstract": "Text."} for i in range(3)]
    path = tmp_path / f"p{suffix}"
    if suffix == ".csv":
        path.write_text(
            "pid,title,abstract\n" + "".join(f"{r['pid']},{r['title']},{r['abstract']}\n" for r in rows),
            encoding="utf-8",
        )
    else:
        _write(path, rows, "jsonl")
    fields = "the record's fields: pid, title, abstract"
    with pytest.raises(InvalidPaperError) as raised:
        read_papers(path)
    message = str(raised.value)
    assert (
        f"line {2 if suffix == '.csv' else 1}: no paper id (looked for paper_id / corpus_id / id / doc_id; {fields})"
        in message
    )
    assert "--id-field" in message and "--skip-invalid" not in message
    with pytest.raises(InvalidPaperError) as raised:
        read_papers(path, skip_invalid=True)
    message = str(raised.value)
    assert message.startswith(
        f"{path}, whole file: no valid papers (all 3 record(s) invalid)\n3 invalid paper record(s):"
    )
    assert message.count("no paper id") == 3 and "--id-field" in message and "--skip-invalid" not in message
    assert [p["paper_id"] for p in read_papers(path, id_field="pid").papers] == ["a0", "a1", "a2"]


def test_hints_fit_the_problem(tmp_path):
    """A record that skipping would drop keeps the --skip-invalid hint; an empty file is no invalid record."""
    duplicate = _write(tmp_path / "p.jsonl", [RECORDS[0], RECORDS[0]], "jsonl")
    with pytest.raises(
        InvalidPaperError,
        match=r"1 invalid paper record\(s\):\n.*duplicate paper_id.*\n\(pass skip_invalid=True / --skip-invalid",
    ):
        read_papers(duplicate)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidPaperError) as raised:
        read_papers(empty)
    assert str(raised.value) == f"{empty}, whole file: no papers"


def test_unsupported_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"unsupported paper file type '\.txt'"):
        read_papers(tmp_path / "papers.txt")


def test_real_scirepeval_fos_sample():
    result = read_papers(shared_data("scirepeval-samples", "fos_small.json"))
    assert len(result.papers) == 205 and not result.skipped
    assert result.papers[0]["paper_id"] == "121676082"
    assert sum(1 for p in result.papers if not p["abstract"]) == 48  # kept: a title alone is enough


def test_real_specter_metadata_is_an_id_keyed_dict():
    result = read_papers(shared_data("specter", "sample-metadata.json"))
    first = next(iter(json.loads(shared_data("specter", "sample-metadata.json").read_text())))
    assert result.papers[0]["paper_id"] == first
    assert all(p["title"] or p["abstract"] for p in result.papers)


@pytest.mark.parametrize("column", ["summary", "Abstract"])
def test_a_file_without_an_abstract_field_is_named_once_not_read_as_titles_in_silence(tmp_path, caplog, column):
    import logging

    path = tmp_path / "papers.csv"
    path.write_text(f"paper_id,title,{column}\np1,Graphs,About graphs\np2,Trees,About trees\n")
    with caplog.at_level(logging.WARNING, logger="sciembed"):
        papers = read_papers(path).papers
    assert [p["abstract"] for p in papers] == ["", ""]
    [warning] = [r.getMessage() for r in caplog.records]
    assert (
        f"papers.csv: no record has an abstract field (the first record's fields: paper_id, title, {column})"
        in warning
    )
    caplog.clear()
    path.write_text("paper_id,title,abstract\np1,Graphs,\np2,Trees,About trees\n")
    with caplog.at_level(logging.WARNING, logger="sciembed"):
        read_papers(path)
    assert not caplog.records  # a field that is there, even empty in places, is read as the abstracts
