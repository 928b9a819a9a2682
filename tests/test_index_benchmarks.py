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


def run_scale(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    script = ROOT / "benchmarks" / "index_scale.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, check=False)


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


def index_scale_module():
    """``benchmarks/index_scale.py`` (not a package)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("index_scale")


def test_synthetic_papers_keep_the_clusters_of_the_vectors_they_are_fitted_to():
    scale = index_scale_module()
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
