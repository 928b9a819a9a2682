"""Evaluation on your own files: a labelled CSV or a qrels file over papers.

Both are read over a papers file, and neither needs a benchmark layout to be built.

``classification`` (``--benchmark classification --data labels.csv --papers papers.jsonl``): a CSV (or TSV) with a
header naming the paper id column (``paper_id``, or ``pid`` / ``id`` / ``corpus_id`` / ``doc_id``) and the label
column (``label``, or ``class_label`` / ``category`` / ``class``), one label per paper, and optionally a ``split``
column (``train``, ``test``, ``val``, ``dev`` / ``validation`` read as ``val``). Without a split column the rows are
split at random, stratified by label (``test_size``, ``seed``, labels with a single paper cannot be split and are
refused, or left out with ``skip_invalid``). Scored with SciDocs' protocol for MAG / MeSH: a linear SVM with the
squared hinge, C from ``logspace(-4, 2, 7)`` by 3-fold grid search on the training rows, macro-F1 on the test rows
(:data:`~sciembed.evaluation.supervised.SCIDOCS_CLASSIFICATION`).

``retrieval`` (``--benchmark retrieval --data qrels.txt --papers papers.jsonl [--queries queries.jsonl]``): judgements
one a line, ``qid 0 docid rel`` (TREC, as SciDocs' ``.qrel`` files) or ``qid docid rel`` (BEIR's ``qrels/*.tsv``),
fields separated by tabs, commas or spaces, ``#`` lines ignored. Relevance an integer on every line (graded allowed,
>= 1 relevant). A first line is a header only when it names the columns (``query-id corpus-id score``, ``qid docid
rel``). Any other first line is a judgement, read by the same rule as the rest. The query comes first: a file whose
shape says the columns are swapped (:func:`~sciembed.data.judgements.swapped_columns`) is refused unless
``qrels_columns`` states the order (``document-query`` reads it swapped back). Documents are papers of the papers
file. Queries are papers of the papers file too (their text is the paper's, embedded in the proximity format) unless
a queries file gives them as text (``.jsonl``: ``{"_id" | "query_id" | "id", "text" | "query"}``, BEIR's
``queries.jsonl`` as it is, ``.tsv``: ``id<TAB>text``), embedded as search queries. ``candidates`` says what a query
ranks:

- ``all`` (default): every paper of the papers file, by cosine, the best 1,000 kept (BEIR's depth, trec_eval's
  default), scored by pytrec_eval: MAP, nDCG, nDCG@10, recall@100 first. For judgements that list only what is
  relevant (most qrels users write).
- ``judged``: only the query's judged documents, by minus the Euclidean distance (SciDocs' proximity protocol, with
  its 5-decimal scores, for paper queries, SciRepEval's search protocol for text queries), MAP and nDCG first. For
  SciDocs-style qrels that list the negatives (relevance 0) a query is ranked against.

Both then report R-precision and nDCG@k, P@k and recall@k (:func:`~sciembed.evaluation.ranking.ranking_measures`),
with every query's values.

In both, a query paper is never its own candidate: a judgement of a query paper to itself is left out of the ranking
and of the judgements scored, counted in the task's ``skipped`` and logged.

Rows naming a paper (or query) that the papers (or queries) file lacks are refused, naming the file, line and id, or
counted, reported and left out with ``skip_invalid``, as the benchmark readers do. Malformed lines stop at once.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..data.judgements import QRELS_COLUMNS, QrelsColumns, check_qrels_columns
from ..data.papers import TEXT_FIELDS, InvalidPaperError, PaperProblem, read_papers
from ..io import RepeatedKeyError, json_error, loads_json, unknown_key
from .benchmarks.base import Candidates, Similarity
from .supervised import SCIDOCS_CLASSIFICATION
from .tasks import ClassificationTask, PaperSearchTask, ProximityTask, SearchTask, Task

logger = logging.getLogger(__name__)

#: Header names of a labels file's id and label columns, in order of preference (compared without case).
LABEL_ID_COLUMNS = ("paper_id", "pid", "id", "corpus_id", "doc_id")
LABEL_COLUMNS = ("label", "class_label", "category", "class")
SPLIT_COLUMN = "split"
_SPLITS = {"train": "train", "test": "test", "val": "val", "dev": "val", "validation": "val", "valid": "val"}
#: What a qrels query ranks (``candidates``).
CANDIDATES = tuple(Candidates)
#: Headline measures of a whole-collection ranking (as CACM's search task) and of a judged-candidates ranking (as
#: SciDocs); the standard set follows them.
ALL_MEASURES = ("map", "ndcg", "ndcg_cut_10", "recall_100")
JUDGED_MEASURES = ("map", "ndcg")
#: Papers each query keeps of a whole-collection ranking (BEIR's depth, trec_eval's default).
TOP_K = 1000
_QUERY_ID_FIELDS = ("_id", "query_id", "id")
_QUERY_TEXT_FIELDS = ("text", "query")
_QUERY_HEADERS = ("query_id", "query-id", "qid", "id", "_id")
#: The keys a ``.jsonl`` query line may hold: id, text, a facet's paper and name, BEIR's title and metadata.
_QUERY_KEYS = (*_QUERY_ID_FIELDS, *_QUERY_TEXT_FIELDS, "paper_id", "facet", "title", "metadata")
#: Names a qrels header gives its query, document and relevance columns (compared without case, ``-`` as ``_``).
_QRELS_QUERY_HEADERS = frozenset({"query_id", "qid", "q_id", "query", "queryid", "topic", "topic_id", "_id"})
_QRELS_DOCUMENT_HEADERS = frozenset(
    {
        "corpus_id",
        "doc_id",
        "docid",
        "doc",
        "docno",
        "document",
        "document_id",
        "paper_id",
        "pid",
        "cand_id",
        "candidate",
    }
)
_QRELS_SCORE_HEADERS = frozenset(
    {"score", "rel", "relevance", "relevance_score", "label", "grade", "rating", "judgement", "judgment", "qrel"}
)
_QRELS_LAYOUTS = {3: "'qid docid rel'", 4: "'qid 0 docid rel'"}
#: A relevance grade as trec_eval reads one: ASCII digits, a minus sign allowed (not ``+1``, ``1_0`` or ``1.5``).
_INTEGER = re.compile(r"-?[0-9]+")


# Readers ------------------------------------------------------------------------------------------------


def read_labels(path: str | os.PathLike[str]) -> tuple[dict[str, list], list[int]]:
    """Read a labels file into its columns, with the line of each row.

    The columns are ``paper_id``, ``label`` and ``split`` (``None`` when the file has no split column). Labels are
    strings, or integers when every label is one.

    Raises:
        ValueError: no header naming an id and a label column, a row with fewer fields than the header, an empty id
            or label, a split other than train / test / val, a paper labelled twice (file and line named).
    """
    path = Path(path)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        first = handle.readline()
        delimiter = "\t" if path.suffix.lower() == ".tsv" or "\t" in first else ","
        handle.seek(0)
        reader = csv.reader(handle, delimiter=delimiter)
        header = [name.strip().lower() for name in next(reader, [])]
        repeated = [name for name, count in Counter(header).items() if count > 1 and name]
        if repeated:
            raise ValueError(
                f"{path}, line 1: the column {repeated[0]!r} is named twice; which one holds the values is unclear: "
                "rename or remove one"
            )
        id_column = next((header.index(n) for n in LABEL_ID_COLUMNS if n in header), None)
        label_column = next((header.index(n) for n in LABEL_COLUMNS if n in header), None)
        if id_column is None or label_column is None:
            raise ValueError(
                f"{path}, line 1: expected a header naming the paper id column ({', '.join(LABEL_ID_COLUMNS)}) and "
                f"the label column ({', '.join(LABEL_COLUMNS)}), e.g. 'paper_id,label'; got "
                f"{delimiter.join(header)[:80]!r}"
            )
        split_column = header.index(SPLIT_COLUMN) if SPLIT_COLUMN in header else None
        needed = max(c for c in (id_column, label_column, split_column) if c is not None) + 1
        columns: dict[str, list] = {"paper_id": [], "label": [], "split": [] if split_column is not None else None}
        lines: list[int] = []
        first_line: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < needed:
                raise ValueError(
                    f"{path}, line {line}: {len(row)} field(s), the header names {len(header)}: "
                    f"{delimiter.join(row)[:80]!r}"
                )
            paper_id, label = row[id_column].strip(), row[label_column].strip()
            if not paper_id or not label:
                raise ValueError(
                    f"{path}, line {line}: empty {'paper id' if not paper_id else 'label'}"
                    + (f" (paper_id {paper_id!r})" if paper_id else "")
                )
            if paper_id in first_line:
                raise ValueError(
                    f"{path}, line {line} (paper_id {paper_id!r}): labelled again (first at line "
                    f"{first_line[paper_id]}); one label per paper (multi-label files are not read)"
                )
            first_line[paper_id] = line
            if split_column is not None:
                split = _SPLITS.get(row[split_column].strip().lower())
                if split is None:
                    raise ValueError(
                        f"{path}, line {line} (paper_id {paper_id!r}): split {row[split_column].strip()!r}; "
                        f"use one of {', '.join(_SPLITS)}"
                    )
                columns["split"].append(split)
            columns["paper_id"].append(paper_id)
            columns["label"].append(label)
            lines.append(line)
    if not lines:
        raise ValueError(f"{path}: no labelled rows after the header")
    if all(label.lstrip("-").isdigit() for label in columns["label"]):
        columns["label"] = [int(label) for label in columns["label"]]
    return columns, lines


def read_qrels(path: str | os.PathLike[str], *, qrels_columns: str | None = None) -> tuple[dict[str, list], list[int]]:
    """Read a qrels file of ``qid 0 docid rel`` (TREC) or ``qid docid rel`` lines.

    Fields are split at tabs, else commas, else spaces. Blank and ``#`` lines are skipped.
    The first line is a header when it names the columns (a query, a document
    and a relevance name, as ``query-id corpus-id score`` or ``qid 0 docid rel``). Every other line is a judgement,
    its relevance an integer (graded allowed, negative allowed).

    Args:
        path: the file.
        qrels_columns: the column order, when stated (``query-document``, or ``document-query``: the columns are
            returned as they stand, for :func:`~sciembed.data.judgements.check_qrels_columns` to swap). Unstated, a
            header naming the document column first is refused.

    Returns:
        columns ``query_id``, ``cand_id``, ``score`` as the lines give them, and the line of each row.

    Raises:
        ValueError: a line of another number of fields than the first, or of neither 3 nor 4, a relevance that is not
            an integer (file and line named, when no line has an integer there, the likely column order), an empty
            id, an unstated order with a header naming the document column first, or every judgement naming one
            document (a document in another field).
    """
    columns: dict[str, list] = {"query_id": [], "cand_id": [], "score": []}
    lines: list[int] = []
    width = header = None
    document_first = qrels_columns in QRELS_COLUMNS and QrelsColumns(qrels_columns) is QrelsColumns.DOCUMENT_QUERY
    for line_number, text, fields in _qrels_lines(path):
        if len(fields) not in (3, 4) or (width is not None and len(fields) != width):
            expected = (
                "'qid 0 docid rel' (4 fields) or 'qid docid rel' (3 fields)"
                if width is None
                else f"{width} fields as the lines before"
            )
            raise ValueError(
                f"{path}, line {line_number}: a qrels line is {expected}, got {len(fields)}: {text[:80]!r}"
            )
        query, candidate, relevance = _qrels_columns(fields)
        named = _header_order(fields) if width is None else None
        if named is QrelsColumns.DOCUMENT_QUERY and qrels_columns is None:
            raise ValueError(
                f"{path}, line {line_number}: the header names the document column first, {text[:80]!r}: put the "
                "query column first, or pass --qrels-columns document-query (qrels_columns='document-query')"
            )
        if named is not None:
            width, header = len(fields), f"line {line_number}, {text[:80]!r}, was read as a header"
            continue
        width = len(fields)
        if not _INTEGER.fullmatch(relevance):
            raise ValueError(
                f"{path}, line {line_number}: relevance must be an integer, got {relevance!r}"
                + _relevance_hint(path, width)
            )
        score = int(relevance)
        if not query or not candidate:
            raise ValueError(
                f"{path}, line {line_number}: empty {'query' if not query else 'document'} id: {text[:80]!r}"
            )
        columns["query_id"].append(query)
        columns["cand_id"].append(candidate)
        columns["score"].append(score)
        lines.append(line_number)
    if not lines:
        raise ValueError(f"{path}: no judgements" + (f" ({header})" if header else ""))
    documents = set(columns["cand_id"])
    if len(documents) == 1 and len(set(columns["query_id"])) > 1 and not document_first:
        document = documents.pop()
        field = f"field {width - 1} of {_QRELS_LAYOUTS[width]}"
        same = f"{path}: every judgement names the same document {document!r} ({field})"
        if width == 4 and document.isdigit() and int(document) == 0:
            raise ValueError(
                f"{same}: is the document in another field? (SMART's qrels.text is 'qid docid 0 0': write it as "
                "'qid 0 docid 1')"
            )
        raise ValueError(
            f"{same}: are the query and document columns swapped? One query judged against "
            f"{len(set(columns['query_id']))} documents reads so backwards: swap the columns, or pass --qrels-columns "
            "document-query (qrels_columns='document-query'); else, is the document in another field?"
        )
    if max(columns["score"]) < 1:
        raise ValueError(
            f"{path}: no judgement is relevant: every grade in field {width} of {_QRELS_LAYOUTS[width]} is below 1, "
            "so every query would score 0" + _relevance_hint(path, width, relevant=True)
        )
    return columns, lines


def _names(names: frozenset[str]) -> str:
    return ", ".join(sorted(names))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _qrels_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str, list[str]]]:
    """The number, text and fields of each line of a qrels file.

    Blank lines and ``#`` comments are left out.
    """
    with open(path, encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            text = line.strip()
            if text and not text.startswith("#"):
                parts = text.split("\t") if "\t" in text else text.split(",") if "," in text else text.split()
                yield line_number, text, [part.strip() for part in parts]


def _qrels_columns(fields: list[str]) -> list[str]:
    """The query, document and relevance fields of a 3- or 4-field qrels line."""
    return [fields[0], fields[2], fields[3]] if len(fields) == 4 else fields


def _header_order(fields: list[str]) -> QrelsColumns | None:
    """The column order a line names when its fields are column names, else ``None``.

    ``query-id corpus-id score`` names ``query-document``, and ``corpus-id query-id score`` names ``document-query``.
    """
    first, second, relevance = (f.lower().replace("-", "_").replace(" ", "_") for f in _qrels_columns(fields))
    if relevance not in _QRELS_SCORE_HEADERS:
        return None
    if first in _QRELS_QUERY_HEADERS and second in _QRELS_DOCUMENT_HEADERS:
        return QrelsColumns.QUERY_DOCUMENT
    if first in _QRELS_DOCUMENT_HEADERS and second in _QRELS_QUERY_HEADERS:
        return QrelsColumns.DOCUMENT_QUERY
    return None


def _relevance_hint(path: str | os.PathLike[str], width: int, *, relevant: bool = False) -> str:
    """What a non-integer relevance asks of the user: integer grades, or another column order.

    Another column order is asked for when no judgement line of ``path`` has an integer relevance (``relevant``: a
    relevant one, >= 1) and another field has one on every line."""
    rows, integers, numbers = 0, [0] * width, 0
    for _, _, fields in _qrels_lines(path):
        if len(fields) == width and not (rows == 0 and _header_order(fields)):
            rows += 1
            integers = [
                count + bool(_INTEGER.fullmatch(field) and (not relevant or int(field) >= 1))
                for count, field in zip(integers, fields)
            ]
            numbers += _is_number(fields[-1])
    every_line = [str(index + 1) for index, count in enumerate(integers[:-1]) if count == rows]
    if relevant:
        return (
            f" (field {' / '.join(every_line)} holds a grade of 1 or more on every line): put the columns in the "
            f"order {_QRELS_LAYOUTS[width]}"
            if rows and every_line
            else ": check that the file judges relevant documents (grade 1 or more, as trec_eval reads them)"
        )
    if rows > 1 and integers[-1] == 0 and numbers < rows:
        return (
            f"; no line has an integer relevance in field {width}, where {_QRELS_LAYOUTS[width]} puts it"
            + (f" (field {' / '.join(every_line)} holds an integer on every line)" if every_line else "")
            + ": put the columns in that order"
        )
    return (
        "; relevance grades are integers (>= 1 relevant, as trec_eval reads them): write every grade as one, and a "
        f"header line, if any, as column names ({_QRELS_LAYOUTS[width]}; a query column named one of "
        f"{_names(_QRELS_QUERY_HEADERS)}, a document column one of {_names(_QRELS_DOCUMENT_HEADERS)}, a grade column "
        f"one of {_names(_QRELS_SCORE_HEADERS)})"
    )


@dataclass(frozen=True)
class Query:
    """A text query of a queries file: its text and its line.

    A facet of a paper also names the paper it is (never its own candidate) and the facet's name (the group its
    scores are averaged in)."""

    text: str
    line: int
    paper_id: str | None = None
    facet: str | None = None


def read_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read text queries: query id -> text (:func:`read_query_records` reads the file)."""
    return {query_id: query.text for query_id, query in read_query_records(path).items()}


