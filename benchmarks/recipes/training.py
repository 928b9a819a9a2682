"""Training and scoring a row of the recipes table: a recipe, the peer, or a kept model scored again."""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

import sciembed
from sciembed.data.papers import paper_text
from sciembed.evaluation import evaluate_suite
from sciembed.evaluation.loaders import TaskSuite
from sciembed.training.run import prepare, save_trained

from .systems import BATCH, PEER, REFERENCE, SHARE, SYSTEMS
from .tasks import CITE_TASKS, HEAD, FixedTasks, scores, suite_task, write_domains, write_mixture


def rescore(rows: list[dict[str, Any]], seed: int, systems: list[str], suite: TaskSuite, args) -> set[tuple[int, str]]:
    """Score ``seed``'s rows of ``systems`` again on ``suite``'s tasks; returns the rows rescored.

    A row keeps its other tasks' scores. A row without a kept model is left as it is, and said so.

    Args:
        rows: the results file's rows.
        seed: the seed whose rows are scored.
        systems: the systems scored.
        suite: the tasks scored.
        args: the ``rescore`` command's options.
    """
    rescored = set()
    for row in rows:
        if row["seed"] != seed or row["system"] not in systems:
            continue
        folder = kept(args, seed, row["system"])
        if row["system"] != REFERENCE and (folder is None or not folder.is_dir()):
            print(f"seed {seed}, {row['system']}: no kept model in {folder}; its scores stay", flush=True)
            continue
        encoder = sciembed.PaperEncoder.from_pretrained(
            None if row["system"] == REFERENCE else str(folder), device="cpu"
        )
        for part, values in scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results).items():
            row.setdefault(part, {}).update(values)
        row["rescored"] = True
        rescored.add((seed, row["system"]))
        print(json.dumps({"seed": seed, "system": row["system"], "rescored": row["metrics"]}), flush=True)
    return rescored


def kept(args, seed: int, system: str) -> Path | None:
    """Where ``--keep-models`` saves ``system``'s model of ``seed`` (None without it)."""
    return args.keep_models / f"seed-{seed}" / system if args.keep_models else None


def recipe_row(
    name: str,
    seed: int,
    data: Path,
    output: str,
    overrides: dict[str, Any],
    suite: TaskSuite,
    keep: Path | None = None,
    *,
    base: Path | None = None,
    held_out_ids: list[str] | None = None,
    earlier: tuple[tuple[dict[str, Any], Path], ...] = (),
) -> dict[str, Any]:
    """Train one system with the shared budget and score it on the seed's tasks.

    A run whose held-out queries are not the specter row's stops: its rows would not be paired. When one of the
    ``earlier`` rows resolved to the same settings but WiSE-FT's share, its kept model is reweighed instead of
    training again, and the row takes its training records.

    Args:
        name: the system.
        seed: the seed of the split and the training.
        data: CACM, or the seed's task mixture or domain file.
        output: a scratch folder for the trainer.
        overrides: the dotted settings the row trains with.
        suite: the seed's tasks.
        keep: where to save the trained model (none: not saved).
        base: the first stage's model a second stage starts from.
        held_out_ids: the specter row's held-out queries (none: not checked).
        earlier: rows with their kept models whose training may be reused.
    """
    system = SYSTEMS[name]
    run = prepare(system.recipe, None if base is None else str(base), data, output, overrides)
    held = run.data["domains"]["cs"] if system.domains else run.data
    if held_out_ids is not None and held["held_out_ids"] != held_out_ids:
        raise SystemExit(
            f"seed {seed}, {name}: its held-out queries differ from the specter row's; its scores would not be paired"
        )
    trainer = run.trainer
    resolved = resolved_defaults(run.settings)
    source = None
    for row, folder in earlier:
        differing = _settings_differing(row, run.settings, resolved)
        if not differing:
            source = row, folder
            break
        print(f"seed {seed}, {name}: {row['system']}'s training differs in {differing}; not reused", flush=True)
    if source is not None:
        row, folder = source
        reweigh(trainer.model, folder, row["resolved"]["weight_average"], resolved["weight_average"])
        _keep(trainer, run, keep)
        trainer.evaluate(eval_dataset=suite)
        return {
            **_trained_row(name, seed, run, resolved, trainer, data, suite, base),
            **{k: row[k] for k in (*_TRAINING_RECORDS, *(("before_hepth",) if system.domains else ()))},
            "reused_training": {"system": row["system"], "weight_average": row["resolved"]["weight_average"]},
        }
    before = None if system.labelled else step_zero(trainer, suite, CITE_TASKS if system.domains else ("cacm_cite",))
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    _keep(trainer, run, keep)
    trainer.evaluate(eval_dataset=suite)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {
        **_trained_row(name, seed, run, resolved, trainer, data, suite, base),
        **(
            {}
            if system.labelled
            else {"before": before["cacm_cite"], **({"before_hepth": before["hepth_cite"]} if system.domains else {})}
        ),
        "steps": result.global_step,
        "examples_seen": result.global_step * BATCH,
        "train_seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / max(result.global_step, 1), 2),
        "first_logged_loss": losses[0] if losses else None,
        "last_logged_loss": losses[-1] if losses else None,
    }


