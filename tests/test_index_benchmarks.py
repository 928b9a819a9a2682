"""The index benchmarks run end to end at a small size: ``benchmarks/index_scale.py`` writes its results with the
issue's targets, the load it ran under and how its papers were made, refuses to replace earlier results unasked, and
runs the steps of a size beyond the machine on fewer papers (``--dry-run``). Its synthetic papers keep the clusters of
the vectors they are fitted to. The CI size is 3,000 papers: 10^5 takes minutes on one shared core."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run_scale(*args: str, script: str = "index_scale.py") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    path = ROOT / "benchmarks" / script
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, env=env, check=False)


def test_index_scale_writes_every_measure_and_target(tmp_path):
    output = tmp_path / "scale.json"
    done = run_scale("--papers", "3000", "--dim", "48", "--workdir", str(tmp_path), "--output", str(output))
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["papers"] == 3000 and set(report["kinds"]) == {"binary", "int8"}
    for row in report["kinds"].values():
        assert row["recall_at_10"] >= 0.95 and row["query_ms"] > 0 and row["ram_bytes_per_paper"] > 0
    assert "binary + rescore one query <= 0.10x exact" in report["targets"]
    assert report["dim"] == 48 and report["peak_rss_mb"] > 0
    assert len(report["load_average"]["start"]) == 3 and "mixture" in report["data"]["model"]
    assert all(0 < row["tune_seconds"] <= row["build_seconds"] for row in report["kinds"].values())
    assert report["kinds_left"] == [] and all(row["peak_rss_mb"] > 0 for row in report["kinds"].values())
    again = run_scale("--papers", "3000", "--output", str(output))
    assert again.returncode == 2 and "exists: pass --overwrite" in again.stderr


def test_index_scale_dry_run_takes_the_steps_of_a_larger_size_on_fewer_papers(tmp_path):
    output = tmp_path / "dry.json"
    args = ("--papers", "1e7", "--dim", "768", "--kinds", "binary", "--dry-run", "2000")
    done = run_scale(*args, "--workdir", str(tmp_path), "--output", str(output))
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["papers"] == 2000 and report["data"]["tiled"] and report["targets"] == {}
    projected = report["dry_run"]
    assert projected["requested_papers"] == 10**7 and projected["vectors_disk_gib"] > 25
    assert projected["binary_query_ms"] > report["kinds"]["binary"]["query_ms"]


def benchmark_module(name: str = "index_scale"):
    """``benchmarks/<name>.py`` (not a package)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def test_synthetic_papers_keep_the_clusters_of_the_vectors_they_are_fitted_to():
    scale = benchmark_module()
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((60, 64))
    real = centres[rng.integers(0, 60, 3000)] + 0.25 * rng.standard_normal((3000, 64))
    real = (real / np.linalg.norm(real, axis=1, keepdims=True)).astype(np.float32)
    synthetic = np.vstack(list(scale.blocks(3000, 64, scale.fitted((real, "clusters"), seed=0), seed=0)))

    def nearest(vectors):
        similarities = vectors[:300] @ vectors.T
        np.fill_diagonal(similarities, -1)
        return similarities.max(axis=1).mean()

    assert np.allclose(np.linalg.norm(synthetic, axis=1), 1, atol=1e-5)
    assert abs(nearest(synthetic) - nearest(real)) < 0.05


def test_a_union_source_keeps_each_id_once_and_counts_what_it_read_repeated_skipped_and_sampled(tmp_path):
    quality = benchmark_module("index_quality")
    (tmp_path / "a.csv").write_text("id,title,abstract\n704.2,Old,Text one\n704.0001,Two,Text two\n")
    (tmp_path / "b.csv").write_text("id,title,abstract\n0704.2000,Same,Again\n0705.0001,Three,\n0705.0002,,\n")
    source = quality.Source(("a.csv", "b.csv"), sampled=True, arxiv_ids=True)
    papers, counts = quality.source_papers(tmp_path, source, None, seed=0)
    assert [paper["paper_id"] for paper in papers] == ["0704.2000", "0704.0001", "0705.0001"]
    assert counts["read"] == 4 and counts["repeated_ids"] == 1 and "0705.0002" in counts["skipped"][0]
    sample, counts = quality.source_papers(tmp_path, source, 2, seed=0)
    assert len(sample) == 2 and counts["sampled_from"] == 3
    assert sample == quality.source_papers(tmp_path, source, 2, seed=0)[0]


