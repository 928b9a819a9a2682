"""A recipe from base checkpoint and data to a trained model: what ``sciembed train`` runs.

:func:`prepare` builds the model (the recipe's family from the base checkpoint, or the base itself),
the examples, the collator, the loss and the Trainer. :func:`train` runs it and saves the result:

- ``OUTPUT/checkpoint-N/``: the Trainer's checkpoints (plus ``loss.pt`` for losses with parameters).
  ``resume=True`` continues from the latest complete one.
- ``OUTPUT/model/``: the trained model with its tokenizer, written atomically (a family with its
  remote code and sentence-transformers files, a plain encoder with sentence-transformers files that
  record the pooling it was trained with, SPECTROID's head and encoder as one model).
- ``OUTPUT/train_results.json``: the recipe, the settings, the data counts and the metrics.
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

from ..evaluation.loaders import TaskSuite
from ..io import atomic_path, check_output_place, check_writable, replace_folder
from .examples import CitationFiles
from .objectives.base import ModelSettings
from .recipes import Recipe, flatten_overrides, get_recipe
from .sources import detect_source

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
    """Build the Trainer of ``recipe`` for a base checkpoint and the examples read from ``data``.

    ``base`` defaults to the embedded all-MiniLM-L6-v2. ``data`` is a file or folder, or papers and citations as
    :class:`~sciembed.training.examples.CitationFiles`. A SMART collection's ``.X`` lines are read as
    ``smart_links`` says. Checkpoints go under ``output_dir``. The data is read before the model is loaded. A base
    that names code other than sciembed's own is refused before anything is read unless ``trust_remote_code``
    (:func:`sciembed.checkpoints.check_remote_code`)."""
    import torch
    from transformers import TrainingArguments, set_seed

    from ..default_model import default_model_path
    from ..encode import check_max_length, default_max_length, position_limit
    from ..families import register_families
    from .trainers import PaperEmbedding

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
    objective = recipe.objective
    source = detect_source(data, objective.data, recipe.name, smart_links)
    examples = objective.examples(source, objective.parse(settings))
    if examples.domains:
        _take_mixture_domains(settings, examples.domains, overrides)
    typed = objective.parse(settings)
    # What a family adds to the base (Multi2SPE's last per-CLS layers, a head, adapters) starts random:
    # seeded here, before the Trainer seeds training, so a run is the same run every time.
    set_seed(settings["training"].get("seed", 42))
    model, tokenizer = objective.model(base, typed, examples, trust_remote_code)
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
    options = objective.trainer_options(typed, model, examples)
    loss = objective.loss(typed, model, examples)
    paper_embedding = PaperEmbedding(
        pooling=settings["embedding"]["pooling"],
        normalize=settings["embedding"]["normalize"],
        domain=objective.domain(typed),
        max_length=max_length,
    )
    trainer = objective.trainer(
        model,
        args,
        loss=loss,
        embedding=paper_embedding,
        train_dataset=examples.train,
        eval_dataset=examples.evaluation,
        data_collator=objective.collator(tokenizer, training_length, model, examples),
        processing_class=tokenizer,
        weight_average=typed.model.weight_average,
        **options,
    )
    counts = {
        "examples": len(examples.train),
        **examples.counts,
        "starts_as_published": objective.starts_as_published(settings, embedding),
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
    """The settings a run of ``recipe`` from ``base`` with ``overrides`` uses, as :func:`prepare` resolves them.

    ``base`` defaults to the embedded all-MiniLM-L6-v2. No data is read and no model is loaded. The embedding
    follows the base unless set (``embedding.chosen_by`` names what chose each value), and a model trained in
    unit vectors takes the recipe's unit-vector settings. ``embedding.max_length`` left unset is the base's
    sentence-transformers length, else ``None``: the model's own limit, read when it loads. ``data.max_length`` left
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
    """Prepare and run ``recipe`` (arguments as :func:`prepare`). Save the model and ``train_results.json`` (see the
    module docstring).

    With held-out queries (``data.held_out``) the trained model is scored on them once at the end (the Trainer's
    own evaluation at the last step when its ``eval_strategy`` made one), and the evaluation is also written
    as ``OUTPUT/held_out_evaluation.json`` in ``sciembed evaluate``'s format (what ``sciembed export``
    turns into the model card's results). ``evaluate_before`` scores the untrained model first
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
    """Refuses an output folder holding a run, unless told to continue or replace it."""
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
    """The trained model's held-out metrics, scored once.

    They are the Trainer's own evaluation when it scored the final weights, else one evaluation now. With
    ``eval_strategy`` ``epoch``, or ``steps`` ending on an evaluation step, the Trainer evaluates at the last step."""
    # With load_best_model_at_end the Trainer's last evaluation scored the last step, not the weights it loaded.
    if trainer.last_metrics_step == trainer.state.global_step and not trainer.args.load_best_model_at_end:
        return trainer.last_metrics
    return trainer.evaluate()


def _resume_checkpoint(output_dir: Path, *, main_process: bool) -> str | bool:
    """The checkpoint ``--resume`` continues from.

    That is the newest one whose ``trainer_state.json`` (the file the Trainer writes last) reads. Newer ones
    without it are saves a stopped run never finished: each is named with what is wrong and removed (by the main
    process), so training repeats those steps. ``True`` (the Trainer's own search and error) when the folder has no
    checkpoint at all.
    """
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


def _evaluate_published_base(
    run: TrainingRun, base: str | os.PathLike[str] | None, trust_remote_code: bool = False
) -> dict[str, float]:
    """The held-out metrics of the base as its authors use it.

    The metrics are named as the Trainer names them.

    A sentence-transformers base embeds through its own modules, a plain encoder by its [CLS], both at the run's
    text length."""
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
    """Save a trained model so that :func:`sciembed.encode` embeds it as it was trained. The folder
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


def _settings(recipe: Recipe, base: str, overrides: Mapping[str, Any] | None, trust_remote_code: bool = False):
    """The recipe's settings for ``base``, with the embedding resolved.

    What ``embedding`` leaves unset follows the base as its authors use it
    (:func:`~sciembed.checkpoint_files.base_embedding`), a family's own pooling excepted. Trained in unit vectors, the
    recipe's unit-vector settings apply. The choice and its source are recorded as ``embedding.chosen_by``. A base
    naming code other than sciembed's own is refused unless ``trust_remote_code``
    (:func:`sciembed.checkpoints.check_remote_code`), before its files are read, and so is a tokenizer that would not
    load (:func:`sciembed.checkpoints.check_tokenizer`)."""
    from ..checkpoint_files import base_embedding, transformer_path
    from ..checkpoints import check_remote_code, check_tokenizer

    check_remote_code(base, trust_remote_code=trust_remote_code)
    check_tokenizer(transformer_path(base), trust_remote_code=trust_remote_code)
    given = recipe.resolve(overrides)["embedding"]
    spec = base_embedding(base)
    normalize = spec.normalize if given["normalize"] is None else bool(given["normalize"])
    settings = recipe.resolve(overrides, unit_vectors=normalize)
    pooling = given["pooling"] or recipe.objective.default_pooling(settings["model"], spec.pooling)
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


def _dense_variant(recipe: Recipe, overrides: Mapping[str, Any] | None) -> tuple[Recipe, Mapping[str, Any] | None]:
    """``model.family=none``: the recipe on the base encoder as it is.

    This is the dense counterpart of MoE BERT's experts, or of any family. It keeps the data, loss and optimiser,
    but has no family and so none of its model options or domain tag."""
    flat = dict(flatten_overrides(overrides or {}))
    if "model.family" not in flat:
        return recipe, overrides
    family = flat.pop("model.family")
    if family not in (None, "none"):
        raise ValueError(
            f"model.family takes none (the base encoder as it is, without the recipe's family), got {family!r}"
        )
    if not recipe.objective.has_dense_variant:
        raise ValueError(
            f"model.family=none: recipe {recipe.name} needs what its model adds to the base encoder "
            f"({recipe.objective.name} objective); it applies to the triplet and pair recipes"
        )
    settings = copy.deepcopy(recipe.settings)
    common = {f.name for f in dataclasses.fields(ModelSettings)}
    settings["model"] = {"family": None, **{k: v for k, v in settings["model"].items() if k in common}}
    if "domain" in settings["data"]:
        settings["data"]["domain"] = None
    departures = tuple(
        d for d in recipe.departures if not d.setting.startswith("model.") or d.setting[len("model.") :] in common
    )
    objective = dataclasses.replace(recipe.objective, family=None)
    return dataclasses.replace(recipe, objective=objective, settings=settings, departures=departures), flat


def _take_mixture_domains(
    settings: dict[str, dict[str, Any]], domains: list[str], overrides: Mapping[str, Any] | None
) -> None:
    """A run on several citation graphs, whose rows each carry their graph's domain.

    So ``data.domain`` no longer applies, and a mixture-of-experts model gets one expert per domain.
    ``model.domains`` given by hand must name the same ones."""
    settings["data"]["domain"] = None
    if "domains" not in settings["model"]:
        return
    given = dict(flatten_overrides(overrides or {})).get("model.domains")
    if given is not None and list(given) != domains:
        raise ValueError(
            f"model.domains {list(given)} differs from the mixture's domains {domains} (its tasks' names)"
        )
    settings["model"]["domains"] = list(domains)
