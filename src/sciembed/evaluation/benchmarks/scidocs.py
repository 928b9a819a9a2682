"""SciDocs (Cohan et al. 2020): a folder in its release layout.

It is scored with its own protocols.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...data.layouts import PAPER_COLUMNS, QREL_COLUMNS, DatasetLayout
from .base import Benchmark, BenchmarkInfo, Reading, Similarity, option

if TYPE_CHECKING:
    from ..tasks import Task, TaskScores, TaskSuite

logger = logging.getLogger(__name__)

#: SciDocs task folder -> the name its tables print.
SCIDOCS_NAMES = {
    "mag": "MAG",
    "mesh": "MeSH",
    "coview": "Co-View",
    "coread": "Co-Read",
    "cite": "Cite",
    "cocite": "Co-Cite",
    "recomm": "Recomm",
}
#: The seed SciDocs trains its recommender with.
RECOMMENDER_SEED = 7
#: The configs of a SciDocs folder built by ``datasets_scripts/build_scidocs.py`` and their columns: papers (split
#: ``evaluation``), the proximity tasks' judgements (``val`` / ``test``) and the classification labels (``train`` /
#: ``val`` / ``test``).
SCIDOCS_CONFIGS = (
    ("papers_*", PAPER_COLUMNS),
    *((task, QREL_COLUMNS) for task in ("cite", "cocite", "coview", "coread")),
    *((task, ("paper_id", "label")) for task in ("mag", "mesh")),
)


@dataclass(frozen=True)
class SciDocsOptions:
    """The options of SciDocs and Multi-SciDocs.

    Attributes:
        proximity_similarity: the score of proximity tasks (``l2`` as SciDocs, or Multi²SPE's ``min_facet_l2``).
        qrels_columns: the order of the ``.qrel`` files' query and document columns, when stated.
    """

    proximity_similarity: Similarity = option(Similarity.L2, recorded=True)
    qrels_columns: str | None = option(None)


class SciDocs(Benchmark):
    """SciDocs: proximity, classification and recommendation tasks, averaged over every metric."""

    info = BenchmarkInfo(
        name="scidocs",
        title="SciDocs",
        reads="a folder in SciDocs' release layout (any subset of its tasks)",
        example="==> paper_metadata_view_cite_read.json <==  (also paper_metadata_mag_mesh.json for mag/ and mesh/)\n"
        '{"p1": {"paper_id": "p1", "title": "Garbage collection", "abstract": "We reclaim memory."}}\n'
        "==> cite/test.qrel <==  (also val.qrel; cocite/, coview/, coread/: qid 0 pid relevance)\n"
        "p1 0 p2 1\n"
        "==> mag/train.csv <==  (also test.csv, val.csv; mesh/; recomm/ holds SciDocs' click logs)\n"
        "pid,class_label\n"
        "p1,4",
        citations=("cohan-etal-2020-specter",),
        release_hub_ids=("allenai/scidocs",),
        main_metric="average over its metrics",
    )
    layout = DatasetLayout(
        "scidocs", "SciDocs (Cohan et al. 2020) in its release layout", SCIDOCS_CONFIGS, ("papers_*",)
    )
    Options = SciDocsOptions

    def load(self, data: str, reading: Reading, options: SciDocsOptions) -> TaskSuite:
        """Build the tasks of a SciDocs folder.

        Args:
            data: the folder.
            reading: what every benchmark takes.
            options: the SciDocs options.
        """
        from ...data.scidocs import CLASSIFICATION_TASKS, PROXIMITY_TASKS, read_scidocs
        from ..supervised import SCIDOCS_CLASSIFICATION
        from ..tasks import ClassificationTask, ProximityTask, TaskSuite
        from .base import papers_named, qrels_of

        wanted, split, similarity = reading.wanted, reading.split, Similarity(options.proximity_similarity)
        candidates = tuple(t for t in PROXIMITY_TASKS + CLASSIFICATION_TASKS if wanted is None or t in wanted)
        release = (
            read_scidocs(
                data,
                tasks=candidates or None,
                skip_invalid=reading.skip_invalid,
                qrels_columns=options.qrels_columns,
            )
            if candidates
            else None
        )
        tasks: list[Task] = []
        missing = list(release.missing) if release else []
        if release:
            metadata = {key: {row["paper_id"]: row for row in papers} for key, papers in release.papers.items()}
            fields_of = _query_fields(Path(data))
            for task, splits in release.qrels.items():
                if split not in splits:
                    continue
                qrels = qrels_of(splits[split])
                ids = set(qrels) | {c for cands in qrels.values() for c in cands}
                tasks.append(
                    ProximityTask(
                        self.name,
                        SCIDOCS_NAMES[task],
                        papers_named(metadata["view_cite_read"], ids),
                        qrels=qrels,
                        similarity=similarity.value,
                        score_decimals=5 if similarity is Similarity.L2 else None,
                        query_groups=fields_of.get(task, {}),
                        task_id=task,
                    )
                )
            for task, splits in release.labels.items():
                if "train" not in splits or split not in splits:
                    continue
                train, test = splits["train"], splits[split]
                tasks.append(
                    ClassificationTask(
                        self.name,
                        SCIDOCS_NAMES[task],
                        papers_named(metadata["mag_mesh"], list(train["paper_id"]) + list(test["paper_id"])),
                        train=(list(train["paper_id"]), list(train["label"])),
                        test=(list(test["paper_id"]), list(test["label"])),
                        protocol=SCIDOCS_CLASSIFICATION,
                        task_id=task,
                    )
                )
        if wanted is None or "recomm" in wanted:
            tasks += self._recommendation(Path(data), reading, missing)
        return TaskSuite(self.name, data, tasks, missing, release.skipped if release else [])

    def _recommendation(self, folder: Path, reading: Reading, missing: list[str]) -> list[Task]:
        """SciDocs' recommendation task, or none (listed in ``missing``) when the folder lacks it."""
        if not folder.is_dir():  # read_scidocs says so for the other tasks; recommendations alone must too
            raise FileNotFoundError(f"{folder}: no such folder (a SciDocs release folder: data/ of allenai/scidocs)")
        if not (folder / "recomm").is_dir():
            if "recomm" not in missing:
                missing.append("recomm")
            return []
        from ..recommendation import RecommendationTask

        try:
            return [
                RecommendationTask.from_folder(
                    self.name,
                    SCIDOCS_NAMES["recomm"],
                    folder,
                    split=reading.split,
                    skip_invalid=reading.skip_invalid,
                    seed=RECOMMENDER_SEED if reading.seed is None else reading.seed,
                    task_id="recomm",
                )
            ]
        except FileNotFoundError as error:
            logger.warning("%s: recommendations not evaluated: %s", folder, error)
            missing.append(f"recomm ({error})")
            return []

    def is_release_folder(self, folder: Path) -> bool:
        """Whether ``folder`` holds SciDocs' whole release under its own file names.

        Papers of a user's own put in SciDocs' layout hold the files of the tasks they stand in for, not all.

        Args:
            folder: a local folder results were read from.
        """
        from ...data.scidocs import (
            CLASSIFICATION_SPLITS,
            CLASSIFICATION_TASKS,
            METADATA_FILES,
            PROXIMITY_TASKS,
            QREL_SPLITS,
        )

        tasks = [folder / task / f"{split}.qrel" for task in PROXIMITY_TASKS for split in QREL_SPLITS]
        tasks += [folder / task / f"{split}.csv" for task in CLASSIFICATION_TASKS for split in CLASSIFICATION_SPLITS]
        metadata = all(any((folder / name).is_file() for name in names) for names in METADATA_FILES.values())
        return metadata and all(path.is_file() for path in tasks)

    def averages(self, results: Sequence[TaskScores]) -> dict[str, float]:
        """SciDocs' average over every metric it reports.

        Args:
            results: the scored tasks.
        """
        import numpy as np

        from ..tasks import primary_values

        values = [v for r in results for v in primary_values(r)]
        return {f"average ({len(values)} metrics)": float(np.mean(values))} if values else {}


def _query_fields(folder: Path) -> dict[str, dict[str, str]]:
    """Each query's field of study by task, as Multi-SciDocs writes it (empty for SciDocs)."""
    from ...io import load_json_file

    path = folder / "query_fields.json"
    return load_json_file(path) if path.is_file() else {}
