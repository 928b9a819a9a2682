"""Training data layouts: one reader each, detected once.

The layout is detected from ``--data`` and the recipe's kind of data.
A reader turns its files into :class:`Examples`. The objective says how a citation graph becomes rows
(triplets or pairs) through :class:`GraphRows`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .examples import CitationFiles
from .settings import DataKind, DataSettings

logger = logging.getLogger(__name__)


@dataclass
class Examples:
    """A run's training rows, its held-out and validation suites and what reading them counted."""

    train: Any
    evaluation: Any = None
    validation: Any = None
    counts: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, tuple[str, int]] | None = None
    labels: list[str] | None = None
    #: The domains of a run on several citation graphs (a task mixture), in order.
    domains: list[str] | None = None
    #: The papers whose relations the model keeps (``data.anchor_papers``).
    anchor_papers: list[dict[str, Any]] | None = None
    #: Each task's weight in every batch of a multi-task mixture (``None``: equal shares).
    task_weights: dict[str, float] | None = None


class GraphRows(Protocol):
    """How an objective makes rows from citation graphs."""

    def graph_rows(self, source: Any, queries: list[str], unseen: list[str]) -> Any:
        """Rows from one citation graph.

        Args:
            source: the :class:`~sciembed.training.examples.CitationSource`.
            queries: the training queries.
            unseen: papers no row may hold.
        """

    def mixture_rows(self) -> dict[str, Any]:
        """The row arguments of :func:`~sciembed.training.task_mixture.domain_examples`."""

    def takes_ready_triplets(self) -> bool:
        """Whether SciRepEval's ready triplets are rows of this objective."""


@dataclass(frozen=True)
class Source:
    """A data layout at ``path``.

    Attributes:
        path: the file or folder, or papers and citations given apart.
        smart_links: how a SMART collection's ``.X`` lines read.
        recipe: the recipe's name, for messages.
    """

    path: str | os.PathLike[str] | CitationFiles
    smart_links: str = "cacm"
    recipe: str = ""
    kind: ClassVar[DataKind]
    #: Whether the layout splits citation queries (``data.validation``).
    splits_queries: ClassVar[bool] = False
    #: Whether the layout applies ``data.max_examples`` itself (per task).
    limits_itself: ClassVar[bool] = False

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        """The examples of this layout.

        Args:
            data: the run's data settings.
            excluded: the paper ids ``data.exclude`` names.
            rows: the objective's rows from citation graphs.
        """
        raise NotImplementedError


class CitationGraph(Source):
    """A citation graph: a SMART collection, SPECTER release, S2ORC JSONL, or papers and edges.

    Papers and edges are a papers file with an edge list.
    """

    kind = DataKind.CITATIONS
    splits_queries = True

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from ..evaluation.loaders import TaskSuite
        from .examples import exclusion_counts, read_citation_source, split_citation_queries

        source = read_citation_source(self.path, smart_links=self.smart_links)
        counts: dict[str, Any] = {"skipped_records": len(source.skipped)}
        split = split_citation_queries(source, data.held_out, data.validation, data.seed)
        counts.update(split.counts())
        if excluded:
            counts.update(exclusion_counts(excluded, source.papers.keys(), "data.exclude"))
        train = rows.graph_rows(source, split.train, [*split.unseen, *sorted(excluded)])
        examples = Examples(train, counts=counts)
        if split.held_out:
            task = source.cite_task(split.held_out, seed=data.seed)
            examples.evaluation = TaskSuite("held-out", str(self.path), [task])
        if split.validation:
            task = source.cite_task(split.validation, seed=data.seed)
            examples.validation = TaskSuite("validation", str(self.path), [task])
        return examples


class ReadyTriplets(Source):
    """SciRepEval's ready citation triplets (``specter*.json``)."""

    kind = DataKind.CITATIONS

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from .examples import scirepeval_triplets

        if excluded:
            raise ValueError(
                f"{self.path}: SciRepEval's ready triplets carry no paper ids to exclude; give a citation graph"
            )
        if not rows.takes_ready_triplets():
            raise ValueError(
                f"{self.path}: SciRepEval triplets are not co-citation pairs; give a citation graph for {self.recipe}"
            )
        return Examples(scirepeval_triplets(self.path))


