"""SciRepEval (Singh et al. 2023): its task list, formats, few-shot settings and group averages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...choices import StrChoice
from ...data.layouts import DatasetLayout
from .base import Benchmark, BenchmarkInfo, Reading, Similarity, option

if TYPE_CHECKING:
    from ...data.papers import PaperProblem
    from ..tasks import Task, TaskScores, TaskSuite

#: The groups SciRepEval averages its tasks over.
SCIREPEVAL_GROUPS = ("in-train", "out-of-train", "scidocs")


class SciRepEvalKind(StrChoice):
    """How a SciRepEval task is scored."""

    CLASSIFICATION = "classification"
    REGRESSION = "regression"
    PROXIMITY = "proximity"
    ADHOC_SEARCH = "adhoc_search"
    REVIEWER_MATCHING = "reviewer_matching"


@dataclass(frozen=True)
class SciRepEvalTaskSpec:
    """One row of allenai/scirepeval's ``scirepeval_tasks.jsonl`` plus its average group."""

    name: str
    config: str
    type: SciRepEvalKind
    metrics: tuple[str, ...]
    group: str
    few_shot: tuple[tuple[int, int], ...] = ()
    multi_label: bool = False
    fields: tuple[str, ...] = ("title", "abstract")
    simple_format: bool = False


#: SciRepEval's tasks (``scirepeval_tasks.jsonl``); the group is the paper's average the task counts
#: in (Singh et al. 2023, Table 2: tasks with training data in the multi-task set are "in-train").
SCIREPEVAL_TASKS = tuple(
    SciRepEvalTaskSpec(row[0], row[1], SciRepEvalKind(row[2]), *row[3:5], **(row[5] if len(row) > 5 else {}))
    for row in (
        (
            "Fields of study",
            "fos",
            "classification",
            ("f1_macro",),
            "in-train",
            {"few_shot": ((10, 50), (5, 100)), "multi_label": True},
        ),
        ("MeSH", "mesh", "classification", ("f1_macro",), "in-train"),
        ("Citation Count", "cite_count", "regression", ("kendalltau",), "in-train"),
        ("Publication Year", "pub_year", "regression", ("kendalltau",), "in-train"),
        (
            "Search",
            "search",
            "adhoc_search",
            ("ndcg",),
            "in-train",
            {"fields": ("title", "abstract", "venue", "year")},
        ),
        ("Same Author Detection", "same_author", "proximity", ("map",), "in-train"),
        ("Highly Influential Citations", "high_influence_cite", "proximity", ("map",), "in-train"),
        ("Biomimicry", "biomimicry", "classification", ("f1",), "out-of-train", {"few_shot": ((64, 50), (16, 100))}),
        ("DRSM", "drsm", "classification", ("f1_macro",), "out-of-train", {"few_shot": ((64, 50), (24, 100))}),
        ("Feeds-1", "feeds_1", "proximity", ("map",), "out-of-train"),
        ("Feeds-M", "feeds_m", "proximity", ("map",), "out-of-train"),
        ("Feeds Title", "feeds_title", "adhoc_search", ("map",), "out-of-train"),
        ("TREC-CoVID", "trec_covid", "adhoc_search", ("ndcg",), "out-of-train"),
        ("Paper-Reviewer Matching", "paper_reviewer_matching", "reviewer_matching", ("P_5", "P_10"), "out-of-train"),
        ("Peer Review Score", "peer_review_score", "regression", ("kendalltau",), "out-of-train"),
        ("Max hIndex", "hIndex", "regression", ("kendalltau",), "out-of-train"),
        ("Tweet Mentions", "tweet_mentions", "regression", ("kendalltau",), "out-of-train"),
        ("SciDocs MAG", "scidocs_mag", "classification", ("f1_macro",), "scidocs"),
        ("SciDocs MeSH", "scidocs_mesh", "classification", ("f1_macro",), "scidocs"),
        ("SciDocs Cite", "scidocs_cite", "proximity", ("map", "ndcg"), "scidocs", {"simple_format": True}),
        ("SciDocs CoView", "scidocs_view", "proximity", ("map", "ndcg"), "scidocs", {"simple_format": True}),
        ("SciDocs CoCite", "scidocs_cocite", "proximity", ("map", "ndcg"), "scidocs", {"simple_format": True}),
        ("SciDocs CoRead", "scidocs_read", "proximity", ("map", "ndcg"), "scidocs", {"simple_format": True}),
    )
)


@dataclass(frozen=True)
class SciRepEvalOptions:
    """The options of SciRepEval.

    Attributes:
        test_data: the labels source when ``data`` is the metadata source (default allenai/scirepeval_test).
        few_shot: run its few-shot settings too.
        proximity_similarity: the score of its SciDocs proximity tasks.
    """

    test_data: str | None = option(None)
    few_shot: bool = option(True, "--no-few-shot", recorded=True)
    proximity_similarity: Similarity = option(Similarity.L2, recorded=True)


