"""Training examples from the data layer's readers, as ``datasets.Dataset`` objects the collators take.

Every example holds papers as ``{"title", "abstract"}`` records (the model text is made from them at
collation time with the model's own separator, :func:`~sciembed.data.papers.paper_text`). A search
query is a record whose title is the query and whose abstract is empty.

- :func:`read_citation_source` reads a citation graph with its papers from a SMART collection (CACM),
  a SPECTER release folder, S2ORC metadata JSONL, or a papers file plus a citation edge list
  (:class:`CitationFiles`). :data:`sciembed.data.layouts.TRAINING_LAYOUTS` shows each with an example.
- :func:`triplet_dataset` samples SPECTER, SPECTROID or SciNCL triplets from it (``query``,
  ``positive``, ``negative``, with their ids in ``query_id``, ...), or :func:`scirepeval_triplets` reads SciRepEval's
  ready triplets.
- :func:`pair_dataset` makes co-citation pairs (``a``, ``b``) for the MoE paper's contrastive training, or citation
  pairs.
- :func:`labelled_papers` makes ``(paper, label)`` examples for classification heads.
- :func:`multitask_dataset` turns SciRepEval's training samples into one task-tagged dataset, and
  :func:`tagged_dataset` the rows of any tasks (a task mixture of several sources:
  :mod:`sciembed.training.task_mixture`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, concatenate_datasets

from ..choices import StrChoice, choices
from ..data.graph import CitationGraph
from ..data.papers import PaperProblem, paper_id_list, paper_id_order
from ..data.smart import LINK_READINGS, is_smart_collection

logger = logging.getLogger(__name__)


class TripletSampler(StrChoice):
    """The papers whose rules draw training triplets from a citation graph."""

    SPECTER = "specter"
    SPECTROID = "spectroid"
    SCINCL = "scincl"


class PairKind(StrChoice):
    """What :func:`pair_dataset` pairs: papers cited together, or a paper and one it cites."""

    COCITATIONS = "cocitations"
    CITATIONS = "citations"


class TaskKind(StrChoice):
    """The kinds of a multi-task run's tasks, each with its own head or ranking loss."""

    CLASSIFICATION = "classification"
    MULTILABEL = "multilabel"
    REGRESSION = "regression"
    PROXIMITY = "proximity"
    SEARCH = "search"


TRIPLET_SAMPLERS = choices(TripletSampler)
#: The roles of a triplet example, in the order they are encoded.
TRIPLET_ROLES = ("query", "positive", "negative")
PAIR_ROLES = ("a", "b")


@dataclass(frozen=True)
class CitationFiles:
    """Papers and their citations as two files: ``sciembed train --papers FILE --citations FILE``.

    Attributes:
        papers: papers with ``paper_id``, ``title``, ``abstract`` (JSONL, JSON, CSV or Parquet:
            :func:`~sciembed.data.papers.read_papers`).
        citations: an edge list, CSV / TSV with a ``citing,cited`` header or SNAP lines
            (:func:`~sciembed.data.edges.read_edge_list`).
        id_field: the papers' id column (``--id-field``). By default the first of ``paper_id``, ``corpus_id``,
            ``id``, ``doc_id`` that a record has.
    """

    papers: Path
    citations: Path
    id_field: str | None = None

    def __str__(self) -> str:
        return f"{self.papers} + {self.citations}"


def paper_record(paper: Mapping[str, Any]) -> dict[str, str]:
    """The text fields of a paper, the only part training needs."""
    return {"title": paper.get("title") or "", "abstract": paper.get("abstract") or ""}


