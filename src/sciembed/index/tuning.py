"""Target-recall tuning: raise probes and rescoring until recall@10 reaches the target.

Target-recall tuning: the IVF probes and the rescore multiplier are raised until recall@10 against an exact search, on
held-out papers of the collection, reaches the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .codes import IndexCodes, top_inner_products
from .settings import TUNING_DEPTH, IndexKind

#: Rescore multipliers tried, in order (then doubled until the whole collection is rescored).
MULTIPLIERS = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32)
#: The multiplier IVF probes are tuned at before the multiplier itself is lowered.
GENEROUS_MULTIPLIER = 32


@dataclass
class ExactTruth:
    """The exact ``depth`` nearest rows of held-out queries, kept while the collection streams past block by block.

    Args:
        queries: ``(q, dim)`` unit float32 vectors.
        rows: each query's own row, left out of its results.
        depth: neighbours kept per query.
    """

    queries: np.ndarray
    rows: np.ndarray
    depth: int = TUNING_DEPTH

    def __post_init__(self) -> None:
        self.best = np.full((len(self.queries), self.depth), -1, dtype=np.int64)
        self.scores = np.full((len(self.queries), self.depth), -np.inf, dtype=np.float64)

    def update(self, vectors: np.ndarray, start: int) -> None:
        """Merge the block ``vectors`` (unit rows ``start ..``) into each query's best rows."""
        if not len(self.queries):
            return
        scores, rows = top_inner_products(self.queries, vectors, min(self.depth + 1, len(vectors)))
        rows = rows + start
        scores = np.where(rows == self.rows[:, None], -np.inf, scores.astype(np.float64))
        merged_rows = np.concatenate([self.best, rows], axis=1)
        merged_scores = np.concatenate([self.scores, scores], axis=1)
        order = np.lexsort((merged_rows, -merged_scores), axis=1)[:, : self.depth]
        self.best = np.take_along_axis(merged_rows, order, axis=1)
        self.scores = np.take_along_axis(merged_scores, order, axis=1)
        self.best[~np.isfinite(self.scores)] = -1


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each query's true neighbours (``truth``'s valid rows) among ``found``."""
    shares = [
        len(np.intersect1d(f[f >= 0], t[t >= 0])) / max(1, (t >= 0).sum()) for f, t in zip(found, truth, strict=True)
    ]
    return float(np.mean(shares))


@dataclass(frozen=True)
class Tuned:
    """Settings that reach the target, and the recall measured at them."""

    multiplier: int
    nprobe: int | None
    recall: float


def tune(codes: IndexCodes, truth: ExactTruth, target: float, nlist: int | None) -> Tuned:
    """The fewest IVF probes, then the smallest multiplier, whose recall@10 reaches ``target``.

    Flat indexes raise the multiplier alone. IVF indexes raise the probes at a generous multiplier first (at all
    probes, beyond it), then lower the multiplier to the smallest that still reaches ``target``. Each ladder is
    searched from its cheap end by doubling steps, then bisected, since recall grows along it.

    Args:
        codes: the index being built.
        truth: the exact neighbours of the held-out queries.
        target: the recall to reach.
        nlist: IVF cells (``None`` for a flat index).

    Raises:
        ValueError: no setting reaches ``target``. Naming the best recall reached and what helps.
    """
    multipliers = multiplier_ladder(codes.kind, codes.index.ntotal, truth.depth)
    generous = max(m for m in multipliers if m <= GENEROUS_MULTIPLIER)
    candidates = Candidates(codes, truth.queries, codes.width(truth.depth, generous))
    measured: dict[tuple[int, int | None], float] = {}

    def reaches(multiplier: int, nprobe: int | None) -> bool:
        if (multiplier, nprobe) not in measured:
            labels = candidates.labels(codes.width(truth.depth, multiplier), nprobe)
            rows, _ = codes.rescored(truth.queries, labels, truth.depth, truth.rows)
            measured[multiplier, nprobe] = recall(rows, truth.best)
        return measured[multiplier, nprobe] >= target

    nprobe = None
    if codes.ivf:
        # The probes first, at a generous multiplier; then the smallest multiplier at those probes.
        nprobe = _smallest(_ladder(nlist), lambda p: reaches(generous, p))
        if nprobe is None and _smallest(multipliers, lambda m: reaches(m, nlist)) is not None:
            nprobe = nlist
    if nprobe is not None or not codes.ivf:
        multiplier = _smallest(multipliers, lambda m: reaches(m, nprobe))
        if multiplier is not None:
            return Tuned(multiplier, nprobe, measured[multiplier, nprobe])
    (multiplier, nprobe), best = max(measured.items(), key=lambda item: item[1])
    raise ValueError(
        f"a {codes.kind} index of these vectors reaches recall@10 {best:.3f} at most (multiplier {multiplier}, "
        f"nprobe {nprobe}), below the target {target}: lower --target-recall (target_recall=), or choose a more exact "
        "--kind (exact, int8)"
    )


class Candidates:
    """The held-out queries' faiss candidates per IVF probes, searched once at the widest width asked for.

    Each list is ordered by faiss distance, ties by row, so its first ``w`` rows are the rows a search of width
    ``w`` finds (faiss keeps the lowest rows among tied distances), and narrower widths are read from prefixes.

    Args:
        codes: the index being built.
        queries: ``(q, dim)`` unit float32 vectors.
        least: the narrowest width a search runs at, so that later, wider steps reuse it.
    """

    def __init__(self, codes: IndexCodes, queries: np.ndarray, least: int) -> None:
        self.codes, self.queries, self.least = codes, queries, least
        self.lists: dict[int | None, np.ndarray] = {}

    def labels(self, width: int, nprobe: int | None) -> np.ndarray:
        """Each query's ``width`` candidate rows (-1: none) at ``nprobe``, as a search of that width finds them."""
        wide = self.lists.get(nprobe)
        if wide is None or wide.shape[1] < width:
            distances, rows = self.codes.candidates(self.queries, max(width, self.least), nprobe)
            nearness = distances if self.codes.kind == IndexKind.BINARY else -distances.astype(np.float64)
            order = np.lexsort((rows, nearness), axis=1)
            wide = self.lists[nprobe] = np.take_along_axis(rows, order, axis=1)
        return wide[:, :width]


def _smallest(ladder: list[int], reaches: Callable[[int], bool]) -> int | None:
    """The first step of ``ladder`` that ``reaches``, or ``None``: steps 1, 2, 4, ... are tried from the cheap end,
    then the last gap is bisected (recall grows along the ladder)."""
    low, probe = 0, 0
    while probe < len(ladder) and not reaches(ladder[probe]):
        low, probe = probe + 1, 2 * probe + 1
    high = min(probe, len(ladder))
    while low < high:
        middle = (low + high) // 2
        if reaches(ladder[middle]):
            high = middle
        else:
            low = middle + 1
    return ladder[low] if low < len(ladder) else None


def _ladder(nlist: int | None) -> list[int]:
    probes, nprobe = [], 1
    while nprobe < (nlist or 1):
        probes.append(nprobe)
        nprobe *= 2
    return [*probes, nlist or 1]


def multiplier_ladder(kind: IndexKind, papers: int, depth: int) -> list[int]:
    """The multipliers tuning tries for a ``kind`` index of ``papers``, up to one that rescores them all."""
    if not IndexKind(kind).multiplied:
        return [1]
    whole = -(-papers // (depth + 1))
    multipliers = [m for m in MULTIPLIERS if m < whole]
    while multipliers and multipliers[-1] * 2 < whole:
        multipliers.append(multipliers[-1] * 2)
    return [*multipliers, whole]
