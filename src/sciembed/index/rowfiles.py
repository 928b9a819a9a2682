"""Large ``.npy`` row files read and written in blocks, so a build's memory does not grow with them.

Rows are written with plain file writes after the ``.npy`` header, and read with plain file reads, so no page of the
file counts in the process's resident memory. Rows read at random through a memory map have their pages released
from the process (the kernel's page cache keeps them) once enough have been read.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

#: Bytes copied at a time where the kernel cannot copy a file's range itself.
_COPY_BYTES = 1 << 24
#: Bytes of pages read through a memory map before they are released from the process.
_RELEASE_BYTES = 1 << 28


class NpyRowWriter:
    """An ``.npy`` file of ``shape`` written block by block with plain writes, never memory-mapped.

    The file is byte for byte the one ``np.lib.format.open_memmap`` would hold after the same rows.

    Args:
        path: the file to write.
        dtype: its element type.
        shape: its shape (the rows first).
    """

    def __init__(self, path: str | os.PathLike[str], dtype: np.dtype | type, shape: tuple[int, ...]):
        self.path, self.dtype, self.shape = Path(path), np.dtype(dtype), tuple(int(n) for n in shape)
        self.rows = 0
        self.handle = self.path.open("wb", buffering=0)
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": self.shape}
        np.lib.format.write_array_header_1_0(self.handle, header)

    def write(self, rows: np.ndarray) -> None:
        """Append ``rows`` (their shape after the first axis is the file's)."""
        data = np.ascontiguousarray(rows, dtype=self.dtype)
        if data.shape[1:] != self.shape[1:] or self.rows + len(data) > self.shape[0]:
            raise ValueError(f"{self.path}: rows of shape {data.shape} do not fit after row {self.rows}")
        view = memoryview(data.reshape(-1).view(np.uint8))
        while view:
            view = view[self.handle.write(view) :]
        self.rows += len(data)

    def copy_from(self, path: str | os.PathLike[str]) -> None:
        """Append every row of the ``.npy`` file ``path``, copied by the kernel where it can (``copy_file_range``)."""
        previous = np.load(path, mmap_mode="r")
        if previous.dtype != self.dtype or previous.shape[1:] != self.shape[1:] or not previous.flags.c_contiguous:
            raise ValueError(f"{path}: rows of {previous.dtype} {previous.shape}, expected {self.dtype} {self.shape}")
        self.copy_raw(path, previous.offset, len(previous))

    def copy_raw(self, path: str | os.PathLike[str], offset: int, rows: int) -> None:
        """Append ``rows`` rows stored raw in the file ``path`` from byte ``offset``.

        Args:
            path: a file holding rows of this file's type and width.
            offset: where the first row starts.
            rows: the rows appended.
        """
        if self.rows + rows > self.shape[0]:
            raise ValueError(f"{path}: {rows} rows do not fit after row {self.rows} of {self.path}")
        size = rows * int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        at, copied = self.handle.tell(), 0
        with open(path, "rb") as source:
            try:
                while copied < size:
                    step = os.copy_file_range(
                        source.fileno(), self.handle.fileno(), size - copied, offset + copied, at + copied
                    )
                    if step <= 0:
                        raise OSError("copy_file_range copied nothing")
                    copied += step
            except (AttributeError, OSError):  # no copy_file_range here, or not between these files
                source.seek(offset + copied)
                self.handle.seek(at + copied)
                while copied < size:
                    chunk = source.read(min(_COPY_BYTES, size - copied))
                    if not chunk:
                        raise ValueError(f"{path}: shorter than {size} bytes from byte {offset}") from None
                    view = memoryview(chunk)
                    while view:
                        view = view[self.handle.write(view) :]
                    copied += len(chunk)
        self.handle.seek(at + size)
        self.rows += rows

    def __enter__(self) -> NpyRowWriter:
        return self

    def __exit__(self, error: type[BaseException] | None, *_: object) -> None:
        if error is None:
            self.close()
        else:
            self.handle.close()

    def close(self) -> None:
        """Close the file, which must hold every row its header announces."""
        self.handle.close()
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.path}: {self.rows} rows written where {self.shape[0]} were announced")


def npy_blocks(matrix: np.memmap, first: int, rows: int) -> Iterator[np.ndarray]:
    """Rows ``first ..`` of the memory-mapped ``.npy`` ``matrix``, ``rows`` at a time, read with plain file reads.

    Args:
        matrix: a 2-D array that ``np.load(..., mmap_mode="r")`` opened.
        first: the first row read.
        rows: rows per block.
    """
    if not matrix.flags.c_contiguous:  # rows of a Fortran-order file are not contiguous: mapped, then released
        for start in range(first, len(matrix), rows):
            block = np.array(matrix[start : start + rows])
            release_pages(matrix)
            yield block
        return
    width = matrix.shape[1] * matrix.dtype.itemsize
    with open(matrix.filename, "rb", buffering=0) as handle:
        handle.seek(matrix.offset + first * width)
        for start in range(first, len(matrix), rows):
            block = np.empty((min(rows, len(matrix) - start), matrix.shape[1]), dtype=matrix.dtype)
            view = memoryview(block.reshape(-1).view(np.uint8))
            while view:
                read = handle.readinto(view)
                if not read:
                    raise ValueError(f"{matrix.filename}: shorter than its header says (row {start} on)")
                view = view[read:]
            yield block


def release_pages(array: np.ndarray) -> None:
    """Release the pages of the memory-mapped ``array`` from the process (the kernel's page cache keeps them)."""
    mapped = getattr(array, "_mmap", None)
    if mapped is not None and hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_DONTNEED)


class ReleasedRows:
    """Rows of a memory-mapped array read by index, its pages released from the process after each few hundred MB.

    Args:
        rows: a memory-mapped array (``np.load(..., mmap_mode="r")``).
    """

    def __init__(self, rows: np.memmap):
        self.rows = rows
        self.shape, self.dtype = rows.shape, rows.dtype
        row_bytes = int(np.prod(rows.shape[1:], dtype=np.int64)) * rows.dtype.itemsize
        self.row_pages = -(-row_bytes // mmap.PAGESIZE) + 1  # the most pages one row can span
        self.touched = 0

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, wanted: np.ndarray | slice) -> np.ndarray:
        out = np.array(self.rows[wanted])
        self.touched += len(out) * self.row_pages * mmap.PAGESIZE
        if self.touched >= _RELEASE_BYTES:
            release_pages(self.rows)
            self.touched = 0
        return out
