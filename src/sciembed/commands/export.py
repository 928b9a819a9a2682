"""``sciembed export``: a Hub-ready folder of a saved model (safetensors, remote code, tokenizer, model card).

The options and the export itself are shared with ``sciembed push`` (:mod:`.push`), which uploads the folder.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import HelpFormatter

if TYPE_CHECKING:
    from ..hub.export import ExportReport

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "export",
        help="write a Hub-ready folder of a saved model: safetensors, remote code, tokenizer, model card",
        description=(
            "Copy a saved model into a folder the Hugging Face Hub serves as it is: safetensors weights, config with "
            "auto_map and the remote-code files, tokenizer, sentence-transformers files, format adapters / PALs in "
            "their own layout, and a README.md model card rendered from hub_cards/ with the evaluation results "
            "(model-index) and the training run. The card's usage code gives the vectors sciembed.encode gives "
            "(pooling, normalisation, length, format, domain); it names the model after --model-name, the Hub "
            "repository or the training run (never OUT), and each evaluation's data after what it is (--dataset-name, "
            "else its Hub id or folder; SciDocs' names only for SciDocs' own release). The folder is then loaded in a "
            "fresh process without sciembed and the card's YAML parsed; it is written beside OUT and renamed when "
            "complete."
        ),
        formatter_class=HelpFormatter,
    )
    add_export_options(parser)
    parser.add_argument(
        "--out", required=True, help="the folder to write (an existing one is refused unless --overwrite)"
    )
    parser.set_defaults(run=run)
    return parser


def add_export_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``export`` that ``push`` takes too."""
    parser.add_argument("--model", required=True, help="a saved model folder (sciembed from-bert / train output)")
    parser.add_argument(
        "--evaluation",
        action="append",
        default=[],
        metavar="JSON",
        help="results written by `sciembed evaluate --output` (repeatable): the card's model-index "
        "(default: MODEL/../held_out_evaluation.json of a training run, when it exists)",
    )
    parser.add_argument(
        "--training", help="the run's train_results.json (default: MODEL/../train_results.json when it exists)"
    )
    parser.add_argument("--license", default="apache-2.0", help="the card's licence")
    parser.add_argument(
        "--model-name",
        metavar="NAME",
        help="the model's name in the card's title and model-index (default: the Hub repository's name for "
        "push, else the training run's folder when MODEL is a run's model/ folder, else MODEL's folder "
        "name; never the output folder's)",
    )
    parser.add_argument(
        "--dataset-name",
        action="append",
        default=[],
        metavar="NAME",
        help="the name of the data an evaluation was measured on, one per --evaluation in the same order, or one "
        "for the run's held-out evaluation (repeatable). Default: SciDocs' own names (SciDocs MeSH, ...) only for "
        "SciDocs' release (its Hub id, or a folder with its whole file set), else the data's Hub id or folder name, "
        "with tasks by their ids",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the export folder if it exists (refused otherwise)"
    )
    parser.add_argument("--no-validate", action="store_true", help="skip the fresh-process load check")
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="also write onnx/model.onnx (token states, checked against PyTorch) for "
        "SentenceTransformer(folder, backend='onnx'); plain transformers only; needs sciembed[onnx]",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="export (and run, to validate) Python files in MODEL that are not sciembed's own remote code; "
        "without it such a folder is refused before any of its code runs",
    )


def run(args: argparse.Namespace) -> int:
    export_from_arguments(args, args.out, None)
    return 0


def export_from_arguments(args: argparse.Namespace, out: str, repo_id: str | None) -> ExportReport:
    """Exports ``args.model`` to ``out`` with the evaluations and training run the arguments name.

    Without them, the run's own files beside the model folder are used, where they exist.
    """
    from ..hub.export import export_model
    from ..io import check_input
    from ..training.run import EVALUATION_FILE, RESULTS_FILE

    check_input(args.model, "--model", "folder")
    for option, path in [("--evaluation", path) for path in args.evaluation] + [("--training", args.training)]:
        if path is not None:
            check_input(path, option)
    held_out = Path(args.model).parent / EVALUATION_FILE
    paths = args.evaluation or ([held_out] if held_out.is_file() else [])
    evaluations = [_read_json(path, "--evaluation") for path in paths]
    if args.dataset_name and len(args.dataset_name) != len(evaluations):
        raise ValueError(
            f"--dataset-name given {len(args.dataset_name)} time(s) for {len(evaluations)} evaluation(s) "
            f"({', '.join(map(str, paths)) or 'none found'}): give one name per --evaluation, in the same order"
        )
    training_path = Path(args.training) if args.training else Path(args.model).parent / RESULTS_FILE
    if args.training and not training_path.is_file():
        raise FileNotFoundError(f"{training_path}: no such training results file")
    training = _read_json(training_path, "--training") if training_path.is_file() else None
    report = export_model(
        args.model,
        out,
        evaluations=evaluations,
        training=training,
        repo_id=repo_id,
        license=args.license,
        name=args.model_name or (None if repo_id else _run_name(Path(args.model))),
        dataset_names=args.dataset_name,
        validate=not args.no_validate,
        trust_remote_code=args.trust_remote_code,
        onnx=args.onnx,
        overwrite=args.overwrite,
    )
    for check in report.checks:
        logger.info("checked: %s", check)
    logger.info("wrote %d files to %s; model card: %s", len(report.files), report.folder, report.folder / "README.md")
    return report


def _run_name(model: Path) -> str | None:
    """The training run's name when ``model`` is a run's ``model/`` folder, else ``None``.

    The training run's name when ``model`` is the ``model/`` folder of a run (its output folder's name), else ``None``
    (the export then names the model after its own folder).
    """
    from ..training.run import MODEL_FOLDER

    resolved = model.resolve()
    return resolved.parent.name if resolved.name == MODEL_FOLDER else None


def _read_json(path: str | Path, option: str) -> Any:
    from ..io import RepeatedKeyError, json_place, loads_json

    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} ({option}): not valid JSON (line {error.lineno}: {error.msg})") from None
    except RepeatedKeyError as error:
        raise ValueError(f"{json_place(path, error)} ({option}): {error}") from None
