"""Benchmark folders (or Hub ids) to evaluation tasks, one function per benchmark.

``scidocs`` / ``multi-scidocs`` (SciDocs release layout), ``scirepeval`` (a folder written by
``datasets_scripts/build_scirepeval.py``, or the two Hub datasets ``allenai/scirepeval`` +
``allenai/scirepeval_test`` in their own layout), ``beir`` (BEIR layout), ``cocitation`` (the MoE
paper's pair sets), ``cacm`` (the SMART CACM collection: its citation links as a cite task, its CR
categories as a classification task and its 64 queries as a search task), and a user's own files over a
papers file: ``classification`` (a labelled CSV) and ``retrieval`` (a qrels file), see :mod:`.custom`.
:data:`~.names.BENCHMARK_LAYOUTS` shows each layout. A folder holding only some of a benchmark's tasks
gives those tasks and lists the others in :attr:`TaskSuite.missing`.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data.judgements import cacm_categories, cite_qrels
from ..data.papers import TEXT_FIELDS, PaperProblem, text_field_names
from ..io import check_input, files_read, input_digests, load_json_file
from .names import BENCHMARK_NAMES
from .supervised import SCIDOCS_CLASSIFICATION, SCIREPEVAL_CLASSIFICATION, SCIREPEVAL_MULTILABEL, SCIREPEVAL_REGRESSION
from .tasks import ClassificationTask, PairsTask, ProximityTask, RegressionTask, ReviewerMatchingTask, SearchTask, Task

logger = logging.getLogger(__name__)


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


def load_tasks(
    benchmark: str,
    data: str | os.PathLike[str],
    *,
    tasks: list[str] | None = None,
    split: str = "test",
    skip_invalid: bool = False,
    test_data: str | None = None,
    few_shot: bool = True,
    proximity_similarity: str = "l2",
    seed: int | None = None,
    papers: str | os.PathLike[str] | None = None,
    queries: str | os.PathLike[str] | None = None,
    test_size: float = 0.5,
    candidates: str = "all",
    id_field: str | None = None,
    smart_links: str = "cacm",
    qrels_columns: str | None = None,
    text_fields: Sequence[str] | None = None,
) -> TaskSuite:
    """Read a benchmark and build its tasks.

    Args:
        benchmark: one of :data:`BENCHMARK_NAMES`.
        data: the benchmark folder or Hub id.
        tasks: task ids to keep (SciDocs folder names such as ``cite`` / ``mag``, SciRepEval config names
            such as ``fos`` / ``search``, ``valid`` / ``test`` for pair sets); unknown ids are an error.
        split: the judged split to score (``test``, or ``val`` to tune).
        skip_invalid: drop rows naming papers without metadata (counted and reported) instead of failing.
        test_data: SciRepEval only: the labels source when ``data`` is the metadata source.
        few_shot: run SciRepEval's few-shot settings too.
        proximity_similarity: scoring of proximity tasks (``l2`` as the references, or the Multi²SPE
            ablation ``min_facet_l2``).
        seed: seed of what is sampled or trained here (CACM's negatives and splits, a labels file's split: default 0;
            SciDocs' recommender: default 7, SciDocs' own).
        papers: ``classification`` / ``retrieval``: the papers file the labels or judgements name (``data`` is the
            labels or qrels file).
        queries: ``retrieval``: a file of text queries (default: the query ids are papers of ``papers``).
        test_size: ``classification`` without a split column: the share of each label held out for testing.
        candidates: ``retrieval``: ``all`` papers ranked per query, or only the ``judged`` ones.
        id_field: the papers file's id column (default: the first of paper_id, corpus_id, id, doc_id).
        smart_links: ``cacm``: how the collection's ``.X`` lines are read (``cacm``: CACM's link types, others
            refused; ``all``: every pair a citation link).
        qrels_columns: the order of a judgement file's query and document columns, when stated: ``query-document``
            (not checked) or ``document-query`` (read swapped back); unstated, the query comes first and a file whose
            shape says the columns are swapped is refused (:func:`~sciembed.data.judgements.check_qrels_columns`).
        text_fields: ``classification`` / ``retrieval``: the fields the papers' text is made of, checked as the
            papers file is read (:func:`~sciembed.data.papers.read_papers`).
    """
    name = benchmark.replace("_", "-")
    builders = {
        "scidocs": _scidocs,
        "multi-scidocs": _scidocs,
        "scirepeval": _scirepeval,
        "beir": _beir,
        "cocitation": _cocitation,
        "cacm": _cacm,
        "classification": _custom,
        "retrieval": _custom,
    }
    if name == "mteb":
        raise ValueError("mteb tasks run through mteb itself: sciembed.evaluation.evaluate(model, 'mteb', ...)")
    if name not in builders:
        raise ValueError(f"unknown benchmark {benchmark!r}; supported: {', '.join(BENCHMARK_NAMES)}")
    own_files = {"papers": papers, "queries": queries, "id_field": id_field}
    if name not in ("classification", "retrieval") and any(own_files.values()):
        given = ", ".join(f"--{k.replace('_', '-')}" for k, v in own_files.items() if v)
        raise ValueError(
            f"{given}: for --benchmark classification or retrieval (your own labels or qrels over a papers file); "
            f"{name} reads its papers from --data"
        )
    if name == "classification" and queries:
        raise ValueError("--queries is for --benchmark retrieval")
    if qrels_columns is not None and name in ("classification", "cocitation", "scirepeval"):
        raise ValueError(
            f"--qrels-columns orders the columns of judgement files (retrieval, scidocs, multi-scidocs, beir, cacm); "
            f"{name} reads none"
        )
    options = dict(
        split=split,
        skip_invalid=skip_invalid,
        wanted=set(tasks) if tasks else None,
        seed=seed,
        test_data=test_data,
        few_shot=few_shot,
        similarity=proximity_similarity,
        papers=None if papers is None else str(papers),
        queries=None if queries is None else str(queries),
        test_size=test_size,
        candidates=candidates,
        id_field=id_field,
        smart_links=smart_links,
        qrels_columns=qrels_columns,
        text_fields=text_field_names(text_fields) if text_fields else TEXT_FIELDS,
    )
    with files_read() as opened:
        suite = builders[name](name, str(data), **options)
    if tasks:
        known = {t.task_id for t in suite.tasks} | set(suite.missing)
        unknown = sorted(set(tasks) - known)
        if unknown:
            # The suite was built for the requested ids only; build it whole (on this error path alone) to list
            # them all.
            whole = builders[name](name, str(data), **{**options, "wanted": None})
            here = sorted({t.task_id for t in whole.tasks})
            raise ValueError(
                f"{data}: no task(s) {unknown} in {name}; tasks here: {', '.join(here) or 'none'}"
                + (f" (absent from this folder: {', '.join(whole.missing)})" if whole.missing else "")
            )
    for task in list(suite.tasks):
        if (lacking := task.lacking()) is None:
            continue
        if tasks or len(suite.tasks) == 1:
            raise ValueError(
                f"{data}: the {name} task {task.task_id!r} has nothing to score: {lacking}; check the files it is "
                "read from" + (", or leave it out of --tasks" if tasks else "")
            )
        suite.tasks.remove(task)
        suite.missing.append(f"{task.task_id} (nothing to score: {lacking})")
    if not suite.tasks:
        raise ValueError(
            f"{data}: none of the {name} tasks{' ' + str(sorted(tasks)) if tasks else ''} found; missing: "
            f"{', '.join(suite.missing)}"
        )
    suite.inputs = input_digests({"data": data, "papers": papers, "queries": queries, "test_data": test_data}, opened)
    return suite


def _papers(rows, ids) -> dict[str, dict[str, Any]]:
    """The records of ``ids`` from a metadata Dataset or id-keyed mapping."""
    wanted = set(ids)
    return {pid: row for pid, row in rows.items() if pid in wanted}


def _qrels(dataset) -> dict[str, dict[str, int]]:
    # As pytrec_eval.parse_qrel: a repeated (query, candidate) keeps the last judgement.
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for query, cand, score in zip(dataset["query_id"], dataset["cand_id"], dataset["score"]):
        qrels[str(query)][str(cand)] = int(score)
    return dict(qrels)


# SciDocs ------------------------------------------------------------------------------------------

#: SciDocs task folder -> the name its tables print.
SCIDOCS_NAMES = {
    "mag": "MAG",
    "mesh": "MeSH",
    "coview": "Co-View",
    "coread": "Co-Read",
    "cite": "Cite",
    "cocite": "Co-Cite",
    "recomm": "Recomm",
}


def _scidocs(name, data, *, split, skip_invalid, wanted, seed, similarity, qrels_columns, **_):
    from ..data.scidocs import CLASSIFICATION_TASKS, PROXIMITY_TASKS, read_scidocs

    candidates = tuple(t for t in PROXIMITY_TASKS + CLASSIFICATION_TASKS if wanted is None or t in wanted)
    release = (
        read_scidocs(data, tasks=candidates or None, skip_invalid=skip_invalid, qrels_columns=qrels_columns)
        if candidates
        else None
    )
    tasks: list[Task] = []
    missing = list(release.missing) if release else []
    if release:
        metadata = {key: {row["paper_id"]: row for row in papers} for key, papers in release.papers.items()}
        fields_of = _query_fields(Path(data))
        for task, splits in release.qrels.items():
            if split not in splits:
                continue
            qrels = _qrels(splits[split])
            ids = set(qrels) | {c for cands in qrels.values() for c in cands}
            proximity = ProximityTask(
                name,
                SCIDOCS_NAMES[task],
                _papers(metadata["view_cite_read"], ids),
                qrels=qrels,
                similarity=similarity,
                score_decimals=5 if similarity == "l2" else None,
                query_groups=fields_of.get(task, {}),
                task_id=task,
            )
            tasks.append(proximity)
        for task, splits in release.labels.items():
            if "train" not in splits or split not in splits:
                continue
            train, test = splits["train"], splits[split]
            tasks.append(
                ClassificationTask(
                    name,
                    SCIDOCS_NAMES[task],
                    _papers(metadata["mag_mesh"], list(train["paper_id"]) + list(test["paper_id"])),
                    train=(list(train["paper_id"]), list(train["label"])),
                    test=(list(test["paper_id"]), list(test["label"])),
                    protocol=SCIDOCS_CLASSIFICATION,
                    task_id=task,
                )
            )
    if wanted is None or "recomm" in wanted:
        tasks += _scidocs_recommendation(
            name, Path(data), split=split, skip_invalid=skip_invalid, seed=seed, missing=missing
        )
    return TaskSuite(name, data, tasks, missing, release.skipped if release else [])


def _query_fields(folder: Path) -> dict[str, dict[str, str]]:
    # Multi-SciDocs writes each query's field of study, for per-field scores.
    path = folder / "query_fields.json"
    return load_json_file(path) if path.is_file() else {}


def _scidocs_recommendation(name, folder: Path, *, split, skip_invalid, seed, missing) -> list[Task]:
    if not folder.is_dir():  # read_scidocs says so for the other tasks; recommendations alone must too
        raise FileNotFoundError(f"{folder}: no such folder (a SciDocs release folder: data/ of allenai/scidocs)")
    if not (folder / "recomm").is_dir():
        if "recomm" not in missing:
            missing.append("recomm")
        return []
    from .recommendation import RecommendationTask

    try:
        # SciDocs trains its recommender with seed 7.
        return [
            RecommendationTask.from_folder(
                name,
                SCIDOCS_NAMES["recomm"],
                folder,
                split=split,
                skip_invalid=skip_invalid,
                seed=7 if seed is None else seed,
                task_id="recomm",
            )
        ]
    except FileNotFoundError as error:
        logger.warning("%s: recommendations not evaluated: %s", folder, error)
        missing.append(f"recomm ({error})")
        return []


# SciRepEval ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SciRepEvalTaskSpec:
    """One row of allenai/scirepeval's ``scirepeval_tasks.jsonl`` plus its average group."""

    name: str
    config: str
    type: str
    metrics: tuple[str, ...]
    group: str
    few_shot: tuple[tuple[int, int], ...] = ()
    multi_label: bool = False
    fields: tuple[str, ...] = ("title", "abstract")
    simple_format: bool = False