@dataclass
class CitationSource:
    """Papers with text and their citation graph, read from one source.

    Attributes:
        path: where they were read from.
        papers: paper id -> paper record.
        graph: the citations (CACM's undirected links are stored in both directions).
        cocited: co-citation pairs given by the source itself (CACM's type-6 links), else empty.
        skipped: records the reader set aside.
    """

    path: str
    papers: dict[str, dict[str, Any]]
    graph: CitationGraph
    cocited: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[PaperProblem] = field(default_factory=list)

    def neighbours(self) -> dict[str, set[str]]:
        """Each paper id's linked ids, both directions (what a cite task judges as relevant)."""
        graph = self.graph
        result: dict[str, set[str]] = {}
        for a, b in zip(graph.ids[graph.citing_of_edges()].tolist(), graph.ids[graph.out_indices].tolist()):
            result.setdefault(a, set()).add(b)
            result.setdefault(b, set()).add(a)
        return result

    def cite_task(self, query_ids: Iterable[str], *, seed: int = 0):
        """The SciDocs-protocol cite task on ``query_ids``, such as the held-out queries.

        Their linked papers are the positives, and 25 random others the negatives
        (:func:`sciembed.data.judgements.cite_qrels`).
        """
        from ..evaluation.loaders import cite_task

        return cite_task(self.papers, self.neighbours(), query_ids=list(query_ids), seed=seed, benchmark="held-out")

    def linked_queries(self) -> list[str]:
        """Papers with text that cite at least one paper with text, in id order.

        In CACM, a paper linked to a paper with text counts too.
        """
        graph = self.graph
        has_text = graph.has_text
        linked = np.zeros(graph.num_papers, dtype=bool)
        linked[graph.citing_of_edges()[has_text[graph.out_indices]]] = True
        return [str(i) for i in graph.ids[linked & has_text]]


def read_citation_source(
    data: str | os.PathLike[str] | CitationFiles, *, skip_invalid: bool = True, smart_links: str = "cacm"
) -> CitationSource:
    """Read papers and citations from a folder or file in one of the training layouts.

    The layouts are a SMART collection folder or file (CACM: ``cacm.all``), a SPECTER release folder (``data.json`` +
    ``metadata.json``, at the top or under ``training/``), S2ORC metadata JSONL (a file or a folder of them), or a
    papers file and a citation edge list (:class:`CitationFiles`). :data:`~sciembed.data.layouts.TRAINING_LAYOUTS`
    shows an example of each.

    Args:
        skip_invalid: skip (and count) paper records that cannot be used instead of stopping at the first.
        smart_links: how a SMART collection's ``.X`` lines are read (``links`` of
            :func:`~sciembed.data.smart.read_smart_collection`): ``cacm`` (CACM's link types, other values are
            refused) or ``all`` (every pair a citation link).

    Raises:
        ValueError: the path holds none of these layouts (the ones looked for are named), no paper with text
            (an embedding file, say), a malformed edge list (file and line named), or no citation between two of
            its papers. The message says what was found.
    """
    if smart_links not in LINK_READINGS:
        raise ValueError(f"unknown SMART link reading {smart_links!r}; one of {', '.join(LINK_READINGS)}")
    if isinstance(data, CitationFiles):
        source = _edge_list_source(data, skip_invalid)
        _check_linked(source)
        return source
    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    source = None
    if is_smart_collection(path):
        source = _smart_source(path, skip_invalid, smart_links)
    for folder in (path, path / "training"):
        if source is None and (folder / "data.json").is_file() and (folder / "metadata.json").is_file():
            source = _specter_source(folder, skip_invalid)
    if source is None and (
        path.suffix == ".jsonl" or (path.is_dir() and (any(path.glob("*.jsonl")) or any(path.glob("*/*.jsonl"))))
    ):
        source = _s2orc_source(path, skip_invalid)
    if source is not None:
        _check_linked(source)
        return source
    raise ValueError(
        f"{path}: not a citation source; expected a SMART collection (*.all), a SPECTER release "
        "(data.json + metadata.json) or S2ORC metadata (*.jsonl); "
        "or give papers and an edge list as --papers and --citations"
    )


def _check_linked(source: CitationSource) -> None:
    """Refuse a source without one citation between two papers with text: nothing to train on."""
    if not source.linked_queries():
        raise ValueError(
            f"{source.path}: {len(source.papers)} papers with text but no citation between two of them "
            f"({source.graph.num_citations} citation links in all); training needs papers that cite each other"
        )


