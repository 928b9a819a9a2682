"""The main job (`make demo`): train, evaluate before and after, export, reload without sciembed."""

from __future__ import annotations

import json
import math

import pytest

from sciembed.cli import main


@pytest.mark.slow
def test_main_job_runs_end_to_end_on_the_example_set(tmp_path, caplog, capsys):
    assert main(["demo", "--data", str(tmp_path / "no-data"), "--output", str(tmp_path / "out"), "--steps", "2"]) == 0
    assert "real data not found" in caplog.text
    printed = capsys.readouterr().out
    for step in ("$ sciembed train --recipe multi2spe", "$ sciembed export", "cite_map", "model card:", "trust_remote_code=True"):
        assert step in printed
    summary = json.loads((tmp_path / "out" / "run" / "train_results.json").read_text())
    assert summary["global_step"] == 2 and summary["base_eval_metrics"]["eval_cite_map"] > 0
    card = (tmp_path / "out" / "hub" / "README.md").read_text()
    assert "model-index" in card and "cite" in card  # the held-out results went into the card
    similarities = [float(line.rsplit("=", 1)[1].split()[0]) for line in printed.splitlines() if line.strip().startswith("cosine(")]
    assert len(similarities) == 2 and all(math.isfinite(s) and -1 <= s <= 1 for s in similarities)