class SciRepEval(Benchmark):
    """SciRepEval: its tasks read from the Hub or a built folder, averaged per group."""

    info = BenchmarkInfo(
        name="scirepeval",
        title="SciRepEval",
        reads="allenai/scirepeval with --test-data allenai/scirepeval_test (Hub ids or local copies), "
        "or a folder built by datasets_scripts/build_scirepeval.py",
        example="==> allenai/scirepeval, config fos, split evaluation <==  (the papers of a task)\n"
        '{"doc_id": "11", "title": "A", "abstract": "..."}\n'
        "==> allenai/scirepeval_test, config fos, splits train / test <==  (labels; "
        "ranking tasks: query_id, cand_id, score)\n"
        '{"paper_id": "11", "label": [3]}',
        citations=("singh-etal-2023-scirepeval",),
        release_hub_ids=("allenai/scirepeval", "allenai/scirepeval_test"),
        main_metric="mean over its tasks per group",
    )
    #: ``meta_<metadata config>`` (split ``evaluation``, as allenai/scirepeval ships it), ``<task>`` (the labels or
    #: judgements of allenai/scirepeval_test, as shipped) and ``train_<fos|mesh|specter|search>`` (split ``train``).
    layout = DatasetLayout(
        "scirepeval",
        "SciRepEval (Singh et al. 2023) metadata and test labels",
        (("meta_*", ()), ("train_*", ()), ("*", ())),
        ("meta_*",),
    )
    Options = SciRepEvalOptions

    def load(self, data: str, reading: Reading, options: SciRepEvalOptions) -> TaskSuite:
        """Build the tasks of SciRepEval's sources.

        Args:
            data: the metadata source (Hub id or folder), or a folder built by ``build_scirepeval.py``.
            reading: what every benchmark takes.
            options: the SciRepEval options.
        """
        from ...data.scirepeval import META_CONFIG, TEST_SOURCE, load_scirepeval_task
        from ..tasks import TaskSuite

        built = _built_scirepeval(data)
        test_data = options.test_data
        tasks: list[Task] = []
        missing: list[str] = []
        skipped: list[PaperProblem] = []
        for spec in SCIREPEVAL_TASKS:
            if reading.wanted is not None and spec.config not in reading.wanted:
                continue
            meta_config = META_CONFIG.get(spec.config, spec.config)
            if built is not None:
                if spec.config not in built or f"meta_{meta_config}" not in built:
                    missing.append(spec.config)
                    continue
                meta, labels = built[f"meta_{meta_config}"]["evaluation"], built[spec.config]
            else:
                try:
                    loaded = load_scirepeval_task(
                        spec.config,
                        meta_source=data,
                        test_source=test_data or TEST_SOURCE,
                        skip_invalid=reading.skip_invalid,
                    )
                except ValueError as error:
                    if "BuilderConfig" not in str(error) and "not found" not in str(error):
                        raise
                    missing.append(spec.config)
                    continue
                meta, labels, skipped = loaded.meta, loaded.labels, skipped + loaded.skipped
            reviewers = _reviewers(built, data, test_data) if spec.type is SciRepEvalKind.REVIEWER_MATCHING else None
            tasks.append(_scirepeval_task(self.name, spec, meta, labels, reading.split, options, reviewers))
        return TaskSuite(self.name, data, tasks, missing, skipped)

    def inputs(self, data: str, options: SciRepEvalOptions) -> dict[str, Any]:
        """The metadata source and the labels source.

        Args:
            data: the metadata source.
            options: the SciRepEval options.
        """
        return {"data": data, "test_data": options.test_data}

    def averages(self, results: Sequence[TaskScores]) -> dict[str, float]:
        """The mean task score per group and over all tasks.

        Few-shot rows are left out, as in the paper.

        Args:
            results: the scored tasks.
        """
        import numpy as np

        from ..tasks import task_score

        scored = [r for r in results if r.kind != "few_shot"]
        out = {}
        for group in SCIREPEVAL_GROUPS:
            members = [task_score(r) for r in scored if r.group == group]
            if members:
                out[f"{group} ({len(members)} tasks)"] = float(np.mean(members))
        if scored:
            out[f"all ({len(scored)} tasks)"] = float(np.mean([task_score(r) for r in scored]))
        return out


def _built_scirepeval(data: str) -> Any:
    """The folder written by build_scirepeval.py (``meta_*`` configs), or ``None`` for a Hub-layout source."""
    from ...data.benchmarks import load_benchmark

    if not (Path(data) / "README.md").is_file():
        return None
    import datasets

    if not any(c.startswith("meta_") for c in datasets.get_dataset_config_names(data)):
        return None
    return load_benchmark(SciRepEval.layout, data)


