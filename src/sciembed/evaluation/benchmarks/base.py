"""What every benchmark is: its facts, its options, its tasks and its averages.

A benchmark holds its facts and its own options, reads its data into tasks, and averages their scores.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ...choices import StrChoice
from ...data.layouts import DatasetLayout, register_layout
from ...data.papers import TEXT_FIELDS, text_field_names
from ...io import files_read, input_digests

if TYPE_CHECKING:
    from ...data.papers import PaperProblem
    from ...encode import Encoder
    from ..mteb_bridge import MtebSuite
    from ..tasks import Task, TaskScores, TaskSuite


class Similarity(StrChoice):
    """How a proximity task scores a candidate against its query paper."""

    L2 = "l2"
    MIN_FACET_L2 = "min_facet_l2"


class Candidates(StrChoice):
    """What a query of a qrels file ranks."""

    ALL = "all"
    JUDGED = "judged"


@dataclass(frozen=True)
class BenchmarkInfo:
    """The facts about one benchmark that the CLI, cards, tables and docs show.

    Attributes:
        name: the ``--benchmark`` value.
        title: how tables and model cards name it.
        reads: what ``--data`` (and the options that go with it) is, in one line.
        example: the first lines of its files, each headed ``==> name <==`` (as ``head`` prints several files).
        citations: the keys (of ``hub_cards/citations.bib``) a card cites for it.
        release_hub_ids: the Hub ids of its own release (results read from one carry the benchmark's names).
        main_metric: the number its paper leads with.
    """

    name: str
    title: str
    reads: str
    example: str
    citations: tuple[str, ...] = ()
    release_hub_ids: tuple[str, ...] = ()
    main_metric: str = ""


@dataclass(frozen=True)
class NoOptions:
    """The options of a benchmark that takes none of its own."""


@dataclass(frozen=True)
class Reading:
    """How every benchmark is read, whatever its own options.

    Attributes:
        tasks: the task ids to keep (``None``: every task found). Unknown ids are an error.
        split: the judged split to score (``test``, or ``val`` to tune).
        skip_invalid: leave out bad records (reported) instead of stopping.
        seed: the seed of what is sampled or trained while reading (``None``: each benchmark's own).
        text_fields: the paper fields every paper's text is made of (``None``: each task's own, a papers file
            checked for title and abstract).
        cutoffs: the ranks k of the nDCG@k, P@k and recall@k every ranking task reports (``None``: 5, 10, 20, 100).
    """

    tasks: tuple[str, ...] | None = None
    split: str = "test"
    skip_invalid: bool = False
    seed: int | None = None
    text_fields: tuple[str, ...] | None = None
    cutoffs: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.tasks is not None:
            object.__setattr__(self, "tasks", (self.tasks,) if isinstance(self.tasks, str) else tuple(self.tasks))
        if self.text_fields is not None:
            object.__setattr__(self, "text_fields", text_field_names(self.text_fields))
        if self.cutoffs is not None:
            object.__setattr__(self, "cutoffs", tuple(self.cutoffs))

    @property
    def wanted(self) -> set[str] | None:
        """The task ids to keep, as a set (``None``: all)."""
        return set(self.tasks) if self.tasks else None

    @property
    def checked_fields(self) -> tuple[str, ...]:
        """The fields a papers file is checked for: :attr:`text_fields`, or title and abstract."""
        return self.text_fields or TEXT_FIELDS


@dataclass(frozen=True)
class Scoring:
    """How a suite's texts are embedded and its tasks scored, whatever the benchmark.

    Attributes:
        cache_dir: where vectors are cached (``None``: in memory).
        batch_size: texts per forward pass (``None``: the encoder's).
        n_jobs: processes for the classifiers' grid searches (-1: all cores).
        show_progress_bar: show progress while embedding (``None``: when the logger shows INFO).
        text_fields: the paper fields every task's text is made of (``None``: each task's own).
    """

    cache_dir: Path | None = None
    batch_size: int | None = None
    n_jobs: int = -1
    show_progress_bar: bool | None = None
    text_fields: tuple[str, ...] | None = None


def option(default: Any, flag: str | None = None, *, recorded: bool = False) -> Any:
    """A benchmark option: a dataclass field with its command-line flag.

    Args:
        default: its value when not given.
        flag: its command-line flag (default: ``--`` and the field's name with dashes).
        recorded: the report's settings record it.
    """
    return field(default=default, metadata={"flag": flag, "recorded": recorded})


def option_flag(name: str, metadata: Mapping[str, Any]) -> str:
    """The command-line flag of the option ``name``.

    Args:
        name: the field's name.
        metadata: the field's metadata (:func:`option`).
    """
    return metadata.get("flag") or "--" + name.replace("_", "-")


@dataclass(frozen=True)
class Scored:
    """What a benchmark that scores its own suite gives for the report.

    Attributes:
        model: the name of the model that embedded the texts.
        results: the scored tasks.
        settings: the report's settings.
        embedding: how the texts were embedded.
    """

    model: str
    results: list[TaskScores]
    settings: dict[str, Any]
    embedding: dict[str, Any]


#: Every benchmark class by name, as each registers itself (:meth:`Benchmark.__init_subclass__`).
_REGISTERED: dict[str, type[Benchmark]] = {}


class Benchmark:
    """One benchmark: its facts, its options dataclass, its reader and its averages."""

    info: ClassVar[BenchmarkInfo]
    #: The configs and columns of the folder ``datasets_scripts/`` builds for it (``None``: it has no builder).
    layout: ClassVar[DatasetLayout | None] = None
    #: The dataclass of the options this benchmark takes beside :class:`Reading`.
    Options: ClassVar[type] = NoOptions
    #: Whether its papers' vectors can be read from an embedding file (``--embeddings``).
    reads_embedding_files: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "info" not in vars(cls):  # a kind of benchmark that several share
            return
        _REGISTERED[cls.info.name] = cls
        if cls.layout is not None:
            register_layout(cls.layout)

    @property
    def name(self) -> str:
        """The ``--benchmark`` value."""
        return self.info.name

    def options(self, given: Mapping[str, Any]) -> Any:
        """Build the options dataclass from keyword options, refusing those of other benchmarks.

        Args:
            given: option name -> value. A ``None`` value counts as not given.
        """
        own = {f.name for f in fields(self.Options)}
        for name, value in given.items():
            if value is None or name in own:
                continue
            takers = sorted(b.info.name for b in _REGISTERED.values() if name in {f.name for f in fields(b.Options)})
            if not takers:
                raise TypeError(f"no benchmark takes the option {name!r}")
            metadata = next(f.metadata for b in _REGISTERED.values() for f in fields(b.Options) if f.name == name)
            flag = option_flag(name, metadata)
            raise ValueError(
                f"{flag}: not for --benchmark {self.name}, which does not take it; {flag} is for --benchmark "
                f"{' or '.join(takers)}"
            )
        return self.Options(
            **_members(self.Options, {name: value for name, value in given.items() if value is not None})
        )

    def refuse_named_options(self, function: str, given: Mapping[str, Any]) -> None:
        """Refuse benchmark options given by name, naming the options dataclass each goes in.

        Args:
            function: the function that took them, as the message names it (``evaluate``, ``load_tasks``).
            given: the keyword arguments the function does not take. Those no benchmark takes are left to the caller.

        Raises:
            ValueError: an option of another benchmark, naming the benchmarks that take it.
            TypeError: an option of this benchmark, naming its field of :attr:`Options`.
        """
        own = {f.name for f in fields(self.Options)}
        taken = {f.name for b in _REGISTERED.values() for f in fields(b.Options)}
        self.options({name: value for name, value in given.items() if name in taken - own})
        for name in given:
            if name in own:
                raise TypeError(
                    f"{function}() takes {name} inside another argument: "
                    f"options=sciembed.evaluation.benchmarks.{self.Options.__name__}({name}=...)"
                )

    def checked_options(self, options: object | None) -> Any:
        """This benchmark's options: ``options`` checked (its choices made members), or the defaults.

        Args:
            options: an instance of :attr:`Options`, or ``None``.

        Raises:
            TypeError: options of another benchmark's dataclass, naming the one this benchmark takes.
            ValueError: a choice that is not one of its members.
        """
        if options is None:
            return self.Options()
        if type(options) is not self.Options:
            takers = sorted(b.info.name for b in _REGISTERED.values() if b.Options is type(options))
            raise TypeError(
                f"options={type(options).__name__}(...): not for --benchmark {self.name}, which takes "
                f"{self.Options.__name__}"
                + (f"; {type(options).__name__} is for --benchmark {' or '.join(takers)}" if takers else "")
            )
        return replace(options, **_members(options, {f.name: getattr(options, f.name) for f in fields(options)}))

    def recorded(self, options: Any) -> dict[str, Any]:
        """The options the report's settings record.

        Args:
            options: this benchmark's options.
        """
        return {f.name: _plain(getattr(options, f.name)) for f in fields(options) if f.metadata.get("recorded", False)}

    def read(self, data: str | os.PathLike[str] | None, reading: Reading, options: Any) -> TaskSuite | MtebSuite:
        """Read ``data`` into this benchmark's tasks.

        Unknown task ids and tasks with nothing to score are refused.

        Args:
            data: the benchmark's folder, file or Hub id.
            reading: what every benchmark takes.
            options: this benchmark's own options.
        """
        if data is None:
            raise ValueError(f"--benchmark {self.name} needs --data (what it is: sciembed evaluate --help)")
        data, name, tasks = str(data), self.name, reading.tasks
        with files_read() as opened:
            suite = self.load(data, reading, options)
        if tasks:
            known = {t.task_id for t in suite.tasks} | set(suite.missing)
            unknown = sorted(set(tasks) - known)
            if unknown:
                # The suite was built for the requested ids only; build it whole (on this error path alone) to list
                # them all.
                whole = self.load(data, replace(reading, tasks=None), options)
                here = sorted({t.task_id for t in whole.tasks})
                raise ValueError(
                    f"{data}: no task(s) {unknown} in {name}; tasks here: {', '.join(here) or 'none'}"
                    + (f" (absent from this folder: {', '.join(whole.missing)})" if whole.missing else "")
                )
        for task in list(suite.tasks):
            if (lacking := task.lacking()) is None:
                continue
            if tasks or len(suite.tasks) == 1:
                raise ValueError(
                    f"{data}: the {name} task {task.task_id!r} has nothing to score: {lacking}; check the files it is "
                    "read from" + (", or leave it out of --tasks" if tasks else "")
                )
            suite.tasks.remove(task)
            suite.missing.append(f"{task.task_id} (nothing to score: {lacking})")
        if not suite.tasks:
            raise ValueError(
                f"{data}: none of the {name} tasks{' ' + str(sorted(tasks)) if tasks else ''} found; missing: "
                f"{', '.join(suite.missing)}"
            )
        suite.inputs = input_digests(self.inputs(data, options), opened)
        return suite

    def load(self, data: str, reading: Reading, options: Any) -> TaskSuite:
        """Build the tasks of ``data`` (subclasses implement it).

        Args:
            data: the benchmark's folder, file or Hub id.
            reading: what every benchmark takes.
            options: this benchmark's own options.
        """
        raise NotImplementedError

    def inputs(self, data: str, options: Any) -> dict[str, str | os.PathLike[str] | None]:
        """The files read, by input, whose digests the report keeps.

        Args:
            data: the benchmark's folder, file or Hub id.
            options: this benchmark's own options.
        """
        return {"data": data}

    def run(self, encoder: Encoder, suite: Any, settings: Mapping[str, Any], scoring: Scoring) -> Scored:
        """Score a suite that is not sciembed's own tasks.

        Only a benchmark run by another library has such a suite.

        Args:
            encoder: the encoder.
            suite: the tasks.
            settings: the report's settings.
            scoring: how the texts are embedded.
        """
        raise TypeError(f"{self.name}'s tasks are scored by sciembed's evaluators (sciembed.evaluation.evaluate)")

    def is_release_folder(self, folder: Path) -> bool:
        """Whether ``folder`` holds the benchmark's own release under its own file names (never, by default).

        Args:
            folder: a local folder results were read from.
        """
        return False

    def averages(self, results: Sequence[TaskScores]) -> dict[str, float]:
        """The benchmark's own averages over ``results`` (none by default).

        Args:
            results: the scored tasks.
        """
        return {}


class PaperFileBenchmark(Benchmark):
    """A user's file of labels or judgements over a papers file, read into one task."""

    #: The options naming files whose digests the report keeps beside ``data``.
    input_options: ClassVar[tuple[str, ...]] = ("papers",)

    def load(self, data: str, reading: Reading, options: Any) -> TaskSuite:
        """Build the task of ``data`` over the papers file of ``options``.

        Args:
            data: the labels or judgements file.
            reading: what every benchmark takes.
            options: this benchmark's own options (``papers``, ``id_field`` and ``smart_links`` among them).
        """
        from ...io import check_input
        from ..tasks import TaskSuite

        check_input(data, "--data")  # a folder, a link loop or a missing file, named as such
        papers = {
            "papers": None if options.papers is None else str(options.papers),
            "skip_invalid": reading.skip_invalid,
            "id_field": options.id_field,
            "wanted": reading.wanted,
            "text_fields": reading.checked_fields,
            "smart_links": options.smart_links,
        }
        tasks, skipped = self.file_tasks(data, reading, options, papers)
        return TaskSuite(self.name, data, tasks, [], skipped)

    def file_tasks(
        self, data: str, reading: Reading, options: Any, papers: dict[str, Any]
    ) -> tuple[list[Task], list[PaperProblem]]:
        """The task of ``data`` and the records left out (subclasses implement it).

        Args:
            data: the labels or judgements file.
            reading: what every benchmark takes.
            options: this benchmark's own options.
            papers: how the papers file is read, as keywords of :mod:`..custom`'s task builders.
        """
        raise NotImplementedError

    def inputs(self, data: str, options: Any) -> dict[str, Any]:
        """The file and the files its options name.

        Args:
            data: the labels or judgements file.
            options: this benchmark's own options.
        """
        return {"data": data, **{name: getattr(options, name) for name in self.input_options}}


def _members(options: Any, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with the value of every choice option made a member of its enum."""
    for f in fields(options):
        if f.name in given and isinstance(f.default, Enum):
            given[f.name] = _member(type(f.default), given[f.name], option_flag(f.name, f.metadata))
    return given


def _member(kind: type[Enum], value: Any, flag: str) -> Enum:
    """The member of ``kind`` named by ``value``, or an error naming the flag and choices."""
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{flag} {value!r}: one of {', '.join(m.value for m in kind)}") from None


def _plain(value: Any) -> Any:
    """An option's value as JSON holds it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, os.PathLike):
        return str(value)
    return value


def papers_named(rows: Any, ids: Any) -> dict[str, dict[str, Any]]:
    """The records of ``ids`` from a metadata Dataset or id-keyed mapping.

    Args:
        rows: paper id -> record.
        ids: the ids to keep.
    """
    wanted = set(ids)
    return {pid: row for pid, row in rows.items() if pid in wanted}


def qrels_of(dataset: Any) -> dict[str, dict[str, int]]:
    """Judgements by query and candidate, a repeated pair keeping its last grade as ``pytrec_eval.parse_qrel``.

    Args:
        dataset: columns ``query_id``, ``cand_id`` and ``score``.
    """
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for query, cand, score in zip(dataset["query_id"], dataset["cand_id"], dataset["score"]):
        qrels[str(query)][str(cand)] = int(score)
    return dict(qrels)
