"""Reading any ``sciembed embed`` output block by block, so the float32 matrix is never held whole.

An ``.npy`` file is memory-mapped, Parquet is read batch by batch (a folder part by part, in name order) and JSON lines
are streamed. Every block is checked (finite values, no zero vector, one dimension) and scaled to unit rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.knn import unit_rows
from ..io import (
    EMBEDDING_SUFFIXES,
    check_finite,
    check_input,
    jsonl_embedding_records,
    open_npy_embeddings,
)

#: Vectors read per block.
BLOCK_ROWS = 65_536

Block = tuple[list[str], np.ndarray]


@dataclass
class EmbeddingSource:
    """An embedding output opened for reading in blocks.

    Attributes:
        path: the file, or folder of Parquet parts.
        count: vectors it holds.
        dim: their dimension.
    """

    path: Path
    count: int
    dim: int
    #: An ``.npy`` file's ids and memory-mapped vectors, read (and its checksum checked) once.
    npy: tuple[list[str], np.ndarray] | None = None
    #: The first row of the file read: a source of rows ``first .. first + count`` of a larger output.
    first: int = 0

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[Block]:
        """The ids and unit float32 vectors, ``rows`` at a time, in file order.

        Args:
            rows: vectors per block.
        """
        start = self.first if self.path.suffix.lower() == ".npy" else 0
        stop = self.first + self.count
        for ids, vectors in self._raw_blocks(rows):
            end = start + len(ids)
            if end > self.first and start < stop:
                lo, hi = max(0, self.first - start), min(len(ids), stop - start)
                yield ids[lo:hi], self._checked(ids[lo:hi], vectors[lo:hi], start + lo)
            if end >= stop:
                return
            start = end

    def _raw_blocks(self, rows: int) -> Iterator[Block]:
        suffix = self.path.suffix.lower()
        if suffix == ".npy":
            ids, matrix = self.npy or open_npy_embeddings(self.path)
            for start in range(self.first, len(ids), rows):
                yield ids[start : start + rows], np.asarray(matrix[start : start + rows], dtype=np.float32)
        elif suffix == ".jsonl":
            ids, vectors = [], []
            for _, paper_id, vector in jsonl_embedding_records(self.path):
                ids.append(paper_id)
                vectors.append(vector)
                if len(ids) == rows:
                    yield ids, _floats(self.path, ids, vectors)
                    ids, vectors = [], []
            if ids:
                yield ids, _floats(self.path, ids, vectors)
        else:
            for part in _parts(self.path) if self.path.is_dir() else [self.path]:
                yield from _parquet_blocks(part, rows)

    def _checked(self, ids: list[str], vectors: np.ndarray, start: int) -> np.ndarray:
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(
                f"{self.path}: the vectors from row {start} (paper_id {ids[0]!r}) have size {vectors.shape[-1]}, the "
                f"rows before {self.dim}: every vector of one index comes from one model; embed the papers again"
            )
        check_finite(
            vectors,
            lambda rows: [repr(ids[i]) for i in rows],
            str(self.path),
            "embed these papers again with a model whose outputs are finite",
        )
        zero = np.flatnonzero(~vectors.any(axis=1))
        if len(zero):
            raise ValueError(
                f"{self.path}: the vector of paper_id {ids[zero[0]]!r} (row {start + zero[0]}) is all zeros"
                f"{f' (and {len(zero) - 1} more)' if len(zero) > 1 else ''}: it has no direction to search by; "
                "embed these papers again"
            )
        return unit_rows(np.ascontiguousarray(vectors, dtype=np.float32))

    def rows(self, wanted: np.ndarray, rows: int = BLOCK_ROWS) -> np.ndarray:
        """The unit vectors of the sorted row numbers ``wanted``, gathered in one pass.

        Args:
            wanted: sorted row numbers.
            rows: vectors per block read.
        """
        out = np.empty((len(wanted), self.dim), dtype=np.float32)
        start = filled = 0
        for ids, vectors in self.blocks(rows):
            stop = start + len(ids)
            upto = np.searchsorted(wanted, stop)
            out[filled:upto] = vectors[wanted[filled:upto] - start]
            filled, start = upto, stop
        return out


def open_embeddings(
    path: str | os.PathLike[str], option: str = "embeddings", rows: tuple[int, int] | None = None
) -> EmbeddingSource:
    """An embedding output of ``sciembed embed`` opened for block reading: its size read, nothing else loaded.

    Args:
        path: a ``.npy`` (with its ids file), ``.jsonl`` or ``.parquet`` file, or a folder of Parquet parts.
        option: the option that named it, for errors.
        rows: read only the rows ``start .. stop`` (counted from 0) of the output.

    Raises:
        ValueError: another suffix, an empty file, a folder without parts, or parts of differing dimensions.
    """
    path = check_input(path, option, "any")
    suffix = path.suffix.lower()
    npy = None
    if path.is_dir():
        parts = _parts(path)
        dims = [(part, _parquet_shape(part)) for part in parts]
        for part, (_, dim) in dims:
            if dim != dims[0][1][1]:
                raise ValueError(
                    f"{part}: vectors of size {dim}, {parts[0].name} holds size {dims[0][1][1]}: parts of two "
                    "embedding runs (another model?); embed the papers again into a new folder"
                )
        count, dim = sum(n for _, (n, _) in dims), dims[0][1][1]
    elif suffix == ".npy":
        npy = open_npy_embeddings(path)
        count, dim = npy[1].shape
    elif suffix == ".parquet":
        count, dim = _parquet_shape(path)
    elif suffix == ".jsonl":
        count, dim = 0, 0
        for _, _, vector in jsonl_embedding_records(path):
            count, dim = count + 1, dim or len(vector)
    else:
        raise ValueError(
            f"{path}: not an embedding output; give a {', '.join(EMBEDDING_SUFFIXES)} file, or a folder of Parquet "
            "parts as sciembed embed writes"
        )
    if count == 0:
        raise ValueError(f"{path}: holds no vectors; embed the papers first (sciembed embed)")
    if rows is None:
        return EmbeddingSource(path, int(count), int(dim), npy)
    start, stop = rows
    if not 0 <= start < stop <= count:
        raise ValueError(f"{path}: rows {start} .. {stop} asked for, it holds rows 0 .. {count}")
    return EmbeddingSource(path, int(stop - start), int(dim), npy, first=int(start))


def _parts(folder: Path) -> list[Path]:
    parts = sorted(folder.glob("*.parquet"))
    if not parts:
        raise ValueError(f"{folder}: a folder without Parquet parts")
    return parts


def _floats(path: Path, ids: list[str], vectors: list[list]) -> np.ndarray:
    try:
        return np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):
        row = next(i for i, vector in enumerate(vectors) if not all(type(x) in (int, float) for x in vector))
        raise ValueError(f"{path} (paper_id {ids[row]!r}): its embedding holds something other than numbers") from None


def _parquet_shape(path: Path) -> tuple[int, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as error:
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None
    schema = file.schema_arrow
    for name in ("paper_id", "embedding"):
        if name not in schema.names:
            raise ValueError(f"{path}: no {name!r} column (columns: {', '.join(schema.names)})")
    kind = schema.field("embedding").type
    if pa.types.is_fixed_size_list(kind):
        return file.metadata.num_rows, kind.list_size
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        raise ValueError(f"{path}: column 'embedding' holds {kind}, expected a list of numbers per row")
    first = next(file.iter_batches(batch_size=1, columns=["embedding"]), None)
    dim = len(first.column(0)[0].as_py() or []) if first is not None and first.num_rows else 0
    return file.metadata.num_rows, dim


def _parquet_blocks(path: Path, rows: int) -> Iterator[Block]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=rows, columns=["paper_id", "embedding"]):
        column = batch.column(1)
        ids = [str(i) for i in batch.column(0).to_pylist()]
        if column.null_count:
            row = column.is_null().to_pylist().index(True)
            raise ValueError(f"{path}: paper_id {ids[row]!r} has no embedding")
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        if len(set(lengths.tolist())) > 1:
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            raise ValueError(
                f"{path}: paper_id {ids[row]!r} has {lengths[row]} numbers where {ids[0]!r} has {lengths[0]}; every "
                "vector of one file comes from one model: embed these papers again"
            )
        values = column.flatten().to_numpy(zero_copy_only=False)
        yield ids, values.reshape(len(ids), -1).astype(np.float32, copy=False)
