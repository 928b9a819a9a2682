"""SciDocs' recommendation task: the ``recomm/`` click logs (allenai/scidocs).

Layout, from ``scidocs/paths.py``, ``scidocs/recomm_click_eval.py`` and
``scidocs/recommender/simclick_triplet_sampler.py`` of allenai/scidocs:

- ``recomm/{train,val,test}.csv``: a header line (SciDocs drops the first line unread), then one click a
  line, ``query_id,clicked_id,"id1,id2,..."``: the paper a user was reading, the recommended paper they
  clicked, and the papers shown to them in display order (the clicked one among them, its 1-based index
  is the click's position).
- ``recomm/propensity_scores.json``: ``{"scores": [...]}``, one click propensity per display position,
  used to weight the evaluation (see :mod:`sciembed.evaluation.recommendation`).
- ``paper_metadata_recomm.json`` (release root): the papers to embed, keyed by paper id. Besides title
  and abstract, SciDocs' ranker reads ``authors``, ``references``, ``cited_by`` and ``year`` from its
  paper-features file when they are there.

Differences from SciDocs' reader, which parses each line with ``csv.reader`` and ``str.split(",")`` and
checks nothing: a malformed line (not 3 fields, an empty id, a clicked paper missing from its shown list)
raises a ValueError naming file and line. A first line that is a click rather than a header is refused
instead of being silently dropped. Ids are stripped of surrounding whitespace. Rows naming papers
outside the known ids (by default the ids of ``paper_metadata_recomm.json``) are counted and refused
unless ``skip_invalid=True``, which drops them. SciDocs instead scores such papers with a zero
embedding and zero features.
"""

from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, DatasetDict, Features, Sequence, Value

from ..io import load_json_file
from .papers import InvalidPaperError, PaperProblem, read_papers

logger = logging.getLogger(__name__)

RECOMM_SPLITS = ("train", "val", "test")
METADATA_FILE = "paper_metadata_recomm.json"
PROPENSITY_FILE = "propensity_scores.json"

CLICK_FEATURES = Features(
    {
        "query_id": Value("string"),
        "clicked_id": Value("string"),
        "shown_ids": Sequence(Value("string")),
        "clicked_position": Value("int64"),
        "line": Value("int64"),
    }
)


@dataclass(frozen=True)
class Click:
    """One line of a click log.

    Attributes:
        query_id: the paper the user was reading.
        clicked_id: the recommended paper they clicked.
        shown_ids: the recommended papers in display order, the clicked one included.
        line: the line number in its file (0 when built in code).
    """

    query_id: str
    clicked_id: str
    shown_ids: tuple[str, ...]
    line: int = 0

    @property
    def clicked_position(self) -> int:
        """1-based display position of the click (the first occurrence, as SciDocs' ``list.index``)."""
        return self.shown_ids.index(self.clicked_id) + 1


@dataclass
class SciDocsRecomm:
    """The recommendation task of one SciDocs release folder.

    Attributes:
        path: the release folder.
        clicks: split (``train``, ``val``, ``test``) -> clicks, in file order.
        propensity_scores: raw per-position propensities of ``propensity_scores.json`` (None if absent).
        papers: paper id -> record of ``paper_metadata_recomm.json`` (empty if absent).
        missing: files of the task that the folder lacks.
        stats: per split, ``rows`` read and ``unknown_papers`` (rows naming papers outside the known ids).
        skipped: everything skipped (bad metadata records, rows naming unknown papers).
    """

    path: str
    clicks: dict[str, list[Click]]
    propensity_scores: np.ndarray | None = None
    papers: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    stats: dict[str, Counter] = field(default_factory=dict)
    skipped: list[PaperProblem] = field(default_factory=list)

    def to_datasets(self) -> DatasetDict:
        """The clicks as a ``DatasetDict`` of ``query_id, clicked_id, shown_ids, clicked_position, line``."""
        return DatasetDict({split: clicks_to_dataset(clicks) for split, clicks in self.clicks.items()})


def read_scidocs_recomm(
    folder: str | os.PathLike[str],
    *,
    known_ids: Iterable[str] | None = None,
    skip_invalid: bool = False,
) -> SciDocsRecomm:
    """Read the recommendation task of a SciDocs release folder.

    Args:
        folder: the release folder (``data/`` of allenai/scidocs), holding ``recomm/`` and
            ``paper_metadata_recomm.json``.
        known_ids: the papers rows may name (e.g. those with embeddings). By default the ids of
            ``paper_metadata_recomm.json``, and no check when that file is absent too.
        skip_invalid: skip bad metadata records and drop rows naming unknown papers (counted, logged
            and listed in ``skipped``) instead of raising.

    Returns:
        the clicks per split, the propensities and the papers.

    Raises:
        ValueError: a malformed click line or propensity file (file and line named), or a click
            position past the last propensity.
        InvalidPaperError: bad metadata records, or rows naming unknown papers, when not skipped.
        FileNotFoundError: ``recomm/`` holds none of the click logs.
    """
    folder = Path(folder)
    recomm = folder / "recomm"
    missing: list[str] = []
    skipped: list[PaperProblem] = []

    papers: dict[str, dict[str, Any]] = {}
    if (folder / METADATA_FILE).is_file():
        paper_file = read_papers(folder / METADATA_FILE, skip_invalid=skip_invalid)
        skipped.extend(paper_file.skipped)
        papers = {paper["paper_id"]: paper for paper in paper_file.papers}
    else:
        missing.append(METADATA_FILE)

    propensity_scores = None
    if (recomm / PROPENSITY_FILE).is_file():
        propensity_scores = read_propensity_scores(recomm / PROPENSITY_FILE)
    else:
        missing.append(f"recomm/{PROPENSITY_FILE}")

    if known_ids is not None:
        known, known_name = set(known_ids), "the known ids"
    elif papers:
        known, known_name = set(papers), METADATA_FILE
    else:
        known, known_name = None, ""
        logger.warning(
            "%s: no %s and no known_ids: click rows are not checked against known papers", folder, METADATA_FILE
        )

    clicks: dict[str, list[Click]] = {}
    stats: dict[str, Counter] = {}
    unknown: list[PaperProblem] = []
    for split in RECOMM_SPLITS:
        path = recomm / f"{split}.csv"
        if not path.is_file():
            missing.append(f"recomm/{split}.csv")
            continue
        rows = read_click_file(path)
        if propensity_scores is not None:
            _check_positions(path, rows, len(propensity_scores))
        kept = []
        for click in rows:
            problem = _unknown_paper(path, click, known, known_name) if known is not None else None
            if problem is None:
                kept.append(click)
            else:
                unknown.append(problem)
        stats[split] = Counter(rows=len(rows), unknown_papers=len(rows) - len(kept))
        clicks[split] = kept

    if not clicks:
        raise FileNotFoundError(
            f"{recomm}: none of the click logs ({', '.join(f'{s}.csv' for s in RECOMM_SPLITS)}) is there"
        )
    if unknown:
        if not skip_invalid:
            raise InvalidPaperError(unknown)
        skipped.extend(unknown)
        logger.warning(
            "%s: dropped %d click row(s) naming papers outside %s: %s",
            folder,
            len(unknown),
            known_name,
            {split: dict(counts) for split, counts in stats.items()},
        )
    if missing:
        logger.info("%s: not in this folder: %s", folder, ", ".join(missing))
    return SciDocsRecomm(str(folder), clicks, propensity_scores, papers, missing, stats, skipped)


