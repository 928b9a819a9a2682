"""Paths checked before the model loads (issue 51, item 14): an output that is the current folder or one above it,
a symbolic-link loop or a dangling link on the way, an input that is a link loop, a dangling link, a folder or
unreadable, and an embedding cache that cannot be written are each refused at once, naming the path, the cause and
the switch that helps. The model given does not exist: an error about it would mean the check came too late."""

from __future__ import annotations

import json
import os

import pytest
from helpers import PAPERS

from sciembed.cli import main


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A working folder (the current one) with papers, citations, qrels, a link loop and a dangling link."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    (work / "cites.csv").write_text("citing,cited\n")
    ids = [paper["paper_id"] for paper in PAPERS]
    (work / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + f"{ids[0]}\t{ids[1]}\t1\n")
    os.symlink("loop-b", work / "loop-a")
    os.symlink("loop-a", work / "loop-b")
    os.symlink("nowhere", work / "dangling")
    (work / "folder.jsonl").mkdir()
    return work


def _argv(command, *, output=None, papers="papers.jsonl", extra=()):
    """``command`` on ``papers`` with a model that does not exist, writing ``output`` (the command's default)."""
    model = "./no-such-model"
    output = output or {"train": "run", "export": "hub", "from-bert": "model"}.get(command, "out.jsonl")
    return {
        "embed": ["embed", "--model", model, "--input", papers, "--output", output, "--no-progress"],
        "evaluate": [
            *("evaluate", "--model", model, "--benchmark", "retrieval", "--data", "qrels.tsv", "--papers", papers),
            *("--output", output, "--no-progress"),
        ],
        "neighbours": ["neighbours", "--model", model, "--papers", papers, "--output", output, "--no-progress"],
        "train": [
            *("train", "--recipe", "specter", "--base", model, "--papers", papers, "--citations", "cites.csv"),
            *("--output", output, "--no-progress"),
        ],
        "export": ["export", "--model", model, "--out", output],
        "from-bert": ["from-bert", "--family", "multi2spe", "--base", model, "--output", output],
    }[command] + list(extra)


OUTPUTS = [
    ("..", "is {parent}, the current folder or one above it, not an output of its own"),
    ("new/..", "is {work}, the current folder or one above it, not an output of its own"),
    ("loop-a/out.jsonl", "cannot be written: {work}/loop-a is a symbolic-link loop"),
    ("dangling/out.jsonl", "cannot be written: {work}/dangling is a symbolic link to nowhere, which does not exist"),
    ("loop-a", "loop-a is a symbolic-link loop; remove it, or choose another output"),
]


@pytest.mark.parametrize(
    "command, output, message",
    [(command, *case) for command in ("embed", "evaluate", "neighbours", "export", "train") for case in OUTPUTS]
    + [("from-bert", *case) for case in OUTPUTS[:2] + OUTPUTS[-1:]],
)
def test_an_output_that_cannot_be_one_is_refused_before_the_model_loads(files, caplog, command, output, message):
    if command == "export":  # export reads the model's config.json first (no weights)
        (files / "no-such-model").mkdir()
        (files / "no-such-model" / "config.json").write_text("{}")
    assert main(_argv(command, output=output)) == 2
    assert message.format(work=files, parent=files.parent) in caplog.text
    assert "no such model" not in caplog.text


@pytest.mark.parametrize(
    "command, papers, message",
    [
        (command, *case)
        for command in ("embed", "evaluate", "neighbours", "train")
        for case in [
            ("loop-a", "loop-a ({option}) is a symbolic-link loop; point {option} at the file itself"),
            ("dangling", "dangling ({option}) is a symbolic link to nowhere, which does not exist"),
            ("missing.jsonl", "missing.jsonl ({option}): no such file"),
        ]
        + [("folder.jsonl", "folder.jsonl ({option}) is a folder holding neither a SMART collection (a *.all file)")]
    ],
)
def test_an_input_that_cannot_be_read_is_named_with_its_cause(files, caplog, command, papers, message):
    """(Papers may be a folder: a SMART collection's, or one of Parquet parts.)"""
    option = "--input" if command == "embed" else "--papers"
    assert main(_argv(command, papers=papers)) == 2
    assert message.format(option=option) in caplog.text and "no such model" not in caplog.text


@pytest.mark.parametrize("command", ["embed", "evaluate"])
@pytest.mark.parametrize("check_set, message", [("loop-a", " is a symbolic-link loop"), ("missing", ": no such")])
def test_an_int8_check_set_that_cannot_be_read_is_named_with_its_cause(files, caplog, command, check_set, message):
    extra = ("--backend", "onnx", "--onnx-quantization", "int8", "--int8-check-set", check_set)
    assert main(_argv(command, extra=extra)) == 2
    assert f"{check_set} (--int8-check-set){message}" in caplog.text


def test_an_unreadable_input_is_named(files, caplog, monkeypatch):
    unreadable = str(files / "papers.jsonl")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != unreadable and real_access(path, mode))
    assert main(_argv("embed", papers=unreadable)) == 2
    assert f"{unreadable} (--input) cannot be read: permission denied" in caplog.text


def test_a_model_path_that_is_a_link_loop_says_so(files, caplog):
    assert main(["embed", "--model", "loop-a", "--input", "papers.jsonl", "--output", "v.jsonl"]) == 2
    assert "loop-a is a symbolic-link loop: not a model folder" in caplog.text


@pytest.mark.parametrize("command", ["evaluate", "embed"])
@pytest.mark.parametrize("given", ["SCIEMBED_CACHE", "--cache-dir"])
def test_an_embedding_cache_that_cannot_be_written_is_named_before_the_model_loads(
    files, caplog, monkeypatch, given, command
):
    (files / "a-file").write_text("x")
    cache = files / "a-file" / "cache"
    if given == "SCIEMBED_CACHE":
        monkeypatch.setenv("SCIEMBED_CACHE", str(cache))
    argv = _argv(command, extra=["--cache-dir", str(cache)] if given == "--cache-dir" else [])
    assert main(argv) == 2
    source = "$SCIEMBED_CACHE" if given == "SCIEMBED_CACHE" else "--cache-dir"
    assert f"the embedding cache {cache} (from {source}) cannot be written: {files}/a-file is a file" in caplog.text
    assert "pass --no-cache" in caplog.text and "no-such-model" not in caplog.text
    caplog.clear()
    assert main([*argv, "--no-cache"]) == 2 and "no-such-model" in caplog.text  # --no-cache: on to the model
    assert "embedding cache" not in caplog.text


def test_a_read_only_cache_is_named_with_its_cause(files, caplog, monkeypatch):
    import tempfile

    cache = files / "cache"
    cache.mkdir()
    monkeypatch.setenv("SCIEMBED_CACHE", str(cache))
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if str(kwargs.get("dir", "")).startswith(str(cache)):
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert main(_argv("evaluate")) == 2
    assert f"the embedding cache {cache} (from $SCIEMBED_CACHE) cannot be written: Permission denied" in caplog.text
