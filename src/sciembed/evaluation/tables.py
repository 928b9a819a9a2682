"""Result tables and the benchmarks' own averages.

- SciDocs (and Multi-SciDocs, in its layout): the average of every metric reported — with all tasks
  present, SciDocs' 12-metric average (MAG and MeSH F1; MAP and nDCG of co-view, co-read, cite and
  co-cite; nDCG and P@1 of recommendations).
- SciRepEval: a task's score is the mean of the metrics its task list names (Paper-Reviewer Matching:
  the mean of P@5 and P@10 on hard and soft judgements; regression: Kendall's τ); averages per group (``in-train``,
  ``out-of-train``, ``scidocs``) and over ``all`` those tasks. Few-shot rows are shown but counted in no average, as
  in the paper.
- MTEB: a task's score is the mean of its main score over its splits and subsets (mteb's ``TaskResult.get_score``);
  the mean over tasks, and with several task types the mean over types of their tasks' mean (MTEB's
  ``Mean (Task)`` and ``Mean (TaskType)``).

Values are on the 0–100 scale; the table rounds to two decimals as the papers print them, the JSON
keeps them unrounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .runner import EvaluationReport
    from .tasks import TaskScores

SCIREPEVAL_GROUPS = ("in-train", "out-of-train", "scidocs")


def primary_values(result: TaskScores) -> list[float]:
    """The values of the metrics the benchmark's averages take."""
    return (
        [result.metrics[m] for m in result.primary_metrics]
        if result.primary_metrics
        else list(result.metrics.values())
    )


def task_score(result: TaskScores) -> float:
    """One number per task: the mean of its primary metrics."""
    return float(np.mean(primary_values(result)))


def averages(benchmark: str, results: list[TaskScores]) -> dict[str, float]:
    """The benchmark's averages over ``results`` (empty for benchmarks that have none)."""
    if benchmark in ("scidocs", "multi-scidocs"):
        values = [v for r in results for v in primary_values(r)]
        return {f"average ({len(values)} metrics)": float(np.mean(values))} if values else {}
    if benchmark == "scirepeval":
        scored = [r for r in results if r.kind != "few_shot"]
        out = {}
        for group in SCIREPEVAL_GROUPS:
            members = [task_score(r) for r in scored if r.group == group]
            if members:
                out[f"{group} ({len(members)} tasks)"] = float(np.mean(members))
        if scored:
            out[f"all ({len(scored)} tasks)"] = float(np.mean([task_score(r) for r in scored]))
        return out
    if benchmark == "mteb":
        return _mteb_averages(results)
    return {}


def _mteb_averages(results: list[TaskScores]) -> dict[str, float]:
    """MTEB's benchmark means: a task's score is the mean of its main score over its splits and subsets (mteb's
    ``TaskResult.get_score``); ``mean (N tasks)`` over tasks, and with several task types MTEB's ``Mean (TaskType)``,
    the mean over types of the mean of their tasks."""
    by_task: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    for result in results:
        task = result.details.get("mteb_task", result.task)
        by_task.setdefault(task, []).extend(primary_values(result))
        kinds[task] = result.kind
    if not by_task:
        return {}
    scores = {task: float(np.mean(values)) for task, values in by_task.items()}
    out = {f"mean ({len(scores)} tasks)": float(np.mean(list(scores.values())))}
    types: dict[str, list[float]] = {}
    for task, score in scores.items():
        types.setdefault(kinds[task], []).append(score)
    if len(types) > 1:
        out[f"mean over task types ({len(types)} types)"] = float(np.mean([np.mean(v) for v in types.values()]))
    return out


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
