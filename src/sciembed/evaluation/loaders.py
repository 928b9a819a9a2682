"""Benchmark folders (or Hub ids) to evaluation tasks, through the benchmark's own module.

Each benchmark of :data:`~.benchmarks.BENCHMARKS` reads its layout (``scidocs``, ``multi-scidocs``, ``scirepeval``,
``beir``, ``cocitation``, ``cacm``, and a user's own files over a papers file: ``classification`` and ``retrieval``).
:func:`load_tasks` checks the task ids asked for and what each task has to score. A folder holding only some of a
benchmark's tasks gives those tasks and lists the others in :attr:`TaskSuite.missing`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .benchmarks import BenchmarkOptions, Reading, benchmark_named
from .benchmarks.base import papers_named, qrels_of
from .benchmarks.cacm import cacm_category_task, cacm_cite_task, cite_task
from .benchmarks.scidocs import SCIDOCS_NAMES
from .benchmarks.scirepeval import SCIREPEVAL_TASKS, SciRepEvalTaskSpec
from .tasks import TaskSuite

if TYPE_CHECKING:
    from .mteb_bridge import MtebSuite

__all__ = [
    "SCIDOCS_NAMES",
    "SCIREPEVAL_TASKS",
    "SciRepEvalTaskSpec",
    "TaskSuite",
    "cacm_category_task",
    "cacm_cite_task",
    "cite_task",
    "load_tasks",
    "papers_named",
    "qrels_of",
]


#: What :class:`~.benchmarks.Reading` holds that scoring applies, not reading, and where to give it.
SCORING_ONLY = {"cutoffs": "the rank cut-offs are scored by evaluate(model, suite, reading=Reading(cutoffs=...))"}


def load_tasks(
    benchmark: str,
    data: str | os.PathLike[str] | None,
    options: BenchmarkOptions | None = None,
    *,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    skip_invalid: bool = False,
    seed: int | None = None,
    text_fields: Sequence[str] | None = None,
    **removed: Any,
) -> TaskSuite | MtebSuite:
    """Read a benchmark and build its tasks.

    A benchmark's own options come only as its options dataclass:
    ``load_tasks("retrieval", "qrels.txt", RetrievalOptions(papers="papers.jsonl"))``.

    Args:
        benchmark: one of :data:`~.benchmarks.BENCHMARK_NAMES`.
        data: the benchmark folder, file or Hub id (``mteb``: a BEIR folder, or ``None`` with ``tasks``).
        options: the benchmark's options dataclass (such as :class:`~.benchmarks.RetrievalOptions`), checked.
        tasks: the task ids to keep. Unknown ids are an error.
        split: the judged split to score (``test``, or ``val`` to tune).
        skip_invalid: leave out rows naming papers without metadata (counted and reported) instead of failing.
        seed: the seed of what is sampled or trained here (default: each benchmark's own).
        text_fields: the fields a papers file is checked for (``classification`` / ``retrieval``, default: title
            and abstract).
        removed: refused before anything is read. A benchmark option given by name names its dataclass.

    Raises:
        ValueError: an unknown benchmark, or an option of another benchmark (the benchmark and option named).
        TypeError: a benchmark option given by name (naming the dataclass field it goes in), any other keyword, or
            options of another benchmark's dataclass.
    """
    chosen = benchmark_named(benchmark)
    chosen.refuse_named_options("load_tasks", removed)
    for name in removed:
        if name in SCORING_ONLY:
            raise TypeError(f"load_tasks() does not take {name}: {SCORING_ONLY[name]}")
        raise TypeError(f"load_tasks() got an unexpected keyword argument {name!r}")
    options = chosen.checked_options(options)
    reading = Reading(
        tasks=tasks or None, split=split, skip_invalid=skip_invalid, seed=seed, text_fields=text_fields or None
    )
    return chosen.read(data, reading, options)
