"""Evaluation tasks: what to embed, in which format, and how to score the vectors.

A task holds the texts it needs — ``documents`` (papers, as records or ready-made texts) and, for
search, ``queries`` — and the labels or judgements, and turns their vectors into a :class:`TaskScores`
through the evaluators of :mod:`.ranking`, :mod:`.supervised`, :mod:`.pairs` and
:mod:`.recommendation`. The runner embeds the texts of every task once per format and hands each task
the vectors of its own ids. Each task names the SciRepEval format its texts are embedded in
(classification → ``[CLF]``, regression → ``[RGN]``, proximity → ``[PRX]``, search queries →
``[QRY]`` with candidates as ``[PRX]``), so multi-format models embed every task the way it calls for.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..data.papers import TEXT_FIELDS, PaperProblem
from ..removed import module_getattr
from .ranking import CUTOFFS

logger = logging.getLogger(__name__)

__getattr__ = module_getattr(__name__, {"TaskResult": "sciembed.evaluation.TaskScores"})

Record = Mapping[str, Any] | str


@dataclass
class TaskScores:
    """The scores of one task and what went into them.

    Values are on the papers' 0–100 scale, unrounded.

    Attributes:
        benchmark: the benchmark name.
        task: the task name as the benchmark's tables print it.
        task_id: the id ``--tasks`` selects the task by.
        kind: ``proximity``, ``search``, ``classification``, ``few_shot``, ``regression``,
            ``reviewer_matching``, ``pairs`` or ``recommendation``.
        metrics: metric name -> value.
        counts: sizes (queries, candidates, train / test examples, ...).
        skipped: what was left out and why (count per reason). Empty when nothing was.
        details: anything else worth keeping (chosen C, thresholds, per-field scores, ...).
        group: the benchmark's average this task counts in (e.g. SciRepEval ``in-train``).
        primary_metrics: the metrics the benchmark's averages take (default: all of ``metrics``, a ranking task's
            own ``measures``, not the standard set reported after them).
    """

    benchmark: str
    task: str
    task_id: str
    kind: str
    metrics: dict[str, float]
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    group: str | None = None
    primary_metrics: tuple[str, ...] = ()


@dataclass
class Task:
    """Base class: a named task with the texts it needs.

    Attributes:
        benchmark, name, group: see :class:`TaskScores`.
        task_id: the id ``--tasks`` selects it by (the config or folder name). Defaults to ``name``.
        primary_metrics: see :class:`TaskScores`.
        documents: id -> paper record (or text) embedded in ``document_format``.
        queries: id -> query record (or text) embedded in ``query_format`` (search tasks).
        fields: record fields joined into a document text.
        domain: the domain whose expert a mixture-of-experts model with domain routing embeds the task's papers in
            (e.g. each domain's held-out cite task of a run on several domains). Models without domains ignore it.
    """

    kind: ClassVar[str] = ""
    document_format: ClassVar[str] = "proximity"
    query_format: ClassVar[str | None] = None

    benchmark: str
    name: str
    documents: dict[str, Record]
    group: str | None = field(default=None, kw_only=True)
    task_id: str = field(default="", kw_only=True)
    primary_metrics: tuple[str, ...] = field(default=(), kw_only=True)
    queries: dict[str, Record] = field(default_factory=dict, kw_only=True)
    fields: tuple[str, ...] = field(default=TEXT_FIELDS, kw_only=True)
    domain: str | None = field(default=None, kw_only=True)

    def __post_init__(self):
        self.task_id = self.task_id or self.name

    def lacking(self) -> str | None:
        """Why the task, as read, has nothing to score, or None when it has.

        A task has nothing to score when its data turned out empty.
        """
        return None

    def evaluate(
        self, documents: Mapping[str, np.ndarray], queries: Mapping[str, np.ndarray], *, n_jobs: int = -1
    ) -> TaskScores:
        """Score the task on the vectors of its documents (and queries)."""
        raise NotImplementedError

    def _result(self, metrics: dict[str, float], **extra: Any) -> TaskScores:
        return TaskScores(
            self.benchmark,
            self.name,
            self.task_id,
            self.kind,
            metrics,
            group=self.group,
            primary_metrics=self.primary_metrics,
            **extra,
        )


@dataclass
class ProximityTask(Task):
    """Rank each query paper's judged candidates by embedding distance.

    SciDocs cite / co-cite / co-view / co-read, SciRepEval proximity and Multi-SciDocs are such tasks.
    Queries and candidates are both ``documents`` unless ``queries`` are given (SciRepEval's
    ``feeds`` style tasks keep them apart). Both are embedded in the proximity format.

    Attributes:
        qrels: query id -> candidate id -> relevance (graded allowed).
        measures: pytrec_eval measures (SciDocs: ``map``, ``ndcg``).
        similarity: ``l2`` (−Euclidean distance, both references), ``cosine``, ``dot``, or
            ``min_facet_l2`` (Multi²SPE ablation, needs facet vectors).
        score_decimals: round scores before ranking (SciDocs writes 5 decimals to its run file).
        relevance_level: the lowest relevance that counts as relevant for binary measures.
        query_groups: query id -> group (Multi-SciDocs: the query's field of study). When given, the
            measures (its own and the standard set) are also averaged per group into ``details["per_group"]``.
        cutoffs: the ranks k of the nDCG@k, P@k and recall@k reported after ``measures``
            (:func:`~sciembed.evaluation.ranking.ranking_measures`).
        keep_per_query: keep every query's measures (0-100) in ``details["per_query"]``, for paired statistics over
            queries (``sciembed compare``).
        query_papers: query id -> the paper the query is, for queries whose ids are not paper ids (a facet of a
            paper, with its own text): that paper is never the query's candidate, nor its judgement scored.
    """

    kind: ClassVar[str] = "proximity"

    qrels: dict[str, dict[str, int]] = field(default_factory=dict, kw_only=True)
    measures: tuple[str, ...] = field(default=("map", "ndcg"), kw_only=True)
    similarity: str = field(default="l2", kw_only=True)
    score_decimals: int | None = field(default=None, kw_only=True)
    relevance_level: int = field(default=1, kw_only=True)
    query_groups: dict[str, str] = field(default_factory=dict, kw_only=True)
    cutoffs: tuple[int, ...] = field(default=CUTOFFS, kw_only=True)
    keep_per_query: bool = field(default=True, kw_only=True)
    query_papers: dict[str, str] = field(default_factory=dict, kw_only=True)

    def __post_init__(self):
        super().__post_init__()
        # The benchmark's averages take its own measures, not the standard set reported beside them.
        self.primary_metrics = self.primary_metrics or tuple(self.measures)

    def lacking(self) -> str | None:
        if not self.qrels:
            return "no query has a judgement"
        qrels, dropped = self._without_self_judgements()
        if not any(grade >= self.relevance_level for judged in qrels.values() for grade in judged.values()):
            alone = f" but itself (a query paper is never its own candidate; {dropped} left out)" if dropped else ""
            return f"none of its {len(self.qrels)} judged queries has a candidate judged relevant{alone}"
        if self.query_format is not None and not self.queries:
            return f"none of its {len(self.qrels)} judged queries has a text"
        return None

    @property
    def paper_queries(self) -> bool:
        """Whether the queries are papers, whose judgements of themselves are left out.

        A proximity task's queries are papers, given apart in ``queries`` or not. A query paper is never its own
        candidate."""
        return True

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .ranking import proximity_run, ranking_metrics, search_run

        qrels, skipped = self._scored_qrels()
        if self.queries:
            scored = search_run(queries, documents, qrels, similarity=self.similarity)
        else:
            scored = proximity_run(qrels, documents, similarity=self.similarity, score_decimals=self.score_decimals)
        scores = ranking_metrics(qrels, scored.run, self._measures(), relevance_level=self.relevance_level)
        return self._result(
            scores.mean,
            counts={"queries": scores.num_queries, "candidates": scores.num_candidates},
            skipped=skipped,
            details=self._details(scores.per_query),
        )

    def _scored_qrels(self) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
        """The qrels scored, and what was skipped.

        A query paper's judgement of itself is left out, counted and logged.
        """
        qrels, dropped = self._without_self_judgements()
        if not dropped:
            return qrels, {}
        logger.warning(
            "%s %s: left out %d judgement(s) of a query paper to itself: a query paper is never its own candidate",
            self.benchmark,
            self.name,
            dropped,
        )
        return qrels, {"self_judgements": dropped}

    def _without_self_judgements(self) -> tuple[dict[str, dict[str, int]], int]:
        """The qrels without a query paper's judgements of itself, and how many were left out."""
        from .ranking import without_self_judgements

        if not self.paper_queries and not self.query_papers:
            return self.qrels, 0
        return without_self_judgements(self.qrels, None if self.paper_queries else self.query_papers)

    def _measures(self) -> tuple[str, ...]:
        """The task's own measures, then the standard set every ranking result reports."""
        from .ranking import ranking_measures

        return ranking_measures(self.measures, self.cutoffs)

    def _details(self, per_query: dict[str, dict[str, float]]) -> dict[str, Any]:
        from .ranking import measure_definitions

        details: dict[str, Any] = {"measures": measure_definitions(self.relevance_level, self.cutoffs)}
        if self.keep_per_query:
            details["per_query"] = {
                query: {m: 100 * float(v) for m, v in values.items()} for query, values in per_query.items()
            }
        if not self.query_groups:
            return details
        groups: dict[str, list[dict[str, float]]] = {}
        for query, values in per_query.items():
            groups.setdefault(self.query_groups.get(query, "unknown"), []).append(values)
        details["per_group"] = {
            group: {"queries": len(rows), **{m: 100 * float(np.mean([r[m] for r in rows])) for m in self._measures()}}
            for group, rows in sorted(groups.items())
        }
        return details


@dataclass
class SearchTask(ProximityTask):
    """Ad-hoc search: text queries (embedded as queries) against papers.

    With ``full_corpus`` every query ranks all ``documents`` (BEIR: cosine, top 1,000, identical ids
    dropped). Otherwise only its judged candidates (SciRepEval search, TREC-COVID, feeds title).
    """

    kind: ClassVar[str] = "search"
    query_format: ClassVar[str | None] = "adhoc_query"

    full_corpus: bool = field(default=False, kw_only=True)
    top_k: int = field(default=1000, kw_only=True)

    @property
    def paper_queries(self) -> bool:
        return False

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .ranking import ranking_metrics, search_run

        qrels, skipped = self._scored_qrels()
        scored = search_run(
            queries,
            documents,
            None if self.full_corpus else qrels,
            similarity=self.similarity,
            top_k=self.top_k if self.full_corpus else None,
            query_papers=self.query_papers,
        )
        scores = ranking_metrics(qrels, scored.run, self._measures(), relevance_level=self.relevance_level)
        return self._result(
            scores.mean,
            counts={"queries": scores.num_queries, "documents": len(self.documents)},
            skipped=skipped,
            details=self._details(scores.per_query),
        )


@dataclass
class PaperSearchTask(SearchTask):
    """Query papers ranking every paper of a collection.

    The qrels file's queries are papers (:mod:`.custom`). Queries and candidates are both papers, embedded in the
    proximity format. Cosine over the whole corpus, the ``top_k`` best kept, a query paper never its own candidate
    (nor its judgement of itself scored)."""

    kind: ClassVar[str] = "proximity"
    query_format: ClassVar[str | None] = None

    @property
    def paper_queries(self) -> bool:
        return True


@dataclass
class ClassificationTask(Task):
    """A linear SVM on frozen vectors, optionally also in SciRepEval's few-shot settings.

    SciDocs MAG / MeSH and SciRepEval classification are such tasks.

    Attributes:
        train, test: (paper ids, labels). Multi-label labels are lists (indices or multi-hot).
        protocol: a :class:`~sciembed.evaluation.supervised.SupervisedProtocol`.
        few_shot: (sample size, iterations) settings to run as well.
        keep_predictions: keep every test paper's label and prediction in ``details["per_paper"]``
            (``{paper id: [label, predicted]}``, label index lists for multi-label, targets for regression), and each
            few-shot iteration's scores in ``details["per_fold"]``, for paired statistics (``sciembed compare``).
    """

    kind: ClassVar[str] = "classification"
    document_format: ClassVar[str] = "classification"

    train: tuple[list[str], list[Any]] = field(default=((), ()), kw_only=True)
    test: tuple[list[str], list[Any]] = field(default=((), ()), kw_only=True)
    protocol: Any = field(default=None, kw_only=True)
    few_shot: tuple[tuple[int, int], ...] = field(default=(), kw_only=True)
    keep_predictions: bool = field(default=True, kw_only=True)

    def lacking(self) -> str | None:
        (train_ids, _), (test_ids, _) = self.train, self.test
        if not len(train_ids) or not len(test_ids):
            return f"{len(train_ids)} labelled paper(s) to train on and {len(test_ids)} to test"
        return None

    def _arrays(self, documents):
        (train_ids, y_train), (test_ids, y_test) = self.train, self.test
        x_train = np.stack([documents[i] for i in train_ids])
        x_test = np.stack([documents[i] for i in test_ids])
        if self.protocol.multilabel:
            from .supervised import multi_hot

            y_all, _ = multi_hot(list(y_train) + list(y_test))
            return x_train, y_all[: len(train_ids)], x_test, y_all[len(train_ids) :]
        return x_train, np.asarray(y_train), x_test, np.asarray(y_test)

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .supervised import evaluate_classification

        x_train, y_train, x_test, y_test = self._arrays(documents)
        scores = evaluate_classification(
            x_train, y_train, x_test, y_test, self.protocol, n_jobs=n_jobs, keep_predictions=self.keep_predictions
        )
        if not self.keep_predictions:
            return self._split(scores)
        return self._with_predictions(scores)

    def _with_predictions(self, scores: dict[str, Any]) -> TaskScores:
        """The task's scores, with each test paper's label and prediction in ``details["per_paper"]``."""
        gold, predicted = scores.pop("y_test"), scores.pop("predictions")
        result = self._split(scores)
        plain = (
            (lambda row: np.flatnonzero(row).tolist()) if self.protocol.multilabel else (lambda value: value.item())
        )
        result.details["per_paper"] = {
            paper: [plain(g), plain(p)] for paper, g, p in zip(self.test[0], gold, predicted)
        }
        return result

    def evaluate_few_shot(self, documents, *, n_jobs=-1) -> list[TaskScores]:
        """One result per few-shot setting (named ``<task> <N> shot``, as SciRepEval does)."""
        from .supervised import evaluate_few_shot

        x_train, y_train, x_test, y_test = self._arrays(documents)
        results = []
        for size, iterations in self.few_shot:
            scores = evaluate_few_shot(
                x_train, y_train, x_test, y_test, self.protocol, size, iterations, n_jobs=n_jobs
            )
            per_fold = scores.pop("per_fold")
            result = self._split(scores)
            if self.keep_predictions:
                result.details["per_fold"] = per_fold
            result.task, result.kind, result.group = f"{self.name} {size} shot", "few_shot", "few-shot"
            results.append(result)
        return results

    def _split(self, scores: dict[str, Any]) -> TaskScores:
        metrics = {name: float(scores[name]) for name in self.protocol.metrics}
        counts = {k: int(v) for k, v in scores.items() if k.startswith("num_") or k in ("iterations", "sample_size")}
        details = {k: v for k, v in scores.items() if k not in metrics and k not in counts}
        return self._result(metrics, counts=counts, details=details)


@dataclass
class RegressionTask(ClassificationTask):
    """A linear SVR on frozen vectors (SciRepEval citation count, year, peer-review score, h-index,
    tweets). Kendall's τ and Pearson's r."""

    kind: ClassVar[str] = "regression"
    document_format: ClassVar[str] = "regression"

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .supervised import evaluate_regression

        x_train, y_train, x_test, y_test = self._arrays(documents)
        scores = evaluate_regression(
            x_train,
            y_train.astype(float),
            x_test,
            y_test.astype(float),
            self.protocol,
            n_jobs=n_jobs,
            keep_predictions=self.keep_predictions,
        )
        return self._with_predictions(scores) if self.keep_predictions else self._split(scores)


@dataclass
class ReviewerMatchingTask(Task):
    """SciRepEval paper-reviewer matching: P@5 and P@10 on the hard and soft judgements, averaged.

    Attributes:
        qrels: ``{"hard": qrels, "soft": qrels}`` (submission id -> reviewer id -> relevance).
        reviewer_papers: reviewer id -> ids of the reviewer's papers (all in ``documents``).
    """

    kind: ClassVar[str] = "reviewer_matching"

    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict, kw_only=True)
    reviewer_papers: dict[str, list[str]] = field(default_factory=dict, kw_only=True)

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .ranking import REVIEWER_MEASURES, reviewer_matching_metrics

        scores = reviewer_matching_metrics(documents, self.reviewer_papers, self.qrels["hard"], self.qrels["soft"])
        per_query: dict[str, dict[str, float]] = {}
        for split, result in (("hard", scores.hard), ("soft", scores.soft)):
            for query, values in result.per_query.items():
                per_query.setdefault(query, {}).update({f"{split}_{m}": 100 * float(v) for m, v in values.items()})
        for values in per_query.values():
            if len(values) == 2 * len(REVIEWER_MEASURES):  # judged in both splits
                values["average"] = sum(values.values()) / len(values)
        counts = {
            "queries": scores.hard.num_queries,
            "reviewers": len(self.reviewer_papers),
            "candidates": scores.scored.num_candidates,
        }
        skipped = (
            {"candidates_not_reviewers": scores.scored.unknown_candidates} if scores.scored.unknown_candidates else {}
        )
        return self._result(dict(scores.metrics), counts=counts, skipped=skipped, details={"per_query": per_query})


@dataclass
class PairsTask(Task):
    """Co-citation pairs (MoE paper): cosine similarity, F1max and its threshold, accuracy, ROC-AUC.

    ``documents`` holds the texts. ``pairs`` names two of them and a 0 / 1 label.
    """

    kind: ClassVar[str] = "pairs"

    pairs: list[tuple[str, str, int]] = field(default_factory=list, kw_only=True)
    threshold_range: tuple[float, float] | None = field(default=None, kw_only=True)

    def evaluate(self, documents, queries, *, n_jobs=-1):
        from .pairs import evaluate_pairs

        a = np.stack([documents[a] for a, _, _ in self.pairs])
        b = np.stack([documents[b] for _, b, _ in self.pairs])
        labels = np.array([label for _, _, label in self.pairs])
        scores = evaluate_pairs(a, b, labels, threshold_range=self.threshold_range)
        return self._result(
            {k: float(v) for k, v in scores.items() if k in ("f1max", "accuracy", "roc_auc")},
            counts={k: int(v) for k, v in scores.items() if k.startswith("num_")},
            details={
                k: v
                for k, v in scores.items()
                if k not in ("f1max", "accuracy", "roc_auc") and not k.startswith("num_")
            },
        )


@dataclass
class TaskSuite:
    """The tasks of one benchmark source, what it lacks and what its readers skipped."""

    benchmark: str
    source: str
    tasks: list[Task]
    missing: list[str] = field(default_factory=list)
    skipped: list[PaperProblem] = field(default_factory=list)
    #: The SHA-256 of each data file read, by input (:func:`~sciembed.io.input_digests`).
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)


def primary_values(result: TaskScores) -> list[float]:
    """The values of the metrics the benchmark's averages take.

    Args:
        result: one task's scores.
    """
    return (
        [result.metrics[m] for m in result.primary_metrics]
        if result.primary_metrics
        else list(result.metrics.values())
    )


def task_score(result: TaskScores) -> float:
    """One number per task: the mean of its primary metrics.

    Args:
        result: one task's scores.
    """
    return float(np.mean(primary_values(result)))