#: SciRepEval's tasks (``scirepeval_tasks.jsonl``); the group is the paper's average the task counts
#: in (Singh et al. 2023, Table 2: tasks with training data in the multi-task set are "in-train").
SCIREPEVAL_TASKS = tuple(
    SciRepEvalTaskSpec(*row[:5], **(row[5] if len(row) > 5 else {}))
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


def _scirepeval(name, data, *, split, skip_invalid, wanted, few_shot, similarity, test_data, **_):
    from ..data.scirepeval import META_CONFIG, TEST_SOURCE, load_scirepeval_task

    built = _built_scirepeval(data)
    tasks: list[Task] = []
    missing: list[str] = []
    skipped: list[PaperProblem] = []
    for spec in SCIREPEVAL_TASKS:
        if wanted is not None and spec.config not in wanted:
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
                    spec.config, meta_source=data, test_source=test_data or TEST_SOURCE, skip_invalid=skip_invalid
                )
            except ValueError as error:
                if "BuilderConfig" not in str(error) and "not found" not in str(error):
                    raise
                missing.append(spec.config)
                continue
            meta, labels, skipped = loaded.meta, loaded.labels, skipped + loaded.skipped
        reviewers = _reviewers(built, data, test_data) if spec.type == "reviewer_matching" else None
        tasks.append(
            _scirepeval_task(
                name, spec, meta, labels, split=split, few_shot=few_shot, similarity=similarity, reviewers=reviewers
            )
        )
    return TaskSuite(name, data, tasks, missing, skipped)


