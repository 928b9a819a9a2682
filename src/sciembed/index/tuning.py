"""Target-recall tuning: the IVF probes and the rescore multiplier are raised until recall@10 against an exact
search, on held-out papers of the collection, reaches the target."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .codes import IndexCodes
from .settings import TUNING_DEPTH

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
        import faiss

        if not len(self.queries):
            return
        keep = min(self.depth + 1, len(vectors))
        scores, rows = faiss.knn(self.queries, vectors, keep, metric=faiss.METRIC_INNER_PRODUCT)
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
    probes, beyond it), then lower the multiplier to the smallest that still reaches ``target``.

    Args:
        codes: the index being built.
        truth: the exact neighbours of the held-out queries.
        target: the recall to reach.
        nlist: IVF cells (``None`` for a flat index).

    Raises:
        ValueError: no setting reaches ``target``; naming the best recall reached and what helps.
    """
    multipliers = multiplier_ladder(codes.kind, codes.index.ntotal, truth.depth)
    tried: list[Tuned] = []

    def reaches(multiplier: int, nprobe: int | None) -> bool:
        rows, _ = codes.search(truth.queries, truth.depth, truth.rows, multiplier=multiplier, nprobe=nprobe)
        tried.append(Tuned(multiplier, nprobe, recall(rows, truth.best)))
        return tried[-1].recall >= target

    nprobe = None
    if codes.ivf:
        # The probes first, at a generous multiplier; then the smallest multiplier at those probes.
        generous = max(m for m in multipliers if m <= GENEROUS_MULTIPLIER)
        nprobe = next((p for p in _ladder(nlist) if reaches(generous, p)), None)
        if nprobe is None and generous < multipliers[-1]:
            nprobe = nlist if any(reaches(m, nlist) for m in multipliers if m > generous) else None
    if nprobe is not None or not codes.ivf:
        for multiplier in multipliers:
            if multiplier in {t.multiplier for t in tried if t.nprobe == nprobe and t.recall >= target} or reaches(
                multiplier, nprobe
            ):
                return next(t for t in tried if (t.multiplier, t.nprobe) == (multiplier, nprobe))
    best = max(tried, key=lambda t: t.recall)
    raise ValueError(
        f"a {codes.kind} index of these vectors reaches recall@10 {best.recall:.3f} at most (multiplier "
        f"{best.multiplier}, nprobe {best.nprobe}), below the target {target}: lower --target-recall "
        "(target_recall=), or choose a more exact --kind (exact, int8)"
    )


def _ladder(nlist: int | None) -> list[int]:
    probes, nprobe = [], 1
    while nprobe < (nlist or 1):
        probes.append(nprobe)
        nprobe *= 2
    return [*probes, nlist or 1]


def multiplier_ladder(kind: str, papers: int, depth: int) -> list[int]:
    """The multipliers tuning tries for a ``kind`` index of ``papers``, up to one that rescores them all."""
    if kind not in ("binary", "pq"):
        return [1]
    whole = -(-papers // (depth + 1))
    multipliers = [m for m in MULTIPLIERS if m < whole]
    while multipliers and multipliers[-1] * 2 < whole:
        multipliers.append(multipliers[-1] * 2)
    return [*multipliers, whole]
