"""The SciDocs release reader, on small fixtures written in allenai/scidocs' exact layout."""

from __future__ import annotations

import json

import pytest

from sciembed import InvalidPaperError
from sciembed.data.scidocs import read_scidocs


def _paper(paper_id, abstract="An abstract."):
    return {"paper_id": paper_id, "title": f"Title {paper_id}", "abstract": abstract}


def _release(folder, *, tasks=("cite", "cocite", "coview", "coread", "mag", "mesh")):
    folder.mkdir()
    view = {pid: _paper(pid) for pid in ("q1", "q2", "c1", "c2", "c3")}
    (folder / "paper_metadata_view_cite_read.json").write_text(json.dumps(view))
    mag_mesh = {pid: _paper(pid, abstract=None) for pid in ("m1", "m2", "m3", "m4")}
    (folder / "paper_metadata_mag_mesh.json").write_text(json.dumps(mag_mesh))
    for task in tasks:
        (folder / task).mkdir()
        if task in ("mag", "mesh"):
            for split, rows in {"train": ["m1,0", "m2,1"], "val": ["m3,1"], "test": ["m4,0", "m1,2"]}.items():
                (folder / task / f"{split}.csv").write_text("pid,class_label\n" + "\n".join(rows) + "\n")
        else:
            for split in ("val", "test"):
                (folder / task / f"{split}.qrel").write_text("q1 0 c1 1\nq1 0 c2 0\nq2 0 c3 1\n")
    return folder


def test_full_layout_loads_every_task(tmp_path):
    release = read_scidocs(_release(tmp_path / "scidocs"))
    assert release.missing == ["paper_metadata_recomm.json"]
    assert set(release.qrels) == {"cite", "cocite", "coview", "coread"}
    assert release.qrels["cite"]["test"].to_dict() == {
        "query_id": ["q1", "q1", "q2"],
        "cand_id": ["c1", "c2", "c3"],
        "score": [1, 0, 1],
    }
    assert {split: len(data) for split, data in release.labels["mag"].items()} == {"train": 2, "val": 1, "test": 2}
    assert release.labels["mesh"]["test"]["label"] == [0, 2]
    assert len(release.papers["view_cite_read"]) == 5 and release.papers["mag_mesh"]["abstract"][0] == ""


def test_partial_folder_lists_absent_tasks(tmp_path):
    release = read_scidocs(_release(tmp_path / "scidocs", tasks=("cite", "mag")))
    assert set(release.qrels) == {"cite"} and set(release.labels) == {"mag"}
    assert {"cocite", "coview", "coread", "mesh"} <= set(release.missing)


def test_paths_py_spelling_of_metadata_file_is_accepted(tmp_path):
    folder = _release(tmp_path / "scidocs", tasks=("cite",))
    (folder / "paper_metadata_view_cite_read.json").rename(
        folder / "paper_metadata_paper_metadata_view_cite_read.json"
    )
    assert len(read_scidocs(folder).papers["view_cite_read"]) == 5


def test_qrel_line_with_wrong_field_count_names_file_and_line(tmp_path):
    folder = _release(tmp_path / "scidocs", tasks=("cocite",))
    (folder / "cocite" / "test.qrel").write_text("q1 0 c1 1\nq1 c2 0\n")
    with pytest.raises(
        ValueError, match=r"cocite/test\.qrel, line 2: a qrel line is 'qid 0 pid rel' \(4 fields\), got 3"
    ):
        read_scidocs(folder)


def test_csv_header_and_rows_are_checked(tmp_path):
    folder = _release(tmp_path / "scidocs", tasks=("mesh",))
    (folder / "mesh" / "val.csv").write_text("pid,label\nm3,1\n")
    with pytest.raises(ValueError, match=r"mesh/val\.csv, line 1: expected the header 'pid,class_label'"):
        read_scidocs(folder)
    (folder / "mesh" / "val.csv").write_text("pid,class_label\nm3,1\nm1,2,3\n")
    with pytest.raises(ValueError, match=r"mesh/val\.csv, line 3: expected 'pid,class_label'"):
        read_scidocs(folder)


def test_rows_naming_unknown_papers_fail_or_are_counted(tmp_path):
    folder = _release(tmp_path / "scidocs", tasks=("cite", "mag"))
    (folder / "cite" / "val.qrel").write_text("q1 0 c1 1\nq1 0 nope 0\nq9 0 c1 0\n")
    (folder / "mag" / "train.csv").write_text("pid,class_label\nm1,0\nghost,1\n")
    with pytest.raises(InvalidPaperError, match="3 invalid") as error:
        read_scidocs(folder)
    assert "cite/val.qrel, line 2 (paper_id 'nope'): cand_id not in paper_metadata_view_cite_read.json" in str(
        error.value
    )
    assert "cite/val.qrel, line 3 (paper_id 'q9'): query_id not in" in str(error.value)
    release = read_scidocs(folder, skip_invalid=True)
    assert release.stats["cite"]["val_unknown_papers"] == 2 and release.stats["mag"]["train_unknown_papers"] == 1
    assert release.qrels["cite"]["val"]["cand_id"] == ["c1"] and release.labels["mag"]["train"]["paper_id"] == ["m1"]
    assert len(release.skipped) == 3


def test_unknown_task_and_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="unknown SciDocs task.*supported: cite, cocite"):
        read_scidocs(tmp_path, tasks=("recomm",))
    with pytest.raises(FileNotFoundError, match="none of the SciDocs tasks"):
        read_scidocs(tmp_path)


def test_a_folder_that_does_not_exist_is_named_as_missing(tmp_path):
    """Not "none of the SciDocs tasks is there": the folder itself is missing (a typo in --data), or is a file."""
    with pytest.raises(FileNotFoundError, match=r"scidocs-typo: no such folder"):
        read_scidocs(tmp_path / "scidocs-typo")
    (tmp_path / "papers.json").write_text("{}")
    with pytest.raises(NotADirectoryError, match=r"papers\.json: a file, not a folder"):
        read_scidocs(tmp_path / "papers.json")
