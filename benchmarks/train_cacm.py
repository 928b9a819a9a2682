"""Does fine-tuning help? The four citation recipes from the embedded MiniLM, judged on held-out CACM queries.

CACM's linked papers are split by query paper (80 / 20, per seed); training examples come from the
training queries only (held-out query papers never appear in a training example). Each recipe
(``specter``, ``scincl``, ``multi2spe``, ``moe-cocitation``) starts from the embedded all-MiniLM-L6-v2
with its default settings (from a sentence-transformers base: MiniLM's own mean pooling and L2
normalisation, the recipes' unit-vector objective) and the same budget (``--steps`` optimiser steps of 32
examples, texts cut to ``--max-length`` tokens). Next to them, on the same held-out cite task (SciDocs'
protocol: up to 5 linked papers against 25 random ones, -L2 ranking, pytrec_eval MAP / nDCG):

- MiniLM as published (its own modules: mean pooling + normalisation), not trained;
- the peer a user would pick instead: sentence-transformers' own ``SentenceTransformerTrainer`` with
  ``MultipleNegativesRankingLoss`` on the same triplets (the ``specter`` recipe's sample: same queries,
  positives and hard negatives), same steps, batch, learning rate and schedule.

An out-of-domain guard scores every model on SciRepEval's training samples (``scirepeval-samples``):
fields-of-study classification (multi-label over the 14 fields with at least 8 of the 205 papers,
LinearSVC one-vs-rest, macro-F1, a seeded half / half split) and search (candidates ranked by -L2, nDCG).

Rows are written to the JSON as they finish; a run with ``--seeds 1`` adds to an existing file (rows
already there for a seed and system are kept, not rerun), so a long benchmark can be split over runs.

    python benchmarks/train_cacm.py --data ../shared/data --seeds 0 1 --steps 60
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import platform
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

import sciembed
from sciembed.data.papers import paper_text
from sciembed.io import atomic_path
from sciembed.evaluation import evaluate_suite
from sciembed.evaluation.loaders import TaskSuite
from sciembed.training.run import prepare

#: name -> (recipe, description)
SYSTEMS = {
    "specter": ("specter", "SPECTER recipe (citation triplets) on MiniLM"),
    "scincl": ("scincl", "SciNCL recipe (graph-neighbour triplets) on MiniLM"),
    "multi2spe": ("multi2spe", "Multi2SPEModel (K = 3) from MiniLM, multi2spe recipe"),
    "moe-cocitation": ("moe-cocitation", "MoEBertModel from MiniLM (enforced routing, domain cs), co-citation pairs"),
}
PEER = "sentence-transformers"
REFERENCE = "MiniLM as published"
BATCH = 32
MIN_FIELD_PAPERS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/ and scirepeval-samples/")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="one split, sample and training run per seed")
    parser.add_argument("--steps", type=int, default=60, help=f"optimiser steps per model ({BATCH} examples each)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text, in training and evaluation")
    parser.add_argument("--held-out", type=float, default=0.2, help="share of query papers held out for evaluation")
    parser.add_argument("--systems", nargs="+", choices=(*SYSTEMS, PEER), default=[*SYSTEMS, PEER], help="what to train")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a recipe override for every sciembed system (e.g. loss.name=triplet); recorded in the JSON")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "train_cacm.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cacm, samples = args.data / "cacm", args.data / "scirepeval-samples"
    for folder in (cacm, samples):
        if not folder.is_dir():
            raise SystemExit(f"{folder} is absent: this benchmark needs the real data (../shared/data/README.md)")
    from sciembed.training.recipes import parse_assignments

    extra = parse_assignments(args.set)
    settings = {"seeds": args.seeds, "steps": args.steps, "batch": BATCH, "max_length": args.max_length, "held_out": args.held_out,
                "base": "all-MiniLM-L6-v2 (embedded)", "overrides": extra}
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {}
    if results and (results["settings"]["steps"] != args.steps or results["settings"].get("overrides", {}) != extra):
        raise SystemExit(f"{args.output} holds a run with other settings ({results['settings']}); choose another --output")
    rows: list[dict[str, Any]] = results.get("rows", [])
    done = {(r["seed"], r["system"]) for r in rows}
    ood = out_of_domain_suite(samples)

    def save() -> None:
        seeds = sorted({r["seed"] for r in rows})
        report = {"benchmark": "train_cacm", "description": __doc__.strip().splitlines()[0], "settings": {**settings, "seeds": seeds},
                  "machine": {"platform": platform.platform(), "torch_threads": torch.get_num_threads()},
                  "rows": rows, "summary": summarise(rows)}
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(args.output) as temporary:
            temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    for seed in args.seeds:
        overrides = {"data.held_out": args.held_out, "data.seed": seed, "seed": seed, "max_steps": args.steps,
                     "embedding.max_length": args.max_length, "per_device_train_batch_size": BATCH, "gradient_accumulation_steps": 1,
                     "save_strategy": "no", "eval_strategy": "no", "logging_steps": 5, "per_device_eval_batch_size": 32, **extra}
        with tempfile.TemporaryDirectory() as output:
            # The specter run's split, held-out task and triplets are the reference's and the peer's.
            specter = prepare("specter", None, cacm, output, overrides)
            held_out = specter.trainer.eval_dataset
            if (seed, REFERENCE) not in done:
                encoder = sciembed.PaperEncoder.from_pretrained(max_length=args.max_length, device="cpu")
                rows.append({"seed": seed, "system": REFERENCE, "model": "all-MiniLM-L6-v2, its own modules (mean pooling + normalise), not trained",
                             "held_out_queries": specter.data["held_out_queries"],
                             "after": cite_metrics(evaluate_suite(encoder, held_out, n_jobs=1, show_progress_bar=False).results),
                             "out_of_domain_after": ood_metrics(evaluate_suite(encoder, ood, n_jobs=1, show_progress_bar=False).results)})
                print(json.dumps(rows[-1]), flush=True)
                save()
            if PEER in args.systems and (seed, PEER) not in done:
                rows.append(peer_row(seed, specter.trainer.train_dataset, held_out, ood, args))
                print(json.dumps(rows[-1]), flush=True)
                save()
            del specter
        for system in args.systems:
            if system == PEER or (seed, system) in done:
                continue
            with tempfile.TemporaryDirectory() as output:
                rows.append(recipe_row(system, seed, cacm, output, overrides, ood))
            print(json.dumps(rows[-1]), flush=True)
            save()
            gc.collect()
    print(json.dumps(summarise(rows), indent=1))


def recipe_row(system: str, seed: int, cacm: Path, output: str, overrides: dict[str, Any], ood: TaskSuite) -> dict[str, Any]:
    """Train one recipe with its defaults and the shared budget; held-out metrics before and after."""
    recipe, description = SYSTEMS[system]
    run = prepare(recipe, None, cacm, output, overrides)
    trainer = run.trainer
    before = cite_metrics(trainer.evaluate())
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    after = cite_metrics(trainer.evaluate())
    ood_after = ood_metrics(trainer.evaluate(eval_dataset=ood))
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    embedding = {k: run.settings["embedding"][k] for k in ("pooling", "normalize", "max_length")}
    return {"seed": seed, "system": system, "recipe": recipe, "model": description, "embedding": embedding, "loss": run.settings["loss"],
            "held_out_queries": run.data["held_out_queries"], "training_queries": run.data["queries"], "examples_available": run.data["examples"],
            "before": before, "after": after, "out_of_domain_after": ood_after, "steps": result.global_step,
            "examples_seen": result.global_step * BATCH, "train_seconds": round(seconds, 1),
            "first_logged_loss": losses[0] if losses else None, "last_logged_loss": losses[-1] if losses else None}


def peer_row(seed: int, triplets, held_out: TaskSuite, ood: TaskSuite, args) -> dict[str, Any]:
    """sentence-transformers' own trainer and MNR loss on the same triplets, same budget and schedule."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(sciembed.default_model_path(), device="cpu")
    model.max_seq_length = args.max_length
    sep = model.tokenizer.sep_token
    texts = {column: [paper_text(row[role], sep) for row in triplets] for column, role in
             (("anchor", "query"), ("positive", "positive"), ("negative", "negative"))}
    with tempfile.TemporaryDirectory() as output:
        training = SentenceTransformerTrainingArguments(
            output_dir=output, max_steps=args.steps, per_device_train_batch_size=BATCH, learning_rate=2e-5, warmup_steps=0.1,
            lr_scheduler_type="linear", weight_decay=0.0, seed=seed, save_strategy="no", report_to="none", logging_steps=5)
        trainer = SentenceTransformerTrainer(model=model, args=training, train_dataset=Dataset.from_dict(texts),
                                             loss=MultipleNegativesRankingLoss(model))
        started = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - started
    encoder = sciembed.PaperEncoder(model, max_length=args.max_length, device="cpu")
    return {"seed": seed, "system": PEER, "model": "SentenceTransformerTrainer + MultipleNegativesRankingLoss (scale 20) on the specter "
            "recipe's triplets, lr 2e-5, 10% warm-up, linear decay", "held_out_queries": len(held_out.tasks[0].qrels),
            "after": cite_metrics(evaluate_suite(encoder, held_out, n_jobs=1, show_progress_bar=False).results),
            "out_of_domain_after": ood_metrics(evaluate_suite(encoder, ood, n_jobs=1, show_progress_bar=False).results),
            "steps": result.global_step, "examples_seen": result.global_step * BATCH, "train_seconds": round(seconds, 1)}


