"""Task mixtures: several sources in one multi-task run, as SciRepEval's task configuration lists them.

SciRepEval (Singh et al. 2023) trains one model on many tasks at once, each task a named source of a type
(classification, proximity, ad-hoc search) with its own sample size. A task mixture is that list, in a JSON or
YAML file given as ``--data`` to a multi-task recipe (``scirepeval-ctrl``, ``-adapters``, ``-fusion``, ``-pals``)::

    [
      {"name": "cite", "type": "proximity", "data": "cacm"},
      {"name": "categories", "type": "classification", "data": "cacm", "exclude": "test-papers.txt"},
      {"name": "fos", "type": "classification", "data": "scirepeval-samples/fos_small.json", "sample_size": 2000}
    ]

(or the same list under a ``tasks`` key). Each task has:

- ``name``: the task's name (its head and its share of every batch).
- ``type``: ``classification`` (CACM's CR categories, a SciRepEval MeSH sample, or a fields-of-study sample, which is
  multi-label), ``proximity`` (a citation graph, in any layout ``sciembed train`` reads, sampled into SPECTER
  triplets, or SciRepEval's ready triplets, ``specter_small.json``) or ``search`` (SciRepEval search sessions).
  SciRepEval's own names ``triplet`` and ``ir`` are read as ``proximity`` and ``search``.
- ``data``: the source, relative to the mixture file's folder.
- ``sample_size`` (optional): at most this many training rows, a seeded sample (SciRepEval's ``{"train": N}``
  is read too).
- ``exclude`` (optional): papers never trained on, as a list of ids or a file of ids (one per line): e.g. the test
  papers of an evaluation on the same labels. Classification rows about them are left out (counted), and a
  citation graph's triplets never hold them.
- ``multi_label`` (optional): checked against what the data holds.
- ``weight`` (optional, default 1): the task's share of every batch's rows, in proportion to the other tasks'
  weights (SciRepEval gives every task an equal share, a larger weight gives a task more examples, and a ranking
  task more in-batch negatives, per step).

For a multi-task recipe a mixture holds at most one citation graph: its queries are split as the single-source recipes
split them (``data.held_out``, ``data.validation``, ``data.seed``), and its held-out and validation queries are the
run's cite evaluation, so a mixture run and a ``specter`` run of the same seed are judged on the same queries.

The citation recipes (``specter``, ``scincl``, ``multi2spe``, ``moe-cocitation``) take a mixture of citation graphs,
one per domain (:func:`domain_examples`), the setting in which Multi²SPE and MoE BERT make their claims: each task's
name is its domain, every graph's queries are split by the same settings, each row carries its ``domain`` (MoE BERT
routes it to that domain's expert, one expert per domain), and each domain has its own held-out cite task
(``cite_<domain>``). A graph given as two files is ``"data": {"papers": ..., "citations": ...}``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..io import RepeatedKeyError, json_place, loads_json, loads_yaml
from .examples import (
    CitationFiles,
    MultiTaskData,
    TaskKind,
    TaskRows,
    classification_rows,
    exclusion_counts,
    read_citation_source,
    read_paper_ids,
    scirepeval_triplets,
    search_rows,
    split_citation_queries,
    tagged_dataset,
    triplet_dataset,
    triplet_rows,
)

#: The task kinds a mixture names (a classification task's data tells whether it is multi-label).
TASK_TYPES = (TaskKind.CLASSIFICATION, TaskKind.PROXIMITY, TaskKind.SEARCH)
#: SciRepEval's task-configuration names for our types.
TYPE_ALIASES = {"triplet": TaskKind.PROXIMITY, "ir": TaskKind.SEARCH}
_KEYS = ("name", "type", "data", "sample_size", "exclude", "multi_label", "weight")
#: Triplets per query paper of a citation graph task (the specter recipe's).
TRIPLETS_PER_QUERY = 5


@dataclass(frozen=True)
class MixtureTask:
    """One task of a mixture (see the module docstring for each field)."""

    name: str
    type: TaskKind
    data: Path | CitationFiles
    sample_size: int | None = None
    exclude: frozenset[str] = frozenset()
    multi_label: bool | None = None
    weight: float = 1.0


@dataclass
class MixtureExamples:
    """A mixture's training rows, the counts made on the way, and the graph's cite tasks.

    Attributes:
        data: the task-tagged rows (:class:`~sciembed.training.examples.MultiTaskData`).
        counts: per task its kind, its rows (``rows``), those sampled into training (``used``) and what gave none.
            For the citation graph, its query split.
        evaluation, validation: the held-out and validation cite tasks (``None`` without them).
        weights: each task's weight in every batch (``None`` when all are equal).
    """

    data: MultiTaskData
    counts: dict[str, Any] = field(default_factory=dict)
    evaluation: Any = None
    validation: Any = None
    weights: dict[str, float] | None = None


#: A mixture file names its tasks' data; a JSON file larger than this is data itself.
MIXTURE_MAX_BYTES = 1 << 20


def is_task_mixture(path: str | os.PathLike[str] | CitationFiles) -> bool:
    """Whether ``path`` names a mixture file.

    A mixture file is a ``.yaml`` or ``.yml`` file, or a ``.json`` file that opens as a list of tasks or a ``tasks``
    key and is not SciRepEval's ready triplets (``specter*.json``). A SciRepEval sample or SPECTER's ``data.json``
    opens otherwise, and is read as what it is."""
    if isinstance(path, CitationFiles) or not Path(path).is_file():
        return False
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        return True
    if path.suffix != ".json" or not _is_graph(path):
        return False
    if path.stat().st_size > MIXTURE_MAX_BYTES:  # a data file, not a list of tasks
        return False
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    entries = loaded.get("tasks") if isinstance(loaded, Mapping) else loaded
    # Every task names its data; the records of a sample or of SPECTER's data.json do not.
    return isinstance(entries, list) and bool(entries) and all(isinstance(e, Mapping) and "data" in e for e in entries)


def read_task_mixture(path: str | os.PathLike[str]) -> list[MixtureTask]:
    """The tasks of a mixture file, checked.

    Every problem names the file and the task (its position and name).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        problems: tuple[type[Exception], ...] = (yaml.YAMLError, RepeatedKeyError)
        parse = loads_yaml
    else:
        problems, parse = (json.JSONDecodeError, RepeatedKeyError), loads_json
    try:
        loaded = parse(text)
    except RepeatedKeyError as error:
        raise ValueError(f"{json_place(path, error)}: not a readable task mixture: {error}") from None
    except problems as error:
        raise ValueError(f"{path}: not a readable task mixture: {error}") from None
    entries = loaded.get("tasks") if isinstance(loaded, Mapping) else loaded
    if not isinstance(entries, list) or not entries:
        raise ValueError(
            f"{path}: a task mixture is a non-empty list of tasks (name, type, data), or one under a 'tasks' key; "
            "a folder of SciRepEval samples is given as the folder itself"
        )
    tasks = [_task(entry, number, path) for number, entry in enumerate(entries, 1)]
    names = [task.name for task in tasks]
    if len(set(names)) < len(names):
        raise ValueError(f"{path}: task names repeat ({', '.join(sorted({n for n in names if names.count(n) > 1}))})")
    return tasks


