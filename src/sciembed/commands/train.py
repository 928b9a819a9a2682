"""``sciembed train``: fine-tune a model with one paper's recipe through a transformers Trainer."""

from __future__ import annotations

import argparse
import json
import logging
import textwrap
from pathlib import Path

from ..data.layouts import TRAINING_LAYOUTS
from ..training.recipes import RECIPES
from .options import add_options

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "train",
        help="fine-tune a model with a paper's recipe (" + ", ".join(RECIPES) + ")",
        description=(
            "Train with one paper's recipe through a transformers Trainer: the recipe builds its model family from "
            "--base, makes its examples from --data (or --papers with --citations), and uses the paper's loss and "
            "optimiser settings. The data layouts, with an example of each, are listed below. Any setting can "
            "be overridden with --config FILE (YAML or JSON) and --set KEY=VALUE (KEY is section.name with section in "
            "model, embedding, data, loss, training, or a bare TrainingArguments field). Checkpoints go to "
            "OUTPUT/checkpoint-N (--resume continues from the latest complete one), the model to OUTPUT/model and the "
            "settings and metrics to OUTPUT/train_results.json. Runs unchanged under `accelerate launch` or "
            "`torchrun`. `sciembed train --recipe NAME [--base B] --show-settings` prints every KEY of NAME with the "
            "value a run uses."
        ),
        epilog=_recipes_help() + "\n\n" + _layouts_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--recipe", required=True, choices=tuple(RECIPES), help="the paper whose setting to reproduce")
    parser.add_argument(
        "--base", help="Hub id or local folder of a BERT model (default: the embedded all-MiniLM-L6-v2)"
    )
    parser.add_argument(
        "--data",
        help="citation data (SMART collection such as CACM, SPECTER release, S2ORC JSONL, SciRepEval "
        "specter_small.json), SciRepEval's training samples folder, or labelled papers, as the recipe needs "
        "(layouts below)",
    )
    parser.add_argument(
        "--papers",
        metavar="PAPERS",
        help="with --citations, instead of --data: papers with paper_id, title, abstract "
        "(JSONL, JSON, CSV or Parquet; a folder of Parquet parts; a SMART collection), for the citation recipes",
    )
    parser.add_argument(
        "--citations",
        metavar="FILE",
        help="with --papers: the citations between them, a CSV / TSV edge list with a "
        "citing,cited header (or from,to / source,target) or SNAP's lines (# comments, then citing<TAB>cited)",
    )
    parser.add_argument(
        "--id-field",
        help="with --papers: the column holding the paper ids (default: the first of paper_id, "
        "corpus_id, id, doc_id that a record has)",
    )
    add_options(parser, "smart_links")
    parser.add_argument(
        "--output", help="folder for checkpoints, the trained model and train_results.json (required to train)"
    )
    parser.add_argument("--config", help="YAML or JSON file of settings, nested by section or with dotted keys")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one setting, VALUE as JSON (e.g. --set max_steps=100 --set loss.margin=0.5 --set data.held_out=0.2); "
        "repeatable, applied after --config; --show-settings lists every key with its value",
    )
    parser.add_argument("--resume", action="store_true", help="continue from the latest complete checkpoint in OUTPUT")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run in OUTPUT (an OUTPUT holding a model, results or "
        "checkpoints is refused without --resume or --overwrite)",
    )
    parser.add_argument(
        "--evaluate-before", action="store_true", help="with held-out queries, also score the untrained model"
    )
    parser.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings a run of --recipe from --base would use (the recipe's defaults for that base, "
        "--config and --set applied), one --set KEY=VALUE a line, and exit without training",
    )
    add_options(parser, "trust_remote_code", "no_progress")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..data.papers import check_paper_source
    from ..distributed import end_distributed_run
    from ..io import check_input
    from ..training.recipes import parse_assignments, read_overrides
    from ..training.run import train

    for option, path, kind in (
        ("--config", args.config, "file"),
        ("--papers", args.papers, "any"),
        ("--citations", args.citations, "file"),
    ):
        if path is not None:
            check_input(path, option, kind)
    if args.papers is not None:
        check_paper_source(args.papers, "--papers")
    if args.data is not None and (Path(args.data).exists() or Path(args.data).is_symlink()):
        check_input(args.data, "--data", "any")  # a local folder or file; anything else may be a Hub id
    overrides = {**(read_overrides(args.config) if args.config else {}), **parse_assignments(args.set)}
    if args.no_progress:
        overrides.setdefault("disable_tqdm", True)
    if args.show_settings:
        print(_settings_listing(args.recipe, args.base, overrides, args.trust_remote_code))
        return 0
    if not args.output:
        raise ValueError("--output is required: the folder for checkpoints, the trained model and train_results.json")
    summary = train(
        args.recipe,
        args.base,
        _data(args),
        args.output,
        overrides,
        resume=args.resume,
        evaluate_before=args.evaluate_before,
        smart_links=args.smart_links,
        overwrite=args.overwrite,
        trust_remote_code=args.trust_remote_code,
    )
    logger.info(
        "trained %s for %d step(s) in %.0f s; model saved to %s",
        args.recipe,
        summary["global_step"],
        summary["seconds"],
        summary["model"],
    )
    for name, value in summary["eval_metrics"].items():
        if name == "epoch":
            continue
        before = summary["base_eval_metrics"].get(name)
        logger.info(
            "%s = %s%s", name, _shown(value), "" if before is None else f" (before training: {_shown(before)})"
        )
    end_distributed_run()
    return 0


