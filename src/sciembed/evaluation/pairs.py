"""Co-citation pair classification by cosine similarity: F1max and its companions (the MoE paper).

Reference protocol: Hallee, Kapur et al. 2024, "Contrastive Learning and Mixture of Experts Enables
Precise Vector Embeddings" (arXiv:2401.15713, Sci. Rep. 2025), repository
Gleghorn-Lab/Mixture-of-Experts-Sentence-Similarity:

- ``metrics.py`` (``max_metrics``): the similarity of a pair is the cosine of its two embeddings,
  clipped to [-1, 1]. ``sklearn.metrics.precision_recall_curve`` gives precision and recall at every
  distinct similarity taken as threshold (a pair is predicted co-cited when similarity >= threshold).
  F1max is the largest F1 over those thresholds, and the threshold reported is the first (lowest) one
  reaching it (``np.argmax`` over increasing thresholds). The positive / negative mean similarities and
  their ratio ``|pos / (neg + 1e-8)|`` are those of ``compute_metrics_benchmark`` (the "Ratio" column
  of the published tables). ROC-AUC is ``sklearn.metrics.roc_auc_score`` on the similarities.
- the paper-era ``metrics.py`` / ``trainer.py`` (``calc_accuracy``, ``calc_distance``, called by
  ``test``): accuracy at the F1max threshold predicts co-cited when similarity >= threshold (the same
  convention as ``precision_recall_curve``), and the "average distance" is the mean absolute difference
  between a pair's cosine similarity and its 0/1 label, ``mean(|cos - label|)``.

Differences from the reference, all deliberate:

- F1 is computed exactly from the curve's counts, ``2TP / (2TP + FP + FN)`` (equal to ``2PR / (P + R)``).
  The repository computes ``2PR / (P + R + 1e-8)`` in floating point, which moves F1 by ~1e-8 and can
  break an exact tie between two thresholds either way (we keep the lowest, as its argmax intends).
- Cosines are computed in float64 (the repository uses the model's float32 tensors), and a zero vector
  is an error (``torch.nn.functional.cosine_similarity`` would return 0 for it).
- The paper-era ``calc_f1max`` scanned a fixed grid of thresholds (steps of ``0.001``) rather than the similarities.
  A grid can only miss the exact maximum, so its F1max is at most ours.
- A later version of the repository's accuracy used ``similarity > threshold``. With thresholds taken
  from the similarities themselves that always drops the threshold pair, so we keep the paper-era
  ``>=``, which also agrees with ``precision_recall_curve``.
- The test-set variant that limits the threshold search to [0.5, 1] could not be found in the stored
  copies of the repository: its paper-era ``calc_f1max(ss, labels, limits=[-1, 1], increment=0.001)``
  takes the limits as a parameter but no stored caller passes other ones. ``threshold_range=(lo,
  hi)`` is our closest reading: F1max is the best F1 over the precision-recall thresholds ``t`` with
  ``lo <= t <= hi`` (exact, not on a grid), and it is an error when no similarity lies in the range.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import precision_recall_curve, roc_auc_score

#: Added to the mean negative similarity before dividing, as in the reference's ratio.
RATIO_EPSILON = 1e-8


def cosine_similarities(a_vectors: np.ndarray, b_vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of row ``i`` of ``a_vectors`` with row ``i`` of ``b_vectors``, in float64.

    Args:
        a_vectors: ``(n, dim)`` array.
        b_vectors: ``(n, dim)`` array.

    Returns:
        ``(n,)`` similarities clipped to [-1, 1] (as the reference does, against rounding).

    Raises:
        ValueError: the arrays are not 2-D of the same shape, or a row is not finite or has zero norm
            (its cosine is undefined, the row is named).
    """
    a = np.asarray(a_vectors, dtype=np.float64)
    b = np.asarray(b_vectors, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"a_vectors and b_vectors must be 2-D arrays of the same shape, got {a.shape} and {b.shape}")
    for name, matrix in (("a_vectors", a), ("b_vectors", b)):
        bad = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
        if bad.size:
            raise ValueError(f"{name} row {bad[0]} is not finite ({bad.size} such row(s))")
    norms_a = np.linalg.norm(a, axis=1)
    norms_b = np.linalg.norm(b, axis=1)
    for name, norms in (("a_vectors", norms_a), ("b_vectors", norms_b)):
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise ValueError(
                f"{name} row {zero[0]} is a zero vector: its cosine similarity is undefined ({zero.size} such row(s))"
            )
    return np.clip(np.einsum("ij,ij->i", a, b) / (norms_a * norms_b), -1.0, 1.0)


