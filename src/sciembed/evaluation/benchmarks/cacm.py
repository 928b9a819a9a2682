"""CACM (the SMART collection): its citation links, CR categories and queries as three tasks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Benchmark, BenchmarkInfo, Reading, Similarity, option

if TYPE_CHECKING:
    from ..tasks import ClassificationTask, ProximityTask, Task, TaskSuite

#: The measures CACM's search task reports first.
SEARCH_MEASURES = ("map", "ndcg", "ndcg_cut_10", "recall_100")


@dataclass(frozen=True)
class CacmOptions:
    """The options of a SMART collection.

    Attributes:
        proximity_similarity: the score of the cite task (``l2`` as SciDocs).
        smart_links: how the ``.X`` lines are read (``cacm``: CACM's link types, ``all``: every pair a citation).
        qrels_columns: the order of ``qrels.text``'s query and document columns, when stated.
    """

    proximity_similarity: Similarity = option(Similarity.L2, recorded=True)
    smart_links: str = option("cacm")
    qrels_columns: str | None = option(None)


class Cacm(Benchmark):
    """CACM: a cite task, a classification task and its search task.

    The cite task is read from its links, the classification task from its categories.
    """

    info = BenchmarkInfo(
        name="cacm",
        title="CACM",
        reads="a SMART collection folder (cacm.all; query.text and qrels.text for the search task)",
        example="==> cacm.all <==  (.X: id<TAB>5<TAB>id citation links; .C: CR categories)\n"
        ".I 1\n"
        ".T\n"
        "Preliminary Report-International Algebraic Language\n"
        ".C\n"
        "4.22 5.24",
        main_metric="map",
    )
    Options = CacmOptions

    def load(self, data: str, reading: Reading, options: CacmOptions) -> TaskSuite:
        """Build the tasks of a SMART collection folder.

        Args:
            data: the folder.
            reading: what every benchmark takes.
            options: the CACM options.
        """
        from ...data.smart import CACM_CITATION, read_smart_collection
        from ..tasks import TaskSuite

        wanted = reading.wanted
        collection = read_smart_collection(Path(data), skip_invalid=reading.skip_invalid, links=options.smart_links)
        tasks: list[Task] = []
        missing: list[str] = []
        seed = 0 if reading.seed is None else reading.seed

        def lacking(task_id: str, why: str | None, fix: str) -> bool:
            """Whether a task's data is absent from the collection.

            An absent task is listed as missing, or is an error when asked for.
            """
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
            tasks.append(cacm_cite_task(collection, seed=seed, similarity=options.proximity_similarity))
        if (wanted is None or "categories" in wanted) and not lacking(
            "categories", _categories_lacking(collection), _CATEGORIES_FIX
        ):
            tasks.append(cacm_category_task(collection, seed=seed))
        if wanted is None or "search" in wanted:
            search = _search_task(self.name, Path(data), collection, reading, options)
            if search is None:
                missing.append("search")
            else:
                tasks.append(search)
        return TaskSuite(self.name, data, tasks, missing, collection.skipped)


def _search_task(name: str, folder: Path, collection: Any, reading: Reading, options: CacmOptions) -> Task | None:
    """The search task of a SMART folder's ``query.text`` and ``qrels.text`` (``None`` without them).

    Args:
        name: the benchmark's name.
        folder: the collection's folder.
        collection: the collection read from it.
        reading: what every benchmark takes.
        options: the CACM options.
    """
    from ...data.smart import read_smart_qrels, read_smart_queries
    from ..tasks import SearchTask
    from .base import qrels_of

    if not ((folder / "query.text").is_file() and (folder / "qrels.text").is_file()):
        return None
    papers = {p["paper_id"]: p for p in collection.papers}
    queries = read_smart_queries(folder / "query.text")
    qrels = qrels_of(
        read_smart_qrels(
            folder / "qrels.text",
            query_ids=set(queries["query_id"]),
            paper_ids=set(papers),
            skip_invalid=reading.skip_invalid,
            qrels_columns=options.qrels_columns,
        )
    )
    return SearchTask(
        name,
        "search",
        papers,
        queries={q: t for q, t in zip(queries["query_id"], queries["text"]) if q in qrels},
        qrels=qrels,
        measures=SEARCH_MEASURES,
        similarity="cosine",
        full_corpus=True,
        task_id="search",
    )


def cacm_cite_task(
    collection: Any,
    *,
    query_ids: Any = None,
    positives: int = 5,
    negatives: int = 25,
    seed: int = 0,
    similarity: str = Similarity.L2,
) -> ProximityTask:
    """The CACM citation links as a SciDocs cite task.

    Each query paper's linked papers (up to ``positives``, with text) are relevant. ``negatives`` random papers
    with text that are not linked to it are not. Scored as SciDocs scores cite (−L2, 5-decimal scores, MAP and nDCG).

    Args:
        collection: a :class:`~sciembed.data.smart.SmartCollection`.
        query_ids: the query papers (e.g. a held-out part). Default every paper with a link.
    """
    from ...data.smart import CACM_CITATION

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
    query_ids: Any = None,
    positives: int = 5,
    negatives: int = 25,
    seed: int = 0,
    similarity: str = Similarity.L2,
    benchmark: str = "cacm",
) -> ProximityTask:
    """A SciDocs-style cite task from any citation links, judged by :func:`sciembed.data.judgements.cite_qrels`
    (see :func:`cacm_cite_task`).

    Args:
        papers: paper id -> record, the papers with text.
        neighbours: paper id -> the ids it is linked to (cites or is cited by).
        query_ids: the query papers (default: every paper with a link).
    """
    from ...data.judgements import cite_qrels
    from ..tasks import ProximityTask

    qrels = cite_qrels(papers, neighbours, query_ids=query_ids, positives=positives, negatives=negatives, seed=seed)
    ids = set(qrels) | {c for cands in qrels.values() for c in cands}
    return ProximityTask(
        benchmark,
        "cite",
        {pid: record for pid, record in papers.items() if pid in ids},  # the collection's order, in every process
        qrels=qrels,
        similarity=Similarity(similarity).value,
        score_decimals=5 if similarity == Similarity.L2 else None,
    )


_CATEGORIES_FIX = "evaluate the other tasks (--tasks cite search), or give a collection whose records have .C lines"


def _categories_lacking(collection: Any) -> str | None:
    """Why a SMART collection's ``.C`` categories make no classification task (None when they make one)."""
    from ...data.judgements import cacm_categories

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


def cacm_category_task(collection: Any, *, seed: int = 0, test_size: float = 0.5) -> ClassificationTask:
    """CACM's CR categories as a single-label classification task.

    A paper's class is the top-level class of its first listed category (``3.7`` -> ``3``), and classes have at
    least 6 papers (:func:`sciembed.data.judgements.cacm_categories`). A stratified random half is for training.
    Scored by SciDocs' protocol (LinearSVC, C in logspace(−4, 2, 7), 3-fold, macro-F1).

    Raises:
        ValueError: the collection's categories make fewer than two classes (no ``.C`` lines at all, say),
            naming the file.
    """
    from sklearn.model_selection import train_test_split

    from ...data.judgements import cacm_categories
    from ..supervised import SCIDOCS_CLASSIFICATION
    from ..tasks import ClassificationTask

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
