"""``sciembed compare``: two evaluations of the same tasks, each task's difference with a paired 95% interval."""

from __future__ import annotations

import argparse
import json
import logging

from ..evaluation.compare import RESAMPLES
from .options import HelpFormatter

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "compare",
        help="compare two evaluation results task by task, with paired 95%% bootstrap intervals",
        description=(
            "Read two results JSONs written by `sciembed evaluate --output` (e.g. two models on the same data) and "
            "print, for every task both hold, each metric of the first and of the second, their difference (second "
            "minus first) and its paired 95% bootstrap interval. The pairs are the units both evaluations scored: "
            "the queries of a ranking task (the mean of the per-query differences), the test papers of a "
            "classification or regression task (the metric scored again on each resample, for both), the iterations "
            "of a few-shot setting. A task found in one file only, or without per-unit scores, or with no unit in "
            "common, is named with the reason and counted, never dropped in silence. The resampling is seeded "
            "(--seed), so a comparison gives the same interval every time."
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("first", metavar="A.json", help="the first results (the baseline)")
    parser.add_argument("second", metavar="B.json", help="the second results, compared with the first")
    parser.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help="the metrics to compare where a task has them, e.g. ndcg_cut_10 map (default: each task's own, the "
        "metrics its benchmark averages)",
    )
    parser.add_argument(
        "--allow-different-settings",
        action="store_true",
        help="compare results scored on other data or settings (benchmark, data files or their contents, split, "
        "candidates, cutoffs, ...), naming each difference; without it they are refused. The model's own settings "
        "(model, pooling, max_length, revision, batch size, backend) may always differ",
    )
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples per interval")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling")
    parser.add_argument(
        "--output",
        help="also write the comparison as JSON here (atomically; an existing file is refused unless --overwrite)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..evaluation.compare import compare_results
    from ..io import atomic_path, check_input, load_json_file, refuse_replacing_file

    if args.output:
        refuse_replacing_file(args.output, overwrite=args.overwrite)
    if args.resamples < 1:
        raise ValueError(f"--resamples must be a positive number of resamples, got {args.resamples}")
    results = []
    for path, option in ((args.first, "A.json"), (args.second, "B.json")):
        check_input(path, option)
        results.append(load_json_file(path))
    comparison = compare_results(
        *results,
        metrics=args.metrics,
        resamples=args.resamples,
        seed=args.seed,
        names=(args.first, args.second),
        allow_different_settings=args.allow_different_settings,
    )
    print(comparison.table())
    if args.output:
        output = Path(args.output)
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(output) as temporary:
            temporary.write_text(json.dumps(comparison.to_dict(), indent=1) + "\n", encoding="utf-8")
        logger.info("wrote %s", output)
    return 0
