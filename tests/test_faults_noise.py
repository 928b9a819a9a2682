"""Noise that hides the signal (issue 52, item 5): at the default level a command prints one progress bar per long
step, the warnings and its result; INFO and the libraries' bars come with ``-v``; the library configures no logging
and shows bars only when the ``sciembed`` logger shows INFO.

The commands run in a fresh process, as a user runs them: pytest's own logging setup would hide what they print.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from helpers import WORDS, write_s2orc

BAR = "Encoding"


def _run(*command: str) -> subprocess.CompletedProcess:
    """``command`` in a fresh process; its output as written (text mode would make each bar redraw a line)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run(command, capture_output=True, env=env, timeout=300)
    run.stdout, run.stderr = run.stdout.decode(), run.stderr.decode()
    return run


def _sciembed(*argv: str) -> subprocess.CompletedProcess:
    return _run(sys.executable, "-m", "sciembed.cli", *argv)


@pytest.fixture
def collection(tmp_path):
    """Twelve papers and judgements of three query papers among them."""
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "".join(
            json.dumps({"paper_id": f"d{i}", "title": " ".join(WORDS[i : i + 4]), "abstract": " ".join(WORDS[i:])})
            + "\n"
            for i in range(12)
        )
    )
    qrels = tmp_path / "judged.qrels"
    qrels.write_text("".join(f"d{q} 0 d{(q + k) % 12} 1\n" for q in (0, 4, 8) for k in (1, 2)))
    return papers, qrels


def _lines(text: str) -> list[str]:
    """The lines a terminal keeps: a bar redrawn with carriage returns is one, as last drawn."""
    shown = (line.rstrip("\r").rsplit("\r", 1)[-1].strip() for line in text.split("\n"))
    return [line for line in shown if line]