class GraphMixture(Source):
    """A task mixture of citation graphs, one per domain."""

    kind = DataKind.CITATIONS
    splits_queries = True

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from . import task_mixture

        by_domain = task_mixture.domain_examples(
            task_mixture.read_task_mixture(self.path),
            **rows.mixture_rows(),
            held_out=data.held_out,
            validation=data.validation,
            seed=data.seed,
            exclude=excluded,
            smart_links=self.smart_links,
        )
        counts = {
            "domains": by_domain.counts,
            "queries": sum(c["queries"] for c in by_domain.counts.values()),
            "held_out_queries": sum(c["held_out_queries"] for c in by_domain.counts.values()),
        }
        return Examples(by_domain.train, by_domain.evaluation, by_domain.validation, counts, domains=by_domain.domains)


class TaskMixture(Source):
    """A multi-task mixture: classification, search and citation tasks, each from its own file."""

    kind = DataKind.SCIREPEVAL
    splits_queries = True
    limits_itself = True

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from . import task_mixture

        mixed = task_mixture.mixture_examples(
            task_mixture.read_task_mixture(self.path),
            held_out=data.held_out,
            validation=data.validation,
            seed=data.seed,
            max_per_task=data.max_examples,
            smart_links=self.smart_links,
        )
        for key, share, split in (
            ("data.held_out", data.held_out, mixed.evaluation),
            ("data.validation", data.validation, mixed.validation),
        ):
            if share and split is None:
                raise ValueError(f"{self.path}: {key} splits citation queries, and this mixture has no citation graph")
        return Examples(
            mixed.data.dataset,
            mixed.evaluation,
            mixed.validation,
            dict(mixed.counts),
            tasks=mixed.data.tasks,
            task_weights=mixed.weights,
        )


class MultiTaskSamples(Source):
    """SciRepEval's training samples folder."""

    kind = DataKind.SCIREPEVAL
    limits_itself = True

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from .examples import multitask_dataset

        if data.held_out:
            raise ValueError(
                f"{self.path}: data.held_out splits citation queries, and SciRepEval's samples hold no citation "
                "graph; give a task mixture with one, or evaluate the saved model instead"
            )
        loaded = multitask_dataset(self.path, max_per_task=data.max_examples, seed=data.seed)
        counts: dict[str, Any] = {
            "tasks": {name: sum(1 for t in loaded.dataset["task"] if t == name) for name in loaded.tasks}
        }
        if loaded.skipped:
            counts["skipped"] = loaded.skipped
        return Examples(loaded.dataset, counts=counts, tasks=loaded.tasks)


class LabelledPapers(Source):
    """Papers with labels: CACM's categories or a SciRepEval MeSH sample."""

    kind = DataKind.LABELLED

    def read(self, data: DataSettings, excluded: frozenset[str], rows: GraphRows) -> Examples:
        from .examples import exclusion_counts, labelled_papers

        if data.held_out:
            raise ValueError("data.held_out is not supported for labelled data; evaluate the saved model instead")
        train, labels = labelled_papers(self.path, smart_links=self.smart_links)
        counts: dict[str, Any] = {"labels": len(labels)}
        if excluded:
            kept = train.filter(lambda row: row["paper_id"] not in excluded)
            counts.update(exclusion_counts(excluded, train["paper_id"], "data.exclude"))
            train = kept
        return Examples(train, counts=counts, labels=labels)


#: The layouts that read a task mixture, by kind of data.
_MIXTURES: dict[DataKind, type[Source]] = {DataKind.CITATIONS: GraphMixture, DataKind.SCIREPEVAL: TaskMixture}
#: The layouts read when ``--data`` is no task mixture, by kind of data.
_PLAIN: dict[DataKind, type[Source]] = {
    DataKind.CITATIONS: CitationGraph,
    DataKind.SCIREPEVAL: MultiTaskSamples,
    DataKind.LABELLED: LabelledPapers,
}


def detect_source(
    path: str | os.PathLike[str] | CitationFiles, kind: DataKind, recipe: str, smart_links: str = "cacm"
) -> Source:
    """The reader of ``path`` for a recipe that trains on ``kind`` data.

    Args:
        path: ``--data``, or papers and citations given apart.
        kind: the recipe's kind of data.
        recipe: the recipe's name, for messages.
        smart_links: how a SMART collection's ``.X`` lines read.
    """
    from .task_mixture import is_task_mixture

    if isinstance(path, CitationFiles) and kind is not DataKind.CITATIONS:
        raise ValueError(
            f"--papers / --citations give citation data; recipe {recipe} trains on {kind.value} data "
            "(sciembed train --help lists the layouts)"
        )
    if kind in _MIXTURES and is_task_mixture(path):
        return _MIXTURES[kind](path, smart_links, recipe)
    if kind is DataKind.CITATIONS and not isinstance(path, CitationFiles) and _ready_triplets(Path(path)):
        return ReadyTriplets(path, smart_links, recipe)
    return _PLAIN[kind](path, smart_links, recipe)