def out_of_domain_suite(folder: Path) -> TaskSuite:
    """SciRepEval's fields-of-study and search samples as evaluation tasks."""
    from dataclasses import replace

    from sciembed.data.scirepeval import read_scirepeval_sample
    from sciembed.evaluation.supervised import SCIREPEVAL_MULTILABEL
    from sciembed.evaluation.tasks import ClassificationTask, SearchTask

    fos = read_scirepeval_sample(folder / "fos_small.json", skip_invalid=True).data
    # Fields with at least MIN_FIELD_PAPERS papers: rarer ones leave CV folds with one class only.
    counts = Counter(label for labels in fos["labels"] for label in labels)
    kept = sorted(label for label, n in counts.items() if n >= MIN_FIELD_PAPERS)
    rows = [(str(row["paper_id"]), [kept.index(x) for x in row["labels"] if x in kept], row) for row in fos]
    rows = [row for row in rows if row[1]]
    order = np.random.default_rng(0).permutation(len(rows))
    half = len(order) // 2
    split = [([rows[i][0] for i in part], [rows[i][1] for i in part]) for part in (order[:half], order[half:])]
    classification = ClassificationTask("scirepeval-samples", f"Fields of study ({len(kept)} with >= {MIN_FIELD_PAPERS} papers)",
                                        {paper_id: row for paper_id, _, row in rows},
                                        train=split[0], test=split[1], protocol=replace(SCIREPEVAL_MULTILABEL, metrics=("f1_macro",)),
                                        task_id="fos")
    search = read_scirepeval_sample(folder / "search_small.jsonl", skip_invalid=True).data
    queries, documents, qrels = {}, {}, {}
    for number, row in enumerate(search):
        qid = f"q{number}"
        queries[qid] = row["query"]
        qrels[qid] = {c["paper_id"]: int(c["score"]) for c in row["candidates"]}
        documents.update({c["paper_id"]: c for c in row["candidates"]})
    ranking = SearchTask("scirepeval-samples", "Search", documents, queries=queries, qrels=qrels, measures=("ndcg",), similarity="l2",
                         task_id="search")
    return TaskSuite("scirepeval-samples", str(folder), [classification, ranking])


