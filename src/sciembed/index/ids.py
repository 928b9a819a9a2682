"""The row -> paper id table of an index, memory-mapped: no Python list of ids is built when an index opens.

Three ``.npy`` files: ``ids.bytes.npy`` (the ids' UTF-8 bytes, one after another), ``ids.offsets.npy`` (``n + 1``
int64 offsets into them) and ``ids.order.npy`` (the rows sorted by id, for lookup by binary search).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

BYTES_FILE = "ids.bytes.npy"
OFFSETS_FILE = "ids.offsets.npy"
ORDER_FILE = "ids.order.npy"
FILES = (BYTES_FILE, OFFSETS_FILE, ORDER_FILE)
#: Rows turned into fixed-width keys at a time when sorting.
_SORT_ROWS = 1 << 20


class IdTable:
    """Paper ids by row, and rows by paper id, read from memory-mapped files.

    Args:
        folder: the index folder holding :data:`FILES`.
        mmap: map the files rather than read them into memory.
    """

    def __init__(self, folder: str | os.PathLike[str], *, mmap: bool = True):
        mode = "r" if mmap else None
        self.bytes = np.load(Path(folder) / BYTES_FILE, mmap_mode=mode)
        self.offsets = np.load(Path(folder) / OFFSETS_FILE, mmap_mode=mode)
        self.order = np.load(Path(folder) / ORDER_FILE, mmap_mode=mode)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, row: int) -> str:
        return bytes(self.bytes[self.offsets[row] : self.offsets[row + 1]]).decode("utf-8")

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        """The paper ids of ``rows``."""
        return [self[int(row)] for row in rows]

    def row_of(self, paper_id: str) -> int:
        """The row of ``paper_id``, or -1 when it is not in the table."""
        key = paper_id.encode("utf-8")
        position = bisect.bisect_left(range(len(self)), key, key=self._key_at)
        if position < len(self) and self._key_at(position) == key:
            return int(self.order[position])
        return -1

    def rows_of(self, paper_ids: Sequence[str]) -> np.ndarray:
        """The rows of ``paper_ids`` (-1 for an id not in the table)."""
        return np.array([self.row_of(str(paper_id)) for paper_id in paper_ids], dtype=np.int64)

    def _key_at(self, position: int) -> bytes:
        row = self.order[position]
        return bytes(self.bytes[self.offsets[row] : self.offsets[row + 1]])


def write_id_table(folder: str | os.PathLike[str], id_bytes: np.ndarray, offsets: np.ndarray, source: str) -> None:
    """Write the id table of ``id_bytes`` and ``offsets`` into ``folder``, refusing an id given twice.

    Args:
        folder: the index folder being written.
        id_bytes: the ids' UTF-8 bytes, one after another (uint8).
        offsets: ``n + 1`` int64 offsets into ``id_bytes``.
        source: what the ids were read from, for the error.

    Raises:
        ValueError: an id given twice, named with both rows.
    """
    order = sorted_rows(id_bytes, offsets)
    keys = _keys(id_bytes, offsets, order)
    same = np.flatnonzero(keys[1:] == keys[:-1])
    if len(same):
        first, second = sorted(order[[same[0], same[0] + 1]].tolist())
        paper_id = bytes(id_bytes[offsets[first] : offsets[first + 1]]).decode("utf-8")
        raise ValueError(
            f"{source}: paper_id {paper_id!r} has two vectors (rows {first} and {second}, counted from 0)"
            f"{f', and {len(same) - 1} more ids repeat' if len(same) > 1 else ''}, so which is its own is unknown; "
            "index each paper once (sciembed embed writes each once)"
        )
    folder = Path(folder)
    np.save(folder / BYTES_FILE, np.ascontiguousarray(id_bytes, dtype=np.uint8))
    np.save(folder / OFFSETS_FILE, np.ascontiguousarray(offsets, dtype=np.int64))
    np.save(folder / ORDER_FILE, order)


def encode_ids(ids: Sequence[str], start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` as UTF-8 bytes and their end offsets counted from ``start``.

    Args:
        ids: paper ids.
        start: the offset the first id begins at.
    """
    encoded = [paper_id.encode("utf-8") for paper_id in ids]
    ends = start + np.cumsum([len(b) for b in encoded], dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends


def sorted_rows(id_bytes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The rows in the byte order of their ids (stable: equal ids keep row order)."""
    return np.argsort(_keys(id_bytes, offsets), kind="stable").astype(np.int64)


def _keys(id_bytes: np.ndarray, offsets: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Fixed-width byte keys of the ids of ``rows`` (default: every row), which numpy sorts and compares."""
    rows = np.arange(len(offsets) - 1) if rows is None else rows
    lengths = offsets[1:] - offsets[:-1]
    width = max(1, int(lengths.max(initial=1)))
    keys = np.zeros((len(rows), width), dtype=np.uint8)
    for start in range(0, len(rows), _SORT_ROWS):
        chunk = rows[start : start + _SORT_ROWS]
        sizes = lengths[chunk]
        where = np.repeat(np.arange(len(chunk)), sizes)
        column = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        keys[start + where, column] = id_bytes[np.repeat(offsets[chunk], sizes) + column]
    return keys.view(f"S{width}").ravel()
