"""Co-citation pair metrics against independent brute force, scikit-learn and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cosine as cosine_distance
from sklearn.metrics import accuracy_score, f1_score, precision_recall_curve, roc_auc_score

from sciembed.evaluation.pairs import evaluate_pairs, pair_metrics


def _brute_force_f1max(similarities, labels, low=-np.inf, high=np.inf):
    """Every distinct similarity as threshold (predict 1 when >=), counted by hand; lowest best wins."""
    best = (-1.0, None)
    for threshold in sorted(set(similarities.tolist())):
        if not low <= threshold <= high:
            continue
        tp = fp = fn = 0
        for similarity, label in zip(similarities.tolist(), labels.tolist()):
            predicted = similarity >= threshold
            tp += predicted and label == 1
            fp += predicted and label == 0
            fn += (not predicted) and label == 1
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best[0]:
            best = (f1, threshold)
    return best


def _pairs(seed, n=240, dim=12, signal=0.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    a = rng.normal(size=(n, dim))
    noise = rng.normal(size=(n, dim))
    # Co-cited pairs share direction with a; negatives are mostly noise.
    b = np.where(labels[:, None] == 1, signal * a + (1 - signal) * noise, 0.2 * a + noise)
    return a, b, labels


def _cosines(a, b):
    return np.array([1 - cosine_distance(x, y) for x, y in zip(a, b)])


def test_matches_brute_force_sklearn_and_scipy_on_random_pairs():
    a, b, labels = _pairs(0)
    result = evaluate_pairs(a, b, labels)
    cosines = _cosines(a, b)
    f1, threshold = _brute_force_f1max(cosines, labels)
    assert result["f1max"] == pytest.approx(100 * f1, abs=1e-9)
    assert result["threshold"] == pytest.approx(threshold, abs=1e-12)
    predicted = (cosines >= result["threshold"]).astype(int)
    assert result["f1max"] == pytest.approx(100 * f1_score(labels, predicted), abs=1e-9)
    assert result["accuracy"] == pytest.approx(100 * accuracy_score(labels, predicted), abs=1e-9)
    assert result["roc_auc"] == pytest.approx(100 * roc_auc_score(labels, cosines), abs=1e-9)
    assert result["average_distance"] == pytest.approx(np.mean(np.abs(cosines - labels)), abs=1e-12)
    assert result["positive_similarity"] == pytest.approx(cosines[labels == 1].mean())
    assert result["similarity_ratio"] == pytest.approx(
        abs(cosines[labels == 1].mean() / (cosines[labels == 0].mean() + 1e-8))
    )
    assert (result["num_pairs"], result["num_positives"]) == (240, int(labels.sum()))
    # The repository's own formula (metrics.py, max_metrics): argmax of 2PR / (P + R + 1e-8) on the curve.
    precision, recall, thresholds = precision_recall_curve(labels, np.clip(cosines, -1, 1))
    reference_f1 = 2 * precision[:-1] * recall[:-1] / (precision[:-1] + recall[:-1] + 1e-8)
    assert result["f1max"] == pytest.approx(100 * reference_f1.max(), abs=1e-5)
    assert result["threshold"] == pytest.approx(thresholds[np.argmax(reference_f1)], abs=1e-12)
    # The data carry signal, so the metric is far from trivial: guards against a vacuous comparison.
    assert 60 < result["f1max"] < 100 and result["roc_auc"] > 80


def test_hand_computed_example():
    # Thresholds 0.6/0.7/0.8/0.9 give F1 2/3, 4/5, 1/2, 2/3: the max is at 0.7, where 3 of 4 are right.
    result = pair_metrics(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 1, 0]))
    assert result["f1max"] == pytest.approx(80.0)
    assert result["threshold"] == pytest.approx(0.7)
    assert (result["precision"], result["recall"]) == (pytest.approx(200 / 3), pytest.approx(100.0))
    assert result["accuracy"] == pytest.approx(75.0)
    assert result["roc_auc"] == pytest.approx(75.0)
    assert result["average_distance"] == pytest.approx((0.1 + 0.8 + 0.3 + 0.6) / 4)


def test_tied_similarities_are_one_threshold_and_lowest_best_threshold_wins():
    # Tied cosines from repeated vector pairs, with both labels inside one tie group.
    base = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [0.0, 1.0]])
    a = np.repeat(np.array([[1.0, 0.0]]), 12, axis=0)
    b = base[[0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3]]
    labels = np.array([1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0])
    cosines = _cosines(a, b)
    assert len(set(np.round(cosines, 12))) == 4
    result = evaluate_pairs(a, b, labels)
    f1, threshold = _brute_force_f1max(cosines, labels)
    assert result["f1max"] == pytest.approx(100 * f1) and result["threshold"] == pytest.approx(threshold)
    predicted = (cosines >= result["threshold"]).astype(int)
    assert result["accuracy"] == pytest.approx(100 * accuracy_score(labels, predicted))
    # Thresholds 0.9 and 0.6 tie on F1 = 2/3; the reference's argmax keeps the lower one.
    ties = pair_metrics(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 0, 1]))
    assert ties["f1max"] == pytest.approx(200 / 3) and ties["threshold"] == pytest.approx(0.6)
    assert pair_metrics(np.array([0.9, 0.8, 0.8, 0.2]), np.array([1, 0, 1, 0]))["threshold"] == pytest.approx(0.8)


def test_threshold_range_restricts_the_search_to_half_to_one():
    # Mostly low similarities: the unrestricted best threshold lies below 0.5.
    a, b, labels = _pairs(3, signal=0.35)
    cosines = _cosines(a, b)
    free = evaluate_pairs(a, b, labels)
    limited = evaluate_pairs(a, b, labels, threshold_range=(0.5, 1.0))
    assert free["threshold"] < 0.5 <= limited["threshold"] <= 1.0
    f1, threshold = _brute_force_f1max(cosines, labels, 0.5, 1.0)
    assert limited["f1max"] == pytest.approx(100 * f1) and limited["threshold"] == pytest.approx(threshold)
    assert limited["f1max"] < free["f1max"]
    predicted = (cosines >= limited["threshold"]).astype(int)
    assert limited["accuracy"] == pytest.approx(100 * accuracy_score(labels, predicted))
    # ROC-AUC and distances do not depend on the threshold.
    assert limited["roc_auc"] == free["roc_auc"] and limited["average_distance"] == free["average_distance"]


def test_threshold_range_errors():
    scores, labels = np.array([0.1, 0.2, 0.3]), np.array([0, 1, 1])
    with pytest.raises(ValueError, match=r"no similarity lies in it \(similarities range from 0.1 to 0.3\)"):
        pair_metrics(scores, labels, threshold_range=(0.5, 1.0))
    with pytest.raises(ValueError, match="lo <= hi"):
        pair_metrics(scores, labels, threshold_range=(1.0, 0.5))


def test_degenerate_inputs_fail_clearly():
    a, b, _ = _pairs(1, n=6)
    with pytest.raises(ValueError, match=r"both classes .* got 6 positive\(s\) among 6 pair\(s\)"):
        evaluate_pairs(a, b, np.ones(6))
    with pytest.raises(ValueError, match=r"got 0 positive"):
        evaluate_pairs(a, b, np.zeros(6, dtype=bool))
    with pytest.raises(ValueError, match=r"label at row 2 is .*2.*; labels must be 0 or 1"):
        evaluate_pairs(a, b, np.array([0, 1, 2, 0, 1, 0]))
    with pytest.raises(ValueError, match=r"1-D array matching the 6 pair\(s\), got shape \(5,\)"):
        evaluate_pairs(a, b, np.array([0, 1, 1, 0, 1]))
    b[4] = 0.0
    with pytest.raises(ValueError, match=r"b_vectors row 4 is a zero vector"):
        evaluate_pairs(a, b, np.array([0, 1, 1, 0, 1, 0]))
    a[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"a_vectors row 1 is not finite"):
        evaluate_pairs(a, b, np.array([0, 1, 1, 0, 1, 0]))
    with pytest.raises(ValueError, match="same shape"):
        evaluate_pairs(a, b[:5], np.array([0, 1, 1, 0, 1, 0]))
