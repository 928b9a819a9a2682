"""SciRepEval (Singh et al. 2023): its training-sample files and its two Hub datasets.

Training samples (allenai/scirepeval ``training/sample_data``), read by :func:`read_scirepeval_sample`:

- ``fos``: ``[{corpus_id, title, abstract, labels: [int], labels_text: [str]}]`` (multi-label fields of study).
- ``mesh``: ``[{mag_id, corpus_id, title, abstract, descriptor, qualifier}]``.
- ``specter``: citation triplets ``[{query: paper, pos: paper, neg: paper}]``,
  paper = ``{sha, corpus_id, title, abstract}``.
- ``search``: JSONL, one query a line ``{query, session_id, user_id, candidates: [{corpus_id, ..., score}]}``.

Evaluation data, read by :func:`load_scirepeval_task` through ``datasets.load_dataset`` from a Hub id
or a local folder in the same layout (``README.md`` with YAML ``configs:`` over Parquet / JSON files):
``allenai/scirepeval`` holds per task a metadata config (split ``evaluation``: ``doc_id, title,
abstract``, or for search tasks ``doc_id, query, candidates``) and ``allenai/scirepeval_test`` the
labels (``paper_id, label`` in ``train`` / ``test``) or qrels (``query_id, cand_id, score``). Config
names follow allenai/scirepeval's ``scirepeval_tasks.jsonl``. Some test configs share a metadata
config (:data:`META_CONFIG`).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, DatasetDict, Value

from ..choices import StrChoice, choices
from ..io import RepeatedKeyError, json_error, load_json_file, loads_json
from .hub_datasets import load_hub_dataset
from .papers import InvalidPaperError, PaperProblem, clean_text

logger = logging.getLogger(__name__)


class SampleFormat(StrChoice):
    """The formats of SciRepEval's training-sample files."""

    FOS = "fos"
    MESH = "mesh"
    SPECTER = "specter"
    SEARCH = "search"


SAMPLE_FORMATS = choices(SampleFormat)
META_SOURCE = "allenai/scirepeval"
TEST_SOURCE = "allenai/scirepeval_test"
META_SPLIT = "evaluation"

#: Test config -> metadata config, where they differ (allenai/scirepeval ``scirepeval_tasks.jsonl``).
META_CONFIG = {
    "scidocs_mag": "scidocs_mag_mesh",
    "scidocs_mesh": "scidocs_mag_mesh",
    "scidocs_cite": "scidocs_view_cite_read",
    "scidocs_view": "scidocs_view_cite_read",
    "scidocs_cocite": "scidocs_view_cite_read",
    "scidocs_read": "scidocs_view_cite_read",
    "peer_review_score": "peer_review_score_hIndex",
    "hIndex": "peer_review_score_hIndex",
    "mesh": "mesh_descriptors",
}
#: Label columns that name papers of the metadata config.
ID_COLUMNS = ("paper_id", "query_id", "cand_id", "corpus_id", "doc_id")
#: Test configs whose candidates are not papers (reviewer ids, described by the ``reviewers`` config).
REVIEWER_CANDIDATES = ("paper_reviewer_matching",)


@dataclass
class SampleFile:
    """One training-sample file as a Dataset, with its format and the records skipped."""

    path: str
    kind: SampleFormat
    data: Dataset
    skipped: list[PaperProblem] = field(default_factory=list)


def read_scirepeval_sample(
    path: str | os.PathLike[str], *, kind: SampleFormat | str | None = None, skip_invalid: bool = False
) -> SampleFile:
    """Read a SciRepEval training-sample file (``fos``, ``mesh``, ``specter`` or ``search`` format).

    Ids become strings (``corpus_id`` -> ``paper_id``). Papers are ``{paper_id, title, abstract}``.

    Args:
        path: a ``.json`` list or a ``.jsonl`` file.
        kind: the format. By default taken from the file name (``fos_small.json`` -> ``fos``) or,
            failing that, from the first record's fields.
        skip_invalid: skip bad records (listed in ``skipped``) instead of raising.

    Raises:
        ValueError: an unknown format (the supported ones are named) or malformed JSON (file, line).
        InvalidPaperError: a bad record (file, record or line, id) and ``skip_invalid`` is false.
    """
    path = Path(path)
    records = list(_records(path))
    if kind is None:
        kind = next((k for k in SAMPLE_FORMATS if path.name.startswith(k)), None) or _guess_kind(records, path)
    if kind not in SAMPLE_FORMATS:
        raise ValueError(f"{path}: unknown SciRepEval sample format {kind!r}; supported: {', '.join(SAMPLE_FORMATS)}")
    kind = SampleFormat(kind)
    convert = _CONVERTERS[kind]
    rows: list[dict[str, Any]] = []
    skipped: list[PaperProblem] = []
    for location, record in records:
        if isinstance(record, PaperProblem):
            problem = record
        else:
            try:
                rows.append(convert(record))
                continue
            except (KeyError, TypeError, ValueError) as error:
                reason = f"missing field {error}" if isinstance(error, KeyError) else str(error)
                problem = PaperProblem(str(path), location, reason, _record_id(record))
        if not skip_invalid:
            raise InvalidPaperError([problem])
        skipped.append(problem)
    if skipped:
        logger.warning(
            "%s: skipped %d of %d record(s): %s", path, len(skipped), len(records), "; ".join(map(str, skipped[:10]))
        )
    logger.info("%s: %d %s record(s)", path, len(rows), kind)
    return SampleFile(str(path), kind, Dataset.from_list(rows), skipped)


