"""Reads any ``sciembed embed`` output block by block, never holding the whole matrix.

An ``.npy`` file is read with plain file reads and its ids file parsed id by id. Parquet is read batch by batch (a
folder part by part, in name order) and JSON lines are streamed. Every block is checked (finite values, no zero
vector, one dimension) and scaled to unit rows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..choices import StrChoice
from ..data.knn import unit_rows
from ..io import (
    EMBEDDING_SUFFIXES,
    check_finite,
    check_input,
    check_npy_checksum,
    ids_path,
    jsonl_embedding_records,
    npy_blocks,
    npy_vectors,
)

#: Vectors read per block.
BLOCK_ROWS = 65_536
#: Characters of an ids file read at a time.
_ID_CHUNK = 1 << 16
#: One id of an ids file's list (a string, or an integer) and the comma or bracket after it.
_ID = re.compile(r'\s*(?:"((?:[^"\\\x00-\x1f]|\\.)*)"|(-?(?:0|[1-9][0-9]*)))\s*([,\]])', re.S)
_SPACE = re.compile(r"\s*")

Block = tuple[list[str], np.ndarray]


class EmbeddingLayout(StrChoice):
    """The file layouts of an embedding output, named by their suffix."""

    NPY = ".npy"
    JSONL = ".jsonl"
    PARQUET = ".parquet"

    @classmethod
    def of(cls, path: Path) -> EmbeddingLayout:
        """The layout of ``path``: Parquet parts for a folder, else its suffix's.

        Args:
            path: an embedding output.

        Raises:
            ValueError: a file of another suffix.
        """
        if path.is_dir():
            return cls.PARQUET
        try:
            return cls(path.suffix.lower())
        except ValueError:
            raise ValueError(
                f"{path}: not an embedding output; give a {', '.join(EMBEDDING_SUFFIXES)} file, or a folder of "
                "Parquet parts as sciembed embed writes"
            ) from None


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
    #: An ``.npy`` file's ids file (checked once) and its mapped vectors (their shape, type and offset).
    npy: tuple[NpyIds, np.ndarray] | None = None
    #: The first row of the file read: a source of rows ``first .. first + count`` of a larger output.
    first: int = 0

    def blocks(self, rows: int | None = None) -> Iterator[Block]:
        """The ids and unit float32 vectors, ``rows`` at a time, in file order.

        Args:
            rows: vectors per block (default :data:`BLOCK_ROWS`).
        """
        rows = rows or BLOCK_ROWS
        layout = EmbeddingLayout.of(self.path)
        start = self.first if layout is EmbeddingLayout.NPY else 0
        stop = self.first + self.count
        raw = {
            EmbeddingLayout.NPY: self._npy_blocks,
            EmbeddingLayout.JSONL: self._jsonl_blocks,
            EmbeddingLayout.PARQUET: self._parquet_blocks,
        }[layout]
        for ids, vectors in raw(rows):
            end = start + len(ids)
            if end > self.first and start < stop:
                lo, hi = max(0, self.first - start), min(len(ids), stop - start)
                yield ids[lo:hi], self._checked(ids[lo:hi], vectors[lo:hi], start + lo)
            if end >= stop:
                return
            start = end

    def _npy_blocks(self, rows: int) -> Iterator[Block]:
        ids, matrix = self.npy or _open_npy(self.path)
        for block, vectors in zip(ids.blocks(rows, self.first), npy_blocks(matrix, self.first, rows), strict=True):
            yield block, np.asarray(vectors, dtype=np.float32)

    def _jsonl_blocks(self, rows: int) -> Iterator[Block]:
        ids, vectors = [], []
        for _, paper_id, vector in jsonl_embedding_records(self.path):
            ids.append(paper_id)
            vectors.append(vector)
            if len(ids) == rows:
                yield ids, _floats(self.path, ids, vectors)
                ids, vectors = [], []
        if ids:
            yield ids, _floats(self.path, ids, vectors)

    def _parquet_blocks(self, rows: int) -> Iterator[Block]:
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

    def rows(self, wanted: np.ndarray, rows: int | None = None) -> np.ndarray:
        """The unit vectors of the sorted row numbers ``wanted``, gathered in one pass.

        Args:
            wanted: sorted row numbers.
            rows: vectors per block read (default :data:`BLOCK_ROWS`).
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
    layout = EmbeddingLayout.of(path)
    npy = _open_npy(path) if layout is EmbeddingLayout.NPY else None
    count, dim = npy[1].shape if npy else _SHAPES[layout](path)
    if count == 0:
        raise ValueError(f"{path}: holds no vectors; embed the papers first (sciembed embed)")
    if rows is None:
        return EmbeddingSource(path, int(count), int(dim), npy)
    start, stop = rows
    if not 0 <= start < stop <= count:
        raise ValueError(f"{path}: rows {start} .. {stop} asked for, it holds rows 0 .. {count}")
    return EmbeddingSource(path, int(stop - start), int(dim), npy, first=int(start))


