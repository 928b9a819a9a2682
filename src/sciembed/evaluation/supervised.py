"""Supervised evaluators on frozen embeddings: classification, multi-label, few-shot and regression.

Reference protocols (read for the facts, the code here is written anew):

- allenai/scidocs ``scidocs/classification.py`` (``classify``), MAG and MeSH: a linear SVM with
  squared hinge loss and ``random_state=42``, ``C`` chosen from ``np.logspace(-4, 2, 7)`` by a 3-fold
  ``GridSearchCV`` on the training set, macro F1 on the test set (:data:`SCIDOCS_CLASSIFICATION`).
- allenai/scirepeval ``evaluation/evaluator.py`` (``SupervisedEvaluator.classify`` / ``regression`` /
  ``calc_metrics``): single-label classification as above with ``C`` in ``np.logspace(-2, 2, 5)``
  (:data:`SCIREPEVAL_CLASSIFICATION`, metric ``f1_macro``, or ``f1``, binary F1, for Biomimicry).
  Multi-label classification (Fields of study) as ``OneVsRestClassifier(GridSearchCV(LinearSVC(
  max_iter=10000)))`` on a multi-hot label matrix (:data:`SCIREPEVAL_MULTILABEL`). Regression with
  ``LinearSVR(random_state=42)`` and ``C`` in ``np.logspace(-4, 2, 7)``, scored by Kendall's tau
  (:data:`SCIREPEVAL_REGRESSION`).
- allenai/scirepeval ``evaluation/few_shot_evaluator.py`` (``FewShotEvaluator``) and the
  ``few_shot`` settings of ``scirepeval_tasks.jsonl`` (Biomimicry 64 x 50 and 16 x 100 iterations,
  DRSM 64 x 50 and 24 x 100, Fields of study 10 x 50 and 5 x 100): see :func:`few_shot_subsets`.

Differences from the references:

- The references fit ``lightning.classification.LinearSVC`` / ``lightning.regression.LinearSVR``
  (sklearn-contrib-lightning 0.6.2, not installable here). This module fits scikit-learn's
  ``LinearSVC`` / ``LinearSVR`` with the same hyper-parameters, so the equality guaranteed (and
  tested) is with the scikit-learn construction of the same protocol. The solvers differ (liblinear,
  whose ``dual="auto"`` takes the primal Newton solver for the squared hinge when there are at least
  as many rows as dimensions, against lightning's dual coordinate descent, with its own stopping rule and
  ``tol=1e-3``), so scores can differ slightly from published ones.
- lightning's ``LinearSVC`` fits no intercept and its ``LinearSVR`` defaults to ``fit_intercept=False``,
  so the protocols here set ``fit_intercept=False`` (scikit-learn's default is a regularised
  intercept, ``dataclasses.replace(protocol, fit_intercept=True)`` gives it back). Without an
  intercept a regression target far from zero (a year) must be reached through the embeddings.
- lightning's ``LinearSVC`` defaults to the plain hinge loss, and SciRepEval's multi-label estimator
  sets no loss, so :data:`SCIREPEVAL_MULTILABEL` uses ``loss="hinge"`` (scikit-learn's default would
  be the squared hinge). That estimator also sets no ``random_state`` (its coordinate-descent order
  then follows the global NumPy generator). Here every estimator uses ``random_state=42``.
- Scores are not rounded. The few-shot mean is over unrounded per-iteration scores (SciRepEval
  averages scores already rounded to two decimals).
- An unknown metric name raises a ValueError when the protocol is built (SciRepEval logs and skips).
- The few-shot multi-label sampling uses a local ``np.random.RandomState(42 + k)``, which draws
  exactly what ``np.random.seed(42 + k)`` followed by ``np.random.choice`` draws (tested), and leaves
  the global generator alone (SciRepEval reseeds it to 42 afterwards).
- A label with fewer positives than the few-shot sample size raises a ValueError naming the labels
  (``np.random.choice(..., replace=False)`` fails without naming it in SciRepEval). A few-shot fold
  holding a single class raises one naming the fold.
- Regression also reports ``pearsonr`` and ``r2`` (x 100, SciRepEval's scaling for every regression
  metric but ``mse``) and ``mse`` (unscaled).

Convergence: liblinear warns (``ConvergenceWarning``) whenever a fit stops at ``max_iter``. Those
warnings are left alone (grid-search folds raise theirs in joblib's worker processes). Each evaluation
also counts such fits, grid-search folds included, whatever ``n_jobs`` is: the grid search records a
second score per fold, 1.0 for a fit that stopped at ``max_iter`` (the folds' ``C`` is still chosen by
the estimator's own score, as in the references). The count is returned as ``unconverged_fits`` and
logged once. Grid searches do not run on threads: liblinear draws its coordinate order from one
process-wide generator, so concurrent fits in threads would not be reproducible.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.stats import kendalltau, pearsonr
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error, precision_score, r2_score, recall_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC, LinearSVR

logger = logging.getLogger(__name__)

RANDOM_STATE = 42

_CLASSIFICATION_SCORES: dict[str, Callable[..., float]] = {
    "f1": f1_score,
    "precision": precision_score,
    "recall": recall_score,
    "accuracy": accuracy_score,
}
_AVERAGES = ("binary", "micro", "macro", "weighted", "samples")
# Values that are not on a 0-1 scale keep their own unit, as in SciRepEval's calc_metrics.
_UNSCALED = ("mse",)
REGRESSION_METRICS = ("kendalltau", "pearsonr", "mse", "r2")


def _is_classification_metric(name: str) -> bool:
    base, suffixed, average = name.partition("_")
    if base == "accuracy":
        return not suffixed
    return base in _CLASSIFICATION_SCORES and (not suffixed or average in _AVERAGES)


@dataclass(frozen=True)
class SupervisedProtocol:
    """How a linear model is fitted on embeddings and scored.

    Attributes:
        c_grid: values of ``C`` tried by the grid search.
        metrics: classification metrics ``f1`` / ``precision`` / ``recall``, optionally suffixed with an
            average (``f1_macro``, no suffix means binary), or ``accuracy``. Regression metrics
            ``kendalltau``, ``pearsonr``, ``mse``, ``r2``.
        cv: folds of the grid search (``GridSearchCV(cv=...)``: stratified for classifiers, plain
            k-fold for regression, unshuffled). 0 fits once with ``C=1.0``, the estimators' default.
        multilabel: labels are label sets (multi-hot), fitted one-vs-rest with a grid search per label.
        loss: the ``LinearSVC`` loss (classification only, ``LinearSVR`` keeps its
            ``epsilon_insensitive`` loss).
        max_iter: liblinear's iteration cap.
        fit_intercept: fit an intercept (lightning's estimators, used by the references, do not).

    Raises:
        ValueError: an unknown metric or loss, an empty or non-positive ``C`` grid, ``cv`` of 1 or
            below 0, or ``max_iter`` below 1.
    """

    c_grid: tuple[float, ...]
    metrics: tuple[str, ...]
    cv: int = 3
    multilabel: bool = False
    loss: str = "squared_hinge"
    max_iter: int = 1000
    fit_intercept: bool = False

    def __post_init__(self):
        # Tuples keep the frozen protocol hashable whatever sequences it was given.
        object.__setattr__(self, "c_grid", tuple(float(c) for c in self.c_grid))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if not self.metrics:
            raise ValueError("a protocol needs at least one metric")
        unknown = [m for m in self.metrics if m not in REGRESSION_METRICS and not _is_classification_metric(m)]
        if unknown:
            raise ValueError(
                f"unknown metric(s) {unknown}; classification: f1 / precision / recall with an optional "
                f"_{'/_'.join(_AVERAGES)} suffix, or accuracy; regression: {', '.join(REGRESSION_METRICS)}"
            )
        if self.loss not in ("hinge", "squared_hinge"):
            raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {self.loss!r}")
        if self.cv and (not self.c_grid or any(not c > 0 for c in self.c_grid)):
            raise ValueError(f"c_grid must hold positive values of C, got {self.c_grid!r}")
        if self.cv == 1 or self.cv < 0:
            raise ValueError(f"cv must be 0 (no grid search) or at least 2, got {self.cv}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be at least 1, got {self.max_iter}")


def _logspace(start: int, stop: int, num: int) -> tuple[float, ...]:
    return tuple(float(c) for c in np.logspace(start, stop, num))


#: SciDocs MAG and MeSH (allenai/scidocs ``classify``); SciRepEval's own runs of these two tasks use
#: :data:`SCIREPEVAL_CLASSIFICATION`'s grid.
SCIDOCS_CLASSIFICATION = SupervisedProtocol(c_grid=_logspace(-4, 2, 7), metrics=("f1_macro",))
#: SciRepEval single-label classification; Biomimicry scores binary F1:
#: ``dataclasses.replace(SCIREPEVAL_CLASSIFICATION, metrics=("f1",))``.
SCIREPEVAL_CLASSIFICATION = SupervisedProtocol(c_grid=_logspace(-2, 2, 5), metrics=("f1_macro",))
#: SciRepEval multi-label classification (Fields of study): one-vs-rest, hinge loss, 10,000 iterations.
SCIREPEVAL_MULTILABEL = SupervisedProtocol(
    c_grid=_logspace(-2, 2, 5),
    metrics=("f1_macro",),
    multilabel=True,
    loss="hinge",
    max_iter=10000,
)
#: SciRepEval regression (citation count, publication year, peer-review score, h-index, tweets).
SCIREPEVAL_REGRESSION = SupervisedProtocol(c_grid=_logspace(-4, 2, 7), metrics=REGRESSION_METRICS)


def multi_hot(labels: Any, num_labels: int | None = None) -> tuple[np.ndarray, int]:
    """Label sets as a multi-hot matrix.

    ``labels`` is either multi-hot rows or one list of label indices per example (``[[2], [0, 5]]``,
    as in SciRepEval's ``fos`` training sample). A 2-D NumPy array is read as multi-hot rows. Other
    rows are multi-hot when they all have one length, hold only 0 and 1, and some row repeats a value
    (an index list never does). Rows of one length holding distinct 0/1 values read either way and
    are refused, unless ``num_labels`` exceeds their length (then they are index lists). All other
    rows are index lists.

    Args:
        labels: the label sets, one row per example.
        num_labels: the number of labels. Inferred when ``None`` (the width of multi-hot rows, or the
            largest index + 1).

    Returns:
        An ``(n, num_labels)`` int64 matrix of 0 and 1, and ``num_labels``.

    Raises:
        ValueError: a row that is not a list of integers, a negative index or one not below
            ``num_labels``, a repeated index (e.g. a multi-hot row shorter than the others), a
            multi-hot value other than 0 and 1, a width other than ``num_labels``, no label at all,
            or ambiguous rows (named above).
    """
    if isinstance(labels, np.ndarray) and labels.ndim == 2:
        return _checked_multi_hot(labels, num_labels)
    rows = [_integer_row(row, index) for index, row in enumerate(labels)]
    if not rows:
        raise ValueError("no label rows")
    width = len(rows[0])
    if (
        width
        and all(len(row) == width and set(row) <= {0, 1} for row in rows)
        and (num_labels is None or num_labels <= width)
    ):
        if any(len(set(row)) < width for row in rows):
            return _checked_multi_hot(np.array(rows, dtype=np.int64), num_labels)
        raise ValueError(
            f"ambiguous labels: every row is a list of {width} distinct 0/1 values, which reads as multi-hot "
            "rows or as label indices; pass a 2-D numpy array for multi-hot rows, or num_labels above the row "
            "length for index lists"
        )
    return _indices_to_multi_hot(rows, num_labels)


def _integer_row(row: Any, index: int) -> list[int]:
    if isinstance(row, (str, bytes)) or not isinstance(row, (Sequence, np.ndarray)):
        raise ValueError(f"label row {index} is {row!r}, not a list of integer labels")
    values = []
    for value in row:
        if isinstance(value, (bool, np.bool_)) or isinstance(value, (int, np.integer)):
            values.append(int(value))
        else:
            raise ValueError(f"label row {index} holds {value!r}, not an integer label")
    return values


def _checked_multi_hot(matrix: np.ndarray, num_labels: int | None) -> tuple[np.ndarray, int]:
    if num_labels is not None and matrix.shape[1] != num_labels:
        raise ValueError(f"multi-hot rows have {matrix.shape[1]} label columns, expected num_labels={num_labels}")
    if matrix.shape[1] == 0:
        raise ValueError("multi-hot rows have no label columns")
    bad = ~np.isin(matrix, (0, 1))
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ValueError(
            f"multi-hot row {row} holds {matrix[row][bad[row]][0].item()!r}; multi-hot values must be 0 or 1"
        )
    return matrix.astype(np.int64), matrix.shape[1]


def _indices_to_multi_hot(rows: list[list[int]], num_labels: int | None) -> tuple[np.ndarray, int]:
    for index, row in enumerate(rows):
        if any(value < 0 for value in row):
            raise ValueError(f"label row {index} holds a negative label index: {row}")
        if len(set(row)) < len(row):
            raise ValueError(f"label row {index} repeats a label index: {row} (or is a ragged multi-hot row)")
        if num_labels is not None and any(value >= num_labels for value in row):
            raise ValueError(f"label row {index} holds an index not below num_labels={num_labels}: {row}")
    if num_labels is None:
        num_labels = 1 + max((max(row) for row in rows if row), default=-1)
    if num_labels == 0:
        raise ValueError("no row holds a label")
    matrix = np.zeros((len(rows), num_labels), dtype=np.int64)
    for index, row in enumerate(rows):
        matrix[index, row] = 1
    return matrix, num_labels


def _multi_hot_pair(y_train: Any, y_test: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Train and test label sets on one label space.

    Index lists may leave the top label out of one of the two.
    """
    encoded = []
    for name, labels in (("y_train", y_train), ("y_test", y_test)):
        try:
            encoded.append(multi_hot(labels))
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    (train, train_labels), (test, test_labels) = encoded
    if train_labels == test_labels:
        return train, test, train_labels
    num_labels = max(train_labels, test_labels)
    try:
        return multi_hot(y_train, num_labels)[0], multi_hot(y_test, num_labels)[0], num_labels
    except ValueError as error:
        raise ValueError(f"y_train has {train_labels} labels and y_test {test_labels}: {error}") from None


def _check_features(x_train: Any, x_test: Any) -> tuple[np.ndarray, np.ndarray]:
    x_train, x_test = np.asarray(x_train), np.asarray(x_test)
    for name, x in (("x_train", x_train), ("x_test", x_test)):
        if x.ndim != 2 or len(x) == 0:
            raise ValueError(f"{name} must be a non-empty (n, dim) array, got shape {x.shape}")
    if x_train.shape[1] != x_test.shape[1]:
        raise ValueError(
            f"x_train has {x_train.shape[1]} columns and x_test {x_test.shape[1]}; embeddings must share one dimension"
        )
    return x_train, x_test


def _check_rows(x: np.ndarray, y: np.ndarray, name: str) -> None:
    if len(x) != len(y):
        raise ValueError(f"y_{name} has {len(y)} rows and x_{name} {len(x)}; they must be row-aligned")


def _labels(
    x_train: np.ndarray, y_train: Any, x_test: np.ndarray, y_test: Any, multilabel: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    if multilabel:
        y_train, y_test, num_labels = _multi_hot_pair(y_train, y_test)
        _check_rows(x_train, y_train, "train")
        _check_rows(x_test, y_test, "test")
        return y_train, y_test, num_labels
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    for name, y in (("y_train", y_train), ("y_test", y_test)):
        if y.ndim != 1:
            raise ValueError(
                f"{name} must be one label per row (shape (n,)), got shape {y.shape}; "
                "label sets need a multilabel protocol"
            )
    _check_rows(x_train, y_train, "train")
    _check_rows(x_test, y_test, "test")
    classes = np.unique(y_train)
    if len(classes) < 2:
        raise ValueError(f"y_train holds a single class ({classes[0].item()!r}); a classifier needs at least two")
    return y_train, y_test, len(np.union1d(classes, y_test))


def _stopped_at_max_iter(estimator: BaseEstimator, *_: Any) -> float:
    """A scorer-shaped check: 1.0 when liblinear stopped at ``max_iter`` (when it warns), else 0.0."""
    return float(np.max(estimator.n_iter_) >= estimator.max_iter)


def _grid_search(svm: BaseEstimator, protocol: SupervisedProtocol, n_jobs: int, score: str) -> BaseEstimator:
    """``GridSearchCV`` over ``C``, choosing by ``score`` (the estimator's own ``score``) and counting unconverged
    folds."""
    if not protocol.cv:
        return svm
    return GridSearchCV(
        svm,
        param_grid={"C": list(protocol.c_grid)},
        cv=protocol.cv,
        n_jobs=n_jobs,
        scoring={score: score, "unconverged": _stopped_at_max_iter},
        refit=score,
    )


def _classifier(protocol: SupervisedProtocol, n_jobs: int) -> BaseEstimator:
    svm = LinearSVC(
        loss=protocol.loss, max_iter=protocol.max_iter, fit_intercept=protocol.fit_intercept, random_state=RANDOM_STATE
    )
    svm = _grid_search(svm, protocol, n_jobs, "accuracy")
    return OneVsRestClassifier(svm, n_jobs=1) if protocol.multilabel else svm


def _best_c(model: BaseEstimator) -> float | list[float | None]:
    """The ``C`` each fitted SVM used. Per label for one-vs-rest, ``None`` for a label constant in training."""
    if isinstance(model, OneVsRestClassifier):
        return [
            _best_c(estimator) if isinstance(estimator, (GridSearchCV, LinearSVC)) else None
            for estimator in model.estimators_
        ]
    if isinstance(model, GridSearchCV):
        return float(model.best_params_["C"])
    return float(model.C)


def _unconverged_fits(model: BaseEstimator) -> int:
    """Fits of a fitted model, grid-search folds included, that stopped at ``max_iter``."""
    if isinstance(model, OneVsRestClassifier):
        return sum(
            _unconverged_fits(estimator)
            for estimator in model.estimators_
            if isinstance(estimator, (GridSearchCV, LinearSVC))
        )
    if isinstance(model, GridSearchCV):
        # A fold whose fit failed scores NaN (error_score) and is not counted.
        folds = sum(np.nansum(model.cv_results_[f"split{k}_test_unconverged"]) for k in range(model.n_splits_))
        return int(folds) + _unconverged_fits(model.best_estimator_)
    return int(_stopped_at_max_iter(model))


def _log_unconverged(count: int, protocol: SupervisedProtocol) -> None:
    if count:
        logger.warning(
            "%d liblinear fit(s) stopped at max_iter=%d without converging; scores may move with more iterations",
            count,
            protocol.max_iter,
        )


def score_predictions(name: str, y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """A metric of predictions against the truth, on the scale the protocols report.

    Every metric but ``mse`` is multiplied by 100.

    Args:
        name: a classification metric (``f1_macro``, ``accuracy``, ...) or a regression one (``kendalltau``, ...).
        y_true: the labels or targets.
        y_pred: the predictions.
    """
    if name in REGRESSION_METRICS:
        if name == "kendalltau":
            value = kendalltau(y_true, y_pred).statistic
        elif name == "pearsonr":
            value = pearsonr(y_true, y_pred).statistic
        elif name == "mse":
            value = mean_squared_error(y_true, y_pred)
        else:
            value = r2_score(y_true, y_pred)
    else:
        base, _, average = name.partition("_")
        score = _CLASSIFICATION_SCORES[base]
        value = score(y_true, y_pred, average=average) if average else score(y_true, y_pred)
    return float(value if name in _UNSCALED else 100 * value)


def macro_f1_resamples(
    gold: list[Any], predicted: list[Any], weights: np.ndarray, *, num_labels: int | None = None
) -> np.ndarray:
    """Macro-F1 (x 100) of the same test papers, resampled.

    ``weights[b, i]`` is how often paper ``i`` is drawn in resample ``b``. Each resample is scored as
    ``sklearn.metrics.f1_score(average="macro")`` scores it, vectorised.

    Args:
        gold, predicted: one class per paper (single-label), or a list of label indices per paper (multi-label).
        weights: ``(resamples, papers)`` counts.
        num_labels: multi-label only: the label columns scored (scikit-learn averages over every column of the
            indicator matrix, one with neither a true nor a predicted label counting as 0).

    Single-label, the classes averaged over are those that occur in the resample's labels or predictions, as
    scikit-learn's are.
    """
    multilabel = num_labels is not None
    if multilabel:
        truth, guess = (np.zeros((len(gold), num_labels), dtype=bool) for _ in range(2))
        for row, (labels, guessed) in enumerate(zip(gold, predicted)):
            truth[row, labels], guess[row, guessed] = True, True
    else:
        classes = sorted(set(gold) | set(predicted), key=str)
        truth = np.array([[g == c for c in classes] for g in gold], dtype=bool)
        guess = np.array([[p == c for c in classes] for p in predicted], dtype=bool)
    weights = np.asarray(weights, dtype=float)
    true_positive = weights @ (truth & guess)
    denominator = 2 * true_positive + weights @ (~truth & guess) + weights @ (truth & ~guess)
    f1 = np.divide(2 * true_positive, denominator, out=np.zeros_like(denominator), where=denominator > 0)
    counted = np.ones_like(denominator, dtype=bool) if multilabel else denominator > 0
    return 100 * (f1 * counted).sum(axis=1) / counted.sum(axis=1)


def _fit_and_score(
    protocol: SupervisedProtocol,
    model: BaseEstimator,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
) -> tuple[dict[str, float], np.ndarray]:
    """The protocol's metrics of ``model`` fitted on the training rows, and its test predictions."""
    predictions = model.fit(x_train, y_train).predict(x_test)
    return {name: score_predictions(name, y_test, predictions) for name in protocol.metrics}, predictions


def _check_metrics(protocol: SupervisedProtocol, regression: bool) -> None:
    wrong = [m for m in protocol.metrics if (m in REGRESSION_METRICS) != regression]
    if wrong:
        kind = "classification" if regression else "regression"
        raise ValueError(f"{kind} metric(s) {wrong} in a {'regression' if regression else 'classification'} protocol")
    if regression and protocol.multilabel:
        raise ValueError("a regression protocol cannot be multilabel")


def evaluate_classification(
    x_train: np.ndarray,
    y_train: Any,
    x_test: np.ndarray,
    y_test: Any,
    protocol: SupervisedProtocol = SCIREPEVAL_CLASSIFICATION,
    *,
    n_jobs: int = -1,
    keep_predictions: bool = False,
) -> dict[str, Any]:
    """Fit a linear SVM on the training embeddings and score its test predictions.

    ``C`` is chosen by grid search.

    Args:
        x_train: ``(n_train, dim)`` training embeddings.
        y_train: one label per training row, or label sets (see :func:`multi_hot`) for a multi-label protocol.
        x_test: ``(n_test, dim)`` test embeddings.
        y_test: the test labels, in the form of ``y_train``.
        protocol: estimator, ``C`` grid and metrics (:data:`SCIDOCS_CLASSIFICATION`,
            :data:`SCIREPEVAL_CLASSIFICATION`, :data:`SCIREPEVAL_MULTILABEL`).
        n_jobs: parallel jobs of the grid search (-1: all cores).
        keep_predictions: also return the test labels and predictions as the scores saw them (``y_test`` and
            ``predictions``: class indices, or multi-hot rows for multi-label), for paired statistics over test papers.

    Returns:
        Each metric of the protocol x 100, plus ``best_C`` (a list, one per label, for multi-label,
        ``None`` for a label constant in training), ``num_train``, ``num_test``, ``num_labels``
        (classes in train and test together, or label columns) and ``unconverged_fits``.

    Raises:
        ValueError: misshapen or misaligned inputs, a single class in ``y_train``, bad label sets,
            or a regression metric in the protocol.
    """
    _check_metrics(protocol, regression=False)
    x_train, x_test = _check_features(x_train, x_test)
    y_train, y_test, num_labels = _labels(x_train, y_train, x_test, y_test, protocol.multilabel)
    model = _classifier(protocol, n_jobs)
    scores, predictions = _fit_and_score(protocol, model, x_train, y_train, x_test, y_test)
    unconverged = _unconverged_fits(model)
    _log_unconverged(unconverged, protocol)
    kept = {"y_test": y_test, "predictions": predictions} if keep_predictions else {}
    return {
        **scores,
        "best_C": _best_c(model),
        "num_train": len(x_train),
        "num_test": len(x_test),
        "num_labels": num_labels,
        "unconverged_fits": unconverged,
        **kept,
    }


def evaluate_regression(
    x_train: np.ndarray,
    y_train: Any,
    x_test: np.ndarray,
    y_test: Any,
    protocol: SupervisedProtocol = SCIREPEVAL_REGRESSION,
    *,
    n_jobs: int = -1,
    keep_predictions: bool = False,
) -> dict[str, Any]:
    """Fit ``LinearSVR(fit_intercept=False, random_state=42)`` (``C`` by grid search) and score its test predictions.

    Args:
        x_train: ``(n_train, dim)`` training embeddings.
        y_train: one numeric target per training row.
        x_test: ``(n_test, dim)`` test embeddings.
        y_test: one numeric target per test row.
        protocol: ``C`` grid, folds and metrics (:data:`SCIREPEVAL_REGRESSION`).
        n_jobs: parallel jobs of the grid search (-1: all cores).
        keep_predictions: also return the test targets and predictions (``y_test`` and ``predictions``), for paired
            statistics over test papers.

    Returns:
        ``kendalltau`` (tau-b) and ``pearsonr`` statistics and ``r2`` x 100, ``mse`` unscaled (those the
        protocol names, NaN where a correlation is undefined, e.g. constant predictions), plus
        ``best_C``, ``num_train``, ``num_test`` and ``unconverged_fits``.

    Raises:
        ValueError: misshapen, misaligned or non-numeric inputs, or a classification metric or
            ``multilabel`` in the protocol.
    """
    _check_metrics(protocol, regression=True)
    x_train, x_test = _check_features(x_train, x_test)
    targets = []
    for name, y, x in (("train", y_train, x_train), ("test", y_test, x_test)):
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"y_{name} must hold numbers: {error}") from None
        if y.ndim != 1:
            raise ValueError(f"y_{name} must be one target per row (shape (n,)), got shape {y.shape}")
        _check_rows(x, y, name)
        targets.append(y)
    svr = LinearSVR(max_iter=protocol.max_iter, fit_intercept=protocol.fit_intercept, random_state=RANDOM_STATE)
    model = _grid_search(svr, protocol, n_jobs, "r2")
    scores, predictions = _fit_and_score(protocol, model, x_train, targets[0], x_test, targets[1])
    unconverged = _unconverged_fits(model)
    _log_unconverged(unconverged, protocol)
    kept = {"y_test": targets[1], "predictions": predictions} if keep_predictions else {}
    return {
        **scores,
        "best_C": _best_c(model),
        "num_train": len(x_train),
        "num_test": len(x_test),
        "unconverged_fits": unconverged,
        **kept,
    }


def few_shot_subsets(y_train: Any, sample_size: int, iterations: int, *, multilabel: bool) -> list[np.ndarray]:
    """The training rows of each few-shot iteration, drawn as SciRepEval's ``FewShotEvaluator`` draws them.

    Multi-label: iteration ``k`` draws, label by label, ``sample_size`` of the label's positive rows
    without replacement from ``np.random.RandomState(42 + k)`` and trains on their union, in the
    iteration order of a Python set of the row numbers filled in drawing order (the reference's
    ``list(set)``, the order reaches the solver and the grid-search folds). Single-label: the
    *test* parts (about ``sample_size`` rows each) of ``StratifiedKFold(ceil(n / sample_size))``
    (unshuffled) over the training labels, in fold order, at most ``iterations`` of them (fewer when
    there are fewer folds).

    Args:
        y_train: training labels (label sets when ``multilabel``, see :func:`multi_hot`).
        sample_size: positives per label (multi-label) or rows per fold (single-label).
        iterations: the number of subsets wanted.
        multilabel: draw per label rather than by stratified folds.

    Returns:
        One array of training row numbers per iteration.

    Raises:
        ValueError: ``sample_size`` or ``iterations`` below 1, labels with fewer positives than
            ``sample_size`` (named), or fewer than ``2 * sample_size`` rows for single-label folds.
    """
    if sample_size < 1 or iterations < 1:
        raise ValueError(f"sample_size and iterations must be at least 1, got {sample_size} and {iterations}")
    if multilabel:
        matrix, _ = multi_hot(y_train)
        positives = [np.where(matrix[:, label] == 1)[0] for label in range(matrix.shape[1])]
        short = {label: len(rows) for label, rows in enumerate(positives) if len(rows) < sample_size}
        if short:
            listed = ", ".join(f"label {label} ({count})" for label, count in short.items())
            raise ValueError(
                f"few-shot sampling needs {sample_size} positive training rows per label; too few for {listed}"
            )
        subsets = []
        for k in range(iterations):
            generator = np.random.RandomState(RANDOM_STATE + k)
            chosen: set[int] = set()
            for rows in positives:
                chosen.update(generator.choice(rows, sample_size, replace=False).tolist())
            subsets.append(np.array(list(chosen), dtype=np.int64))
        return subsets
    y = np.asarray(y_train)
    folds = math.ceil(len(y) / sample_size)
    if folds < 2:
        raise ValueError(
            f"single-label few-shot needs more than sample_size={sample_size} training rows to make folds, got "
            f"{len(y)}"
        )
    splitter = StratifiedKFold(n_splits=folds)
    return [part for _, (_, part) in zip(range(iterations), splitter.split(np.zeros((len(y), 1)), y))]


def evaluate_few_shot(
    x_train: np.ndarray,
    y_train: Any,
    x_test: np.ndarray,
    y_test: Any,
    protocol: SupervisedProtocol,
    sample_size: int,
    iterations: int,
    *,
    n_jobs: int = -1,
) -> dict[str, Any]:
    """SciRepEval's few-shot classification: fit on small training subsets, average the test scores.

    Subsets come from :func:`few_shot_subsets`. Multi-label iterations fit the protocol's one-vs-rest
    grid search. Single-label ones fit the protocol's ``LinearSVC`` once with ``C=1.0`` and no grid
    search (SciRepEval's ``cv=0``).

    Args:
        x_train: ``(n_train, dim)`` embeddings of the pool the subsets are drawn from.
        y_train: the pool's labels (label sets for a multi-label protocol).
        x_test: ``(n_test, dim)`` test embeddings.
        y_test: the test labels.
        protocol: :data:`SCIREPEVAL_CLASSIFICATION` (with Biomimicry's ``f1``) or :data:`SCIREPEVAL_MULTILABEL`.
        sample_size: positives per label (multi-label) or rows per fold (single-label).
        iterations: subsets to fit (single-label: at most the number of folds).
        n_jobs: parallel jobs of the grid search (-1: all cores).

    Returns:
        Each metric's mean over the iterations (x 100), plus ``iterations`` (the number fitted),
        ``sample_size``, ``num_train`` (the pool), ``num_test``, ``num_labels``,
        ``unconverged_fits`` (summed over iterations) and ``per_fold`` (metric -> each iteration's value).

    Raises:
        ValueError: as :func:`evaluate_classification` and :func:`few_shot_subsets`, or a subset
            (fold) holding a single class, named by its iteration.
    """
    _check_metrics(protocol, regression=False)
    x_train, x_test = _check_features(x_train, x_test)
    y_train, y_test, num_labels = _labels(x_train, y_train, x_test, y_test, protocol.multilabel)
    fitted = protocol if protocol.multilabel else replace(protocol, cv=0)
    per_iteration: dict[str, list[float]] = {name: [] for name in protocol.metrics}
    unconverged = 0
    subsets = few_shot_subsets(y_train, sample_size, iterations, multilabel=protocol.multilabel)
    for k, rows in enumerate(subsets):
        if not protocol.multilabel and len(np.unique(y_train[rows])) < 2:
            only = y_train[rows][0].item()
            raise ValueError(
                f"few-shot iteration {k}: its fold of {len(rows)} training rows holds a single class ({only!r})"
            )
        model = _classifier(fitted, n_jobs)
        scores, _ = _fit_and_score(fitted, model, x_train[rows], y_train[rows], x_test, y_test)
        unconverged += _unconverged_fits(model)
        for name, value in scores.items():
            per_iteration[name].append(value)
    _log_unconverged(unconverged, protocol)
    return {
        **{name: float(np.mean(values)) for name, values in per_iteration.items()},
        "iterations": len(subsets),
        "sample_size": sample_size,
        "num_train": len(x_train),
        "num_test": len(x_test),
        "num_labels": num_labels,
        "unconverged_fits": unconverged,
        "per_fold": per_iteration,
    }