def test_evaluate_prints_one_line_per_step_and_the_table(tiny_bert, collection):
    papers, qrels = collection
    run = _sciembed(
        "evaluate",
        "--model",
        str(tiny_bert),
        "--benchmark",
        "retrieval",
        "--data",
        str(qrels),
        "--papers",
        str(papers),
        "--no-cache",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # One step embeds (the papers); the table is the result.
    assert [line.split(":")[0] for line in _lines(run.stderr)] == [f"{BAR} (papers)"], run.stderr
    assert "map" in run.stdout and "INFO" not in run.stdout + run.stderr
    # -v brings the steps' INFO and the libraries' bars; -q leaves the table alone.
    verbose = _sciembed("-v", *run.args[3:])
    assert "INFO sciembed.evaluation" in verbose.stderr and "Loading weights" in verbose.stderr
    quiet = _sciembed(*run.args[3:], "-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == run.stdout


def test_a_warning_that_matters_shows_at_the_default_level(tiny_bert, collection, tmp_path):
    papers, qrels = collection
    titles = tmp_path / "titles.jsonl"
    titles.write_text(
        "".join(json.dumps({"paper_id": f"d{i}", "title": f"{WORDS[i]} graph"}) + "\n" for i in range(12))
    )
    argv = ["evaluate", "--model", str(tiny_bert), "--benchmark", "retrieval", "--data", str(qrels)]
    run = _sciembed(*argv, "--papers", str(titles), "--no-progress", "--no-cache")
    assert run.returncode == 0, run.stderr[-3000:]
    assert _lines(run.stderr) == [
        f"WARNING sciembed.data.papers: {titles}: no record has an abstract field (the first record's fields: "
        "paper_id, title): the papers are their titles alone; if a field holds the abstracts, rename it to abstract"
    ]


@pytest.mark.parametrize("command", ["embed", "neighbours"])
def test_embed_and_neighbours_print_one_bar_and_their_result(tiny_bert, collection, tmp_path, command):
    papers, _ = collection
    argv = {
        # Six shards: still one bar for the embedding step.
        "embed": ["embed", "--input", str(papers), "--output", str(tmp_path / "v.jsonl"), "--shard-size", "2"],
        "neighbours": ["neighbours", "--papers", str(papers), "--query-ids", "d1", "--top-k", "3"],
    }[command]
    run = _sciembed(*argv, "--model", str(tiny_bert))
    assert run.returncode == 0, run.stderr[-3000:]
    assert [line.split(":")[0] for line in _lines(run.stderr)] == [BAR], run.stderr
    assert "INFO" not in run.stdout
    if command == "neighbours":
        assert "[d1]" in run.stdout


LIBRARY = """
import logging, sys
import sciembed
from sciembed.evaluation import evaluate
from sciembed.evaluation.benchmarks import RetrievalOptions
from sciembed.jobs.embed import embed_to_file

def state():
    root, ours = logging.getLogger(), logging.getLogger("sciembed")
    return (root.level, list(root.handlers), ours.level, list(ours.handlers), ours.propagate, ours.disabled)

before = state()
encoder = sciembed.PaperEncoder.from_pretrained(sys.argv[1], device="cpu")
sys.stderr.write("LOADED\\n")
papers, qrels, out = sys.argv[2:5]
sciembed.encode(encoder, ["a text"], show_progress_bar=False)
evaluate(encoder, "retrieval", qrels, options=RetrievalOptions(papers=papers), use_cache=False)
sciembed.neighbours(encoder, papers, top_k=2)
embed_to_file(encoder, papers, out + "/a.jsonl")
assert state() == before, (before, state())
sys.stderr.write("FOLLOWS\\n")
logging.getLogger("sciembed").setLevel(logging.INFO)
sciembed.neighbours(encoder, papers, top_k=2)
embed_to_file(encoder, papers, out + "/b.jsonl", use_cache=False)  # a.jsonl cached every paper
"""


def test_the_library_configures_no_logging_and_its_bars_follow_the_log_level(
    tiny_bert, collection, tmp_path, monkeypatch
):
    papers, qrels = collection
    # tqdm redraws a bar on every update, as on a loaded machine, and once more when it closes: one line still.
    monkeypatch.setenv("TQDM_MININTERVAL", "0")
    monkeypatch.setenv("TQDM_MINITERS", "1")
    run = _run(sys.executable, "-c", LIBRARY, str(tiny_bert), str(papers), str(qrels), str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    quiet, shown = run.stderr.split("LOADED\n")[1].split("FOLLOWS\n")
    assert BAR not in quiet and quiet.strip() == ""
    bars = _lines(shown)  # neighbours and the embed job, at INFO
    assert [line.split(":")[0] for line in bars] == [BAR, BAR] and all("100%" in line for line in bars), shown


def test_the_command_leaves_the_libraries_bars_as_it_found_them(tmp_path):
    from transformers.utils import logging as transformers_logging

    from sciembed.cli import main

    transformers_logging.disable_progress_bar()
    try:
        assert main(["neighbours", "--data", str(tmp_path / "nowhere"), "--no-progress"]) == 2
        assert not transformers_logging.is_progress_bar_enabled()
    finally:
        transformers_logging.enable_progress_bar()
    assert main(["neighbours", "--data", str(tmp_path / "nowhere")]) == 2
    assert transformers_logging.is_progress_bar_enabled()


#: A tqdm bar as drawn, up to its rate: ``67%|######   | 2/3 [00:00<00:00,  5.26it/s]``.
TQDM_BAR = re.compile(r"\s*\d+%\|[^|]*\|[^\]]*\]")


def test_train_prints_one_bar_and_the_warnings_and_logs_its_losses_with_v(tiny_bert, tmp_path):
    data = write_s2orc(tmp_path / "papers.jsonl")
    argv = ["train", "--recipe", "specter", "--base", str(tiny_bert), "--data", str(data)]
    settings = ["max_steps=3", "logging_steps=1", "per_device_train_batch_size=4", "embedding.max_length=48"]
    argv += [option for setting in settings for option in ("--set", setting)]
    run = _sciembed(*argv, "--output", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == "" and "loss" not in run.stderr and "INFO" not in run.stderr
    assert run.stderr.count("| 3/3 [") >= 1 and "Loading weights" not in run.stderr
    rest = _lines(TQDM_BAR.sub("", run.stderr.replace("\r", "")))
    assert all(line.startswith(("WARNING", "[transformers]")) for line in rest), rest
    verbose = _sciembed("-v", *argv, "--output", str(tmp_path / "verbose"))
    assert verbose.returncode == 0 and verbose.stdout == ""
    assert "INFO sciembed.training.trainers: step 1: loss " in verbose.stderr