def _task(entry: Any, number: int, path: Path) -> MixtureTask:
    where = f"{path}, task {number}"
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: a task is a mapping with name, type and data, got {type(entry).__name__}")
    if isinstance(entry.get("name"), str):
        where += f" ({entry['name']})"
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; a task takes {', '.join(_KEYS)}")
    missing = [key for key in ("name", "type", "data") if not entry.get(key)]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    kind = TYPE_ALIASES.get(entry["type"], entry["type"])
    if kind not in TASK_TYPES:
        raise ValueError(
            f"{where}: unknown type {entry['type']!r}; one of {', '.join(TASK_TYPES)} "
            f"(or SciRepEval's {', '.join(TYPE_ALIASES)})"
        )
    kind = TaskKind(kind)
    data: Path | CitationFiles
    if isinstance(entry["data"], Mapping):
        if set(entry["data"]) != {"papers", "citations"}:
            raise ValueError(
                f"{where}: data as a mapping gives a citation graph's two files, papers and citations; got "
                f"{', '.join(entry['data'])}"
            )
        data = CitationFiles(path.parent / entry["data"]["papers"], path.parent / entry["data"]["citations"])
        missing_files = [str(f) for f in (data.papers, data.citations) if not f.is_file()]
        if missing_files:
            raise ValueError(f"{where}: {', '.join(missing_files)} does not exist")
        if kind is not TaskKind.PROXIMITY:
            raise ValueError(f"{where}: papers and citations make a citation graph, a proximity task, not {kind}")
    else:
        data = path.parent / entry["data"]
        if not data.exists():
            raise ValueError(f"{where}: {data} does not exist")
    size = entry.get("sample_size")
    if isinstance(size, Mapping):
        size = size.get("train")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise ValueError(f"{where}: sample_size must be a positive integer, got {size!r}")
    exclude = entry.get("exclude") or []
    if isinstance(exclude, str):
        exclude = read_paper_ids(path.parent / exclude, f"{where}: exclude")
    if not isinstance(exclude, list):
        raise ValueError(f"{where}: exclude is a list of paper ids or a file of them, got {type(exclude).__name__}")
    if exclude and kind is TaskKind.SEARCH:
        raise ValueError(
            f"{where}: exclude takes papers out of classification tasks and citation graphs, not search sessions"
        )
    multi_label = entry.get("multi_label")
    if multi_label is not None and not isinstance(multi_label, bool):
        raise ValueError(f"{where}: multi_label is true or false, got {multi_label!r}")
    weight = entry.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
        raise ValueError(f"{where}: weight is a positive number (the task's share of every batch), got {weight!r}")
    return MixtureTask(entry["name"], kind, data, size, frozenset(str(i) for i in exclude), multi_label, float(weight))