def f1_max(
    similarities: np.ndarray,
    labels: np.ndarray,
    *,
    threshold_range: tuple[float, float] | None = None,
) -> tuple[float, float, float, float]:
    """The maximum F1 over thresholds on ``similarities`` (predict 1 when similarity >= threshold).

    Args:
        similarities: ``(n,)`` scores.
        labels: ``(n,)`` 0/1 labels (checked by the caller).
        threshold_range: ``(lo, hi)``: consider only thresholds ``lo <= t <= hi``.

    Returns:
        ``(f1, precision, recall, threshold)`` as fractions. The threshold is the lowest one reaching
        the maximum.

    Raises:
        ValueError: no similarity lies within ``threshold_range``.
    """
    precision, recall, thresholds = precision_recall_curve(labels, similarities)
    # The curve's last point (precision 1, recall 0) has no threshold.
    precision, recall = precision[:-1], recall[:-1]
    # F1 = 2TP / (predicted + actual positives), from the curve's integer counts: thresholds with equal
    # F1 then tie exactly instead of by rounding of 2PR / (P + R).
    positives = int(np.sum(labels))
    true_positives = np.rint(recall * positives)
    predicted = np.rint(np.divide(true_positives, precision, out=np.zeros_like(precision), where=precision > 0))
    f1 = 2 * true_positives / (predicted + positives)
    candidates = np.arange(thresholds.size)
    if threshold_range is not None:
        low, high = threshold_range
        candidates = np.flatnonzero((thresholds >= low) & (thresholds <= high))
        if candidates.size == 0:
            raise ValueError(
                f"threshold_range {threshold_range}: no similarity lies in it "
                f"(similarities range from {similarities.min():.6g} to {similarities.max():.6g})"
            )
    best = candidates[np.argmax(f1[candidates])]
    return float(f1[best]), float(precision[best]), float(recall[best]), float(thresholds[best])


def pair_metrics(
    similarities: np.ndarray,
    labels: np.ndarray,
    *,
    threshold_range: tuple[float, float] | None = None,
) -> dict[str, float | int]:
    """All pair metrics from precomputed similarities (see :func:`evaluate_pairs` for the keys).

    Args:
        similarities: ``(n,)`` finite scores in [-1, 1] (cosines).
        labels: ``(n,)`` labels, each 0 or 1 (ints, bools or floats).
        threshold_range: ``(lo, hi)`` limiting the F1max threshold search, e.g. ``(0.5, 1.0)``.

    Raises:
        ValueError: shapes differ, a label is not 0/1 or a similarity not finite (row named), only one
            label is present, or ``threshold_range`` is malformed or holds no similarity.
    """
    scores = np.asarray(similarities, dtype=np.float64)
    y = _check_labels(labels, scores.shape)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"similarity at row {bad[0]} is not finite: {scores[bad[0]]!r}")
    positives = int(y.sum())
    if positives == 0 or positives == y.size:
        raise ValueError(
            f"labels must contain both classes to compute F1max and ROC-AUC; got {positives} positive(s) "
            f"among {y.size} pair(s)"
        )
    if threshold_range is not None:
        threshold_range = _check_range(threshold_range)
    f1, precision, recall, threshold = f1_max(scores, y, threshold_range=threshold_range)
    accuracy = float(np.mean((scores >= threshold) == (y == 1)))
    positive_similarity = float(scores[y == 1].mean())
    negative_similarity = float(scores[y == 0].mean())
    return {
        "f1max": 100 * f1,
        "precision": 100 * precision,
        "recall": 100 * recall,
        "threshold": threshold,
        "accuracy": 100 * accuracy,
        "roc_auc": 100 * float(roc_auc_score(y, scores)),
        "average_distance": float(np.mean(np.abs(scores - y))),
        "positive_similarity": positive_similarity,
        "negative_similarity": negative_similarity,
        "similarity_ratio": abs(positive_similarity / (negative_similarity + RATIO_EPSILON)),
        "num_pairs": int(y.size),
        "num_positives": positives,
    }


def evaluate_pairs(
    a_vectors: np.ndarray,
    b_vectors: np.ndarray,
    labels: np.ndarray,
    *,
    threshold_range: tuple[float, float] | None = None,
) -> dict[str, float | int]:
    """Score co-citation pairs: row ``i`` of ``a_vectors`` against row ``i`` of ``b_vectors``.

    Args:
        a_vectors: ``(n, dim)`` embeddings of the first paper of each pair.
        b_vectors: ``(n, dim)`` embeddings of the second paper.
        labels: ``(n,)`` 1 = co-cited, 0 = negative pair.
        threshold_range: ``(lo, hi)`` limiting the F1max threshold search. The MoE paper's test-set
            variant is ``(0.5, 1.0)`` (see the module docstring).

    Returns:
        ``f1max``, ``precision``, ``recall`` (at the F1max threshold), ``accuracy`` (at that threshold)
        and ``roc_auc``, all x100. ``threshold``, ``average_distance`` (mean ``|cos - label|``),
        ``positive_similarity``, ``negative_similarity`` and ``similarity_ratio``, unscaled. Counts
        ``num_pairs`` and ``num_positives``.

    Raises:
        ValueError: see :func:`cosine_similarities` and :func:`pair_metrics`.
    """
    similarities = cosine_similarities(a_vectors, b_vectors)
    return pair_metrics(similarities, labels, threshold_range=threshold_range)


def _check_labels(labels: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    y = np.asarray(labels)
    if y.shape != shape or len(shape) != 1:
        raise ValueError(
            f"labels must be a 1-D array matching the {shape[0] if shape else 0} pair(s), got shape {y.shape}"
        )
    if y.size == 0:
        raise ValueError("no pairs to evaluate")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"labels must be 0/1 numbers or booleans, got dtype {y.dtype}")
    bad = np.flatnonzero((y != 0) & (y != 1))
    if bad.size:
        raise ValueError(f"label at row {bad[0]} is {y[bad[0]]!r}; labels must be 0 or 1")
    return y.astype(np.int64)


def _check_range(threshold_range: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in threshold_range)
    except (TypeError, ValueError):
        raise ValueError(f"threshold_range must be a pair of numbers (lo, hi), got {threshold_range!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and low <= high):
        raise ValueError(f"threshold_range must satisfy lo <= hi (finite), got {threshold_range!r}")
    return low, high