def _shown(value):
    """A metric as the evaluation tables print it (two decimals). Anything else as it is."""
    return f"{value:.2f}" if isinstance(value, float) else value


def _data(args: argparse.Namespace):
    """``--data``, or ``--papers`` with ``--citations`` as :class:`~sciembed.training.examples.CitationFiles`."""
    from ..training.examples import CitationFiles

    if args.id_field and not args.papers:
        raise ValueError("--id-field names the id column of --papers; it has no effect on --data")
    if args.papers or args.citations:
        if args.data:
            raise ValueError("give --data, or --papers with --citations, not both")
        if not (args.papers and args.citations):
            raise ValueError(
                f"--papers and --citations go together (got only {'--papers' if args.papers else '--citations'}): "
                "the papers and the citations between them"
            )
        return CitationFiles(Path(args.papers), Path(args.citations), args.id_field)
    if not args.data:
        raise ValueError(
            "no training data: give --data, or --papers and --citations (sciembed train --help lists the layouts)"
        )
    return args.data


def _settings_listing(recipe: str, base: str | None, overrides: dict, trust_remote_code: bool = False) -> str:
    """The settings a run uses, as the ``KEY=VALUE`` lines ``--set`` takes.

    Each embedding value comes with what chose it.
    """
    from ..training.recipes import get_recipe
    from ..training.run import resolved_settings

    settings = resolved_settings(recipe, base, overrides, trust_remote_code=trust_remote_code)
    chosen_by = settings["embedding"].pop("chosen_by")
    unit_vector_settings = get_recipe(recipe).unit_vector_settings if settings["embedding"]["normalize"] else {}
    lines = [
        f"# recipe {recipe} ({get_recipe(recipe).paper}) from {base or 'the embedded all-MiniLM-L6-v2'}"
        f"{', with --config / --set' if overrides else ''}: the settings a run uses",
        "# each line is a --set KEY=VALUE (VALUE as JSON); any other TrainingArguments field is a key too",
    ]
    if unit_vector_settings:
        lines.append(
            f"# trained in unit vectors, so the recipe's unit-vector settings apply: {', '.join(unit_vector_settings)}"
        )
    for section, values in settings.items():
        for name, value in values.items():
            source = f"  # chosen by: {chosen_by[name]}" if section == "embedding" and name in chosen_by else ""
            lines.append(f"{section}.{name}={json.dumps(value)}{source}")
    return "\n".join(lines)


def _recipes_help() -> str:
    """Each recipe with its paper and description, for the epilog.

    The description gives the settings the recipe uses, from the recipe itself.
    """
    blocks = ["recipes (values: --show-settings):"]
    for recipe in RECIPES.values():
        blocks.append(
            f"  {recipe.name}: {recipe.paper}\n"
            + textwrap.fill(recipe.description, width=110, initial_indent="      ", subsequent_indent="      ")
        )
    return "\n".join(blocks)


def _layouts_help() -> str:
    """Each data layout with the recipes that take it and its example, for the epilog."""
    from ..training.objectives import Triplet

    blocks = ["data (--data, or --papers with --citations):"]
    for layout in TRAINING_LAYOUTS:
        recipes = ", ".join(
            r.name
            for r in RECIPES.values()
            if r.data in layout.kinds or ("triplets" in layout.kinds and isinstance(r.objective, Triplet))
        )
        blocks.append(
            f"  {layout.name}: {layout.given_as}\n    recipes: {recipes}\n" + textwrap.indent(layout.example, "      ")
        )
    return "\n".join(blocks)
