"""Index builds hold their blocks in memory, not their files: the vectors are read and the store written with plain
file I/O, and the store's pages read while tuning are released."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_index import clustered, write

import sciembed.index.build as build
import sciembed.io as sciembed_io
from sciembed.index import IndexSettings, PaperIndex
from sciembed.index.blocks import open_embeddings
from sciembed.io import NpyRowWriter, ReleasedRows


def resident_kb(*paths: Path) -> int:
    """The kB of the process's memory maps of ``paths`` that are resident (``/proc/self/smaps``)."""
    names, total, counting = {str(path.resolve()) for path in paths}, 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                counting = fields[-1] in names
            elif counting and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_a_build_keeps_no_page_of_its_vectors_or_store_resident(tmp_path, monkeypatch):
    vectors = clustered(20_000, 384)
    path = write(tmp_path / "vectors.npy", vectors)
    resident = {}

    def measured_tune(codes, *args, **options):
        store = next(tmp_path.glob(".index.building.*/store.npy"))
        resident["after the passes"] = resident_kb(path, store)
        tuned = real_tune(codes, *args, **options)
        resident["after tuning"] = resident_kb(path, store)
        return tuned

    real_tune = build.tune
    monkeypatch.setattr(build, "tune", measured_tune)
    PaperIndex.build(path, tmp_path / "index", kind="binary", settings=IndexSettings(sample_size=5000))
    assert path.stat().st_size > 30_000 * 1024  # the files are large beside the bound below
    assert max(resident.values()) < 1024, resident


def test_rows_read_by_index_are_the_file_rows_and_map_no_page_of_it(tmp_path):
    path = tmp_path / "store.npy"
    array = np.random.default_rng(0).integers(-128, 128, (8192, 1024), dtype=np.int8)
    np.save(path, array)  # cached: a fault on it can map a large folio around the row read
    rows = ReleasedRows(np.load(path, mmap_mode="r"))
    wanted = np.random.default_rng(1).choice(8192, (2, 300))  # two queries' candidates
    assert np.array_equal(rows[wanted], array[wanted])
    assert np.array_equal(rows[-3:], array[-3:]) and np.array_equal(rows[np.array([-1])], array[[-1]])
    assert resident_kb(path) < 64


def test_searching_a_loaded_index_maps_no_page_of_its_store(tmp_path):
    vectors = clustered(20_000, 384)
    path = write(tmp_path / "vectors.npy", vectors)
    PaperIndex.build(path, tmp_path / "index", kind="binary", settings=IndexSettings(sample_size=5000))
    index = PaperIndex.load(tmp_path / "index")
    index.search(vectors[:300], 10)
    assert resident_kb(tmp_path / "index" / "store.npy") < 64


def test_the_store_writer_writes_the_bytes_a_memory_map_would(tmp_path, monkeypatch):
    rows = np.arange(-60, 60, dtype=np.int8).reshape(20, 6)
    mapped = np.lib.format.open_memmap(tmp_path / "mapped.npy", mode="w+", dtype=np.int8, shape=(40, 6))
    mapped[:20], mapped[20:] = rows, rows[::-1]
    mapped.flush()
    np.save(tmp_path / "first.npy", rows)
    for name, copy in (("kernel", True), ("plain", False)):
        if not copy:
            monkeypatch.delattr(sciembed_io.os, "copy_file_range")  # the plain copy runs
        with NpyRowWriter(tmp_path / f"{name}.npy", np.int8, (40, 6)) as writer:
            writer.copy_from(tmp_path / "first.npy")
            writer.write(rows[::-1])
        assert (tmp_path / f"{name}.npy").read_bytes() == (tmp_path / "mapped.npy").read_bytes(), name
    with pytest.raises(ValueError, match=r"short\.npy: 20 rows written where 40 were announced"):
        with NpyRowWriter(tmp_path / "short.npy", np.int8, (40, 6)) as writer:
            writer.write(rows)


def test_a_fortran_order_file_reads_as_its_c_order_copy(tmp_path):
    vectors = clustered(3000, 32)
    path = write(tmp_path / "vectors.npy", vectors)
    expected = np.vstack([block for _, block in open_embeddings(path).blocks(rows=700)])
    np.save(path, np.asfortranarray(vectors))
    (tmp_path / "vectors.ids.json").write_text(json.dumps([f"p{i}" for i in range(3000)]), encoding="utf-8")
    assert np.array_equal(np.vstack([block for _, block in open_embeddings(path).blocks(rows=700)]), expected)
