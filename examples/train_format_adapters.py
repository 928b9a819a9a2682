"""Train SciRepEval's format adapters (one seq_bn adapter per task format on a frozen base: the
`scirepeval-adapters` recipe) on SciRepEval training samples, then load the model as SPECTER2 is used: one
encoder, a format per use (classification, regression, proximity, adhoc_query), queries and candidate papers in
their own formats. Prints the shape of each kind of vector.

DATA is a folder holding any of fos_small.json, mesh_small.json, specter_small.json and search_small.jsonl (the
files of allenai/scirepeval's training/sample_data), or a task mixture (`sciembed train --help` shows the layouts).

    python examples/train_format_adapters.py --data ../shared/data/scirepeval-samples --output runs/adapters
    python examples/train_format_adapters.py --data samples/ --base allenai/scibert_scivocab_uncased \\
        --output runs/scibert-adapters --max-steps 200 --query "graph neural networks"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import sciembed
from sciembed.training.run import MODEL_FOLDER, train

PAPERS = [
    {"paper_id": "1", "title": "Attention is all you need", "abstract": "A network built on attention alone."},
    {"paper_id": "2", "title": "Graph embeddings", "abstract": "Nodes of a citation graph as vectors."},
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--data", required=True, help="a folder of SciRepEval training samples, or a task mixture (JSON / YAML)")
    add("--base", help="the encoder the adapters sit on, kept frozen (default: the embedded all-MiniLM-L6-v2)")
    add("--output", required=True, type=Path, help="the run folder: checkpoints, train_results.json, model/")
    add("--max-steps", type=int, default=-1, help="optimiser steps (default: the recipe's two epochs)")
    add("--batch-size", type=int, help="examples per step, an equal share of every task (default: the recipe's 32)")
    add("--query", default="citation graph embeddings", help="the search query embedded at the end")
    add("--papers", type=Path, help="a papers file to embed at the end (default: two example papers)")
    add("--overwrite", action="store_true", help="replace an earlier run in --output (refused otherwise)")
    args = parser.parse_args(argv)

    overrides = {"max_steps": args.max_steps}
    if args.batch_size:
        overrides.update(per_device_train_batch_size=args.batch_size, gradient_accumulation_steps=1)
    results = train("scirepeval-adapters", args.base, args.data, args.output, overrides, overwrite=args.overwrite)
    print(f"trained {results['global_step']} steps on tasks {', '.join(results['data']['tasks'])}")

    # SPECTER2-style use: the base with its adapters attached, one format per use.
    encoder = sciembed.PaperEncoder.from_pretrained(args.output / MODEL_FOLDER)
    papers = sciembed.read_papers(args.papers).papers if args.papers else PAPERS
    print(f"formats: {', '.join(encoder.task_formats)}")
    quiet = {"show_progress_bar": False}
    query = encoder.with_format("adhoc_query").encode([args.query], **quiet)  # what encode_query gives
    print(f"adhoc_query {query.shape}, encode_query {encoder.encode_query([args.query], **quiet).shape}")
    documents = encoder.encode_document(papers, **quiet)  # search candidates: the proximity format
    print(f"encode_document {documents.shape}")
    features = encoder.with_format("classification").encode(papers, **quiet)  # what a classifier is fitted on
    print(f"classification {features.shape}")
    nearest = np.argmin(np.linalg.norm(documents - query, axis=1))  # SciRepEval ranks candidates by L2 distance
    print(f"nearest paper to {args.query!r}: {papers[nearest]['title']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
