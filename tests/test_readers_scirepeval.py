"""SciRepEval: the real training samples, and the Hub layout loaded from small local folders."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset
from helpers import shared_data, write_hub_folder

from sciembed import InvalidPaperError
from sciembed.data.scirepeval import load_scirepeval_task, read_scirepeval_sample


def test_real_fos_sample():
    sample = read_scirepeval_sample(shared_data("scirepeval-samples", "fos_small.json"))
    assert sample.kind == "fos" and len(sample.data) == 205 and sample.skipped == []
    assert sum(1 for a in sample.data["abstract"] if not a) == 48  # empty abstracts are kept (title only)
    names = (shared_data("scirepeval-samples", "fos_labels.txt")).read_text().split("\n")
    assert all(names[i] == text for row in sample.data for i, text in zip(row["labels"], row["labels_text"]))
    assert len({t for texts in sample.data["labels_text"] for t in texts}) == 23
    assert isinstance(sample.data[0]["paper_id"], str)


def test_real_mesh_specter_and_search_samples():
    mesh = read_scirepeval_sample(shared_data("scirepeval-samples", "mesh_small.json"))
    assert (mesh.kind, len(mesh.data), len(set(mesh.data["descriptor"]))) == ("mesh", 206, 30)
    triplets = read_scirepeval_sample(shared_data("scirepeval-samples", "specter_small.json"))
    assert (triplets.kind, len(triplets.data)) == ("specter", 200)
    assert set(triplets.data[0]) == {"query", "pos", "neg"} and set(triplets.data[0]["pos"]) == {
        "paper_id",
        "title",
        "abstract",
        "sha",
    }
    search = read_scirepeval_sample(shared_data("scirepeval-samples", "search_small.jsonl"))
    candidates = [c for row in search.data["candidates"] for c in row]
    assert (search.kind, len(search.data), len(candidates)) == ("search", 100, 1000)
    assert sorted({c["score"] for c in candidates}) == [0, 1, 2] and sum(c["score"] == 1 for c in candidates) == 114
    assert sum(c["year"] is None for c in candidates) == 2  # the sample's "" years


def test_sample_format_is_guessed_or_refused(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(
        json.dumps([{"corpus_id": 1, "title": "t", "abstract": "", "descriptor": "Brain", "qualifier": ""}])
    )
    assert read_scirepeval_sample(path).kind == "mesh"
    path.write_text(json.dumps([{"corpus_id": 1, "title": "t"}]))
    with pytest.raises(ValueError, match="supported: fos, mesh, specter, search"):
        read_scirepeval_sample(path)
    with pytest.raises(ValueError, match="unknown SciRepEval sample format 'cite'; supported"):
        read_scirepeval_sample(path, kind="cite")


def test_bad_sample_records_name_file_record_and_id(tmp_path):
    path = tmp_path / "fos_bad.json"
    path.write_text(
        json.dumps(
            [
                {"corpus_id": 1, "title": "ok", "abstract": "", "labels": [2], "labels_text": ["Biology"]},
                {"corpus_id": 2, "title": "two", "abstract": "", "labels": [2, 3], "labels_text": ["Biology"]},
                {"corpus_id": 3, "title": "", "abstract": None, "labels": [2], "labels_text": ["Biology"]},
            ]
        )
    )
    with pytest.raises(
        InvalidPaperError, match=r"fos_bad\.json, record 1 \(paper_id '2'\): labels \[2, 3\] and labels_text"
    ):
        read_scirepeval_sample(path)
    sample = read_scirepeval_sample(path, skip_invalid=True)
    assert sample.data["paper_id"] == ["1"] and "record 2 (paper_id '3'): paper '3' has neither" in str(
        sample.skipped[1]
    )
    jsonl = tmp_path / "search_bad.jsonl"
    jsonl.write_text('{"query": "q", "candidates": [{"corpus_id": 5, "title": "t", "score": 1}]}\n{"query": \n')
    with pytest.raises(InvalidPaperError, match=r"search_bad\.jsonl, line 2: malformed JSON"):
        read_scirepeval_sample(jsonl)
    broken = tmp_path / "mesh_broken.json"
    broken.write_text('[\n{"corpus_id": 1,\n "title": }\n]')
    with pytest.raises(ValueError, match=r"mesh_broken\.json, line 3: malformed JSON"):
        read_scirepeval_sample(broken)


@pytest.fixture
def hub(tmp_path):
    meta = write_hub_folder(
        tmp_path / "scirepeval",
        {
            "fos": {
                "evaluation": Dataset.from_dict(
                    {"doc_id": [11, 12, 13], "title": ["a", "b", "c"], "abstract": ["x", None, "z"]}
                )
            },
            "scidocs_view_cite_read": {
                "evaluation": Dataset.from_dict(
                    {"doc_id": ["p1", "p2", "p3"], "title": ["a", "b", "c"], "abstract": ["", "", ""]}
                )
            },
        },
    )
    test = write_hub_folder(
        tmp_path / "scirepeval_test",
        {
            "fos": {
                "train": Dataset.from_dict({"paper_id": [11, 12], "label": [[1], [2, 3]]}),
                "test": Dataset.from_dict({"paper_id": [13, 99], "label": [[0], [1]]}),
            },
            "scidocs_cite": {
                "test": Dataset.from_dict({"query_id": ["p1", "p1"], "cand_id": ["p2", "p3"], "score": [1, 0]})
            },
        },
    )
    return meta, test, tmp_path / "cache"


def test_task_loads_from_local_hub_layout(hub):
    meta, test, cache = hub
    task = load_scirepeval_task("scidocs_cite", meta_source=meta, test_source=test, cache_dir=cache)
    assert task.meta.column_names == ["paper_id", "title", "abstract"] and len(task.meta) == 3
    assert task.labels["test"].to_dict() == {"query_id": ["p1", "p1"], "cand_id": ["p2", "p3"], "score": [1, 0]}


def test_labels_naming_unknown_papers_fail_or_are_dropped(hub):
    meta, test, cache = hub
    with pytest.raises(InvalidPaperError, match=r"fos, test row 1 \(paper_id '99'\): paper_id not in"):
        load_scirepeval_task("fos", meta_source=meta, test_source=test, cache_dir=cache)
    task = load_scirepeval_task("fos", meta_source=meta, test_source=test, cache_dir=cache, skip_invalid=True)
    assert task.meta["paper_id"] == ["11", "12", "13"]  # integer ids become strings
    assert task.labels["test"]["paper_id"] == ["13"] and task.labels["train"]["label"] == [[1], [2, 3]]
    assert (task.stats["test_rows"], task.stats["test_unknown_papers"], len(task.skipped)) == (2, 1, 1)


def test_unknown_config_names_the_available_ones(hub):
    meta, test, cache = hub
    with pytest.raises(ValueError, match="'biomimicry' not found. Available"):
        load_scirepeval_task("biomimicry", meta_source=meta, test_source=test, cache_dir=cache)
