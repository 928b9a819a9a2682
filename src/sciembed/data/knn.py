"""Vectors to neighbours: rows scaled to unit length, and each row's nearest other rows by cosine."""

from __future__ import annotations

import numpy as np


def unit_rows(matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to unit length (into ``out`` if given, which may be ``matrix``). A zero row stays zero
    (scikit-learn's ``normalize``; BEIR divides by a tiny epsilon the same way): it has no direction."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, np.maximum(norms, np.finfo(matrix.dtype).tiny), out=out)


def nearest_neighbours(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine similarities of each row's ``k`` nearest other rows, most similar first, computed
    ``block`` rows at a time so memory stays at ``block x len(vectors)``."""
    k = min(k, len(vectors) - 1)
    unit = unit_rows(np.asarray(vectors, dtype=np.float32))
    indices = np.empty((len(vectors), k), dtype=np.int64)
    scores = np.empty((len(vectors), k), dtype=np.float32)
    for start in range(0, len(vectors), block):
        similarity = unit[start : start + block] @ unit.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, rows + start] = -np.inf
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(similarity, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        indices[start : start + block] = np.take_along_axis(top, order, axis=1)
        scores[start : start + block] = np.take_along_axis(top_scores, order, axis=1)
    return indices, scores
