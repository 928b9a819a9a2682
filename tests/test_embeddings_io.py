"""Embedding files: round trips in every format, and atomic writes that leave nothing when interrupted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sciembed.io import atomic_path, file_sha256, ids_path, read_embeddings, write_embeddings

IDS = ["a", "b", "c", "d", "e"]
VECTORS = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)


def _chunks():
    yield IDS[:2], VECTORS[:2]
    yield IDS[2:], VECTORS[2:]


@pytest.mark.parametrize("suffix", [".jsonl", ".npy", ".parquet"])
def test_round_trip(tmp_path, suffix):
    path = tmp_path / f"out{suffix}"
    write_embeddings(path, _chunks(), total=5, dim=4)
    ids, vectors = read_embeddings(path)
    assert ids == IDS
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, VECTORS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {f"out{suffix}", ids_path(path).name} if suffix == ".npy" else {f"out{suffix}"}
    )


def test_jsonl_is_scidocs_shaped(tmp_path):
    path = tmp_path / "out.jsonl"
    write_embeddings(path, _chunks(), total=5, dim=4)
    first = json.loads(path.read_text().splitlines()[0])
    assert list(first) == ["paper_id", "embedding"] and first["paper_id"] == "a" and len(first["embedding"]) == 4


@pytest.mark.parametrize("suffix", [".jsonl", ".npy", ".parquet"])
def test_interrupted_write_leaves_no_file(tmp_path, suffix):
    path = tmp_path / f"out{suffix}"

    def failing():
        yield IDS[:2], VECTORS[:2]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_embeddings(path, failing(), total=5, dim=4)
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "out.jsonl"
    write_embeddings(path, _chunks(), total=5, dim=4)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="expected 5 embeddings, got 2"):
        write_embeddings(path, iter([(IDS[:2], VECTORS[:2])]), total=5, dim=4)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_wrong_shape_and_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"expected \(2, 4\)"):
        write_embeddings(tmp_path / "o.npy", iter([(IDS[:2], VECTORS[:3])]), total=2, dim=4)
    with pytest.raises(ValueError, match="unsupported embedding file type"):
        write_embeddings(tmp_path / "o.csv", _chunks(), total=5, dim=4)


@pytest.mark.parametrize("suffix", [".jsonl", ".npy", ".parquet"])
def test_more_embeddings_than_announced_are_refused_by_count(tmp_path, suffix):
    with pytest.raises(ValueError, match="expected 2 embeddings, got 5"):
        write_embeddings(tmp_path / f"out{suffix}", _chunks(), total=2, dim=4)
    assert list(tmp_path.iterdir()) == []


def test_npy_output_is_np_save_bytes_written_without_a_memory_map(tmp_path, monkeypatch):
    def mapped(*args, **kwargs):
        raise AssertionError("the .npy writer memory-maps its output: its dirty pages count in resident memory")

    monkeypatch.setattr(np.lib.format, "open_memmap", mapped)
    monkeypatch.setattr(np, "memmap", mapped)
    path = tmp_path / "out.npy"
    write_embeddings(path, _chunks(), total=5, dim=4)
    np.save(tmp_path / "saved.npy", VECTORS)
    assert path.read_bytes() == (tmp_path / "saved.npy").read_bytes()
    expected = {"ids": IDS, "rows": 5, "npy_sha256": file_sha256(path)}
    assert ids_path(path).read_text(encoding="utf-8") == json.dumps(expected)


def test_atomic_path_renames_only_on_success(tmp_path):
    target = tmp_path / "file.txt"
    with atomic_path(target) as temporary:
        temporary.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError
    assert target.read_text() == "done" and [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_bad_jsonl_embedding_file_names_line(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text('{"paper_id": "a", "embedding": [1.0]}\n{"paper_id": "b"}\n')
    with pytest.raises(ValueError, match=r"e\.jsonl, line 2: not an embedding record"):
        read_embeddings(path)
