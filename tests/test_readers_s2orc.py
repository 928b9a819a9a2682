"""The S2ORC metadata reader, on the real 1,000-paper sample and on hand-written bad records."""

from __future__ import annotations

import json

import pytest
from helpers import shared_data

from sciembed import InvalidPaperError
from sciembed.data.s2orc import read_s2orc


def test_real_sample_counts():
    sample = read_s2orc(shared_data("s2orc-sample", "data", "metadata", "sample.jsonl"))
    assert len(sample.papers) == 1000 and sample.skipped == []
    assert sample.stats["papers_with_abstract"] == 488
    fields = sample.field_counts()
    assert len(fields) == 19 and fields.most_common(1) == [("Medicine", 217)]
    assert sample.stats["papers_without_field"] == 47
    stats = sample.stats
    assert (stats["outbound_listed"], stats["inbound_listed"], stats["edges_listed"]) == (3107, 2974, 6081)
    assert (stats["edges"], stats["edges_repeated"], stats["self_citations"], stats["edges_internal"]) == (
        6062,
        19,
        4,
        4,
    )
    assert len(sample.citing) == len(sample.cited) == 6062
    assert len(set(zip(sample.citing, sample.cited))) == 6062
    # Almost every citation leaves the sample: that is reported, not dropped.
    assert stats["edges_cited_outside"] == 3090 and stats["edges_citing_outside"] == 2968
    internal = read_s2orc(shared_data("s2orc-sample", "data", "metadata"), internal_only=True)
    assert len(internal.citing) == 4 and (internal.citing == internal.cited).all()


def _record(paper_id, **extra):
    record = {
        "paper_id": paper_id,
        "title": f"Paper {paper_id}",
        "abstract": None,
        "year": 2001,
        "mag_field_of_study": None,
        "outbound_citations": [],
        "inbound_citations": [],
    }
    return json.dumps({**record, **extra})


def test_edges_from_both_ends_are_kept_once(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        "\n".join(
            [
                _record("1", outbound_citations=["2", "9"], mag_field_of_study=["Physics"]),
                _record("2", inbound_citations=["1", "1"], year=None),
            ]
        )
        + "\n"
    )
    sample = read_s2orc(path)
    assert sorted(zip(sample.citing, sample.cited)) == [("1", "2"), ("1", "9")]
    assert (sample.stats["edges_repeated"], sample.stats["edges_cited_outside"]) == (2, 1)
    assert sample.papers["year"] == [2001, None]
    assert sample.papers["mag_field_of_study"] == [["Physics"], []]


def test_bad_records_name_file_line_and_id(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        "\n".join(
            [
                _record("1"),
                '{"paper_id": "2", "title": ',
                _record("3", title="", outbound_citations=["1"]),
                _record("1"),
                _record("4", outbound_citations="1"),
            ]
        )
        + "\n"
    )
    with pytest.raises(InvalidPaperError, match=r"m\.jsonl, line 2: malformed JSON"):
        read_s2orc(path)
    sample = read_s2orc(path, skip_invalid=True)
    reasons = [str(p) for p in sample.skipped]
    assert "line 3 (paper_id '3'): neither title nor abstract" in reasons[1]
    assert "line 4 (paper_id '1'): duplicate paper_id (first at m.jsonl line 1)" in reasons[2]
    assert "line 5 (paper_id '4'): outbound_citations must be a list of ids" in reasons[3]
    assert sample.papers["paper_id"] == ["1"]
    # A textless paper keeps its citation: it is a graph node, never training text.
    assert list(zip(sample.citing, sample.cited)) == [("3", "1")]