def read_click_file(path: str | os.PathLike[str]) -> list[Click]:
    """Read one click log: a header line, then ``query_id,clicked_id,"shown ids"`` lines.

    Returns:
        the clicks in file order (blank lines skipped).

    Raises:
        ValueError: the first line is a click rather than a header, or a line is not 3 CSV fields,
            names an empty id, or clicks a paper absent from its shown list (file and line named).
    """
    clicks: list[Click] = []
    with open(path, encoding="utf-8", newline="") as handle:
        lines = handle.read().splitlines()
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = next(csv.reader([line]))
        if line_number == 1:
            if len(fields) == 3 and fields[1].strip() in _split_ids(fields[2]):
                raise ValueError(
                    f"{path}, line 1: expected a header line (SciDocs skips the first line unread), got a click: "
                    f"{line[:80]!r}"
                )
            continue
        clicks.append(_parse_click(path, line_number, line, fields))
    return clicks


def read_propensity_scores(path: str | os.PathLike[str]) -> np.ndarray:
    """Read ``propensity_scores.json``: ``{"scores": [p_1, p_2, ...]}``, one per display position.

    Raises:
        ValueError: not valid JSON, no ``scores`` list, or a score that is not a positive finite number.
    """
    data = load_json_file(path)
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, list) or not scores:
        raise ValueError(f'{path}: expected {{"scores": [one propensity per display position]}}')
    for position, score in enumerate(scores, start=1):
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not np.isfinite(score) or score <= 0:
            raise ValueError(f"{path}: the propensity of position {position} must be a positive number, got {score!r}")
    return np.asarray(scores, dtype=np.float64)


def clicks_to_dataset(clicks: Iterable[Click]) -> Dataset:
    """Clicks as a ``Dataset`` with :data:`CLICK_FEATURES`."""
    clicks = list(clicks)
    return Dataset.from_dict(
        {
            "query_id": [c.query_id for c in clicks],
            "clicked_id": [c.clicked_id for c in clicks],
            "shown_ids": [list(c.shown_ids) for c in clicks],
            "clicked_position": [c.clicked_position for c in clicks],
            "line": [c.line for c in clicks],
        },
        features=CLICK_FEATURES,
    )


def _split_ids(value: str) -> list[str]:
    return [paper_id.strip() for paper_id in value.strip().split(",")]


def _parse_click(path, line_number: int, line: str, fields: list[str]) -> Click:
    where = f"{path}, line {line_number}"
    if len(fields) != 3:
        raise ValueError(
            f"{where}: a click line is 'query_id,clicked_id,\"shown ids\"' (3 fields), got {len(fields)}: "
            f"{line[:80]!r}"
        )
    query_id, clicked_id = fields[0].strip(), fields[1].strip()
    if not query_id or not clicked_id:
        raise ValueError(f"{where}: empty {'query_id' if not query_id else 'clicked_id'}")
    shown = _split_ids(fields[2])
    if "" in shown:
        raise ValueError(
            f"{where}: empty paper id at position {shown.index('') + 1} of the shown list {fields[2][:80]!r}"
        )
    if clicked_id not in shown:
        raise ValueError(f"{where}: clicked paper {clicked_id!r} is not among the {len(shown)} shown paper(s)")
    return Click(query_id, clicked_id, tuple(shown), line_number)


def _check_positions(path: Path, clicks: list[Click], positions: int) -> None:
    for click in clicks:
        if click.clicked_position > positions:
            raise ValueError(
                f"{path}, line {click.line}: click at position {click.clicked_position}, but "
                f"{PROPENSITY_FILE} has propensities for {positions} position(s)"
            )


def _unknown_paper(path: Path, click: Click, known: set[str], known_name: str) -> PaperProblem | None:
    named = [
        ("query_id", click.query_id),
        ("clicked_id", click.clicked_id),
        *(("shown_ids", p) for p in click.shown_ids),
    ]
    for column, paper_id in named:
        if paper_id not in known:
            return PaperProblem(str(path), f"line {click.line}", f"{column} not in {known_name}", paper_id)
    return None
