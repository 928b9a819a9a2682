"""Nearest neighbours in any collection of papers: ``sciembed.neighbours`` and ``sciembed neighbours``.

The papers (a papers file in any layout :func:`~sciembed.data.papers.read_papers` reads, a SMART collection
such as CACM, or records) are embedded with a model (in its proximity format when it has one, as SciRepEval
compares papers) or their vectors are read from an embedding file (``sciembed embed``'s ``.jsonl`` / ``.npy`` /
``.parquet``, or a folder of Parquet parts). The vectors go into a faiss inner-product index over unit rows
(:func:`sciembed.data.knn.faiss_neighbours`: exact, float64 scores) and each query paper gets its ``top_k`` most
similar other papers by cosine, with ids, titles and scores. Citation links (a SMART collection's ``.X``
citations, or an edge list) mark the neighbours that cite or are cited by the query and give the share of such
links among the neighbours next to what random neighbours would give.

Example::

    >>> import sciembed
    >>> result = sciembed.neighbours(None, "papers.jsonl", top_k=5, query_ids=["p1", "p7"])  # None: the default model
    >>> encoder = sciembed.Encoder.from_pretrained("allenai/specter2_base", device="cuda")  # options: load it first
    >>> result = sciembed.neighbours(encoder, "papers.jsonl")
    >>> result = sciembed.neighbours(papers="papers.jsonl", embeddings="vectors.npy")  # vectors from sciembed embed
    >>> result.neighbours_of("p1")[0]          # {"rank": 1, "paper_id": ..., "title": ..., "score": ...}
    >>> result.write("neighbours.jsonl")       # one line per query paper. An existing file is refused
"""

from __future__ import annotations

import csv
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.knn import IVFSettings, faiss_neighbours
from ..data.papers import (
    MOVED_JOB_OPTIONS,
    SUPPORTED_SUFFIXES,
    TEXT_FIELDS,
    PaperProblem,
    PaperReading,
    paper_id_list,
    paper_id_order,
    paper_records,
    text_field_names,
)
from ..encode import Encoder, ModelArgument, refuse_encoder_options, resolve_encoder
from ..io import atomic_path, refuse_replacing_file
from ..logs import progress_enabled

if TYPE_CHECKING:
    from ..index import PaperIndex

logger = logging.getLogger(__name__)

#: Output files :meth:`NeighboursResult.write` writes, by suffix.
OUTPUT_SUFFIXES = (".jsonl", ".csv", ".tsv")
#: Query ids named in full in an error before the list is cut short.
_SHOWN_IDS = 10


class UnknownQueryError(KeyError, ValueError):
    """Query ids that are not papers of the collection. ``unknown`` lists them all, in the order given."""

    def __init__(self, message: str, unknown: Sequence[str]):
        self.unknown = list(unknown)
        super().__init__(message)

    def __str__(self) -> str:
        # KeyError would print the message with quotes around it.
        return str(self.args[0])


#: The delimiter of each table suffix the neighbours are written as.
_DELIMITERS = {".csv": ",", ".tsv": "\t"}