def _parquet_output_shape(path: Path) -> tuple[int, int]:
    """The vectors and dimension of a Parquet file, or of a folder of matching parts."""
    if not path.is_dir():
        return _parquet_shape(path)
    parts = _parts(path)
    dims = [(part, _parquet_shape(part)) for part in parts]
    for part, (_, dim) in dims:
        if dim != dims[0][1][1]:
            raise ValueError(
                f"{part}: vectors of size {dim}, {parts[0].name} holds size {dims[0][1][1]}: parts of two "
                "embedding runs (another model?); embed the papers again into a new folder"
            )
    return sum(n for _, (n, _) in dims), dims[0][1][1]


def _jsonl_shape(path: Path) -> tuple[int, int]:
    """The vectors and dimension of a JSON lines output, read through once."""
    count, dim = 0, 0
    for _, _, vector in jsonl_embedding_records(path):
        count, dim = count + 1, dim or len(vector)
    return count, dim


class NpyIds:
    """The ids file of an ``.npy`` embedding output, checked and counted once, never held whole.

    Args:
        path: the ``.npy`` file, whose ids file (:func:`~sciembed.io.ids_path`) is a JSON list of ids or an object
            with the list under ``ids`` and the ``.npy``'s ``npy_sha256``.

    Raises:
        FileNotFoundError: no ids file.
        ValueError: not JSON, no list of ids, an id that is neither a string nor an integer (named by its number), or
            a checksum of other vectors.
    """

    def __init__(self, path: Path):
        self.path = path
        self.file = ids_path(path)
        if not self.file.is_file():
            raise FileNotFoundError(f"{path}: its ids file {self.file} is missing")
        others: dict[str, object] = {}
        self.count = sum(len(chunk) for chunk in self._ids(others))
        if others.get("<list>") is not True:
            raise ValueError(f"{self.file}: expected a list of ids")
        if "<object>" in others:
            check_npy_checksum(path, others)

    def __len__(self) -> int:
        return self.count

    def blocks(self, rows: int, first: int = 0) -> Iterator[list[str]]:
        """The ids from number ``first`` on, ``rows`` at a time."""
        block: list[str] = []
        for chunk in self._ids():
            skipped = min(first, len(chunk))
            first -= skipped
            block += chunk[skipped:]
            start = 0
            while len(block) - start >= rows:
                yield block[start : start + rows]
                start += rows
            block = block[start:]
        if block:
            yield block

    def _ids(self, others: dict[str, object] | None = None) -> Iterator[list[str]]:
        """The ids in order, a chunk at a time.

        Args:
            others: filled with the object's other keys, and ``<object>`` or ``<list>`` for what the file holds.
        """
        others = {} if others is None else others
        with self.file.open(encoding="utf-8", newline="") as handle:
            reader = _JsonReader(handle, self.file)
            if reader.take("["):
                others["<list>"] = True
                yield from self._list(reader)
            elif reader.take("{"):
                others["<object>"] = True
                yield from self._object(reader, others)
            else:
                reader.value()  # a JSON error, or a value of another kind
            if reader.next_char():
                reader.fail("more after the end of the JSON document")

    def _object(self, reader: _JsonReader, others: dict[str, object]) -> Iterator[list[str]]:
        """The ids of the object after its ``{``, its other keys put in ``others``."""
        if reader.take("}"):
            return
        while True:
            if reader.next_char() != '"':
                reader.fail("expected a key in double quotes")
            key = reader.value()
            if key in others:
                reader.fail(f"the key {key!r} is given twice")
            reader.expect(":", "expected ':' after a key")
            if key == "ids" and reader.take("["):
                others["ids"] = others["<list>"] = True
                yield from self._list(reader)
            else:
                others[key] = reader.value()
            if reader.take("}"):
                return
            reader.expect(",", "expected ',' or '}'")

    def _list(self, reader: _JsonReader) -> Iterator[list[str]]:
        """The ids of the list after its ``[``, a chunk's worth at a time."""
        if reader.take("]"):
            return
        number = 0
        while True:
            found = list(iter(_ID.scanner(reader.text, reader.at).match, None))
            if not found:
                if reader.more():
                    continue
                reader.next_char()
                kind = reader.kind_at()
                if kind.startswith(("a str ", "an int ")):
                    reader.fail(f"id #{number} (counted from 0) is not followed by ',' or ']'")
                reader.fail(f"id #{number} (counted from 0) is {kind}: ids are strings (or integers)")
            closing = [match[3] for match in found]
            ended = "]" in closing
            found = found[: closing.index("]") + 1] if ended else found
            yield [
                match[1] if match[1] is not None and "\\" not in match[1] else _id_of(match, number + i, reader)
                for i, match in enumerate(found)
            ]
            reader.at = found[-1].end()
            number += len(found)
            if ended:
                return