def _smart_source(path: Path, skip_invalid: bool, link_reading: str) -> CitationSource:
    from ..data.smart import CACM_CITATION, CACM_COCITATION, read_smart_collection

    collection = read_smart_collection(path, skip_invalid=skip_invalid, links=link_reading)
    papers = {p["paper_id"]: p for p in collection.papers}
    links = sorted(collection.links.get(CACM_CITATION, ()))
    graph = CitationGraph.from_undirected_pairs(
        [a for a, _ in links],
        [b for _, b in links],
        papers_with_text=papers,
        drop_dangling=True,
        source=f"{collection.path} (.X citation links)",
    )
    cocited = sorted(
        pair for pair in collection.links.get(CACM_COCITATION, ()) if pair[0] in papers and pair[1] in papers
    )
    return CitationSource(str(path), papers, graph, cocited, list(collection.skipped))


def _specter_source(folder: Path, skip_invalid: bool) -> CitationSource:
    from ..data.specter import read_specter_release

    release = read_specter_release(folder, skip_invalid=skip_invalid)
    papers = {p["paper_id"]: p for p in release.papers}
    graph = CitationGraph.from_edges(release.citing, release.cited, papers_with_text=papers, drop_dangling=False)
    return CitationSource(str(folder), papers, graph, skipped=list(release.skipped))


def _edge_list_source(files: CitationFiles, skip_invalid: bool) -> CitationSource:
    """Papers from one file and citations from an edge list. Citations naming an id without a paper stay in
    the graph as papers without text (a two-hop path may run through them) and are counted, with
    self-citations and repeats, in the graph's one log line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..data.edges import read_edge_list
    from ..data.papers import read_papers

    if not Path(files.papers).exists():
        raise FileNotFoundError(f"{files.papers}: no such file or folder (--papers)")
    if not Path(files.citations).is_file():
        raise FileNotFoundError(f"{files.citations}: no such file (--citations)")
    edges = read_edge_list(files.citations)  # first: it is checked in seconds, the papers may take minutes
    paper_file = read_papers(files.papers, id_field=files.id_field, skip_invalid=skip_invalid)
    if paper_file.skipped:
        logger.warning(
            "%s: skipped %d invalid paper record(s), the first: %s",
            files.papers,
            len(paper_file.skipped),
            paper_file.skipped[0],
        )
    papers = {p["paper_id"]: p for p in paper_file.papers}
    ids = pa.array(list(papers), pa.large_string())
    if not (
        pc.any(pc.is_in(edges.citing, value_set=ids)).as_py() or pc.any(pc.is_in(edges.cited, value_set=ids)).as_py()
    ):
        raise ValueError(
            f"{files.citations}: none of its {len(edges)} citations names a paper of {files.papers} (citation ids "
            f"such as {edges.citing[0].as_py()!r}, paper ids such as {next(iter(papers))!r}); the two files must use "
            "the same ids"
        )
    graph = CitationGraph.from_edges(edges.citing, edges.cited, papers_with_text=ids, ids=ids, source=str(files))
    return CitationSource(str(files), papers, graph, skipped=list(paper_file.skipped))


def _s2orc_source(path: Path, skip_invalid: bool) -> CitationSource:
    from ..data.s2orc import read_s2orc

    s2orc = read_s2orc(path, skip_invalid=skip_invalid)
    papers = {p["paper_id"]: p for p in s2orc.papers if p.get("title") or p.get("abstract")}
    if not papers:
        first = f" (the first: {s2orc.skipped[0]})" if s2orc.skipped else ""
        raise ValueError(
            f"{path}: none of its records is a paper with a title or abstract; {len(s2orc.skipped)} skipped{first}. "
            "Training takes papers and their citations (S2ORC metadata), not embeddings"
        )
    graph = CitationGraph.from_edges(
        s2orc.citing,
        s2orc.cited,
        papers_with_text=[pid for pid, p in papers.items() if p.get("title") or p.get("abstract")],
    )
    return CitationSource(str(path), papers, graph, skipped=list(s2orc.skipped))


def split_queries(queries: Sequence[str], held_out: float, seed: int) -> tuple[list[str], list[str]]:
    """Split query ids at random into (train, held-out) with ``held_out`` of them held out."""
    if not 0 <= held_out < 1:
        raise ValueError(f"held_out must be in [0, 1), got {held_out}")
    order = np.random.default_rng(seed).permutation(len(queries))
    cut = int(round(len(queries) * held_out))
    held = sorted((queries[i] for i in order[:cut]), key=paper_id_order)
    return sorted((queries[i] for i in order[cut:]), key=paper_id_order), held


@dataclass(frozen=True)
class QuerySplit:
    """A citation source's linked queries split into training, held-out and validation queries."""

    train: list[str]
    held_out: list[str]
    validation: list[str]

    @property
    def unseen(self) -> list[str]:
        """The queries training must not see (held-out and validation)."""
        return [*self.held_out, *self.validation]

    def counts(self) -> dict[str, Any]:
        """The split as a run records it (sizes, and the ids evaluation is on)."""
        counts: dict[str, Any] = {
            "queries": len(self.train),
            "held_out_queries": len(self.held_out),
            "held_out_ids": sorted(self.held_out),
        }
        if self.validation:
            counts.update(validation_queries=len(self.validation), validation_ids=sorted(self.validation))
        return counts


