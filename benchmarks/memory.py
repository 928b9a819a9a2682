"""Peak resident memory of the commands a user runs: ``demo``, ``train``, ``embed`` and ``evaluate``.

Each job runs in a fresh process tree. Its peak is the largest resident set of any process in the tree
(``RUSAGE_CHILDREN`` of a small parent that runs only that job). The jobs:

- ``demo``: ``sciembed demo`` on the data folder, as ``make demo`` runs it;
- ``train``: the ``specter`` recipe on all of CACM for 40 optimiser steps;
- ``embed``: 4,000 distinct real papers (``real_papers.py``) with the embedded default;
- ``evaluate``: the embedded default on CACM.

Each job's result is written to ``--output`` as soon as it ends (atomically, merged into the jobs already there),
with the load average sampled while it ran, the CPU and the commit: other work on the cores slows a job, and memory is
what is measured. ``--jobs`` runs some of them; ``--train-steps`` shortens the train job (recorded with its result).

    python benchmarks/memory.py --data ../shared/data
    python benchmarks/memory.py --data ../shared/data --jobs train
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from embed_scale import machine
from real_papers import distinct_papers

from sciembed.io import atomic_path

#: Peak resident set each job should stay within, in MB (none for ``evaluate``).
TARGETS_MB = {"demo": 2000, "train": 1500, "embed": 1000, "evaluate": None}
EMBED_PAPERS = 4000
TRAIN_STEPS = 40

#: Runs ``sys.argv[1:]`` and prints the largest resident set, in KB, of any process in its tree.
_PEAK = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n"
)


def jobs(data: Path, work: Path, train_steps: int = TRAIN_STEPS) -> dict[str, list[str]]:
    """The ``sciembed`` arguments of each job, writing under ``work``.

    Args:
        data: the shared data folder.
        work: the folder the jobs write in.
        train_steps: the optimiser steps of the train job.
    """
    papers = work / "papers.jsonl"
    chosen, _ = distinct_papers(data, EMBED_PAPERS)
    papers.write_text("".join(json.dumps(p) + "\n" for p in chosen), encoding="utf-8")
    cacm = str(data / "cacm")
    return {
        "demo": ["demo", "--data", str(data), "--output", str(work / "demo")],
        "train": [
            "train",
            "--recipe",
            "specter",
            "--data",
            cacm,
            "--output",
            str(work / "train"),
            "--set",
            f"max_steps={train_steps}",
            "--set",
            "save_strategy=no",
        ],
        "embed": ["embed", "--input", str(papers), "--output", str(work / "vectors.parquet"), "--no-cache"],
        "evaluate": ["evaluate", "--benchmark", "cacm", "--data", cacm, "--skip-invalid", "--no-cache"],
    }


def peak_rss_mb(arguments: list[str], log: Path) -> float:
    """Run ``sciembed arguments`` with its output in ``log``; returns the peak resident set of its tree in MB."""
    command = [sys.executable, "-c", _PEAK, sys.executable, "-m", "sciembed.cli", *arguments]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=output, text=True)
    kilobytes, code = done.stdout.split()[-2:]
    if done.returncode or int(code):
        raise RuntimeError(f"sciembed {' '.join(arguments)} failed; see {log}")
    return round(int(kilobytes) * 1024 / 1e6)


class LoadSampler(threading.Thread):
    """Samples the one-minute load average every ``interval`` seconds until stopped."""

    def __init__(self, interval: float = 10.0) -> None:
        super().__init__(daemon=True)
        self.interval, self.samples, self.stopped = interval, [], threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append(os.getloadavg()[0])
            self.stopped.wait(self.interval)

    def summary(self) -> dict[str, float]:
        """The mean and the largest sample."""
        return {"mean": round(sum(self.samples) / len(self.samples), 2), "max": round(max(self.samples), 2)}


def commit() -> str | None:
    """The sciembed commit the jobs ran, or ``None`` outside a git checkout."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    return done.stdout.strip() or None


def record(output: Path, name: str, result: dict[str, object]) -> dict[str, object]:
    """Merge one job's ``result`` into the JSON at ``output`` (written atomically); returns the whole record.

    Args:
        output: the JSON file; jobs already in it are kept.
        name: the job.
        result: what the job measured.
    """
    report = json.loads(output.read_text(encoding="utf-8")) if output.exists() else {}
    report = {"benchmark": "memory", "targets_mb": TARGETS_MB, "jobs": {}, **report}
    report["jobs"] = {**report["jobs"], name: result}
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--jobs", nargs="+", choices=list(TARGETS_MB), default=list(TARGETS_MB), help="jobs to run")
    parser.add_argument("--train-steps", type=int, default=TRAIN_STEPS, help="optimiser steps of the train job")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "memory.json")
    parser.add_argument("--keep", type=Path, help="a new folder to write the jobs' outputs and logs in, kept after")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True)

    with contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        commands = jobs(args.data, work, args.train_steps)
        for name in args.jobs:
            # The commit whose tree the job runs (its subprocesses import the tree as it is when they start).
            running = commit()
            load = LoadSampler()
            load.start()
            started = time.perf_counter()
            peak = peak_rss_mb(commands[name], work / f"{name}.log")
            load.stopped.set()
            # The train target is for the 40 steps: a shorter run is reported, not judged.
            judged = name != "train" or args.train_steps == TRAIN_STEPS
            target = TARGETS_MB[name] if judged else None
            result = {
                "command": "sciembed " + " ".join(commands[name]).replace(str(work), "WORK"),
                "peak_rss_mb": peak,
                "target_mb": target,
                "holds": None if target is None else peak <= target,
                "seconds": round(time.perf_counter() - started),
                "load_average": load.summary(),
                "sciembed_commit": running,
                "machine": machine(),
            }
            record(args.output, name, result)
            print(name, json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
