"""Settings chosen on validation queries: a recipe's variants scored on a split carved from CACM's training queries.

``recipes`` judges each row on the seed's held-out queries, so no setting may be chosen there. This trains a recipe
with the rows' budget (``recipes.budget``: the seed's split, ``--steps`` steps of 32, texts cut to ``--max-length``)
plus ``data.validation`` (a share of the *training* query papers, never trained on; the held-out queries are the same
as the rows') and the variant's ``--set`` overrides, and scores the validation queries' cite task (SciDocs' protocol,
pytrec_eval MAP / nDCG) for MiniLM as published, the model at step 0 and the trained model. Each run adds a row to
``--output``, so the search (every variant tried, and its validation score) is kept beside the results it chose; a
data file of a variant is recorded relative to ``--data``. The
multi-task recipes (``scirepeval-*``) train on the rows' task mixture of the seed (``recipes.write_mixture``), whose
citation task is split the same way, its validation queries carved from the training ones; ``scirepeval-fusion``
first trains its first stage (``scirepeval-adapters`` with its defaults) on the same split. With ``--weight-averages``
the recipe trains without WiSE-FT's average and each listed share of the trained weights is scored from that one run,
on the validation queries and on out-of-domain validation data that ``recipes``' tests never use
(:func:`out_of_domain_validation`: hep-th queries outside the seeds' test samples, the S2ORC sample's MAG fields, the
other arXiv file's archives), so a share can be chosen for what it keeps outside the training domain as well as for
what it gains in it. The classification recipe (``spectroid-heads``) is scored on validation *papers* instead: a
stratified share of the training half of the seed's CACM categories task, never trained on (nor are the task's test
papers); its head's own macro-F1 there against MiniLM's linear probe (LinearSVC, SciDocs' protocol) fitted on the rest
of that half.

    python benchmarks/validation_search.py --data ../shared/data --recipe multi2spe --set learning_rate=1e-4
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from recipes import (
    SYSTEMS,
    FixedTasks,
    arxiv_archive_files,
    budget,
    but_share,
    fields_task,
    head_predictions,
    hepth_test_sample,
    resolved_defaults,
    write_mixture,
)

import sciembed
from sciembed.evaluation import evaluate_suite
from sciembed.evaluation.loaders import TaskSuite
from sciembed.io import atomic_path, default_cache_dir
from sciembed.training.objectives import Classification
from sciembed.training.recipes import RECIPES, parse_assignments
from sciembed.training.run import prepare, resolved_settings, save_trained
from sciembed.training.trainers import average_weights

REFERENCE = "MiniLM as published"


def recorded_paths(value: Any, data: Path) -> Any:
    """``value`` with every path inside the data folder written relative to it, so a row records no machine's paths.

    Args:
        value: a setting's value: a string, a list of them, a dict of settings, or anything else (kept).
        data: the data folder (``--data``).
    """
    if isinstance(value, dict):
        return {key: recorded_paths(item, data) for key, item in value.items()}
    if isinstance(value, list):
        return [recorded_paths(item, data) for item in value]
    if isinstance(value, str) and "/" in value:
        path, root = Path(value).resolve(), data.resolve()
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else value
    return value


def training_data(args: argparse.Namespace, rows_budget: dict[str, Any], folder: Path) -> Path:
    """CACM, or for a multi-task recipe the seed's task mixture as ``recipes`` writes it (in ``folder``; its test
    papers from the specter row's split under ``rows_budget``, as there)."""
    system = SYSTEMS.get(args.recipe)
    if system is None or not system.mixture:
        return args.data / "cacm"
    folders = {name: args.data / name for name in ("cacm", "hepth", "arxiv-metadata", "scirepeval-samples")}
    missing = [str(f) for f in folders.values() if not f.is_dir()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} absent: the mixture needs the real data (../shared/data/README.md)")
    with tempfile.TemporaryDirectory() as output:
        specter = prepare("specter", None, folders["cacm"], output, rows_budget)
        suite = FixedTasks.read(folders).suite(specter.trainer.eval_dataset, args.seed, args.hepth_queries)
    return write_mixture(folders, suite, folder, args.cite_weight)


