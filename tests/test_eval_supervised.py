"""Supervised evaluators against scikit-learn / scipy pipelines written out here from the reference protocols.

Each expected value is built independently (allenai/scidocs ``classify``; allenai/scirepeval
``SupervisedEvaluator`` and ``FewShotEvaluator``, with scikit-learn's LinearSVC / LinearSVR standing in
for lightning's) and compared with ``==``: the solvers are deterministic, so any difference in the
protocol (grid, folds, loss, seeds, row order, averaging) shows.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from helpers import shared_data
from scipy.stats import kendalltau, pearsonr
from sklearn.decomposition import TruncatedSVD
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error, precision_score, r2_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC, LinearSVR

from sciembed.evaluation.supervised import (
    SCIDOCS_CLASSIFICATION,
    SCIREPEVAL_CLASSIFICATION,
    SCIREPEVAL_MULTILABEL,
    SCIREPEVAL_REGRESSION,
    SupervisedProtocol,
    evaluate_classification,
    evaluate_few_shot,
    evaluate_regression,
    few_shot_subsets,
    multi_hot,
)

# The hinge-loss multi-label protocol stops at max_iter on these noisy labels, in our fits and the
# reference's alike; the tests about those fits record the warnings themselves.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

DIM = 16


def blobs(n: int, classes: int, seed: int, spread: float = 1.6) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping Gaussian classes: separable enough to learn, noisy enough that C matters."""
    rng = np.random.RandomState(seed)
    centres = rng.randn(classes, DIM)
    y = rng.randint(0, classes, size=n)
    return (centres[y] + spread * rng.randn(n, DIM)).astype(np.float32), y


