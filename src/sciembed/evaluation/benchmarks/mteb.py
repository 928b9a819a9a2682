"""MTEB (Muennighoff et al. 2023): its tasks by name, or a local BEIR folder.

Both are run by mteb's own evaluators.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Benchmark, BenchmarkInfo, Reading, Scored, Scoring, option
from .beir import BEIR_FILES

if TYPE_CHECKING:
    from ...encode import Encoder
    from ..mteb_bridge import MtebSuite
    from ..tasks import TaskScores

#: The report settings that sciembed's own scoring uses and mteb's does not.
UNUSED_SETTINGS = ("proximity_similarity", "few_shot", "seed", "cutoffs")


@dataclass(frozen=True)
class MtebOptions:
    """The options of MTEB.

    Attributes:
        qrels_columns: the order of a BEIR folder's qrels columns, when stated.
    """

    qrels_columns: str | None = option(None)


class Mteb(Benchmark):
    """MTEB's tasks, embedded by sciembed and scored by mteb."""

    info = BenchmarkInfo(
        name="mteb",
        title="MTEB",
        reads="a BEIR folder (as beir's) run offline as an MTEB retrieval task; or none, with --tasks naming MTEB's "
        "tasks (SCIDOCS, SciFact, ...; mteb downloads them from the Hub)",
        example="==> corpus.jsonl <==  (a BEIR folder; or no --data and --tasks SCIDOCS SciFact)\n" + BEIR_FILES,
        citations=("muennighoff-etal-2023-mteb",),
        main_metric="each task's main score",
    )
    Options = MtebOptions
    reads_embedding_files = False

    def read(self, data: str | os.PathLike[str] | None, reading: Reading, options: MtebOptions) -> MtebSuite:
        """MTEB's tasks by name (``reading.tasks``), or a BEIR folder as one.

        Args:
            data: a BEIR folder, or ``None`` with task names.
            reading: what every benchmark takes.
            options: the MTEB options.
        """
        from ..mteb_bridge import load_mteb_tasks

        return load_mteb_tasks(
            data,
            tasks=reading.tasks,
            split=reading.split,
            skip_invalid=reading.skip_invalid,
            qrels_columns=options.qrels_columns,
        )

    def run(self, encoder: Encoder, suite: MtebSuite, settings: Mapping[str, Any], scoring: Scoring) -> Scored:
        """Run the suite through mteb with ``encoder``.

        Args:
            encoder: the encoder.
            suite: MTEB's tasks.
            settings: the report's settings.
            scoring: how the texts are embedded.
        """
        from ...data.papers import TEXT_FIELDS
        from ..mteb_bridge import mteb_version, run_mteb

        text_fields = scoring.text_fields
        own = getattr(getattr(encoder, "settings", None), "text_fields", TEXT_FIELDS)
        if text_fields is not None and tuple(own) != tuple(text_fields):
            from ...encoders import WindowedEncoder, WindowSettings

            # mteb's documents are made texts by the encoder itself: one that reads the fields asked for.
            encoder = WindowedEncoder(encoder, WindowSettings(text_fields=tuple(text_fields), windows=False))
        results, embedding = run_mteb(
            encoder,
            suite,
            cache_dir=scoring.cache_dir,
            batch_size=scoring.batch_size,
            show_progress_bar=scoring.show_progress_bar,
        )
        settings = {
            **{k: v for k, v in settings.items() if k not in UNUSED_SETTINGS},
            "similarity": "cosine",
            "mteb_version": mteb_version(),
        }
        return Scored(encoder.name_or_path, results, settings, embedding)

    def averages(self, results: Sequence[TaskScores]) -> dict[str, float]:
        """MTEB's means: over tasks, and with several task types over types.

        A task's score is the mean of its main score over its splits and subsets (mteb's ``TaskResult.get_score``).

        Args:
            results: the scored tasks.
        """
        import numpy as np

        from ..tasks import primary_values

        by_task: dict[str, list[float]] = {}
        kinds: dict[str, str] = {}
        for result in results:
            task = result.details.get("mteb_task", result.task)
            by_task.setdefault(task, []).extend(primary_values(result))
            kinds[task] = result.kind
        if not by_task:
            return {}
        scores = {task: float(np.mean(values)) for task, values in by_task.items()}
        out = {f"mean ({len(scores)} tasks)": float(np.mean(list(scores.values())))}
        types: dict[str, list[float]] = {}
        for task, score in scores.items():
            types.setdefault(kinds[task], []).append(score)
        if len(types) > 1:
            out[f"mean over task types ({len(types)} types)"] = float(np.mean([np.mean(v) for v in types.values()]))
        return out