def _keep(trainer: Any, run: Any, keep: Path | None) -> None:
    """Save the trained model in ``keep`` (when given) before scoring, so a second stage can start from it."""
    if keep is not None:
        save_trained(trainer, run.tokenizer, keep)


#: The embedding settings a row records.
_EMBEDDING = ("pooling", "normalize", "max_length")

#: What a row reusing another's training (``--reuse-training``) takes from it.
_TRAINING_RECORDS = (
    "before",
    "steps",
    "examples_seen",
    "train_seconds",
    "seconds_per_step",
    "first_logged_loss",
    "last_logged_loss",
)


def _trained_row(
    name: str,
    seed: int,
    run: Any,
    resolved: dict[str, Any],
    trainer: Any,
    data: Path,
    suite: TaskSuite,
    base: Path | None,
) -> dict[str, Any]:
    """A trained row's scores (from the trainer's last evaluation) and description."""
    system = SYSTEMS[name]
    scored = scores(trainer.last_evaluation.results)
    if system.labelled:
        scored["metrics"][HEAD], scored["per_paper"][HEAD] = head_predictions(
            trainer, data, suite_task(suite, "cacm_categories").test[0]
        )
    return {
        "seed": seed,
        "system": name,
        "recipe": system.recipe,
        "model": system.description,
        "overrides": system.overrides,
        "resolved": resolved,
        "embedding": {k: run.settings["embedding"][k] for k in _EMBEDDING},
        "loss": run.settings["loss"],
        "held_out_queries": run.data.get("held_out_queries"),
        "training_queries": run.data.get("queries"),
        "examples_available": run.data["examples"],
        **({"excluded_papers": run.data["excluded_papers"]} if system.labelled else {}),
        **scored,
        **({"tasks": run.data["tasks"]} if system.mixture else {}),
        **({"base": str(base)} if base else {}),
        **(
            {
                "domains": {
                    d: {k: v for k, v in c.items() if not k.endswith("_ids")} for d, c in run.data["domains"].items()
                }
            }
            if system.domains
            else {}
        ),
    }


def same_training(rows: list[dict[str, Any]], seed: int, name: str, args) -> tuple[tuple[dict[str, Any], Path], ...]:
    """The rows of ``seed`` with a kept model whose system trains as ``name``'s does but for WiSE-FT's share.

    A classifier's starting weights include the head it fits first, so it never reuses a training.

    Args:
        rows: the rows so far.
        seed: the seed.
        name: the system to train.
        args: the ``run`` command's options.
    """
    system = SYSTEMS[name]
    if system.labelled:
        return ()
    found = []
    for row in rows:
        other = SYSTEMS.get(row["system"])
        folder = kept(args, seed, row["system"])
        if (
            row["seed"] == seed
            and other is not None
            and row["system"] != name
            and replace(other, description="", overrides={}, counterpart=None)
            == replace(system, description="", overrides={}, counterpart=None)
            and but_share(other.overrides, SHARE) == but_share(system.overrides, SHARE)
            and row["resolved"]["weight_average"] > 0
            and folder is not None
            and folder.is_dir()
        ):
            found.append((row, folder))
    return tuple(found)


def _settings_differing(row: dict[str, Any], settings: dict[str, Any], resolved: dict[str, Any]) -> list[str]:
    """The settings, but WiSE-FT's share, in which a run differs from an earlier ``row``.

    Args:
        row: the earlier row.
        settings: the run's resolved settings.
        resolved: the run's :func:`resolved_defaults`.
    """
    embedding = {k: settings["embedding"][k] for k in _EMBEDDING}
    return [
        *(["loss"] if row["loss"] != settings["loss"] else []),
        *(["embedding"] if row["embedding"] != embedding else []),
        *(
            k
            for k in sorted(but_share(row["resolved"]).keys() | but_share(resolved).keys())
            if row["resolved"].get(k) != resolved.get(k)
        ),
    ]


