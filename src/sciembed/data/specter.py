"""The SPECTER training release: ``data.json`` + ``metadata.json`` + ``train/val/test.txt``.

Format (allenai/specter, ``data/training/README.md``): ``data.json`` is
``{query_id: {candidate_id: {"count": c}}}`` where ``c == 5`` means the query cites the candidate
directly and ``c == 1`` that the candidate is cited by one of the query's citations (SPECTER, Cohan
et al. 2020, sec. 3.2: direct citations are positives, citations of citations hard negatives).
``metadata.json`` maps paper ids to ``{paper_id, title, abstract}``. The split files list one query
id a line. Only some ids have metadata: papers without text stay in the citation arrays (the graph
needs them) but are never in :attr:`SpecterRelease.papers`.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict

from ..io import load_json_file
from .papers import InvalidPaperError, PaperProblem, read_papers

logger = logging.getLogger(__name__)

#: ``count`` values of ``data.json`` (SPECTER's ``data/training/README.md``).
DIRECT_CITATION = 5
CITATION_OF_CITATION = 1

SPLIT_FILES = ("train", "val", "test")


@dataclass
class SpecterRelease:
    """What one SPECTER release folder holds.

    Attributes:
        papers: the papers with text (``paper_id``, ``title``, ``abstract``), from ``metadata.json``.
        queries: one split per id list found (``train``, ``val``, ``test``), column ``paper_id``.
        citing, cited: parallel string arrays of direct citations (``count == 5``), query -> candidate.
            Pass them to ``CitationGraph.from_edges``.
        hop_query, hop_candidate: parallel arrays of the ``count == 1`` pairs (the candidate is cited
            by a paper the query cites).
        stats: counts of what was read and what was set aside (all logged).
        skipped: bad metadata records and split ids that were skipped (``skip_invalid=True``).
    """

    path: str
    papers: Dataset
    queries: DatasetDict
    citing: np.ndarray
    cited: np.ndarray
    hop_query: np.ndarray
    hop_candidate: np.ndarray
    stats: Counter = field(default_factory=Counter)
    skipped: list[PaperProblem] = field(default_factory=list)


def read_specter_release(folder: str | os.PathLike[str], *, skip_invalid: bool = False) -> SpecterRelease:
    """Read a SPECTER training folder (``data.json``, ``metadata.json`` and the split id lists).

    Args:
        folder: the folder holding ``data.json`` and ``metadata.json``. Split files are optional.
        skip_invalid: skip (and list in ``skipped``) bad metadata records and split ids that name
            no query of ``data.json``, instead of raising.

    Raises:
        FileNotFoundError: ``data.json`` or ``metadata.json`` is missing.
        ValueError: malformed JSON (file and line named), a ``data.json`` entry that is not
            ``{"count": 5 | 1}`` (file, query and candidate named).
        InvalidPaperError: a bad metadata record or unknown split ids, and ``skip_invalid`` is false.
    """
    folder = Path(folder)
    data_path, metadata_path = folder / "data.json", folder / "metadata.json"
    for required in (data_path, metadata_path):
        if not required.is_file():
            raise FileNotFoundError(
                f"{folder}: no {required.name} (a SPECTER release holds data.json and metadata.json)"
            )

    graph = _load_json(data_path)
    if not isinstance(graph, dict):
        raise ValueError(
            f"{data_path}: expected {{query_id: {{candidate_id: {{'count': 5 | 1}}}}}}, got {type(graph).__name__}"
        )
    stats: Counter = Counter(queries=len(graph))
    direct: list[tuple[str, str]] = []
    hops: list[tuple[str, str]] = []
    for query, candidates in graph.items():
        if not isinstance(candidates, dict):
            raise ValueError(
                f"{data_path}: query {query!r}: expected a dict of candidates, got {type(candidates).__name__}"
            )
        for candidate, entry in candidates.items():
            count = entry.get("count") if isinstance(entry, dict) else None
            if count == DIRECT_CITATION:
                direct.append((query, candidate))
            elif count == CITATION_OF_CITATION:
                hops.append((query, candidate))
            else:
                raise ValueError(
                    f"{data_path}: query {query!r}, candidate {candidate!r}: expected {{'count': 5}} (direct "
                    f"citation) or {{'count': 1}} (citation of a citation), got {entry!r}"
                )
            if query == candidate:
                stats["self_pairs"] += 1  # kept: the graph counts self-citations itself
    stats["direct_citations"], stats["citations_of_citations"] = len(direct), len(hops)

    paper_file = read_papers(metadata_path, skip_invalid=skip_invalid)
    skipped = list(paper_file.skipped)
    papers = Dataset.from_dict(
        {
            "paper_id": [p["paper_id"] for p in paper_file.papers],
            "title": [p["title"] for p in paper_file.papers],
            "abstract": [p["abstract"] for p in paper_file.papers],
        }
    )
    with_text = set(papers["paper_id"])
    all_ids = set(graph) | {c for pairs in (direct, hops) for _, c in pairs}
    stats["papers_in_graph"] = len(all_ids)
    stats["papers_with_text"] = len(with_text)
    stats["graph_papers_without_text"] = len(all_ids - with_text)
    stats["metadata_papers_outside_graph"] = len(with_text - all_ids)

    queries, split_problems = _read_splits(folder, set(graph), with_text, stats)
    if split_problems:
        if not skip_invalid:
            raise InvalidPaperError(split_problems)
        skipped.extend(split_problems)
    in_splits = {q for split in queries.values() for q in split["paper_id"]}
    stats["queries_in_no_split"] = len(set(graph) - in_splits) if queries else 0

    logger.info("%s: %s", folder, dict(stats))
    if skipped:
        logger.warning("%s: skipped %d record(s): %s", folder, len(skipped), "; ".join(map(str, skipped[:10])))
    return SpecterRelease(
        str(folder),
        papers,
        queries,
        citing=_ids([q for q, _ in direct]),
        cited=_ids([c for _, c in direct]),
        hop_query=_ids([q for q, _ in hops]),
        hop_candidate=_ids([c for _, c in hops]),
        stats=stats,
        skipped=skipped,
    )


def _read_splits(
    folder: Path, known_queries: set[str], with_text: set[str], stats: Counter
) -> tuple[DatasetDict, list[PaperProblem]]:
    splits: dict[str, Dataset] = {}
    problems: list[PaperProblem] = []
    for name in SPLIT_FILES:
        path = folder / f"{name}.txt"
        if not path.is_file():
            continue
        ids: list[str] = []
        seen: dict[str, int] = {}
        with path.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                paper_id = line.strip()
                if not paper_id:
                    continue
                if paper_id in seen:
                    problems.append(
                        PaperProblem(
                            str(path),
                            f"line {line_number}",
                            f"repeated query id (first at line {seen[paper_id]})",
                            paper_id,
                        )
                    )
                elif paper_id not in known_queries:
                    problems.append(
                        PaperProblem(str(path), f"line {line_number}", "query id not in data.json", paper_id)
                    )
                else:
                    seen[paper_id] = line_number
                    ids.append(paper_id)
        stats[f"{name}_queries"] = len(ids)
        # A query without text can still give triplets' ids, but never a training text: report it.
        stats[f"{name}_queries_without_text"] = sum(1 for q in ids if q not in with_text)
        splits[name] = Dataset.from_dict({"paper_id": ids})
    return DatasetDict(splits), problems


def _load_json(path: Path):
    return load_json_file(path)


def _ids(values: list[str]) -> np.ndarray:
    # Fixed-width unicode, so np.unique / np.isin / searchsorted work on the ids directly.
    return np.array(values, dtype=str)