def read_query_records(path: str | os.PathLike[str]) -> dict[str, Query]:
    """Read text queries from a ``.jsonl`` file or a tab-separated ``id<TAB>text`` file.

    A ``.jsonl`` file holds ``{"_id" | "query_id" | "id": ..., "text" | "query": ...}`` a line. A tab-separated file
    is a ``.tsv`` or ``.txt``, and may open with a header line ``query_id<TAB>text``.

    A ``.jsonl`` query may be a facet of a paper: ``{"query_id": "p1-method", "paper_id": "p1", "facet": "method",
    "text": "..."}``, so that one paper carries several judged queries. The paper is never its own candidate, and
    each facet's scores are averaged apart. Either every query names a facet or none does.

    Raises:
        ValueError: an unsupported suffix, a malformed line, a ``.tsv`` line of other than 2 fields, a query without
            id or text, a repeated id, two id keys (or text keys) giving different values, a text that is not a
            string, a ``paper_id`` that is not a non-empty text or integer, a ``facet`` that is not a non-empty text,
            a facet without its ``paper_id``, a query without a facet among queries with one, a key a query line
            cannot hold (with the key meant) (file, line, key).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".tsv", ".txt"):
        raise ValueError(
            f'{path}: unsupported queries file; use .jsonl ({{"_id", "text"}} a line) or .tsv (id<TAB>text)'
        )
    queries: dict[str, Query] = {}
    first_line: dict[str, int] = {}
    with path.open(encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if suffix == ".jsonl":
                try:
                    record = loads_json(line)
                except (json.JSONDecodeError, RepeatedKeyError) as error:
                    raise ValueError(f"{path}, line {line_number}: {json_error(error)}") from None
                if not isinstance(record, dict):
                    raise ValueError(
                        f"{path}, line {line_number}: expected a JSON object, got {type(record).__name__}"
                    )
                query_id, text, paper_id, facet = _query_record(path, line_number, record)
            else:
                paper_id = facet = None
                fields = line.rstrip("\r\n").split("\t")
                if len(fields) != 2:
                    raise ValueError(
                        f"{path}, line {line_number}: a query line is 'id<TAB>text' (2 tab-separated fields), got "
                        f"{len(fields)}: {line.strip()[:80]!r}"
                        + (
                            "; facet queries (paper_id, facet) are read from a .jsonl queries file only"
                            if len(fields) > 2
                            else ""
                        )
                    )
                if not queries and fields[0].strip().lower() in _QUERY_HEADERS:
                    continue
                query_id, text = fields
            if query_id is None or isinstance(query_id, (bool, dict, list)):
                raise ValueError(
                    f"{path}, line {line_number}: no query id (looked for {' / '.join(_QUERY_ID_FIELDS)})"
                )
            query_id = str(query_id).strip()
            if not text or not text.strip():
                raise ValueError(
                    f"{path}, line {line_number} (query {query_id!r}): no text (looked for "
                    f"{' / '.join(_QUERY_TEXT_FIELDS)})"
                )
            if query_id in first_line:
                raise ValueError(
                    f"{path}, line {line_number} (query {query_id!r}): repeated (first at line {first_line[query_id]})"
                )
            first_line[query_id] = line_number
            queries[query_id] = Query(text.strip(), line_number, paper_id, facet)
    if not queries:
        raise ValueError(f"{path}: no queries")
    faceted = [(query_id, query) for query_id, query in queries.items() if query.facet is not None]
    if faceted and len(faceted) < len(queries):
        query_id, query = next((q, r) for q, r in queries.items() if r.facet is None)
        raise ValueError(
            f"{path}, line {query.line} (query {query_id!r}): no facet, while line {faceted[0][1].line} names one "
            f"({faceted[0][1].facet!r}); give every query a facet, or none"
        )
    return queries


def _query_record(path: Path, line: int, record: dict[str, Any]) -> tuple[Any, str | None, str | None, str | None]:
    """A ``.jsonl`` query line's id, text, paper and facet. Each key checked for what it holds (file, line and key
    named when not).

    Args:
        path: the queries file.
        line: the line's number.
        record: the line's JSON object.
    """
    found = _one_field(path, line, record, _QUERY_ID_FIELDS, "query id")
    unknown = unknown_key(record, _QUERY_KEYS)
    if found is None:
        if unknown is not None:
            raise ValueError(f"{path}, line {line}: {unknown}")
        return None, None, None, None
    key, query_id = found
    if isinstance(query_id, bool) or not isinstance(query_id, (str, int)):
        raise ValueError(
            f"{path}, line {line}: {key} must be a query id (a string or integer), got {_shown(query_id)}"
        )
    named = f"{path}, line {line} (query {str(query_id).strip()!r})"
    if unknown is not None:
        raise ValueError(f"{named}: {unknown}")
    found = _one_field(path, line, record, _QUERY_TEXT_FIELDS, "query text")
    if found is not None and not isinstance(found[1], str):
        raise ValueError(f"{named}: {found[0]} must be a string, the query's text, got {_shown(found[1])}")
    text = None if found is None else found[1]
    paper_id = _facet_field(named, record, "paper_id", (str, int))
    facet = _facet_field(named, record, "facet", (str,))
    if facet is not None and paper_id is None:
        raise ValueError(
            f"{named}: facet {facet!r} without paper_id; a facet query names the paper it is a facet of "
            '("paper_id": ...), which is then never its own candidate: add it'
        )
    return query_id, text, paper_id, facet


def _one_field(
    path: Path, line: int, record: dict[str, Any], names: tuple[str, ...], what: str
) -> tuple[str, Any] | None:
    """The key and value of the field of ``names`` that ``record`` gives.

    It is ``None`` when none does. Two keys giving different values are refused, naming both.
    """
    given = [(name, record[name]) for name in names if record.get(name) not in (None, "")]
    if len({json.dumps(value, sort_keys=True) for _, value in given}) > 1:
        both = ", ".join(f"{name} {_shown(value)}" for name, value in given)
        raise ValueError(f"{path}, line {line}: the {what} is given twice, differently ({both}): keep one key")
    return given[0] if given else None


def _facet_field(named: str, record: dict[str, Any], name: str, kinds: tuple[type, ...]) -> str | None:
    """A query record's ``paper_id`` or ``facet``: ``None`` when absent, else the non-empty text.

    A ``paper_id`` may be a text or an integer, a ``facet`` only a text.
    """
    value = record.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds) or not str(value).strip():
        expected = "a non-empty text" + (" or an integer" if int in kinds else "")
        raise ValueError(f"{named}: {name} must be {expected}, got {_shown(value)}")
    return str(value).strip()


def _shown(value: Any) -> str:
    """``value`` as its JSON text, cut to 40 characters."""
    return json.dumps(value)[:40]


# Tasks ----------------------------------------------------------------------------------------------------


def classification_tasks(
    name: str,
    data: str,
    *,
    papers: str | None,
    split: str = "test",
    test_size: float = 0.5,
    seed: int | None = None,
    skip_invalid: bool = False,
    id_field: str | None = None,
    wanted: set[str] | None = None,
    text_fields: Sequence[str] = TEXT_FIELDS,
    smart_links: str = "cacm",
) -> tuple[list[Task], list[PaperProblem]]:
    """A labels file's classification task over a papers file, and the records left out.

    The module says which records are left out.
    """
    from sklearn.model_selection import train_test_split

    paper_file = _papers(papers, name, skip_invalid, id_field, text_fields, smart_links)
    by_id = {p["paper_id"]: p for p in paper_file.papers}
    columns, lines = read_labels(data)
    problems = [
        PaperProblem(data, f"line {line}", f"paper_id not in {Path(papers).name}", pid)
        for pid, line in zip(columns["paper_id"], lines)
        if pid not in by_id
    ]
    keep = [i for i, pid in enumerate(columns["paper_id"]) if pid in by_id]
    problems = _refused_or_kept(
        problems, skip_invalid, data, len(lines), "label row(s) naming papers not in the papers file"
    )
    task_id = Path(data).stem
    if wanted is not None and task_id not in wanted:
        return [], paper_file.skipped + problems
    ids = [columns["paper_id"][i] for i in keep]
    labels = [columns["label"][i] for i in keep]
    seed = 0 if seed is None else seed
    if columns["split"] is not None:
        splits = [columns["split"][i] for i in keep]
        train = [i for i, s in enumerate(splits) if s == "train"]
        test = [i for i, s in enumerate(splits) if s == split]
        if not train or not test:
            raise ValueError(
                f"{data}: the split column has {dict(Counter(splits))}; training needs 'train' rows and "
                f"scoring '{split}' rows (--split)"
            )
        how = f"split column ({len(train)} train, {len(test)} {split})"
    else:
        if split != "test":
            raise ValueError(f"{data} has no split column: --split {split} needs one (train / test / val rows)")
        if not 0 < test_size < 1:
            raise ValueError(f"test_size must be between 0 and 1, got {test_size}")
        counts = Counter(labels)
        single = {label for label, count in counts.items() if count < 2}
        if single:
            rows = [
                PaperProblem(
                    data,
                    f"line {lines[keep[i]]}",
                    f"label {labels[i]!r} has a single paper; a stratified split needs at least 2 per label",
                    ids[i],
                )
                for i in range(len(ids))
                if labels[i] in single
            ]
            if not skip_invalid:
                shown = "\n  ".join(map(str, rows[:10])) + (
                    f"\n  ... and {len(rows) - 10} more" if len(rows) > 10 else ""
                )
                raise ValueError(
                    f"{len(rows)} label(s) with a single paper cannot be split into train and test:\n  {shown}\n"
                    "(add papers to those labels, give the file a split column, "
                    "or pass --skip-invalid to leave them out)"
                )
            problems += _refused_or_kept(rows, skip_invalid, data, len(lines), "row(s) of labels with a single paper")
            ids, labels = [p for p, y in zip(ids, labels) if y not in single], [y for y in labels if y not in single]
        train, test = train_test_split(list(range(len(ids))), test_size=test_size, stratify=labels, random_state=seed)
        how = f"stratified random split, test_size {test_size}, seed {seed}"
    if len({labels[i] for i in train}) < 2:
        raise ValueError(f"{data}: the training rows hold a single label; a classifier needs two or more")
    logger.info("%s: %d labelled papers, %d labels; %s", data, len(ids), len(set(labels)), how)
    task = ClassificationTask(
        name,
        task_id,
        {pid: by_id[pid] for pid in ids},
        train=([ids[i] for i in train], [labels[i] for i in train]),
        test=([ids[i] for i in test], [labels[i] for i in test]),
        protocol=SCIDOCS_CLASSIFICATION,
        task_id=task_id,
    )
    return [task], paper_file.skipped + problems


def retrieval_tasks(
    name: str,
    data: str,
    *,
    papers: str | None,
    queries: str | None = None,
    candidates: str = Candidates.ALL,
    similarity: str = Similarity.L2,
    skip_invalid: bool = False,
    id_field: str | None = None,
    wanted: set[str] | None = None,
    qrels_columns: str | None = None,
    text_fields: Sequence[str] = TEXT_FIELDS,
    smart_links: str = "cacm",
) -> tuple[list[Task], list[PaperProblem]]:
    """A qrels file's retrieval task over a papers file, and the records left out.

    A queries file, when given, holds the queries. The module says which records are left out. ``similarity`` is the
    proximity score of paper queries ranking their judged candidates (``l2`` as SciDocs). ``qrels_columns`` is the
    order of the query and document columns, when stated (:func:`~sciembed.data.judgements.check_qrels_columns`).
    """
    if candidates not in CANDIDATES:
        raise ValueError(f"unknown candidates {candidates!r}; one of {', '.join(CANDIDATES)}")
    candidates = Candidates(candidates)
    paper_file = _papers(papers, name, skip_invalid, id_field, text_fields, smart_links)
    by_id = {p["paper_id"]: p for p in paper_file.papers}
    records = read_query_records(queries) if queries else None
    texts = {query_id: query.text for query_id, query in records.items()} if records is not None else None
    if records is not None:
        _check_query_papers(queries, records, by_id, Path(papers).name)
    columns, lines = read_qrels(data, qrels_columns=qrels_columns)
    columns = check_qrels_columns(
        data,
        columns,
        qrels_columns=qrels_columns,
        known_queries=texts if texts is not None else by_id,
        known_documents=by_id,
    )
    query_source = Path(queries).name if queries else Path(papers).name
    problems: list[PaperProblem] = []
    qrels: dict[str, dict[str, int]] = {}
    repeated = 0
    first_line: dict[tuple[str, str], int] = {}
    for query, candidate, score, line in zip(columns["query_id"], columns["cand_id"], columns["score"], lines):
        if query not in (texts if texts is not None else by_id):
            problems.append(PaperProblem(data, f"line {line}", f"not in {query_source}", query, id_name="query id"))
        elif candidate not in by_id:
            problems.append(
                PaperProblem(data, f"line {line}", f"not in {Path(papers).name}", candidate, id_name="document id")
            )
        else:
            judged = qrels.setdefault(query, {})
            if candidate in judged and judged[candidate] != score:
                raise ValueError(
                    f"{data}, line {line}: {query!r} judges {candidate!r} {score}, but line "
                    f"{first_line[query, candidate]} judged it {judged[candidate]}; one grade would silently replace "
                    "the other: keep one line per query and document"
                )
            repeated += candidate in judged
            first_line.setdefault((query, candidate), line)
            judged[candidate] = score
    if problems and len(problems) == len(lines):  # every line fails alike: the files' ids, not some rows, are wrong
        hint = (
            f"no judgement names a known query and document: check the column order ({_QRELS_LAYOUTS[3]} or "
            f"{_QRELS_LAYOUTS[4]}) and the id field of {Path(papers).name} (--id-field)"
        )
        problems = [replace(problem, hint=hint) for problem in problems]
    problems = _refused_or_kept(problems, skip_invalid, data, len(lines), "judgement(s) naming unknown ids")
    if repeated:
        logger.warning(
            "%s: %d (query, document) pair(s) judged twice with the same grade, counted once", data, repeated
        )
    if not qrels:
        raise ValueError(f"{data}: no judgement left to score")
    task_id = Path(data).stem
    if wanted is not None and task_id not in wanted:
        return [], paper_file.skipped + problems
    if candidates is Candidates.JUDGED and not any(
        score < 1 for judged in qrels.values() for score in judged.values()
    ):
        logger.warning(
            "%s: every judged document is relevant, so ranking the judged documents alone scores 100; "
            "use --candidates all to rank every paper",
            data,
        )
    judged_ids = {c for judged in qrels.values() for c in judged}
    documents = by_id if candidates is Candidates.ALL else {pid: by_id[pid] for pid in by_id if pid in judged_ids}
    common = dict(qrels=qrels, task_id=task_id)
    task: Task
    if texts is not None:
        query_texts = {q: texts[q] for q in qrels}
        common.update(
            query_papers={q: records[q].paper_id for q in qrels if records[q].paper_id is not None},
            query_groups={q: records[q].facet for q in qrels if records[q].facet is not None},
        )
        if candidates is Candidates.ALL:
            task = SearchTask(
                name,
                task_id,
                documents,
                queries=query_texts,
                measures=ALL_MEASURES,
                similarity="cosine",
                full_corpus=True,
                top_k=TOP_K,
                **common,
            )
        else:  # SciRepEval's search protocol: -L2 over the judged candidates
            task = SearchTask(
                name, task_id, documents, queries=query_texts, measures=JUDGED_MEASURES, similarity="l2", **common
            )
    elif candidates is Candidates.ALL:
        task = PaperSearchTask(
            name,
            task_id,
            documents,
            queries={q: by_id[q] for q in qrels},
            measures=ALL_MEASURES,
            similarity="cosine",
            full_corpus=True,
            top_k=TOP_K,
            **common,
        )
    else:  # SciDocs' proximity protocol
        documents = {pid: by_id[pid] for pid in by_id if pid in judged_ids or pid in qrels}
        task = ProximityTask(
            name,
            task_id,
            documents,
            measures=JUDGED_MEASURES,
            similarity=Similarity(similarity).value,
            score_decimals=5 if similarity == Similarity.L2 else None,
            **common,
        )
    logger.info(
        "%s: %d queries, %d judgements, ranking %s",
        data,
        len(qrels),
        sum(map(len, qrels.values())),
        f"all {len(documents)} papers" if candidates is Candidates.ALL else "the judged papers",
    )
    return [task], paper_file.skipped + problems


def _check_query_papers(path: str, queries: dict[str, Query], papers: dict[str, Any], papers_name: str) -> None:
    """Refuse a facet query naming a paper that the papers file lacks.

    The error names the file, line, query and paper.
    """
    for query_id, query in queries.items():
        if query.paper_id is not None and query.paper_id not in papers:
            raise ValueError(
                f"{path}, line {query.line} (query {query_id!r}): paper_id {query.paper_id!r} is not in "
                f"{papers_name}; a facet query names the paper it is a facet of: correct the paper_id, or add the "
                "paper to the papers file"
            )


def _papers(
    papers: str | None,
    name: str,
    skip_invalid: bool,
    id_field: str | None,
    text_fields: Sequence[str],
    smart_links: str,
):
    if not papers:
        raise ValueError(f"--benchmark {name} needs the papers file the ids name: --papers papers.jsonl (papers=...)")
    read = read_papers(
        papers, id_field=id_field, skip_invalid=skip_invalid, text_fields=text_fields, smart_links=smart_links
    )
    if read.skipped and read.links is None:  # a SMART collection's reader reports its own
        logger.warning(
            "%s: skipped %d invalid record(s): %s", papers, len(read.skipped), "; ".join(map(str, read.skipped[:10]))
        )
    return read


def _refused_or_kept(
    problems: list[PaperProblem], skip_invalid: bool, source: str, rows: int, what: str
) -> list[PaperProblem]:
    """Raise for ``problems`` unless ``skip_invalid``. Else log their count once and return them."""
    if not problems:
        return []
    if not skip_invalid:
        raise InvalidPaperError(problems, what=what)
    logger.warning(
        "%s: left out %d %s of %d: %s", source, len(problems), what, rows, "; ".join(map(str, problems[:5]))
    )
    return problems
