"""The BEIR folder layout (Thakur et al. 2021).

SciFact, TREC-COVID, NFCorpus and SCIDOCS ship in it.

``corpus.jsonl`` holds ``{"_id", "title", "text"}`` a line, ``queries.jsonl`` ``{"_id", "text"}``, and
``qrels/<split>.tsv`` a header ``query-id<TAB>corpus-id<TAB>score`` then one judgement a line. Corpus
documents become papers (``paper_id``, ``title``, ``abstract`` = BEIR's ``text``) so the SPECTER text
convention applies. Qrels use the column names of SciRepEval's test configs (``query_id``,
``cand_id``, ``score``) so one evaluator serves both.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, DatasetDict, Features, Value

from ..io import RepeatedKeyError, json_error, loads_json, unknown_key
from .judgements import check_qrels_columns
from .papers import InvalidPaperError, PaperProblem

logger = logging.getLogger(__name__)

QREL_HEADER = ("query-id", "corpus-id", "score")
#: The keys of a ``queries.jsonl`` line, as BEIR's datasets write them.
QUERY_KEYS = ("_id", "text", "title", "metadata")
QREL_FEATURES = Features({"query_id": Value("string"), "cand_id": Value("string"), "score": Value("int64")})


@dataclass
class BeirDataset:
    """Corpus (as papers), queries, and qrels per split file."""

    path: str
    corpus: Dataset
    queries: Dataset
    qrels: DatasetDict
    stats: Counter = field(default_factory=Counter)
    skipped: list[PaperProblem] = field(default_factory=list)


def read_beir(
    folder: str | os.PathLike[str], *, skip_invalid: bool = False, qrels_columns: str | None = None
) -> BeirDataset:
    """Read a BEIR-layout folder: ``corpus.jsonl``, ``queries.jsonl`` and every ``qrels/*.tsv``.

    Args:
        folder: the dataset folder.
        skip_invalid: skip bad corpus / query records and qrels naming unknown queries or documents
            (counted, logged and listed in ``skipped``) instead of raising.
        qrels_columns: the order of the qrels files' query and document columns, when stated
            (:func:`~sciembed.data.judgements.check_qrels_columns`). Unstated, a file whose ids or shape say they
            are swapped is refused.

    Raises:
        FileNotFoundError: a required file is missing.
        ValueError: a qrels file without the BEIR header, or a line without 3 fields or with a
            non-integer score (file and line named). A qrels file whose columns look swapped.
        InvalidPaperError: a bad record (a query line with a key other than :data:`QUERY_KEYS` among them) or a
            qrel naming an unknown id, and ``skip_invalid`` is false.
    """
    folder = Path(folder)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels"):
        if not (folder / name).exists():
            raise FileNotFoundError(
                f"{folder}: no {name} (a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv)"
            )
    problems: list[PaperProblem] = []
    corpus = _read_jsonl(folder / "corpus.jsonl", ("title", "text"), problems)
    queries = _read_jsonl(folder / "queries.jsonl", ("text",), problems, keys=QUERY_KEYS)
    if problems and not skip_invalid:
        raise InvalidPaperError(problems[:1])
    stats: Counter = Counter(corpus=len(corpus["_id"]), queries=len(queries["_id"]))
    known = {"query_id": np.array(queries["_id"], dtype=str), "cand_id": np.array(corpus["_id"], dtype=str)}

    splits: dict[str, Dataset] = {}
    qrel_files = sorted((folder / "qrels").glob("*.tsv"))
    if not qrel_files:
        raise FileNotFoundError(f"{folder / 'qrels'}: no <split>.tsv files")
    unknown: list[PaperProblem] = []
    for path in qrel_files:
        columns, lines = _read_qrels(path)
        columns = check_qrels_columns(
            path,
            columns,
            qrels_columns=qrels_columns,
            known_queries=set(queries["_id"]),
            known_documents=set(corpus["_id"]),
            layout="'query-id<TAB>corpus-id<TAB>score'",
        )
        found = {c: np.isin(np.array(columns[c], dtype=str), known[c]) for c in ("query_id", "cand_id")}
        keep = found["query_id"] & found["cand_id"]
        for index in np.flatnonzero(~keep):
            column = "query_id" if not found["query_id"][index] else "cand_id"
            where = "queries.jsonl" if column == "query_id" else "corpus.jsonl"
            unknown.append(
                PaperProblem(str(path), f"line {lines[index]}", f"{column} not in {where}", columns[column][index])
            )
        stats[f"{path.stem}_qrels"] = len(lines)
        stats[f"{path.stem}_unknown_ids"] = int(np.count_nonzero(~keep))
        data = Dataset.from_dict(columns, features=QREL_FEATURES)
        splits[path.stem] = data if keep.all() else data.select(np.flatnonzero(keep))
    if unknown and not skip_invalid:
        raise InvalidPaperError(unknown)
    problems += unknown
    if problems:
        logger.warning("%s: skipped %d record(s): %s", folder, len(problems), "; ".join(map(str, problems[:10])))
    logger.info("%s: %s", folder, dict(stats))
    papers = Dataset.from_dict({"paper_id": corpus["_id"], "title": corpus["title"], "abstract": corpus["text"]})
    query_set = Dataset.from_dict({"query_id": queries["_id"], "text": queries["text"]})
    return BeirDataset(str(folder), papers, query_set, DatasetDict(splits), stats, problems)


def _read_jsonl(
    path: Path, text_fields: tuple[str, ...], problems: list[PaperProblem], *, keys: tuple[str, ...] | None = None
) -> dict[str, list[str]]:
    """The ``_id`` and ``text_fields`` columns of a BEIR ``.jsonl`` file. Bad lines (with a key not in ``keys``,
    when given) are added to ``problems``."""
    columns: dict[str, list[str]] = {"_id": [], **{name: [] for name in text_fields}}
    first: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record, reason = _record(line, text_fields, keys)
            record_id = record.get("_id") if record else None
            if reason is None and record_id in first:
                reason = f"duplicate _id (first at line {first[record_id]})"
            if reason is not None:
                problems.append(PaperProblem(str(path), f"line {line_number}", reason, record_id))
                continue
            first[record_id] = line_number
            for name in columns:
                columns[name].append(record[name])
    return columns


def _record(
    line: str, text_fields: tuple[str, ...], keys: tuple[str, ...] | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    try:
        raw = loads_json(line)
    except (json.JSONDecodeError, RepeatedKeyError) as error:
        return None, json_error(error)
    if not isinstance(raw, dict):
        return None, f"expected a JSON object, got {type(raw).__name__}"
    record_id = raw.get("_id")
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)) or not str(record_id).strip():
        return None, f"no usable _id (got {record_id!r})"
    record = {"_id": str(record_id).strip()}
    if keys is not None and (unknown := unknown_key(raw, keys)) is not None:
        return record, unknown
    for name in text_fields:
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            return record, f"{name} must be a string, got {type(value).__name__}"
        record[name] = (value or "").strip()
    if not any(record[name] for name in text_fields):
        return record, f"no text (looked for {' / '.join(text_fields)})"
    return record, None


def _read_qrels(path: Path) -> tuple[dict[str, list], list[int]]:
    columns: dict[str, list] = {"query_id": [], "cand_id": [], "score": []}
    lines: list[int] = []
    with path.open(encoding="utf-8") as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        if tuple(h.strip() for h in header) != QREL_HEADER:
            raise ValueError(
                f"{path}, line 1: expected the header {'<TAB>'.join(QREL_HEADER)!r}, got {'<TAB>'.join(header)!r}"
            )
        for line_number, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 3:
                raise ValueError(
                    f"{path}, line {line_number}: a qrels line is 'query-id<TAB>corpus-id<TAB>score' (3 fields), got "
                    f"{len(fields)}: {line.strip()[:80]!r}"
                )
            try:
                score = int(fields[2])
            except ValueError:
                raise ValueError(f"{path}, line {line_number}: score must be an integer, got {fields[2]!r}") from None
            columns["query_id"].append(fields[0].strip())
            columns["cand_id"].append(fields[1].strip())
            columns["score"].append(score)
            lines.append(line_number)
    return columns, lines
