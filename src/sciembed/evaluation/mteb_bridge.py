"""The MTEB bridge: sciembed encoders as MTEB models, BEIR folders as tasks.

:class:`MtebEncoder` implements mteb 2.x's encoder protocol (``mteb.EncoderProtocol``: ``encode(inputs, *,
task_metadata, hf_split, hf_subset, prompt_type, **encode_kwargs)``, ``similarity``, ``similarity_pairwise`` and
``mteb_model_meta``) over a sciembed :class:`~sciembed.encode.Encoder`, so that ``mteb.evaluate`` runs any model
:meth:`sciembed.Encoder.from_pretrained` loads. Every input is embedded through the encoder (its batching, pooling and
truncation, the evaluation's :class:`~sciembed.evaluation.cache.EmbeddingCache`), in the format mteb's prompt type
and task type call for (:func:`mteb_format`):

- queries (``prompt_type="query"``) in ``adhoc_query`` (SciRepEval's ``[QRY]``, SPECTER2's query adapter).
- documents (``prompt_type="document"``) in ``proximity``, as papers: mteb's ``title`` and ``body`` become a paper
  record's ``title`` and ``abstract``, so the text is sciembed's usual ``title [SEP] abstract`` (mteb's own text joins
  them with a space).
- inputs of classification, multilabel and clustering tasks (no prompt type) in ``classification``, of regression
  tasks in ``regression``, and of every other task (STS, pair classification, bitext mining, summarization) in
  ``proximity``.

A model without formats embeds everything in its one embedding. Scores are cosine similarities (the model's metadata
says so), as sciembed's BEIR evaluator scores.

Offline, mteb cannot download its datasets: :func:`beir_task` turns a BEIR-layout folder (``corpus.jsonl``,
``queries.jsonl``, ``qrels/<split>.tsv``, read by :func:`sciembed.data.beir.read_beir` as ``--benchmark beir`` reads
it) into an ``AbsTaskRetrieval`` whose ``load_data`` fills mteb's corpus, queries and relevant documents from the
folder. Like BEIR and sciembed's own evaluator, it drops a document whose id equals the query's
(``ignore_identical_ids``). mteb scores it with pytrec_eval, as sciembed's ``beir`` benchmark does, so both give the
same nDCG@10 on the same vectors, up to mteb's rounding of its scores to 5 decimals (on the 0-1 scale).

``sciembed evaluate --benchmark mteb`` (:func:`sciembed.evaluation.evaluate` with ``benchmark="mteb"``) reads the tasks
with :func:`load_mteb_tasks` (tasks by name through ``mteb.get_tasks``, which downloads their data from the Hub, or
the local folder), runs them with :func:`run_mteb` and reports mteb's scores as sciembed's
:class:`~sciembed.evaluation.tasks.TaskScores` rows (:func:`task_results`): the task's main score and its headline
scores (:data:`REPORTED_SCORES`) on sciembed's 0-100 scale, every score mteb gave in ``details["scores"]`` as mteb
gave it (0-1). :func:`mteb_scores` turns a row's metrics back to mteb's 0-1 scale.

mteb is imported by the functions that need it, never by this module, so that ``import sciembed`` and the command
line's help stay free of it (and of torch).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends import BACKEND_NAMES
from ..data.papers import PaperProblem
from ..encode import DOCUMENT_FORMAT, QUERY_FORMAT, Encoder, refuse_encoder_options
from ..logs import progress_enabled
from .cache import EmbeddingCache
from .tasks import TaskScores

if TYPE_CHECKING:
    from mteb import AbsTask, TaskMetadata
    from mteb.models import ModelMeta

    from .tasks import SearchTask

#: The report's source for tasks by name (their data comes from the Hub, one dataset per task).
NAMED_SOURCE = "mteb"
#: The task id of a local BEIR folder's task, as ``--benchmark beir`` names it.
LOCAL_TASK_ID = "search"
#: mteb's scores reported as metrics (0-100) after the task's main score, by mteb's simplified task type; every score
#: is kept in ``details["scores"]``.
REPORTED_SCORES: dict[str, tuple[str, ...]] = {
    "retrieval": ("ndcg_at_10", "map_at_10", "mrr_at_10", "recall_at_100"),
    "classification": ("accuracy", "f1"),
    "clustering": ("v_measure",),
    "semantic-similarity": ("cosine_spearman", "cosine_pearson"),
    "pair-classification": ("max_ap",),
}
#: The oldest mteb release with the encoder protocol this bridge implements.
MTEB_MINIMUM = (2, 0)
#: mteb's placeholder for a model without a revision (a local folder).
NO_REVISION = "no_revision_available"
#: sciembed's rows hold mteb's scores times this (sciembed's 0-100); mteb's own are on 0-1.
SCORE_SCALE = 100.0


class MtebNotInstalledError(ImportError, ValueError):
    """mteb is not installed, or too old.

    It is a ValueError too, so that the command line reports it in one line.
    """


def mteb_format(task_type: str, simplified_type: str, prompt_type: str | None) -> str:
    """The sciembed format an MTEB input is embedded in: ``adhoc_query`` for queries, ``proximity`` for documents.
    Without a prompt type ``regression`` for regression tasks, ``classification`` for classification and clustering
    tasks, ``proximity`` for the rest (STS, pair classification, bitext mining, summarization).

    Args:
        task_type: the task's ``TaskMetadata.type`` (``Retrieval``, ``Classification``, ...).
        simplified_type: its ``TaskMetadata.simplified_task_type`` (``retrieval``, ``classification``, ...).
        prompt_type: mteb's prompt type (``query``, ``document``) or ``None``.
    """
    prompt = getattr(prompt_type, "value", prompt_type)
    if prompt == "query":
        return QUERY_FORMAT
    if prompt == "document":
        return DOCUMENT_FORMAT
    if prompt is not None:
        raise ValueError(f"unknown mteb prompt type {prompt!r}; expected query or document")
    if task_type == "Regression":
        return "regression"
    if simplified_type in ("classification", "clustering"):
        return "classification"
    return DOCUMENT_FORMAT


class MtebEncoder:
    """A sciembed encoder as an MTEB model (mteb 2.x's ``EncoderProtocol``).

    Args:
        model: a ready :class:`~sciembed.encode.Encoder` (a PaperEncoder, an ensemble, ...), or a Hub id or local
            folder loaded with :meth:`sciembed.Encoder.from_pretrained`'s defaults (``None``: the embedded
            all-MiniLM-L6-v2). A model with options (device, max_length, ...) is loaded first and passed.
        revision: mteb's loader argument (``ModelMeta.load_model`` passes it): the Hub revision a model given by
            name is loaded at. For an encoder, ``None`` or its own revision. The revision loaded is the metadata's.
        cache_dir: the embedding cache root (see :func:`sciembed.io.default_cache_dir`). ``None`` keeps vectors in
            memory for this wrapper's life (texts mteb asks for twice are embedded once).
        batch_size: texts per forward pass when mteb's ``encode_kwargs`` give none (default: the encoder's).
        show_progress_bar: show progress while embedding when mteb's ``encode_kwargs`` do not say (``None``: when
            the ``sciembed`` logger shows INFO).

    Attributes:
        encoder: the sciembed encoder.
        mteb_model_meta: mteb's ``ModelMeta`` of the model (name, revision, parameters, width, cosine similarity).
        seconds: time spent embedding so far.

    Raises:
        MtebNotInstalledError: mteb 2.x is not installed.
        ValueError: an encoder given with a revision other than its own.
        TypeError: an encoder option (``device=``, ``pooling=``, ...), naming :meth:`sciembed.Encoder.from_pretrained`.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | Encoder | None = None,
        revision: str | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        **removed: Any,
    ) -> None:
        refuse_encoder_options("MtebEncoder", removed)
        _mteb()
        revision = None if revision == NO_REVISION else revision
        if isinstance(model, Encoder):
            if revision is not None and revision != model.revision:
                raise ValueError(
                    f"revision {revision!r}: {model.name_or_path} was loaded at {model.revision or 'no revision'}; "
                    "load the model at that revision (sciembed.Encoder.from_pretrained(name, revision=...)) and pass "
                    "it, or leave revision unset"
                )
            self.encoder = model
        else:
            self.encoder = Encoder.from_pretrained(model, revision=revision)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.batch_size = batch_size
        self.show_progress_bar = show_progress_bar
        self.seconds = 0.0
        self._caches: dict[str | None, EmbeddingCache] = {}
        self.mteb_model_meta = _model_meta(self.encoder, self.encoder.revision)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.encoder.name_or_path!r})"

    @property
    def texts_encoded(self) -> int:
        """Texts embedded by the model so far (the rest came from the cache)."""
        return sum(cache.encoded for cache in self._caches.values())

    @property
    def cache_hits(self) -> int:
        """Distinct texts found in the cache so far."""
        return sum(cache.hits for cache in self._caches.values())

    def cache_for(self, task_format: str) -> EmbeddingCache:
        """The cache of the encoder embedding in ``task_format``.

        When the encoder has no such format, it is the cache of the encoder itself.
        """
        key = task_format if task_format in self.encoder.task_formats else None
        if key not in self._caches:
            chosen = self.encoder.with_format(key) if key else self.encoder
            self._caches[key] = EmbeddingCache(chosen, self.cache_dir)
        return self._caches[key]

    def encode(
        self,
        inputs: Iterable[Mapping[str, Any]],
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Embed mteb's inputs in the format :func:`mteb_format` gives for the task and prompt type.

        The inputs are a DataLoader of batches: ``text``, and for documents ``title`` and ``body``. The vectors are
        float32 ``(n, dim)``, in input order.

        A document with a title or a body becomes a paper (``title``, ``abstract``: ``title [SEP] abstract``). One
        with neither is embedded as its (empty) ``text``. ``kwargs`` are mteb's ``encode_kwargs``: ``batch_size``,
        ``show_progress_bar`` and ``precision`` (only ``float32``: sciembed's vectors are float32).

        Raises:
            ValueError: inputs without text (images, audio or video), no inputs, or a precision other than float32.
        """
        precision = kwargs.get("precision")
        if precision not in (None, "float32"):
            raise ValueError(
                f"mteb asked for {precision} embeddings; sciembed embeds float32 (for int8 weights use "
                "backend='onnx', quantization='int8' on the encoder)"
            )
        task_format = mteb_format(task_metadata.type, task_metadata.simplified_task_type, prompt_type)
        documents = getattr(prompt_type, "value", prompt_type) == "document"
        items: list[Mapping[str, Any] | str] = []
        for batch in inputs:
            items += _batch_items(batch, documents=documents)
        if not items:
            raise ValueError(f"{task_metadata.name} ({hf_subset}, {hf_split}): mteb gave no inputs to embed")
        cache = self.cache_for(task_format)
        texts = cache.encoder.texts(items)
        label = task_format if task_format in self.encoder.task_formats else "one embedding"
        started = time.perf_counter()
        vectors = cache.embed(
            texts,
            batch_size=kwargs.get("batch_size") or self.batch_size,
            show_progress_bar=progress_enabled(kwargs.get("show_progress_bar", self.show_progress_bar)),
            desc=f"Encoding {task_metadata.name} ({label})",
        )
        self.seconds += time.perf_counter() - started
        return vectors

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Cosine similarity of every row of ``embeddings1`` to every row of ``embeddings2`` (mteb's ``cos_sim``)."""
        from mteb.similarity_functions import cos_sim

        return cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Cosine similarity of each row of ``embeddings1`` to the same row of ``embeddings2``."""
        from mteb.similarity_functions import pairwise_cos_sim

        return pairwise_cos_sim(embeddings1, embeddings2)


def _batch_items(batch: Mapping[str, Any], *, documents: bool) -> list[Mapping[str, Any] | str]:
    """One batch of mteb's inputs as sciembed's: paper records for documents, texts for the rest."""
    if "text" not in batch:
        raise ValueError(
            f"sciembed encoders embed text; mteb gave {', '.join(sorted(batch))} (an image, audio or video task?)"
        )
    texts = [str(text) for text in batch["text"]]
    if not documents or "body" not in batch:
        return texts
    titles = batch.get("title") or [""] * len(texts)
    ids = batch.get("id") or [None] * len(texts)
    items: list[Mapping[str, Any] | str] = []
    for paper_id, title, body, text in zip(ids, titles, batch["body"], texts):
        title, body = (title or "").strip(), (body or "").strip()
        items.append({"paper_id": paper_id, "title": title, "abstract": body} if title or body else text)
    return items


def _model_meta(encoder: Encoder, revision: str | None) -> ModelMeta:
    from mteb.models import ModelMeta
    from mteb.models.model_meta import ScoringFunction

    name = encoder.name_or_path
    framework = ["PyTorch", "Transformers"]
    if any(type(model).__name__ == "SentenceTransformer" for model in _models(encoder)):
        framework.append("Sentence Transformers")
    if encoder.backend in ("onnx", "openvino"):
        framework.append(BACKEND_NAMES[encoder.backend])  # mteb's names for the two
    return ModelMeta(
        loader=MtebEncoder,
        # mteb wants "organisation/model"; a local folder's path has a slash, a bare folder name gets one.
        name=name if "/" in name else f"local/{name}",
        revision=revision or NO_REVISION,
        release_date=None,
        languages=None,
        n_parameters=_parameters(encoder),
        memory_usage_mb=None,
        max_tokens=encoder.max_length,
        embed_dim=_embedding_dim(encoder),
        license=None,
        open_weights=None,
        public_training_code=None,
        public_training_data=None,
        framework=framework,
        similarity_fn_name=ScoringFunction.COSINE,
        use_instructions=False,
        training_datasets=None,
    )


def _models(encoder: Any) -> list[Any]:
    """The torch models behind an encoder (one, or an ensemble's members')."""
    members = getattr(encoder, "members", None)
    if members is not None:
        return [model for member in members for model in _models(member)]
    model = getattr(encoder, "model", None)
    return [model] if model is not None else []


def _parameters(encoder: Encoder) -> int | None:
    models = _models(encoder)
    if not models or not all(hasattr(model, "parameters") for model in models):
        return None
    return sum(parameter.numel() for model in models for parameter in model.parameters())


def _embedding_dim(encoder: Encoder) -> int | None:
    models = _models(encoder)
    if not models:
        return None
    model = models[0]
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        if callable(getattr(model, method, None)):
            return getattr(model, method)()
    return getattr(getattr(model, "config", None), "hidden_size", None)


# Tasks ------------------------------------------------------------------------------------------------------------


@dataclass
class MtebSuite:
    """The MTEB tasks of one run, where they come from, and what reading them skipped.

    Attributes:
        source: the BEIR folder, or ``mteb`` for tasks by name.
        tasks: mteb task objects (``mteb.AbsTask``).
        split: the split every task is scored on.
        counts: task name -> sizes known before running (a local folder's queries and documents).
        skipped: records the folder's reader left out (``skip_invalid``).
    """

    source: str
    tasks: list[Any]
    split: str = "test"
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: list[PaperProblem] = field(default_factory=list)
    #: The benchmark these tasks belong to.
    benchmark: str = "mteb"

    @property
    def local(self) -> bool:
        """The tasks are a local BEIR folder's (else MTEB's, by name)."""
        return self.source != NAMED_SOURCE


def load_mteb_tasks(
    data: str | os.PathLike[str] | None = None,
    *,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    skip_invalid: bool = False,
    papers: str | os.PathLike[str] | None = None,
    queries: str | os.PathLike[str] | None = None,
    id_field: str | None = None,
    test_data: str | None = None,
    qrels_columns: str | None = None,
) -> MtebSuite:
    """The tasks ``sciembed evaluate --benchmark mteb`` runs: MTEB's tasks by name, or a local BEIR folder.

    Args:
        data: a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), run offline as an
            MTEB retrieval task (:func:`beir_task`).
        tasks: MTEB task names (``SCIDOCS``, ``SciFact``, ...), found by ``mteb.get_tasks``. mteb downloads their
            data from the Hub when they run. Give ``data`` or ``tasks``, not both.
        split: the split to score: ``qrels/<split>.tsv`` of the folder, or an evaluation split each named task has
            (``test``, MS MARCO's is ``dev``).
        skip_invalid: leave out the folder's bad records and judgements naming unknown ids (reported) instead of
            stopping.
        papers, queries, id_field, test_data: options of other benchmarks, refused here.
        qrels_columns: the order of the folder's qrels columns, when stated (see :func:`~.loaders.load_tasks`).

    Raises:
        ValueError: neither or both of ``data`` and ``tasks``, another benchmark's option, an unknown task name, a
            task without ``split``. The folder's reader's errors (file and line named).
        FileNotFoundError: the folder lacks ``corpus.jsonl``, ``queries.jsonl`` or ``qrels/``.
        MtebNotInstalledError: mteb 2.x is not installed.
    """
    others = {"--papers": papers, "--queries": queries, "--id-field": id_field, "--test-data": test_data}
    given = [name for name, value in others.items() if value]
    if given:
        raise ValueError(
            f"{', '.join(given)}: not for --benchmark mteb, which runs MTEB tasks by name (--tasks) or a BEIR folder "
            "(--data)"
        )
    if qrels_columns is not None and data is None:
        raise ValueError(
            "--qrels-columns orders the columns of a BEIR folder's qrels (--data); MTEB's named tasks have none"
        )
    if data is not None and tasks:
        raise ValueError(
            "--benchmark mteb runs MTEB tasks by name (--tasks, data from the Hub) or a local BEIR folder (--data), "
            f"not both: got --tasks {' '.join(tasks)} and --data {data}"
        )
    if data is None and not tasks:
        raise ValueError(
            "--benchmark mteb needs MTEB task names (--tasks SCIDOCS SciFact ..., data from the Hub) or a local BEIR "
            "folder (--data FOLDER)"
        )
    if data is not None:
        from .benchmarks.base import Reading
        from .benchmarks.beir import Beir, BeirOptions

        beir = Beir().read(data, Reading(split=split, skip_invalid=skip_invalid), BeirOptions(qrels_columns))
        search = beir.tasks[0]
        task = _retrieval_task(search, data, split)
        counts = {task.metadata.name: {"queries": len(search.queries), "documents": len(search.documents)}}
        return MtebSuite(str(data), [task], split, counts, beir.skipped)
    return MtebSuite(NAMED_SOURCE, named_tasks(tasks, split=split), split)


def named_tasks(names: Sequence[str], *, split: str = "test") -> list[AbsTask]:
    """MTEB's tasks ``names`` (``mteb.get_task``), each to be scored on ``split`` only.

    Raises:
        ValueError: an unknown name (with mteb's suggestion), or a task without that evaluation split.
    """
    mteb = _mteb()
    found = []
    for name in dict.fromkeys(names):
        try:
            task = mteb.get_task(name)
        except KeyError as error:
            reason = str(error.args[0] if error.args else "").removeprefix("KeyError: ")
            raise ValueError(f"no MTEB task {name!r} ({reason})") from None
        if split not in task.metadata.eval_splits:
            raise ValueError(
                f"MTEB task {name} has no {split!r} evaluation split (it has {', '.join(task.metadata.eval_splits)}); "
                "choose one with --split"
            )
        found.append(task.filter_eval_splits([split]))
    return found


def beir_task(folder: str | os.PathLike[str], *, split: str = "test", skip_invalid: bool = False) -> AbsTask:
    """A BEIR-layout folder as an MTEB retrieval task, read now.

    It is handed to mteb by its ``load_data``.
    Errors name the file and line. ``mteb.evaluate(MtebEncoder(...), beir_task("scifact"))`` runs it offline.

    The corpus keeps BEIR's ``title`` and ``text``, the queries their ``text``, the judgements of
    ``qrels/<split>.tsv`` are the relevant documents, and only judged queries are asked (as ``--benchmark beir``
    reads the folder). The task is named after the folder, scored by nDCG@10 (its main score), and ignores a document
    whose id is the query's, as BEIR does.

    Raises:
        FileNotFoundError: ``corpus.jsonl``, ``queries.jsonl`` or ``qrels/`` missing (named).
        ValueError: no ``qrels/<split>.tsv``, or a bad record (file and line named, see ``skip_invalid``).
    """
    from .benchmarks.base import Reading
    from .benchmarks.beir import Beir, BeirOptions

    suite = Beir().read(folder, Reading(split=split, skip_invalid=skip_invalid), BeirOptions())
    return _retrieval_task(suite.tasks[0], folder, split)


def _retrieval_task(search: SearchTask, folder: str | os.PathLike[str], split: str) -> AbsTask:
    """An ``AbsTaskRetrieval`` subclass for ``search``, and one instance of it.

    Its ``load_data`` gives mteb the corpus, queries and judgements of ``search``. Its metadata is this folder's,
    as mteb keeps task metadata on the class."""
    _mteb()
    from datasets import Dataset
    from mteb import TaskMetadata
    from mteb.abstasks import AbsTaskRetrieval

    folder = Path(folder)
    documents = search.documents.values()
    corpus = Dataset.from_dict(
        {
            "id": list(search.documents),
            "title": [str(paper.get("title") or "") for paper in documents],
            "text": [str(paper.get("abstract") or "") for paper in documents],
        }
    )
    queries = Dataset.from_dict({"id": list(search.queries), "text": [str(text) for text in search.queries.values()]})
    qrels = {query: dict(judged) for query, judged in search.qrels.items()}
    folder_metadata = TaskMetadata(
        name=folder.resolve().name or str(folder),
        description=f"The BEIR folder {folder} (corpus.jsonl, queries.jsonl, qrels/{split}.tsv), read by sciembed.",
        dataset={"path": str(folder), "revision": "local"},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[split],
        eval_langs=["eng-Latn"],
        main_score="ndcg_at_10",
    )

    class LocalBeirRetrieval(AbsTaskRetrieval):
        """A local BEIR folder, read by sciembed, as an MTEB retrieval task."""

        metadata = folder_metadata
        ignore_identical_ids = True

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            """Hand mteb the folder's corpus, judged queries and judgements (read when the task was made)."""
            if self.data_loaded:
                return
            # Fresh mappings each time: mteb filters the split's queries and judgements in place.
            self.dataset = {
                "default": {
                    split: {
                        "corpus": corpus,
                        "queries": queries,
                        "relevant_docs": {query: dict(judged) for query, judged in qrels.items()},
                        "top_ranked": None,
                    }
                }
            }
            self.data_loaded = True

    return LocalBeirRetrieval()


# Running ----------------------------------------------------------------------------------------------------------


def run_mteb(
    encoder: Encoder,
    suite: MtebSuite,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
) -> tuple[list[TaskScores], dict[str, Any]]:
    """Run ``suite``'s tasks with ``mteb.evaluate`` on ``encoder`` (wrapped in :class:`MtebEncoder`). Progress bars
    as ``show_progress_bar`` says (``None``: when the ``sciembed`` logger shows INFO).

    mteb's own results cache is not used (every call scores anew, while sciembed's embedding cache under ``cache_dir``
    keeps the vectors), nor its CO2 tracker.

    Returns:
        The results as sciembed rows (:func:`task_results`), and the embedding's account (texts encoded, cache hits,
        seconds, cache folder), as :class:`~sciembed.evaluation.runner.EvaluationReport` keeps it.
    """
    mteb = _mteb()
    show_progress_bar = progress_enabled(show_progress_bar)
    model = MtebEncoder(encoder, cache_dir=cache_dir, batch_size=batch_size, show_progress_bar=show_progress_bar)
    encode_kwargs = {
        "batch_size": encoder.default_batch_size if batch_size is None else batch_size,
        "show_progress_bar": show_progress_bar,
    }
    with _datasets_progress_bars(shown=show_progress_bar):  # mteb maps its inputs with datasets
        outcome = mteb.evaluate(
            model,
            suite.tasks,
            encode_kwargs=encode_kwargs,
            cache=None,
            co2_tracker=False,
            show_progress_bar=show_progress_bar,
        )
    types = {task.metadata.name: task.metadata for task in suite.tasks}
    results = [
        row
        for result in outcome.task_results
        for row in task_results(result, types[result.task_name], local=suite.local, counts=suite.counts)
    ]
    embedding = {
        "texts_encoded": model.texts_encoded,
        "cache_hits": model.cache_hits,
        "seconds": round(model.seconds, 2),
        "cache": str(cache_dir) if cache_dir is not None else None,
    }
    return results, embedding


def task_results(
    result: Any, metadata: TaskMetadata, *, local: bool = False, counts: Mapping[str, Mapping[str, int]] | None = None
) -> list[TaskScores]:
    """One mteb ``TaskResult`` as sciembed's rows, one per split and subset.

    Each row's metrics are the task's main score, then those of :data:`REPORTED_SCORES` mteb gave, times 100
    (sciembed's scale). ``primary_metrics`` is the main score. ``details`` keep every numeric score as mteb gave it
    (0-1, rounded by mteb to 5 decimals for retrieval), the main score's name, split, subset, languages, mteb's
    version and evaluation time. A local BEIR folder's row is task ``search`` (as ``--benchmark beir`` names it), a
    named task's its MTEB name (``name/subset`` for a subset other than ``default``). Retrieval and reranking tasks are
    of kind ``search``, the others of mteb's task type in snake case (``classification``, ``sts``, ...).
    """
    simplified = metadata.simplified_task_type
    kind = "search" if simplified == "retrieval" else re.sub(r"(?<=[a-z])(?=[A-Z])", "_", metadata.type).lower()
    rows = []
    for split, subsets in result.scores.items():
        for scores in subsets:
            subset = scores.get("hf_subset", "default")
            main = metadata.main_score
            names = [main, *(name for name in REPORTED_SCORES.get(simplified, ()) if name != main)]
            metrics = {name: SCORE_SCALE * float(scores[name]) for name in names if _is_number(scores.get(name))}
            name, task_id = result.task_name, LOCAL_TASK_ID if local else result.task_name
            if subset != "default":
                name, task_id = f"{name} {subset}", f"{task_id}/{subset}"
            rows.append(
                TaskScores(
                    benchmark="mteb",
                    task=name,
                    task_id=task_id,
                    kind=kind,
                    metrics=metrics,
                    counts=dict((counts or {}).get(result.task_name, {})),
                    details={
                        "mteb_task": result.task_name,
                        "split": split,
                        "hf_subset": subset,
                        "main_score": main,
                        "languages": list(scores.get("languages") or []),
                        "mteb_version": result.mteb_version,
                        "evaluation_time": result.evaluation_time,
                        "scores": {k: float(v) for k, v in scores.items() if _is_number(v)},
                    },
                    primary_metrics=(main,) if main in metrics else (),
                )
            )
    return rows


def mteb_scores(result: TaskScores) -> dict[str, float]:
    """A row's metrics on mteb's 0-1 scale, to hand back to mteb.

    They are as mteb's ``TaskResult`` holds them.

    Args:
        result: a row of :func:`task_results` (or any sciembed result whose metrics are on sciembed's 0-100 scale).
    """
    return {name: value / SCORE_SCALE for name, value in result.metrics.items()}


@contextlib.contextmanager
def _datasets_progress_bars(*, shown: bool) -> Iterator[None]:
    """datasets' progress bars hidden while the block runs unless ``shown``, then as they were."""
    import datasets

    if shown or not datasets.is_progress_bar_enabled():
        yield
        return
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        datasets.enable_progress_bars()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def mteb_version() -> str:
    """The installed mteb's version."""
    return str(_mteb().__version__)


def _mteb() -> Any:
    """The mteb module, or a clear error when it is missing or older than 2.x."""
    try:
        import mteb
    except ImportError as error:
        raise MtebNotInstalledError(
            "the MTEB bridge (--benchmark mteb) needs mteb 2.x: pip install 'mteb>=2.26.24,<3'"
        ) from error
    major_minor = tuple(int(part) for part in re.findall(r"\d+", str(getattr(mteb, "__version__", "0")))[:2])
    if major_minor < MTEB_MINIMUM:
        raise MtebNotInstalledError(
            f"the MTEB bridge implements mteb 2.x's encoder protocol; mteb {mteb.__version__} is installed: "
            "pip install 'mteb>=2.26.24,<3'"
        )
    return mteb