def _reviewers(built: Any, data: str, test_data: str | None) -> dict[str, list[str]]:
    """Each reviewer's papers, for Paper-Reviewer Matching."""
    from ...data.hub_datasets import load_hub_dataset
    from ...data.scirepeval import TEST_SOURCE

    if built is not None:
        rows = built["reviewers"]["metadata"] if "reviewers" in built else None
    else:
        rows = load_hub_dataset(test_data or TEST_SOURCE, "reviewers", split="metadata")
    if rows is None:
        raise ValueError(
            f"{data}: paper_reviewer_matching needs the 'reviewers' config (split 'metadata': r_id, papers)"
        )
    return {str(r): [str(p) for p in papers] for r, papers in zip(rows["r_id"], rows["papers"])}


def _scirepeval_task(
    name: str,
    spec: SciRepEvalTaskSpec,
    meta: Any,
    labels: Any,
    split: str,
    options: SciRepEvalOptions,
    reviewers: dict[str, list[str]] | None,
) -> Task:
    """One SciRepEval task from its papers and labels.

    Args:
        name: the benchmark's name.
        spec: the task's row of :data:`SCIREPEVAL_TASKS`.
        meta: its papers (or queries and candidates).
        labels: its labels or judgements, by split.
        split: the judged split to score (``test`` when the task lacks it).
        options: the SciRepEval options.
        reviewers: each reviewer's papers (Paper-Reviewer Matching only).
    """
    from ..supervised import SCIREPEVAL_CLASSIFICATION, SCIREPEVAL_MULTILABEL, SCIREPEVAL_REGRESSION
    from ..tasks import ClassificationTask, ProximityTask, RegressionTask, ReviewerMatchingTask, SearchTask
    from .base import qrels_of

    common = dict(group=spec.group, fields=spec.fields, task_id=spec.config, primary_metrics=spec.metrics)
    if spec.type in (SciRepEvalKind.CLASSIFICATION, SciRepEvalKind.REGRESSION):
        documents = {str(row["paper_id"]): row for row in meta}
        train, test = labels["train"], labels[split if split in labels else "test"]
        if spec.type is SciRepEvalKind.REGRESSION:
            # Pearson's r is reported next to the task's Kendall's τ; only τ enters the averages.
            task: Task = RegressionTask(
                name,
                spec.name,
                documents,
                train=(train["paper_id"], train["label"]),
                test=(test["paper_id"], test["label"]),
                protocol=replace(SCIREPEVAL_REGRESSION, metrics=("kendalltau", "pearsonr")),
                **common,
            )
        else:
            protocol = replace(
                SCIREPEVAL_MULTILABEL if spec.multi_label else SCIREPEVAL_CLASSIFICATION, metrics=spec.metrics
            )
            task = ClassificationTask(
                name,
                spec.name,
                documents,
                train=(train["paper_id"], train["label"]),
                test=(test["paper_id"], test["label"]),
                protocol=protocol,
                few_shot=spec.few_shot if options.few_shot else (),
                **common,
            )
    elif spec.type is SciRepEvalKind.REVIEWER_MATCHING:
        documents = {str(row["paper_id"]): row for row in meta}
        qrels = {kind: qrels_of(labels[f"test_{kind}"]) for kind in ("hard", "soft")}
        task = ReviewerMatchingTask(
            name,
            spec.name,
            documents,
            qrels=qrels,
            reviewer_papers=reviewers,
            **{**common, "primary_metrics": ("average",)},
        )
    else:
        qrels = qrels_of(labels[split if split in labels else "test"])
        if spec.simple_format:
            documents = {str(row["paper_id"]): row for row in meta}
            task = ProximityTask(
                name,
                spec.name,
                documents,
                qrels=qrels,
                measures=spec.metrics,
                similarity=Similarity(options.proximity_similarity).value,
                **common,
            )
        else:
            # allenai/scirepeval IRDataset rows: a query (a paper, or a search string) and its candidates.
            queries, documents = {}, {}
            for row in meta:
                query = row["query"]
                if isinstance(query, str):
                    queries[str(row["paper_id"])] = query
                else:
                    queries[str(query["doc_id"])] = query
                for candidate in row["candidates"]:
                    documents[str(candidate["doc_id"])] = candidate
            kind = SearchTask if spec.type is SciRepEvalKind.ADHOC_SEARCH else ProximityTask
            # SciRepEval's IREvaluator scores every ranking task by −L2 distance.
            task = kind(
                name,
                spec.name,
                documents,
                queries=queries,
                qrels=qrels,
                measures=spec.metrics,
                similarity=Similarity.L2.value,
                **common,
            )
    return task
