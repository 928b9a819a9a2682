"""SciDocs recommendations: a ranker trained on frozen embeddings, scored by propensity-adjusted nDCG and P@1.

Reference protocol: Cohan et al. 2020 (SPECTER), sec. 4.4, implemented in allenai/scidocs by
``scidocs/recomm_click_eval.py`` (evaluation), ``scidocs/recommender/simclick_data_reader.py`` (features),
``scidocs/recommender/simclick_triplet_sampler.py`` (training pairs),
``scidocs/recommender/simpaper_recommender.py`` (model, loss) and
``experiment_configs/train_similar_papers_model.json`` (hyper-parameters).

Evaluation (``evaluate_ranking_performance``), reproduced exactly by :func:`click_metrics`: each test
line is one click. The clicked paper and every other shown paper are scored. ``above`` = the number of
other papers scored strictly higher, plus 0.5 per tie. A click's nDCG is ``1 / log2(2 + above)`` (one
relevant item, so the ideal DCG is 1) and its P@1 is 1 when ``above == 0`` (a tie at the top gives 0).
The propensities of ``propensity_scores.json`` are normalised to mean 1 (``p * len(p) / sum(p)``) and a
click at 1-based position ``k`` weighs ``1 / p_norm[k - 1]``. The reported adj-nDCG and adj-P@1 are the
weighted means (``sum(w * m) / sum(w)``), x100.

Ranker (SciDocs trains an AllenNLP model on the ``train`` clicks, keeps the epoch with the lowest
``val`` loss and scores ``test``). What :func:`evaluate_recommendations` keeps:

- inputs: the 11 numeric features of SciDocs' reader, in its order (:data:`FEATURE_NAMES`): Jaccard
  overlaps of authors, title tokens, ``cited_by`` and ``references``. Whether the candidate cites the
  query and the reverse. The candidate's oldness ``clip((2020 - year) / 20, -1, 1)``, the relative
  oldness ``clip((year_q - year_c) / 20, -1, 1)`` and ``log(1 + #cited_by) / 10``. The cosine of the two
  frozen embeddings (float32, as ``torch.nn.functional.cosine_similarity``). The display position,
  which SciDocs' reader overwrites with 0 before use, so it is a constant-zero input here as there. The
  metadata features come from the papers' ``authors``, ``references``, ``cited_by``, ``year`` and
  ``title`` fields and are 0 for papers without metadata, as in SciDocs. With a metadata file holding only
  titles and abstracts, only title overlap and the embedding cosine vary.
- model: the configured one (``encode_title: false``, ``project_query: false``): a feed-forward net
  11 -> 50 (ReLU, dropout 0.4) -> 1 (sigmoid), PyTorch's default initialisation.
- training pairs: for each click, (clicked, other) for the first ``max_negatives`` = 10 other shown papers
  in display order.
- loss: ``MarginRankingLoss(margin=0.1)`` on (clicked, other) scores, divided by a propensity and
  averaged over the batch. SciDocs divides by ``p_norm[round(10 * position - 1)]`` but the position it
  reads is the overwritten 0, so every pair is divided by the last normalised propensity. We do the
  same.
- optimisation: Adadelta (lr 1.0, rho 0.95, eps 1e-6), gradients clamped to [-5, 5] elementwise
  (AllenNLP's ``grad_clipping``), batches of 128 reshuffled every epoch, 5 epochs, patience 10. The
  weights of the epoch with the lowest validation loss (mean of the per-batch losses over the ``val``
  clicks' pairs, dropout off) are the ones scored. Seed 7, as SciDocs' config.

What differs, and may move numbers against the published ones (which SciDocs itself warns are not
reproducible across runs): title overlap tokenises with a regular expression (``\\w+`` or one
punctuation mark, case kept) instead of spaCy. A missing title gives an overlap of 0 (SciDocs substitutes
a ``<blank>`` token). A paper present in the metadata but lacking a field counts it as empty (SciDocs
raises a KeyError). Random streams differ from AllenNLP's (initialisation, shuffling, dropout), so runs
agree with SciDocs in distribution, not bit for bit. Every paper of the clicks must have a vector
(SciDocs silently uses a zero vector): filter rows first with
:func:`sciembed.data.scidocs_recomm.read_scidocs_recomm` and ``known_ids``.

:class:`RecommendationTask` wraps this for the evaluation runner (documents = the papers the clicks
name, read with :func:`~sciembed.data.scidocs_recomm.read_scidocs_recomm`).

Not in the stored copy of allenai/scidocs: the release's own ``recomm/train_similar_papers_model.json``
(``get_recomm_metrics`` runs that one, while the repository's ``experiment_configs`` copy, whose
hyper-parameters are used here, reads features from ``recomm/paper_metadata.json``) and the data files,
so whether ``paper_metadata_recomm.json`` carries ``authors`` / ``references`` / ``cited_by`` / ``year``
could not be checked. The features use them when present.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ..data.scidocs_recomm import Click, SciDocsRecomm, read_scidocs_recomm
from .tasks import Task, TaskScores

logger = logging.getLogger(__name__)

FEATURE_NAMES = (
    "author_match",
    "position",
    "title_match",
    "embedding_cosine",
    "citation_overlap",
    "reference_overlap",
    "candidate_cites_query",
    "query_cites_candidate",
    "oldness",
    "relative_oldness",
    "number_citations",
)
#: SciDocs' reference year for oldness (``simclick_data_reader.py``).
REFERENCE_YEAR = 2020.0
_TOKEN = re.compile(r"\w+|[^\w\s]")


def ranked_above(clicked_score: float, other_scores: Sequence[float]) -> float:
    """Other papers scored above the clicked one: strictly higher count 1, ties count 0.5."""
    others = np.asarray(other_scores, dtype=np.float64)
    return float(np.count_nonzero(others > clicked_score) + 0.5 * np.count_nonzero(others == clicked_score))


def click_ndcg(above: float) -> float:
    """nDCG of a ranking with one relevant item that has ``above`` items before it: ``1 / log2(2 + above)``."""
    return 1.0 / math.log2(2.0 + above)


def click_precision_at_1(above: float) -> float:
    """1.0 when nothing is ranked above the clicked paper, else 0.0.

    A tie counts as above.
    """
    return 1.0 if above == 0 else 0.0


def normalised_propensities(scores: Sequence[float]) -> np.ndarray:
    """Propensities rescaled to mean 1: ``p * len(p) / sum(p)``, as SciDocs does before weighting."""
    scores = np.asarray(scores, dtype=np.float64)
    return scores * len(scores) / scores.sum()


def click_metrics(
    clicked_scores: Sequence[float],
    other_scores: Sequence[Sequence[float]],
    clicked_positions: Sequence[int],
    propensity_scores: Sequence[float],
) -> dict[str, float | int]:
    """Propensity-adjusted and plain nDCG and P@1 over clicks, x100.

    Args:
        clicked_scores: the clicked paper's score, one per click.
        other_scores: the scores of the other shown papers of each click (may be empty).
        clicked_positions: 1-based display position of each click.
        propensity_scores: raw per-position propensities (``propensity_scores.json``).

    Returns:
        ``ndcg`` and ``P@1`` (propensity-adjusted: the published numbers), ``ndcg_unadjusted``,
        ``P@1_unadjusted``, and ``num_clicks``.

    Raises:
        ValueError: the inputs differ in length, there are no clicks, or a position is outside the
            propensity list (click index named).
    """
    n = len(clicked_scores)
    if not (n == len(other_scores) == len(clicked_positions)):
        raise ValueError(
            f"got {n} clicked scores, {len(other_scores)} lists of other scores and {len(clicked_positions)} positions"
        )
    if n == 0:
        raise ValueError("no clicks to evaluate")
    propensities = normalised_propensities(propensity_scores)
    ndcg = np.empty(n)
    precision = np.empty(n)
    weights = np.empty(n)
    for index, (clicked, others, position) in enumerate(zip(clicked_scores, other_scores, clicked_positions)):
        if not 1 <= position <= len(propensities):
            raise ValueError(
                f"click {index}: position {position} is outside the {len(propensities)} propensity position(s)"
            )
        above = ranked_above(clicked, others)
        ndcg[index] = click_ndcg(above)
        precision[index] = click_precision_at_1(above)
        weights[index] = 1.0 / propensities[position - 1]
    return {
        "ndcg": 100 * float(weights @ ndcg / weights.sum()),
        "P@1": 100 * float(weights @ precision / weights.sum()),
        "ndcg_unadjusted": 100 * float(ndcg.mean()),
        "P@1_unadjusted": 100 * float(precision.mean()),
        "num_clicks": n,
    }


class ClickRanker(nn.Module):
    """SciDocs' scorer: 11 features -> 50 (ReLU, dropout 0.4) -> 1 (sigmoid)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(len(FEATURE_NAMES), 50), nn.ReLU(), nn.Dropout(0.4), nn.Linear(50, 1), nn.Sigmoid()
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """``(batch, 11)`` features -> ``(batch,)`` scores in (0, 1)."""
        return self.layers(features).squeeze(-1)


