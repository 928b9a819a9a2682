"""Export a trained model folder for the Hugging Face Hub with its model card, then push it; a dry run by default.

sciembed.hub.export.export_model writes OUT: safetensors weights, config (with remote code for sciembed's
families), tokenizer, sentence-transformers files, format adapters / PALs, and a README.md model card with the
evaluation results (model-index) and the training run; it then loads OUT in a fresh Python without sciembed.
Checkpoints, optimizer states and anything else that is not the model stay behind and are listed. Nothing leaves
the machine unless --push is given: sciembed.hub.push.push_folder then uploads exactly the exported files with
huggingface_hub.HfApi (log in first with `hf auth login`, or set HF_TOKEN).

    python examples/export_and_push.py --model runs/specter/model --repo-id ORG/specter-minilm
    python examples/export_and_push.py --model runs/specter/model --repo-id ORG/specter-minilm \\
        --evaluation scidocs.json --out specter-hub --overwrite --push
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sciembed.hub.export import export_model
from sciembed.hub.push import HubOfflineError, push_folder
from sciembed.training.run import EVALUATION_FILE, RESULTS_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--model", required=True, type=Path, help="a saved model folder (sciembed train's OUTPUT/model, ...)")
    add("--repo-id", required=True, help="the Hub repository, ORG/NAME: where --push uploads, and what the card names")
    add("--out", type=Path, help="the folder to export to (default: MODEL-hub beside the model)")
    add(
        "--evaluation",
        action="append",
        type=Path,
        default=[],
        metavar="JSON",
        help="results written by `sciembed evaluate --output` or examples/evaluate_scidocs.py (repeatable); "
        "default: the training run's held_out_evaluation.json, when there is one",
    )
    add("--overwrite", action="store_true", help="replace --out if it exists (refused otherwise)")
    add("--no-validate", action="store_true", help="skip loading the export in a fresh Python without sciembed")
    add("--push", "--no-dry-run", action="store_true", help="upload the export (default: a dry run, nothing uploaded)")
    add("--private", action="store_true", help="with --push: create the repository private")
    args = parser.parse_args(argv)

    run = args.model.parent  # a training run keeps its results beside model/
    evaluations = args.evaluation or [p for p in [run / EVALUATION_FILE] if p.is_file()]
    training = json.loads((run / RESULTS_FILE).read_text()) if (run / RESULTS_FILE).is_file() else None
    report = export_model(
        args.model,
        args.out or args.model.with_name(f"{args.model.name}-hub"),
        evaluations=[json.loads(path.read_text()) for path in evaluations],
        training=training,
        repo_id=args.repo_id,
        validate=not args.no_validate,
        overwrite=args.overwrite,
    )
    print(f"exported {len(report.files)} files to {report.folder} ({report.model_type}); card: README.md")
    for check in report.checks:
        print(f"  checked: {check}")
    for name, why in report.left_out.items():
        print(f"  left out: {name} ({why})")
    if not args.push:
        print(f"dry run: nothing was uploaded; pass --push to upload {report.folder} to {args.repo_id}")
        return 0
    try:
        print(f"pushed: {push_folder(report.folder, args.repo_id, private=args.private)}")
    except HubOfflineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
