"""Embed every papers file of a folder: one embedding file, with its paper ids, per input file.

Each .jsonl / .json / .csv / .parquet file of FOLDER (paper_id, title, abstract) is read with sciembed.read_papers
and embedded with one model, loaded once; OUTPUT/<name>.npy gets the vectors and OUTPUT/<name>.ids.json their ids
(sciembed.io.read_embeddings reads the pair back; --format jsonl or parquet writes one file holding both). Every
file is read and every output checked before the model loads, so bad input or an existing output stops the run
before any work; existing outputs are only replaced with --overwrite.

    python examples/embed_folder.py papers/ vectors/
    python examples/embed_folder.py papers/ vectors/ --model allenai/specter2_base --format parquet --overwrite
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import sciembed
from sciembed.io import ids_path, refuse_replacing, write_embeddings

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help=f"the folder whose papers files ({', '.join(SUFFIXES)}) to embed")
    parser.add_argument("output", type=Path, help="the folder to write the embedding files to (created if needed)")
    parser.add_argument(
        "--model", help="a Hub id or local model folder (default: the embedded all-MiniLM-L6-v2, offline)"
    )
    parser.add_argument(
        "--format", choices=("npy", "jsonl", "parquet"), default="npy", help="the embedding file type (default: npy)"
    )
    parser.add_argument("--batch-size", type=int, help="papers per forward pass (default: 8 on CPU, 32 on GPU)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument(
        "--skip-invalid", action="store_true", help="skip (and count) bad records instead of stopping at the first"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace embedding files that already exist")
    args = parser.parse_args(argv)

    inputs = sorted(path for path in args.folder.iterdir() if path.suffix.lower() in SUFFIXES and path.is_file())
    if not inputs:
        parser.error(f"{args.folder} holds no papers file ({', '.join(SUFFIXES)})")
    outputs = {path: args.output / f"{path.stem}.{args.format}" for path in inputs}
    if len(set(outputs.values())) < len(outputs):
        parser.error(f"{args.folder} holds two papers files with one name (a.jsonl and a.csv, say)")
    try:
        for output in outputs.values():
            refuse_replacing(output, overwrite=args.overwrite)
            if args.format == "npy":
                refuse_replacing(ids_path(output), overwrite=args.overwrite)
    except FileExistsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    papers = {path: sciembed.read_papers(path, skip_invalid=args.skip_invalid) for path in inputs}

    model = args.model or sciembed.default_model_path()
    encoder = sciembed.Encoder.from_pretrained(model, device=args.device)
    for path, read in papers.items():
        vectors = encoder.encode(read.papers, batch_size=args.batch_size, progress_desc=path.name)
        ids = [paper["paper_id"] for paper in read.papers]
        write_embeddings(outputs[path], [(ids, vectors)], total=len(ids), dim=vectors.shape[1])
        skipped = f", {len(read.skipped)} record(s) skipped" if read.skipped else ""
        print(f"{path.name}: {vectors.shape[0]} x {vectors.shape[1]} -> {outputs[path]}{skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
