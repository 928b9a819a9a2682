"""The recipes results file: read and written under a lock, since runs side by side share it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import platform
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from sciembed.io import atomic_path

#: The first line of every recipes results file.
DESCRIPTION = (
    "Does each recipe earn its place? The recipes from the embedded MiniLM, judged on held-out and out-of-domain data."
)


@contextlib.contextmanager
def locked(output: Path) -> Iterator[None]:
    """Holds the results file's lock: runs of other seeds or systems side by side write the same file."""
    with open(output.with_name(f"{output.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def read(output: Path) -> dict[str, Any]:
    """The results file ``output``, which must exist."""
    if not output.is_file():
        raise SystemExit(f"{output} does not exist: run the benchmark first")
    with locked(output):
        return json.loads(output.read_text(encoding="utf-8"))


def write(output: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``output`` in one step."""
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


@dataclass
class Rows:
    """A run's rows, written to the results file as each one finishes.

    Args:
        output: the results file.
        settings: the run's settings, which the file's own must equal.
        data: the counts of the data read, recorded in the file.
    """

    output: Path
    settings: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: The rows the file held when the run began: they are kept, not trained again.
    done: frozenset[tuple[int, str]] = frozenset()
    #: The rows this run added or rescored: the only ones it writes.
    changed: set[tuple[int, str]] = field(default_factory=set)

    @classmethod
    def open(cls, output: Path, settings: dict[str, Any]) -> Rows:
        """The rows of ``output`` (none when it does not exist), refused when it holds a run of other settings."""
        results = json.loads(output.read_text(encoding="utf-8")) if output.is_file() else {}
        if results and {k: results["settings"].get(k) for k in settings} != settings:
            raise SystemExit(
                f"{output} holds a run with other settings ({results['settings']}); choose another --output"
            )
        rows = results.get("rows", [])
        return cls(output, settings, rows=rows, done=frozenset((r["seed"], r["system"]) for r in rows))

    def add(self, row: dict[str, Any]) -> None:
        """Add a finished row, print it and save."""
        self.rows.append(row)
        self.changed.add((row["seed"], row["system"]))
        print(json.dumps({k: v for k, v in row.items() if k not in ("per_query", "per_paper")}), flush=True)
        self.save()

    def save(self) -> None:
        """Write the file's rows with this run's in their place, under the lock, and their summary."""
        from .stats import summarise

        self.output.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.output):
            if self.output.is_file():
                ours = {(r["seed"], r["system"]): r for r in self.rows if (r["seed"], r["system"]) in self.changed}
                theirs = json.loads(self.output.read_text(encoding="utf-8"))["rows"]
                self.rows[:] = [ours.pop((r["seed"], r["system"]), r) for r in theirs] + list(ours.values())
            report = {
                "benchmark": "recipes",
                "description": DESCRIPTION,
                "settings": {**self.settings, "seeds": sorted({r["seed"] for r in self.rows})},
                "data": self.data,
                "machine": {"platform": platform.platform(), "torch_threads": torch.get_num_threads()},
                "rows": self.rows,
                "summary": summarise(self.rows),
            }
            write(self.output, report)
