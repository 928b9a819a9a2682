"""Documentation that runs: every Python block of the README and of docs/ runs here, on the embedded model, in a folder
holding a small ``papers.jsonl`` (the file the examples read), unless the line before it says why not
(``<!-- not run: REASON -->``: a Hub download, a GPU, models a long training writes); those are reported as skipped
with their reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^\n]+?) -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M)
#: The papers the examples read as ``papers.jsonl`` (ids p1..p8, as the examples name them).
PAPERS = [
    ("Garbage collection in a list processor", "A method for reclaiming list storage without stopping the program."),
    ("Compiling recursive procedures", "Stack allocation of activation records for recursive calls in ALGOL."),
    ("Sorting on magnetic tape", "Merge sorting with polyphase distribution of runs across tape drives."),
    ("Hash tables with open addressing", "Linear probing and the expected number of probes per lookup."),
    ("Parsing operator precedence grammars", "A bottom-up parser driven by precedence relations between operators."),
    ("Storage allocation for list structures", "Free lists, reference counts and compaction of memory cells."),
    ("Numerical solution of differential equations", "Runge-Kutta methods and their step-size control."),
    ("Time-sharing operating systems", "Scheduling interactive users on one processor with paging."),
]


def blocks() -> list:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            name = f"{path.relative_to(ROOT)}:{line}"
            found.append(pytest.param(match.group("code"), match.group("reason"), name, id=name))
    return found


@pytest.mark.parametrize(("code", "reason", "name"), blocks())
def test_a_documentation_block_runs(code, reason, name, tmp_path, monkeypatch):
    if reason:
        pytest.skip(f"{name} is marked not run: {reason}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rows = [{"paper_id": f"p{i}", "title": t, "abstract": a} for i, (t, a) in enumerate(PAPERS, start=1)]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    exec(compile(code, name, "exec"), {"__name__": "__doc_example__"})


def test_blocks_are_found_and_most_of_them_run():
    found = blocks()
    marked = [p for p in found if p.values[1]]
    assert len(found) >= 10 and len(marked) <= len(found) // 2, [p.id for p in marked]