def _is_graph(data: Path | CitationFiles) -> bool:
    """A proximity source that is a citation graph (sampled here) rather than SciRepEval's ready triplets."""
    return isinstance(data, CitationFiles) or not (
        data.is_file() and data.suffix == ".json" and data.name.startswith("specter")
    )


def _is_graph_task(task: MixtureTask) -> bool:
    """A proximity task whose data is a citation graph."""
    return task.type is TaskKind.PROXIMITY and _is_graph(task.data)


def mixture_examples(
    tasks: list[MixtureTask],
    *,
    held_out: float = 0.0,
    validation: float = 0.0,
    seed: int = 0,
    max_per_task: int | None = None,
    smart_links: str = "cacm",
    skip_invalid: bool = True,
) -> MixtureExamples:
    """Reads every task's source and makes one task-tagged dataset.

    Each task is sampled to its ``sample_size``, else to ``max_per_task``. The citation graph's queries are split
    by ``held_out`` / ``validation`` / ``seed``.
    """
    from ..evaluation.loaders import TaskSuite

    graphs = [task.name for task in tasks if _is_graph_task(task)]
    if len(graphs) > 1:
        raise ValueError(
            f"a multi-task mixture takes one citation graph (its held-out queries are the run's cite evaluation); "
            f"found {len(graphs)}: {', '.join(graphs)} (several graphs, one per domain, are for the citation recipes)"
        )
    rows: dict[str, TaskRows] = {}
    counts: dict[str, Any] = {}
    evaluation = checking = None
    for task in tasks:
        if not _is_graph_task(task):
            task_rows = _TASK_ROWS[task.type](task, skip_invalid, smart_links)
        else:
            source = read_citation_source(task.data, skip_invalid=skip_invalid, smart_links=smart_links)
            split = split_citation_queries(source, held_out, validation, seed)
            triplets = triplet_dataset(
                source,
                sampler="specter",
                queries=split.train,
                exclude=[*split.unseen, *task.exclude],
                seed=seed,
                triplets_per_query=TRIPLETS_PER_QUERY,
            )
            task_rows = triplet_rows(triplets)
            counts.update(split.counts(), skipped_records=len(source.skipped))
            if task.exclude:
                counts.update(exclusion_counts(task.exclude, source.papers.keys(), f"task {task.name}: exclude"))
            if split.held_out:
                evaluation = TaskSuite("held-out", str(task.data), [source.cite_task(split.held_out, seed=seed)])
            if split.validation:
                checking = TaskSuite("validation", str(task.data), [source.cite_task(split.validation, seed=seed)])
        rows[task.name] = task_rows
    limits = {task.name: task.sample_size or max_per_task for task in tasks}
    data = tagged_dataset(rows, max_per_task=limits, seed=seed)
    used = Counter(data.dataset["task"])
    counts["tasks"] = {
        name: {"kind": r.kind, "rows": len(r.rows), "used": used[name], **r.skipped} for name, r in rows.items()
    }
    weights = {task.name: task.weight for task in tasks}
    return MixtureExamples(data, counts, evaluation, checking, weights if len(set(weights.values())) > 1 else None)


def _classification_task(task: MixtureTask, skip_invalid: bool, smart_links: str) -> TaskRows:
    """A classification task's rows, checked against its ``multi_label``, its excluded papers left out."""
    task_rows = classification_rows(task.data, skip_invalid=skip_invalid, smart_links=smart_links)
    multi_label = task_rows.kind is TaskKind.MULTILABEL
    if task.multi_label is not None and task.multi_label != multi_label:
        raise ValueError(
            f"task {task.name}: multi_label is {str(task.multi_label).lower()}, but {task.data} holds "
            f"{'several labels' if multi_label else 'one label'} per paper"
        )
    return task_rows.without(set(task.exclude), f"task {task.name}: exclude")


