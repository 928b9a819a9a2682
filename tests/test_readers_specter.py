"""The SPECTER release reader, on the real training sample and on broken copies of its layout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import shared_data

from sciembed import InvalidPaperError
from sciembed.data.specter import read_specter_release


def test_real_sample_counts():
    release = read_specter_release(shared_data("specter", "training"))
    data = json.loads((shared_data("specter", "training") / "data.json").read_text())
    assert len(release.papers) == 17
    assert {name: len(split) for name, split in release.queries.items()} == {"train": 12, "val": 2, "test": 3}
    assert (len(release.citing), len(release.hop_query)) == (85, 337)
    stats = release.stats
    assert (
        stats["queries"],
        stats["papers_in_graph"],
        stats["graph_papers_without_text"],
        stats["queries_in_no_split"],
    ) == (20, 399, 382, 3)
    # Every direct citation is a count-5 entry of data.json, every hop a count-1 entry.
    assert all(data[q][c]["count"] == 5 for q, c in zip(release.citing, release.cited))
    assert all(data[q][c]["count"] == 1 for q, c in zip(release.hop_query, release.hop_candidate))
    assert release.citing.dtype.kind == "U" and release.skipped == []
    # Split queries all have text in this sample; papers carry the SPECTER fields.
    assert set(release.papers.column_names) == {"paper_id", "title", "abstract"}
    assert set(release.queries["test"]["paper_id"]) <= set(release.papers["paper_id"])


def _write(folder, data, metadata, splits):
    folder.mkdir(exist_ok=True)
    (folder / "data.json").write_text(json.dumps(data, indent=2))
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2))
    for name, ids in splits.items():
        (folder / f"{name}.txt").write_text("\n".join(ids) + "\n")
    return folder


DATA = {"q1": {"a": {"count": 5}, "b": {"count": 1}}, "q2": {"q2": {"count": 5}, "a": {"count": 1}}}
META = {
    "q1": {"paper_id": "q1", "title": "Query one", "abstract": "x"},
    "a": {"paper_id": "a", "title": "A", "abstract": None},
}


def test_textless_queries_are_counted_and_self_pairs_kept(tmp_path):
    release = read_specter_release(_write(tmp_path / "r", DATA, META, {"train": ["q1", "q2"]}))
    assert release.stats["train_queries_without_text"] == 1
    assert release.stats["self_pairs"] == 1
    assert sorted(zip(release.citing, release.cited)) == [("q1", "a"), ("q2", "q2")]
    assert release.papers["abstract"] == ["x", ""]


def test_bad_count_names_file_query_and_candidate(tmp_path):
    data = {"q1": {"a": {"count": 3}}}
    with pytest.raises(ValueError, match=r"data\.json: query 'q1', candidate 'a': expected"):
        read_specter_release(_write(tmp_path / "r", data, META, {}))


def test_malformed_json_names_file_and_line(tmp_path):
    folder = _write(tmp_path / "r", DATA, META, {})
    (folder / "data.json").write_text('{\n  "q1": {\n    "a": {"count": 5},,\n  }\n}\n')
    with pytest.raises(ValueError, match=r"data\.json, line 3: malformed JSON"):
        read_specter_release(folder)


def test_unknown_split_ids_fail_or_are_skipped_with_line(tmp_path):
    folder = _write(tmp_path / "r", DATA, META, {"train": ["q1", "zz", "q1"]})
    with pytest.raises(InvalidPaperError, match=r"train\.txt, line 2 \(paper_id 'zz'\): query id not in data\.json"):
        read_specter_release(folder)
    release = read_specter_release(folder, skip_invalid=True)
    assert release.queries["train"]["paper_id"] == ["q1"]
    assert [p.location for p in release.skipped] == ["line 2", "line 3"]
    assert "repeated query id (first at line 1)" in release.skipped[1].reason


def test_bad_metadata_record_names_key(tmp_path):
    meta = {**META, "b": {"paper_id": "b", "title": "", "abstract": ""}}
    with pytest.raises(
        InvalidPaperError, match=r"metadata\.json, key 'b' \(paper_id 'b'\): neither title nor abstract"
    ):
        read_specter_release(_write(tmp_path / "r", DATA, meta, {}))
    release = read_specter_release(tmp_path / "r", skip_invalid=True)
    assert len(release.papers) == 2 and len(release.skipped) == 1
    # The skipped paper is still a graph node: its edge stays.
    assert ("q1", "b") in set(zip(release.hop_query, release.hop_candidate))
    assert isinstance(release.citing, np.ndarray)


def test_a_query_listed_twice_in_data_json_is_refused(tmp_path):
    folder = _write(tmp_path / "r", DATA, META, {})
    (folder / "data.json").write_text('{"q1": {"a": {"count": 5}},\n "q1": {"b": {"count": 1}}}\n')
    with pytest.raises(ValueError, match=r"data\.json, line 2: the key 'q1' appears twice in one object"):
        read_specter_release(folder)
