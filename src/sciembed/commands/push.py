"""``sciembed push``: export a model (as ``sciembed export``) and upload the folder to the Hugging Face Hub."""

from __future__ import annotations

import argparse
import logging

from .export import add_export_options, export_from_arguments
from .options import HelpFormatter

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "push",
        help="export a model and upload it to the Hugging Face Hub",
        description=(
            "Export the model (as `sciembed export`) into --out (default: MODEL-hub) and upload that folder to the "
            "Hub with huggingface_hub.HfApi (create_repo, upload_folder). With HF_HUB_OFFLINE set it stops after the "
            "export with a message saying so; --dry-run stops there on purpose."
        ),
        formatter_class=HelpFormatter,
    )
    add_export_options(parser)
    parser.add_argument("--repo-id", required=True, help="the Hub repository, ORG/NAME")
    parser.add_argument("--out", help="the folder to export to (default: MODEL-hub beside the model)")
    parser.add_argument("--private", action="store_true", help="create the repository private")
    parser.add_argument(
        "--commit-message", help="the commit message (default: 'Upload <model_type> model with sciembed')"
    )
    parser.add_argument("--dry-run", action="store_true", help="export and validate, but do not upload")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..hub.push import push_folder

    out = args.out or f"{str(args.model).rstrip('/')}-hub"
    report = export_from_arguments(args, out, args.repo_id)
    if args.dry_run:
        logger.info("--dry-run: %s is ready for %s and was not uploaded", report.folder, args.repo_id)
        return 0
    push_folder(
        report.folder,
        args.repo_id,
        private=args.private,
        commit_message=args.commit_message,
        trust_remote_code=args.trust_remote_code,
    )
    return 0
