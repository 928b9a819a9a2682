"""Does fine-tuning help? SPECTER and Multi2SPE training on CACM's citation graph, judged on held-out queries.

CACM's linked papers are split by query paper (80 / 20, per seed). SPECTER triplets are sampled from the
training queries only; held-out query papers never appear in a training triplet, as query, positive or
negative. Two models start from the embedded all-MiniLM-L6-v2:

- (a) the plain BERT encoder with the ``specter`` recipe ([CLS] embedding, triplet margin loss);
- (b) a Multi2SPEModel (K = 3) with the ``multi2spe`` recipe (facet loss, lambda = 0.1);
- optionally (``--systems specter-mean``) the SPECTER recipe on MiniLM's own mean pooling.

Each recipe keeps its paper's optimiser settings (lr 2e-5, linear warm-up over 10% then decay,
effective batch 32) but trains for a budget this 2-core machine affords (``--steps`` optimiser steps,
texts cut to ``--max-length`` tokens). Both are evaluated on the held-out cite task (SciDocs' protocol:
up to 5 linked papers as positives, 25 random papers as negatives, -L2 ranking, MAP and nDCG by
pytrec_eval) before and after training; MiniLM with its own pooling (mean + normalise) is scored on the
same task as a reference. Results go to JSON, one row per seed and model.

    python benchmarks/train_cacm.py --data ../shared/data --seeds 0 1 --steps 30
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

import sciembed
from sciembed.embeddings_io import atomic_path
from sciembed.evaluation import evaluate_suite
from sciembed.training.run import prepare

#: name -> (recipe, description, recipe overrides)
SYSTEMS = {
    "specter": ("specter", "BERT (MiniLM), SPECTER recipe, [CLS] embedding", {}),
    "multi2spe": ("multi2spe", "Multi2SPEModel from MiniLM, multi2spe recipe", {}),
    "specter-mean": ("specter", "BERT (MiniLM), SPECTER recipe, mean pooling (MiniLM's own)", {"embedding.pooling": "mean"}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="one split, sample and training run per seed")
    parser.add_argument("--steps", type=int, default=30, help="optimiser steps per model (32 triplets each)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text, in training and evaluation")
    parser.add_argument("--held-out", type=float, default=0.2, help="share of query papers held out for evaluation")
    parser.add_argument("--systems", nargs="+", choices=tuple(SYSTEMS), default=["specter", "multi2spe"], help="what to train")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "train_cacm.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cacm = args.data / "cacm"
    if not cacm.is_dir():
        raise SystemExit(f"{cacm} is absent: this benchmark needs the real CACM collection (../shared/data/README.md)")

    rows = []
    for seed in args.seeds:
        reference = None
        for system in args.systems:
            recipe, description, extra = SYSTEMS[system]
            overrides = {**extra,
                "data.held_out": args.held_out, "data.seed": seed, "seed": seed, "max_steps": args.steps,
                "embedding.max_length": args.max_length, "save_strategy": "no", "eval_strategy": "no", "logging_steps": 5,
                "per_device_eval_batch_size": 32, "disable_tqdm": False,
            }
            with tempfile.TemporaryDirectory() as output:
                run = prepare(recipe, None, cacm, output, overrides)
                trainer = run.trainer
                if reference is None:
                    encoder = sciembed.PaperEncoder.from_pretrained(max_length=args.max_length, device="cpu")
                    report = evaluate_suite(encoder, trainer.eval_dataset, n_jobs=1, show_progress_bar=False)
                    reference = _metrics(report.results[0].metrics)
                    rows.append({"seed": seed, "model": "MiniLM, own pooling (mean + normalise), not trained", "stage": "reference",
                                 **reference, "held_out_queries": run.data["held_out_queries"]})
                    print(json.dumps(rows[-1]))
                before = _metrics(trainer.evaluate())
                started = time.perf_counter()
                result = trainer.train()
                seconds = time.perf_counter() - started
                after = _metrics(trainer.evaluate())
            losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
            for stage, metrics in (("base", before), ("fine-tuned", after)):
                rows.append({"seed": seed, "model": description, "system": system, "recipe": recipe, "stage": stage, **metrics,
                             "held_out_queries": run.data["held_out_queries"], "training_queries": run.data["queries"],
                             "triplets_available": run.data["examples"]})
            rows[-1].update(steps=result.global_step, triplets_seen=result.global_step * 32, train_seconds=round(seconds, 1),
                            first_logged_loss=losses[0] if losses else None, last_logged_loss=losses[-1] if losses else None)
            print(json.dumps(rows[-2]), json.dumps(rows[-1]), sep="\n")

    summary = {}
    for system in args.systems:
        for stage in ("base", "fine-tuned"):
            chosen = [r for r in rows if r.get("system") == system and r["stage"] == stage]
            summary[f"{system} {stage}"] = {m: round(statistics.mean(r[m] for r in chosen), 2) for m in ("map", "ndcg")}
    chosen = [r for r in rows if r["stage"] == "reference"]
    summary["MiniLM reference"] = {m: round(statistics.mean(r[m] for r in chosen), 2) for m in ("map", "ndcg")}
    results = {
        "benchmark": "train_cacm",
        "description": __doc__.strip().splitlines()[0],
        "settings": {"systems": args.systems, "seeds": args.seeds, "steps": args.steps, "effective_batch": 32, "max_length": args.max_length,
                     "held_out": args.held_out, "base": "all-MiniLM-L6-v2 (embedded)"},
        "machine": {"platform": platform.platform(), "torch_threads": torch.get_num_threads()},
        "rows": rows,
        "mean_over_seeds": summary,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))


def _metrics(metrics: dict[str, float]) -> dict[str, float]:
    """MAP and nDCG of the cite task, from a report's or the Trainer's metric names."""
    pick = {name.rsplit("_", 1)[-1]: value for name, value in metrics.items() if name.endswith(("_map", "_ndcg")) or name in ("map", "ndcg")}
    return {"map": round(pick["map"], 2), "ndcg": round(pick["ndcg"], 2)}


if __name__ == "__main__":
    main()
