"""The memory-mapped table from an index's rows to paper ids.

No Python list of ids is built when an index opens. Three ``.npy`` files hold it: ``ids.bytes.npy`` (the ids'
UTF-8 bytes, one after another), ``ids.offsets.npy`` (``n + 1`` int64 offsets into them) and ``ids.order.npy`` (the
rows sorted by id, for lookup by binary search).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..io import NpyRowWriter

BYTES_FILE = "ids.bytes.npy"
OFFSETS_FILE = "ids.offsets.npy"
ORDER_FILE = "ids.order.npy"
FILES = (BYTES_FILE, OFFSETS_FILE, ORDER_FILE)
#: Rows turned into fixed-width keys at a time when sorting.
_SORT_ROWS = 1 << 20
#: Bytes of the ids compared per sorting round: ids that tie on them are sorted again by their next bytes.
_KEY_BYTES = 16


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
        return int(self.rows_of([paper_id])[0])

    def rows_of(self, paper_ids: Sequence[str]) -> np.ndarray:
        """The rows of ``paper_ids``, -1 for an id not in the table.

        One binary search finds them all.
        """
        data, ends = encode_ids([str(paper_id) for paper_id in paper_ids])
        wanted = _keys(data, np.concatenate([[0], ends]))
        low, high = np.zeros(len(wanted), dtype=np.int64), np.full(len(wanted), len(self), dtype=np.int64)
        while (active := np.flatnonzero(low < high)).size:
            middle = (low[active] + high[active]) // 2
            less = _keys(self.bytes, self.offsets, np.asarray(self.order[middle])) < wanted[active]
            low[active[less]] = middle[less] + 1
            high[active[~less]] = middle[~less]
        rows = np.full(len(wanted), -1, dtype=np.int64)
        inside = np.flatnonzero(low < len(self))
        found = np.asarray(self.order[low[inside]])
        same = _keys(self.bytes, self.offsets, found) == wanted[inside]
        rows[inside[same]] = found[same]
        return rows


class IdTableWriter:
    """The id table of an index, written block by block as the ids arrive.

    No list of every id is held.

    Args:
        folder: the index folder being written.
        rows: the ids that will be written.
    """

    def __init__(self, folder: str | os.PathLike[str], rows: int):
        self.folder = Path(folder)
        self.offsets = NpyRowWriter(self.folder / OFFSETS_FILE, np.int64, (rows + 1,))
        self.offsets.write(np.zeros(1, dtype=np.int64))
        self.raw = (self.folder / f".{BYTES_FILE}.part").open("wb")
        self.rows = self.end = 0

    def append(self, ids: Sequence[str]) -> None:
        """Append the next ``ids``."""
        self.append_encoded(*encode_ids(ids, self.end))

    def append_encoded(self, data: np.ndarray, ends: np.ndarray) -> None:
        """Append ids given as UTF-8 bytes and their end offsets (counted as :meth:`append` counts them)."""
        if self.rows + len(ends) > self.offsets.shape[0] - 1:
            raise ValueError(f"{self.folder}: more ids than the {self.offsets.shape[0] - 1} announced")
        self.raw.write(np.ascontiguousarray(data, dtype=np.uint8).tobytes())
        self.offsets.write(ends)
        self.rows += len(ends)
        self.end = int(ends[-1]) if len(ends) else self.end

    def extend(self, table: IdTable, block: int = _SORT_ROWS) -> None:
        """Append every id of ``table``, ``block`` ids at a time."""
        shift = self.end
        for first in range(0, len(table), block):
            last = min(first + block, len(table))
            data = table.bytes[table.offsets[first] : table.offsets[last]]
            self.append_encoded(data, np.asarray(table.offsets[first + 1 : last + 1]) + shift)

    def finish(self, source: str) -> None:
        """Write the ids' bytes and their order, refusing an id given twice.

        Args:
            source: what the ids were read from, for the error.

        Raises:
            ValueError: an id given twice, named with both rows.
        """
        self.raw.close()
        announced = self.offsets.shape[0] - 1
        if self.rows != announced:
            self.offsets.handle.close()
            raise ValueError(f"{source}: {self.rows} ids written where {announced} were announced")
        self.offsets.close()
        raw = self.folder / f".{BYTES_FILE}.part"
        with NpyRowWriter(self.folder / BYTES_FILE, np.uint8, (self.end,)) as id_bytes:
            id_bytes.copy_raw(raw, 0, self.end)
        raw.unlink()
        id_bytes = np.load(self.folder / BYTES_FILE, mmap_mode="r")
        offsets = np.load(self.folder / OFFSETS_FILE, mmap_mode="r")
        order, same = sorted_rows(id_bytes, offsets)
        refuse_repeated(id_bytes, offsets, order, same, source)
        np.save(self.folder / ORDER_FILE, order)


def refuse_repeated(
    id_bytes: np.ndarray, offsets: np.ndarray, order: np.ndarray, same: np.ndarray, source: str
) -> None:
    """Refuse an id given twice in an id table.

    Args:
        id_bytes: the ids' UTF-8 bytes, one after another.
        offsets: ``n + 1`` offsets into ``id_bytes``.
        order: the rows in the byte order of their ids.
        same: whether each row of ``order`` holds the id of the next (from :func:`sorted_rows`).
        source: what the ids were read from, for the error.
    """
    same = np.flatnonzero(same)
    if len(same):
        first, second = sorted(order[[same[0], same[0] + 1]].tolist())
        paper_id = bytes(id_bytes[offsets[first] : offsets[first + 1]]).decode("utf-8")
        raise ValueError(
            f"{source}: paper_id {paper_id!r} has two vectors (rows {first} and {second}, counted from 0)"
            f"{f', and {len(same) - 1} more ids repeat' if len(same) > 1 else ''}, so which is its own is unknown; "
            "index each paper once (sciembed embed writes each once)"
        )


def encode_ids(ids: Sequence[str], start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` as UTF-8 bytes and their end offsets counted from ``start``.

    Args:
        ids: paper ids.
        start: the offset the first id begins at.
    """
    encoded = [paper_id.encode("utf-8") for paper_id in ids]
    ends = start + np.cumsum([len(b) for b in encoded], dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends


def sorted_rows(id_bytes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows in byte order of their ids, and which repeat the next row's id.

    The sort is stable: equal ids keep row order. The rows are sorted by the first :data:`_KEY_BYTES` bytes of their
    ids. Rows that tie are sorted again by the next bytes, so no id is padded to the longest.

    Args:
        id_bytes: the ids' UTF-8 bytes, one after another.
        offsets: ``n + 1`` offsets into ``id_bytes``.

    Returns:
        ``(order, same)``: the ``n`` sorted rows, and ``n - 1`` flags, true where a row's id equals the next one's.
    """
    rows = len(offsets) - 1
    lengths = np.diff(np.asarray(offsets))
    order = np.arange(rows, dtype=np.int64)
    same = np.ones(max(0, rows - 1), dtype=bool)
    skip = 0
    while rows:
        run = np.concatenate([[0], np.cumsum(~same)])  # rows whose ids tie so far share a run
        longer = np.bincount(run, weights=lengths[order] > skip) > 0
        todo = np.flatnonzero(((np.bincount(run) > 1) & longer)[run])
        if not len(todo):
            break
        keys = _keys(id_bytes, offsets, order[todo], skip, _KEY_BYTES)
        ranks = np.empty(len(todo), dtype=np.int64)
        ranks[np.argsort(keys, kind="stable")] = np.arange(len(todo))
        moved = np.lexsort((ranks, run[todo]))
        order[todo], keys = order[todo][moved], keys[moved]
        paired = run[todo[:-1]] == run[todo[1:]]  # neighbours within one run
        same[todo[:-1][paired]] &= keys[:-1][paired] == keys[1:][paired]
        skip += _KEY_BYTES
    return order, same


def _keys(
    id_bytes: np.ndarray, offsets: np.ndarray, rows: np.ndarray | None = None, skip: int = 0, width: int | None = None
) -> np.ndarray:
    """Fixed-width byte keys of the ids of ``rows``, which numpy sorts and compares.

    Args:
        id_bytes: the ids' UTF-8 bytes, one after another.
        offsets: ``n + 1`` offsets into ``id_bytes``.
        rows: the rows (default: every row).
        skip: bytes of each id left out at its start.
        width: bytes kept after them (default: the longest id of ``rows``).
    """
    rows = np.arange(len(offsets) - 1) if rows is None else np.asarray(rows, dtype=np.int64)
    starts = np.asarray(offsets[rows]) + skip
    ends = np.asarray(offsets[rows + 1])
    if width is None:
        width = int((ends - starts).max(initial=0))
    width = max(1, width)
    keys = np.zeros((len(rows), width), dtype=np.uint8)
    for first in range(0, len(rows), _SORT_ROWS):
        part = slice(first, first + _SORT_ROWS)
        sizes = np.clip(ends[part] - starts[part], 0, width)
        where = np.repeat(np.arange(len(sizes)), sizes)
        column = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        keys[first + where, column] = id_bytes[np.repeat(starts[part], sizes) + column]
    return keys.view(f"S{width}").ravel()
