"""What tests share besides fixtures: the shared data folder, invented papers and words, writers of small
input files in the layouts the readers take, and a way to interrupt a run mid-way."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

WORDS = (
    "the a of and in on for with by to is are we paper method model results graph citation "
    "neural network learning embedding document scientific text language data set task "
    "garbage collection memory query database join index matrix linear system algorithm "
    "compiler syntax translation program time sharing operating storage list structure"
).split()


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data, skipping the test with a clear reason when it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (see ../shared/data/README.md)")
    return path


#: The side venv of the transformers 4.57.6 line (torch, transformers 4.57.6, adapters 1.3.0; no sciembed), which
#: `make side-venv` builds and `make test` passes to the tests in $SCIEMBED_TF457_PYTHON.
SIDE_VENV_VARIABLE = "SCIEMBED_TF457_PYTHON"


def side_python() -> str:
    """The side venv's python, skipping the test with the reason when it was not built."""
    import os

    python = os.environ.get(SIDE_VENV_VARIABLE)
    if not python or not Path(python).is_file():
        pytest.skip(
            f"the transformers 4.57.6 side venv is not built (${SIDE_VENV_VARIABLE} unset or missing): "
            "run `make side-venv`"
        )
    return python


def run_side_python(script: str, cwd: Path, timeout: int = 600) -> str:
    """Run ``script`` in a fresh process of the side venv (offline, sciembed unimportable) in ``cwd``; returns
    its stdout and fails the test with its stderr when it exits non-zero."""
    return run_without_sciembed(script, cwd, line="4.57.6", timeout=timeout)


def run_without_sciembed(script: str, cwd: Path, *args: str, line: str = "current", timeout: int = 600) -> str:
    """Run ``script`` with ``args`` in a fresh process where sciembed cannot be imported; returns its stdout.

    Args:
        script: the Python source to run.
        cwd: the folder it runs in, which also holds its remote-code cache.
        args: its command-line arguments.
        line: the transformers line, ``"current"`` (this venv) or ``"4.57.6"`` (the side venv, skipped when absent).
        timeout: seconds before the process is stopped.
    """
    import os
    import subprocess
    import sys

    python = sys.executable if line == "current" else side_python()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(cwd / "modules"), "PYTHONPATH": ""}
    guarded = 'import sys; sys.modules["sciembed"] = None\n' + script
    result = subprocess.run(
        [python, "-c", guarded, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{line} transformers script failed:\n{result.stderr[-4000:]}"
    return result.stdout


def write_s2orc(path: Path) -> Path:
    """Forty papers citing each other in S2ORC's metadata format (each cites the next three)."""
    import json

    lines = []
    for i in range(40):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12))
        cites = [f"p{(i + k) % 40}" for k in (1, 2, 3)]
        lines.append(
            json.dumps(
                {
                    "paper_id": f"p{i}",
                    "title": words[:40],
                    "abstract": words,
                    "year": 2000,
                    "outbound_citations": cites,
                    "inbound_citations": [],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def write_hub_folder(root: Path, configs: dict) -> Path:
    """A local folder in the Hub layout: Parquet files per config and split, plus README.md with YAML
    ``configs:`` (what ``datasets.load_dataset(folder, config)`` reads offline)."""
    root.mkdir(parents=True)
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split, data in splits.items():
            (root / config).mkdir(exist_ok=True)
            data.to_parquet(root / config / f"{split}.parquet")
            lines += [f"  - split: {split}", f"    path: {config}/{split}.parquet"]
    (root / "README.md").write_text("\n".join(lines + ["---", "Test copy in a Hub dataset layout."]) + "\n")
    return root


PAPERS = [
    {
        "paper_id": "p1",
        "title": "Garbage collection of list structure",
        "abstract": "We reclaim memory in a time sharing system.",
    },
    {"paper_id": "p2", "title": "Query join index", "abstract": ""},
    {
        "paper_id": "p3",
        "title": "",
        "abstract": "A linear system algorithm for the matrix of a graph, with a long abstract about citation "
        "embedding of scientific documents and neural network learning on text data.",
    },
    {"paper_id": "p4", "title": "Compiler syntax translation", "abstract": "The program translation of a language."},
    {"paper_id": "p5", "title": "Embedding", "abstract": "Document."},
]


class Interrupt(Exception):
    """What a patched encoder raises to stop a run mid-way, as a kill would."""


def counting_encodes(monkeypatch, fail_on_call: int | None = None) -> list[list[str]]:
    """Record the paper ids of every ``PaperEncoder.encode`` call (one per embed shard); raise
    :class:`Interrupt` on call ``fail_on_call``."""
    from sciembed import PaperEncoder

    calls = []
    original = PaperEncoder.encode

    def encode(self, papers, **kwargs):
        if all(isinstance(p, str) for p in papers):  # the embedding cache asking for the model's width
            return original(self, papers, **kwargs)
        calls.append([p["paper_id"] for p in papers])
        if len(calls) == fail_on_call:
            raise Interrupt
        return original(self, papers, **kwargs)

    monkeypatch.setattr(PaperEncoder, "encode", encode)
    return calls
