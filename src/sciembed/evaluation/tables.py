"""Result tables, and each benchmark's averages through its class in :mod:`.benchmarks`.

Values are on the 0–100 scale. The table rounds to two decimals as the papers print them, the JSON keeps them
unrounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .benchmarks import BENCHMARKS
from .benchmarks.scirepeval import SCIREPEVAL_GROUPS
from .tasks import primary_values, task_score

if TYPE_CHECKING:
    from .runner import EvaluationReport
    from .tasks import TaskScores

__all__ = ["SCIREPEVAL_GROUPS", "averages", "format_table", "primary_values", "task_score"]


def averages(benchmark: str, results: list[TaskScores]) -> dict[str, float]:
    """The benchmark's own averages over ``results``.

    A suite that is no benchmark of the table has none.

    Args:
        benchmark: the benchmark's name.
        results: the scored tasks.
    """
    found = BENCHMARKS.get(benchmark)
    return found.averages(results) if found is not None else {}


def format_table(report: EvaluationReport) -> str:
    """Task | metric | value | size rows, then the averages, the absent tasks and the skipped rows."""
    rows = [("Task", "Metric", "Value", "Size")]
    for result in report.results:
        size = ", ".join(f"{k.removeprefix('num_')} {v:,}" for k, v in result.counts.items())
        for index, (metric, value) in enumerate(result.metrics.items()):
            rows.append((result.task if index == 0 else "", metric, f"{value:.2f}", size if index == 0 else ""))
    for name, value in report.averages.items():
        rows.append(("Average", name, f"{value:.2f}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"{report.benchmark} — {report.model}", ""]
    for index, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(w) if i != 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))
            ).rstrip()
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    if report.missing:
        lines.append(f"\nnot in {report.source}: {', '.join(report.missing)}")
    skipped = {k: v for r in report.results for k, v in r.skipped.items() if v}
    if report.skipped_records or skipped:
        lines.append(
            f"skipped: {len(report.skipped_records)} record(s) while reading{'; ' + str(skipped) if skipped else ''}"
        )
    return "\n".join(lines)
