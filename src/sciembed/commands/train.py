"""``sciembed train``: fine-tune a model with one paper's recipe through a transformers Trainer."""

from __future__ import annotations

import argparse
import logging

from ..training.recipes import RECIPES

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "train",
        help="fine-tune a model with a paper's recipe (" + ", ".join(RECIPES) + ")",
        description=(
            "Train with one paper's recipe through a transformers Trainer: the recipe builds its model family from "
            "--base, makes its examples from --data, and uses the paper's loss and optimiser settings. Any setting can "
            "be overridden with --config FILE (YAML or JSON) and --set KEY=VALUE (KEY is section.name with section in "
            "model, embedding, data, loss, training, or a bare TrainingArguments field). Checkpoints go to "
            "OUTPUT/checkpoint-N (--resume continues from the latest complete one), the model to OUTPUT/model and the "
            "settings and metrics to OUTPUT/train_results.json. Runs unchanged under `accelerate launch` or `torchrun`."
        ),
        epilog="recipes:\n" + "\n".join(f"  {r.name:16} {r.paper}: {r.notes}" for r in RECIPES.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--recipe", required=True, choices=tuple(RECIPES), help="the paper whose setting to reproduce")
    parser.add_argument("--base", help="Hub id or local folder of a BERT model (default: the embedded all-MiniLM-L6-v2)")
    parser.add_argument("--data", required=True, help="citation data (CACM folder, SPECTER release, S2ORC JSONL, SciRepEval "
                        "specter_small.json), SciRepEval's training samples folder, or labelled papers, as the recipe needs")
    parser.add_argument("--output", required=True, help="folder for checkpoints, the trained model and train_results.json")
    parser.add_argument("--config", help="YAML or JSON file of settings, nested by section or with dotted keys")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="one setting, VALUE as JSON (e.g. --set max_steps=100 --set loss.margin=0.5 --set data.held_out=0.2); "
                             "repeatable, applied after --config")
    parser.add_argument("--resume", action="store_true", help="continue from the latest complete checkpoint in OUTPUT")
    parser.add_argument("--evaluate-before", action="store_true", help="with held-out queries, also score the untrained model")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..training.recipes import parse_assignments, read_overrides
    from ..distributed import end_distributed_run
    from ..training.run import train

    overrides = {**(read_overrides(args.config) if args.config else {}), **parse_assignments(args.set)}
    summary = train(args.recipe, args.base, args.data, args.output, overrides, resume=args.resume, evaluate_before=args.evaluate_before)
    logger.info("trained %s for %d step(s) in %.0f s; model saved to %s", args.recipe, summary["global_step"], summary["seconds"], summary["model"])
    for name, value in summary["eval_metrics"].items():
        if name == "epoch":
            continue
        before = summary["base_eval_metrics"].get(name)
        logger.info("%s = %s%s", name, value, "" if before is None else f" (before training: {before})")
    end_distributed_run()
    return 0
