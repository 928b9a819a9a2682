"""The recipes table's statistics: paired bootstrap intervals and the summary of the rows."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from sciembed.evaluation.compare import PaperResamples, percentile_interval, resampled_means

from .systems import PEER, REFERENCE, SYSTEMS
from .tasks import CITE_TASKS, HEAD, PER_PAPER, PER_QUERY

#: Bootstrap resamples per interval.
BOOTSTRAP = 10_000


def paired_interval(
    rows: list[dict[str, Any]], others: dict[int, dict[str, Any]], task: str, resamples: PaperResamples
) -> dict[str, Any] | None:
    """The mean difference of ``rows`` to ``others`` on ``task``, with its 95% bootstrap interval.

    Ranking tasks resample per-query differences pooled over seeds. Classification resamples each seed's test papers
    and scores both rows' macro-F1 on each resample, then averages over seeds. Seeds without per-query or per-paper
    values are left out; None when all are.

    Args:
        rows: one system's rows.
        others: the other system's rows by seed.
        task: the task compared.
        resamples: the test papers' resamples, shared by every pair scored on them.
    """
    pairs = [(row, others[row["seed"]]) for row in rows if row["seed"] in others]
    if task in PER_PAPER:
        return _paired_macro_f1(pairs, task, resamples)
    pairs = [
        (row, other) for row, other in pairs if task in row.get("per_query", {}) and task in other.get("per_query", {})
    ]
    differences = [
        row["per_query"][task][query] - other["per_query"][task][query]
        for row, other in pairs
        for query in row["per_query"][task]
    ]
    if not differences:
        return None
    values = np.array(differences)
    means = resampled_means(values, BOOTSTRAP, seed=0)
    return _interval(float(values.mean()), means, [row["seed"] for row, _ in pairs], queries=len(values))


def _paired_macro_f1(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    task: str,
    resamples: PaperResamples,
    their_task: str | None = None,
) -> dict[str, Any] | None:
    """The classification interval of :func:`paired_interval`.

    Args:
        pairs: the two systems' rows of each seed.
        task: the task of the first rows.
        resamples: the test papers' resamples.
        their_task: the second rows' task on the same test papers (a probe against a head); by default ``task``.
    """
    their_task = their_task or task
    points, resampled, papers, seeds = [], [], 0, []
    for row, other in pairs:
        if task not in row.get("per_paper", {}) or their_task not in other.get("per_paper", {}):
            continue
        ours, theirs = row["per_paper"][task], other["per_paper"][their_task]
        if (
            ours["papers"].keys() != theirs["papers"].keys()
        ):  # scored on other test papers (a split changed since): no pair
            continue
        seeds.append(row["seed"])
        ids = tuple(sorted(ours["papers"]))
        (our_point, our_resampled), (their_point, their_resampled) = (
            resamples.macro_f1(kept, ids) for kept in (ours, theirs)
        )
        points.append(our_point - their_point)
        resampled.append(our_resampled - their_resampled)
        papers += len(ids)
    if not points:
        return None
    return _interval(statistics.mean(points), np.mean(resampled, axis=0), seeds, papers=papers)


def _same_test_papers(row: dict[str, Any], other: dict[str, Any], task: str) -> bool:
    """Whether two rows scored a classification task on the same test papers (true without per-paper values)."""
    ours, theirs = (r.get("per_paper", {}).get(task) for r in (row, other))
    return ours is None or theirs is None or ours["papers"].keys() == theirs["papers"].keys()


def _interval(difference: float, resampled: np.ndarray, seeds: list[int], **counts: int) -> dict[str, Any]:
    low, high = percentile_interval(resampled)
    return {
        "difference": round(difference, 2),
        "interval_95": [round(float(low), 2), round(float(high), 2)],
        "seeds": seeds,
        **counts,
        "beats": bool(low > 0),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per system: means over seeds and paired intervals against MiniLM, the peer and the counterpart.

    Args:
        rows: the results file's rows.
    """
    by_system: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_system.setdefault(row["system"], {})[row["seed"]] = row
    reference = by_system.get(REFERENCE, {})
    # Each seed's test papers are drawn once (seeded by the papers): every pair of rows scored on them is compared on
    # the same resamples (MiniLM's rows with every system's, each system's with MiniLM, the peer and its counterpart).
    resamples = PaperResamples(BOOTSTRAP)
    summary: dict[str, Any] = {}
    for name, seeds in by_system.items():
        chosen = [seeds[s] for s in sorted(seeds) if s in reference]
        if not chosen:
            continue
        tasks = chosen[0]["metrics"]
        entry: dict[str, Any] = {
            "seeds": [r["seed"] for r in chosen],
            "mean": {
                t: {m: round(statistics.mean(r["metrics"][t][m] for r in chosen), 2) for m in tasks[t]} for t in tasks
            },
        }
        if name != REFERENCE:
            entry["against_published"] = {
                t: paired_interval(chosen, reference, t, resamples) for t in (*PER_QUERY, *PER_PAPER)
            }
            entry["change_per_seed"] = {
                t: {
                    m: [
                        round(r["metrics"][t][m] - reference[r["seed"]]["metrics"][t][m], 2)
                        if _same_test_papers(r, reference[r["seed"]], t)
                        else None
                        for r in chosen
                    ]
                    for m in tasks[t]
                }
                for t in tasks
                # A row's own task (a SPECTROID head's predictions) has no counterpart in MiniLM's row.
                if t not in CITE_TASKS and t in reference[chosen[0]["seed"]]["metrics"]
            }
            if name != PEER and PEER in by_system:
                entry["against_peer"] = {
                    t: paired_interval(chosen, by_system[PEER], t, resamples) for t in (*PER_QUERY, *PER_PAPER)
                }
            counterpart = SYSTEMS[name].counterpart if name in SYSTEMS else None
            if counterpart in by_system:
                entry["against_counterpart"] = {
                    "system": counterpart,
                    **{
                        t: paired_interval(chosen, by_system[counterpart], t, resamples)
                        for t in (*PER_QUERY, *PER_PAPER)
                    },
                }
            if all("before" in r for r in chosen):
                entry["above_step_0_on_every_seed"] = all(
                    r["metrics"]["cacm_cite"]["map"] > r["before"]["map"] for r in chosen
                )
            if all(HEAD in r["metrics"] for r in chosen):
                # SPECTROID's claim: its trained head against MiniLM's linear probe, on the same test papers.
                entry["head_against_probe"] = _paired_macro_f1(
                    [(r, reference[r["seed"]]) for r in chosen], HEAD, resamples, "cacm_categories"
                )
                entry["head_above_probe_on_every_seed"] = all(
                    r["metrics"][HEAD]["f1_macro"] > reference[r["seed"]]["metrics"]["cacm_categories"]["f1_macro"]
                    for r in chosen
                )
        summary[name] = entry
    return summary


def mean_change(entry: dict[str, Any], task: str, metric: str) -> float | None:
    """The mean per-seed change of a system on a task, over the seeds scored on the reference's test papers."""
    changes = [c for c in entry.get("change_per_seed", {}).get(task, {}).get(metric, []) if c is not None]
    return statistics.mean(changes) if changes else None