def split_citation_queries(source: CitationSource, held_out: float, validation: float, seed: int) -> QuerySplit:
    """``source``'s linked queries split at random by ``seed``.

    ``held_out`` of them are held out, then ``validation`` of the rest are kept for tuning. The tuning queries are
    split after the held-out ones, so a seed's held-out queries are the same with or without them."""
    queries, held = split_queries(source.linked_queries(), held_out, seed)
    queries, tuning = split_queries(queries, validation, seed + 1)
    return QuerySplit(queries, held, tuning)


def triplet_dataset(
    source: CitationSource,
    *,
    sampler: TripletSampler | str = TripletSampler.SPECTER,
    queries: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    **options: Any,
) -> Dataset:
    """Sample training triplets from ``source`` with the rules of one paper.

    Args:
        sampler: ``specter`` (cited positives, two-hop hard negatives), ``spectroid`` (positives drawn by
            in-citations) or ``scincl`` (neighbours in a citation-graph embedding).
        queries: the query papers (default: every paper with text that has a link).
        exclude: papers never emitted as positive or negative either (held-out queries and their
            papers), so that evaluation on them is not trained on. Honoured by ``scincl`` as its
            ``exclude`` argument. For the graph samplers the graph is restricted to the other papers.
        seed: the sampling seed.
        rank, world_size: sample only the share of process ``rank`` of ``world_size`` (every
            ``world_size``-th query). The shares together hold exactly the rows of ``world_size=1``, because
            every draw is keyed by its query (SLURM arrays, Ray or Spark tasks can each build one share).
        options: further arguments of the sampler (e.g. ``triplets_per_query``).
    """
    from ..data.samplers import sample_specter_triplets, sample_spectroid_triplets

    if sampler not in TRIPLET_SAMPLERS:
        raise ValueError(f"unknown triplet sampler {sampler!r}; one of {', '.join(TRIPLET_SAMPLERS)}")
    sampler = TripletSampler(sampler)
    excluded = set(paper_id_list(exclude, what="exclude"))
    graph = source.graph
    if excluded and sampler is not TripletSampler.SCINCL:
        graph = _without(graph, excluded)
    chosen = paper_id_list(queries, what="queries") if queries is not None else source.linked_queries()
    query_list = [q for q in chosen if q not in excluded]
    if sampler is TripletSampler.SCINCL:
        from ..data.scincl import SciNCLConfig, sample_scincl_triplets

        try:
            config = SciNCLConfig(**options)
        except TypeError as error:  # a data setting the sampler does not have
            raise ValueError(
                f"SciNCL sampler: {error}; its settings: {', '.join(SciNCLConfig.__dataclass_fields__)}"
            ) from None
        triplets = sample_scincl_triplets(
            graph, query_list, config, exclude=sorted(excluded) or None, seed=seed, rank=rank, world_size=world_size
        )
    else:
        sample = {
            TripletSampler.SPECTER: sample_specter_triplets,
            TripletSampler.SPECTROID: sample_spectroid_triplets,
        }[sampler]
        in_graph = graph.ids.positions(query_list) >= 0
        triplets = sample(
            graph,
            [q for q, found in zip(query_list, in_graph) if found],
            seed=seed,
            rank=rank,
            world_size=world_size,
            **options,
        )
    if not len(triplets):
        raise ValueError(f"{source.path}: the {sampler} sampler found no triplet among {len(query_list)} queries")
    columns: dict[str, list[Any]] = {}
    for role, ids in zip(TRIPLET_ROLES, triplets.ids()):
        columns[role] = [paper_record(source.papers[str(i)]) for i in ids]
        columns[f"{role}_id"] = [str(i) for i in ids]
    return Dataset.from_dict(columns)