def pair_features(
    pairs: Sequence[tuple[str, str]],
    vectors: Mapping[str, np.ndarray],
    papers: Mapping[str, Mapping[str, Any]],
) -> np.ndarray:
    """SciDocs' 11 ranking features of (query, candidate) pairs, columns in :data:`FEATURE_NAMES` order.

    Args:
        pairs: ``(query_id, candidate_id)`` pairs.
        vectors: paper id -> embedding. Every paper of ``pairs`` must have one.
        papers: paper id -> metadata record (``authors``, ``references``, ``cited_by``, ``year``,
            ``title``, all optional).

    Returns:
        a float32 ``(len(pairs), 11)`` array.

    Raises:
        ValueError: a paper without a vector, a non-finite vector, vectors of different sizes, or a
            metadata field that is not a list of ids or names (paper and field named).
    """
    # Training repeats each clicked pair once per negative: compute every distinct pair once.
    unique = list(dict.fromkeys(pairs))
    slot = {pair: index for index, pair in enumerate(unique)}
    ids = {paper for pair in unique for paper in pair}
    matrix, row = _vector_rows(vectors, ids)
    features = np.zeros((len(unique), len(FEATURE_NAMES)), dtype=np.float32)
    if not unique:
        return features
    queries = torch.from_numpy(matrix[[row[q] for q, _ in unique]])
    candidates = torch.from_numpy(matrix[[row[c] for _, c in unique]])
    features[:, FEATURE_NAMES.index("embedding_cosine")] = torch.nn.functional.cosine_similarity(
        queries, candidates, dim=1
    ).numpy()
    metadata = {paper: _Metadata.of(paper, papers[paper]) for paper in ids if paper in papers}
    for index, (query, candidate) in enumerate(unique):
        if query in metadata or candidate in metadata:
            features[index] = _metadata_features(
                metadata.get(query), metadata.get(candidate), query, candidate, features[index]
            )
    return features[[slot[pair] for pair in pairs]]