def but_share(settings: dict[str, Any], key: str = "weight_average") -> dict[str, Any]:
    """``settings`` without WiSE-FT's share (``key``)."""
    return {k: v for k, v in settings.items() if k != key}


def reweigh(model: torch.nn.Module, folder: Path, kept_share: float, share: float) -> None:
    """Give ``model`` the weights that training with WiSE-FT's share ``share`` ends with.

    The average acts when training ends, so a model kept at ``kept_share`` is ``kept_share * trained + (1 -
    kept_share) * start``; the wanted weights are ``start + share / kept_share * (kept - start)``.

    Args:
        model: the model as it starts training.
        folder: the kept model of the same training.
        kept_share: WiSE-FT's share the kept model was saved with.
        share: the share wanted.
    """
    from safetensors.torch import load_file

    from sciembed.formats import base_state_dict, load_format_modules
    from sciembed.training.trainers import average_weights

    current = model.state_dict()
    start = {k: v.detach().clone() for k, v in current.items()}
    missing, unexpected = model.load_state_dict(load_file(folder / "model.safetensors"), strict=False)
    # Format modules (PALs, adapters and fusions) are saved beside the base, in their own files.
    modules = current.keys() - base_state_dict(model).keys()
    try:
        if load_format_modules(model, folder):
            missing = [k for k in missing if k not in modules]
    except ValueError as error:
        raise SystemExit(f"{folder}: not this model's format modules ({error})") from None
    added = model.state_dict().keys() - current.keys()
    # Tied weights are saved once, under one of their names.
    shared = Counter(v.data_ptr() for v in current.values())
    untied = [k for k in missing if shared[current[k].data_ptr()] < 2]
    if unexpected or untied or added:
        raise SystemExit(
            f"{folder}: not this model's weights (missing {untied}, unexpected {[*unexpected, *sorted(added)]})"
        )
    average_weights(model, start, share / kept_share)


