"""The recipes table's commands: ``run``, ``rescore``, ``summarise``, ``table`` and ``plot``."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

if not __package__:  # run as ``python benchmarks/recipes``: import the package, not its modules one by one
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import recipes
from recipes.report import plot, table
from recipes.results import Rows, locked, read, write
from recipes.stats import summarise
from recipes.systems import BATCH, PEER, REFERENCE, SYSTEMS, budget
from recipes.tasks import FixedTasks
from recipes.training import kept, peer_row, reference_row, rescore, system_row
from sciembed.training.recipes import parse_assignments
from sciembed.training.run import prepare

RESULTS = Path(__file__).resolve().parents[1] / "results" / "recipes.json"
DATA_FOLDERS = ("cacm", "hepth", "arxiv-metadata", "scirepeval-samples")

RUN = """Train every system of --systems for each seed and score it; rows are added to --output as they finish.

Per seed, CACM's linked papers are split by query paper (--held-out of them held out); training examples come from the
training queries only. Every row starts from the embedded all-MiniLM-L6-v2 with the recipe's defaults and the
system's settings, and trains --steps steps of 32 examples on texts cut to --max-length tokens; every model is scored
in its own window. Next to them: MiniLM as published, and sentence-transformers' own trainer with
MultipleNegativesRankingLoss on the specter recipe's triplets with the same budget. The multi-task systems train on
the seed's task mixture, the two-domain systems on CACM and hep-th, the SPECTROID systems on CACM's categories without
the seed's category test papers.

