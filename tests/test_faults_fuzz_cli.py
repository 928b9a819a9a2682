"""A fuzz test of the command line (issue 22, part 7): every subcommand that reads a user's files, run with random
combinations of options and hostile files (empty, truncated, wrong type, a huge field, binary) on a tiny model.

Whatever the input, a run ends with exit code 0 or 2 (argparse's and sciembed's code for bad input), never a Python
traceback; it leaves no output unless it succeeded; and it never changes its inputs. Derandomised, with a bounded
number of examples per subcommand, so CI sees the same cases every time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import PAPERS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sciembed.cli import main

FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

PAPER_LINES = [json.dumps({**p, "paper_id": f"p{i}"}) for i, p in enumerate(PAPERS * 2)]
KINDS = ("valid", "empty", "truncated", "wrong type", "huge field", "binary", "csv", "bad csv")
#: Hostile files, with valid ones often enough that the options meet a run that gets as far as the model.
INPUTS = st.sampled_from(("valid",) * 5 + KINDS[1:])


def _write(path: Path, kind: str, lines: list[str] = PAPER_LINES) -> Path:
    """A file of ``kind``: the papers as JSON lines, or broken in one of the ways users' files are."""
    body = "\n".join(lines) + "\n"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_text(body[: len(body) // 2 + 7])
    elif kind == "wrong type":
        path.write_text(json.dumps([1, "two", {"three": 3}]) + "\n" + "42\n")
    elif kind == "huge field":
        path.write_text(body + json.dumps({"paper_id": "huge", "title": "Huge", "abstract": "word " * 60_000}) + "\n")
    elif kind == "binary":
        path.write_bytes(bytes(np.random.default_rng(len(str(path))).integers(0, 256, 3000, dtype=np.uint8)))
    elif kind == "csv":
        path.write_text(
            "paper_id,title,abstract\n"
            + "".join(f"p{i},{p['title']},{p['abstract'].replace(',', ' ')}\n" for i, p in enumerate(PAPERS))
        )
    elif kind == "bad csv":
        path.write_text('paper_id,title\np0,one,extra,fields\n"p1,unterminated\n')
    else:
        path.write_text(body)
    return path


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        for p in sorted(folder.rglob("*"))
    }


def _run(folder: Path, argv: list[str], caplog) -> int:
    """Run ``sciembed argv`` in ``folder``; check the exit code, that no traceback was logged, that the files there
    before are unchanged and that a failed run left nothing new."""
    before = _snapshot(folder)
    caplog.clear()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse refusing an option combination
        code = exit_.code
    assert code in (0, 2), (argv, code)
    assert "Traceback" not in caplog.text, (argv, caplog.text)
    after = _snapshot(folder)
    assert {k: v for k, v in after.items() if k in before} == before, f"{argv} changed its inputs"
    if code != 0:
        new = set(after) - set(before)
        assert not new, f"{argv} failed but left {sorted(new)}"
    return code


def _suffix(draw_suffix: str) -> str:
    return {"jsonl": ".jsonl", "csv": ".csv", "txt": ".txt", "none": ""}[draw_suffix]


@FUZZ
@given(
    kind=INPUTS,
    suffix=st.sampled_from(["jsonl"] * 4 + ["csv", "txt"]),
    out=st.sampled_from([".jsonl", ".npy", ".parquet", "", ".txt"]),
    options=st.lists(
        st.sampled_from(
            [
                ["--skip-invalid"],
                ["--max-length", "5"],
                ["--max-length", "1"],
                ["--batch-size", "0"],
                ["--batch-size", "2"],
                ["--shard-size", "3"],
                ["--shard-size", "0"],
                ["--id-field", "title"],
                ["--overwrite"],
                ["--resume"],
                ["--pooling", "mean"],
            ]
        ),
        max_size=3,
    ),
)
def test_embed(tiny_bert, caplog, kind, suffix, out, options):
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        papers = _write(folder / f"papers{_suffix(suffix)}", kind)
        output = folder / f"vectors{out}"
        argv = [
            "embed",
            "--model",
            str(tiny_bert),
            "--input",
            str(papers),
            "--output",
            str(output),
            "--no-progress",
            *[o for group in options for o in group],
        ]
        if _run(folder, argv, caplog) == 0:
            assert output.exists()


@FUZZ
@given(
    kind=INPUTS,
    vectors_kind=st.sampled_from(["none"] * 3 + ["valid"] * 2 + ["empty", "binary", "wrong type", "nan"]),
    options=st.lists(
        st.sampled_from(
            [
                ["-k", "2"],
                ["-k", "0"],
                ["-k", "99"],
                ["--query-ids", "p0"],
                ["--query-ids", "nope"],
                ["--queries", "2"],
                ["--skip-invalid"],
                ["--output", "OUT.jsonl"],
                ["--output", "OUT.csv"],
                ["--output", "OUT.bin"],
            ]
        ),
        max_size=3,
    ),
)
def test_neighbours(tiny_bert, caplog, kind, vectors_kind, options):
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        papers = _write(folder / "papers.jsonl", kind)
        argv = [
            "neighbours",
            "--papers",
            str(papers),
            "--no-progress",
            *[o.replace("OUT", str(folder / "out")) for group in options for o in group],
        ]
        if vectors_kind == "none":
            argv += ["--model", str(tiny_bert)]
        else:
            vectors = folder / "vectors.jsonl"
            lines = [
                json.dumps({"paper_id": f"p{i}", "embedding": [float(i), 1.0, 0.5]}) for i in range(len(PAPER_LINES))
            ]
            if vectors_kind == "nan":
                lines[1] = lines[1].replace("[1.0", "[NaN")
            _write(vectors, "valid" if vectors_kind == "nan" else vectors_kind, lines)
            argv += ["--embeddings", str(vectors)]
        _run(folder, argv, caplog)


@FUZZ
@given(
    kind=INPUTS,
    benchmark=st.sampled_from(["classification", "retrieval"]),
    labels_kind=st.sampled_from(["valid"] * 3 + ["empty", "binary", "bad csv", "unknown ids"]),
    options=st.lists(
        st.sampled_from(
            [
                ["--test-size", "0.5"],
                ["--test-size", "2"],
                ["--skip-invalid"],
                ["--output", "OUT.json"],
                ["--max-length", "4"],
                ["--no-cache"],
                ["--seed", "3"],
            ]
        ),
        max_size=3,
    ),
)
def test_evaluate_own_data(tiny_bert, caplog, kind, benchmark, labels_kind, options):
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        papers = _write(folder / "papers.jsonl", kind)
        data = folder / ("labels.csv" if benchmark == "classification" else "qrels.tsv")
        if labels_kind in ("valid", "unknown ids"):
            prefix = "x" if labels_kind == "unknown ids" else "p"
            rows = (
                [f"{prefix}{i},{i % 2}" for i in range(len(PAPER_LINES))]
                if benchmark == "classification"
                else [f"{prefix}{i}\t{prefix}{(i + 1) % len(PAPER_LINES)}\t1" for i in range(len(PAPER_LINES))]
            )
            data.write_text(
                ("paper_id,label\n" if benchmark == "classification" else "query-id\tcorpus-id\tscore\n")
                + "\n".join(rows)
                + "\n"
            )
        else:
            _write(data, labels_kind)
        argv = [
            "evaluate",
            "--model",
            str(tiny_bert),
            "--benchmark",
            benchmark,
            "--data",
            str(data),
            "--papers",
            str(papers),
            "--no-progress",
            "--cache-dir",
            str(folder / "cache"),
            *[o.replace("OUT", str(folder / "out")) for group in options for o in group],
        ]
        _run(folder, argv, caplog)


@FUZZ
@given(
    papers_kind=INPUTS,
    citations_kind=st.sampled_from(["valid"] * 3 + ["empty", "binary", "bad csv", "unknown ids"]),
    options=st.lists(
        st.sampled_from(
            [
                ["--recipe", "scincl"],
                ["--set", "data.held_out=0.3"],
                ["--set", "max_steps=0"],
                ["--set", "nonsense=1"],
                ["--set", "learning_rate=abc"],
                ["--skip-invalid"],
                ["--resume"],
                ["--overwrite"],
            ]
        ),
        max_size=2,
    ),
)
def test_train(tiny_bert, caplog, papers_kind, citations_kind, options):
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        papers = _write(folder / "papers.jsonl", papers_kind)
        citations = folder / "cites.csv"
        if citations_kind in ("valid", "unknown ids"):
            prefix = "x" if citations_kind == "unknown ids" else "p"
            n = len(PAPER_LINES)
            citations.write_text(
                "citing,cited\n" + "".join(f"{prefix}{i},{prefix}{(i + k) % n}\n" for i in range(n) for k in (1, 2))
            )
        else:
            _write(citations, citations_kind)
        recipe = next((group for group in options if group[0] == "--recipe"), ["--recipe", "specter"])
        argv = [
            "train",
            *recipe,
            "--base",
            str(tiny_bert),
            "--papers",
            str(papers),
            "--citations",
            str(citations),
            "--output",
            str(folder / "run"),
            "--no-progress",
            "--set",
            "max_steps=1",
            "--set",
            "per_device_train_batch_size=2",
            "--set",
            "gradient_accumulation_steps=1",
            "--set",
            "embedding.max_length=8",
            "--set",
            "save_strategy=no",
            *[o for group in options if group[0] != "--recipe" for o in group],
        ]
        _run(folder, argv, caplog)


@FUZZ
@given(
    damage=st.sampled_from(
        ["none", "empty folder", "binary config", "config list", "truncated weights", "no weights", "stray files"]
    ),
    options=st.lists(
        st.sampled_from(
            [
                ["--no-validate"],
                ["--overwrite"],
                ["--repo-id", "org/name"],
                ["--repo-id", "bad"],
                ["--evaluation", "EVAL"],
                ["--model-name", "x"],
            ]
        ),
        max_size=2,
    ),
)
def test_export(tiny_bert, caplog, damage, options):
    import shutil

    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        model = folder / "model"
        if damage == "empty folder":
            model.mkdir()
        else:
            shutil.copytree(tiny_bert, model)
        if damage == "binary config":
            _write(model / "config.json", "binary")
        elif damage == "config list":
            (model / "config.json").write_text("[1, 2]")
        elif damage == "truncated weights":
            weights = (model / "model.safetensors").read_bytes()
            (model / "model.safetensors").write_bytes(weights[: len(weights) // 3])
        elif damage == "no weights":
            (model / "model.safetensors").unlink()
        elif damage == "stray files":
            (model / ".env").write_text("TOKEN=secret")
            (model / "key").symlink_to(folder / "outside")
        (folder / "outside").write_text("secret")
        _write(folder / "eval.json", "binary")
        argv = [
            "export",
            "--model",
            str(model),
            "--out",
            str(folder / "hub"),
            "--no-validate",
            *[o.replace("EVAL", str(folder / "eval.json")) for group in options for o in group],
        ]
        if _run(folder, argv, caplog) == 0:
            assert not (folder / "hub" / ".env").exists() and not (folder / "hub" / "key").exists()


@pytest.fixture(autouse=True)
def _info_logs(caplog):
    caplog.set_level(logging.INFO)
