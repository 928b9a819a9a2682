"""The main job (`make demo`): train, evaluate before and after, export, reload without sciembed."""

from __future__ import annotations

import json
import math
import re

import pytest

from sciembed.cli import main


@pytest.mark.slow
def test_main_job_runs_end_to_end_on_the_example_set(tmp_path, caplog, capsys):
    assert main(["demo", "--data", str(tmp_path / "no-data"), "--output", str(tmp_path / "out"), "--steps", "2"]) == 0
    assert "real data not found" in caplog.text
    printed = capsys.readouterr().out
    for step in (
        "$ sciembed train --recipe specter",
        "$ sciembed export",
        "cite_map",
        "base as published",
        "fine-tuned",
        "model card:",
        "SentenceTransformer(",
    ):
        assert step in printed
    summary = json.loads((tmp_path / "out" / "run" / "train_results.json").read_text())
    assert summary["global_step"] == 2 and summary["published_base_eval_metrics"]["eval_cite_map"] > 0
    # The recipe trains MiniLM in its own embedding, so its step 0 is MiniLM as published: no third column.
    assert (
        summary["data"]["starts_as_published"]
        and summary["base_eval_metrics"] == summary["published_base_eval_metrics"]
    )
    assert "recipe step 0" not in printed
    card = (tmp_path / "out" / "hub" / "README.md").read_text()
    assert "model-index" in card and "cite" in card  # the held-out results went into the card
    shares = [
        float(line.rsplit(" in ", 1)[1].split("%")[0])
        for line in printed.splitlines()
        if "is the closer one in" in line
    ]
    assert len(shares) == 2 and all(math.isfinite(s) and 0 <= s <= 100 for s in shares)


def test_table_shows_the_recipe_s_step_0_only_when_it_differs():
    from sciembed.commands.demo import format_table

    summary = {
        "eval_metrics": {"eval_cite_map": 77.0, "epoch": 1},
        "published_base_eval_metrics": {"eval_cite_map": 76.0},
        "base_eval_metrics": {"eval_cite_map": 70.0},
        "global_step": 3,
        "data": {"held_out_queries": 5, "queries": 20, "examples": 90},
        "settings": {
            "training": {"per_device_train_batch_size": 32},
            "embedding": {"pooling": None, "normalize": True},
            "loss": {"name": "mnr"},
        },
    }
    table = format_table(summary)
    assert "recipe step 0" in table and "70.00" in table and "+1.00 MAP" in table
    summary["eval_metrics"]["eval_cite_map"] = 75.0
    assert "no better than the base" in format_table(summary)
    summary["base_eval_metrics"] = summary["published_base_eval_metrics"]
    assert "recipe step 0" not in format_table(summary)


def test_the_demo_ends_with_its_time_and_the_range_seen():
    """Not one run's figures as if fixed: the time it took here, that timings and numbers vary with the machine and its
    load, and (on CACM at the default budget) the range seen so far, as the README gives it."""
    from pathlib import Path

    from sciembed.commands.demo import SEEN_ON_CACM, closing_note

    note = closing_note(392.4, on_cacm=True, default_budget=True)
    assert (
        note.startswith("The demo took 6 min 32 s on this machine.")
        and "vary with the machine" in note
        and "load" in note
    )
    assert SEEN_ON_CACM in note and "Benchmarks page" in note
    assert not re.search(r"\d", SEEN_ON_CACM), "measured numbers belong in benchmarks/results/, not in src/"
    assert SEEN_ON_CACM not in closing_note(60, on_cacm=False, default_budget=True)
    assert SEEN_ON_CACM not in closing_note(60, on_cacm=True, default_budget=False)
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert "Benchmarks" in readme