@dataclass
class NeighboursResult:
    """Each query paper's nearest neighbours, kept as arrays (a million queries cost arrays, not objects).

    Attributes:
        source: what the papers were read from.
        model: the model that embedded them, or the embedding file read.
        revision: the model's Hub commit (:attr:`~sciembed.Encoder.revision`, ``None`` for a local folder or vectors
            read from a file).
        ids, titles: every searched paper, in collection order.
        query_rows: positions (into ``ids``) of the query papers, in the order asked.
        indices, scores: ``(queries, top_k)`` positions of each query's neighbours and their cosine similarities,
            most similar first.
        links: positions each paper is linked to by a citation (either way), when links were given.
        skipped: records of the input that were skipped (``skip_invalid``).
    """

    source: str
    model: str
    ids: list[str]
    titles: list[str]
    query_rows: np.ndarray
    indices: np.ndarray
    scores: np.ndarray
    links: list[set[int]] | None = None
    skipped: list[PaperProblem] = field(default_factory=list)
    revision: str | list[str | None] | None = None

    @property
    def top_k(self) -> int:
        """Neighbours per query paper."""
        return int(self.indices.shape[1])

    @property
    def query_ids(self) -> list[str]:
        return [self.ids[row] for row in self.query_rows]

    def __len__(self) -> int:
        return len(self.query_rows)

    def neighbours_of(self, paper_id: str) -> list[dict[str, Any]]:
        """The neighbours of one query paper: ``{"rank", "paper_id", "title", "score"[, "linked"]}``, most similar
        first."""
        try:
            position = self.query_ids.index(paper_id)
        except ValueError:
            raise KeyError(f"{paper_id!r} is not one of the {len(self)} query papers") from None
        return self._neighbours(position)

    def _neighbours(self, position: int) -> list[dict[str, Any]]:
        linked = self.links[self.query_rows[position]] if self.links is not None else None
        rows = []
        for rank, (index, score) in enumerate(
            zip(self.indices[position].tolist(), self.scores[position].tolist()), start=1
        ):
            row = {"rank": rank, "paper_id": self.ids[index], "title": self.titles[index], "score": score}
            if linked is not None:
                row["linked"] = index in linked
            rows.append(row)
        return rows

    def records(self) -> Iterator[dict[str, Any]]:
        """One record per query paper: ``{"paper_id", "title", "model", "revision"[, "links"], "neighbours"}``."""
        for position, row in enumerate(self.query_rows.tolist()):
            record: dict[str, Any] = {
                "paper_id": self.ids[row],
                "title": self.titles[row],
                "model": self.model,
                "revision": self.revision,
            }
            if self.links is not None:
                record["links"] = len(self.links[row])
            record["neighbours"] = self._neighbours(position)
            yield record

    # Citation links among the neighbours ----------------------------------------------------------------

    @property
    def linked_queries(self) -> list[int]:
        """Positions (into the queries) of the query papers with at least one citation link."""
        if self.links is None:
            return []
        return [position for position, row in enumerate(self.query_rows.tolist()) if self.links[row]]

    @property
    def link_share(self) -> float | None:
        """Mean share of citation links among the ``top_k`` neighbours of each query paper.

        Only the query papers that have a link count. ``None`` when none has.
        """
        linked = self.linked_queries
        if not linked:
            return None
        top_k = self.top_k
        return float(
            np.mean(
                [len(self.links[self.query_rows[p]].intersection(self.indices[p].tolist())) / top_k for p in linked]
            )
        )

    @property
    def random_share(self) -> float | None:
        """The same share expected of ``top_k`` neighbours drawn at random from the other papers."""
        linked = self.linked_queries
        if not linked:
            return None
        return float(np.mean([len(self.links[self.query_rows[p]]) / (len(self.ids) - 1) for p in linked]))

    # Output -----------------------------------------------------------------------------------------------

    def format(self, limit: int | None = None, title_width: int = 90) -> str:
        """The neighbours as text: a header, then each query paper and its neighbours.

        A neighbour reads ``score [id] title``, and ``cites/cited`` when the pair is a citation link.

        Args:
            limit: print only that many query papers: the ones with most citation links when links are known,
                else the first.
            title_width: the characters a title is cut at.
        """
        positions = list(range(len(self)))
        if limit is not None and limit < len(positions):
            if self.links is not None:
                positions.sort(
                    key=lambda p: (-len(self.links[self.query_rows[p]]), paper_id_order(self.ids[self.query_rows[p]]))
                )
            positions = positions[:limit]
        lines = [
            f"Data:  {self.source}: {len(self.ids)} papers"
            + (f" ({len(self.skipped)} record(s) skipped, see the log)" if self.skipped else ""),
            f"Model: {self.model}" + (f" (revision {self.revision})" if self.revision else ""),
            f"{self.top_k} nearest neighbours by cosine of {len(self)} query paper(s)"
            + (f"; {len(positions)} shown" if len(positions) < len(self) else ""),
            "",
        ]
        for position in positions:
            row = self.query_rows[position]
            neighbours = self._neighbours(position)
            lines.append(f"[{self.ids[row]}] {_shown(self.titles[row], title_width)}")
            if self.links is not None:
                found = sum(n["linked"] for n in neighbours)
                lines.append(
                    f"  {len(self.links[row])} citation link(s); "
                    f"{found} of its {len(neighbours)} nearest neighbours are among them"
                )
            for neighbour in neighbours:
                mark = f" {'cites/cited' if neighbour['linked'] else '':<11}" if self.links is not None else ""
                lines.append(
                    f"  {neighbour['rank']:>2}. {neighbour['score']:.3f}{mark} [{neighbour['paper_id']}] "
                    f"{_shown(neighbour['title'], title_width)}"
                )
            lines.append("")
        if self.links is not None:
            share, chance = self.link_share, self.random_share
            lines.append(
                f"Share of citation links among the {self.top_k} nearest neighbours, over the "
                f"{len(self.linked_queries)} query papers with at least one link: {share:.3f} "
                f"(random neighbours: {chance:.4f}, {share / chance:.0f}x)"
                if share is not None and chance
                else "no citation links among the query papers to score"
            )
        return "\n".join(lines).rstrip("\n")

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Writes the neighbours atomically as ``.jsonl``, ``.csv`` or ``.tsv``.

        ``.jsonl`` has one :meth:`records` line per query paper. ``.csv`` and ``.tsv`` have one row per
        (query, neighbour): ``query_id, query_title, rank, paper_id, title, score[, linked], model, revision``.

        Raises:
            FileExistsError: ``path`` exists and ``overwrite`` is false.
            ValueError: another suffix.
        """
        path = check_output(path, overwrite=overwrite)
        with atomic_path(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as handle:
            if path.suffix.lower() == ".jsonl":
                for record in self.records():
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            else:
                writer = csv.writer(handle, delimiter=_DELIMITERS.get(path.suffix.lower(), ","))
                linked = self.links is not None
                writer.writerow(
                    [
                        "query_id",
                        "query_title",
                        "rank",
                        "paper_id",
                        "title",
                        "score",
                        *(["linked"] if linked else []),
                        "model",
                        "revision",
                    ]
                )
                for record in self.records():
                    for n in record["neighbours"]:
                        writer.writerow(
                            [
                                record["paper_id"],
                                record["title"],
                                n["rank"],
                                n["paper_id"],
                                n["title"],
                                repr(n["score"]),
                                *([int(n["linked"])] if linked else []),
                                record["model"],
                                _revision_text(record["revision"]),
                            ]
                        )
        return path


def _revision_text(revision: str | list[str | None] | None) -> str:
    """A revision in one CSV cell: empty for none, an ensemble's members' joined by spaces."""
    if isinstance(revision, list):
        return " ".join(r or "-" for r in revision)
    return revision or ""


def _shown(title: str, width: int) -> str:
    """A title on one line, cut at ``width`` characters.

    arXiv's titles keep their line breaks as runs of spaces.
    """
    title = " ".join(title.split())
    return title if len(title) <= width else title[: width - 1] + "…"


def check_output(path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """``path`` as a Path, when a neighbours file may be written there.

    That needs a suffix of :data:`OUTPUT_SUFFIXES`, and no file there unless ``overwrite``. It is checked before any
    embedding, so a run never ends on a refusal.
    """
    path = refuse_replacing_file(path, overwrite=overwrite)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ValueError(f"{path}: unsupported neighbours output; use a {', '.join(OUTPUT_SUFFIXES)} file")
    return path


@dataclass
class Collection:
    """Papers to search: records in order, a description, citation links if known, skipped records."""

    source: str
    papers: list[Mapping[str, Any]]
    links: set[tuple[str, str]] | None = None
    skipped: list[PaperProblem] = field(default_factory=list)


def read_collection(
    papers: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | Any,
    *,
    id_field: str | None = None,
    skip_invalid: bool = False,
    smart_links: str = "cacm",
    text_fields: Sequence[str] = TEXT_FIELDS,
) -> Collection:
    """The papers of a papers file or of records given in Python, checked.

    The papers of a papers file in any layout :func:`~sciembed.data.papers.read_papers` reads (``.jsonl`` / ``.json`` /
    ``.csv`` / ``.parquet``, a folder of Parquet parts, or a SMART collection: a folder holding one ``*.all`` file, or
    the file, its ``.X`` citations read as ``smart_links`` says, a file's papers' ``text_fields`` checked), or given as
    records (a list, generator or pandas DataFrame, checked as a file's records are:
    :func:`~sciembed.data.papers.paper_records`).
    """
    if not isinstance(papers, (str, os.PathLike)):
        given = paper_records(papers, id_field=id_field, skip_invalid=skip_invalid, text_fields=text_fields)
        _log_skipped(given.path, given.skipped)
        return Collection(f"{len(given.papers)} papers given", given.papers, None, given.skipped)
    from ..data.papers import read_papers

    path = Path(papers)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such papers file or folder")
    read = read_papers(
        path, id_field=id_field, skip_invalid=skip_invalid, text_fields=text_fields, smart_links=smart_links
    )
    if read.links is not None:  # a SMART collection, named by its document file; its reader logs what it skipped
        return Collection(f"SMART collection {read.path}", read.papers, read.links, read.skipped)
    _log_skipped(str(path), read.skipped)
    return Collection(str(path), read.papers, None, read.skipped)


def _log_skipped(source: str, skipped: Sequence[PaperProblem]) -> None:
    if skipped:
        logger.warning(
            "%s: skipped %d invalid record(s):\n  %s", source, len(skipped), "\n  ".join(map(str, skipped[:20]))
        )


def read_citation_pairs(path: str | os.PathLike[str]) -> set[tuple[str, str]]:
    """The (citing, cited) pairs of an edge list.

    The list is a CSV / TSV with a ``citing,cited`` header, or SNAP's lines.
    """
    from ..data.edges import read_edge_list

    edges = read_edge_list(path)
    return set(zip(edges.citing.to_pylist(), edges.cited.to_pylist()))


def neighbours(
    model: ModelArgument = None,
    papers: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | Any = None,
    *,
    top_k: int = 10,
    query_ids: str | int | Iterable[str | int] | None = None,
    embeddings: str | os.PathLike[str] | None = None,
    citations: str | os.PathLike[str] | Iterable[tuple[str, str]] | None = None,
    reading: PaperReading | None = None,
    ivf: IVFSettings | None = None,
    index: PaperIndex | str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    **removed: Any,
) -> NeighboursResult:
    """The ``top_k`` nearest neighbours (cosine) of the query papers among all papers of a collection.

    The model comes first, as in :func:`sciembed.encode`: ``neighbours(model, papers)``. ``neighbours(None, papers)``
    or ``neighbours(papers=papers)`` embeds with the default model. ``neighbours(papers=papers, embeddings=file)``
    reads the vectors instead. A model with options (device, max_length, pooling, backend, revision, ...) is loaded
    first with :meth:`sciembed.Encoder.from_pretrained` and passed.

    Args:
        model: the model that embeds the papers: a ready :class:`~sciembed.encode.Encoder`, a Hub id or local folder
            (loaded with :meth:`sciembed.Encoder.from_pretrained`'s defaults), a function that returns an encoder, or
            ``None`` for the embedded all-MiniLM-L6-v2. A name or function is loaded after the papers and query ids
            are checked. A multi-format model embeds them in its proximity format. Leave it ``None`` when
            ``embeddings`` are given.
        papers: a papers file (``.jsonl`` / ``.json`` / ``.csv`` / ``.parquet`` with ``paper_id``, ``title``,
            ``abstract``: :func:`~sciembed.data.papers.read_papers`), a SMART collection (a folder holding a
            ``*.all`` file such as ``cacm/``, or the file), or paper records (a list, generator or pandas DataFrame,
            each record with an id no other has, checked as a file's records are:
            :func:`~sciembed.data.papers.paper_records`).
        top_k: neighbours per query paper.
        query_ids: the query papers (default: every paper), in the order the result lists them. One id (a string
            or an integer) is one query paper. Ids that are not papers of the collection are an error naming them,
            raised before anything is embedded.
        embeddings: read the vectors from this embedding file (``.jsonl`` / ``.npy`` / ``.parquet``, or a folder of
            Parquet parts, as ``sciembed embed`` writes) instead of embedding. It must hold a vector for every paper
            (extra vectors are ignored).
        citations: citation links to mark among the neighbours: an edge list file (CSV / TSV with a
            ``citing,cited`` header, or SNAP's lines) or (citing, cited) pairs. A SMART collection brings its own.
        reading: how the papers are read (:class:`~sciembed.data.papers.PaperReading`). ``id_field`` is the papers
            file's id column. ``skip_invalid`` skips invalid records (and, with ``embeddings``, papers without a
            vector), counts and reports them, instead of stopping. ``smart_links`` says how a SMART collection's
            ``.X`` lines are read. ``text_fields`` are the paper fields that make a paper's text, in order (default:
            title and abstract), a papers file's checked as it is read, before the model loads.
        ivf: search an inverted-file index instead of the exact one (large collections).
        index: search this paper index (a :class:`~sciembed.PaperIndex` or its folder) instead of embedding: the
            results are those of ``PaperIndex.search(ids=...)``. Its papers must be papers of ``papers``.
        batch_size: texts per forward pass (default: the encoder's).
        show_progress_bar: show progress while embedding (``None``: when the ``sciembed`` logger shows INFO).

    Raises:
        UnknownQueryError: query ids that are not papers of the collection (a KeyError and a ValueError, the
            message counts and names them).
        ValueError: papers without a vector in ``embeddings`` (unless ``skip_invalid``), fewer than two papers,
            ``top_k < 1``. Readers' errors name the file, line and id
            (:class:`~sciembed.data.papers.InvalidPaperError`), for records their position.
        TypeError: ``papers`` or ``query_ids`` of a type not taken (a text among the records, bytes, a number, ...).
            The papers given where the model goes (first), or an encoder where the papers go. An encoder option
            (``device=``, ``pooling=``, ...), naming :meth:`sciembed.Encoder.from_pretrained`.
    """
    refuse_encoder_options("neighbours", removed, moved=MOVED_JOB_OPTIONS)
    reading = reading if reading is not None else PaperReading()
    text_fields = reading.text_fields
    _check_order(model, papers)
    if top_k < 1:
        raise ValueError(f"top_k must be positive, got {top_k}")
    if embeddings is not None and model is not None:
        raise ValueError(
            "give a model (to embed the papers) or embeddings (their vectors, read from a file), not both"
        )
    if embeddings is not None and text_fields:
        raise ValueError(
            "text_fields (--text-fields) choose the text a model embeds; embeddings read from a file have none"
        )
    fields = text_field_names(text_fields) if text_fields else TEXT_FIELDS
    collection = read_collection(papers, **{**reading.options(), "text_fields": fields})
    records = collection.papers
    ids = [str(p["paper_id"]) for p in records]
    position = {paper_id: i for i, paper_id in enumerate(ids)}
    wanted = paper_id_list(query_ids, what="query_ids") if query_ids is not None else None
    if wanted is not None:
        _check_query_ids(wanted, position, collection)
    _check_size(ids, collection)

    skipped = list(collection.skipped)
    if index is not None:
        query_rows = np.array([position[q] for q in wanted] if wanted is not None else range(len(ids)), dtype=np.int64)
        indices, scores, searched, revision = _index_neighbours(index, ids, query_rows, top_k, model, embeddings)
        links = _link_sets(collection.links, citations, position)
        titles = [str(p.get("title") or "") for p in records]
        return NeighboursResult(
            collection.source, searched, ids, titles, query_rows, indices, scores, links, skipped, revision
        )
    if embeddings is not None:
        from ..index.model import checked_sidecar
        from ..io import vectors_of

        vectors, absent, extra = vectors_of(
            ids,
            embeddings,
            source=collection.source,
            remedy="embed the same papers file (sciembed embed), or pass --skip-invalid (skip_invalid=True) to leave "
            "those papers out",
            allow_missing=reading.skip_invalid,
        )
        if absent:
            present = set(ids) - set(absent)
            skipped += [
                PaperProblem(str(embeddings), "no vector", "paper without a vector", paper_id) for paper_id in absent
            ]
            logger.warning("%s: no vector for %d paper(s), left out: %s", embeddings, len(absent), _named(absent))
            records = [p for p, paper_id in zip(records, ids) if paper_id in present]
            ids = [paper_id for paper_id in ids if paper_id in present]
            position = {paper_id: i for i, paper_id in enumerate(ids)}
            if wanted is not None:
                _check_query_ids(wanted, position, collection, reason=f"without a vector in {embeddings}")
            _check_size(ids, collection)
        if extra > 0:
            logger.info("%s: %d vector(s) of papers not in %s ignored", embeddings, extra, collection.source)
        stamp = checked_sidecar(embeddings)
        model_name = stamp.name if stamp is not None else f"vectors read from {embeddings}"
        revision = None if stamp is None else stamp.revision
    else:
        encoder = resolve_encoder(model)
        if fields != TEXT_FIELDS:
            from ..encoders import WindowedEncoder, WindowSettings

            encoder = WindowedEncoder(encoder, WindowSettings(text_fields=fields, windows=False))
        logger.info("embedding %d papers from %s with %s", len(records), collection.source, encoder.name_or_path)
        vectors = encoder.encode_document(
            records, batch_size=batch_size, show_progress_bar=progress_enabled(show_progress_bar)
        )
        model_name, revision = encoder.name_or_path, encoder.revision

    query_rows = np.array([position[q] for q in wanted] if wanted is not None else range(len(ids)), dtype=np.int64)
    indices, scores = faiss_neighbours(vectors, top_k, queries=query_rows, ivf=ivf)
    links = _link_sets(collection.links, citations, position)
    return NeighboursResult(
        collection.source,
        model_name,
        ids,
        [str(p.get("title") or "") for p in records],
        query_rows,
        indices,
        scores,
        links,
        skipped,
        revision,
    )


def _index_neighbours(
    index: PaperIndex | str | os.PathLike[str], ids: list[str], query_rows: np.ndarray, top_k: int, model, embeddings
) -> tuple[np.ndarray, np.ndarray, str, str | None]:
    """The neighbours of the query papers from a paper index.

    Returns positions into ``ids``, scores, a description and the revision of the index's model.
    """
    from ..index import PaperIndex

    if model is not None or embeddings is not None:
        raise ValueError("give an index (--index) or a model / embeddings to search, not both")
    searched = index if isinstance(index, PaperIndex) else PaperIndex.load(index)
    found = searched.search(ids=[ids[row] for row in query_rows], top_k=top_k)
    position = {paper_id: i for i, paper_id in enumerate(ids)}
    neighbour_ids = [paper_id for row in found.ids for paper_id in row]
    outside = [paper_id for paper_id in dict.fromkeys(neighbour_ids) if paper_id not in position]
    if outside:
        raise ValueError(
            f"{searched.folder} holds {len(outside)} paper(s) that are not among the papers given: {_named(outside)}; "
            "give the papers the index was built from"
        )
    indices = np.array([[position[paper_id] for paper_id in row] for row in found.ids], dtype=np.int64)
    revision = searched.model.revision if searched.model else None
    return indices, found.scores[:, : indices.shape[1]], f"index {searched.folder} ({searched.kind})", revision


def _check_order(model: Any, papers: Any) -> None:
    """Refuse papers given where the model goes, and an encoder where the papers go.

    Refuse papers where the model goes (records, a file, a SMART collection, a name ending as a papers file does) and
    an encoder where the papers go.
    """
    order = (
        "neighbours(model, papers, ...) takes the model first (None for the embedded all-MiniLM-L6-v2, or "
        "neighbours(papers=..., embeddings=...) for vectors read from a file)"
    )
    if isinstance(papers, Encoder):
        raise TypeError(f"{order}; got an encoder as papers")
    if model is not None and not isinstance(model, (str, os.PathLike, Encoder)) and not _is_loader(model):
        raise TypeError(f"{order}; got {type(model).__name__} as the model (a Hub id, local folder or Encoder)")
    if isinstance(model, (str, os.PathLike)):
        from ..data.smart import is_smart_collection

        path = Path(model)
        named = path.suffix.lower() in (*SUPPORTED_SUFFIXES, ".all") and not path.is_dir()
        if named or path.is_file() or is_smart_collection(path):
            raise TypeError(f"{order}; got the papers {str(model)!r} as the model")


def _is_loader(model: Any) -> bool:
    """Whether ``model`` is a function that loads an encoder.

    An encoder, a name or records are not.
    """
    return callable(model) and not isinstance(model, (Encoder, type))


def _check_query_ids(
    wanted: list[str], position: Mapping[str, int], collection: Collection, reason: str | None = None
) -> None:
    unknown = [q for q in wanted if q not in position]
    if not unknown:
        return
    skipped = {p.paper_id for p in collection.skipped if p.paper_id is not None}
    among_skipped = [q for q in unknown if q in skipped]
    why = reason or f"not among the {len(position)} papers of {collection.source}"
    note = (
        f" ({len(among_skipped)} of them skipped as invalid records: {_named(among_skipped)})" if among_skipped else ""
    )
    raise UnknownQueryError(f"{len(unknown)} query id(s) {why}: {_named(unknown)}{note}", unknown)


def _check_size(ids: Sequence[str], collection: Collection) -> None:
    if len(ids) < 2:
        raise ValueError(f"{collection.source}: {len(ids)} paper(s) to search; neighbours need at least two")


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:_SHOWN_IDS])
    return shown + (f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")


def _link_sets(
    collection_links: set[tuple[str, str]] | None, citations, position: Mapping[str, int]
) -> list[set[int]] | None:
    pairs: set[tuple[str, str]] | None = None if collection_links is None else set(collection_links)
    if citations is not None:
        given = (
            read_citation_pairs(citations)
            if isinstance(citations, (str, os.PathLike))
            else {(str(a), str(b)) for a, b in citations}
        )
        pairs = given if pairs is None else pairs | given
    if pairs is None:
        return None
    links: list[set[int]] = [set() for _ in position]
    outside = 0
    for a, b in pairs:
        if a in position and b in position and a != b:
            links[position[a]].add(position[b])
            links[position[b]].add(position[a])
        else:
            outside += 1
    if outside:
        logger.info(
            "%d citation pair(s) not between two searched papers (or self-citations) left out of the link counts",
            outside,
        )
    return links