def _id_of(match: re.Match, number: int, reader: _JsonReader) -> str:
    """The id of a matched list element (:data:`_ID`) that holds escapes or is an integer."""
    text, integer, _ = match.groups()
    if text is None:
        return str(int(integer))
    try:
        return json.loads(f'"{text}"')
    except json.JSONDecodeError as error:
        reader.fail(f"id #{number} (counted from 0) is not a valid JSON string ({error.msg})")


class _JsonReader:
    """A JSON text read a chunk at a time, its errors naming the character."""

    def __init__(self, handle, file: Path):
        self.handle, self.file = handle, file
        self.text, self.at, self.base, self.done = "", 0, 0, False

    def more(self) -> bool:
        """Read the next chunk after what is left. False at the end of the file."""
        chunk = "" if self.done else self.handle.read(_ID_CHUNK)
        if not chunk:
            self.done = True
            return False
        self.base += self.at
        self.text, self.at = self.text[self.at :] + chunk, 0
        return True

    def next_char(self) -> str:
        """The next character that is not white space, the position moved to it.

        It is "" at the end of the file.
        """
        while True:
            self.at = _SPACE.match(self.text, self.at).end()
            if self.at < len(self.text):
                return self.text[self.at]
            if not self.more():
                return ""

    def take(self, char: str) -> bool:
        """Whether the next non-space character is ``char``, moved past it if so.

        Args:
            char: the character wanted.
        """
        found = self.next_char() == char
        self.at += found
        return found

    def expect(self, char: str, problem: str) -> None:
        """Move past the next non-space character, or fail when it is not ``char``.

        Args:
            char: the character wanted.
            problem: the error when another character comes.
        """
        if not self.take(char):
            self.fail(problem)

    def value(self) -> object:
        """The JSON value at the position, read whole."""
        decoder = json.JSONDecoder()
        self.next_char()
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.at)
                if end < len(self.text) or self.done:
                    self.at = end
                    return value
            except json.JSONDecodeError as error:
                if self.done:
                    self.fail(f"not valid JSON ({error.msg})", error.pos)
            self.more()

    def kind_at(self) -> str:
        """What the value at the position is, for an error."""
        try:
            value, _ = json.JSONDecoder().raw_decode(self.text, self.at)
        except json.JSONDecodeError:
            return "not valid JSON"
        if value is None:
            return "null"
        kind = type(value).__name__
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} ({json.dumps(value)[:40]})"

    def fail(self, problem: str, at: int | None = None) -> NoReturn:
        raise ValueError(f"{self.file}, character {self.base + (self.at if at is None else at)}: {problem}")


def _open_npy(path: Path) -> tuple[NpyIds, np.ndarray]:
    """The ids file and memory-mapped vectors of an ``.npy`` output, checked to be as many."""
    ids, vectors = NpyIds(path), npy_vectors(path, "r")
    if len(ids) != len(vectors):
        raise ValueError(f"{path}: {len(vectors)} vectors but {len(ids)} ids in {ids.file}")
    return ids, vectors


#: How many vectors, of what dimension, a file of each layout (but ``.npy``) holds.
_SHAPES: dict[EmbeddingLayout, Callable[[Path], tuple[int, int]]] = {
    EmbeddingLayout.JSONL: _jsonl_shape,
    EmbeddingLayout.PARQUET: _parquet_output_shape,
}


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