@dataclass(frozen=True)
class TrainingSummary:
    """How the ranker was trained: the epochs run and the epoch kept.

    It also holds the kept epoch's validation loss, and the pair counts.
    """

    epochs_run: int
    best_epoch: int
    best_val_loss: float
    train_pairs: int
    val_pairs: int


def train_ranker(
    train_clicks: Sequence[Click],
    val_clicks: Sequence[Click] | None,
    vectors: Mapping[str, np.ndarray],
    papers: Mapping[str, Mapping[str, Any]],
    propensity_scores: Sequence[float],
    *,
    seed: int = 7,
    epochs: int = 5,
    patience: int = 10,
    batch_size: int = 128,
    max_negatives: int = 10,
    margin: float = 0.1,
) -> tuple[ClickRanker, TrainingSummary]:
    """Train the ranker on ``train_clicks`` and keep the epoch with the lowest loss on ``val_clicks``.

    Training runs inside a forked torch RNG seeded with ``seed``, so it is deterministic and leaves the
    caller's random state alone.

    Args:
        train_clicks: the clicks trained on.
        val_clicks: the clicks whose loss selects the epoch and stops training. None trains every
            epoch and keeps the last (``best_val_loss`` is then NaN).
        vectors: paper id -> frozen embedding.
        papers: paper id -> metadata record (see :func:`pair_features`).
        propensity_scores: raw per-position propensities (they scale the loss, see the module docstring).
        seed: seeds initialisation, shuffling and dropout.
        epochs: the most epochs to train.
        patience: stop after this many epochs without a lower validation loss.
        batch_size: pairs per optimisation step.
        max_negatives: pairs per click (clicked against the first ``max_negatives`` others shown).
        margin: the margin of the ranking loss.

    Returns:
        the ranker (in eval mode, best epoch's weights) and a :class:`TrainingSummary`.

    Raises:
        ValueError: ``epochs`` < 1, no training or validation pairs (every click showed only the
            clicked paper), or see :func:`pair_features`.
    """
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    train = _pair_tensors(train_clicks, vectors, papers, max_negatives)
    val = _pair_tensors(val_clicks, vectors, papers, max_negatives) if val_clicks is not None else None
    for name, tensors in (("train", train), ("val", val)):
        if tensors is not None and tensors[0].shape[0] == 0:
            raise ValueError(f"no {name} pairs: the {name} clicks show no paper besides the clicked one")
    # SciDocs reads the propensity at an overwritten position 0, i.e. index -1: the last one.
    loss_scale = float(normalised_propensities(propensity_scores)[-1])

    def batch_loss(model: ClickRanker, clicked: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        losses = nn.functional.margin_ranking_loss(
            model(clicked), model(other), torch.ones(len(clicked)), margin=margin, reduction="none"
        )
        return (losses / loss_scale).mean()

    threads = torch.get_num_threads()
    # An 11x50 net trains fastest on one thread: more only add synchronisation (several-fold slower).
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model, (epochs_run, best_epoch, best_loss) = _fit(train, val, batch_loss, epochs, patience, batch_size)
    finally:
        torch.set_num_threads(threads)
    return model, TrainingSummary(
        epochs_run, best_epoch, best_loss, len(train[0]), len(val[0]) if val is not None else 0
    )


def score_clicks(
    model: ClickRanker,
    clicks: Sequence[Click],
    vectors: Mapping[str, np.ndarray],
    papers: Mapping[str, Mapping[str, Any]],
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Score every shown paper of every click.

    Returns:
        the clicked papers' scores and, per click, the scores of the other shown papers (every paper
        not equal to the clicked one, in display order, as SciDocs, nor to the query paper, never its own candidate).
    """
    pairs = [(click.query_id, paper) for click in clicks for paper in (click.clicked_id, *click.shown_ids)]
    with torch.no_grad():
        scores = model.eval()(torch.from_numpy(pair_features(pairs, vectors, papers))).numpy()
    clicked_scores = np.empty(len(clicks), dtype=np.float32)
    other_scores = []
    start = 0
    for index, click in enumerate(clicks):
        clicked_scores[index] = scores[start]
        shown = scores[start + 1 : start + 1 + len(click.shown_ids)]
        others = _others(click)
        other_scores.append(shown[np.array([paper in others for paper in click.shown_ids], dtype=bool)])
        start += 1 + len(click.shown_ids)
    return clicked_scores, other_scores


def evaluate_recommendations(
    data: SciDocsRecomm,
    vectors: Mapping[str, np.ndarray],
    *,
    seed: int = 7,
    split: str = "test",
    epochs: int = 5,
    patience: int = 10,
    batch_size: int = 128,
    max_negatives: int = 10,
) -> dict[str, float | int]:
    """SciDocs' recommendation task: train on ``train``, select the epoch on ``val``, score ``test``.

    Args:
        data: the task (:func:`sciembed.data.scidocs_recomm.read_scidocs_recomm`), with propensities.
        vectors: paper id -> frozen embedding, for every paper the clicks name.
        seed: seeds initialisation, shuffling and dropout (SciDocs uses 7).
        split: ``test`` (the published protocol) or ``val``, to tune without touching the test set:
            then, as SciDocs' ``val_or_test='val'``, training has no validation set, runs every epoch
            and keeps the last, and ``val`` is scored.
        epochs: training epochs (SciDocs: 5).
        patience: stop after this many epochs without a better validation loss (SciDocs: 10).
        batch_size: training batch size (SciDocs: 128).
        max_negatives: training pairs per click (SciDocs: 10).

    Returns:
        ``ndcg`` and ``P@1`` (propensity-adjusted, x100: the published numbers), ``ndcg_unadjusted``,
        ``P@1_unadjusted``. Counts ``num_clicks``, ``num_query_papers``, ``num_candidates`` (shown papers
        scored), ``num_train_clicks``, ``num_val_clicks``, ``num_train_pairs``, ``num_val_pairs``.
        ``self_clicks``, the clicks of a query paper on itself left out (a query paper is never its own
        candidate: nor is it ranked against a click when shown). The training summary ``epochs_run``,
        ``best_epoch``, ``best_val_loss``.

    Raises:
        ValueError: ``split`` is neither ``test`` nor ``val``, the propensities are missing, a needed
            split is absent or empty, or a paper has no vector (see :func:`pair_features`).
    """
    if split not in ("test", "val"):
        raise ValueError(f"split must be 'test' or 'val', got {split!r}")
    if data.propensity_scores is None:
        raise ValueError(f"{data.path}: recomm/propensity_scores.json is missing; the metrics are propensity-weighted")
    for needed in ("train", "val", split):
        if not data.clicks.get(needed):
            raise ValueError(f"{data.path}: the recommendation task needs {needed!r} clicks; found none")
    kept = {name: without_self_clicks(data.clicks[name]) for name in dict.fromkeys(("train", "val", split))}
    self_clicks = sum(count for _, count in kept.values())
    if self_clicks:
        logger.warning(
            "%s: left out %d click(s) of a query paper on itself: a query paper is never its own candidate",
            data.path,
            self_clicks,
        )
    model, summary = train_ranker(
        kept["train"][0],
        kept["val"][0] if split == "test" else None,
        vectors,
        data.papers,
        data.propensity_scores,
        seed=seed,
        epochs=epochs,
        patience=patience,
        batch_size=batch_size,
        max_negatives=max_negatives,
    )
    clicks = kept[split][0]
    clicked_scores, other_scores = score_clicks(model, clicks, vectors, data.papers)
    metrics = click_metrics(
        clicked_scores, other_scores, [click.clicked_position for click in clicks], data.propensity_scores
    )
    return {
        **metrics,
        "num_query_papers": len({click.query_id for click in clicks}),
        "num_candidates": sum(sum(paper != click.query_id for paper in click.shown_ids) for click in clicks),
        "num_train_clicks": len(kept["train"][0]),
        "num_val_clicks": len(kept["val"][0]),
        "self_clicks": self_clicks,
        "num_train_pairs": summary.train_pairs,
        "num_val_pairs": summary.val_pairs,
        "epochs_run": summary.epochs_run,
        "best_epoch": summary.best_epoch,
        "best_val_loss": summary.best_val_loss,
    }


@dataclass
class RecommendationTask(Task):
    """SciDocs' recommendation task for the runner: ``documents`` are the papers its clicks name.

    Attributes:
        data: the click logs, propensities and paper metadata.
        split: the clicks scored (``test``, or ``val`` for tuning, see :func:`evaluate_recommendations`).
        seed: the ranker's seed.
    """

    kind: ClassVar[str] = "recommendation"

    data: SciDocsRecomm = field(kw_only=True)
    split: str = field(default="test", kw_only=True)
    seed: int = field(default=7, kw_only=True)

    @classmethod
    def from_folder(
        cls,
        benchmark: str,
        name: str,
        folder: str | os.PathLike[str],
        *,
        split: str = "test",
        skip_invalid: bool = False,
        seed: int = 7,
        task_id: str = "",
    ) -> RecommendationTask:
        """Read the task from a SciDocs release folder (see :func:`read_scidocs_recomm`).

        Raises:
            ValueError: ``split`` is neither ``test`` nor ``val``, or a file the task needs (a click log
                it trains on or scores, ``propensity_scores.json``, ``paper_metadata_recomm.json``) is
                missing. Also what :func:`read_scidocs_recomm` raises.
        """
        if split not in ("test", "val"):
            raise ValueError(f"split must be 'test' or 'val', got {split!r}")
        data = read_scidocs_recomm(folder, skip_invalid=skip_invalid)
        needed = {"train", "val", split}
        absent = [
            f for f in data.missing if f.removeprefix("recomm/").removesuffix(".csv") in needed or f.endswith(".json")
        ]
        if absent:
            raise ValueError(f"{folder}: the recommendation task needs {', '.join(absent)}")
        used = {p for s in needed for c in data.clicks[s] for p in (c.query_id, *c.shown_ids)}
        documents = {paper: data.papers[paper] for paper in sorted(used)}
        return cls(benchmark, name, documents, data=data, split=split, seed=seed, task_id=task_id)

    def evaluate(
        self, documents: Mapping[str, np.ndarray], queries: Mapping[str, np.ndarray], *, n_jobs: int = -1
    ) -> TaskScores:
        """Train the ranker on the papers' vectors and score the clicks (``queries`` and ``n_jobs`` unused)."""
        scores = evaluate_recommendations(self.data, documents, seed=self.seed, split=self.split)
        unknown = sum(counter["unknown_papers"] for counter in self.data.stats.values())
        self_clicks = scores.pop("self_clicks")
        return self._result(
            {"ndcg": scores["ndcg"], "P@1": scores["P@1"]},
            counts={k: v for k, v in scores.items() if k.startswith("num_")},
            skipped=({"clicks_naming_unknown_papers": unknown} if unknown else {})
            | ({"self_judgements": self_clicks} if self_clicks else {}),
            details={k: v for k, v in scores.items() if k not in ("ndcg", "P@1") and not k.startswith("num_")}
            | {"seed": self.seed},
        )


def _fit(
    train: tuple[torch.Tensor, torch.Tensor],
    val: tuple[torch.Tensor, torch.Tensor] | None,
    batch_loss: Callable[[ClickRanker, torch.Tensor, torch.Tensor], torch.Tensor],
    epochs: int,
    patience: int,
    batch_size: int,
) -> tuple[ClickRanker, tuple[int, int, float]]:
    model = ClickRanker()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.95, eps=1e-6)
    best_loss, best_epoch, best_state, epochs_run = math.inf, 0, None, 0
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in torch.randperm(len(train[0])).split(batch_size):
            loss = batch_loss(model, train[0][batch], train[1][batch])
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), 5.0)
            optimizer.step()
        model.eval()
        epochs_run = epoch
        if val is None:
            best_loss, best_epoch, best_state = math.nan, epoch, model.state_dict()
            continue
        with torch.no_grad():
            # AllenNLP's validation loss: the mean of the per-batch mean losses, batches in order.
            val_loss = float(
                np.mean(
                    [
                        batch_loss(model, c, o).item()
                        for c, o in zip(val[0].split(batch_size), val[1].split(batch_size))
                    ]
                )
            )
        if val_loss < best_loss:
            best_loss, best_epoch = val_loss, epoch
            best_state = {key: value.clone() for key, value in model.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    model.load_state_dict(best_state)
    model.eval()
    return model, (epochs_run, best_epoch, best_loss)


def _pair_tensors(
    clicks: Sequence[Click],
    vectors: Mapping[str, np.ndarray],
    papers: Mapping[str, Mapping[str, Any]],
    max_negatives: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    # The triplet sampler's pairs: the clicked paper against the first max_negatives others shown.
    clicked_pairs, other_pairs = [], []
    for click in clicks:
        ranked_against = _others(click)
        others = [paper for paper in click.shown_ids if paper in ranked_against][:max_negatives]
        clicked_pairs.extend((click.query_id, click.clicked_id) for _ in others)
        other_pairs.extend((click.query_id, paper) for paper in others)
    features = pair_features(clicked_pairs + other_pairs, vectors, papers)
    return torch.from_numpy(features[: len(clicked_pairs)]), torch.from_numpy(features[len(clicked_pairs) :])


def _others(click: Click) -> set[str]:
    """The shown papers a click's clicked paper is ranked against.

    They are all the shown papers but the clicked one and the query paper.
    """
    return set(click.shown_ids) - {click.clicked_id, click.query_id}


def without_self_clicks(clicks: Sequence[Click]) -> tuple[list[Click], int]:
    """``clicks`` without a query paper's clicks on itself, and how many there were.

    A query paper is never its own candidate.

    Args:
        clicks: the clicks of one split.
    """
    kept = [click for click in clicks if click.clicked_id != click.query_id]
    return kept, len(clicks) - len(kept)


def _vector_rows(vectors: Mapping[str, np.ndarray], needed: set[str]) -> tuple[np.ndarray, dict[str, int]]:
    absent = sorted(paper for paper in needed if paper not in vectors)
    if absent:
        raise ValueError(
            f"{len(absent)} paper(s) named by the clicks have no vector, e.g. {absent[:5]}; drop their rows "
            "with read_scidocs_recomm(..., known_ids=<ids with vectors>, skip_invalid=True)"
        )
    order = sorted(needed)
    rows = [np.asarray(vectors[paper], dtype=np.float32) for paper in order]
    sizes = {row.shape for row in rows}
    if len(sizes) > 1 or any(len(size) != 1 for size in sizes):
        raise ValueError(f"vectors must all be 1-D of one size, got shapes {sorted(sizes)}")
    matrix = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
    if bad.size:
        # A NaN score compares false with everything, which would rank the click first.
        raise ValueError(f"the vector of paper {order[bad[0]]!r} is not finite ({bad.size} such paper(s))")
    return matrix, {paper: index for index, paper in enumerate(order)}


@dataclass(frozen=True)
class _Metadata:
    authors: frozenset
    references: frozenset
    cited_by: frozenset
    title: frozenset
    year: float | None

    @classmethod
    def of(cls, paper_id: str, record: Mapping[str, Any]) -> _Metadata:
        lists = {}
        for name in ("authors", "references", "cited_by"):
            value = record.get(name) or ()
            try:
                if not isinstance(value, (list, tuple, set, frozenset)):
                    raise TypeError
                lists[name] = frozenset(value)
            except TypeError:
                raise ValueError(
                    f"paper {paper_id!r}: {name} must be a list of ids or names, got {str(value)[:60]!r}"
                ) from None
        title = record.get("title")
        try:
            year = float(record.get("year")) if record.get("year") is not None else None
        except (TypeError, ValueError):
            year = None
        return cls(
            lists["authors"],
            lists["references"],
            lists["cited_by"],
            frozenset(_TOKEN.findall(title)) if isinstance(title, str) else frozenset(),
            year,
        )


def _jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _cites(source_id: str, source: _Metadata | None, candidate_id: str, candidate: _Metadata | None) -> float:
    # SciDocs' candidate_cites_source: either the source's cited_by or the candidate's references say so.
    return float(
        (source is not None and candidate_id in source.cited_by)
        or (candidate is not None and source_id in candidate.references)
    )


def _metadata_features(
    query: _Metadata | None, candidate: _Metadata | None, query_id: str, candidate_id: str, row: np.ndarray
) -> np.ndarray:
    values = dict(zip(FEATURE_NAMES, row.tolist()))
    values["candidate_cites_query"] = _cites(query_id, query, candidate_id, candidate)
    values["query_cites_candidate"] = _cites(candidate_id, candidate, query_id, query)
    if candidate is not None:
        values["number_citations"] = math.log(len(candidate.cited_by) + 1) / 10
        if candidate.year is not None:
            values["oldness"] = max(-1.0, min(1.0, (REFERENCE_YEAR - candidate.year) / 20))
    if query is not None and candidate is not None:
        values["author_match"] = _jaccard(query.authors, candidate.authors)
        values["title_match"] = _jaccard(query.title, candidate.title)
        values["citation_overlap"] = _jaccard(query.cited_by, candidate.cited_by)
        values["reference_overlap"] = _jaccard(query.references, candidate.references)
        if query.year is not None and candidate.year is not None:
            values["relative_oldness"] = max(-1.0, min(1.0, (query.year - candidate.year) / 20))
    return np.array([values[name] for name in FEATURE_NAMES], dtype=np.float32)
