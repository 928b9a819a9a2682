"""Paper readers under hostile input: rows that do not fit the CSV header, byte-order marks, bytes that are
not UTF-8, and random mixtures of valid and invalid records in every format (property-based)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sciembed.data.papers import InvalidPaperError, read_papers


def test_csv_row_with_more_fields_than_the_header_is_an_error_not_a_lost_abstract(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("paper_id,title,abstract\np1,Graphs,about graphs\np2,Lists, trees and graphs,about lists\np3,Short\n")
    with pytest.raises(InvalidPaperError, match=r"papers\.csv, line 3 \(paper_id 'p2'\): 4 fields where the header names 3"):
        read_papers(path)
    read = read_papers(path, skip_invalid=True)
    assert [p["paper_id"] for p in read.papers] == ["p1"] and [str(s).split(": ", 1)[1] for s in read.skipped] == [
        "4 fields where the header names 3 (an unquoted comma or quote?)", "2 fields where the header names 3 (an unquoted comma or quote?)"]
    assert read.papers[0]["abstract"] == "about graphs"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
def test_a_byte_order_mark_is_read_as_utf8(tmp_path, suffix):
    path = tmp_path / f"papers{suffix}"
    text = {".csv": "paper_id,title,abstract\np1,Graphs,about graphs\n",
            ".jsonl": json.dumps({"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}) + "\n",
            ".json": json.dumps([{"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}])}[suffix]
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_papers(path).papers == [{"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_bytes_that_are_not_utf8_name_their_line_and_can_be_skipped(tmp_path, suffix):
    path = tmp_path / f"papers{suffix}"
    good = {".csv": b"p1,Graphs,about graphs\n", ".jsonl": json.dumps({"paper_id": "p1", "title": "Graphs"}).encode() + b"\n"}[suffix]
    bad = {".csv": b"p2,Caf\xe9,latin-1\n", ".jsonl": b'{"paper_id": "p2", "title": "Caf\xe9"}\n'}[suffix]
    path.write_bytes((b"paper_id,title,abstract\n" if suffix == ".csv" else b"") + good + bad)
    line = 3 if suffix == ".csv" else 2
    with pytest.raises(InvalidPaperError, match=rf"papers{suffix}, line {line}.*not UTF-8 text"):
        read_papers(path)
    read = read_papers(path, skip_invalid=True)
    assert [p["paper_id"] for p in read.papers] == ["p1"] and len(read.skipped) == 1


def test_a_json_file_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "papers.json"
    path.write_bytes(b'[\n{"paper_id": "p1", "title": "Graphs"},\n{"paper_id": "p2", "title": "Caf\xe9"}\n]')
    with pytest.raises(ValueError, match=r"papers\.json, line 3: not UTF-8 text"):
        read_papers(path)


# ---------------------------------------------------------------------- property-based

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(str.strip)
_VALID = st.fixed_dictionaries({"title": _TEXT, "abstract": _TEXT})
_KINDS = st.sampled_from(["valid", "no_id", "no_text", "duplicate", "malformed"])


def _write(path, records):
    """The records in ``path``'s format; returns, per record, what the reader must do with it."""
    suffix = path.suffix
    if suffix == ".jsonl":
        lines = []
        for kind, record in records:
            lines.append("{broken" if kind == "malformed" else json.dumps(record))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif suffix == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["paper_id", "title", "abstract"])
        for kind, record in records:
            row = [record.get("paper_id", ""), record.get("title", ""), record.get("abstract", "")]
            writer.writerow(row + ["surplus"] if kind == "malformed" else row)
        path.write_text(buffer.getvalue(), encoding="utf-8")
    else:
        path.write_text(json.dumps([record for kind, record in records if kind != "malformed"]), encoding="utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.tuples(_KINDS, _VALID), min_size=1, max_size=12), suffix=st.sampled_from([".jsonl", ".csv", ".json"]))
def test_every_valid_record_comes_out_once_intact_and_every_invalid_one_is_reported(tmp_path, kinds, suffix):
    records, expected, invalid = [], [], 0
    for number, (kind, paper) in enumerate(kinds):
        if kind == "malformed" and suffix == ".json":
            kind = "no_id"  # a JSON list cannot hold a line that is not JSON
        record = {"paper_id": f"p{number}", **paper}
        if kind == "no_id":
            record.pop("paper_id")
        elif kind == "no_text":
            record.update(title="", abstract="")
        elif kind == "duplicate" and expected:
            record["paper_id"] = expected[0]["paper_id"]
        elif kind == "duplicate":
            kind = "valid"
        records.append((kind, record))
        if kind == "valid":
            expected.append(record)
        else:
            invalid += 1
    path = tmp_path / f"papers{suffix}"
    _write(path, records)
    if not expected:
        with pytest.raises(InvalidPaperError):
            read_papers(path, skip_invalid=True)
        return
    read = read_papers(path, skip_invalid=True)
    assert [(p["paper_id"], p["title"], p["abstract"]) for p in read.papers] == [(r["paper_id"], r["title"], r["abstract"]) for r in expected]
    assert len(read.skipped) == invalid and all(s.location for s in read.skipped)
    if invalid:
        with pytest.raises(InvalidPaperError):
            read_papers(path)
