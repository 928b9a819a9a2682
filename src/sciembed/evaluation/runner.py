"""Evaluate a model on a benchmark: embed each needed text once, then score every task.

:func:`evaluate` is what ``sciembed evaluate`` runs: it reads the benchmark's tasks
(:meth:`~sciembed.evaluation.benchmarks.Benchmark.read`), embeds each task's documents and queries through
the encoder (:class:`~sciembed.encode.Encoder`) in the format the task calls for (one encoder per format for a
multi-format model, one for all otherwise), reusing the :class:`~sciembed.evaluation.cache.EmbeddingCache`,
scores the tasks and returns an :class:`EvaluationReport` (a table, averages and JSON). ``benchmark="mteb"`` runs
MTEB's tasks (by name, or a local BEIR folder) through the MTEB bridge (:mod:`.mteb_bridge`) into the same report.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from ..data.papers import TEXT_FIELDS, text_field_names
from ..encode import Encoder, ModelArgument, PaperEncoder, refuse_encoder_options, resolve_encoder
from ..io import atomic_path, default_cache_dir, ids_path, input_digests, vectors_of
from ..logs import progress_enabled
from .benchmarks import Benchmark, BenchmarkOptions, Reading, Scoring, benchmark_named
from .benchmarks.base import Similarity
from .cache import EmbeddingCache
from .loaders import TaskSuite
from .tables import averages, format_table
from .tasks import ClassificationTask, ProximityTask, TaskScores

if TYPE_CHECKING:
    from .mteb_bridge import MtebSuite

logger = logging.getLogger(__name__)


@dataclass
class EvaluationReport:
    """What one evaluation gave: per-task results, the benchmark's averages and how it was run."""

    benchmark: str
    source: str
    model: str
    results: list[TaskScores]
    missing: list[str] = field(default_factory=list)
    skipped_records: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    embedding: dict[str, Any] = field(default_factory=dict)
    version: str = __version__
    #: The SHA-256 of each data file read, by input (:func:`~sciembed.io.input_digests`).
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def averages(self) -> dict[str, float]:
        """The benchmark's own averages (SciDocs' average over its metrics, SciRepEval's groups)."""
        return averages(self.benchmark, self.results)

    def table(self) -> str:
        """The results as a text table shaped like the benchmark paper's, averages last."""
        return format_table(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: one row per task and metric, plus averages and the run's settings."""
        rows = [
            {
                "benchmark": r.benchmark,
                "task": r.task,
                "task_id": r.task_id,
                "kind": r.kind,
                "group": r.group,
                "metric": metric,
                "value": value,
                "counts": r.counts,
                "skipped": r.skipped,
            }
            for r in self.results
            for metric, value in r.metrics.items()
        ]
        return {
            "benchmark": self.benchmark,
            "source": self.source,
            "model": self.model,
            "sciembed_version": self.version,
            "settings": self.settings,
            "inputs": self.inputs,
            "results": rows,
            "scale": "0-100: metrics, averages and per-query values (an MTEB task's details.scores keep mteb's 0-1)",
            "averages": self.averages,
            "missing_tasks": self.missing,
            "skipped_records": {"count": len(self.skipped_records), "first": self.skipped_records[:50]},
            "embedding": self.embedding,
            "tasks": [asdict(r) for r in self.results],
        }

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` to ``path`` atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as temporary:
            temporary.write_text(json.dumps(self.to_dict(), indent=1, default=_json_default) + "\n", encoding="utf-8")
        return path


#: Options every report's settings name, at these values where a benchmark has no such option.
REPORTED_OPTIONS: dict[str, Any] = {"proximity_similarity": Similarity.L2.value, "few_shot": True}


def evaluate(
    model: ModelArgument,
    benchmark: str | TaskSuite | MtebSuite,
    data: str | os.PathLike[str] | None = None,
    *,
    reading: Reading | None = None,
    options: BenchmarkOptions | None = None,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    n_jobs: int = -1,
    show_progress_bar: bool | None = None,
    embeddings: str | os.PathLike[str] | None = None,
    **removed: Any,
) -> EvaluationReport:
    """Evaluate ``model`` (or the vectors of ``embeddings``) on every task of ``benchmark`` found in ``data``.

    A model with options (device, max_length, pooling, domain, backend, revision, ...) is loaded first with
    :meth:`sciembed.Encoder.from_pretrained` and passed. ``evaluate(model, "scirepeval", data,
    reading=Reading(tasks=("fos",)), options=SciRepEvalOptions(few_shot=False))`` reads only ``fos``, without its
    few-shot settings.

    Args:
        model: a ready :class:`~sciembed.encode.Encoder`, a Hub id or local folder (``None``: the embedded
            all-MiniLM-L6-v2), or a function that returns an encoder. A name or function is loaded after the tasks
            are read.
        benchmark: a name of :data:`~.benchmarks.BENCHMARKS`, or tasks already read by :func:`~.loaders.load_tasks`.
        data: the benchmark's folder, file or Hub id (``mteb``: a BEIR folder, or ``None`` with ``reading.tasks``).
        reading: what every benchmark takes (:class:`~.benchmarks.Reading`: tasks, split, skip_invalid, seed,
            text_fields, cutoffs). Recorded in the report's settings. Its ``text_fields`` default to a windowed
            encoder's own fields. Its ``cutoffs`` are not for ``mteb``.
        options: the benchmark's own options dataclass (such as :class:`~.benchmarks.SciRepEvalOptions`). Checked
            against the benchmark, and recorded in the report's settings.
        batch_size: texts per forward pass (default: the encoder's).
        cache_dir: where vectors are cached (default :func:`sciembed.io.default_cache_dir`).
        use_cache: ``False`` keeps the vectors in memory for this call only.
        n_jobs: processes for the classifiers' grid searches (-1: all cores).
        show_progress_bar: show progress while embedding (``None``: when the ``sciembed`` logger shows INFO).
        embeddings: score the vectors of this embedding file (as ``sciembed embed`` writes) instead of a model's.

    Raises:
        TypeError: an encoder option (``device=``, ``pooling=``, ...), naming :meth:`sciembed.Encoder.from_pretrained`.
            A reading or benchmark option given by name, naming the argument it goes in. A ``reading`` that is not
            a :class:`~.benchmarks.Reading`, or options of another benchmark's dataclass.
        ValueError: by name, an option of another benchmark, naming the benchmark and the option.
    """
    chosen = benchmark_named(benchmark if isinstance(benchmark, str) else benchmark.benchmark)
    _refuse_keywords(chosen, removed)
    options = chosen.checked_options(options)
    reading = Reading() if reading is None else reading
    if not isinstance(reading, Reading):
        raise TypeError(
            f"reading= takes a sciembed.evaluation.Reading(tasks=..., split=...), got {type(reading).__name__}"
        )
    text_fields = reading.text_fields
    if embeddings is not None:
        _check_embedding_options(chosen, text_fields=text_fields)
    suite = chosen.read(data, reading, options) if isinstance(benchmark, str) else benchmark
    check_text_fields(suite, text_fields)  # before a model is loaded
    cutoffs = set_cutoffs(suite, reading.cutoffs)
    folder = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache else None
    recorded = {**REPORTED_OPTIONS, **chosen.recorded(options)}
    shared = {name: recorded.pop(name) for name in REPORTED_OPTIONS}
    tasks = None if reading.tasks is None else list(reading.tasks)
    read = {"seed": reading.seed, "skip_invalid": reading.skip_invalid, "tasks": tasks}
    if embeddings is not None:
        return evaluate_embeddings(
            embeddings,
            suite,
            model=model,
            n_jobs=n_jobs,
            cache_dir=folder,
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            settings={"split": reading.split, **shared, **read, "cutoffs": cutoffs, **recorded},
        )
    encoder = resolve_encoder(model)
    if text_fields is None:
        text_fields = chosen_text_fields(encoder, None)
        check_text_fields(suite, text_fields)
    settings = {
        "split": reading.split,
        "pooling": encoder.pooling,
        "max_length": encoder.max_length,
        "batch_size": encoder.default_batch_size if batch_size is None else batch_size,
        "backend": encoder.backend,
        "onnx_quantization": encoder.quantization,
        "revision": encoder.revision,
        **shared,
        **read,
        "text_fields": None if text_fields is None else list(text_fields),
        "cutoffs": cutoffs,
        **recorded,
    }
    if isinstance(suite, TaskSuite):
        return evaluate_suite(
            encoder,
            suite,
            cache_dir=folder,
            batch_size=batch_size,
            n_jobs=n_jobs,
            show_progress_bar=show_progress_bar,
            settings=settings,
            text_fields=text_fields,
        )
    scored = chosen.run(encoder, suite, settings, Scoring(folder, batch_size, n_jobs, show_progress_bar, text_fields))
    return EvaluationReport(
        benchmark=chosen.name,
        source=suite.source,
        model=scored.model,
        results=scored.results,
        skipped_records=[str(problem) for problem in suite.skipped],
        settings=scored.settings,
        embedding=scored.embedding,
    )


def _refuse_keywords(benchmark: Benchmark, given: Mapping[str, Any]) -> None:
    """Refuse options given by name: another benchmark's (ValueError), or where each one goes now (TypeError)."""
    if not given:
        return
    benchmark.refuse_named_options("evaluate", given)
    moved = {
        name: f"reading=sciembed.evaluation.benchmarks.Reading({name}=...)" for name in Reading.__dataclass_fields__
    }
    refuse_encoder_options("evaluate", given, moved=moved)


def set_cutoffs(suite: TaskSuite | MtebSuite, cutoffs: Sequence[int] | None) -> list[int] | None:
    """Give every ranking task of ``suite`` the rank cut-offs ``cutoffs``.

    The cut-offs are returned as the report records them.

    Args:
        suite: the tasks.
        cutoffs: the ranks k of nDCG@k, P@k and recall@k, or ``None`` to keep each task's own.

    Raises:
        ValueError: a cut-off that is not a positive integer, or cut-offs for MTEB's tasks.
    """
    from .ranking import ranking_measures

    if cutoffs is None:
        return None
    if not isinstance(suite, TaskSuite):
        raise ValueError("--cutoffs sets sciembed's ranking measures; mteb's tasks report mteb's own")
    ranking_measures(cutoffs=cutoffs)  # checked before a model is loaded
    for task in suite.tasks:
        if isinstance(task, ProximityTask):
            task.cutoffs = tuple(cutoffs)
    return sorted(set(cutoffs))


def _check_embedding_options(benchmark: Benchmark, **given: Any) -> None:
    """Refuse, with ``embeddings``, what the file decides (mteb's texts, the papers' text fields)."""
    if not benchmark.reads_embedding_files:
        raise ValueError(
            "mteb embeds its own texts through a model: --embeddings (embeddings=) is for sciembed's own benchmarks"
        )
    unused = [name for name, value in given.items() if value not in (None, False)]
    if unused:
        raise ValueError(
            f"{', '.join(unused)}: the papers' vectors are read from the embedding file, which fixed their text; "
            "leave it out, or embed the papers with a model"
        )


def chosen_text_fields(encoder: Encoder, text_fields: Sequence[str] | None) -> tuple[str, ...] | None:
    """The paper fields every task's text is made of.

    These are ``text_fields`` when given, else a windowed encoder's own when other than title and abstract. ``None``
    leaves each task its own.

    Args:
        encoder: the encoder that embeds the tasks.
        text_fields: the fields asked for (``--text-fields``), or ``None``.
    """
    if text_fields:
        return text_field_names(text_fields)
    settings = getattr(encoder, "settings", None)
    own = getattr(settings, "text_fields", None)
    return tuple(own) if own and tuple(own) != TEXT_FIELDS else None


def check_text_fields(suite: TaskSuite | MtebSuite, text_fields: Sequence[str] | None) -> None:
    """Refuse ``text_fields`` naming a field that no paper of a task has.

    Such a field would embed the papers without it.

    Args:
        suite: the tasks (an MTEB suite's documents are made by mteb, and not checked).
        text_fields: the fields asked for, or ``None`` (each task's own).

    Raises:
        ValueError: a field that no paper of a task holds text in (the task and the first paper's fields named).
    """
    if not text_fields or not isinstance(suite, TaskSuite):
        return
    for task in suite.tasks:
        records = [record for record in task.documents.values() if not isinstance(record, str)]
        absent = [name for name in text_fields if records and not any(r.get(name) not in (None, "") for r in records)]
        if absent:
            fields = ", ".join(list(map(str, records[0]))[:10])
            raise ValueError(
                f"--text-fields {' '.join(text_fields)}: no paper of {suite.benchmark} {task.name} has text in "
                f"{', '.join(absent)} (the first paper's fields: {fields}); name fields the papers have"
            )


def evaluate_embeddings(
    embeddings: str | os.PathLike[str],
    suite: TaskSuite,
    *,
    model: ModelArgument = None,
    n_jobs: int = -1,
    settings: Mapping[str, Any] | None = None,
    cache_dir: Path | None = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
) -> EvaluationReport:
    """Score the tasks of ``suite`` on the vectors of an embedding file.

    The file is as ``sciembed embed`` writes it.
    What the file cannot hold (text queries, texts that are not papers, facet vectors) is embedded with the model
    named by the file's stamp (``<file>.meta.json``), or with ``model`` once it matches the stamp.

    Args:
        embeddings: the embedding file, or folder of Parquet parts.
        model: the model that made the vectors, checked against the stamp (default: the stamp's model, loaded only
            when a task needs something embedded).
        suite: the tasks (:func:`~.loaders.load_tasks`). Every paper input of each must be a paper of the file.
        n_jobs: processes for the classifiers' grid searches (-1: all cores).
        settings: how the tasks were read, recorded in the report.
        cache_dir: where the vectors the model embeds are cached (``None``: in memory).
        batch_size: texts per forward pass (default: the encoder's).
        show_progress_bar: show progress while embedding (``None``: when the ``sciembed`` logger shows INFO).

    Raises:
        ValueError: papers without a vector (counted and named). A model whose vectors differ from the stamp's
            (both named). A task needing a model when the file has no stamp and none is given (named).
    """
    from ..index.model import checked_sidecar, stamped_encoder

    started = time.perf_counter()
    stamp = checked_sidecar(embeddings)
    roles = {id(task): _model_roles(task) for task in suite.tasks}
    if stamp is not None and stamp.text_fields:
        for task in suite.tasks:
            if "documents" not in roles[id(task)] and tuple(task.fields) != stamp.text_fields:
                logger.warning(
                    "%s %s reads papers as %s, but the vectors of %s were embedded from %s",
                    suite.benchmark,
                    task.name,
                    " + ".join(task.fields),
                    embeddings,
                    " + ".join(stamp.text_fields),
                )
    if stamp is None and model is None:
        for task in suite.tasks:
            _refuse_unstamped(suite, task, roles[id(task)], embeddings)
    wanted: dict[str, None] = {}
    for task in suite.tasks:
        for role in ("documents", "queries"):
            if role not in roles[id(task)]:
                wanted.update(dict.fromkeys(getattr(task, role)))
    ids = list(wanted)
    stored, _, extra = vectors_of(
        ids,
        embeddings,
        source=f"{suite.benchmark} {suite.source}",
        remedy="embed the papers the tasks name (sciembed embed --input PAPERS) with the model to evaluate",
    )
    if extra:
        logger.info("%s: %d vector(s) of papers no task names, not used", embeddings, extra)
    row = dict(zip(ids, stored))
    encoder = None
    if model is not None or any(roles.values()):
        encoder = resolve_encoder(model) if model is not None else None
        encoder = stamped_encoder(stamp, encoder, str(embeddings)) if stamp is not None else encoder
    encoded, caches = ({}, [])
    if any(roles.values()):
        encoded, caches = _embed_tasks(
            suite,
            encoder,
            cache_dir,
            batch_size=batch_size,
            show_progress_bar=progress_enabled(show_progress_bar),
            roles=roles,
        )
    vectors = {}
    for task in suite.tasks:
        own = encoded.get(id(task), ({}, {}))
        vectors[id(task)] = tuple(
            own[n] if role in roles[id(task)] else {i: row[i] for i in getattr(task, role)}
            for n, role in enumerate(("documents", "queries"))
        )
    return EvaluationReport(
        benchmark=suite.benchmark,
        source=suite.source,
        model=stamp.name if stamp is not None else f"vectors read from {embeddings}",
        results=_score(suite, vectors, n_jobs=n_jobs, text_fields=None, fields_recorded=False),
        missing=suite.missing,
        skipped_records=[str(problem) for problem in suite.skipped],
        settings={
            **(settings or {}),
            "embeddings": str(embeddings),
            "revision": None if stamp is None else stamp.revision,
            "text_fields": None if stamp is None or stamp.text_fields is None else list(stamp.text_fields),
        },
        inputs={
            **suite.inputs,
            **input_digests({"embeddings": embeddings, "embeddings_ids": _ids_file(embeddings)}),
        },
        embedding={
            "file": str(embeddings),
            "model_stamp": None if stamp is None else {k: v for k, v in stamp.to_dict().items() if k != "probe"},
            "vectors_used": len(ids),
            "dimension": int(stored.shape[1]) if len(ids) else (stamp.dim if stamp is not None else None),
            "encoder": None if encoder is None else encoder.name_or_path,
            "texts_encoded": sum(c.encoded for c in caches),
            "seconds": round(time.perf_counter() - started, 2),
        },
    )


def _ids_file(embeddings: str | os.PathLike[str]) -> Path | None:
    """The ids file of a ``.npy`` embedding file (``None`` for other files)."""
    return ids_path(embeddings) if Path(embeddings).suffix.lower() == ".npy" else None


def _model_roles(task: Any) -> tuple[str, ...]:
    """The inputs of ``task`` that an embedding file of papers cannot give.

    These are texts, text queries and facet vectors.
    """
    facets = isinstance(task, ProximityTask) and task.similarity == Similarity.MIN_FACET_L2
    roles = ()
    if facets or any(isinstance(record, str) for record in task.documents.values()):
        roles += ("documents",)
    if task.queries and (facets or not getattr(task, "paper_queries", False)):
        roles += ("queries",)
    return roles


def _refuse_unstamped(suite: TaskSuite, task: Any, roles: tuple[str, ...], embeddings: str | os.PathLike[str]) -> None:
    """Refuse a task that needs a model when the embedding file names none.

    The task is refused only when no model is given either.
    """
    if not roles:
        return
    if isinstance(task, ProximityTask) and task.similarity == Similarity.MIN_FACET_L2:
        needs = "each paper's facet vectors (--proximity-similarity min_facet_l2)"
    elif "documents" in roles:
        needs = "texts that are not papers"
    else:
        needs = "text queries, embedded as queries"
    others = [t.task_id for t in suite.tasks if t is not task]
    leave_out = f", or leave it out: --tasks {' '.join(others)}" if others else ""
    raise ValueError(
        f"{suite.benchmark} {task.name} ({task.task_id}) needs {needs}, which an embedding file of papers does not "
        f"hold, and {embeddings} has no model stamp naming the model to embed them with: give the model that made "
        f"the vectors (--model){leave_out}"
    )


def evaluate_suite(
    encoder: Encoder,
    suite: TaskSuite,
    *,
    cache_dir: Path | None = None,
    batch_size: int | None = None,
    n_jobs: int = -1,
    show_progress_bar: bool | None = None,
    settings: Mapping[str, Any] | None = None,
    text_fields: Sequence[str] | None = None,
) -> EvaluationReport:
    """Embed and score the tasks of ``suite`` with a ready ``encoder``.

    The fields a task's papers were embedded from are kept in its result's ``details["text_fields"]``.

    Args:
        encoder: the encoder.
        suite: the tasks, loaded by :func:`~.loaders.load_tasks`, or built in code, as evaluation during training does.
        cache_dir: where vectors are cached, when given.
        batch_size: texts per forward pass (default: the encoder's).
        n_jobs: processes for the classifiers' grid searches (-1: all cores).
        show_progress_bar: as for :func:`evaluate`.
        settings: how the tasks were read, recorded in the report.
        text_fields: the fields that make every paper's text (default: each task's own fields).
    """
    started = time.perf_counter()
    vectors, caches = _embed_tasks(
        suite,
        encoder,
        cache_dir,
        batch_size=batch_size,
        show_progress_bar=progress_enabled(show_progress_bar),
        text_fields=text_fields,
    )
    embedded = time.perf_counter() - started
    return EvaluationReport(
        benchmark=suite.benchmark,
        source=suite.source,
        model=encoder.name_or_path,
        results=_score(suite, vectors, n_jobs=n_jobs, text_fields=text_fields),
        missing=suite.missing,
        skipped_records=[str(problem) for problem in suite.skipped],
        settings=dict(settings or {}),
        inputs=suite.inputs,
        embedding={
            "texts_encoded": sum(c.encoded for c in caches),
            "cache_hits": sum(c.hits for c in caches),
            "seconds": round(embedded, 2),
            "cache": str(cache_dir) if cache_dir else None,
        },
    )


def _score(
    suite: TaskSuite,
    vectors: Mapping[int, tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]]],
    *,
    n_jobs: int,
    text_fields: Sequence[str] | None,
    fields_recorded: bool = True,
) -> list[TaskScores]:
    """Score every task of ``suite`` on its vectors (``id(task)`` -> documents and queries by id).

    Args:
        suite: the tasks.
        vectors: each task's document and query vectors.
        n_jobs: processes for the classifiers' grid searches.
        text_fields: the fields the papers' texts were made of (default: each task's own).
        fields_recorded: record those fields in each result's details (not for vectors read from a file).
    """
    results: list[TaskScores] = []
    for task in suite.tasks:
        documents, queries = vectors[id(task)]
        begun = time.perf_counter()
        result = task.evaluate(documents, queries, n_jobs=n_jobs)
        result.details["seconds"] = round(time.perf_counter() - begun, 3)
        task_results = [result]
        if isinstance(task, ClassificationTask) and task.few_shot:
            task_results += task.evaluate_few_shot(documents, n_jobs=n_jobs)
        if fields_recorded and any(not isinstance(record, str) for record in task.documents.values()):
            for each in task_results:
                each.details["text_fields"] = list(text_fields or task.fields)
        logger.info("%s %s: %s", suite.benchmark, task.name, {k: round(v, 2) for k, v in result.metrics.items()})
        results += task_results
    return results


def _embed_tasks(
    suite: TaskSuite,
    encoder: Encoder,
    folder: Path | None,
    *,
    batch_size: int,
    show_progress_bar: bool,
    text_fields: Sequence[str] | None = None,
    roles: Mapping[int, Sequence[str]] | None = None,
):
    """Embed every task's documents and queries, papers' texts made of ``text_fields`` (default: the task's fields).

    ``roles`` (``id(task)`` -> ``"documents"`` / ``"queries"``) embeds only those inputs of each task.

    Returns:
        ``id(task)`` -> (document vectors, query vectors) by id, and the caches used.
    """
    caches: dict[tuple[str | None, bool, str | None], EmbeddingCache] = {}
    domains = getattr(encoder, "domains", ())

    def cache_for(task_format: str, facets: bool, domain: str | None) -> EmbeddingCache:
        key = (
            task_format if task_format in encoder.task_formats else None,
            facets,
            domain if domain in domains else None,
        )
        if key not in caches:
            chosen = encoder.with_format(key[0]) if key[0] else encoder
            chosen = chosen.with_domain(key[2]) if key[2] else chosen
            if facets:
                chosen = PaperEncoder(
                    chosen.transformer,
                    chosen.tokenizer,
                    max_length=chosen.max_length,
                    device=chosen.device,
                    facets=True,
                    task_format=chosen.forward_options.get("task_format"),
                    backend=chosen.backend,
                    quantization=chosen.quantization,
                    engine_cache=chosen.engine_cache,
                    domain=chosen.forward_options.get("domain"),
                )
            caches[key] = EmbeddingCache(chosen, folder)
        return caches[key]

    plans = []
    for task in suite.tasks:
        facets = isinstance(task, ProximityTask) and task.similarity == Similarity.MIN_FACET_L2
        for role, records, task_format in (
            ("documents", task.documents, task.document_format),
            ("queries", task.queries, task.query_format or task.document_format),
        ):
            if roles is not None and role not in roles[id(task)]:
                continue
            cache = cache_for(task_format, facets, task.domain)
            texts = encoder.texts(records.values(), tuple(text_fields or task.fields))
            plans.append((task, role, cache, list(records), texts))

    # One pass per encoder over the unique texts of all tasks, so shared papers embed once.
    for key, cache in caches.items():
        texts = list(dict.fromkeys(t for _, _, c, _, ts in plans if c is cache for t in ts))
        label = (
            f"Encoding ({key[0] or 'papers'}{', facets' if key[1] else ''}{f', domain {key[2]}' if key[2] else ''})"
        )
        cache.add(texts, batch_size=batch_size, show_progress_bar=show_progress_bar, desc=label)

    vectors: dict[int, tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]]] = {}
    for task, role, cache, ids, texts in plans:
        matrix = cache.lookup(texts)
        mapping = dict(zip(ids, matrix))
        documents, queries = vectors.get(id(task), ({}, {}))
        vectors[id(task)] = (mapping, queries) if role == "documents" else (documents, mapping)
    return vectors, list(caches.values())


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
