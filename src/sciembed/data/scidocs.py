"""The SciDocs release layout (allenai/scidocs, ``aws s3 sync s3://ai2-s2-research-public/specter/scidocs/``).

Files (``scidocs/paths.py`` of allenai/scidocs):

- ``paper_metadata_view_cite_read.json``, ``paper_metadata_mag_mesh.json``,
  ``paper_metadata_recomm.json``: dicts keyed by paper id of ``{paper_id, title, abstract}``.
- ``<task>/{val,test}.qrel`` for the proximity tasks ``cite``, ``cocite``, ``coview``, ``coread``:
  lines ``qid 0 pid rel`` (rel 1 = relevant, 0 = one of the query's negatives), read by pytrec_eval.
- ``mag/`` and ``mesh/{train,val,test}.csv`` with header ``pid,class_label``.

A folder holding only some tasks loads those it finds and lists the others in
:attr:`SciDocsRelease.missing`. The recommendation task (``recomm/``) is a click log with its own
protocol and is not read here (its metadata file is). Rows naming papers absent from the task's
metadata file are counted and refused unless ``skip_invalid=True``: SciDocs' own evaluation silently
scores such papers with a zero vector (classification) or drops them (proximity).
"""

from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict, Features, Value

from .judgements import check_qrels_columns
from .papers import InvalidPaperError, PaperProblem, read_papers

logger = logging.getLogger(__name__)

PROXIMITY_TASKS = ("cite", "cocite", "coview", "coread")
CLASSIFICATION_TASKS = ("mag", "mesh")
QREL_SPLITS = ("val", "test")
CLASSIFICATION_SPLITS = ("train", "val", "test")

#: Metadata collection -> accepted file names. The second name is the one written in
#: allenai/scidocs' ``scidocs/paths.py`` (a doubled prefix), accepted so either copy loads.
METADATA_FILES = {
    "view_cite_read": ("paper_metadata_view_cite_read.json", "paper_metadata_paper_metadata_view_cite_read.json"),
    "mag_mesh": ("paper_metadata_mag_mesh.json",),
    "recomm": ("paper_metadata_recomm.json",),
}
#: Which metadata collection holds each task's papers.
TASK_METADATA = {
    **{task: "view_cite_read" for task in PROXIMITY_TASKS},
    **{task: "mag_mesh" for task in CLASSIFICATION_TASKS},
}

QREL_FEATURES = Features({"query_id": Value("string"), "cand_id": Value("string"), "score": Value("int64")})


@dataclass
class SciDocsRelease:
    """The tasks found in one SciDocs folder.

    Attributes:
        papers: metadata collection name (``view_cite_read``, ``mag_mesh``, ``recomm``) -> papers.
        qrels: proximity task -> ``DatasetDict`` (``val``, ``test``) of ``query_id, cand_id, score``.
        labels: ``mag`` / ``mesh`` -> ``DatasetDict`` (``train``, ``val``, ``test``) of ``paper_id, label``.
        missing: tasks and metadata files of the full release that the folder lacks.
        stats: per task and split, rows read and rows naming unknown papers.
        skipped: everything skipped (bad metadata records, rows naming unknown papers).
    """

    path: str
    papers: dict[str, Dataset]
    qrels: dict[str, DatasetDict]
    labels: dict[str, DatasetDict]
    missing: list[str] = field(default_factory=list)
    stats: dict[str, Counter] = field(default_factory=dict)
    skipped: list[PaperProblem] = field(default_factory=list)


