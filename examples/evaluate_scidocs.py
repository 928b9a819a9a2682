"""Evaluate a model on SciDocs (Cohan et al. 2020) with sciembed.evaluation.evaluate: every task the folder holds
(cite, co-cite, co-view, co-read with pytrec_eval MAP / nDCG; MAG and MeSH with LinearSVC macro-F1;
recommendations), scored by SciDocs' reference protocol. Prints the table, with SciDocs' average and the tasks the
folder lacks, and writes the results as JSON (what `sciembed export --evaluation` puts into a model card).

DATA is a folder in SciDocs' release layout: paper_metadata_view_cite_read.json, paper_metadata_mag_mesh.json,
cite/test.qrel, mag/train.csv, ... (`sciembed evaluate --help` shows it). Vectors are cached per model and text
under $SCIEMBED_CACHE (else $HF_HOME/sciembed/embeddings), so a second run embeds nothing.

    python examples/evaluate_scidocs.py --data path/to/scidocs --output scidocs.json
    python examples/evaluate_scidocs.py --model allenai/specter --data path/to/scidocs --tasks cite mag --output s.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import sciembed
from sciembed.evaluation import Reading, evaluate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--model", help="a Hub id or local model folder (default: the embedded all-MiniLM-L6-v2)")
    add("--data", required=True, type=Path, help="a folder in SciDocs' release layout (any subset of its tasks)")
    add("--output", required=True, type=Path, help="the JSON file to write the results to")
    add(
        "--tasks", nargs="+", metavar="TASK", help="only these tasks (cite, cocite, coview, coread, mag, mesh, recomm)"
    )
    add("--split", default="test", choices=("test", "val"), help="the judged split to score (default: test)")
    add("--skip-invalid", action="store_true", help="leave out (and count) rows naming papers without metadata")
    add("--batch-size", type=int, help="papers per forward pass (default: 8 on CPU, 32 on GPU)")
    add("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    add("--jobs", type=int, default=-1, help="processes for the classifiers' grid searches (default: all cores)")
    add("--no-cache", action="store_true", help="keep the vectors in memory for this run only")
    add("--overwrite", action="store_true", help="replace --output if it exists (refused otherwise)")
    args = parser.parse_args(argv)
    if args.output.exists() and not args.overwrite:
        parser.error(f"{args.output} exists; pass --overwrite to replace it")

    # The model loads once the tasks are read; its options (device, max_length, ...) go to Encoder.from_pretrained.
    report = evaluate(
        lambda: sciembed.Encoder.from_pretrained(args.model, device=args.device),
        "scidocs",
        args.data,
        reading=Reading(tasks=args.tasks, split=args.split, skip_invalid=args.skip_invalid),
        batch_size=args.batch_size,
        n_jobs=args.jobs,
        use_cache=not args.no_cache,
    )
    print(report.table())
    print(f"results written to {report.write_json(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
