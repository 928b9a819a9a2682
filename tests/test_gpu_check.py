"""``benchmarks/gpu_check.py`` refuses to run without a CUDA GPU, and its ``--dry-run`` runs the same steps on the
CPU: both libraries in every dtype, cosines to fp32, and bf16 training steps of specter."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import torch
from helpers import PAPERS, write_s2orc

ROOT = Path(__file__).resolve().parents[1]


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_gpu_the_check_refuses_to_run(tmp_path, monkeypatch, capsys):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({**p, "paper_id": f"p{i}"}) + "\n" for i, p in enumerate(PAPERS)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _gpu_check().main(["--papers", str(papers), "--output", str(tmp_path / "r.json")]) == 2
    assert "no CUDA GPU here" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


def test_the_dry_run_runs_every_step_on_the_cpu(tiny_st_base, tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({**p, "paper_id": f"p{i}"}) + "\n" for i, p in enumerate(PAPERS * 4)))
    output = tmp_path / "gpu_check.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--model", str(tiny_st_base)]
    command += ["--papers", str(papers), "--train-data", str(write_s2orc(tmp_path / "s2orc.jsonl"))]
    done = subprocess.run([*command, "--output", str(output)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(output.read_text())
    assert result["dry_run"] is True and result["torch"] == torch.__version__ and "cuda" in result
    for dtype in ("float32", "bfloat16", "float16"):
        for library in ("sciembed", "sentence_transformers"):
            measured = result["encode"][dtype][library]
            assert measured["papers_per_s"] > 0 and measured["cosine_to_fp32"]["min"] > 0.99
        assert result["encode"][dtype]["sciembed"]["output_dtype"] == "float32"
    training = result["training"]
    assert training["bf16"] and training["steps"] == 2 and len(training["losses"]) == 2 and training["loss_finite"]
    assert training["step_seconds_median"] > 0
