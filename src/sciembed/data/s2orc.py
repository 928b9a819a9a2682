"""S2ORC metadata JSONL (allenai/s2orc, release ``v2020-07-05``): one paper a line.

Each record carries ``paper_id``, ``title``, ``abstract`` (often null), ``year``, ``mag_field_of_study``
(a list, or null) and the citation lists ``outbound_citations`` (ids this paper cites) and
``inbound_citations`` (ids citing it). A citation between two papers of the file is listed from both
ends, and most ids point outside any sample or shard, so the reader keeps each (citing, cited) pair
once and counts repeats, self-citations and ends outside the file (:attr:`S2orcPapers.stats`). The
Multi-SciDocs builder reads the MAG fields from here.
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
from datasets import Dataset, Features, Sequence, Value

from ..io import RepeatedKeyError, json_error, loads_json
from .papers import InvalidPaperError, PaperProblem, clean_text

logger = logging.getLogger(__name__)

FEATURES = Features(
    {
        "paper_id": Value("string"),
        "title": Value("string"),
        "abstract": Value("string"),
        "year": Value("int64"),
        "venue": Value("string"),
        "journal": Value("string"),
        "doi": Value("string"),
        "mag_id": Value("string"),
        "mag_field_of_study": Sequence(Value("string")),
        "outbound_citations": Sequence(Value("string")),
        "inbound_citations": Sequence(Value("string")),
    }
)


@dataclass
class S2orcPapers:
    """Papers with text as a Dataset, every citation as (citing, cited) arrays, and the counts.

    ``citing`` / ``cited`` include citations of papers that were skipped or lie outside the file, so
    ``CitationGraph.from_edges(citing, cited, papers_with_text=papers["paper_id"])`` sees them all.
    """

    path: str
    papers: Dataset
    citing: np.ndarray
    cited: np.ndarray
    stats: Counter = field(default_factory=Counter)
    skipped: list[PaperProblem] = field(default_factory=list)

    def field_counts(self) -> Counter:
        """Papers per MAG field of study (a paper with two fields counts in both)."""
        return Counter(name for fields in self.papers["mag_field_of_study"] for name in fields)


def read_s2orc(
    path: str | os.PathLike[str],
    *,
    skip_invalid: bool = False,
    internal_only: bool = False,
) -> S2orcPapers:
    """Reads one S2ORC metadata ``.jsonl`` file, or every ``*.jsonl`` file of a folder.

    A folder's files are read in name order.

    Args:
        path: a ``.jsonl`` file or a folder of them (e.g. ``sample/metadata/``).
        skip_invalid: skip records that are malformed, lack an id, repeat an id or have neither title
            nor abstract (listed in ``skipped``) instead of raising. The citations of a record with a
            good id are kept even when the record has no text: the graph needs them.
        internal_only: keep only citations whose two ends are papers of the file(s).

    Raises:
        InvalidPaperError: a bad record (file, line and id named) and ``skip_invalid`` is false.
        FileNotFoundError: no ``.jsonl`` file at ``path``.
    """
    files = _files(Path(path))
    stats: Counter = Counter()
    skipped: list[PaperProblem] = []
    columns: dict[str, list[Any]] = {name: [] for name in FEATURES}
    citing: list[str] = []
    cited: list[str] = []
    first: dict[str, str] = {}
    for file in files:
        with file.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                stats["records"] += 1
                location = f"line {line_number}"
                record, problem = _parse(line, str(file), location)
                if record is not None:
                    paper_id = record["paper_id"]
                    if paper_id in first:
                        problem = PaperProblem(
                            str(file), location, f"duplicate paper_id (first at {first[paper_id]})", paper_id
                        )
                    else:
                        first[paper_id] = f"{file.name} {location}"
                        # Citations count even for a textless record: the paper is a graph node.
                        out, inn = record["outbound_citations"], record["inbound_citations"]
                        citing += [paper_id] * len(out) + inn
                        cited += out + [paper_id] * len(inn)
                        stats["outbound_listed"] += len(out)
                        stats["inbound_listed"] += len(inn)
                        if not record["title"] and not record["abstract"]:
                            problem = PaperProblem(str(file), location, "neither title nor abstract", paper_id)
                        else:
                            for name in FEATURES:
                                columns[name].append(record[name])
                if problem is not None:
                    if not skip_invalid:
                        raise InvalidPaperError([problem])
                    skipped.append(problem)

    citing_array, cited_array = _unique_edges(
        np.array(citing, dtype=str), np.array(cited, dtype=str), set(first), stats, internal_only
    )
    papers = Dataset.from_dict(columns, features=FEATURES)
    stats["papers"] = len(papers)
    stats["papers_with_abstract"] = sum(1 for a in columns["abstract"] if a)
    stats["papers_without_field"] = sum(1 for f in columns["mag_field_of_study"] if not f)
    stats["skipped"] = len(skipped)
    logger.info("%s: %s", path, dict(stats))
    if skipped:
        logger.warning("%s: skipped %d record(s): %s", path, len(skipped), "; ".join(map(str, skipped[:10])))
    return S2orcPapers(str(path), papers, citing_array, cited_array, stats, skipped)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"{path}: no S2ORC metadata .jsonl files")
        return files
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such S2ORC metadata file")
    return [path]


def _parse(line: str, source: str, location: str) -> tuple[dict[str, Any] | None, PaperProblem | None]:
    try:
        raw = loads_json(line)
    except (json.JSONDecodeError, RepeatedKeyError) as error:
        return None, PaperProblem(source, location, json_error(error))
    if not isinstance(raw, dict):
        return None, PaperProblem(source, location, f"expected a JSON object, got {type(raw).__name__}")
    paper_id = raw.get("paper_id")
    if isinstance(paper_id, bool) or not isinstance(paper_id, (str, int)) or not str(paper_id).strip():
        return None, PaperProblem(source, location, f"no usable paper_id (got {paper_id!r})")
    paper_id = str(paper_id).strip()
    record: dict[str, Any] = {"paper_id": paper_id}
    try:
        for name in ("title", "abstract"):
            record[name] = clean_text(raw.get(name), name)
        for name in ("venue", "journal", "doi", "mag_id"):
            value = raw.get(name)
            record[name] = None if value in (None, "") else str(value)
        record["year"] = _year(raw.get("year"))
        for name in ("mag_field_of_study", "outbound_citations", "inbound_citations"):
            record[name] = _id_list(raw.get(name), name)
    except (TypeError, ValueError) as error:
        return None, PaperProblem(source, location, str(error), paper_id)
    return record, None


def _year(value: Any) -> int | None:
    if value in (None, ""):
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, str))
        or not str(value).strip().split(".")[0].isdigit()
    ):
        raise ValueError(f"year must be a number, got {value!r}")
    return int(float(value))


def _id_list(value: Any, name: str) -> list[str]:
    # S2ORC writes null where a paper has no MAG field; treat it as an empty list.
    if value is None:
        return []
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, (str, int)) for v in value):
        raise TypeError(f"{name} must be a list of ids, got {value!r}"[:200])
    return [str(v) for v in value]


def _unique_edges(
    citing: np.ndarray, cited: np.ndarray, known: set[str], stats: Counter, internal_only: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Keep each (citing, cited) pair once. Count repeats, self-citations and ends outside the file."""
    stats["edges_listed"] = len(citing)
    if len(citing) == 0:
        stats["edges"] = 0
        return citing, cited
    # Factorise ids to integers once, then deduplicate int64 pair codes (vectorised, no Python sets).
    ids, inverse = np.unique(np.concatenate([citing, cited]), return_inverse=True)
    codes = inverse[: len(citing)].astype(np.int64) * len(ids) + inverse[len(citing) :]
    _, first = np.unique(codes, return_index=True)
    first.sort()  # keep the order in which pairs were first listed
    stats["edges_repeated"] = len(citing) - len(first)
    citing, cited = citing[first], cited[first]
    known_ids = np.array(sorted(known), dtype=str)
    citing_known, cited_known = np.isin(citing, known_ids), np.isin(cited, known_ids)
    stats["self_citations"] = int(np.count_nonzero(citing == cited))
    stats["edges_citing_outside"] = int(np.count_nonzero(~citing_known))
    stats["edges_cited_outside"] = int(np.count_nonzero(~cited_known))
    stats["edges_internal"] = int(np.count_nonzero(citing_known & cited_known))
    if internal_only:
        keep = citing_known & cited_known
        citing, cited = citing[keep], cited[keep]
    stats["edges"] = len(citing)
    return citing, cited