def classification_scores(args: argparse.Namespace, overrides: dict[str, Any]) -> dict[str, Any]:
    """A classification recipe trained without the seed's category test papers and ``args.validation`` of its
    training ones; the head's macro-F1 on those validation papers, and on the same split the linear probe of MiniLM
    as published and of the trained encoder (LinearSVC fitted on the training papers)."""
    from sklearn.model_selection import train_test_split

    from sciembed.data.smart import read_smart_collection
    from sciembed.evaluation.loaders import cacm_category_task

    cacm = args.data / "cacm"
    task = cacm_category_task(read_smart_collection(cacm, skip_invalid=True), seed=args.seed)
    train_ids, train_labels = task.train
    fit_ids, validation_ids, fit_labels, validation_labels = train_test_split(
        train_ids, train_labels, test_size=args.validation, stratify=train_labels, random_state=args.seed
    )
    split = TaskSuite(
        "validation",
        "cacm categories",
        [replace(task, task_id="validation", train=(fit_ids, fit_labels), test=(validation_ids, validation_labels))],
    )
    published = evaluate_suite(
        sciembed.PaperEncoder.from_pretrained(device="cpu"), split, n_jobs=1, show_progress_bar=False
    )
    excluded = {"data.held_out": 0.0, "data.exclude": [*task.test[0], *validation_ids]}
    with tempfile.TemporaryDirectory() as output:
        run = prepare(args.recipe, None, cacm, output, {**overrides, **excluded})
        started = time.perf_counter()
        run.trainer.train()
        seconds = time.perf_counter() - started
        head, _ = head_predictions(run.trainer, cacm, validation_ids)
        run.trainer.evaluate(eval_dataset=split)
    probe = run.trainer.last_evaluation.results[0].metrics["f1_macro"]
    return {
        "resolved": resolved_defaults(run.settings),
        "validation_papers": len(validation_ids),
        REFERENCE: {"probe_f1_macro": round(published.results[0].metrics["f1_macro"], 2)},
        "after": {"head_f1_macro": head["f1_macro"], "probe_f1_macro": round(probe, 2)},
        "train_seconds": round(seconds, 1),
    }


#: The seeds whose hep-th test queries the out-of-domain validation queries avoid (the recipes table's rows use 0-2).
TEST_SEEDS = range(10)
#: The out-of-domain validation tasks and the measure each is judged by.
OUT_OF_DOMAIN = {"hepth_validation": "map", "s2orc_fields": "f1_macro", "arxiv_kaggle": "f1_macro"}


def out_of_domain_validation(data: Path, seed: int, hepth_queries: int, queries: int, folder: Path) -> list[Any]:
    """Validation tasks outside CACM that none of ``recipes``' test tasks use.

    - ``hepth_validation``: ``queries`` hep-th query papers outside the test samples of ``hepth_queries`` of every
      seed in ``TEST_SEEDS`` (drawn as ``recipes.FixedTasks.suite`` draws them), SciDocs' cite protocol;
    - ``s2orc_fields``: the S2ORC sample's MAG fields of study as a task of ``recipes.fields_task`` (multi-label,
      halves by the seed), as the fields-of-study test task;
    - ``arxiv_kaggle``: the Kaggle arXiv file's primary archives, as the archive test task (which reads the other
      arXiv file)."""
    from sciembed.evaluation.custom import classification_tasks

    folders = {name: data / name for name in ("cacm", "hepth", "arxiv-metadata", "scirepeval-samples")}
    hepth = FixedTasks.read(folders).hepth
    linked = hepth.linked_queries()
    tested = {int(i) for test_seed in TEST_SEEDS for i in hepth_test_sample(len(linked), test_seed, hepth_queries)}
    others = [i for i in range(len(linked)) if i not in tested]
    chosen = np.random.default_rng([seed, 1]).choice(others, size=min(queries, len(others)), replace=False)
    tasks = [replace(hepth.cite_task([linked[i] for i in sorted(chosen)], seed=seed), task_id="hepth_validation")]
    records = [
        json.loads(line)
        for line in (data / "s2orc-sample" / "data" / "metadata" / "sample.jsonl").read_text("utf-8").splitlines()
    ]
    papers = [
        (r["paper_id"], r["mag_field_of_study"], {k: r[k] for k in ("paper_id", "title", "abstract")})
        for r in records
        if (r.get("abstract") or "").strip() and r.get("mag_field_of_study")
    ]
    tasks.append(fields_task("s2orc-sample", "MAG fields of study", papers, seed, task_id="s2orc_fields"))
    (labels, papers), _ = arxiv_archive_files(
        folders["arxiv-metadata"] / "kaggle-first-2000" / "arxiv_data.csv", folder
    )
    (archive,), _ = classification_tasks("arxiv", str(labels), papers=str(papers), seed=seed)
    return [*tasks, replace(archive, task_id="arxiv_kaggle")]