def _ready_triplets(path: Path) -> bool:
    """Whether ``path`` names SciRepEval's ready triplets (``specter*.json``)."""
    return path.suffix == ".json" and path.name.startswith("specter")


def read_examples(source: Source, data: DataSettings, rows: GraphRows | None) -> Examples:
    """The examples of ``source`` under the run's data settings, with the anchor papers.

    Args:
        source: the detected layout.
        data: the run's data settings (the objective's subclass of them).
        rows: the objective's rows from citation graphs (``None``: it reads none).
    """
    smart_links, recipe = source.smart_links, source.recipe
    from ..data.smart import is_smart_collection

    excluded = frozenset(excluded_papers(data.exclude))
    counts: dict[str, Any] = {}
    anchors = anchor_papers(data.anchor_papers, excluded, counts)
    if excluded and source.kind is DataKind.SCIREPEVAL:
        raise ValueError(
            "data.exclude takes papers out of citation graphs and labelled papers; multi-task data takes them "
            "per task: give a task mixture whose tasks name what they exclude"
        )
    if data.validation and source.kind is not DataKind.CITATIONS and not source.splits_queries:
        raise ValueError(
            f"data.validation splits citation queries; recipe {recipe} trains on {source.kind.value} data"
        )
    if not isinstance(source.path, CitationFiles) and is_smart_collection(source.path):
        counts["smart_links"] = smart_links  # how the .X lines were read: part of what the model was trained on
    examples = source.read(data, excluded, rows)
    examples.counts = {**counts, **examples.counts}
    examples.anchor_papers = anchors
    limit = data.max_examples
    if not source.limits_itself and limit is not None and len(examples.train) > limit:
        examples.train = examples.train.shuffle(seed=data.seed).select(range(limit))
    return examples


def excluded_papers(value: Any) -> set[str]:
    """``data.exclude`` as a set of paper ids.

    The setting is a list of ids, or a file of them, one per line.

    Args:
        value: the setting's value.
    """
    if value is None:
        return set()
    if isinstance(value, (str, os.PathLike)):
        from .examples import read_paper_ids

        return set(read_paper_ids(value, "data.exclude"))
    if isinstance(value, (list, tuple)) and all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in value):
        return {str(i) for i in value}
    raise ValueError(f"data.exclude is a list of paper ids or a file of them, got {value!r}")


def anchor_papers(
    value: Any, excluded: frozenset[str] | set[str], counts: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """``data.anchor_papers`` as records, without ``data.exclude``'s papers.

    Args:
        value: a paper file, SciRepEval's ready triplets (``specter*.json``), or a list of such files.
        excluded: papers left out.
        counts: receives what was kept, skipped, repeated or excluded.
    """
    if value is None:
        return None
    paths = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(paths, (list, tuple)) or not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise ValueError(f"data.anchor_papers is a paper file or a list of them, got {value!r}")
    papers, seen = [], set()
    skipped = repeated = dropped = 0
    for path in paths:
        read, invalid = _paper_records(Path(path))
        skipped += invalid
        for paper in read:
            if paper["paper_id"] in excluded:
                dropped += 1
            elif paper["paper_id"] in seen:
                repeated += 1
            else:
                seen.add(paper["paper_id"])
                papers.append(paper)
    counts["anchor_papers"] = {"papers": len(papers), "skipped": skipped, "repeated": repeated, "excluded": dropped}
    if skipped or repeated or dropped:
        logger.warning(
            "data.anchor_papers: %d papers kept; %d records skipped as invalid, %d repeated, %d in data.exclude",
            len(papers),
            skipped,
            repeated,
            dropped,
        )
    return papers


def _paper_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The papers of one anchor file, and how many records were skipped as invalid."""
    from ..data.papers import read_papers
    from ..data.scirepeval import read_scirepeval_sample

    if _ready_triplets(path):
        sample = read_scirepeval_sample(path, kind="specter", skip_invalid=True)
        return [paper for column in ("query", "pos", "neg") for paper in sample.data[column]], len(sample.skipped)
    read = read_papers(path, skip_invalid=True)
    return read.papers, len(read.skipped)