def _search_task(task: MixtureTask, skip_invalid: bool, smart_links: str) -> TaskRows:
    """A search task's rows from SciRepEval's search sessions."""
    return search_rows(task.data, skip_invalid=skip_invalid)


def _ready_triplets_task(task: MixtureTask, skip_invalid: bool, smart_links: str) -> TaskRows:
    """A proximity task's rows from SciRepEval's ready triplets, which name no papers to exclude."""
    if task.exclude:
        raise ValueError(
            f"task {task.name}: {task.data} holds ready triplets without paper ids; exclude needs a citation graph"
        )
    return triplet_rows(scirepeval_triplets(task.data, skip_invalid=skip_invalid))


#: A task type -> how its rows are read (a citation graph's proximity task is sampled apart).
_TASK_ROWS = {
    TaskKind.CLASSIFICATION: _classification_task,
    TaskKind.SEARCH: _search_task,
    TaskKind.PROXIMITY: _ready_triplets_task,
}


@dataclass
class DomainExamples:
    """A citation recipe's examples from several citation graphs, one per domain.

    Attributes:
        train: the triplets or co-citation pairs of every domain, each row tagged with its ``domain``.
        domains: the domains (the tasks' names), in the mixture's order.
        counts: per domain, its query split, examples and what was skipped or excluded.
        evaluation, validation: a held-out (validation) cite task per domain, ``cite_<domain>``, whose papers a
            mixture-of-experts model embeds through that domain's expert.
    """

    train: Any
    domains: list[str]
    counts: dict[str, Any]
    evaluation: Any = None
    validation: Any = None


def domain_examples(
    tasks: list[MixtureTask],
    *,
    pairs: str | None,
    sampler: str | None = None,
    sampler_options: Mapping[str, Any] | None = None,
    held_out: float = 0.0,
    validation: float = 0.0,
    seed: int = 0,
    exclude: set[str] | frozenset[str] = frozenset(),
    smart_links: str = "cacm",
) -> DomainExamples:
    """The examples of a citation recipe trained on several domains.

    This is Multi2SPE's and MoE BERT's multi-domain setting. Every task is a citation graph whose name is its domain,
    its queries split by ``held_out`` / ``validation`` / ``seed`` as a single graph's are. ``pairs`` makes pairs of
    that kind (``cocitations`` for MoE BERT, see :func:`~.examples.pair_dataset`), else ``sampler`` triplets."""
    from datasets import concatenate_datasets

    from ..evaluation.loaders import TaskSuite
    from .examples import pair_dataset

    others = [task.name for task in tasks if not _is_graph_task(task)]
    if others:
        raise ValueError(
            f"a citation recipe's mixture is one citation graph per domain; not a citation graph: {', '.join(others)}"
        )
    parts, counts, held, tuning = [], {}, [], []
    for task in tasks:
        source = read_citation_source(task.data, smart_links=smart_links)
        split = split_citation_queries(source, held_out, validation, seed)
        excluded = set(exclude) | set(task.exclude)
        unseen = [*split.unseen, *sorted(excluded)]
        if pairs:
            part = pair_dataset(source, exclude=unseen, domain=task.name, kind=pairs)
        else:
            part = triplet_dataset(
                source,
                sampler=sampler or "specter",
                queries=split.train,
                exclude=unseen,
                seed=seed,
                **(sampler_options or {}),
            )
            part = part.add_column("domain", [task.name] * len(part))
        if task.sample_size is not None and len(part) > task.sample_size:
            part = part.shuffle(seed=seed).select(range(task.sample_size))
        parts.append(part)
        counts[task.name] = {
            **split.counts(),
            "examples": len(part),
            "skipped_records": len(source.skipped),
            **(exclusion_counts(excluded, source.papers.keys(), f"task {task.name}: exclude") if excluded else {}),
        }
        if split.held_out:
            held.append(
                replace(source.cite_task(split.held_out, seed=seed), task_id=f"cite_{task.name}", domain=task.name)
            )
        if split.validation:
            tuning.append(
                replace(source.cite_task(split.validation, seed=seed), task_id=f"cite_{task.name}", domain=task.name)
            )
    return DomainExamples(
        concatenate_datasets(parts),
        [task.name for task in tasks],
        counts,
        TaskSuite("held-out", "domains", held) if held else None,
        TaskSuite("validation", "domains", tuning) if tuning else None,
    )