Tasks: held-out CACM cite and a sample of --hepth-queries hep-th queries (SciDocs' cite protocol, MAP and nDCG), CACM
categories and arXiv archives (LinearSVC, macro-F1), SciRepEval's fields of study (macro-F1) and search (nDCG).

Rows already in --output for a seed and system are kept, not rerun, so --seeds and --systems split a long run over
sessions or processes side by side (each writes only its own rows, under a lock)."""


def _shared(parser: argparse.ArgumentParser) -> None:
    """The options that choose the results file."""
    parser.add_argument("--output", type=Path, default=RESULTS, help="the results file (default: %(default)s)")


def _training(parser: argparse.ArgumentParser) -> None:
    """The options that fix a run's data, split and budget (``run`` and ``rescore`` share them)."""
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/data"),
        help="folder holding cacm/, hepth/, arxiv-metadata/ and scirepeval-samples/",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="one split, sample and training run per seed"
    )
    parser.add_argument("--steps", type=int, default=60, help=f"optimiser steps per model ({BATCH} examples each)")
    parser.add_argument(
        "--max-length", type=int, default=128, help="tokens per training text; evaluation uses each model's own window"
    )
    parser.add_argument(
        "--held-out", type=float, default=0.2, help="share of CACM query papers held out for evaluation"
    )
    parser.add_argument("--hepth-queries", type=int, default=300, help="hep-th query papers sampled per seed")
    parser.add_argument(
        "--systems",
        nargs="+",
        choices=(*SYSTEMS, PEER),
        default=[*SYSTEMS, PEER],
        metavar="SYSTEM",
        help="the systems by name, quoted (default: all; see the list below)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a recipe override for every sciembed system (e.g. loss.name=triplet); recorded in the JSON",
    )
    parser.add_argument(
        "--keep-models",
        type=Path,
        metavar="FOLDER",
        help="the trained models' folder: FOLDER/seed-N/SYSTEM",
    )
    _shared(parser)


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per mode."""
    main = argparse.ArgumentParser(
        prog="recipes",
        description=recipes.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="train and score the systems",
        description=RUN,
        epilog="systems:\n" + "\n".join(f"  {name}: {system.description}" for name, system in SYSTEMS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _training(run)
    run.add_argument(
        "--reuse-training",
        action="store_true",
        help="a row whose training differs from a kept row's of the seed only in WiSE-FT's share "
        "(model.weight_average) is rebuilt from the kept model instead of trained; it records the kept row's training",
    )
    run.set_defaults(handler=run_command)
    again = commands.add_parser(
        "rescore",
        help="score kept models again",
        description="Score again, with this package's tasks, the rows of --seeds and --systems whose models "
        "run --keep-models kept, and MiniLM as published, replacing their scores; their training records stay. "
        "Trains nothing.",
    )
    _training(again)
    again.add_argument("--tasks", nargs="+", metavar="TASK", help="score only these tasks (e.g. fos)")
    again.set_defaults(handler=rescore_command)
    for name, what, handler in (
        (
            "summarise",
            "Compute the summary of --output's rows again with this package's statistics and write it.",
            summarise_command,
        ),
        ("table", "Print the summary of --output as a Markdown table.", table_command),
        (
            "plot",
            "Draw --output's changes against MiniLM as published, with their intervals, to a PNG "
            "(needs matplotlib: pip install sciembed[plots]).",
            plot_command,
        ),
    ):
        command = commands.add_parser(name, help=what[0].lower() + what[1:-1], description=f"{what} Trains nothing.")
        _shared(command)
        if name == "plot":
            command.add_argument("png", type=Path, help="the PNG file to write")
        command.set_defaults(handler=handler)
    return main


def _folders(data: Path) -> dict[str, Path]:
    """The data folders the tasks are read from, each checked to exist."""
    folders = {name: data / name for name in DATA_FOLDERS}
    for folder in folders.values():
        if not folder.is_dir():
            raise SystemExit(f"{folder} is absent: this benchmark needs the real data (../shared/data/README.md)")
    return folders


def _rows(args: argparse.Namespace) -> tuple[Rows, dict[str, Any]]:
    """The results file's rows for a run of ``args``' settings, and the ``--set`` overrides."""
    extra = parse_assignments(args.set)
    settings = {
        "steps": args.steps,
        "batch": BATCH,
        "training_max_length": args.max_length,
        "held_out": args.held_out,
        "hepth_queries": args.hepth_queries,
        "base": "all-MiniLM-L6-v2 (embedded)",
        "overrides": extra,
    }
    return Rows.open(args.output, settings), extra


@contextmanager
def _seed(args: argparse.Namespace, seed: int, folders: dict[str, Path], fixed: FixedTasks, overrides) -> Iterator:
    """The specter run of ``seed`` (its split is every row's) and the seed's tasks."""
    with tempfile.TemporaryDirectory() as output:
        specter = prepare("specter", None, folders["cacm"], output, overrides)
        yield specter, fixed.suite(specter.trainer.eval_dataset, seed, args.hepth_queries)


def run_command(args: argparse.Namespace) -> None:
    """Train and score ``--systems`` for each of ``--seeds``; then print the summary."""
    logging.basicConfig(level=logging.WARNING)
    folders = _folders(args.data)
    rows, extra = _rows(args)
    fixed = FixedTasks.read(folders)
    rows.data = fixed.counts
    for seed in args.seeds:
        overrides = {**budget(seed, args.steps, args.max_length, args.held_out), **extra}
        with _seed(args, seed, folders, fixed, overrides) as (specter, suite):
            held_out_ids = specter.data["held_out_ids"]
            if (seed, REFERENCE) not in rows.done:
                rows.add(reference_row(seed, suite, specter.data["held_out_queries"]))
            if PEER in args.systems and (seed, PEER) not in rows.done:
                rows.add(peer_row(seed, specter.trainer.train_dataset, suite, args, kept(args, seed, PEER)))
            del specter  # its model is not needed by the rows that follow
        for name in args.systems:
            if name == PEER or (seed, name) in rows.done:
                continue
            row = system_row(name, seed, args, folders, fixed, suite, overrides, held_out_ids, rows.rows)
            if row is not None:
                rows.add(row)
            gc.collect()
    if rows.rows:
        rows.save()  # a run with nothing left to train still writes the summary with this package's statistics
    print(json.dumps(summarise(rows.rows), indent=1))


def rescore_command(args: argparse.Namespace) -> None:
    """Score the kept models of ``--seeds`` and ``--systems`` again on the seed's tasks."""
    logging.basicConfig(level=logging.WARNING)
    folders = _folders(args.data)
    rows, extra = _rows(args)
    fixed = FixedTasks.read(folders)
    rows.data = fixed.counts
    for seed in args.seeds:
        overrides = {**budget(seed, args.steps, args.max_length, args.held_out), **extra}
        with _seed(args, seed, folders, fixed, overrides) as (_, suite):
            if args.tasks:
                known = [task.task_id for task in suite.tasks]
                unknown = sorted(set(args.tasks) - set(known))
                if unknown:
                    raise SystemExit(f"--tasks: no task {', '.join(unknown)}; the tasks are {', '.join(known)}")
                suite = replace(suite, tasks=[task for task in suite.tasks if task.task_id in args.tasks])
            rows.changed.update(rescore(rows.rows, seed, [REFERENCE, *args.systems], suite, args))
            rows.save()
    print(json.dumps(summarise(rows.rows), indent=1))


def summarise_command(args: argparse.Namespace) -> None:
    """Write the summary of ``--output``'s rows again."""
    read(args.output)
    with locked(args.output):
        report = json.loads(args.output.read_text(encoding="utf-8"))
        report["summary"] = summarise(report["rows"])
        write(args.output, report)


def table_command(args: argparse.Namespace) -> None:
    """Print ``--output``'s summary as a Markdown table."""
    print(table(read(args.output)["summary"]))


def plot_command(args: argparse.Namespace) -> None:
    """Draw ``--output``'s summary to a PNG."""
    plot(read(args.output)["summary"], args.png)


def main(argv: list[str] | None = None) -> None:
    """Run the subcommand ``argv`` names."""
    args = parser().parse_args(argv)
    args.handler(args)


if __name__ == "__main__":
    main()
