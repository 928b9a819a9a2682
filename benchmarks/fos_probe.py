"""Fields of study under two linear probes: SciRepEval's (one-vs-rest LinearSVC, hinge loss, no intercept, as its
evaluator's lightning estimators) and the same with an intercept, on the same embeddings.

``recipes`` scores out-of-domain classification with SciRepEval's probe on the fields-of-study sample (the seed's
half of its papers to train on, 14 fields). Fine-tuned models lose many points there while predicting far fewer
fields per paper than MiniLM as published; this measures how much of that is the probe's decision threshold, which
without an intercept must pass through the origin, rather than the embedding. It scores MiniLM as published and every
model ``recipes run --keep-models FOLDER`` kept, per seed, with both probes; rows are added to ``--output``.

    python benchmarks/fos_probe.py --data ../shared/data --models /path/to/kept-models --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from recipes import out_of_domain_suite

import sciembed
from sciembed.evaluation import evaluate_suite
from sciembed.io import atomic_path

REFERENCE = "MiniLM as published"


def fos_scores(encoder, suite) -> dict[str, Any]:
    """Macro-F1 with and without an intercept, and the mean number of fields predicted per test paper, of one model."""
    fos = suite.tasks[0]
    row: dict[str, Any] = {}
    for name, intercept in (("scirepeval_probe", False), ("with_intercept", True)):
        task = replace(fos, protocol=replace(fos.protocol, fit_intercept=intercept))
        result = evaluate_suite(encoder, replace(suite, tasks=[task]), n_jobs=1, show_progress_bar=False).results[0]
        predicted = [len(labels) for _, labels in result.details["per_paper"].values()]
        row[name] = {
            "f1_macro": round(result.metrics["f1_macro"], 2),
            "fields_per_paper": round(sum(predicted) / len(predicted), 2),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding scirepeval-samples/")
    parser.add_argument(
        "--models", type=Path, required=True, help="recipes run's --keep-models folder (seed-N/SYSTEM)"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="the seeds whose split and models to score"
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "fos_probe.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    samples = args.data / "scirepeval-samples"
    if not samples.is_dir():
        raise SystemExit(f"{samples} is absent: this benchmark needs the real data (../shared/data/README.md)")
    report = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {"rows": []}
    done = {(row["seed"], row["system"]) for row in report["rows"]}
    for seed in args.seeds:
        suite = out_of_domain_suite(samples, seed)
        kept = sorted(p for p in (args.models / f"seed-{seed}").glob("*") if (p / "config.json").is_file())
        for folder in [None, *kept]:
            system = REFERENCE if folder is None else folder.name
            if (seed, system) in done:
                continue
            options = {"domain": "cs"} if folder is not None and "moe" in system else {}
            encoder = sciembed.PaperEncoder.from_pretrained(
                None if folder is None else str(folder), device="cpu", **options
            )
            row = {"seed": seed, "system": system, **fos_scores(encoder, suite)}
            print(json.dumps(row), flush=True)
            report["rows"].append(row)
            report.update(benchmark="fos_probe", description=__doc__.strip().splitlines()[0])
            with atomic_path(args.output) as temporary:
                temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