def _without(graph: CitationGraph, excluded: set[str]) -> CitationGraph:
    """``graph`` with no text for the excluded papers, so no sampler emits them. Their links remain."""
    has_text = graph.has_text & ~graph.ids.isin(list(excluded))
    return CitationGraph(graph.ids, graph.out_indptr, graph.out_indices, has_text, graph.stats)


def scirepeval_triplets(path: str | os.PathLike[str], *, skip_invalid: bool = True) -> Dataset:
    """SciRepEval's ready citation triplets (``specter_small.json``: ``{query, pos, neg}`` papers)."""
    from ..data.scirepeval import SampleFormat, read_scirepeval_sample

    sample = read_scirepeval_sample(path, kind=SampleFormat.SPECTER, skip_invalid=skip_invalid)
    return Dataset.from_dict(
        {
            "query": [paper_record(r) for r in sample.data["query"]],
            "positive": [paper_record(r) for r in sample.data["pos"]],
            "negative": [paper_record(r) for r in sample.data["neg"]],
        }
    )


#: What :func:`pair_dataset` pairs: papers cited together (the MoE paper's data), or a paper and one it cites.
PAIR_KINDS = choices(PairKind)


def pair_dataset(
    source: CitationSource,
    *,
    queries: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    domain: str | None = None,
    kind: PairKind | str = PairKind.COCITATIONS,
) -> Dataset:
    """Positive pairs ``(a, b)`` for in-batch-negatives training.

    ``kind="cocitations"`` (the MoE paper's data): the source's own co-citation links (CACM type 6), or else
    the graph's (papers cited together by some paper). ``kind="citations"``: each citation link, citing paper
    first (SPECTER's positives, without its hard negatives). Pairs touching an excluded paper are left out.
    With ``queries`` only pairs whose first paper is one of them are kept. ``domain`` tags every pair for
    domain routing.
    """
    if kind not in PAIR_KINDS:
        raise ValueError(f"unknown pair kind {kind!r}; one of {', '.join(PAIR_KINDS)}")
    kind = PairKind(kind)
    excluded = set(paper_id_list(exclude, what="exclude"))
    allowed = None if queries is None else set(paper_id_list(queries, what="queries"))
    cocitations = kind is PairKind.COCITATIONS
    pairs = (source.cocited or _graph_cocitations(source)) if cocitations else _graph_citations(source)
    rows = [
        (a, b)
        for a, b in pairs
        if a not in excluded and b not in excluded and (allowed is None or a in allowed or b in allowed)
    ]
    if not rows and cocitations:
        raise ValueError(
            f"{source.path}: no co-citation pair among the papers with text (two papers cited by the same paper); "
            "this recipe needs papers that share citing papers (or data.pairs=citations), the triplet recipes "
            "(specter, scincl) need only citations"
        )
    if not rows:
        raise ValueError(f"{source.path}: no citation between two papers with text outside the excluded ones")
    columns: dict[str, list[Any]] = {
        "a": [paper_record(source.papers[a]) for a, _ in rows],
        "a_id": [a for a, _ in rows],
        "b": [paper_record(source.papers[b]) for _, b in rows],
        "b_id": [b for _, b in rows],
    }
    if domain is not None:
        columns["domain"] = [domain] * len(rows)
    return Dataset.from_dict(columns)


def _graph_citations(source: CitationSource) -> list[tuple[str, str]]:
    graph = source.graph
    rows = graph.citing_of_edges()
    keep = graph.has_text[rows] & graph.has_text[graph.out_indices] & (rows != graph.out_indices)
    return list(zip(graph.ids[rows[keep]].tolist(), graph.ids[graph.out_indices[keep]].tolist()))


