"""``sciembed from-bert``: build one of sciembed's model families from a BERT checkpoint and save it."""

from __future__ import annotations

import argparse
import logging

from ..families import FAMILIES
from .options import add_options

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "from-bert",
        help=f"build a model family ({', '.join(FAMILIES)}) from a BERT checkpoint and save it",
        description=(
            "Build one of sciembed's model families from any BERT checkpoint (SciBERT, SPECTER, SciNCL, the "
            "embedded MiniLM), copying every pretrained weight and initialising only what the family adds, "
            "and save it with its tokenizer, remote code and sentence-transformers files."
        ),
    )
    parser.add_argument(
        "--family",
        required=True,
        choices=tuple(FAMILIES),
        help="the family to build: "
        + "; ".join(f"{name}, the {family.title}" for name, family in FAMILIES.items())
        + " (its config fields are set with --set)",
    )
    parser.add_argument(
        "--base", help="Hub id or local folder of a BERT model (default: the embedded all-MiniLM-L6-v2)"
    )
    parser.add_argument("--output", required=True, help="folder to save the model in")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a config field of the family, VALUE as JSON (e.g. --set num_cls_tokens=5 "
        '--set \'domains=["cs","bio"]\'); '
        "repeatable; the saved config.json lists every field with its value",
    )
    add_options(parser, "trust_remote_code")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..checkpoint_files import transformer_path
    from ..default_model import default_model_path
    from ..encode import PaperEncoder
    from ..families import from_bert, save_pretrained
    from ..io import check_output_place, check_writable
    from ..training.recipes import parse_assignments

    options = parse_assignments(args.set)
    check_output_place(args.output)
    check_writable(args.output)
    base = args.base or default_model_path()
    PaperEncoder.check_checkpoint(base, trust_remote_code=args.trust_remote_code)  # code, window and weights
    # A sentence-transformers folder's transformer may sit in a module subfolder (0_Transformer/).
    model, tokenizer = from_bert(
        args.family, transformer_path(base), trust_remote_code=args.trust_remote_code, **options
    )
    save_pretrained(model, tokenizer, args.output)
    logger.info(
        "saved a %s model built from %s to %s", args.family, args.base or "the embedded all-MiniLM-L6-v2", args.output
    )
    return 0