def cite_metrics(metrics) -> dict[str, float]:
    """MAP and nDCG of the cite task, from a report's results or the Trainer's metric names."""
    if isinstance(metrics, list):
        metrics = {f"eval_cite_{name}": value for result in metrics for name, value in result.metrics.items()}
    return {m: round(metrics[f"eval_cite_{m}"], 2) for m in ("map", "ndcg")}


def ood_metrics(metrics) -> dict[str, float]:
    if isinstance(metrics, list):
        metrics = {f"eval_{result.task_id}_{name}": value for result in metrics for name, value in result.metrics.items()}
    return {"fos_f1_macro": round(metrics["eval_fos_f1_macro"], 2), "search_ndcg": round(metrics["eval_search_ndcg"], 2)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per system: mean metrics over seeds, the gain over MiniLM as published, and the targets."""
    reference = {r["seed"]: r for r in rows if r["system"] == REFERENCE}
    summary: dict[str, Any] = {}
    for system in dict.fromkeys(r["system"] for r in rows):
        chosen = [r for r in rows if r["system"] == system and r["seed"] in reference]
        if not chosen:
            continue
        entry: dict[str, Any] = {"seeds": [r["seed"] for r in chosen]}
        for stage in ("before", "after"):
            if all(stage in r for r in chosen):
                entry[stage] = {m: round(statistics.mean(r[stage][m] for r in chosen), 2) for m in ("map", "ndcg")}
        entry["map_gain_over_published"] = [round(r["after"]["map"] - reference[r["seed"]]["after"]["map"], 2) for r in chosen]
        entry["out_of_domain_change"] = {m: [round(r["out_of_domain_after"][m] - reference[r["seed"]]["out_of_domain_after"][m], 2) for r in chosen]
                                         for m in ("fos_f1_macro", "search_ndcg")}
        if system != REFERENCE:
            entry["beats_published_on_every_seed"] = all(g > 0 for g in entry["map_gain_over_published"])
            entry["out_of_domain_within_1_point"] = all(c >= -1 for changes in entry["out_of_domain_change"].values() for c in changes)
        summary[system] = entry
    return summary


if __name__ == "__main__":
    main()
