"""Index parts served together as one index.

Each part's candidates are merged by faiss distance, then rescored.
Parts built with one training (``trained_like``) share their codes, so the candidates the parts give together, cut
to the nearest by faiss distance and then by row, are the candidates the merged index gives, and the rescored
results are the merged index's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .codes import IndexCodes
from .manifest import Manifest
from .settings import IndexKind


class StackedRows:
    """Rows of several parts' int8 stores read as one array, by global row.

    Args:
        stores: each part's store.
        offsets: the first global row of each part, then the total.
    """

    def __init__(self, stores: Sequence[np.ndarray], offsets: np.ndarray):
        self.stores = stores
        self.offsets = offsets

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.stores[0].shape[1]), dtype=self.stores[0].dtype)
        part = np.searchsorted(self.offsets, rows, side="right") - 1
        for number in np.unique(part):
            mine = part == number
            out[mine] = self.stores[number][rows[mine] - self.offsets[number]]
        return out


class ShardedCodes(IndexCodes):
    """The codes of index parts with one training, searched as one index.

    Its rows are the parts' papers, part after part.

    Args:
        parts: each part's codes.
    """

    def __init__(self, parts: Sequence[IndexCodes]):
        first = parts[0]
        self.parts = list(parts)
        self.offsets = np.concatenate([[0], np.cumsum([part.papers for part in parts])]).astype(np.int64)
        stores = [part.store for part in parts]
        store = StackedRows(stores, self.offsets) if first.store is not None else None
        super().__init__(first.kind, None, store=store, ranges=first.ranges, mean=first.mean, ivf=first.ivf)

    @property
    def papers(self) -> int:
        """The papers of all the parts."""
        return int(self.offsets[-1])

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The float64 vectors the parts hold for global ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), 0 if not self.parts else self._dim()))
        part = np.searchsorted(self.offsets, rows, side="right") - 1
        for number in np.unique(part):
            mine = part == number
            out[mine] = self.parts[number].vectors(rows[mine] - self.offsets[number])
        return out

    def candidates(self, queries: np.ndarray, width: int, nprobe: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Each query's ``width`` nearest global rows over the parts, by faiss distance then row."""
        distances, labels = [], []
        for part, offset in zip(self.parts, self.offsets, strict=False):
            found, rows = part.candidates(queries, min(width, part.papers), nprobe)
            distances.append(found)
            labels.append(np.where(rows >= 0, rows + offset, -1))
        found, rows = np.hstack(distances), np.hstack(labels)
        nearest = found if self.kind == IndexKind.BINARY else -found.astype(np.float64)
        nearest = np.where(rows >= 0, nearest, np.inf)
        keys = np.where(rows >= 0, rows, np.iinfo(np.int64).max)
        order = np.lexsort((keys, nearest), axis=1)[:, :width]
        return np.take_along_axis(found, order, axis=1), np.take_along_axis(rows, order, axis=1)

    def _dim(self) -> int:
        return len(self.ranges[0]) if self.ranges is not None else self.parts[0].index.d


class StackedTable:
    """The id tables of index parts read as one, by global row.

    Args:
        tables: each part's id table.
        offsets: the first global row of each part, then the total.
    """

    def __init__(self, tables: Sequence, offsets: np.ndarray):
        self.tables = list(tables)
        self.offsets = offsets

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, row: int) -> str:
        part = int(np.searchsorted(self.offsets, row, side="right") - 1)
        return self.tables[part][row - int(self.offsets[part])]

    def ids_of(self, rows) -> list[str]:
        """The paper ids of global ``rows``."""
        return [self[int(row)] for row in rows]

    def rows_of(self, paper_ids: Sequence[str]) -> np.ndarray:
        """The global rows of ``paper_ids`` (-1 for an id in no part)."""
        rows = np.full(len(paper_ids), -1, dtype=np.int64)
        for table, offset in zip(self.tables, self.offsets, strict=False):
            found = table.rows_of(paper_ids)
            rows = np.where((rows < 0) & (found >= 0), found + offset, rows)
        return rows


def check_parts(folders: Sequence[Path], manifests: Sequence[Manifest]) -> None:
    """Refuse parts that cannot be searched or merged as one index.

    A part of another kind, size, model or training is refused.

    Args:
        folders: the part folders.
        manifests: their manifests.

    Raises:
        ValueError: fewer than two parts, or a part that differs from the first (named, with the fix).
    """
    from .merge import check_alike

    if len(folders) < 2:
        raise ValueError(f"shards are two or more index parts, got {len(folders)}")
    check_alike(folders, manifests)


def stack_parts(parts: Sequence[Any], manifests: Sequence[Manifest]) -> tuple[ShardedCodes, StackedTable, Manifest]:
    """The codes, id table and manifest of opened index parts searched as one index.

    Args:
        parts: the opened parts (each a :class:`~.paper_index.PaperIndex`), in the order of their papers.
        manifests: their manifests, checked alike by :func:`check_parts`.

    Raises:
        ValueError: a paper held by two parts, named.
    """
    codes = ShardedCodes([part.codes for part in parts])
    table = StackedTable([part.table for part in parts], codes.offsets)
    duplicated = _repeated_id(parts, table)
    if duplicated is not None:
        raise ValueError(duplicated)
    return codes, table, dataclasses.replace(manifests[0], papers=codes.papers)


def _repeated_id(parts, table: StackedTable) -> str | None:
    """A message naming a paper held by two parts, or ``None``.

    The ids are compared as sorted byte keys.
    """
    from .ids import sorted_rows

    data = np.concatenate([np.asarray(part.table.bytes) for part in parts])
    ends = np.cumsum([0] + [int(part.table.offsets[-1]) for part in parts])
    offsets = np.concatenate(
        [[0], *[np.asarray(part.table.offsets[1:]) + end for part, end in zip(parts, ends, strict=False)]]
    )
    order, same = sorted_rows(data, offsets)
    same = np.flatnonzero(same)
    if not len(same):
        return None
    row = int(order[same[0] + 1])
    part = parts[int(np.searchsorted(table.offsets, row, side="right") - 1)]
    return (
        f"paper_id {table[row]!r} is in two index parts ({part.folder} and an earlier one): an index holds each paper "
        "once; build the parts from disjoint slices of the papers"
    )
