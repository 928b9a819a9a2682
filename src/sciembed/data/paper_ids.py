"""Paper ids held as Arrow strings, and their factorisation into graph indices.

A numpy unicode array takes 4 bytes per character of its longest id: 160 bytes for each 40-character
Semantic Scholar id, 16 GB for 10^8 papers. An Arrow ``large_string`` array takes the UTF-8 bytes and an
8-byte offset: 48 bytes for the same id. :class:`PaperIds` keeps a graph's ids that way and answers the
questions the samplers ask of them (the id of index i, the index of an id, which ids are in a set) with
Arrow's hash kernels, never building a Python dict or a numpy copy of the whole column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

IdLike = str | int
#: Ids as passed to the builders: anything iterable, or Arrow string / integer arrays as read from Parquet.
IdArray = Any


class PaperIds:
    """The string ids of ``n`` papers, the id of paper ``i`` at position ``i``.

    They are held in one Arrow ``large_string`` array.

    Indexing with an integer gives the id as ``str``. With an integer array, a boolean mask or a slice it gives
    a numpy string array of those ids (a selection, so the fixed-width copy stays as small as the selection).
    ``np.asarray(ids)`` converts the whole column, which is what the fixed-width layout costs.
    """

    def __init__(self, values: IdArray):
        import pyarrow as pa

        if isinstance(values, PaperIds):
            values = values.arrow
        elif not isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = pa.array(np.asarray(values, dtype=str), pa.large_string())
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        self.arrow = values.cast(pa.large_string())

    def __len__(self) -> int:
        return len(self.arrow)

    @property
    def nbytes(self) -> int:
        return self.arrow.nbytes

    def __getitem__(self, index: Any) -> Any:
        import pyarrow as pa

        if isinstance(index, (int, np.integer)):
            return self.arrow[int(index)].as_py()
        if isinstance(index, slice):
            positions = np.arange(*index.indices(len(self)))  # only the selected positions, not all n
        else:
            positions = np.asarray(index)
            if positions.dtype == bool:
                if positions.shape != (len(self),):
                    raise IndexError(f"a boolean mask over {len(self)} ids has shape {positions.shape}")
                positions = np.flatnonzero(positions)
        if not len(positions):
            return np.zeros(0, dtype="<U1")
        return (
            self.arrow.take(pa.array(positions.astype(np.int64, copy=False)))
            .to_numpy(zero_copy_only=False)
            .astype(str)
        )

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), 65_536):
            yield from self.arrow.slice(start, 65_536).to_pylist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self.arrow.to_numpy(zero_copy_only=False).astype(str) if len(self) else np.zeros(0, dtype="<U1")
        return array if dtype is None else array.astype(dtype)

    def tolist(self) -> list[str]:
        return self.arrow.to_pylist()

    def __repr__(self) -> str:
        return f"PaperIds({len(self)} ids, {self.nbytes} bytes)"

    def positions(self, wanted: Iterable[IdLike] | IdArray) -> np.ndarray:
        """The index of each of ``wanted`` among these ids, found by hash lookup.

        The index is -1 where an id is not one of them.
        """
        import pyarrow.compute as pc

        found = pc.index_in(id_array(wanted, "paper ids"), value_set=self.arrow)
        return found.to_numpy(zero_copy_only=False) if found.null_count == 0 else found.fill_null(-1).to_numpy()

    def isin(self, values: Iterable[IdLike] | IdArray) -> np.ndarray:
        """A boolean mask over these ids: which of them are among ``values``."""
        import pyarrow.compute as pc

        return pc.is_in(self.arrow, value_set=id_array(values, "values")).to_numpy(zero_copy_only=False)


def id_array(values: Iterable[IdLike] | IdArray, name: str) -> IdArray:
    """``values`` as an Arrow ``large_string`` array.

    The values are checked to be strings or integers, in one dimension.

    Args:
        values: the ids.
        name: the argument's name, for errors.
    """
    import pyarrow as pa

    if isinstance(values, PaperIds):
        return values.arrow
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if (
            pa.types.is_integer(values.type)
            or pa.types.is_string(values.type)
            or pa.types.is_large_string(values.type)
        ):
            return values.cast(pa.large_string())
        raise ValueError(f"{name} must hold string or integer ids, got Arrow type {values.type}")
    if not isinstance(values, np.ndarray):
        values = list(values)
        if all(type(v) is str for v in values):
            return pa.array(values, pa.large_string())
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind not in "USO" and array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold string or integer ids, got dtype {array.dtype}")
    if array.dtype.kind == "O":
        bad = [v for v in array[:1000] if not isinstance(v, (str, int, np.integer, np.str_)) or isinstance(v, bool)]
        if bad:
            raise ValueError(f"{name} must hold string or integer ids, got {type(bad[0]).__name__} ({bad[0]!r})")
    return pa.array(array.astype(str), pa.large_string())


def factorise(parts: list[IdArray | None]) -> tuple[PaperIds, list[np.ndarray | None]]:
    """The distinct ids of ``parts`` in sorted order, and each part as indices into them.

    The parts are outputs of :func:`id_array`.

    Arrow's ``dictionary_encode`` hashes the strings where they lie. Numbering by sorted position (the
    order ``np.unique`` gives) keeps a graph's numbering independent of the order of its input.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    given = [part for part in parts if part is not None]
    chunks = [chunk for part in given for chunk in (part.chunks if isinstance(part, pa.ChunkedArray) else [part])]
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, type=pa.large_string()))
    if encoded.num_chunks == 0 or not len(encoded.chunks[0].dictionary):
        return PaperIds(pa.array([], pa.large_string())), [
            None if part is None else np.zeros(0, dtype=np.int64) for part in parts
        ]
    dictionary = encoded.chunks[0].dictionary
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in encoded.chunks])]
    bounds = np.cumsum([0, *(len(part) for part in given)])
    split = iter(codes[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:]))
    return PaperIds(dictionary.take(pa.array(order))), [None if part is None else next(split) for part in parts]
