"""Target-recall tuning: raise probes and rescoring until recall@10 reaches the target with confidence.

The IVF probes and the rescore multiplier are raised until a lower confidence bound of recall@10 against an exact
search, on held-out papers of the collection, reaches the target.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .codes import IndexCodes, top_inner_products
from .settings import TUNING_DEPTH, IndexKind

#: Rescore multipliers tried, in order (then doubled until the whole collection is rescored).
MULTIPLIERS = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32)
#: The multiplier IVF probes are tuned at before the multiplier itself is lowered.
GENEROUS_MULTIPLIER = 32

logger = logging.getLogger(__name__)


@dataclass
class ExactTruth:
    """The exact ``depth`` nearest rows of held-out queries.

    They are kept while the collection streams past block by block.

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


def recall_shares(found: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each query's share of its true neighbours (``truth``'s valid rows) among ``found``, as float64."""
    shares = [
        len(np.intersect1d(f[f >= 0], t[t >= 0])) / max(1, (t >= 0).sum()) for f, t in zip(found, truth, strict=True)
    ]
    return np.asarray(shares, dtype=np.float64)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each query's true neighbours (``truth``'s valid rows) among ``found``."""
    return float(np.mean(recall_shares(found, truth)))


def lower_bound(shares: np.ndarray, confidence: float) -> float:
    """A one-sided lower confidence bound of the mean of ``shares``, by Student's t.

    The t bound needs no resampling, and the mean of hundreds of shares in [0, 1] is close to normal. Fewer than
    two shares bound nothing, so their bound is 0.

    Args:
        shares: per-query recall, each in [0, 1].
        confidence: the probability that the mean recall of such queries is at least the bound.
    """
    if len(shares) < 2:
        return 0.0
    from scipy.special import stdtrit

    spread = float(np.std(shares, ddof=1)) / math.sqrt(len(shares))
    return max(0.0, float(np.mean(shares)) - float(stdtrit(len(shares) - 1, confidence)) * spread)


@dataclass(frozen=True)
class Tuned:
    """Settings that reach the target, the recall@10 measured at them and its lower confidence bound.

    Attributes:
        multiplier: candidates rescored per result.
        nprobe: IVF cells probed (``None``: not an inverted file).
        recall: the mean recall@10 of the held-out queries.
        lower_bound: a lower confidence bound of that mean (:func:`lower_bound`).
        queries: the held-out queries measured.
        bounded: whether ``lower_bound`` reaches the target.
    """

    multiplier: int
    nprobe: int | None
    recall: float
    lower_bound: float = 1.0
    queries: int = 0
    bounded: bool = True


def tune(codes: IndexCodes, truth: ExactTruth, target: float, nlist: int | None, *, confidence: float) -> Tuned:
    """The fewest IVF probes, then the smallest multiplier, whose recall@10 reaches ``target`` with ``confidence``.

    A setting reaches ``target`` when the :func:`lower_bound` of its mean recall@10 over the held-out queries does.
    Flat indexes raise the multiplier alone. IVF indexes raise the probes at a generous multiplier first (at all
    probes, beyond it), then lower the multiplier to the smallest that still reaches ``target``. Each ladder is
    searched from its cheap end by doubling steps, then bisected, since recall grows along it. When only the mean
    reaches ``target``, the setting with the highest bound is returned as not ``bounded``, with a warning.

    Args:
        codes: the index being built.
        truth: the exact neighbours of the held-out queries.
        target: the recall to reach.
        nlist: IVF cells (``None`` for a flat index).
        confidence: the confidence of the lower bound that must reach ``target``.

    Raises:
        ValueError: no setting's mean reaches ``target``. Naming the best recall reached and what helps.
    """
    multipliers = multiplier_ladder(codes.kind, codes.index.ntotal, truth.depth)
    generous = max(m for m in multipliers if m <= GENEROUS_MULTIPLIER)
    candidates = Candidates(codes, truth.queries, codes.width(truth.depth, generous))
    measured: dict[tuple[int, int | None], tuple[float, float]] = {}

    def reaches(multiplier: int, nprobe: int | None) -> bool:
        if (multiplier, nprobe) not in measured:
            labels = candidates.labels(codes.width(truth.depth, multiplier), nprobe)
            rows, _ = codes.rescored(truth.queries, labels, truth.depth, truth.rows)
            shares = recall_shares(rows, truth.best)
            measured[multiplier, nprobe] = (float(np.mean(shares)), lower_bound(shares, confidence))
        return measured[multiplier, nprobe][1] >= target

    nprobe = None
    if codes.ivf:
        # The probes first, at a generous multiplier; then the smallest multiplier at those probes.
        nprobe = _smallest(_ladder(nlist), lambda p: reaches(generous, p))
        if nprobe is None and _smallest(multipliers, lambda m: reaches(m, nlist)) is not None:
            nprobe = nlist
    queries = len(truth.queries)
    if nprobe is not None or not codes.ivf:
        multiplier = _smallest(multipliers, lambda m: reaches(m, nprobe))
        if multiplier is not None:
            return Tuned(multiplier, nprobe, *measured[multiplier, nprobe], queries)
    averaged = {setting: both for setting, both in measured.items() if both[0] >= target}
    if averaged:
        (multiplier, nprobe), (mean, bound) = max(averaged.items(), key=lambda item: item[1][1])
        logger.warning(
            "the mean recall@10 of the %d held-out papers reaches the target %s, but its lower bound at confidence "
            "%s is %.3f at most, so this sample cannot show that the target holds. The index takes the setting of the "
            "highest bound (multiplier %d, nprobe %s), and its manifest and report say the target is not bounded. "
            "More papers, a lower --confidence (confidence=) or a more exact --kind bound it",
            queries,
            target,
            confidence,
            bound,
            multiplier,
            nprobe,
        )
        return Tuned(multiplier, nprobe, mean, bound, queries, bounded=False)
    (multiplier, nprobe), (best, _) = max(measured.items(), key=lambda item: item[1][0])
    raise ValueError(
        f"a {codes.kind} index of these vectors reaches recall@10 {best:.3f} at most (multiplier {multiplier}, "
        f"nprobe {nprobe}), below the target {target}: lower --target-recall (target_recall=), or choose a more exact "
        "--kind (exact, int8)"
    )


class Candidates:
    """The held-out queries' faiss candidates per IVF probes.

    They are searched once, at the widest width asked for.
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
        """Each query's ``width`` candidate rows at ``nprobe``, as a search of that width finds them.

        A row of -1 is none.
        """
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
    """The multipliers tuning tries for a ``kind`` index of ``papers``.

    They go up to one that rescores all the papers.
    """
    if not IndexKind(kind).multiplied:
        return [1]
    whole = -(-papers // (depth + 1))
    multipliers = [m for m in MULTIPLIERS if m < whole]
    while multipliers and multipliers[-1] * 2 < whole:
        multipliers.append(multipliers[-1] * 2)
    return [*multipliers, whole]
