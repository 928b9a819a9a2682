"""A recipe from base checkpoint and data to a trained model: what ``sciembed train`` runs.

:func:`prepare` builds the model (the recipe's family from the base checkpoint, or the base itself),
the examples, the collator, the loss and the Trainer; :func:`train` runs it and saves the result:

- ``OUTPUT/checkpoint-N/``: the Trainer's checkpoints (plus ``loss.pt`` for losses with parameters);
  ``resume=True`` continues from the latest complete one;
- ``OUTPUT/model/``: the trained model with its tokenizer, written atomically (a family with its
  remote code and sentence-transformers files; a plain encoder with sentence-transformers files that
  record the pooling it was trained with; SPECTROID's head and encoder as one model);
- ``OUTPUT/train_results.json``: the recipe, the settings, the data counts and the metrics;
- ``OUTPUT/held_out_evaluation.json``: with held-out queries, their evaluation in ``sciembed evaluate``'s format.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import Dataset

from ..evaluation.loaders import TaskSuite
from ..io import atomic_path, check_output_place, check_writable, replace_folder
from .examples import CitationFiles
from .recipes import Recipe, flatten_overrides, get_recipe

logger = logging.getLogger(__name__)

MODEL_FOLDER = "model"
RESULTS_FILE = "train_results.json"
EVALUATION_FILE = "held_out_evaluation.json"


@dataclass
class TrainingRun:
    """A prepared run: the Trainer and what went into it."""

    recipe: Recipe
    settings: dict[str, dict[str, Any]]
    trainer: Any
    tokenizer: Any
    output_dir: Path
    data: dict[str, Any]
    #: The validation queries' cite task (``data.validation``): for tuning, never the held-out queries.
    validation: TaskSuite | None = None


def prepare(
    recipe: str | Recipe,
    base: str | os.PathLike[str] | None,
    data: str | os.PathLike[str] | CitationFiles,
    output_dir: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    *,
    smart_links: str = "cacm",
    trust_remote_code: bool = False,
) -> TrainingRun:
    """Build the Trainer of ``recipe`` for the base checkpoint ``base`` (default: the embedded
    all-MiniLM-L6-v2) and the examples read from ``data`` (a file or folder, or papers and citations as
    :class:`~sciembed.training.examples.CitationFiles`; a SMART collection's ``.X`` lines read as
    ``smart_links`` says), checkpointing under ``output_dir``. The data is read before the model is loaded. A base
    that names code other than sciembed's own is refused before anything is read unless ``trust_remote_code``
    (:func:`sciembed.checkpoints.check_remote_code`)."""
    import torch
    from transformers import TrainingArguments, set_seed

    from ..default_model import default_model_path
    from ..encode import check_max_length, default_max_length, position_limit
    from ..families import register_families

    recipe = get_recipe(recipe) if isinstance(recipe, str) else recipe
    recipe, overrides = _dense_variant(recipe, overrides)
    base = str(base) if base is not None else default_model_path()
    settings, embedding = _settings(recipe, base, overrides, trust_remote_code)
    for key, value in (
        ("embedding.max_length", settings["embedding"]["max_length"]),
        ("data.max_length", settings["data"]["max_length"]),
    ):
        if value is not None and (type(value) is not int or value < 1):
            raise ValueError(f"{key} is a number of tokens (a positive integer), got {value!r}")
    register_families()
    examples = _examples(recipe, settings["data"], data, smart_links)
    if examples.domains:
        _take_mixture_domains(settings, examples.domains, overrides)
    # What a family adds to the base (Multi2SPE's last per-CLS layers, a head, adapters) starts random:
    # seeded here, before the Trainer seeds training, so a run is the same run every time.
    set_seed(settings["training"].get("seed", 42))
    model, tokenizer = _model(recipe, settings["model"], base, examples, trust_remote_code)
    given = settings["embedding"]["max_length"]
    # A window that is set needs none from the base's tokenizer files (whose own may be damaged).
    limit = default_max_length(model, tokenizer) if given is None else min(position_limit(model), 512)
    for key in ("embedding", "data"):
        if settings[key]["max_length"] is not None:
            check_max_length(settings[key]["max_length"], tokenizer, f"{key}.max_length")
    if (settings["embedding"]["max_length"] or 0) > limit:
        raise ValueError(
            f"embedding.max_length {settings['embedding']['max_length']} exceeds the {limit} tokens {base} takes"
        )
    max_length = settings["embedding"]["max_length"] = min(
        settings["embedding"]["max_length"] or embedding.max_length or limit, limit
    )
    # Training texts may be cut shorter than the window the model keeps (saved and evaluated at max_length).
    training_length = settings["data"]["max_length"] = settings["data"]["max_length"] or max_length
    if training_length > limit:
        raise ValueError(f"data.max_length {training_length} exceeds the {limit} tokens {base} takes")
    logger.info(
        "recipe %s trains in this embedding: pooling %s, normalize %s, max_length %d "
        "(%s; training texts cut to %d); loss %s",
        recipe.name,
        settings["embedding"]["pooling"] or "the family's own",
        settings["embedding"]["normalize"],
        max_length,
        settings["embedding"]["chosen_by"],
        training_length,
        settings["loss"],
    )
    training = dict(settings["training"])
    # Pinned memory only speeds up copies to a GPU; on a CPU machine the DataLoader just warns about it.
    training.setdefault("dataloader_pin_memory", torch.cuda.is_available())
    # A step keeps each layer's input and recomputes the rest in the backward pass (with the dropout masks it
    # drew), so the weights it gives are the same, in a fraction of the activations' memory. Under torchrun the
    # recomputed layers and the parameters no loss uses (DistributedDataParallel's find_unused_parameters) do not mix.
    one_process = int(os.environ.get("WORLD_SIZE", "1")) == 1
    if (
        one_process
        and getattr(model, "supports_gradient_checkpointing", False)
        and "gradient_checkpointing" not in training
    ):
        training.setdefault("activation_checkpointing", True)
        training.setdefault("activation_checkpointing_kwargs", {"use_reentrant": False})
    if examples.evaluation is not None:
        training.setdefault("eval_strategy", training.get("save_strategy", "epoch"))
        # cite_map, or on several domains the first domain's (cite_<domain>_map)
        training.setdefault("metric_for_best_model", f"{examples.evaluation.tasks[0].task_id}_map")
    args = TrainingArguments(output_dir=str(output_dir), remove_unused_columns=False, **training)
    trainer_class, collator, loss, options = _objective(recipe, settings, model, tokenizer, training_length, examples)
    options.update(pooling=settings["embedding"]["pooling"], normalize=settings["embedding"]["normalize"])
    trainer = trainer_class(
        model,
        args,
        loss=loss,
        max_length=max_length,
        train_dataset=examples.train,
        eval_dataset=examples.evaluation,
        data_collator=collator,
        processing_class=tokenizer,
        weight_average=settings["model"].get("weight_average", 1.0),
        **options,
    )
    counts = {
        "examples": len(examples.train),
        **examples.counts,
        "starts_as_published": _starts_as_published(recipe, settings, embedding),
    }
    logger.info("recipe %s on %s: %s", recipe.name, data, {k: v for k, v in counts.items() if not k.endswith("_ids")})
    return TrainingRun(
        recipe, settings, trainer, tokenizer, Path(output_dir), {"source": str(data), **counts}, examples.validation
    )


def resolved_settings(
    recipe: str | Recipe,
    base: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    trust_remote_code: bool = False,
) -> dict[str, dict[str, Any]]:
    """The settings a run of ``recipe`` from ``base`` (default: the embedded all-MiniLM-L6-v2) with ``overrides``
    uses, resolved as :func:`prepare` resolves them, without reading data or loading the model: the embedding
    follows the base unless set (``embedding.chosen_by`` names what chose each value), and a model trained in
    unit vectors takes the recipe's unit-vector settings. ``embedding.max_length`` left unset is the base's
    sentence-transformers length, else ``None``: the model's own limit, read when it loads; ``data.max_length`` left
    unset is ``embedding.max_length``. ``trust_remote_code`` as for :func:`prepare`."""
    from ..default_model import default_model_path

    recipe = get_recipe(recipe) if isinstance(recipe, str) else recipe
    recipe, overrides = _dense_variant(recipe, overrides)
    base = str(base) if base is not None else default_model_path()
    settings, embedding = _settings(recipe, base, overrides, trust_remote_code)
    if settings["embedding"]["max_length"] is None:
        settings["embedding"]["max_length"] = embedding.max_length
    if settings["data"]["max_length"] is None:
        settings["data"]["max_length"] = settings["embedding"]["max_length"]
    return settings


def train(
    recipe: str | Recipe,
    base: str | os.PathLike[str] | None,
    data: str | os.PathLike[str] | CitationFiles,
    output_dir: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    *,
    resume: bool = False,
    evaluate_before: bool = False,
    smart_links: str = "cacm",
    overwrite: bool = False,
    trust_remote_code: bool = False,
) -> dict[str, Any]:
    """Prepare and run ``recipe`` (arguments as :func:`prepare`); save the model and ``train_results.json`` (see the
    module docstring).

    With held-out queries (``data.held_out``) the trained model is scored on them once at the end (the Trainer's
    own evaluation at the last step when its ``eval_strategy`` made one), and the evaluation is also written
    as ``OUTPUT/held_out_evaluation.json`` in ``sciembed evaluate``'s format (what ``sciembed export``
    turns into the model card's results); ``evaluate_before`` scores the untrained model first
    (``base_eval_metrics`` in the summary) and the base as its authors publish it (its own pooling and
    normalisation: ``published_base_eval_metrics``), the model a fine-tuned one has to beat.

    An ``output_dir`` that holds an earlier run (its model, results or checkpoints) is refused before anything
    is read, unless ``resume`` (continue it) or ``overwrite`` (its checkpoints and held-out evaluation are removed
    now, its model and results replaced when this run saves).

    Returns the contents of ``train_results.json``.
    """
    _check_output(Path(output_dir), resume=resume, overwrite=overwrite)
    run = prepare(
        recipe, base, data, output_dir, overrides, smart_links=smart_links, trust_remote_code=trust_remote_code
    )
    checkpoint = _resume_checkpoint(run.output_dir, main_process=run.trainer.args.should_save) if resume else None
    evaluating = isinstance(run.trainer.eval_dataset, TaskSuite)
    before = evaluating and evaluate_before and not resume
    published_metrics = _evaluate_published_base(run, base, trust_remote_code) if before else {}
    # A recipe that trains the base in its published embedding starts exactly there: scored once.
    base_metrics = (published_metrics if run.data["starts_as_published"] else run.trainer.evaluate()) if before else {}
    started = time.perf_counter()
    result = run.trainer.train(resume_from_checkpoint=checkpoint)
    seconds = time.perf_counter() - started
    final_metrics = _final_metrics(run.trainer) if run.trainer.eval_dataset is not None else {}
    model_dir = run.output_dir / MODEL_FOLDER
    if run.trainer.args.should_save:
        save_trained(run.trainer, run.tokenizer, model_dir)
        if evaluating:
            run.trainer.last_evaluation.model = str(model_dir)
            run.trainer.last_evaluation.write_json(run.output_dir / EVALUATION_FILE)
    summary = {
        "recipe": run.recipe.name,
        "paper": run.recipe.paper,
        "base": str(base) if base is not None else "all-MiniLM-L6-v2 (embedded)",
        "data": run.data,
        "settings": run.settings,
        "train_metrics": result.metrics,
        "base_eval_metrics": base_metrics,
        "published_base_eval_metrics": published_metrics,
        "eval_metrics": final_metrics,
        "global_step": result.global_step,
        "seconds": round(seconds, 1),
        "model": str(model_dir),
    }
    if run.trainer.args.should_save:
        with atomic_path(run.output_dir / RESULTS_FILE) as temporary:
            temporary.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return summary


def _check_output(output_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to train into a folder holding an earlier run unless told to continue it or replace it."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    if resume and overwrite:
        raise ValueError("--resume continues the run in the output folder, --overwrite replaces it: give one of them")
    check_output_place(output_dir)
    check_writable(output_dir)
    checkpoints = sorted(output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*")) if output_dir.is_dir() else []
    if resume and not checkpoints:
        raise FileNotFoundError(
            f"{output_dir}: no {PREFIX_CHECKPOINT_DIR}-* folder to resume from; train without --resume to start a run"
        )
    if resume or not output_dir.is_dir():
        return
    earlier = [
        path.name
        for path in (output_dir / MODEL_FOLDER, output_dir / RESULTS_FILE, output_dir / EVALUATION_FILE)
        if path.exists()
    ]
    earlier += [path.name for path in checkpoints]
    if not earlier:
        return
    if not overwrite:
        raise FileExistsError(
            f"{output_dir} holds an earlier run ({', '.join(earlier[:4])}{', ...' if len(earlier) > 4 else ''}); "
            "pass --resume to continue it, --overwrite to replace it, or choose another --output"
        )
    for checkpoint in checkpoints:
        shutil.rmtree(checkpoint)
    # The earlier model's held-out scores must not be exported as this run's when this run holds nothing out.
    (output_dir / EVALUATION_FILE).unlink(missing_ok=True)
    logger.info("--overwrite: replacing the run in %s (%d checkpoint(s) removed)", output_dir, len(checkpoints))


def _final_metrics(trainer: Any) -> dict[str, float]:
    """The trained model's held-out metrics, scored once: the Trainer's own evaluation when it scored the final
    weights (``eval_strategy`` ``epoch``, or ``steps`` ending on an evaluation step, evaluates at the last step),
    else one evaluation now."""
    # With load_best_model_at_end the Trainer's last evaluation scored the last step, not the weights it loaded.
    if trainer.last_metrics_step == trainer.state.global_step and not trainer.args.load_best_model_at_end:
        return trainer.last_metrics
    return trainer.evaluate()


def _resume_checkpoint(output_dir: Path, *, main_process: bool) -> str | bool:
    """The checkpoint ``--resume`` continues from: the newest one whose ``trainer_state.json`` (the file the
    Trainer writes last) reads. Newer ones without it are saves a stopped run never finished: each is
    named with what is wrong and removed (by the main process), so training repeats those steps. ``True``
    (the Trainer's own search and error) when the folder has no checkpoint at all."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    steps = {}
    for folder in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if output_dir.is_dir() else ():
        step = folder.name[len(PREFIX_CHECKPOINT_DIR) + 1 :]
        if folder.is_dir() and step.isdigit():
            steps[int(step)] = folder
    unfinished = []
    for step in sorted(steps, reverse=True):
        state = steps[step] / "trainer_state.json"
        try:
            json.loads(state.read_text(encoding="utf-8"))
        except FileNotFoundError:
            unfinished.append((steps[step], f"{state} is missing"))
        except json.JSONDecodeError as error:
            unfinished.append((steps[step], f"{state}: not valid JSON (line {error.lineno}: {error.msg})"))
        else:
            break
    else:
        if unfinished:
            raise ValueError(
                f"no checkpoint in {output_dir} is complete ({'; '.join(why for _, why in unfinished)}); "
                "run without --resume to start again"
            )
        return True
    for folder, why in unfinished:
        logger.warning(
            "%s: the save of this checkpoint never finished (%s); it is removed and training resumes from %s",
            folder,
            why,
            steps[step].name,
        )
        if main_process:
            shutil.rmtree(folder)
    return str(steps[step])


def _starts_as_published(recipe: Recipe, settings: dict[str, dict[str, Any]], published: Any) -> bool:
    """Whether the model at step 0 embeds exactly as the base as published (evaluated at the run's text
    length): the base itself (no family, no format modules) in the pooling and normalisation of its
    sentence-transformers modules, or a Multi²SPE model built to start at a mean-pooling base
    (``text_pooling="mean"``, ``initialization="base"``) and normalised as the base is."""
    embedding, model = settings["embedding"], settings["model"]
    if recipe.family == "multi2spe":
        return (
            published.pooling == "mean"
            and embedding["normalize"] == published.normalize
            and model.get("text_pooling") == "mean"
            and model.get("initialization", "base") == "base"
        )
    return (
        recipe.family is None
        and not model.get("format_modules")
        and published.pooling is not None
        and (embedding["pooling"], embedding["normalize"]) == (published.pooling, published.normalize)
    )


def _evaluate_published_base(
    run: TrainingRun, base: str | os.PathLike[str] | None, trust_remote_code: bool = False
) -> dict[str, float]:
    """The held-out metrics of the base as its authors use it (a sentence-transformers base through its own
    modules, a plain encoder by its [CLS]), at the run's text length, named as the Trainer names them."""
    from ..default_model import default_model_path
    from ..encode import PaperEncoder
    from ..evaluation.runner import evaluate_suite

    trainer = run.trainer
    encoder = PaperEncoder.from_pretrained(
        str(base) if base is not None else default_model_path(),
        max_length=trainer.max_length,
        device=trainer.args.device,
        trust_remote_code=trust_remote_code,
    )
    report = evaluate_suite(
        encoder,
        trainer.eval_dataset,
        batch_size=trainer.args.per_device_eval_batch_size,
        n_jobs=1,
        show_progress_bar=False,
    )
    return {f"eval_{r.task_id or r.task}_{name}": value for r in report.results for name, value in r.metrics.items()}


def save_trained(trainer: Any, tokenizer: Any, folder: str | os.PathLike[str]) -> Path:
    """Save a trained model so that :func:`sciembed.encode` embeds it as it was trained; the folder
    appears complete or not at all (written beside it, then renamed)."""
    from ..saving import save_model

    folder = Path(folder)
    staging = folder.with_name(f".{folder.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    save_model(
        trainer.model,
        tokenizer,
        staging,
        pooling=getattr(trainer, "pooling", None),
        normalize=getattr(trainer, "normalize", False),
        max_length=trainer.max_length,
    )
    return replace_folder(staging, folder)


# ---------------------------------------------------------------------- the parts


@dataclass
class _Examples:
    train: Dataset
    evaluation: Any = None
    validation: Any = None
    counts: dict[str, Any] | None = None
    tasks: dict[str, tuple[str, int]] | None = None
    labels: list[str] | None = None
    #: The domains of a run on several citation graphs (a task mixture), in order.
    domains: list[str] | None = None
    #: The papers whose relations the model keeps (``data.anchor_papers``).
    anchor_papers: list[dict[str, Any]] | None = None
    #: Each task's weight in every batch of a multi-task mixture (``None``: equal shares).
    task_weights: dict[str, float] | None = None


def _settings(recipe: Recipe, base: str, overrides: Mapping[str, Any] | None, trust_remote_code: bool = False):
    """The recipe's settings for ``base``, with the embedding resolved: what ``embedding`` leaves unset
    follows the base as its authors use it (:func:`~sciembed.checkpoint_files.base_embedding`), a family's own
    pooling excepted; trained in unit vectors, the recipe's unit-vector settings apply. The choice and
    its source are recorded as ``embedding.chosen_by``. A base naming code other than sciembed's own is refused
    unless ``trust_remote_code`` (:func:`sciembed.checkpoints.check_remote_code`), before its files are read, and so
    is a tokenizer that would not load (:func:`sciembed.checkpoints.check_tokenizer`)."""
    from ..checkpoint_files import base_embedding, transformer_path
    from ..checkpoints import check_remote_code, check_tokenizer

    check_remote_code(base, trust_remote_code=trust_remote_code)
    check_tokenizer(transformer_path(base), trust_remote_code=trust_remote_code)
    given = recipe.resolve(overrides)["embedding"]
    spec = base_embedding(base)
    pooling = given["pooling"]
    if pooling is None and recipe.family is None and recipe.objective != "classification":
        pooling = spec.pooling or "cls"
    normalize = spec.normalize if given["normalize"] is None else bool(given["normalize"])
    settings = recipe.resolve(overrides, unit_vectors=normalize)
    if pooling is None and recipe.objective == "classification" and settings["model"].get("text_pooling") == "mean":
        pooling = "mean"  # the text's mean is what the classifier's encoder returns (SpectroidConfig.text_pooling)
    chosen_by = {
        "pooling": "settings"
        if given["pooling"] is not None
        else ("the family" if recipe.family is not None else spec.source if spec.pooling else "the paper ([CLS])"),
        "normalize": "settings"
        if given["normalize"] is not None
        else (spec.source if spec.normalize else "the paper"),
        "max_length": "settings"
        if given["max_length"] is not None
        else (spec.source if spec.max_length else "the model's limit"),
        "loss": "settings"
        if any(key.startswith("loss.") for key, _ in flatten_overrides(overrides or {}))
        else "the recipe's unit-vector settings"
        if normalize and recipe.unit_vector_settings
        else "the recipe's paper settings",
    }
    settings["embedding"].update(pooling=pooling, normalize=normalize, chosen_by=chosen_by)
    return settings, spec


def _examples(
    recipe: Recipe, options: dict[str, Any], path: str | os.PathLike[str] | CitationFiles, smart_links: str
) -> _Examples:
    from ..data.smart import is_smart_collection
    from . import examples as training_examples
    from . import task_mixture

    options = dict(options)
    held_out, seed, limit = options.pop("held_out"), options.pop("seed"), options.pop("max_examples")
    options.pop("max_length")  # the collators' (see prepare)
    validation_share = options.pop("validation")
    excluded = _excluded_papers(options.pop("exclude"))
    counts: dict[str, Any] = {}
    anchor_papers = _anchor_papers(options.pop("anchor_papers", None), excluded, counts)
    evaluation = validation = tasks = labels = task_weights = None
    mixture = recipe.data in ("scirepeval", "citations") and task_mixture.is_task_mixture(path)
    domains = None
    if excluded and recipe.data == "scirepeval":
        raise ValueError(
            "data.exclude takes papers out of citation graphs and labelled papers; multi-task data takes them "
            "per task: give a task mixture whose tasks name what they exclude"
        )
    if validation_share and recipe.data != "citations" and not mixture:
        raise ValueError(f"data.validation splits citation queries; recipe {recipe.name} trains on {recipe.data} data")
    if isinstance(path, CitationFiles):
        if recipe.data != "citations":
            raise ValueError(
                f"--papers / --citations give citation data; recipe {recipe.name} trains on {recipe.data} data "
                "(sciembed train --help lists the layouts)"
            )
    elif is_smart_collection(path):
        counts["smart_links"] = smart_links  # how the .X lines were read: part of what the model was trained on
    if mixture and recipe.data == "citations":
        pairs = recipe.objective == "pairs"
        options.pop("domain", None)  # each graph's rows are tagged with its own domain
        by_domain = task_mixture.domain_examples(
            task_mixture.read_task_mixture(path),
            pairs=options.pop("pairs") if pairs else None,
            sampler=None if pairs else options.pop("sampler"),
            sampler_options=None if pairs else options,
            held_out=held_out,
            validation=validation_share,
            seed=seed,
            exclude=excluded,
            smart_links=smart_links,
        )
        train, domains, evaluation, validation = (
            by_domain.train,
            by_domain.domains,
            by_domain.evaluation,
            by_domain.validation,
        )
        counts.update(
            domains=by_domain.counts,
            queries=sum(c["queries"] for c in by_domain.counts.values()),
            held_out_queries=sum(c["held_out_queries"] for c in by_domain.counts.values()),
        )
    elif mixture:
        mixed = task_mixture.mixture_examples(
            task_mixture.read_task_mixture(path),
            held_out=held_out,
            validation=validation_share,
            seed=seed,
            max_per_task=limit,
            smart_links=smart_links,
        )
        for key, share, split in (
            ("data.held_out", held_out, mixed.evaluation),
            ("data.validation", validation_share, mixed.validation),
        ):
            if share and split is None:
                raise ValueError(f"{path}: {key} splits citation queries, and this mixture has no citation graph")
        train, tasks, evaluation, validation = mixed.data.dataset, mixed.data.tasks, mixed.evaluation, mixed.validation
        task_weights = mixed.weights
        counts.update(mixed.counts)
        limit = None
    elif recipe.data == "scirepeval":
        if held_out:
            raise ValueError(
                f"{path}: data.held_out splits citation queries, and SciRepEval's samples hold no citation graph; "
                "give a task mixture with one, or evaluate the saved model instead"
            )
        loaded = training_examples.multitask_dataset(path, max_per_task=limit, seed=seed)
        train, tasks = loaded.dataset, loaded.tasks
        counts["tasks"] = {name: sum(1 for t in train["task"] if t == name) for name in tasks}
        if loaded.skipped:
            counts["skipped"] = loaded.skipped
        limit = None
    elif recipe.data == "labelled":
        if held_out:
            raise ValueError("data.held_out is not supported for labelled data; evaluate the saved model instead")
        train, labels = training_examples.labelled_papers(path, smart_links=smart_links)
        counts["labels"] = len(labels)
        if excluded:
            kept = train.filter(lambda row: row["paper_id"] not in excluded)
            counts.update(training_examples.exclusion_counts(excluded, train["paper_id"], "data.exclude"))
            train = kept
    elif (
        not isinstance(path, CitationFiles) and Path(path).suffix == ".json" and Path(path).name.startswith("specter")
    ):
        if excluded:
            raise ValueError(
                f"{path}: SciRepEval's ready triplets carry no paper ids to exclude; give a citation graph"
            )
        if recipe.objective == "pairs":
            raise ValueError(
                f"{path}: SciRepEval triplets are not co-citation pairs; give a citation graph for {recipe.name}"
            )
        train = training_examples.scirepeval_triplets(path)
    else:
        source = training_examples.read_citation_source(path, smart_links=smart_links)
        counts["skipped_records"] = len(source.skipped)
        split = training_examples.split_citation_queries(source, held_out, validation_share, seed)
        counts.update(split.counts())
        if excluded:
            counts.update(training_examples.exclusion_counts(excluded, source.papers.keys(), "data.exclude"))
        unseen = [*split.unseen, *sorted(excluded)]
        if recipe.objective == "pairs":
            train = training_examples.pair_dataset(
                source, exclude=unseen, domain=options.pop("domain", None), kind=options.pop("pairs")
            )
        else:
            sampler = options.pop("sampler")
            train = training_examples.triplet_dataset(
                source, sampler=sampler, queries=split.train, exclude=unseen, seed=seed, **options
            )
        if split.held_out:
            evaluation = TaskSuite("held-out", str(path), [source.cite_task(split.held_out, seed=seed)])
        if split.validation:
            validation = TaskSuite("validation", str(path), [source.cite_task(split.validation, seed=seed)])
    if limit is not None and len(train) > limit:
        train = train.shuffle(seed=seed).select(range(limit))
    return _Examples(train, evaluation, validation, counts, tasks, labels, domains, anchor_papers, task_weights)


def _anchor_papers(value: Any, excluded: set[str], counts: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``data.anchor_papers`` as records: a paper file :func:`~sciembed.data.papers.read_papers` reads, or SciRepEval's
    ready triplets (``specter*.json``: the papers they hold), or a list of such files; without ``data.exclude``'s
    papers. What is skipped, repeated or excluded is counted in ``counts``."""
    if value is None:
        return None
    paths = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(paths, (list, tuple)) or not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise ValueError(f"data.anchor_papers is a paper file or a list of them, got {value!r}")
    papers, seen = [], set()
    skipped = repeated = dropped = 0
    for path in paths:
        read, invalid = _paper_records(Path(path))
        skipped += invalid
        for paper in read:
            if paper["paper_id"] in excluded:
                dropped += 1
            elif paper["paper_id"] in seen:
                repeated += 1
            else:
                seen.add(paper["paper_id"])
                papers.append(paper)
    counts["anchor_papers"] = {"papers": len(papers), "skipped": skipped, "repeated": repeated, "excluded": dropped}
    if skipped or repeated or dropped:
        logger.warning(
            "data.anchor_papers: %d papers kept; %d records skipped as invalid, %d repeated, %d in data.exclude",
            len(papers),
            skipped,
            repeated,
            dropped,
        )
    return papers


def _paper_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The papers of one anchor file, and how many of its records were skipped as invalid."""
    from ..data.papers import read_papers
    from ..data.scirepeval import read_scirepeval_sample

    if path.suffix == ".json" and path.name.startswith("specter"):
        sample = read_scirepeval_sample(path, kind="specter", skip_invalid=True)
        return [paper for column in ("query", "pos", "neg") for paper in sample.data[column]], len(sample.skipped)
    read = read_papers(path, skip_invalid=True)
    return read.papers, len(read.skipped)


def _dense_variant(recipe: Recipe, overrides: Mapping[str, Any] | None) -> tuple[Recipe, Mapping[str, Any] | None]:
    """``model.family=none``: the recipe on the base encoder as it is (the dense counterpart of MoE BERT's experts, or
    of any family): same data, loss and optimiser, no family and so none of its model options or domain tag."""
    flat = dict(flatten_overrides(overrides or {}))
    if "model.family" not in flat:
        return recipe, overrides
    family = flat.pop("model.family")
    if family not in (None, "none"):
        raise ValueError(
            f"model.family takes none (the base encoder as it is, without the recipe's family), got {family!r}"
        )
    if recipe.objective not in ("triplet", "pairs"):
        raise ValueError(
            f"model.family=none: recipe {recipe.name} needs what its model adds to the base encoder "
            f"({recipe.objective} objective); it applies to the triplet and pair recipes"
        )
    settings = copy.deepcopy(recipe.settings)
    settings["model"] = {"family": None, **{k: v for k, v in settings["model"].items() if k == "weight_average"}}
    if "domain" in settings["data"]:
        settings["data"]["domain"] = None
    unit_vectors = {
        k: v
        for k, v in recipe.unit_vector_settings.items()
        if not k.startswith("model.") or k == "model.weight_average"
    }
    return dataclasses.replace(recipe, family=None, settings=settings, unit_vector_settings=unit_vectors), flat


def _take_mixture_domains(
    settings: dict[str, dict[str, Any]], domains: list[str], overrides: Mapping[str, Any] | None
) -> None:
    """A run on several citation graphs: each graph's rows carry its domain, so ``data.domain`` no longer applies,
    and a mixture-of-experts model gets one expert per domain (``model.domains`` given by hand must name the same
    ones)."""
    settings["data"]["domain"] = None
    if "domains" not in settings["model"]:
        return
    given = dict(flatten_overrides(overrides or {})).get("model.domains")
    if given is not None and list(given) != domains:
        raise ValueError(
            f"model.domains {list(given)} differs from the mixture's domains {domains} (its tasks' names)"
        )
    settings["model"]["domains"] = list(domains)


def _excluded_papers(value: Any) -> set[str]:
    """``data.exclude`` as a set of paper ids: a list of ids, or a file of them (one per line)."""
    if value is None:
        return set()
    if isinstance(value, (str, os.PathLike)):
        from .examples import read_paper_ids

        return set(read_paper_ids(value, "data.exclude"))
    if isinstance(value, (list, tuple)) and all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in value):
        return {str(i) for i in value}
    raise ValueError(f"data.exclude is a list of paper ids or a file of them, got {value!r}")


def _model(recipe: Recipe, options: dict[str, Any], base: str, examples: _Examples, trust_remote_code: bool = False):
    from transformers import AutoModel, AutoTokenizer

    from ..checkpoint_files import transformer_path
    from ..checkpoint_weights import check_weights_fit
    from ..families import classifier_from_bert, from_bert

    options = dict(options)
    options.pop("weight_average", None)  # the Trainer's (see prepare)
    options.pop("head_learning_rate", None)  # the trainers' (see _objective)
    options.pop("head_only_steps", None)  # the classification Trainer's
    options.pop("family", None)  # model.family=none: recipe.family is already None (see _dense_variant)
    modules = options.pop("format_modules", None)
    module_options = {
        k: options.pop(k) for k in ("adapter_config", "pals_hidden_size", "pals_attention_heads") if k in options
    }
    source = transformer_path(base)  # a sentence-transformers folder's transformer may sit in a subfolder
    if recipe.family is None:
        if options:
            raise ValueError(
                f"recipe {recipe.name} trains the base encoder as it is; it takes no model options "
                f"({', '.join(options)})"
            )
        check_weights_fit(source)  # a family's from_bert checks its base itself
        # float32 weights whatever the checkpoint stores: bf16 / fp16 training keeps float32 master weights.
        model = AutoModel.from_pretrained(source, trust_remote_code=trust_remote_code, dtype="float32")
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    elif recipe.objective == "classification":
        labels = examples.labels or []
        model, tokenizer = classifier_from_bert(
            recipe.family,
            source,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            trust_remote_code=trust_remote_code,
            **options,
        )
    else:
        model, tokenizer = from_bert(recipe.family, source, trust_remote_code=trust_remote_code, **options)
    _add_format_modules(model, modules, module_options, base)
    return model, tokenizer


def _add_format_modules(model, modules: str | None, options: dict[str, Any], base: str) -> None:
    """SciRepEval's format modules: stage-1 adapters (base frozen), stage-2 fusion over the adapters
    saved with ``base`` (adapters frozen), or PALs (trained with the whole network)."""
    from ..formats import adapters as format_adapters
    from ..formats import load_format_modules

    if modules is None:
        return
    if modules == "adapters":
        format_adapters.add_format_adapters(model, config=options.get("adapter_config", "seq_bn"))
        format_adapters.train_format_adapters(model)
    elif modules == "fusion":
        if not Path(base).is_dir() or len(load_format_modules(model, base)) < 2:
            raise ValueError(
                f"{base}: AdapterFusion trains over format adapters; give as --base a model trained with "
                "scirepeval-adapters"
            )
        format_adapters.add_format_fusion(model)
        format_adapters.train_format_fusion(model)
    elif modules == "pals":
        from ..formats.pals import PALsConfig, add_pals

        add_pals(
            model,
            PALsConfig(
                hidden_size=options.get("pals_hidden_size", 204),
                num_attention_heads=options.get("pals_attention_heads", 6),
            ),
        )
    else:
        raise ValueError(f"unknown model.format_modules {modules!r}; one of adapters, fusion, pals")


_ROUTER_WEIGHTS = ("router_cross_entropy", "router_mutual_information", "router_load_balancing")


def _check_loss_options(loss_class: type, name: str, options: Mapping[str, Any], ignore: tuple[str, ...] = ()) -> None:
    """Refuse ``loss.*`` settings the chosen loss does not take (``loss.margin`` with ``loss.name=mnr``)."""
    import inspect

    known = set(inspect.signature(loss_class.__init__).parameters) - {"self"}
    unknown = sorted(set(options) - known - set(ignore))
    if unknown:
        raise ValueError(
            f"loss.{', loss.'.join(unknown)}: not a setting of {loss_class.__name__} (loss.name={name}); "
            f"its settings: {', '.join(sorted(known))}"
        )


#: The objectives whose trainers add the anchoring term (:class:`~sciembed.training.losses.RelationalAnchorLoss`).
_ANCHORED_OBJECTIVES = ("triplet", "multi2spe", "pairs", "multitask")


def _anchoring(recipe: Recipe, loss_options: dict[str, Any], papers: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The trainer's anchoring options from ``data.anchor_papers`` and ``loss.anchor_weight`` /
    ``loss.anchor_batch_size`` (taken out of ``loss_options``); empty without anchor papers."""
    from .losses import RelationalAnchorLoss

    weight = loss_options.pop("anchor_weight", None)
    batch_size = loss_options.pop("anchor_batch_size", 16)
    if papers is None and weight is None:
        return {}
    if papers is None or weight is None:
        raise ValueError("anchoring takes both data.anchor_papers (the papers) and loss.anchor_weight (its weight)")
    if recipe.objective not in _ANCHORED_OBJECTIVES:
        raise ValueError(
            f"recipe {recipe.name} ({recipe.objective} objective) does not anchor papers; the triplet, Multi2SPE, "
            "pair and multi-task recipes do"
        )
    if type(batch_size) is not int:
        raise ValueError(f"loss.anchor_batch_size is a number of papers, got {batch_size!r}")
    return {"anchor_papers": papers, "anchor_loss": RelationalAnchorLoss(weight), "anchor_batch_size": batch_size}


#: The head settings each objective with heads takes (the multi-task heads live in its loss).
_HEAD_SETTINGS = {"multitask": ("head_learning_rate",), "classification": ("head_learning_rate", "head_only_steps")}


def _objective(
    recipe: Recipe, settings: dict[str, dict[str, Any]], model, tokenizer, max_length: int, examples: _Examples
):
    from . import collators, losses, trainers
    from .recipes import LOSSES

    unused = [k for k in _HEAD_SETTINGS["classification"] if k in settings["model"]]
    unused = [k for k in unused if k not in _HEAD_SETTINGS.get(recipe.objective, ())]
    if unused:
        raise ValueError(
            f"recipe {recipe.name} trains no head that {', '.join(f'model.{k}' for k in unused)} could apply to"
        )
    loss_options = dict(settings["loss"])
    anchoring = _anchoring(recipe, loss_options, examples.anchor_papers)
    micro_batch_size = loss_options.pop("micro_batch_size", "auto")  # checked by Recipe.resolve
    if anchoring and getattr(model.config, "routing", None) == "enforced":
        raise ValueError(
            "data.anchor_papers: a mixture-of-experts model with enforced routing sends each paper to its domain's "
            "expert, and anchor papers have no domain; anchor a dense model (model.family=none) or learned routing"
        )
    loss_class = getattr(losses, LOSSES[loss_options.pop("name")]) if "name" in loss_options else None
    if loss_class is not None:
        _check_loss_options(loss_class, settings["loss"]["name"], loss_options, ignore=_ROUTER_WEIGHTS)
    if recipe.objective in ("triplet", "multi2spe"):
        return (
            trainers.TripletTrainer,
            collators.TripletCollator(tokenizer, max_length),
            loss_class(**loss_options),
            {"micro_batch_size": micro_batch_size, **anchoring},
        )
    if recipe.objective == "pairs":
        router_weights = [loss_options.pop(k) for k in _ROUTER_WEIGHTS]
        loss = loss_class(**loss_options)
        router = None
        if getattr(model.config, "routing", "enforced") != "enforced" and any(router_weights):
            router = losses.RouterLoss(*router_weights, top_k=getattr(model.config, "num_experts_per_tok", 1))
        collator = collators.PairCollator(tokenizer, max_length, domains=getattr(model.config, "domains", None))
        options = {"router_loss": router, "domain": settings["data"].get("domain"), **anchoring}
        return trainers.PairTrainer, collator, loss, options
    if recipe.objective == "multitask":
        specs = {
            name: losses.TaskSpec("proximity" if kind == "search" else kind, labels)
            for name, (kind, labels) in examples.tasks.items()
        }
        loss = losses.MultiTaskLoss(specs, model.config.hidden_size, **loss_options)
        kinds = {name: kind for name, (kind, _) in examples.tasks.items()}
        modules = settings["model"].get("format_modules")
        options = {"adapter_training": modules} if modules in ("adapters", "fusion") else {}
        options.update(anchoring)
        if examples.task_weights:
            options["task_weights"] = examples.task_weights
        if "head_learning_rate" in settings["model"]:
            options["loss_learning_rate"] = settings["model"]["head_learning_rate"]
        return (
            trainers.MultiTaskTrainer,
            collators.MultiTaskCollator(tokenizer, max_length, task_kinds=kinds),
            loss,
            options,
        )
    head = {k: settings["model"][k] for k in _HEAD_SETTINGS["classification"] if k in settings["model"]}
    return trainers.PaperClassificationTrainer, collators.LabelledPaperCollator(tokenizer, max_length), None, head