def resolved_defaults(settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The settings a row records beside its overrides: rate, share, examples, pooling, codes, loss, anchoring."""
    return {
        "learning_rate": settings["training"]["learning_rate"],
        "weight_average": settings["model"].get("weight_average", 1.0),
        **{k: settings["data"][k] for k in ("sampler", "pairs", "rank_overflow") if k in settings["data"]},
        **{k: settings["model"][k] for k in ("text_pooling", "control_code_init") if k in settings["model"]},
        "loss": settings["loss"].get("name"),
        **{k: settings["loss"][k] for k in ("proximity", "anchor_weight") if k in settings["loss"]},
    }


def step_zero(trainer, suite: TaskSuite, tasks: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The model before training on the suite's cite tasks ``tasks`` (MAP and nDCG of each)."""
    metrics = trainer.evaluate(eval_dataset=replace(suite, tasks=[suite_task(suite, t) for t in tasks]))
    return {t: {m: round(metrics[f"eval_{t}_{m}"], 2) for m in ("map", "ndcg")} for t in tasks}


def head_predictions(trainer, cacm: Path, test_ids: list[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """A trained classifier's own predictions for CACM's category test papers.

    Returns the macro-F1, and each paper's category and prediction for the paired intervals.

    Args:
        trainer: the trained classifier's trainer.
        cacm: the CACM collection.
        test_ids: the category task's test papers.
    """
    from sklearn.metrics import f1_score

    from sciembed.training.examples import labelled_papers

    data, labels = labelled_papers(cacm)
    wanted = set(test_ids)
    data = data.filter(lambda row: row["paper_id"] in wanted)
    logits = trainer.predict(data).predictions
    logits = logits[0] if isinstance(logits, tuple) else logits
    names = trainer.model.config.id2label
    predicted = [names[int(i)] for i in np.asarray(logits).argmax(-1)]
    gold = [labels[i] for i in data["label"]]
    f1 = f1_score(gold, predicted, average="macro", zero_division=0) * 100
    return {"f1_macro": round(float(f1), 2)}, {
        "label_columns": None,
        "papers": dict(zip(data["paper_id"], zip(gold, predicted))),
    }


def peer_trainer(triplets, seed: int, steps: int, max_length: int, output: str, callbacks=()):
    """sentence-transformers' own trainer and MNR loss, with the specter rows' budget and schedule.

    Returns the trainer and the window the model is published with.

    Args:
        triplets: a recipe's ``{query, positive, negative}`` rows.
        seed: the training seed.
        steps: optimiser steps.
        max_length: tokens per training text.
        output: a scratch folder for the trainer.
        callbacks: trainer callbacks.
    """
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(sciembed.default_model_path(), device="cpu")
    window, model.max_seq_length = model.max_seq_length, max_length
    sep = model.tokenizer.sep_token
    texts = {
        column: [paper_text(row[role], sep) for row in triplets]
        for column, role in (("anchor", "query"), ("positive", "positive"), ("negative", "negative"))
    }
    training = SentenceTransformerTrainingArguments(
        output_dir=output,
        max_steps=steps,
        per_device_train_batch_size=BATCH,
        learning_rate=2e-5,
        warmup_steps=0.1,
        lr_scheduler_type="linear",
        weight_decay=0.0,
        seed=seed,
        save_strategy="no",
        report_to="none",
        logging_steps=5,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training,
        train_dataset=Dataset.from_dict(texts),
        loss=MultipleNegativesRankingLoss(model),
        callbacks=list(callbacks),
    )
    return trainer, window


def peer_row(seed: int, triplets, suite: TaskSuite, args, keep: Path | None = None) -> dict[str, Any]:
    """The peer (:func:`peer_trainer`) trained and scored like the recipes (the model saved in ``keep`` when given)."""
    with tempfile.TemporaryDirectory() as output:
        trainer, window = peer_trainer(triplets, seed, args.steps, args.max_length, output)
        started = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - started
    model = trainer.model
    # Trained on short texts, the model keeps its published window (as sciembed's recipes do with data.max_length).
    model.max_seq_length = window
    if keep is not None:
        model.save(str(keep))
    encoder = sciembed.PaperEncoder(model, device="cpu")
    return {
        "seed": seed,
        "system": PEER,
        "model": "SentenceTransformerTrainer + MultipleNegativesRankingLoss (scale 20) on the specter "
        "recipe's triplets, lr 2e-5, 10% warm-up, linear decay",
        "held_out_queries": len(suite.tasks[0].qrels),
        **scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results),
        "steps": result.global_step,
        "examples_seen": result.global_step * BATCH,
        "train_seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / max(result.global_step, 1), 2),
    }


def reference_row(seed: int, suite: TaskSuite, held_out_queries: int) -> dict[str, Any]:
    """MiniLM as published, scored on the seed's tasks.

    Args:
        seed: the seed of the tasks.
        suite: the seed's tasks.
        held_out_queries: how many CACM query papers the seed holds out.
    """
    encoder = sciembed.PaperEncoder.from_pretrained(device="cpu")
    return {
        "seed": seed,
        "system": REFERENCE,
        "model": "all-MiniLM-L6-v2, its own modules (mean pooling + normalise), not trained",
        "held_out_queries": held_out_queries,
        **scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results),
    }


def system_row(
    name: str,
    seed: int,
    args,
    folders: dict[str, Path],
    fixed: FixedTasks,
    suite: TaskSuite,
    overrides: dict[str, Any],
    held_out_ids: list[str],
    rows: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """Train and score system ``name`` on its data; None when the first stage it starts from was not kept.

    Args:
        name: the system.
        seed: the seed of the split and the training.
        args: the ``run`` command's options.
        folders: the data folders by name (``cacm``, ``scirepeval-samples``, ...).
        fixed: the tasks read once per run.
        suite: the seed's tasks.
        overrides: the seed's budget and ``--set`` overrides.
        held_out_ids: the specter row's held-out queries, which the row must share.
        rows: the rows so far, whose kept trainings ``--reuse-training`` may reuse.
    """
    system = SYSTEMS[name]
    base = kept(args, seed, system.after) if system.after else None
    if system.after and (base is None or not base.is_dir()):
        print(
            f"seed {seed}, {name}: starts from the seed's {system.after} model, which --keep-models did not keep; "
            "not trained",
            flush=True,
        )
        return None
    settings = {**overrides, **system.overrides}
    if system.anchors:
        settings["data.anchor_papers"] = [str(folders["scirepeval-samples"] / file) for file in system.anchors]
    if system.labelled:  # no held-out queries: the test papers of the categories' evaluation are what it never sees
        settings.update({"data.held_out": 0.0, "data.exclude": list(suite_task(suite, "cacm_categories").test[0])})
    with tempfile.TemporaryDirectory() as output, tempfile.TemporaryDirectory() as mixture:
        if system.mixture:
            data = write_mixture(folders, suite, Path(mixture), system.cite_weight)
        elif system.domains:
            data = write_domains(folders, fixed, suite, Path(mixture))
        else:
            data = folders["cacm"]
        return recipe_row(
            name,
            seed,
            data,
            output,
            settings,
            suite,
            kept(args, seed, name),
            base=base,
            held_out_ids=None if system.labelled else held_out_ids,
            earlier=same_training(rows, seed, name, args) if args.reuse_training else (),
        )