def _graph_cocitations(source: CitationSource) -> list[tuple[str, str]]:
    counts = source.graph.cocitation_counts().tocoo()
    ids, has_text = source.graph.ids, source.graph.has_text
    keep = (counts.row < counts.col) & has_text[counts.row] & has_text[counts.col]
    return [(str(ids[i]), str(ids[j])) for i, j in zip(counts.row[keep], counts.col[keep])]


def labelled_papers(
    path: str | os.PathLike[str],
    *,
    skip_invalid: bool = True,
    papers: Iterable[str] | None = None,
    smart_links: str = "cacm",
) -> tuple[Dataset, list[str]]:
    """Single-label ``(paper, label)`` examples and the label names.

    They come from CACM's CR categories or a SciRepEval MeSH sample (``descriptor``). A CACM paper's label is the
    top class of its first category, as in the ``cacm`` benchmark's task, and the SMART collection's ``.X`` lines
    are read as ``smart_links`` says. ``papers`` restricts the examples to those ids."""
    path = Path(path)
    allowed = None if papers is None else set(paper_id_list(papers, what="papers"))
    if is_smart_collection(path):
        from ..data.judgements import cacm_categories
        from ..data.smart import read_smart_collection

        collection = read_smart_collection(path, skip_invalid=skip_invalid, links=smart_links)
        categories = cacm_categories(collection.papers)
        ids, names = list(categories), [str(label) for label in categories.values()]
        records = {p["paper_id"]: p for p in collection.papers}
    else:
        from ..data.scirepeval import SampleFormat, read_scirepeval_sample

        sample = read_scirepeval_sample(path, kind=SampleFormat.MESH, skip_invalid=skip_invalid)
        ids, names = list(sample.data["paper_id"]), list(sample.data["descriptor"])
        records = {r["paper_id"]: r for r in sample.data}
    chosen = [(pid, name) for pid, name in zip(ids, names) if allowed is None or pid in allowed]
    labels = sorted({name for _, name in chosen})
    if len(labels) < 2:
        raise ValueError(f"{path}: classification needs at least 2 labels, found {len(labels)}")
    index = {name: i for i, name in enumerate(labels)}
    return Dataset.from_dict(
        {
            "paper_id": [pid for pid, _ in chosen],
            "paper": [paper_record(records[pid]) for pid, _ in chosen],
            "label": [index[name] for _, name in chosen],
        }
    ), labels


# ------------------------------------------------------------------ multi-task (SciRepEval)

#: Task kind -> the format its papers are embedded in (SciRepEval's control codes / adapters).
TASK_FORMATS = {
    TaskKind.CLASSIFICATION: "classification",
    TaskKind.MULTILABEL: "classification",
    TaskKind.REGRESSION: "regression",
    TaskKind.PROXIMITY: "proximity",
    TaskKind.SEARCH: "proximity",
}


@dataclass
class MultiTaskData:
    """One dataset of task-tagged examples, each task's kind and label count, and what was skipped.

    The skipped counts say, per task, what gave no row.
    """

    dataset: Dataset
    tasks: dict[str, tuple[TaskKind, int]]
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class TaskRows:
    """One task's training rows before they are tagged with its name.

    Attributes:
        kind: ``classification``, ``multilabel``, ``proximity`` or ``search`` (:data:`TASK_FORMATS`).
        num_labels: the head's outputs (1 for proximity and search).
        rows: ``{"papers", "label"}`` rows (:func:`multitask_dataset`).
        ids: per row, the paper a classification row is about (``None`` for rows of several papers), so that
            papers held out for evaluation can be left out.
        skipped: records that gave no row, and why (e.g. a search query whose candidates all score the same).
    """

    kind: TaskKind
    num_labels: int
    rows: list[dict[str, Any]]
    ids: list[str | None]
    skipped: dict[str, int] = field(default_factory=dict)

    def without(self, papers: set[str], what: str = "exclude") -> TaskRows:
        """The rows whose paper is not in ``papers``.

        The label count stays that of every row. The rows left out, and the ids of ``papers`` that name no row, are
        counted in ``skipped`` (:func:`exclusion_counts`).
        """
        if not papers:
            return self
        keep = [i for i, pid in enumerate(self.ids) if pid is None or pid not in papers]
        skipped = {**self.skipped, **exclusion_counts(papers, [pid for pid in self.ids if pid is not None], what)}
        return TaskRows(self.kind, self.num_labels, [self.rows[i] for i in keep], [self.ids[i] for i in keep], skipped)


