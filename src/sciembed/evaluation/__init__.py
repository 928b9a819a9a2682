"""Evaluation: benchmark tasks, evaluators per task format, metrics and result tables.

``evaluate(model, benchmark, data)`` embeds what a benchmark's tasks need once (cached per model and
text) and scores every task with its reference protocol; see :mod:`.runner`. The evaluators work on
plain vectors and can be used alone: :mod:`.ranking` (proximity, search, reviewer matching; pytrec_eval),
:mod:`.supervised` (linear SVM classification, few-shot, regression; scikit-learn), :mod:`.pairs`
(co-citation F1max) and :mod:`.recommendation` (SciDocs clickthrough recommendations).
"""

from .loaders import BENCHMARK_NAMES, TaskSuite, load_tasks
from .runner import EvaluationReport, evaluate, evaluate_suite
from .tasks import TaskResult

__all__ = ["BENCHMARK_NAMES", "EvaluationReport", "TaskResult", "TaskSuite", "evaluate", "evaluate_suite", "load_tasks"]