def test_the_union_prefixes_ids_by_source_and_reports_each_source(tmp_path, monkeypatch):
    from sciembed.io import read_embeddings, write_embeddings

    quality = benchmark_module("index_quality")

    def embedded(papers: Path, output: Path) -> Path:
        ids = [json.loads(line)["paper_id"] for line in papers.read_text().splitlines()]
        write_embeddings(output, [(ids, np.ones((len(ids), 4), np.float32))], total=len(ids), dim=4)
        return output

    monkeypatch.setattr(quality, "embedded", embedded)
    monkeypatch.setattr(
        quality, "UNION_SOURCES", {"one": quality.Source(("a.jsonl",)), "two": quality.Source(("b.jsonl",))}
    )
    (tmp_path / "a.jsonl").write_text('{"paper_id": "1", "title": "A"}\n{"paper_id": "2", "title": "B"}\n')
    (tmp_path / "b.jsonl").write_text('{"paper_id": "1", "title": "C"}\n{"paper_id": "1", "title": "D"}\n')
    found = {
        name: {"vectors": embedded(tmp_path / "a.jsonl", tmp_path / f"{name}.npy"), "counts": {}}
        for name in ("cacm", "hepth")
    }
    union = quality.union(tmp_path, tmp_path, found, None, seed=0)
    ids, _ = read_embeddings(union["vectors"])
    assert ids == ["cacm:1", "cacm:2", "hepth:1", "hepth:2", "one:1", "one:2", "two:1"]
    assert union["members"]["two"]["papers"] == 1 and "duplicate paper_id" in union["members"]["two"]["skipped"][0]


def test_index_quality_refuses_a_bad_sample_size_collection_or_keep_before_any_work(tmp_path):
    cache = ("--cache", str(tmp_path), "--output", str(tmp_path / "quality.json"))
    for *bad, message in (
        ("--arxiv-papers", "0", "give a positive number of papers, or 'all'"),
        ("--collections", "hep-th", "invalid choice: 'hep-th'"),
        ("--kinds", "hnsw", "invalid choice: 'hnsw'"),
        ("--overwrite", "--keep-others", "does not exist, so there are no other collections to keep"),
    ):
        done = run_scale(*cache, *bad, script="index_quality.py")
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_benchmark_page_shows_the_union_s_papers_per_source():
    render_docs = benchmark_module("render_docs")
    members = {
        "cacm": {"read": 3203, "skipped": ["line 92798: a broken id line"], "papers": 3203},
        "arxiv": {"read": 4000, "repeated_ids": 28, "skipped": [], "sampled_from": 3972, "papers": 500},
        "scirepeval": {"read": 411, "skipped": [], "papers": 411, "left_out": ["search_small.jsonl: not papers"]},
    }
    kinds = {"exact": {"recall_at_10": 1.0, "ram_bytes_per_paper": 1536, "targets": {}}}
    union = {"papers": 4114, "dim": 384, "kinds": kinds, "members": members, "kinds_not_measured": ["pq"]}
    text, images = render_docs.index_quality_section({"collections": {"union": union}})
    assert "| arxiv | 4000 | 28 | 0 | 3972 | 500 |" in text and "| cacm | 3203 | 0 | 1 |  | 3203 |" in text
    assert (
        "Left out:\n\n- scirepeval: search_small.jsonl: not papers" in text and "Not measured in this run: pq." in text
    )
    assert [name for name, _ in images] == ["index_quality.png"]