def _built_scirepeval(data: str):
    """The folder written by build_scirepeval.py (``meta_*`` configs), or ``None`` for a Hub-layout source."""
    from ..data.benchmarks import load_benchmark

    if not (Path(data) / "README.md").is_file():
        return None
    import datasets

    if not any(c.startswith("meta_") for c in datasets.get_dataset_config_names(data)):
        return None
    return load_benchmark("scirepeval", data)


def _reviewers(built, data, test_data) -> dict[str, list[str]]:
    from ..data.hub_datasets import load_hub_dataset
    from ..data.scirepeval import TEST_SOURCE

    if built is not None:
        rows = built["reviewers"]["metadata"] if "reviewers" in built else None
    else:
        rows = load_hub_dataset(test_data or TEST_SOURCE, "reviewers", split="metadata")
    if rows is None:
        raise ValueError(
            f"{data}: paper_reviewer_matching needs the 'reviewers' config (split 'metadata': r_id, papers)"
        )
    return {str(r): [str(p) for p in papers] for r, papers in zip(rows["r_id"], rows["papers"])}


def _scirepeval_task(name, spec: SciRepEvalTaskSpec, meta, labels, *, split, few_shot, similarity, reviewers) -> Task:
    common = dict(group=spec.group, fields=spec.fields, task_id=spec.config, primary_metrics=spec.metrics)
    if spec.type in ("classification", "regression"):
        documents = {str(row["paper_id"]): row for row in meta}
        train, test = labels["train"], labels[split if split in labels else "test"]
        if spec.type == "regression":
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
                few_shot=spec.few_shot if few_shot else (),
                **common,
            )
    elif spec.type == "reviewer_matching":
        documents = {str(row["paper_id"]): row for row in meta}
        qrels = {kind: _qrels(labels[f"test_{kind}"]) for kind in ("hard", "soft")}
        task = ReviewerMatchingTask(
            name,
            spec.name,
            documents,
            qrels=qrels,
            reviewer_papers=reviewers,
            **{**common, "primary_metrics": ("average",)},
        )
    else:
        qrels = _qrels(labels[split if split in labels else "test"])
        if spec.simple_format:
            documents = {str(row["paper_id"]): row for row in meta}
            task = ProximityTask(
                name, spec.name, documents, qrels=qrels, measures=spec.metrics, similarity=similarity, **common
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
            kind = SearchTask if spec.type == "adhoc_search" else ProximityTask
            # SciRepEval's IREvaluator scores every ranking task by −L2 distance.
            task = kind(
                name,
                spec.name,
                documents,
                queries=queries,
                qrels=qrels,
                measures=spec.metrics,
                similarity="l2",
                **common,
            )
    return task


# BEIR, co-citation pairs, CACM, a user's own files ---------------------------------------------------


def _custom(name, data, **options):
    from .custom import classification_tasks, retrieval_tasks

    check_input(data, "--data")  # a folder, a link loop or a missing file, named as such
    build = classification_tasks if name == "classification" else retrieval_tasks
    tasks, skipped = build(name, data, **options)
    return TaskSuite(name, data, tasks, [], skipped)


def _beir(name, data, *, split, skip_invalid, wanted, qrels_columns, **_):
    from ..data.beir import read_beir

    beir = read_beir(data, skip_invalid=skip_invalid, qrels_columns=qrels_columns)
    if split not in beir.qrels:
        raise ValueError(f"{data}: no qrels/{split}.tsv; splits here: {', '.join(beir.qrels)}")
    qrels = _qrels(beir.qrels[split])
    documents = {row["paper_id"]: row for row in beir.corpus}
    queries = {q: text for q, text in zip(beir.queries["query_id"], beir.queries["text"]) if q in qrels}
    task = SearchTask(
        name,
        Path(data).name,
        documents,
        queries=queries,
        qrels=qrels,
        measures=("ndcg_cut_10", "recall_100"),
        similarity="cosine",
        full_corpus=True,
        task_id="search",
    )
    return TaskSuite(name, data, [task] if wanted is None or "search" in wanted else [], [], beir.skipped)


def _cocitation(name, data, *, skip_invalid, wanted, **_):
    from ..data.cocitation import load_cocitation_pairs

    loaded = load_cocitation_pairs(data, skip_invalid=skip_invalid)
    tasks: list[Task] = []
    missing = [s for s in ("valid", "test") if s not in loaded.pairs]
    for split in ("valid", "test"):
        if split not in loaded.pairs or (wanted is not None and split not in wanted):
            continue
        rows = loaded.pairs[split]
        texts: dict[str, str] = {}
        pairs = []
        for a, b, label in zip(rows["a"], rows["b"], rows["label"]):
            # Texts are the ids: a text repeated across pairs is embedded once.
            for text in (a.strip(), b.strip()):
                texts.setdefault(text, f"t{len(texts)}")
            pairs.append((texts[a.strip()], texts[b.strip()], int(float(label))))
        documents = {pid: text for text, pid in texts.items()}
        # The MoE paper searches the test threshold in [0.5, 1] only.
        tasks.append(
            PairsTask(
                name,
                f"co-citation {split}",
                documents,
                pairs=pairs,
                threshold_range=(0.5, 1.0) if split == "test" else None,
                task_id=split,
            )
        )
    return TaskSuite(name, data, tasks, missing, loaded.skipped)


def _cacm(name, data, *, skip_invalid, wanted, seed, similarity, smart_links, qrels_columns, **_):
    from ..data.smart import CACM_CITATION, read_smart_collection, read_smart_qrels, read_smart_queries

    folder = Path(data)
    collection = read_smart_collection(folder, skip_invalid=skip_invalid, links=smart_links)
    papers = {p["paper_id"]: p for p in collection.papers}
    tasks: list[Task] = []
    missing: list[str] = []
    seed = 0 if seed is None else seed

    def lacking(task_id: str, why: str | None, fix: str) -> bool:
        """Whether a task's data is absent from the collection: listed as missing, or an error when asked for."""
        if why is not None and wanted is not None:
            raise ValueError(f"{collection.path}: {why}; {fix}")
        if why is not None:
            missing.append(f"{task_id} ({why})")
        return why is not None

    other_links = any(collection.links.values())
    if (wanted is None or "cite" in wanted) and not lacking(
        "cite",
        None
        if collection.links.get(CACM_CITATION)
        else f"no .X line {'is a citation link (middle column 5)' if other_links else 'links two of its records'}",
        "evaluate the other tasks (--tasks categories search)"
        + (", or read every .X pair as a citation (--smart-links all)" if other_links else ""),
    ):
        tasks.append(cacm_cite_task(collection, seed=seed, similarity=similarity))
    if (wanted is None or "categories" in wanted) and not lacking(
        "categories", _categories_lacking(collection), _CATEGORIES_FIX
    ):
        tasks.append(cacm_category_task(collection, seed=seed))
    if wanted is None or "search" in wanted:
        if (folder / "query.text").is_file() and (folder / "qrels.text").is_file():
            queries = read_smart_queries(folder / "query.text")
            qrels = _qrels(
                read_smart_qrels(
                    folder / "qrels.text",
                    query_ids=set(queries["query_id"]),
                    paper_ids=set(papers),
                    skip_invalid=skip_invalid,
                    qrels_columns=qrels_columns,
                )
            )
            task = SearchTask(
                name,
                "search",
                papers,
                queries={q: t for q, t in zip(queries["query_id"], queries["text"]) if q in qrels},
                qrels=qrels,
                measures=("map", "ndcg", "ndcg_cut_10", "recall_100"),
                similarity="cosine",
                full_corpus=True,
                task_id="search",
            )
            tasks.append(task)
        else:
            missing.append("search")
    return TaskSuite(name, data, tasks, missing, collection.skipped)


def cacm_cite_task(
    collection, *, query_ids=None, positives: int = 5, negatives: int = 25, seed: int = 0, similarity: str = "l2"
) -> ProximityTask:
    """The CACM citation links as a SciDocs cite task: each query paper's linked papers (up to
    ``positives``, with text) are relevant, ``negatives`` random papers with text that are not linked
    to it are not; scored as SciDocs scores cite (−L2, 5-decimal scores, MAP and nDCG).

    Args:
        collection: a :class:`~sciembed.data.smart.SmartCollection`.
        query_ids: the query papers (e.g. a held-out part); default every paper with a link.
    """
    from ..data.smart import CACM_CITATION

    papers = {p["paper_id"]: p for p in collection.papers}
    return cite_task(
        papers,
        collection.neighbours(CACM_CITATION),
        query_ids=query_ids,
        positives=positives,
        negatives=negatives,
        seed=seed,
        similarity=similarity,
    )


def cite_task(
    papers: dict[str, dict],
    neighbours: dict[str, set[str]],
    *,
    query_ids=None,
    positives: int = 5,
    negatives: int = 25,
    seed: int = 0,
    similarity: str = "l2",
    benchmark: str = "cacm",
) -> ProximityTask:
    """A SciDocs-style cite task from any citation links, judged by :func:`sciembed.data.judgements.cite_qrels`
    (see :func:`cacm_cite_task`).

    Args:
        papers: paper id -> record, the papers with text.
        neighbours: paper id -> the ids it is linked to (cites or is cited by).
        query_ids: the query papers (default: every paper with a link).
    """
    qrels = cite_qrels(papers, neighbours, query_ids=query_ids, positives=positives, negatives=negatives, seed=seed)
    ids = set(qrels) | {c for cands in qrels.values() for c in cands}
    return ProximityTask(
        benchmark,
        "cite",
        {pid: papers[pid] for pid in ids},
        qrels=qrels,
        similarity=similarity,
        score_decimals=5 if similarity == "l2" else None,
    )


_CATEGORIES_FIX = "evaluate the other tasks (--tasks cite search), or give a collection whose records have .C lines"


def _categories_lacking(collection) -> str | None:
    """Why a SMART collection's ``.C`` categories make no classification task (None when they make one)."""
    categories = cacm_categories(collection.papers)
    if len(set(categories.values())) >= 2:
        return None
    if not any(paper.get("categories") for paper in collection.papers):
        return "no record has .C categories (CR category codes) to classify by"
    classes = sorted(set(categories.values()))
    return (
        f"the .C categories make {len(classes)} class(es) of at least 6 papers ({', '.join(map(str, classes))}); "
        "classification needs two or more"
    )


def cacm_category_task(collection, *, seed: int = 0, test_size: float = 0.5) -> ClassificationTask:
    """CACM's CR categories as a single-label classification task (:func:`sciembed.data.judgements.cacm_categories`:
    the top-level class of each paper's first listed category, ``3.7`` -> ``3``, classes of at least 6 papers),
    a stratified random half for training, SciDocs' protocol (LinearSVC, C in logspace(−4, 2, 7), 3-fold,
    macro-F1).

    Raises:
        ValueError: the collection's categories make fewer than two classes (no ``.C`` lines at all, say),
            naming the file.
    """
    from sklearn.model_selection import train_test_split

    if (lacking := _categories_lacking(collection)) is not None:
        raise ValueError(f"{collection.path}: {lacking}; {_CATEGORIES_FIX}")
    categories = cacm_categories(collection.papers)
    ids, labels = list(categories), list(categories.values())
    train_ids, test_ids, y_train, y_test = train_test_split(
        ids, labels, test_size=test_size, stratify=labels, random_state=seed
    )
    papers = {p["paper_id"]: p for p in collection.papers}
    return ClassificationTask(
        "cacm",
        "categories",
        {pid: papers[pid] for pid in ids},
        train=(train_ids, y_train),
        test=(test_ids, y_test),
        protocol=SCIDOCS_CLASSIFICATION,
    )