def measures(metrics: dict[str, float]) -> dict[str, float]:
    """The validation cite MAP / nDCG (``map``, ``ndcg``) and each out-of-domain task's measure (named by the task)
    present in a Trainer's ``metrics``."""
    wanted = {"cite_map": "map", "cite_ndcg": "ndcg"}
    wanted.update({f"{task}_{measure}": task for task, measure in OUT_OF_DOMAIN.items()})
    return {name: round(metrics[f"eval_{key}"], 2) for key, name in wanted.items() if f"eval_{key}" in metrics}


def cite_scores(args: argparse.Namespace, overrides: dict[str, Any], rows_budget: dict[str, Any]) -> dict[str, Any]:
    """A citation or multi-task recipe trained with ``args.validation`` of its training queries held for validation;
    those queries' cite MAP / nDCG for MiniLM as published, at step 0 and after training. With
    ``args.weight_averages``: trained without the average, then per share the averaged model on the validation
    queries and the out-of-domain validation tasks (``curve``)."""
    shares = args.weight_averages
    if shares:
        overrides = {**overrides, "model.weight_average": 1.0}
    first_stage = SYSTEMS[args.recipe].after if args.recipe in SYSTEMS else None
    with tempfile.TemporaryDirectory() as output, tempfile.TemporaryDirectory() as mixture:
        data = training_data(args, rows_budget, Path(mixture))
        base, stage = None, {}
        if first_stage:
            # The first stage as the rows train it, but on the same split as the variant: its validation queries
            # are never trained on in either stage.
            split = {**rows_budget, "data.validation": args.validation}
            base, stage = train_first_stage(first_stage, data, Path(output), split)
        run = prepare(args.recipe, base, data, Path(output) / "variant", overrides)
        suite = run.validation
        if shares:
            extra = out_of_domain_validation(args.data, args.seed, args.hepth_queries, args.ood_queries, Path(mixture))
            suite = replace(suite, tasks=[*suite.tasks, *extra])
        # MiniLM as published embeds the same texts in every run of a seed: its vectors come from the cache.
        published = evaluate_suite(
            sciembed.PaperEncoder.from_pretrained(device="cpu"),
            suite,
            cache_dir=args.cache_dir or default_cache_dir(),
            n_jobs=1,
            show_progress_bar=False,
        )
        trainer = run.trainer
        before = measures(trainer.evaluate(eval_dataset=suite))
        start = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
        after = measures(trainer.evaluate(eval_dataset=suite))
        curve = {}
        if shares:
            trained = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
            for share in shares:
                if share == 1.0:  # the trained weights: scored as ``after``
                    curve[str(share)] = after
                    continue
                trainer.model.load_state_dict(trained)
                average_weights(trainer.model, start, share)
                curve[str(share)] = measures(trainer.evaluate(eval_dataset=suite))
    reference = {}
    for result in published.results:
        reference.update(measures({f"eval_{result.task_id}_{k}": v for k, v in result.metrics.items()}))
    return {
        "resolved": resolved_defaults(run.settings),
        "validation_queries": len(suite.tasks[0].qrels),
        "window": run.trainer.max_length,  # the tokens a paper is embedded in (MiniLM as published: 256)
        **({"first_stage": stage} if stage else {}),
        REFERENCE: reference,
        "before": before,
        "after": after,
        "change_vs_published": {name: round(after[name] - reference[name], 2) for name in reference if name in after},
        **({"curve": curve} if shares else {}),
        "train_seconds": round(seconds, 1),
    }