def _records(path: Path):
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield f"line {line_number}", loads_json(line)
                    except (json.JSONDecodeError, RepeatedKeyError) as error:
                        yield f"line {line_number}", PaperProblem(str(path), f"line {line_number}", json_error(error))
        return
    data = load_json_file(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    for index, record in enumerate(data):
        yield f"record {index}", record


def _guess_kind(records: list, path: Path) -> SampleFormat:
    first = next((r for _, r in records if isinstance(r, dict)), {})
    for kind, keys in (
        (SampleFormat.FOS, {"labels_text"}),
        (SampleFormat.MESH, {"descriptor"}),
        (SampleFormat.SPECTER, {"query", "pos", "neg"}),
        (SampleFormat.SEARCH, {"candidates"}),
    ):
        if keys <= first.keys():
            return kind
    raise ValueError(
        f"{path}: cannot tell the SciRepEval sample format from fields {sorted(first)}; supported: "
        f"{', '.join(SAMPLE_FORMATS)} (pass kind=)"
    )


def _record_id(record: Any) -> str | None:
    """The id to name in a report.

    That is the record's ``corpus_id``, or its query paper's for a triplet.
    """
    if not isinstance(record, dict):
        return None
    value = record.get("corpus_id")
    if value is None and isinstance(record.get("query"), dict):
        value = record["query"].get("corpus_id")
    return None if value is None else str(value)


def _id(value: Any, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise ValueError(f"{name} must be a non-empty string or integer, got {value!r}")
    return str(value).strip()


def _paper(record: dict[str, Any], *, need_text: bool = True) -> dict[str, str]:
    paper = {
        "paper_id": _id(record.get("corpus_id"), "corpus_id"),
        "title": clean_text(record.get("title"), "title"),
        "abstract": clean_text(record.get("abstract"), "abstract"),
    }
    if need_text and not paper["title"] and not paper["abstract"]:
        raise ValueError(f"paper {paper['paper_id']!r} has neither title nor abstract")
    return paper


def _fos(record: dict[str, Any]) -> dict[str, Any]:
    labels, names = record["labels"], record["labels_text"]
    if not isinstance(labels, list) or not isinstance(names, list) or len(labels) != len(names) or not labels:
        raise ValueError(f"labels {labels!r} and labels_text {names!r} must be non-empty lists of one length")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in labels):
        raise ValueError(f"labels must be integers, got {labels!r}")
    return {**_paper(record), "labels": labels, "labels_text": [str(n) for n in names]}


def _mesh(record: dict[str, Any]) -> dict[str, Any]:
    descriptor = clean_text(record["descriptor"], "descriptor")
    if not descriptor:
        raise ValueError("empty descriptor")
    mag_id = record.get("mag_id")
    return {
        **_paper(record),
        "mag_id": None if mag_id is None else str(mag_id),
        "descriptor": descriptor,
        "qualifier": clean_text(record.get("qualifier"), "qualifier"),
    }


def _triplet(record: dict[str, Any]) -> dict[str, Any]:
    row = {}
    for role in ("query", "pos", "neg"):
        if not isinstance(record[role], dict):
            raise TypeError(f"{role} must be a paper object, got {type(record[role]).__name__}")
        row[role] = {**_paper(record[role]), "sha": clean_text(record[role].get("sha"), "sha")}
    return row


def _search(record: dict[str, Any]) -> dict[str, Any]:
    query = clean_text(record["query"], "query")
    if not query:
        raise ValueError("empty query")
    candidates = []
    for index, candidate in enumerate(record["candidates"]):
        try:
            score = candidate["score"]
            if isinstance(score, bool) or not isinstance(score, int):
                raise ValueError(f"score must be an integer, got {score!r}")
            year = candidate.get("year")
            candidates.append(
                {
                    # A search candidate may have a title only; an empty abstract is normal here.
                    **_paper(candidate, need_text=False),
                    "venue": clean_text(candidate.get("venue"), "venue"),
                    # The sample writes years as floats (``1964.0``) and an unknown year as "".
                    "year": None if year in (None, "") else int(float(year)),
                    "n_citations": candidate.get("n_citations"),
                    "score": score,
                }
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"candidate {index}: {error}") from None
    if not candidates:
        raise ValueError("no candidates")
    return {
        "query": query,
        "session_id": str(record.get("session_id")),
        "user_id": str(record.get("user_id")),
        "candidates": candidates,
    }


_CONVERTERS: dict[SampleFormat, Callable[[dict[str, Any]], dict[str, Any]]] = {
    SampleFormat.FOS: _fos,
    SampleFormat.MESH: _mesh,
    SampleFormat.SPECTER: _triplet,
    SampleFormat.SEARCH: _search,
}


@dataclass
class SciRepEvalTask:
    """One SciRepEval task: papers to embed (``meta``) and the labelled examples (``labels``)."""

    name: str
    meta: Dataset
    labels: DatasetDict
    stats: Counter = field(default_factory=Counter)
    skipped: list[PaperProblem] = field(default_factory=list)


def load_scirepeval_task(
    task: str,
    *,
    meta_source: str | os.PathLike[str] = META_SOURCE,
    test_source: str | os.PathLike[str] = TEST_SOURCE,
    meta_config: str | None = None,
    skip_invalid: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
) -> SciRepEvalTask:
    """Loads a SciRepEval task's metadata and labels.

    They come from the Hub, or from local folders in the Hub layout.

    Args:
        task: the ``allenai/scirepeval_test`` config (e.g. ``fos``, ``scidocs_mag``, ``search``).
        meta_source, test_source: Hub ids or local folders.
        meta_config: the metadata config. By default :data:`META_CONFIG` or ``task``.
        skip_invalid: drop label rows naming papers absent from the metadata (counted, logged and
            listed in ``skipped``) instead of raising.
        cache_dir: forwarded to ``datasets.load_dataset``.

    Returns:
        ``meta`` with ``doc_id`` renamed ``paper_id`` and every id column a string, ``labels`` as the
        test config ships it (id columns as strings).

    Raises:
        ValueError: an unknown config (``datasets`` names the available ones).
        InvalidPaperError: label rows naming unknown papers, and ``skip_invalid`` is false.
    """
    meta_config = meta_config or META_CONFIG.get(task, task)
    meta = load_hub_dataset(meta_source, meta_config, split=META_SPLIT, cache_dir=cache_dir)
    meta = _string_ids(meta)
    if "doc_id" in meta.column_names and "paper_id" not in meta.column_names:
        meta = meta.rename_column("doc_id", "paper_id")
    known = _known_ids(meta)
    labels = load_hub_dataset(test_source, task, cache_dir=cache_dir)
    stats: Counter = Counter(meta_papers=len(meta))
    problems: list[PaperProblem] = []
    splits: dict[str, Dataset] = {}
    for split, data in labels.items():
        data = _string_ids(data)
        columns = [
            c for c in ID_COLUMNS if c in data.column_names and not (c == "cand_id" and task in REVIEWER_CANDIDATES)
        ]
        found = {c: np.isin(np.array(data[c], dtype=str), known) for c in columns}
        keep = np.logical_and.reduce(list(found.values())) if found else np.ones(len(data), dtype=bool)
        stats[f"{split}_rows"] = len(data)
        stats[f"{split}_unknown_papers"] = int(np.count_nonzero(~keep))
        for index in np.flatnonzero(~keep):
            column = next(c for c in columns if not found[c][index])
            problems.append(
                PaperProblem(
                    f"{test_source}:{task}",
                    f"{split} row {index}",
                    f"{column} not in {meta_source}:{meta_config}",
                    data[int(index)][column],
                )
            )
        splits[split] = data if keep.all() else data.select(np.flatnonzero(keep))
    if problems:
        if not skip_invalid:
            raise InvalidPaperError(problems)
        logger.warning("%s: dropped %d label row(s) naming papers without metadata", task, len(problems))
    logger.info("SciRepEval %s: %s", task, dict(stats))
    return SciRepEvalTask(task, meta, DatasetDict(splits), stats, problems)


def _string_ids(data: Dataset) -> Dataset:
    # Hub files mix int and string ids across tasks; compare them as strings everywhere.
    for column in ID_COLUMNS:
        if column in data.column_names and data.features[column] != Value("string"):
            data = data.cast_column(column, Value("string"))
    return data


def _known_ids(meta: Dataset) -> np.ndarray:
    ids = [str(v) for v in meta["paper_id"]] if "paper_id" in meta.column_names else []
    # Search-style metadata rows hold a query and its candidate papers (allenai/scirepeval IRDataset).
    if "candidates" in meta.column_names:
        ids += [
            str(c["doc_id"]) for candidates in meta["candidates"] for c in candidates if c.get("doc_id") is not None
        ]
    return np.unique(np.array(ids, dtype=str))
