"""Merging index parts that share one training into one index folder, on disk.

The parts are built with ``trained_like``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..io import NpyRowWriter, refuse_replacing, replace_folder
from .build import INDEX_FILE, REPORT_FILE, STORE_FILE, staging_folder, trained_codes, write_codes
from .ids import IdTable, IdTableWriter
from .manifest import Manifest
from .settings import IndexKind


def merge_indexes(
    parts: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, overwrite: bool = False
) -> Path:
    """Merge index ``parts`` into the folder ``output``, their papers in the order of the parts.

    Args:
        parts: index folders built with one training (the first, and the others ``trained_like`` it).
        output: the merged index folder, written atomically.
        overwrite: replace an index at ``output``.

    Raises:
        ValueError: fewer than two parts, parts of another kind, dimension, model or training (named), or a paper
            in two parts (named).
    """
    import faiss

    output = refuse_replacing(output, overwrite=overwrite)
    parts = [Path(part) for part in parts]
    if len(parts) < 2:
        raise ValueError(f"merge takes two or more index parts, got {len(parts)}")
    manifests = [Manifest.read(part) for part in parts]
    first = manifests[0]
    check_alike(parts, manifests)
    staging = staging_folder(output)
    try:
        codes, _, _ = trained_codes(parts[0], first.dim)
        binary = first.kind == IndexKind.BINARY
        read = faiss.read_index_binary if binary else faiss.read_index
        for part in parts:
            other = read(str(part / INDEX_FILE))
            if binary:
                codes.index.add(faiss.vector_to_array(other.xb).reshape(other.ntotal, -1))
            else:
                codes.index.merge_from(other, codes.index.ntotal if codes.ivf else 0)
        papers = sum(m.papers for m in manifests)
        if (parts[0] / STORE_FILE).is_file():
            with NpyRowWriter(staging / STORE_FILE, np.int8, (papers, first.dim)) as store:
                for part in parts:
                    store.copy_from(part / STORE_FILE)
        write_codes(staging, codes)
        table = IdTableWriter(staging, papers)
        for part in parts:
            table.extend(IdTable(part))
        table.finish("the parts")
        merged = dataclasses.replace(first, papers=papers, files={})
        report = {
            "kind": merged.kind,
            "papers": papers,
            "merged_from": [str(part) for part in parts],
            "recall_at_10": merged.recall,
            "ram_bytes_per_paper": merged.bytes_per_paper()[0],
            "disk_bytes_per_paper": merged.bytes_per_paper()[1],
        }
        (staging / REPORT_FILE).write_text(json.dumps(report, indent=2), encoding="utf-8")
        merged.write(staging)
        replace_folder(staging, output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return output


def check_alike(parts: Sequence[Path], manifests: Sequence[Manifest]) -> None:
    """Refuse index parts of another kind, dimension, model or training than the first.

    Args:
        parts: the part folders.
        manifests: their manifests.

    Raises:
        ValueError: the first part that differs, named, with the fix.
    """
    first = manifests[0]
    reference = _training(parts[0], first.dim)
    for part, manifest in zip(parts[1:], manifests[1:], strict=True):
        if (manifest.kind, manifest.dim, manifest.model) != (first.kind, first.dim, first.model):
            raise ValueError(
                f"{part} is a {manifest.kind} index of size {manifest.dim} ({_model(manifest)}), {parts[0]} a "
                f"{first.kind} index of size {first.dim} ({_model(first)}): use parts of one collection and model"
            )
        if _training(part, first.dim) != reference:
            raise ValueError(
                f"{part} was trained apart from {parts[0]} (other ranges, mean or quantizers), so their codes do not "
                f"compare; build each part with trained_like={parts[0]} (sciembed index build --trained-like)"
            )


def _training(folder: Path, dim: int) -> bytes:
    """The bytes of a part's training: its emptied faiss index, ranges and mean."""
    import faiss

    codes, _, _ = trained_codes(folder, dim)
    serialize = faiss.serialize_index_binary if codes.kind == IndexKind.BINARY else faiss.serialize_index
    extras = [a.tobytes() for a in (codes.ranges, codes.mean) if a is not None]
    return b"".join([serialize(codes.index).tobytes(), *extras])


def _model(manifest: Manifest) -> str:
    return f"model {manifest.model['name']}" if manifest.model else "no model"
