"""Evaluation: benchmark tasks, evaluators per task format, metrics and result tables.

Each benchmark is a class in :mod:`.benchmarks` (the table :data:`~.benchmarks.BENCHMARKS`).
``evaluate(model, benchmark, data)`` embeds what a benchmark's tasks need once (cached per model and
text) and scores every task with its reference protocol. See :mod:`.runner`. The evaluators work on
plain vectors and can be used alone: :mod:`.ranking` (proximity, search, reviewer matching, pytrec_eval),
:mod:`.supervised` (linear SVM classification, few-shot, regression, scikit-learn), :mod:`.pairs`
(co-citation F1max) and :mod:`.recommendation` (SciDocs clickthrough recommendations). A user's own labelled
CSV or qrels file over a papers file is a task source too (:mod:`.custom`, ``classification`` / ``retrieval``).
:mod:`.mteb_bridge` runs MTEB's tasks (or a local BEIR folder) on any sciembed encoder (``benchmark="mteb"``).
:mod:`.compare` pairs two results task by task, each difference with a bootstrap interval (``sciembed compare``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..removed import module_getattr
from .benchmarks import BENCHMARK_NAMES, BENCHMARKS, Reading

if TYPE_CHECKING:
    from ..data.benchmarks import load_benchmark
    from .compare import compare_results
    from .loaders import TaskSuite, load_tasks
    from .mteb_bridge import MtebEncoder, beir_task
    from .runner import EvaluationReport, evaluate, evaluate_suite
    from .tasks import TaskScores

# The evaluators import scikit-learn and scipy: loaded on first use (as transformers' lazy modules do), so
# that the benchmark names (`sciembed --help`) cost nothing.
_LAZY = {
    "compare_results": "compare",
    "TaskSuite": "loaders",
    "load_tasks": "loaders",
    "MtebEncoder": "mteb_bridge",
    "beir_task": "mteb_bridge",
    "EvaluationReport": "runner",
    "evaluate": "runner",
    "evaluate_suite": "runner",
    "TaskScores": "tasks",
}

__all__ = [
    "BENCHMARKS",
    "BENCHMARK_NAMES",
    "EvaluationReport",
    "MtebEncoder",
    "Reading",
    "TaskScores",
    "TaskSuite",
    "beir_task",
    "compare_results",
    "evaluate",
    "evaluate_suite",
    "load_benchmark",
    "load_tasks",
]


_removed = module_getattr(
    __name__,
    {
        "TaskResult": "sciembed.evaluation.TaskScores (scores 0-100; mteb's TaskResult is mteb's own class)",
        "neighbours": "sciembed.neighbours (sciembed.search.neighbours)",
    },
)


def __getattr__(name: str) -> Any:
    if name == "load_benchmark":  # by a benchmark's name too: importing .benchmarks registered their layouts
        from ..data.benchmarks import load_benchmark

        return load_benchmark
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    return _removed(name)
