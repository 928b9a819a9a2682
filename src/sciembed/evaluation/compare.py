"""Paired comparison of two evaluations: per task, a metric's difference with a bootstrap confidence interval.

Two results JSONs (:meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict`) of the same tasks are paired by their
units: the queries of a ranking task (``details["per_query"]``), the test papers of a classification or regression
task (``details["per_paper"]``, each paper's label and prediction) or the iterations of a few-shot setting
(``details["per_fold"]``). The units both files scored, in the order of their ids (folds in their own order), are
resampled with replacement (``resamples`` times, drawn as :func:`bootstrap_indices` draws them). Each resample gives
the metric's difference, and the 2.5th and 97.5th percentiles of those differences are the interval. A ranking
measure's difference is the mean of the per-query differences. A classification or regression metric is scored again
on each resample of the test papers, for both files.

Tasks that cannot be paired (in one file only, without per-unit scores, with no unit in common) are named with the
reason and counted, never dropped in silence. Two results of other data or evaluation settings (the benchmark, the
files read, the split, the candidates, the cutoffs, ...) are refused, naming each setting that differs, unless the
caller allows it. The model's own settings (model, pooling, max_length, revision, batch size, backend, the embedding
file) differ by design. Two results that read a data file with other contents (the SHA-256 digests of their
``inputs``) are refused the same way, naming the file. Values on two scales (``scale``: 0-1 and 0-100) are always
refused, and so is a per-unit value that is not a finite number, naming the file, task, unit and metric.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..choices import StrChoice

#: Bootstrap resamples of an interval, unless asked otherwise.
RESAMPLES = 10_000
#: The settings of a results JSON that describe the model, not what was scored: they differ by design between two
#: evaluations compared, as do the tasks chosen (a task in one file only is named as such).
MODEL_SETTINGS = frozenset(
    {
        "pooling",
        "max_length",
        "batch_size",
        "backend",
        "onnx_quantization",
        "revision",
        "embeddings",
        "mteb_version",
        "tasks",
        "few_shot",
    }
)
#: The inputs of a results JSON that are the model's output, not the data scored: their digests differ by design.
MODEL_INPUTS = frozenset({"embeddings", "embeddings_ids"})
#: Bootstrap draws held in memory at once: the resamples are drawn in blocks of rows of about this many units.
_BLOCK = 2**22


def bootstrap_indices(units: int, resamples: int, seed: int) -> np.ndarray:
    """The units drawn by each resample: ``(resamples, units)`` indices from ``np.random.default_rng(seed)``.

    Args:
        units: how many units there are to draw from.
        resamples: how many resamples to draw.
        seed: the generator's seed.
    """
    return np.random.default_rng(seed).integers(0, units, size=(resamples, units))


def resampled_means(values: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """The mean of ``values`` on each bootstrap resample, drawn as :func:`bootstrap_indices` draws them.

    Args:
        values: one value per unit (e.g. per-query differences).
        resamples: how many resamples to draw.
        seed: the generator's seed.
    """
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    rows = max(1, _BLOCK // max(1, len(values)))
    means = np.empty(resamples)
    # Drawing the rows block by block gives the same indices as one draw of them all.
    for start in range(0, resamples, rows):
        count = min(rows, resamples - start)
        means[start : start + count] = values[rng.integers(0, len(values), size=(count, len(values)))].mean(axis=1)
    return means


def resample_weights(units: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, units)`` counts: how often each unit is drawn in each resample of :func:`bootstrap_indices`.

    Args:
        units: how many units there are to draw from.
        resamples: how many resamples to draw.
        seed: the generator's seed.
    """
    drawn = bootstrap_indices(units, resamples, seed)
    drawn += np.arange(resamples)[:, None] * units
    counts = np.bincount(drawn.ravel(), minlength=resamples * units)
    return counts.reshape(resamples, units).astype(float)