def read_scidocs(
    folder: str | os.PathLike[str],
    *,
    tasks: tuple[str, ...] | None = None,
    skip_invalid: bool = False,
    qrels_columns: str | None = None,
) -> SciDocsRelease:
    """Read the SciDocs tasks present in ``folder``.

    Args:
        folder: the release folder (``data/`` of allenai/scidocs).
        tasks: read only these (default: every proximity and classification task found).
        skip_invalid: skip bad metadata records, and drop qrel / label rows naming papers absent
            from the task's metadata file (all counted, logged and listed in ``skipped``), instead
            of raising.
        qrels_columns: the order of the ``.qrel`` files' query and document columns, when stated
            (:func:`~sciembed.data.judgements.check_qrels_columns`). Unstated, a file whose shape says they are
            swapped is refused.

    Raises:
        ValueError: an unknown task name. A qrel line without exactly 4 fields or a non-integer
            relevance. A CSV with another header or a row without 2 fields (file and line named). A qrel file
            whose columns look swapped.
        InvalidPaperError: bad metadata records, or rows naming unknown papers, when not skipped.
        FileNotFoundError: the folder does not exist, or holds none of the SciDocs tasks.
        NotADirectoryError: ``folder`` is a file.
    """
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f"{folder}: no such folder (a SciDocs release folder: data/ of allenai/scidocs)")
    if not folder.is_dir():
        raise NotADirectoryError(
            f"{folder}: a file, not a folder (a SciDocs release folder: data/ of allenai/scidocs)"
        )
    wanted = tuple(tasks) if tasks is not None else PROXIMITY_TASKS + CLASSIFICATION_TASKS
    unknown_tasks = [t for t in wanted if t not in TASK_METADATA]
    if unknown_tasks:
        raise ValueError(f"unknown SciDocs task(s) {unknown_tasks}; supported: {', '.join(TASK_METADATA)}")

    missing: list[str] = []
    skipped: list[PaperProblem] = []
    papers: dict[str, Dataset] = {}
    for name, file_names in METADATA_FILES.items():
        path = next((folder / n for n in file_names if (folder / n).is_file()), None)
        if path is None:
            missing.append(file_names[0])
            continue
        paper_file = read_papers(path, skip_invalid=skip_invalid)
        skipped.extend(paper_file.skipped)
        papers[name] = Dataset.from_dict(
            {key: [p[key] for p in paper_file.papers] for key in ("paper_id", "title", "abstract")}
        )

    stats: dict[str, Counter] = {}
    unknown: list[PaperProblem] = []
    qrels: dict[str, DatasetDict] = {}
    labels: dict[str, DatasetDict] = {}
    for task in wanted:
        if not (folder / task).is_dir():
            missing.append(task)
            continue
        metadata = TASK_METADATA[task]
        if metadata not in papers:
            raise FileNotFoundError(
                f"{folder}: task {task!r} found but its papers file {METADATA_FILES[metadata][0]} is missing"
            )
        known = np.array(papers[metadata]["paper_id"], dtype=str)
        stats[task] = Counter()
        splits: dict[str, Dataset] = {}
        for split in QREL_SPLITS if task in PROXIMITY_TASKS else CLASSIFICATION_SPLITS:
            path = folder / task / (f"{split}.qrel" if task in PROXIMITY_TASKS else f"{split}.csv")
            if not path.is_file():
                missing.append(f"{task}/{path.name}")
                continue
            if task in PROXIMITY_TASKS:
                columns, lines = read_qrel_file(path)
                columns = check_qrels_columns(path, columns, qrels_columns=qrels_columns, layout="'qid 0 pid rel'")
                id_columns = ("query_id", "cand_id")
            else:
                columns, lines = _read_label_csv(path)
                id_columns = ("paper_id",)
            found = {c: np.isin(np.array(columns[c], dtype=str), known) for c in id_columns}
            keep = np.logical_and.reduce(list(found.values()))
            stats[task][f"{split}_rows"] = len(lines)
            stats[task][f"{split}_unknown_papers"] = int(np.count_nonzero(~keep))
            for index in np.flatnonzero(~keep):
                column = next(c for c in id_columns if not found[c][index])
                unknown.append(
                    PaperProblem(
                        str(path),
                        f"line {lines[index]}",
                        f"{column} not in {METADATA_FILES[metadata][0]}",
                        columns[column][index],
                    )
                )
            dataset = Dataset.from_dict(columns, features=QREL_FEATURES if task in PROXIMITY_TASKS else None)
            splits[split] = dataset.select(np.flatnonzero(keep)) if not keep.all() else dataset
        (qrels if task in PROXIMITY_TASKS else labels)[task] = DatasetDict(splits)

    if not qrels and not labels:
        raise FileNotFoundError(f"{folder}: none of the SciDocs tasks ({', '.join(wanted)}) is there")
    if unknown:
        if not skip_invalid:
            raise InvalidPaperError(unknown)
        skipped.extend(unknown)
        logger.warning(
            "%s: dropped %d row(s) naming papers without metadata: %s",
            folder,
            len(unknown),
            {t: dict(c) for t, c in stats.items()},
        )
    if missing:
        logger.info("%s: not in this folder: %s", folder, ", ".join(missing))
    logger.info("%s: %s", folder, {t: dict(c) for t, c in stats.items()})
    return SciDocsRelease(str(folder), papers, qrels, labels, missing, stats, skipped)


def read_qrel_file(path: str | os.PathLike[str]) -> tuple[dict[str, list], list[int]]:
    """Read a TREC qrel file (``qid iteration docid relevance``, whitespace-separated, as pytrec_eval).

    Returns:
        columns ``query_id``, ``cand_id``, ``score`` and the line number of each row.

    Raises:
        ValueError: a line without exactly 4 fields, or a non-integer relevance (file and line named).
    """
    columns: dict[str, list] = {"query_id": [], "cand_id": [], "score": []}
    lines: list[int] = []
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise ValueError(
                    f"{path}, line {line_number}: a qrel line is 'qid 0 pid rel' (4 fields), got {len(fields)}: "
                    f"{line.strip()[:80]!r}"
                )
            try:
                score = int(fields[3])
            except ValueError:
                raise ValueError(
                    f"{path}, line {line_number}: relevance must be an integer, got {fields[3]!r}"
                ) from None
            columns["query_id"].append(fields[0])
            columns["cand_id"].append(fields[2])
            columns["score"].append(score)
            lines.append(line_number)
    return columns, lines


def _read_label_csv(path: Path) -> tuple[dict[str, list], list[int]]:
    columns: dict[str, list] = {"paper_id": [], "label": []}
    lines: list[int] = []
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != ["pid", "class_label"]:
            raise ValueError(f"{path}, line 1: expected the header 'pid,class_label', got {','.join(header or [])!r}")
        for row in reader:
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) != 2 or not row[0].strip():
                raise ValueError(
                    f"{path}, line {reader.line_num}: expected 'pid,class_label', got {','.join(row)[:80]!r}"
                )
            columns["paper_id"].append(row[0].strip())
            columns["label"].append(row[1].strip())
            lines.append(reader.line_num)
    # MAG and MeSH labels are integer class ids; keep strings if a release ever writes names.
    if columns["label"] and all(_is_int(v) for v in columns["label"]):
        columns["label"] = [int(v) for v in columns["label"]]
    return columns, lines


def _is_int(value: str) -> bool:
    return value.lstrip("-").isdigit()