def train_first_stage(recipe: str, data: Path, output: Path, overrides: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """A two-stage recipe's first stage (``scirepeval-fusion`` starts from ``scirepeval-adapters``) with its
    defaults under ``overrides``, saved in ``output``; returns the saved model and what the stage was."""
    run = prepare(recipe, None, data, output / "first-stage", overrides)
    started = time.perf_counter()
    run.trainer.train()
    seconds = time.perf_counter() - started
    model = save_trained(run.trainer, run.trainer.processing_class, output / "first-stage-model")
    return model, {"recipe": recipe, "resolved": resolved_defaults(run.settings), "train_seconds": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/data"),
        help="folder holding cacm/ (and, for the multi-task recipes, hepth/, arxiv-metadata/, scirepeval-samples/)",
    )
    parser.add_argument("--hepth-queries", type=int, default=300, help="as recipes' (the mixture's test papers)")
    parser.add_argument("--recipe", required=True, choices=sorted(RECIPES), help="the recipe whose variant is scored")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the variant: recipe overrides on top of the rows' budget (none: the recipe's defaults)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the split, sampling and training seed")
    parser.add_argument("--steps", type=int, default=60, help="optimiser steps of 32 examples")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per training text")
    parser.add_argument(
        "--validation",
        type=float,
        default=0.2,
        help="share of the training query papers (of a classification recipe: training papers) held for validation",
    )
    parser.add_argument(
        "--weight-averages",
        nargs="+",
        type=float,
        metavar="SHARE",
        help="train without WiSE-FT's average, then score each share of the trained weights (1: as trained, 0: the "
        "starting model) on the validation queries and the out-of-domain validation tasks",
    )
    parser.add_argument(
        "--cite-weight",
        type=float,
        default=1.0,
        help="a multi-task recipe's citation task's weight in its mixture's batches (the other tasks weigh 1)",
    )
    parser.add_argument(
        "--ood-queries", type=int, default=100, help="hep-th validation query papers (with --weight-averages)"
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "validation_search.json")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="MiniLM's embedding cache (default: sciembed's, reused by reruns)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cacm = args.data / "cacm"
    if not cacm.is_dir():
        raise SystemExit(f"{cacm} is absent: this benchmark needs the real data (../shared/data/README.md)")
    variant = parse_assignments(args.set)
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {"rows": []}
    rows: list[dict[str, Any]] = results["rows"]
    key = {
        "recipe": args.recipe,
        "seed": args.seed,
        "steps": args.steps,
        "max_length": args.max_length,
        "validation": args.validation,
        "variant": recorded_paths(variant, args.data),
        "weight_averages": args.weight_averages,
        # Recorded only when set, so rows scored before the option existed keep their key.
        **({"cite_weight": args.cite_weight} if args.cite_weight != 1.0 else {}),
    }
    rows_budget = budget(args.seed, args.steps, args.max_length)
    overrides = {**rows_budget, "data.validation": args.validation, **variant}
    # A recipe's defaults change over time: a row scored before a change of the settings it resolves to is
    # another variant (WiSE-FT's share aside, which a curve of shares sets itself).
    resolved = but_share(resolved_defaults(resolved_settings(args.recipe, None, overrides)))
    if any({k: row.get(k) for k in key} == key and but_share(row["resolved"]) == resolved for row in rows):
        raise SystemExit(f"{args.output} already holds {json.dumps(key)} with these settings; nothing to do")
    scored = (
        classification_scores(args, {**rows_budget, **variant})
        if isinstance(RECIPES[args.recipe].objective, Classification)
        else cite_scores(args, overrides, rows_budget)
    )
    row = {**key, **scored, "torch_threads": torch.get_num_threads()}
    print(json.dumps(row), flush=True)
    # Read again before writing: several searches may run side by side into one file.
    latest = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {"rows": []}
    report = {
        "benchmark": "validation_search",
        "description": __doc__.strip().splitlines()[0],
        "machine": {"platform": platform.platform()},
        "rows": [*latest["rows"], row],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