def label_sets(n: int, labels: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Multi-hot labels driven by the embeddings, every label with plenty of positives."""
    rng = np.random.RandomState(seed)
    x = rng.randn(n, DIM).astype(np.float32)
    scores = x[:, :labels] + 0.3 * rng.randn(n, labels)
    y = (scores > 0.3).astype(np.int64)
    return x, y


def split(x, y, n_train):
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


# --- single-label classification -------------------------------------------------------------------


def test_scidocs_protocol_equals_sklearn_pipeline():
    x_train, y_train, x_test, y_test = split(*blobs(240, 4, seed=0), 160)
    result = evaluate_classification(x_train, y_train, x_test, y_test, SCIDOCS_CLASSIFICATION, n_jobs=1)

    reference = GridSearchCV(
        LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42),
        cv=3,
        param_grid={"C": np.logspace(-4, 2, 7)},
    )
    reference.fit(x_train, y_train)
    expected = 100 * f1_score(y_test, reference.predict(x_test), average="macro")
    assert result["f1_macro"] == expected and isinstance(result["f1_macro"], float)
    assert 30 < expected < 100  # a real score, neither chance nor perfect
    assert result["best_C"] == reference.best_params_["C"]
    assert (result["num_train"], result["num_test"], result["num_labels"]) == (160, 80, 4)
    assert result["unconverged_fits"] == 0


def test_scirepeval_grid_differs_from_scidocs_and_is_matched():
    assert SCIDOCS_CLASSIFICATION.c_grid == tuple(np.logspace(-4, 2, 7))
    assert SCIREPEVAL_CLASSIFICATION.c_grid == tuple(np.logspace(-2, 2, 5))
    assert SCIREPEVAL_REGRESSION.c_grid == tuple(np.logspace(-4, 2, 7))
    x_train, y_train, x_test, y_test = split(*blobs(200, 3, seed=1), 140)
    result = evaluate_classification(x_train, y_train, x_test, y_test, SCIREPEVAL_CLASSIFICATION, n_jobs=1)
    reference = GridSearchCV(
        LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42),
        cv=3,
        param_grid={"C": np.logspace(-2, 2, 5)},
    ).fit(x_train, y_train)
    assert result["f1_macro"] == 100 * f1_score(y_test, reference.predict(x_test), average="macro")
    assert result["best_C"] in np.logspace(-2, 2, 5)


def test_binary_f1_and_other_metrics():
    x_train, y_train, x_test, y_test = split(*blobs(220, 2, seed=2, spread=2.5), 150)
    protocol = dataclasses.replace(
        SCIREPEVAL_CLASSIFICATION, metrics=("f1", "f1_macro", "accuracy", "precision_weighted")
    )
    result = evaluate_classification(x_train, y_train, x_test, y_test, protocol, n_jobs=1)
    predictions = (
        GridSearchCV(
            LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42),
            cv=3,
            param_grid={"C": np.logspace(-2, 2, 5)},
        )
        .fit(x_train, y_train)
        .predict(x_test)
    )
    assert result["f1"] == 100 * f1_score(y_test, predictions)  # binary F1 of class 1 (Biomimicry)
    assert result["f1_macro"] == 100 * f1_score(y_test, predictions, average="macro")
    assert result["f1"] != result["f1_macro"]
    assert result["accuracy"] == 100 * accuracy_score(y_test, predictions)
    assert result["precision_weighted"] == 100 * precision_score(y_test, predictions, average="weighted")


def test_string_labels_and_a_test_class_unseen_in_training():
    x, y = blobs(200, 3, seed=3)
    names = np.array(["biology", "physics", "art"])[y]
    x_train, y_train, x_test, y_test = split(x, names, 150)
    y_train = np.where(y_train == "art", "biology", y_train)  # "art" only in test
    result = evaluate_classification(x_train, y_train, x_test, y_test, SCIDOCS_CLASSIFICATION, n_jobs=1)
    predictions = (
        GridSearchCV(
            LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42),
            cv=3,
            param_grid={"C": np.logspace(-4, 2, 7)},
        )
        .fit(x_train, y_train)
        .predict(x_test)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert result["f1_macro"] == 100 * f1_score(y_test, predictions, average="macro")
    assert result["num_labels"] == 3


# --- multi-label -----------------------------------------------------------------------------------


GRID = np.logspace(-2, 2, 5)


def multilabel_reference(x_train, y_train, x_test, grid=GRID):
    """allenai/scirepeval evaluator.py, MULTILABEL_CLASSIFICATION, with lightning's defaults: hinge loss, no
    intercept."""
    svm = GridSearchCV(
        LinearSVC(loss="hinge", max_iter=10000, fit_intercept=False, random_state=42), cv=3, param_grid={"C": grid}
    )
    return OneVsRestClassifier(svm, n_jobs=1).fit(x_train, y_train)


def test_multilabel_one_vs_rest_equals_sklearn_pipeline():
    x_train, y_train, x_test, y_test = split(*label_sets(240, 4, seed=4), 160)
    assert y_train.sum(axis=1).max() >= 2  # real label sets, not single labels
    result = evaluate_classification(x_train, y_train, x_test, y_test, SCIREPEVAL_MULTILABEL, n_jobs=1)
    model = multilabel_reference(x_train, y_train, x_test)
    expected = 100 * f1_score(y_test, model.predict(x_test), average="macro")
    assert result["f1_macro"] == expected and 30 < expected < 100
    assert result["best_C"] == [float(e.best_params_["C"]) for e in model.estimators_]
    assert (result["num_labels"], result["num_train"], result["num_test"]) == (4, 160, 80)


def test_multilabel_accepts_label_index_lists():
    x_train, y_train, x_test, y_test = split(*label_sets(150, 3, seed=5), 100)
    as_lists = [list(np.flatnonzero(row)) for row in y_train]
    from_lists = evaluate_classification(x_train, as_lists, x_test, y_test, SCIREPEVAL_MULTILABEL, n_jobs=1)
    assert from_lists == evaluate_classification(x_train, y_train, x_test, y_test, SCIREPEVAL_MULTILABEL, n_jobs=1)


def test_multilabel_rare_labels_match_the_reference():
    x_train, y_train, x_test, y_test = split(*label_sets(200, 3, seed=6), 140)
    once = np.zeros((len(y_train), 1), dtype=np.int64)
    once[10] = 1  # one positive: the grid-search fold holding it trains on negatives only and fails
    y_train = np.hstack([y_train, np.zeros_like(once), once])
    y_test = np.hstack([y_test, np.zeros((len(y_test), 2), dtype=np.int64)])
    y_test[:3, 4] = 1
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = evaluate_classification(x_train, y_train, x_test, y_test, SCIREPEVAL_MULTILABEL, n_jobs=1)
        model = multilabel_reference(x_train, y_train, x_test)
        assert result["f1_macro"] == 100 * f1_score(y_test, model.predict(x_test), average="macro")
    messages = [str(w.message) for w in seen]
    assert any("Label not 3 is present" in m for m in messages)  # the all-negative label: a constant predictor
    assert any(issubclass(w.category, FitFailedWarning) for w in seen)  # the one-positive label's failed folds
    assert result["best_C"][3] is None and all(isinstance(c, float) for c in result["best_C"][:3])
    assert result["best_C"] == [
        None if not hasattr(e, "best_params_") else float(e.best_params_["C"]) for e in model.estimators_
    ]


def test_multi_hot_reads_both_forms_and_refuses_bad_input():
    matrix, count = multi_hot([[2], [0, 3], []], num_labels=5)
    assert (
        count == 5
        and matrix.tolist() == [[0, 0, 1, 0, 0], [1, 0, 0, 1, 0], [0, 0, 0, 0, 0]]
        and matrix.dtype == np.int64
    )
    assert multi_hot([[2], [0, 3]])[1] == 4
    assert multi_hot([[0, 1, 0], [1, 1, 0]])[0].tolist() == [[0, 1, 0], [1, 1, 0]]  # rows repeat a value: multi-hot
    assert multi_hot(np.array([[0, 1], [1, 0]]))[0].tolist() == [[0, 1], [1, 0]]  # a 2-D array is multi-hot
    assert multi_hot([[0, 1], [1, 0]], num_labels=3)[0].tolist() == [[1, 1, 0], [1, 1, 0]]  # index lists
    with pytest.raises(ValueError, match="ambiguous labels"):
        multi_hot([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"label row 1 holds a negative label index: \[-1\]"):
        multi_hot([[0], [-1]])
    with pytest.raises(
        ValueError, match=r"label row 0 repeats a label index: \[0, 1, 0, 1\] \(or is a ragged multi-hot row\)"
    ):
        multi_hot([[0, 1, 0, 1], [0, 1, 0]])  # ragged multi-hot rows
    with pytest.raises(ValueError, match="label row 0 holds an index not below num_labels=3"):
        multi_hot([[3]], num_labels=3)
    with pytest.raises(ValueError, match="multi-hot row 1 holds 2; multi-hot values must be 0 or 1"):
        multi_hot(np.array([[0, 1], [2, 0]]))
    with pytest.raises(ValueError, match="multi-hot rows have 2 label columns, expected num_labels=3"):
        multi_hot(np.array([[0, 1], [1, 0]]), num_labels=3)
    with pytest.raises(ValueError, match="label row 1 is 4, not a list of integer labels"):
        multi_hot([[1], 4])
    with pytest.raises(ValueError, match="label row 0 holds 1.5, not an integer label"):
        multi_hot([[1.5]])
    with pytest.raises(ValueError, match="no row holds a label"):
        multi_hot([[], []])


def test_multilabel_train_and_test_widths_must_agree():
    x_train, y_train, x_test, y_test = split(*label_sets(120, 3, seed=7), 90)
    with pytest.raises(ValueError, match="y_train has 3 labels and y_test 2"):
        evaluate_classification(x_train, y_train, x_test, y_test[:, :2], SCIREPEVAL_MULTILABEL, n_jobs=1)


# --- regression ------------------------------------------------------------------------------------


def test_regression_equals_sklearn_and_scipy():
    rng = np.random.RandomState(8)
    x = (rng.randn(240, DIM) + 1.0).astype(np.float32)  # a shared component, as real embeddings have
    y = x @ rng.randn(DIM) + 2.0 * rng.randn(240) + 5.0
    x_train, y_train, x_test, y_test = split(x, y, 160)
    result = evaluate_regression(x_train, y_train, x_test, y_test, SCIREPEVAL_REGRESSION, n_jobs=1)

    model = GridSearchCV(
        LinearSVR(fit_intercept=False, random_state=42), cv=3, param_grid={"C": np.logspace(-4, 2, 7)}
    ).fit(x_train, y_train)
    predictions = model.predict(x_test)
    assert result["kendalltau"] == 100 * kendalltau(y_test, predictions)[0]
    assert result["pearsonr"] == 100 * pearsonr(y_test, predictions)[0]
    assert result["r2"] == 100 * r2_score(y_test, predictions)
    assert result["mse"] == mean_squared_error(y_test, predictions)  # unscaled, as SciRepEval
    assert result["best_C"] == model.best_params_["C"] and (result["num_train"], result["num_test"]) == (160, 80)
    assert result["kendalltau"] > 20 and all(
        isinstance(result[m], float) for m in ("kendalltau", "pearsonr", "mse", "r2")
    )

    with_intercept = evaluate_regression(
        x_train, y_train, x_test, y_test, dataclasses.replace(SCIREPEVAL_REGRESSION, fit_intercept=True), n_jobs=1
    )
    default_svr = GridSearchCV(LinearSVR(random_state=42), cv=3, param_grid={"C": np.logspace(-4, 2, 7)}).fit(
        x_train, y_train
    )
    assert with_intercept["mse"] == mean_squared_error(y_test, default_svr.predict(x_test)) != result["mse"]


def test_regression_with_tied_targets_uses_tau_b():
    rng = np.random.RandomState(9)
    x = rng.randn(200, DIM).astype(np.float32)
    y = np.round(np.clip(x[:, 0] * 2 + 5 + rng.randn(200), 1, 10))  # peer-review-like scores, many ties
    x_train, y_train, x_test, y_test = split(x, y, 140)
    result = evaluate_regression(
        x_train, y_train, x_test, y_test, dataclasses.replace(SCIREPEVAL_REGRESSION, metrics=("kendalltau",)), n_jobs=1
    )
    predictions = (
        GridSearchCV(LinearSVR(fit_intercept=False, random_state=42), cv=3, param_grid={"C": np.logspace(-4, 2, 7)})
        .fit(x_train, y_train)
        .predict(x_test)
    )
    assert len(np.unique(y_test)) < len(y_test) / 4
    assert result["kendalltau"] == 100 * kendalltau(y_test, predictions, variant="b").statistic
    assert set(result) == {"kendalltau", "best_C", "num_train", "num_test", "unconverged_fits"}


# --- few-shot --------------------------------------------------------------------------------------


def test_local_random_state_draws_what_legacy_global_seeding_draws():
    saved = np.random.get_state()
    try:
        for seed in (42, 43, 91, 141):
            pools = [np.arange(0, 40, 3), np.arange(5, 200, 7), np.array([4, 8, 15, 16, 23, 42])]
            np.random.seed(seed)
            legacy = [np.random.choice(pool, 5, replace=False) for pool in pools]
            local = np.random.RandomState(seed)
            assert all(np.array_equal(a, local.choice(pool, 5, replace=False)) for a, pool in zip(legacy, pools))
    finally:
        np.random.set_state(saved)


def legacy_multilabel_subsets(y, sample_size, iterations):
    """FewShotEvaluator's multi-label sampling, written with the global generator as the reference does."""
    saved = np.random.get_state()
    try:
        subsets = []
        for k in range(iterations):
            chosen = set()
            np.random.seed(42 + k)
            for label in range(y.shape[1]):
                chosen.update(np.random.choice(np.where(y[:, label] == 1)[0], sample_size, replace=False).tolist())
            subsets.append(list(chosen))
        return subsets
    finally:
        np.random.set_state(saved)


def test_few_shot_multilabel_equals_reference_sampling_and_fits():
    x, y = label_sets(300, 3, seed=10)
    x_train, y_train, x_test, y_test = split(x, y, 220)
    state = np.random.get_state()[1].copy()
    result = evaluate_few_shot(
        x_train, y_train, x_test, y_test, SCIREPEVAL_MULTILABEL, sample_size=6, iterations=3, n_jobs=1
    )
    assert np.array_equal(np.random.get_state()[1], state)  # the global generator is left alone

    subsets = legacy_multilabel_subsets(y_train, 6, 3)
    assert [s.tolist() for s in few_shot_subsets(y_train, 6, 3, multilabel=True)] == subsets
    assert len(set(map(tuple, subsets))) == 3 and all(12 <= len(s) <= 18 for s in subsets)
    scores = []
    for rows in subsets:
        model = multilabel_reference(x_train[rows], y_train[rows], x_test)
        scores.append(100 * f1_score(y_test, model.predict(x_test), average="macro"))
    assert result["f1_macro"] == np.mean(scores)
    assert (result["iterations"], result["sample_size"], result["num_train"], result["num_labels"]) == (3, 6, 220, 3)


def test_few_shot_single_label_equals_reference_folds():
    x, y = blobs(300, 3, seed=11)
    x_train, y_train, x_test, y_test = split(x, y, 200)
    result = evaluate_few_shot(
        x_train, y_train, x_test, y_test, SCIREPEVAL_CLASSIFICATION, sample_size=24, iterations=4, n_jobs=1
    )

    folds = StratifiedKFold(n_splits=math.ceil(200 / 24))
    scores, parts = [], []
    for _, part in folds.split(x_train, y_train):
        model = LinearSVC(loss="squared_hinge", fit_intercept=False, random_state=42).fit(
            x_train[part], y_train[part]
        )  # cv=0: C=1
        scores.append(100 * f1_score(y_test, model.predict(x_test), average="macro"))
        parts.append(part.tolist())
        if len(scores) == 4:
            break
    assert [p.tolist() for p in few_shot_subsets(y_train, 24, 4, multilabel=False)] == parts
    assert all(20 <= len(p) <= 25 for p in parts)  # the small test part of each fold is the training set
    assert result["f1_macro"] == np.mean(scores)
    assert (result["iterations"], result["sample_size"], result["num_test"]) == (4, 24, 100)


def test_few_shot_single_label_stops_at_the_number_of_folds():
    x, y = blobs(150, 2, seed=12)
    result = evaluate_few_shot(
        x[:100],
        y[:100],
        x[100:],
        y[100:],
        dataclasses.replace(SCIREPEVAL_CLASSIFICATION, metrics=("f1",)),
        sample_size=40,
        iterations=50,
        n_jobs=1,
    )
    assert result["iterations"] == math.ceil(100 / 40)


def test_few_shot_label_with_too_few_positives_is_named():
    x, y = label_sets(200, 3, seed=13)
    y[:, 1] = 0
    y[[3, 7], 1] = 1
    with pytest.raises(ValueError, match=r"needs 5 positive training rows per label; too few for label 1 \(2\)"):
        evaluate_few_shot(
            x[:150], y[:150], x[150:], y[150:], SCIREPEVAL_MULTILABEL, sample_size=5, iterations=2, n_jobs=1
        )


def test_few_shot_fold_with_a_single_class_is_named():
    x, y = blobs(120, 2, seed=14)
    y_train = np.zeros(100, dtype=int)
    y_train[:3] = 1  # StratifiedKFold(5) leaves two folds without class 1
    with (
        pytest.warns(UserWarning, match="least populated class"),
        pytest.raises(
            ValueError, match=r"few-shot iteration 3: its fold of 20 training rows holds a single class \(0\)"
        ),
    ):
        evaluate_few_shot(
            x[:100], y_train, x[100:], y[100:], SCIREPEVAL_CLASSIFICATION, sample_size=20, iterations=5, n_jobs=1
        )


# --- errors, warnings, protocol --------------------------------------------------------------------


def test_clear_errors_for_bad_inputs():
    x, y = blobs(60, 3, seed=15)
    with pytest.raises(ValueError, match="y_train has 39 rows and x_train 40"):
        evaluate_classification(x[:40], y[:39], x[40:], y[40:], SCIDOCS_CLASSIFICATION, n_jobs=1)
    with pytest.raises(ValueError, match="y_test has 19 rows and x_test 20"):
        evaluate_regression(x[:40], y[:40], x[40:], y[41:], SCIREPEVAL_REGRESSION, n_jobs=1)
    with pytest.raises(ValueError, match=r"y_train holds a single class \(2\); a classifier needs at least two"):
        evaluate_classification(x[:40], np.full(40, 2), x[40:], y[40:], SCIDOCS_CLASSIFICATION, n_jobs=1)
    with pytest.raises(ValueError, match="x_train has 16 columns and x_test 8"):
        evaluate_classification(x[:40], y[:40], x[40:, :8], y[40:], SCIDOCS_CLASSIFICATION, n_jobs=1)
    with pytest.raises(ValueError, match="must be one label per row"):
        evaluate_classification(x[:40], np.ones((40, 2)), x[40:], y[40:], SCIDOCS_CLASSIFICATION, n_jobs=1)
    with pytest.raises(ValueError, match="y_train must hold numbers"):
        evaluate_regression(x[:40], ["a"] * 40, x[40:], y[40:], SCIREPEVAL_REGRESSION, n_jobs=1)
    with pytest.raises(
        ValueError,
        match=r"regression metric\(s\) \['kendalltau', 'pearsonr', 'mse', 'r2'\] in a classification protocol",
    ):
        evaluate_classification(x[:40], y[:40], x[40:], y[40:], SCIREPEVAL_REGRESSION, n_jobs=1)
    with pytest.raises(ValueError, match=r"y_train: label row 0 is 0, not a list"):
        evaluate_classification(x[:40], [0] * 40, x[40:], [[1]] * 20, SCIREPEVAL_MULTILABEL, n_jobs=1)


def test_protocol_validation():
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['f1_macr'\]"):
        SupervisedProtocol(c_grid=(1.0,), metrics=("f1_macr",))
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['accuracy_macro'\]"):
        SupervisedProtocol(c_grid=(1.0,), metrics=("accuracy_macro",))
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['f1_'\]"):
        SupervisedProtocol(c_grid=(1.0,), metrics=("f1_",))
    with pytest.raises(ValueError, match="loss must be 'hinge' or 'squared_hinge', got 'log'"):
        SupervisedProtocol(c_grid=(1.0,), metrics=("f1",), loss="log")
    with pytest.raises(ValueError, match="c_grid must hold positive values"):
        SupervisedProtocol(c_grid=(0.0, 1.0), metrics=("f1",))
    with pytest.raises(ValueError, match="cv must be 0"):
        SupervisedProtocol(c_grid=(1.0,), metrics=("f1",), cv=1)
    assert SCIREPEVAL_MULTILABEL.loss == "hinge" and SCIREPEVAL_MULTILABEL.max_iter == 10000
    assert SCIDOCS_CLASSIFICATION.loss == "squared_hinge" and SCIDOCS_CLASSIFICATION.cv == 3
    assert not any(
        p.fit_intercept
        for p in (SCIDOCS_CLASSIFICATION, SCIREPEVAL_CLASSIFICATION, SCIREPEVAL_MULTILABEL, SCIREPEVAL_REGRESSION)
    )
    listed = SupervisedProtocol(c_grid=[0.1, 1], metrics=["f1_macro"])
    assert (
        listed.c_grid == (0.1, 1.0)
        and listed.metrics == ("f1_macro",)
        and hash(listed) == hash(SupervisedProtocol((0.1, 1.0), ("f1_macro",)))
    )


def test_unconverged_fits_are_counted_whatever_n_jobs_and_still_warned():
    x_train, y_train, x_test, y_test = split(*label_sets(120, 2, seed=16), 90)
    starved = dataclasses.replace(SCIREPEVAL_MULTILABEL, max_iter=3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sequential = evaluate_classification(x_train, y_train, x_test, y_test, starved, n_jobs=1)
        reference = GridSearchCV(
            LinearSVC(loss="hinge", max_iter=3, fit_intercept=False, random_state=42),
            cv=3,
            param_grid={"C": np.logspace(-2, 2, 5)},
        )
        OneVsRestClassifier(reference).fit(x_train, y_train)
    raised = [w for w in seen if issubclass(w.category, ConvergenceWarning)]
    # Our run and the reference run raise the same warnings: each is counted, none silenced.
    assert len(raised) % 2 == 0 and sequential["unconverged_fits"] == len(raised) // 2
    assert 0 < sequential["unconverged_fits"] <= 2 * (5 * 3 + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        parallel = evaluate_classification(x_train, y_train, x_test, y_test, starved, n_jobs=2)
    assert parallel == sequential  # worker processes: same fits, same count, same scores


def test_unconverged_regression_fits_are_counted():
    rng = np.random.RandomState(17)
    x = rng.randn(150, DIM).astype(np.float32)
    y = 100 * (x @ rng.randn(DIM)) + rng.randn(150)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = evaluate_regression(
            x[:100], y[:100], x[100:], y[100:], dataclasses.replace(SCIREPEVAL_REGRESSION, max_iter=2), n_jobs=1
        )
    assert result["unconverged_fits"] == sum(issubclass(w.category, ConvergenceWarning) for w in seen) > 0


# --- real data -------------------------------------------------------------------------------------


def test_real_fos_sample_multilabel_path():
    records = json.loads(shared_data("scirepeval-samples", "fos_small.json").read_text(encoding="utf-8"))
    names = shared_data("scirepeval-samples", "fos_labels.txt").read_text(encoding="utf-8").splitlines()
    texts = [f"{r['title']} {r['abstract']}" for r in records]
    x = (
        TruncatedSVD(32, random_state=0)
        .fit_transform(TfidfVectorizer(sublinear_tf=True).fit_transform(texts))
        .astype(np.float32)
    )
    labels = [r["labels"] for r in records]
    y, count = multi_hot(labels, num_labels=len(names))
    assert count == 23 and y.shape == (205, 23)
    positives = y.sum(axis=0)
    assert positives.min() == 1 and sorted(names[i] for i in np.flatnonzero(positives < 3)) == [
        "Art",
        "Law",
        "Linguistics",
        "Sociology",
    ]

    x_train, y_train, x_test, y_test = (
        x[:150],
        [labels[i] for i in range(150)],
        x[150:],
        [labels[i] for i in range(150, 205)],
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = evaluate_classification(x_train, y_train, x_test, y_test, SCIREPEVAL_MULTILABEL, n_jobs=1)
    y_train_hot, _ = multi_hot(y_train, 23)
    # A label with one training positive leaves a grid-search fold without positives: that fit fails
    # (scored NaN by GridSearchCV, as in the reference), and the failure is reported, not hidden.
    assert any(issubclass(w.category, FitFailedWarning) for w in seen)
    assert result["num_labels"] == 23 and len(result["best_C"]) == 23
    # Every label has a positive among the first 150 papers (4 labels exactly one), so each gets a grid search.
    assert None not in result["best_C"] and np.flatnonzero(y_train_hot.sum(axis=0) == 1).tolist() == [1, 13, 14, 22]
    with pytest.raises(
        ValueError,
        match=r"too few for label 1 \(1\), label 3 \(3\), label 11 \(4\), label 13 \(2\), label 14 \(1\), label 18 "
        r"\(3\), label 22 \(2\)",
    ):
        evaluate_few_shot(x, labels, x, labels, SCIREPEVAL_MULTILABEL, sample_size=5, iterations=1, n_jobs=1)


@pytest.mark.parametrize("multilabel", [False, True])
def test_macro_f1_of_resamples_equals_sklearn_on_each_resample(multilabel):
    """The vectorised macro-F1 behind the paired bootstrap intervals scores every resample as scikit-learn's f1_score
    does, including resamples where a class or a label column occurs in neither the labels nor the predictions."""
    from sklearn.metrics import f1_score

    from sciembed.evaluation.supervised import macro_f1_resamples

    rng = np.random.default_rng(0)
    papers, labels = 40, 6
    if multilabel:
        gold = [sorted(rng.choice(labels - 1, size=rng.integers(1, 3), replace=False).tolist()) for _ in range(papers)]
        predicted = [
            sorted(rng.choice(labels - 1, size=rng.integers(0, 3), replace=False).tolist()) for _ in range(papers)
        ]
    else:
        gold = rng.choice(["cs", "math", "physics", "bio"], size=papers, p=[0.5, 0.3, 0.15, 0.05]).tolist()
        predicted = rng.choice(["cs", "math", "physics", "q-fin"], size=papers, p=[0.5, 0.3, 0.15, 0.05]).tolist()
    weights = rng.multinomial(papers, np.full(papers, 1 / papers), size=30)
    ours = macro_f1_resamples(gold, predicted, weights, num_labels=labels if multilabel else None)

    def hot(rows):
        matrix = np.zeros((len(rows), labels), dtype=int)
        for row, columns in enumerate(rows):
            matrix[row, columns] = 1
        return matrix

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ill-defined F1 of absent labels, scored 0 as scikit-learn does
        for counts, score in zip(weights, ours):
            drawn = np.repeat(np.arange(papers), counts)
            truth, guess = [gold[i] for i in drawn], [predicted[i] for i in drawn]
            expected = (
                f1_score(hot(truth), hot(guess), average="macro")
                if multilabel
                else f1_score(truth, guess, average="macro")
            )
            assert score == pytest.approx(100 * expected, abs=1e-9)
    everyone = macro_f1_resamples(gold, predicted, np.ones((1, papers)), num_labels=labels if multilabel else None)[0]
    full = (
        f1_score(hot(gold), hot(predicted), average="macro")
        if multilabel
        else f1_score(gold, predicted, average="macro")
    )
    assert everyone == pytest.approx(100 * full)


def test_a_classification_task_keeps_each_test_paper_s_label_and_prediction():
    """keep_predictions: details["per_paper"] holds every test paper's label and prediction, and scoring them with
    scikit-learn gives the task's own macro-F1."""
    from sklearn.metrics import f1_score

    from sciembed.evaluation.supervised import SCIDOCS_CLASSIFICATION
    from sciembed.evaluation.tasks import ClassificationTask

    rng = np.random.default_rng(1)
    ids = [f"p{i}" for i in range(60)]
    labels = [i % 3 for i in range(60)]
    documents = {paper: rng.normal(size=8) + label for paper, label in zip(ids, labels)}
    task = ClassificationTask(
        "toy",
        "toy",
        {},
        train=(ids[:40], labels[:40]),
        test=(ids[40:], labels[40:]),
        protocol=dataclasses.replace(SCIDOCS_CLASSIFICATION, metrics=("f1_macro",)),
        keep_predictions=True,
    )
    result = task.evaluate(documents, {}, n_jobs=1)
    kept = result.details["per_paper"]
    assert list(kept) == ids[40:] and [gold for gold, _ in kept.values()] == labels[40:]
    assert result.metrics["f1_macro"] == pytest.approx(
        100 * f1_score(labels[40:], [p for _, p in kept.values()], average="macro")
    )
    json.dumps(result.details)  # plain values, as the results JSON needs
