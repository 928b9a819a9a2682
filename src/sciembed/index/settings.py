"""How a paper index is built, and the bytes each kind costs.

The settings are its kind, memory budget, target recall and seed.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from ..choices import StrChoice


class IndexKind(StrChoice):
    """The kind of an index, compared and written as its name."""

    EXACT = "exact"
    INT8 = "int8"
    BINARY = "binary"
    PQ = "pq"

    @property
    def multiplied(self) -> bool:
        """Whether its candidates per result are a tuned multiple of the results (``binary``, ``pq``)."""
        return self in (IndexKind.BINARY, IndexKind.PQ)


#: The kinds, from the most exact to the most compact.
KINDS: tuple[IndexKind, ...] = tuple(IndexKind)
#: The ``kind=`` that chooses a kind by the memory budget.
AUTO = "auto"
#: What ``kind=`` takes: a kind, or :data:`AUTO`.
KIND_CHOICES: tuple[str, ...] = (*KINDS, AUTO)

#: Above this many papers an int8 index becomes IVF + SQ8 (probes tuned), below it a flat scan.
IVF_THRESHOLD = 1_000_000
#: Bytes per paper for an IVF list entry (faiss keeps one int64 id per code).
IVF_ID_BYTES = 8
#: The fewest sub-quantizers ``auto`` gives a ``pq`` index.
MIN_PQ_M = 8
#: Papers used for the recall measurement that tunes probes and the rescore multiplier.
TUNING_QUERIES = 1000
#: The depth the tuning measures recall at.
TUNING_DEPTH = 10

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class IndexSettings:
    """The settings of one index build.

    Attributes:
        kind: ``exact``, ``int8``, ``binary`` or ``pq``. ``None`` or ``auto`` chooses one by ``memory``.
        memory: the RAM the index may take, in bytes or a size such as ``8G`` (``None``: half the machine's).
        target_recall: recall@10 against an exact search that tuning must reach.
        confidence: the confidence of the lower bound of recall@10 that must reach ``target_recall``.
        seed: seeds the samples, the k-means and the tuning queries.
        centre: binary codes of vectors centred on the collection's mean.
        sample_size: vectors the ranges, mean and quantizers are trained on.
        nlist: IVF cells (``None``: about the square root of the papers).
        pq_m: product-quantizer sub-vectors (``None``: a quarter of the dimension).
        tuning_queries: held-out papers the recall is measured on.
    """

    kind: IndexKind | None = None
    memory: int | str | None = None
    target_recall: float = 0.95
    confidence: float = 0.95
    seed: int = 0
    centre: bool = True
    sample_size: int = 100_000
    nlist: int | None = None
    pq_m: int | None = None
    tuning_queries: int = TUNING_QUERIES

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", parse_kind(self.kind))
        if self.memory is not None:
            object.__setattr__(self, "memory", parse_memory(self.memory))
        if not 0 < self.target_recall <= 1:
            raise ValueError(f"target_recall must lie in (0, 1], got {self.target_recall}")
        if not 0 < self.confidence < 1:
            raise ValueError(
                f"--confidence (confidence=) must lie strictly between 0 and 1, got {self.confidence}: give a "
                "probability such as 0.95"
            )
        for name in ("memory", "nlist", "pq_m"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.sample_size < 2 or self.tuning_queries < 1:
            raise ValueError("sample_size must be at least 2 and tuning_queries at least 1")


def parse_kind(text: str | None) -> IndexKind | None:
    """The kind named ``text``, or ``None`` for :data:`AUTO` (chosen by the memory budget).

    Args:
        text: a name of :data:`KIND_CHOICES`, or ``None``.
    """
    if text is None or text == AUTO:
        return None
    try:
        return IndexKind(text)
    except ValueError:
        raise ValueError(f"kind must be one of {', '.join(KIND_CHOICES)}, got {text!r}") from None


def parse_memory(text: str | int) -> int:
    """Bytes from a size such as ``8G``, ``512M`` or ``1073741824``.

    Args:
        text: a number of bytes, optionally with a unit K, M, G or T (powers of 1024).
    """
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", str(text), flags=re.IGNORECASE)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"--memory (memory=) takes a size such as 8G, 512M or 1073741824, got {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def default_memory() -> int:
    """Half the machine's RAM, the default memory budget."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def default_pq_m(dim: int) -> int:
    """Sub-quantizers of a ``pq`` index: the largest divisor of ``dim`` not above ``dim / 4``."""
    return max(m for m in range(1, max(1, dim // 4) + 1) if dim % m == 0)


def default_nlist(papers: int) -> int:
    """IVF cells for ``papers``: about their square root, at least one.

    There is at most a cell per 39 papers.
    Training and adding cost grows with the cells, and tuned probes keep queries fast with few of them.

    Args:
        papers: papers to index.
    """
    return max(1, min(int(math.sqrt(papers)), papers // 39))


def uses_ivf(kind: IndexKind, papers: int) -> bool:
    """Whether a ``kind`` index of ``papers`` is an inverted file."""
    return kind == IndexKind.PQ or (kind == IndexKind.INT8 and papers > IVF_THRESHOLD)


def ram_bytes_per_paper(kind: IndexKind, dim: int, ivf: bool, pq_m: int | None = None) -> float:
    """Bytes one paper's codes take in RAM when the index is searched.

    Args:
        kind: the index kind.
        dim: the vectors' dimension.
        ivf: whether the index is an inverted file, which keeps an id per paper.
        pq_m: the ``pq`` sub-quantizers (default :func:`default_pq_m`).
    """
    ids = IVF_ID_BYTES if ivf else 0
    codes = {
        IndexKind.EXACT: 4 * dim,
        IndexKind.INT8: dim,
        IndexKind.BINARY: dim / 8,
        IndexKind.PQ: pq_m or default_pq_m(dim),
    }
    return codes[IndexKind(kind)] + ids


def disk_bytes_per_paper(kind: IndexKind, dim: int, ivf: bool, pq_m: int | None = None) -> float:
    """Bytes one paper takes on disk: its codes and any int8 rescore store.

    ``binary`` and inverted-file indexes keep an int8 rescore store.

    Args:
        kind: the index kind.
        dim: the vectors' dimension.
        ivf: whether the index is an inverted file.
        pq_m: the ``pq`` sub-quantizers (default :func:`default_pq_m`).
    """
    store = dim if kind == IndexKind.BINARY or ivf else 0
    return ram_bytes_per_paper(kind, dim, ivf, pq_m) + store


def choose_kind(papers: int, dim: int, memory: int, pq_m: int | None = None) -> tuple[IndexKind, int | None]:
    """The most exact kind whose codes fit ``memory`` bytes, with the ``pq`` sub-quantizers that fit.

    Args:
        papers: papers to index.
        dim: their dimension.
        memory: the budget in bytes.
        pq_m: the ``pq`` sub-quantizers (default: the most that fit, at least :data:`MIN_PQ_M`).

    Raises:
        ValueError: nothing fits. The message names the shards needed for the most compact kind.
    """
    for kind in (IndexKind.EXACT, IndexKind.INT8, IndexKind.BINARY):
        if papers * ram_bytes_per_paper(kind, dim, uses_ivf(kind, papers)) <= memory:
            return kind, None
    fitting = [m for m in range(MIN_PQ_M, dim + 1) if dim % m == 0 and papers * (m + IVF_ID_BYTES) <= memory]
    if pq_m is None and fitting:
        return IndexKind.PQ, max(fitting)
    if pq_m is not None and papers * ram_bytes_per_paper(IndexKind.PQ, dim, True, pq_m) <= memory:
        return IndexKind.PQ, pq_m
    smallest = min(dim / 8, (pq_m or min(m for m in range(MIN_PQ_M, dim + 1) if dim % m == 0)) + IVF_ID_BYTES)
    need = papers * smallest
    shards = math.ceil(need / memory)
    raise ValueError(
        f"{papers} papers of dimension {dim} need {need / 2**30:.2f} GiB even in the most compact index, more than "
        f"the {memory / 2**30:.2f} GiB budget (--memory): split the collection into {shards} shards of at most "
        f"{math.ceil(papers / shards)} papers, or raise --memory"
    )
