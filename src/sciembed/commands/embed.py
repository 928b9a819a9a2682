"""``sciembed embed``: papers to an embedding file, in shards that survive an interruption.

Papers are encoded ``shard_size`` at a time; each finished shard is saved (atomically) in
``<output>.partial/`` next to a manifest of the run's settings. When every shard is done the output is
assembled, written atomically, and the ``.partial`` folder removed. A run that was interrupted is
continued with ``resume=True``: finished shards are kept, and only the rest is encoded.
:func:`embed_to_file` is the job as a Python function; :func:`run` is the command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..encode import Encoder
from ..io import Chunk, atomic_path, check_embedding_path, ids_path, write_embeddings
from .options import add_options

logger = logging.getLogger(__name__)

_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class EmbedReport:
    """What an :func:`embed_to_file` run did."""

    output: Path
    papers: int
    dim: int
    shards: int
    resumed_shards: int


def partial_dir(output: str | os.PathLike[str]) -> Path:
    """The folder holding the finished shards of an unfinished run writing ``output``."""
    output = Path(output)
    return output.with_name(output.name + ".partial")


def embed_to_file(
    encoder: Encoder,
    papers: Sequence[Mapping[str, Any]],
    output: str | os.PathLike[str],
    *,
    shard_size: int = 10_000,
    batch_size: int = 32,
    resume: bool = False,
    show_progress_bar: bool = True,
) -> EmbedReport:
    """Embed ``papers`` (records with ``paper_id``) into ``output`` (``.jsonl``, ``.npy`` or ``.parquet``).

    Raises:
        FileExistsError: an unfinished run of ``output`` exists and ``resume`` is false.
        ValueError: ``resume`` is true but the unfinished run used other papers or settings.
    """
    output = check_embedding_path(output)
    if shard_size < 1:
        raise ValueError(f"shard_size must be positive, got {shard_size}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if not papers:
        raise ValueError("no papers to embed")
    ids = [str(paper["paper_id"]) for paper in papers]
    manifest = _manifest(encoder, ids, encoder.texts(papers), shard_size)
    shards = _shard_folder(partial_dir(output), manifest, resume)

    count = math.ceil(len(papers) / shard_size)
    try:
        resumed = _encode_shards(encoder, papers, shards, shard_size, count, batch_size, show_progress_bar)
    except BaseException:
        # A run that failed before finishing a shard leaves nothing worth resuming, and must not block the next.
        if not any(shards.glob("shard-*.npy")):
            shutil.rmtree(shards, ignore_errors=True)
        raise
    if resumed:
        logger.info("resumed: %d of %d shards were already done in %s", resumed, count, shards)

    dim = np.load(shards / "shard-00000.npy", mmap_mode="r").shape[1]

    def chunks() -> Iterator[Chunk]:
        for index in range(count):
            yield ids[index * shard_size : (index + 1) * shard_size], np.load(shards / f"shard-{index:05d}.npy")

    write_embeddings(output, chunks(), total=len(ids), dim=dim)
    shutil.rmtree(shards)
    return EmbedReport(output, len(ids), dim, count, resumed)


def _encode_shards(encoder: Encoder, papers: Sequence[Mapping[str, Any]], shards: Path, shard_size: int, count: int,
                   batch_size: int, show_progress_bar: bool) -> int:
    """Encode the shards not done yet into ``shards``; returns how many were already done."""
    resumed = 0
    for index in range(count):
        shard = shards / f"shard-{index:05d}.npy"
        if shard.exists():
            _check_shard(shard, min(shard_size, len(papers) - index * shard_size))
            resumed += 1
            continue
        vectors = encoder.encode(
            papers[index * shard_size : (index + 1) * shard_size],
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            progress_desc=f"Shard {index + 1}/{count}" if count > 1 else "Encoding",
        )
        with atomic_path(shard) as temporary, temporary.open("wb") as handle:
            np.save(handle, vectors)
    return resumed


def _check_shard(shard: Path, rows: int) -> None:
    """A finished shard must be a readable float array of ``rows`` vectors; anything else is named."""
    try:
        vectors = np.load(shard, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{shard}: not a readable shard ({error}); delete it and --resume re-embeds it") from None
    if vectors.ndim != 2 or vectors.shape[0] != rows or vectors.dtype != np.float32:
        raise ValueError(f"{shard}: holds {vectors.dtype} vectors of shape {vectors.shape}, expected ({rows}, dim) float32; "
                         "delete it and --resume re-embeds it")


#: Manifest entries that describe a run without deciding its vectors (not compared on resume).
_INFORMATIONAL = ("model",)


def _manifest(encoder: Encoder, ids: list[str], texts: list[str], shard_size: int) -> dict[str, Any]:
    digest = hashlib.sha256()
    for paper_id, text in zip(ids, texts):
        digest.update(paper_id.encode() + b"\0" + text.encode() + b"\0")
    return {
        "model": encoder.name_or_path,
        # What the vectors depend on (weights, config, pooling, length, format), not where the model was read
        # from: the same model given as model/ or model resumes, changed weights at the same path do not.
        "encoder_fingerprint": encoder.fingerprint(),
        "pooling": encoder.pooling,
        "normalize": encoder.normalize,
        "max_length": encoder.max_length,
        "forward_options": encoder.forward_options,
        "shard_size": shard_size,
        "papers": len(ids),
        "papers_sha256": digest.hexdigest(),
    }


def _shard_folder(folder: Path, manifest: dict[str, Any], resume: bool) -> Path:
    manifest_file = folder / _MANIFEST
    if folder.exists():
        done = len(list(folder.glob("shard-*.npy")))
        if not resume:
            raise FileExistsError(
                f"{folder} holds an unfinished run ({done} shard(s) done): pass --resume (resume=True) "
                "to continue it, or delete the folder to start over"
            )
        if not manifest_file.is_file():
            raise ValueError(f"{folder} has no {_MANIFEST}; it was not written by sciembed embed: delete it to start over")
        try:
            earlier = json.loads(manifest_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{manifest_file}: not valid JSON (line {error.lineno}: {error.msg}); delete {folder} to start over") from None
        if not isinstance(earlier, dict):
            raise ValueError(f"{manifest_file}: not a sciembed manifest; delete {folder} to start over")
        differing = sorted(key for key in manifest if key not in _INFORMATIONAL and earlier.get(key) != manifest[key])
        if differing:
            raise ValueError(
                f"cannot resume {folder}: the unfinished run differs in {', '.join(differing)} "
                "(other papers, model weights or settings); delete the folder to start over"
            )
        return folder
    if resume:
        logger.info("nothing to resume at %s; starting from the first shard", folder)
    folder.mkdir(parents=True)
    with atomic_path(manifest_file) as temporary:
        temporary.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return folder


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "embed",
        help="embed papers into a SciDocs-style .jsonl, .npy (+ .ids.json) or .parquet file",
        description=(
            "Embed the papers of a .jsonl / .json / .csv file (fields paper_id, title, abstract) with a model "
            "and write one vector per paper. The text of a paper is title + [SEP] + abstract (SPECTER). "
            "Output is written atomically; papers are encoded in shards kept in OUTPUT.partial/ so that an "
            "interrupted run continues with --resume."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_options(parser, "model")
    parser.add_argument("--input", required=True, help="papers: .jsonl (one object a line), .json (list or id-keyed dict) or .csv")
    parser.add_argument("--output", required=True, help="embeddings: .jsonl ({paper_id, embedding} lines), .npy or .parquet")
    parser.add_argument("--id-field", help="field holding the paper id (default: first of paper_id, corpus_id, id, doc_id)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip malformed, textless and duplicate records and report them, instead of stopping")
    add_options(parser, "batch_size", "max_length", "pooling", "task_format", "domain", "device")
    parser.add_argument("--shard-size", type=int, default=10_000, help="papers per shard saved for --resume")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run from its finished shards")
    add_options(parser, "trust_remote_code", "no_progress")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..data.papers import read_papers
    from ..encoders import load_encoder

    check_embedding_path(args.output)
    written = [Path(args.output)] + ([ids_path(args.output)] if Path(args.output).suffix.lower() == ".npy" else [])
    if Path(args.input).exists() and any(path.exists() and path.resolve() == Path(args.input).resolve() for path in written):
        raise ValueError(f"--output {args.output} would overwrite the input {args.input}; choose another output file")
    papers = read_papers(args.input, id_field=args.id_field, skip_invalid=args.skip_invalid)
    encoder = load_encoder(args.model, trust_remote_code=args.trust_remote_code, device=args.device, max_length=args.max_length,
                           pooling=args.pooling, task_format=args.task_format, domain=args.domain)
    report = embed_to_file(encoder, papers.papers, args.output, shard_size=args.shard_size, batch_size=args.batch_size,
                           resume=args.resume, show_progress_bar=not args.no_progress)
    logger.info("wrote %d embeddings of dimension %d to %s (%d shard(s), %d resumed)",
                report.papers, report.dim, report.output, report.shards, report.resumed_shards)
    if papers.skipped:
        logger.warning("skipped %d invalid record(s) of %s:\n  %s", len(papers.skipped), papers.path, "\n  ".join(map(str, papers.skipped)))
    return 0