def percentile_interval(resampled: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap values: their 2.5th and 97.5th percentiles.

    Args:
        resampled: one value per resample.
    """
    low, high = np.percentile(resampled, [2.5, 97.5])
    return float(low), float(high)


class PaperResamples:
    """Resamples of test papers and a classifier's macro-F1 on each.

    Resamples are drawn once per set of papers.
    Every pair of results scored on the same test papers is compared on the same resamples, and each result's
    macro-F1 on them is computed once.

    Args:
        resamples: how many resamples to draw.
        seed: the generator's seed. ``None`` seeds each set of papers by a checksum of its ids.
    """

    def __init__(self, resamples: int = RESAMPLES, seed: int | None = None) -> None:
        self.resamples = resamples
        self.seed = seed
        self._weights: dict[tuple[str, ...], np.ndarray] = {}
        # Keyed by id() of a result's per-paper values, kept alive beside their scores so that no id is reused.
        self._scores: dict[tuple[int, tuple[str, ...]], tuple[Mapping[str, Any], float, np.ndarray]] = {}

    def weights(self, papers: tuple[str, ...]) -> np.ndarray:
        """``(resamples, len(papers))`` counts: how often each paper is drawn in each resample.

        Args:
            papers: the test papers, in a fixed order.
        """
        if papers not in self._weights:
            seed = zlib.crc32("\n".join(papers).encode()) if self.seed is None else self.seed
            self._weights[papers] = resample_weights(len(papers), self.resamples, seed)
        return self._weights[papers]

    def macro_f1(self, kept: Mapping[str, Any], papers: tuple[str, ...]) -> tuple[float, np.ndarray]:
        """A result's macro-F1 (x 100) on all of ``papers`` and on each resample of them.

        Args:
            kept: ``{"papers": {paper: [label, predicted]}, "label_columns": int | None}`` (label columns for
                multi-label).
            papers: the test papers scored, a subset of ``kept["papers"]``.
        """
        from .supervised import macro_f1_resamples

        key = (id(kept), papers)
        if key not in self._scores:
            gold, predicted = (list(column) for column in zip(*(kept["papers"][paper] for paper in papers)))
            everyone, resampled = (
                macro_f1_resamples(gold, predicted, w, num_labels=kept["label_columns"])
                for w in (np.ones((1, len(papers))), self.weights(papers))
            )
            self._scores[key] = (kept, float(everyone[0]), resampled)
        return self._scores[key][1:]


@dataclass
class PairedDifference:
    """One task's metric in two evaluations, and their paired difference.

    Attributes:
        benchmark, task, task_id: the task, as the results name it.
        metric: the metric compared.
        unit: what was resampled: ``queries``, ``papers`` or ``folds``.
        units: how many units both evaluations scored (the pairs).
        first, second: the metric of each evaluation on those units (0-100).
        difference: ``second - first``.
        interval_95: the 2.5th and 97.5th percentiles of the resampled differences.
        only_first, only_second: units that only one evaluation scored, left out of the pairs.
    """

    benchmark: str
    task: str
    task_id: str
    metric: str
    unit: str
    units: int
    first: float
    second: float
    difference: float
    interval_95: tuple[float, float]
    only_first: int = 0
    only_second: int = 0


@dataclass
class Comparison:
    """What :func:`compare_results` found.

    Attributes:
        differences: one row per shared task and metric.
        skipped: task -> why it could not be paired.
        resamples, seed: how the intervals were drawn.
        names: the two results, as the table names them (e.g. their files).
        settings_differ: setting -> its value in each result, for the data or evaluation settings that differ
            (compared only when allowed). A data file read with other contents is ``inputs.<input>/<file>``.
        notes: what the comparison could not check (a result that records no digests of its data files).
    """

    differences: list[PairedDifference]
    skipped: dict[str, str] = field(default_factory=dict)
    resamples: int = RESAMPLES
    seed: int = 0
    names: tuple[str, str] = ("first", "second")
    settings_differ: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the settings, the rows and the skipped tasks.

        It holds one row per task and metric, and the tasks skipped with their reasons.
        """
        return {
            "first": self.names[0],
            "second": self.names[1],
            "difference": "second - first",
            "interval": "paired 95% percentile bootstrap",
            "resamples": self.resamples,
            "seed": self.seed,
            "differences": [asdict(row) for row in self.differences],
            "skipped": dict(self.skipped),
            "settings_differ": {name: list(values) for name, values in self.settings_differ.items()},
            "notes": list(self.notes),
        }

    def table(self) -> str:
        """Task | metric | first | second | difference | 95% interval | pairs rows, then the tasks skipped."""
        lines = [
            f"second - first, paired 95% bootstrap intervals ({self.resamples:,} resamples, seed {self.seed})",
            f"  first:  {self.names[0]}",
            f"  second: {self.names[1]}",
            *(
                f"  differs: {name}: {first!r} in first, {second!r} in second"
                for name, (first, second) in self.settings_differ.items()
            ),
            *(f"  note: {note}" for note in self.notes),
            "",
        ]
        rows = [("Task", "Metric", "First", "Second", "Difference", "95% interval", "Pairs")]
        for index, row in enumerate(self.differences):
            shown = index == 0 or (row.benchmark, row.task) != (
                self.differences[index - 1].benchmark,
                self.differences[index - 1].task,
            )
            unpaired = (
                f" ({row.only_first} only in first, {row.only_second} only in second)"
                if row.only_first or row.only_second
                else ""
            )
            low, high = row.interval_95
            rows.append(
                (
                    row.task if shown else "",
                    row.metric,
                    f"{row.first:.2f}",
                    f"{row.second:.2f}",
                    f"{row.difference:+.2f}",
                    f"[{low:+.2f}, {high:+.2f}]",
                    f"{row.units:,} {row.unit}{unpaired}",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for index, row in enumerate(rows):
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
            if index == 0:
                lines.append("  ".join("-" * width for width in widths))
        if len(rows) == 1:
            lines.append("(no task could be paired)")
        if self.skipped:
            lines.append(f"\nskipped {len(self.skipped)} task(s):")
            lines += [f"  {task}: {reason}" for task, reason in self.skipped.items()]
        return "\n".join(lines)


def compare_results(
    first: Mapping[str, Any],
    second: Mapping[str, Any],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    names: tuple[str, str] = ("first", "second"),
    allow_different_settings: bool = False,
) -> Comparison:
    """Pair two results JSONs task by task, with each metric's difference and interval.

    A difference is the second result minus the first, with its 95% interval.

    Args:
        first, second: the results, as :meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict` writes them.
        metrics: the metrics to compare where a task has them (default: each task's own, ``primary_metrics``).
        resamples: bootstrap resamples per interval.
        seed: the seed of the resampling.
        names: how the two results are named in the reasons a task is skipped (e.g. their files).
        allow_different_settings: compare results of other data or evaluation settings (:func:`different_settings`),
            naming them in the table, instead of refusing them.

    Raises:
        ValueError: a result without a ``tasks`` list, a non-positive ``resamples``, results of other data or
            evaluation settings (unless allowed), values on two scales, a metric asked for that no task holds, or
            a per-unit value that is not a finite number (each named).
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    ours, theirs = (_tasks(result, name) for result, name in zip((first, second), names))
    scales = [
        str(r["scale"]).split(":")[0].strip() if isinstance(r, Mapping) and "scale" in r else None
        for r in (first, second)
    ]
    if None not in scales and scales[0] != scales[1]:
        raise ValueError(
            f"{names[0]} holds values on the scale {scales[0]}, {names[1]} on {scales[1]}: their differences would "
            "mix the two scales; evaluate both again with this sciembed, which writes 0-100"
        )
    changed = different_inputs(first, second)
    if changed and not allow_different_settings:
        shown = "; ".join(
            f"{key.removeprefix('inputs.')}: sha256 {a[:12]} in {names[0]}, {b[:12]} in {names[1]}"
            for key, (a, b) in changed.items()
        )
        raise ValueError(
            f"{names[0]} and {names[1]} read data files whose contents differ ({shown}): a file changed in place "
            "between the two evaluations? Their differences are not those of the models; evaluate both on the same "
            "files, or pass --allow-different-settings (allow_different_settings=True) to compare them anyway"
        )
    differ = {**different_settings(first, second), **changed}
    if differ and not allow_different_settings:
        shown = "; ".join(f"{setting}: {a!r} in {names[0]}, {b!r} in {names[1]}" for setting, (a, b) in differ.items())
        raise ValueError(
            f"{names[0]} and {names[1]} were not scored on the same data and settings ({shown}), so their "
            "differences are not those of the models; evaluate both the same way, or pass --allow-different-settings "
            "(allow_different_settings=True) to compare them anyway"
        )
    if metrics:
        held = {m for tasks in (ours, theirs) for task in tasks.values() for m in task.get("metrics") or {}}
        unknown = [m for m in metrics if m not in held]
        if unknown:
            raise ValueError(
                f"--metrics {', '.join(unknown)}: no task of {names[0]} or {names[1]} holds "
                f"{'it' if len(unknown) == 1 else 'them'}; the metrics they hold: {', '.join(sorted(held)) or 'none'}"
            )
    notes = [
        f"{name} records no digests of its data files (written by an older sciembed): a data file changed in place "
        "is not seen"
        for result, name in zip((first, second), names)
        if "inputs" not in result
    ]
    comparison = Comparison([], resamples=resamples, seed=seed, names=names, settings_differ=differ, notes=notes)
    papers = PaperResamples(resamples, seed)
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        label = f"{key[0]} {key[2]}"
        if key not in ours or key not in theirs:
            comparison.skipped[label] = f"only in {names[0] if key in ours else names[1]}"
            continue
        a, b = ours[key], theirs[key]
        wanted = list(metrics) if metrics else list(a.get("primary_metrics") or a.get("metrics", {}))
        asked = [m for m in wanted if m in a.get("metrics", {})]
        rows, reason = _paired(a, b, asked, resamples, seed, papers, names, label)
        comparison.differences += rows
        if reason:
            comparison.skipped[label] = reason
    return comparison


def different_settings(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The data and evaluation settings two results JSONs differ in: setting -> (first's value, second's value).

    Compared: the ``benchmark``, the ``source`` read and every entry of ``settings`` but those of
    :data:`MODEL_SETTINGS`. A setting one result does not record (written by another sciembed, or by another kind
    of run) is not compared.

    Args:
        first: the first result, as :meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict` writes it.
        second: the second result.
    """

    def recorded(result: Mapping[str, Any]) -> dict[str, Any]:
        settings = result.get("settings")
        found = {
            f"settings.{k}": v
            for k, v in (settings.items() if isinstance(settings, Mapping) else ())
            if k not in MODEL_SETTINGS
        }
        found.update({key: result[key] for key in ("benchmark", "source") if key in result})
        for key in ("source", "settings.papers", "settings.queries"):  # ./q.tsv and q.tsv name one file
            if isinstance(found.get(key), str):
                found[key] = os.path.normpath(found[key])
        return found

    ours, theirs = recorded(first), recorded(second)
    return {key: (ours[key], theirs[key]) for key in ours if key in theirs and ours[key] != theirs[key]}


def different_inputs(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The data files two results JSONs both read with other contents: ``inputs.<input>/<file>`` -> (first's
    sha256, second's).

    Files one result read and the other did not (other tasks), the vectors of an embedding file
    (:data:`MODEL_INPUTS`) and results that record no digests are not compared.

    Args:
        first: the first result, as :meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict` writes it.
        second: the second result.
    """
    ours, theirs = (
        {
            f"inputs.{name}/{file}": digest
            for name, files in (result.get("inputs") or {}).items()
            if name not in MODEL_INPUTS and isinstance(files, Mapping)
            for file, digest in files.items()
        }
        for result in (first, second)
    )
    return {key: (ours[key], theirs[key]) for key in ours if key in theirs and ours[key] != theirs[key]}


def _number(value: Any, where: str) -> float:
    """``value`` as a float, refused (naming ``where``) when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        found = "no value" if value is None else f"{value!r} is not a finite number"
        raise ValueError(f"{where}: {found}; evaluate again with sciembed evaluate --output, or mend the file")
    return float(value)


def _tasks(result: Mapping[str, Any], name: str) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    tasks = result.get("tasks") if isinstance(result, Mapping) else None
    if not isinstance(tasks, list) or not all(isinstance(task, Mapping) for task in tasks):
        raise ValueError(
            f"{name}: not the results of sciembed evaluate (no 'tasks' list); write them with "
            "sciembed evaluate --output FILE"
        )
    return {(str(t.get("benchmark")), str(t.get("task_id")), str(t.get("task"))): t for t in tasks}


class ScoreUnit(StrChoice):
    """The units a result keeps its scores by, each under its key of ``details``."""

    PER_QUERY = "per_query"
    PER_PAPER = "per_paper"
    PER_FOLD = "per_fold"


@dataclass(frozen=True)
class _UnitForm:
    """How a unit's scores are written and named.

    Attributes:
        plural: the units, as a row names them.
        single: one unit, as a message names it.
        shape: the type of one unit's value.
        shown: that type, as a message describes it.
    """

    plural: str
    single: str
    shape: type
    shown: str


_UNIT_FORMS = {
    ScoreUnit.PER_QUERY: _UnitForm("queries", "query", Mapping, "a mapping of metric to value"),
    ScoreUnit.PER_PAPER: _UnitForm("papers", "paper", list, "a [label, prediction] pair"),
    ScoreUnit.PER_FOLD: _UnitForm("folds", "iteration", list, "a list of one value per iteration"),
}


def _paired(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    metrics: list[str],
    resamples: int,
    seed: int,
    papers: PaperResamples,
    names: tuple[str, str],
    label: str,
) -> tuple[list[PairedDifference], str | None]:
    """The paired differences of one task's ``metrics``, or why there are none.

    ``label`` names the task.
    """
    if not metrics:
        return [], "none of the metrics asked for"
    for unit in ScoreUnit:
        present = [unit in (task.get("details") or {}) for task in (a, b)]
        if all(present):
            break
        if any(present):
            lacking = names[present.index(False)]
            return [], f"{lacking} holds no {unit.replace('_', '-')} scores (written by an older sciembed?)"
    else:
        return [], "no per-query, per-paper or per-fold scores"
    ours, theirs = a["details"][unit], b["details"][unit]
    for held, name in ((ours, names[0]), (theirs, names[1])):
        _check_units(held, unit, f"{name}: task {label}")
    if unit is ScoreUnit.PER_FOLD:  # metric -> one value per iteration, as unit -> metric -> value
        ours, theirs = (
            {
                str(i): {m: v[i] for m, v in t.items() if i < len(v)}
                for i in range(max(map(len, t.values()), default=0))
            }
            for t in (ours, theirs)
        )
    shared = [u for u in ours if u in theirs]
    if unit is not ScoreUnit.PER_FOLD:  # in the order of their ids, so that swapping the results only flips the signs
        shared.sort(key=str)
    name = _UNIT_FORMS[unit].plural
    if not shared:
        return [], f"no {name} in common ({len(ours)} and {len(theirs)})"
    if unit is ScoreUnit.PER_PAPER:
        differing = [p for p in shared if ours[p][0] != theirs[p][0]]
        if differing:
            return [], f"{len(differing)} test paper(s) labelled differently, e.g. {differing[0]!r}: not the same task"
    counts = {"only_first": len(ours) - len(shared), "only_second": len(theirs) - len(shared)}
    base = {"benchmark": str(a.get("benchmark")), "task": str(a.get("task")), "task_id": str(a.get("task_id"))}
    rows, missing = [], []
    for metric in metrics:
        if unit is ScoreUnit.PER_PAPER:
            scored = _paper_metric(a, b, metric, tuple(shared), papers, resamples)
            if scored is None:
                missing.append(metric)
                continue
            first, second, resampled = scored
        else:
            if any(all(metric not in t[u] for u in shared) for t in (ours, theirs)):
                missing.append(metric)
                continue
            kind = _UNIT_FORMS[unit].single
            x, y = (
                np.array([_number(t[u].get(metric), f"{n}: task {label}, {kind} {u!r}, {metric}") for u in shared])
                for t, n in ((ours, names[0]), (theirs, names[1]))
            )
            first, second = float(x.mean()), float(y.mean())
            resampled = resampled_means(y - x, resamples, seed)
        rows.append(
            PairedDifference(
                **base,
                metric=metric,
                unit=name,
                units=len(shared),
                first=first,
                second=second,
                difference=second - first,
                interval_95=percentile_interval(resampled),
                **counts,
            )
        )
    return rows, (f"no per-unit values of {', '.join(missing)}" if missing else None)


def _check_units(held: Any, unit: ScoreUnit, where: str) -> None:
    """Refuse a task's ``details[unit]`` (named by ``where``) that is not as evaluate writes it.

    Evaluate writes per query a mapping of metrics, per fold a list of values per metric, and per paper a
    ``[label, prediction]`` pair of known values."""
    form = _UNIT_FORMS[unit]
    pairs = unit is ScoreUnit.PER_PAPER
    if not isinstance(held, Mapping):
        raise ValueError(f"{where}: {unit} is {type(held).__name__}, not a mapping; evaluate again, or mend the file")
    for key, value in held.items():
        if not isinstance(value, form.shape) or (pairs and len(value) != 2):
            raise ValueError(
                f"{where}, {unit} {key!r}: {value!r} is not {form.shown}; evaluate again, or mend the file"
            )
        if pairs:
            for part, given in zip(("label", "prediction"), value):
                flat = given if isinstance(given, list) else [given]
                if any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in flat):
                    raise ValueError(
                        f"{where}, paper {key!r}: the {part} {given!r} is not a known value; evaluate again, or mend "
                        "the file"
                    )


def _paper_metric(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    metric: str,
    shared: tuple[str, ...],
    papers: PaperResamples,
    resamples: int,
) -> tuple[float, float, np.ndarray] | None:
    """Both results' ``metric`` on the shared test papers, and the resampled differences.

    None when the metric cannot be scored again from the papers' labels and predictions."""
    from .supervised import score_predictions

    kept = [_kept(task) for task in (a, b)]
    if metric == "f1_macro":
        (first, ours), (second, theirs) = (papers.macro_f1(k, shared) for k in kept)
        return first, second, theirs - ours
    if any(k["label_columns"] is not None for k in kept):
        return None  # multi-label metrics other than macro-F1 are not scored again
    try:
        columns = [[np.array(c) for c in zip(*(k["papers"][p] for p in shared))] for k in kept]
        first, second = (score_predictions(metric, gold, predicted) for gold, predicted in columns)
    except (KeyError, ValueError, TypeError):
        return None
    draws = bootstrap_indices(len(shared), resamples, papers.seed if papers.seed is not None else 0)
    (gold_a, guess_a), (gold_b, guess_b) = columns
    resampled = np.array(
        [
            score_predictions(metric, gold_b[r], guess_b[r]) - score_predictions(metric, gold_a[r], guess_a[r])
            for r in draws
        ]
    )
    return first, second, resampled


def _folds(per_fold: Mapping[str, Sequence[float]]) -> int:
    """The number of iterations a few-shot setting's ``per_fold`` values hold."""
    return max((len(values) for values in per_fold.values()), default=0)


def _kept(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task's per-paper labels and predictions, with its label columns when multi-label."""
    per_paper = task["details"]["per_paper"]
    multilabel = bool(per_paper) and isinstance(next(iter(per_paper.values()))[0], list)
    return {"papers": per_paper, "label_columns": task.get("counts", {}).get("num_labels") if multilabel else None}