def read_paper_ids(path: str | os.PathLike[str], what: str) -> list[str]:
    """The paper ids of a file, one per line (blank lines ignored). ``what`` names the setting in errors."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what}: {path} is not a file of paper ids (one per line)")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def exclusion_counts(excluded: Iterable[str], known: Iterable[str], what: str) -> dict[str, int]:
    """What excluding ``excluded`` from papers ``known`` did, as counts.

    ``excluded_papers`` counts the excluded ids that name a known paper, left out. ``exclude_ids_unknown`` counts
    those that name none. Ids that name no paper are logged, since a wrongly formatted ids file would otherwise
    leave every test paper in the training data without a word.
    """
    unknown = set(excluded) - set(known)
    if unknown:
        logger.warning(
            "%s: %d of %d paper id(s) name no paper of the data (e.g. %s); they exclude nothing",
            what,
            len(unknown),
            len(set(excluded)),
            sorted(unknown)[:3],
        )
    return {"excluded_papers": len(set(excluded)) - len(unknown), "exclude_ids_unknown": len(unknown)}


def classification_rows(
    path: str | os.PathLike[str], *, skip_invalid: bool = True, smart_links: str = "cacm"
) -> TaskRows:
    """Labelled papers as classification rows.

    The papers come from CACM's CR categories (a SMART collection, :func:`labelled_papers`), a SciRepEval MeSH
    sample (one descriptor per paper) or a fields-of-study sample (multi-label: a multi-hot label)."""
    from ..data.scirepeval import SampleFormat, read_scirepeval_sample

    path = Path(path)
    skipped: dict[str, int] = {}
    if not is_smart_collection(path):
        sample = read_scirepeval_sample(path, skip_invalid=skip_invalid)
        skipped = {"skipped_records": len(sample.skipped)} if sample.skipped else {}
        if sample.kind is SampleFormat.FOS:
            data = sample.data
            size = max(max(labels) for labels in data["labels"]) + 1
            rows = [
                {"papers": [paper_record(r)], "label": [float(i in set(r["labels"])) for i in range(size)]}
                for r in data
            ]
            return TaskRows(TaskKind.MULTILABEL, size, rows, [str(r["paper_id"]) for r in data], skipped)
        if sample.kind is not SampleFormat.MESH:
            raise ValueError(
                f"{path}: a {sample.kind} sample holds no labels; "
                "classification takes CACM, a MeSH or a fields-of-study sample"
            )
    data, labels = labelled_papers(path, skip_invalid=skip_invalid, smart_links=smart_links)
    rows = [{"papers": [paper], "label": [float(label)]} for paper, label in zip(data["paper"], data["label"])]
    return TaskRows(TaskKind.CLASSIFICATION, len(labels), rows, list(data["paper_id"]), skipped)


def triplet_rows(triplets: Dataset) -> TaskRows:
    """Citation triplets (:func:`triplet_dataset`, :func:`scirepeval_triplets`) as proximity rows."""
    rows = [{"papers": [r[role] for role in TRIPLET_ROLES], "label": []} for r in triplets]
    return TaskRows(TaskKind.PROXIMITY, 1, rows, [None] * len(rows))


def search_rows(path: str | os.PathLike[str], *, skip_invalid: bool = True) -> TaskRows:
    """SciRepEval search sessions as ``(query, better, worse)`` rows.

    A row pairs the candidate with the highest click score against the one with the lowest below it. A session
    without two different scores gives no row, and is counted."""
    from ..data.scirepeval import SampleFormat, read_scirepeval_sample

    sample = read_scirepeval_sample(path, kind=SampleFormat.SEARCH, skip_invalid=skip_invalid)
    data = sample.data
    rows, flat = [], 0
    for record in data:
        candidates = [c for c in record["candidates"] if c["title"] or c["abstract"]]
        best = max(candidates, key=lambda c: c["score"], default=None)
        worse = [c for c in candidates if c["score"] < best["score"]] if best else []
        if not worse:
            flat += 1
            continue
        worst = min(worse, key=lambda c: c["score"])
        rows.append(
            {
                "papers": [{"title": record["query"], "abstract": ""}, paper_record(best), paper_record(worst)],
                "label": [],
            }
        )
    skipped = {"skipped_records": len(sample.skipped)} if sample.skipped else {}
    return TaskRows(
        TaskKind.SEARCH,
        1,
        rows,
        [None] * len(rows),
        {**skipped, **({"sessions_without_two_scores": flat} if flat else {})},
    )


def tagged_dataset(
    tasks: Mapping[str, TaskRows], *, max_per_task: int | Mapping[str, int | None] | None = None, seed: int = 0
) -> MultiTaskData:
    """Tasks' rows as one task-tagged dataset, each task cut to a seeded sample.

    Args:
        tasks: each task's rows, by name.
        max_per_task: the rows a task keeps at most, or a mapping of each task's own limit. ``None`` for none.
        seed: the seed of the samples.
    """
    rng = np.random.default_rng(seed)
    parts: list[Dataset] = []
    kinds: dict[str, tuple[TaskKind, int]] = {}
    for name, task in tasks.items():
        rows = task.rows
        limit = max_per_task.get(name) if isinstance(max_per_task, Mapping) else max_per_task
        if not rows:
            raise ValueError(f"task {name}: no training rows (skipped: {task.skipped or 'none'})")
        if limit is not None and len(rows) > limit:
            rows = [rows[i] for i in sorted(rng.choice(len(rows), limit, replace=False))]
        kinds[name] = (task.kind, task.num_labels)
        parts.append(Dataset.from_list([{"task": name, **row} for row in rows]))
    logger.info("multi-task data: %s", {name: f"{kind}, {labels} label(s)" for name, (kind, labels) in kinds.items()})
    return MultiTaskData(
        concatenate_datasets(parts), kinds, {name: task.skipped for name, task in tasks.items() if task.skipped}
    )


def multitask_dataset(
    folder: str | os.PathLike[str], *, skip_invalid: bool = True, max_per_task: int | None = None, seed: int = 0
) -> MultiTaskData:
    """SciRepEval's training samples as one dataset for multi-task training.

    Each row is ``{"task", "papers", "label"}``: ``papers`` holds one paper (classification,
    regression) or ``query, positive, negative`` (proximity, search, a search query is a record with
    the query as its title). ``label`` is ``[class]``, a multi-hot vector, ``[value]`` or empty. Reads
    whichever of ``fos_small.json`` (multi-label fields of study), ``mesh_small.json`` (MeSH
    descriptor, multi-class), ``specter_small.json`` (citation triplets) and ``search_small.jsonl``
    (search sessions: :func:`search_rows`) the folder holds. Several sources in one run (a citation graph,
    CACM's categories, ...) are a task mixture (:mod:`sciembed.training.task_mixture`).
    """
    folder = Path(folder)
    tasks: dict[str, TaskRows] = {}
    if (path := folder / "fos_small.json").is_file():
        tasks["fos"] = classification_rows(path, skip_invalid=skip_invalid)
    if (path := folder / "mesh_small.json").is_file():
        tasks["mesh"] = classification_rows(path, skip_invalid=skip_invalid)
    if (path := folder / "specter_small.json").is_file():
        tasks["proximity"] = triplet_rows(scirepeval_triplets(path, skip_invalid=skip_invalid))
    if (path := folder / "search_small.jsonl").is_file():
        tasks["search"] = search_rows(path, skip_invalid=skip_invalid)
    if not tasks:
        raise ValueError(
            f"{folder}: no SciRepEval training sample (fos_small.json, mesh_small.json, specter_small.json, "
            "search_small.jsonl)"
        )
    return tagged_dataset(tasks, max_per_task=max_per_task, seed=seed)
