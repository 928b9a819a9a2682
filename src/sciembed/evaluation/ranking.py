"""Ranking evaluators: proximity (paper-as-query), ad-hoc search, BEIR full-corpus search, reviewer matching.

Reference protocols, matched on the same inputs (see ``tests/test_eval_ranking.py``):

- **Measures** (:func:`ranking_measures`): a task's own measures, then MAP, nDCG, R-precision and nDCG@k, P@k and
  recall@k (:data:`CUTOFFS`). nDCG's gain is the relevance grade (linear), the binary measures count a grade of
  ``relevance_level`` or more as relevant (:func:`measure_definitions` states it in the results).
- **Metrics** (:func:`ranking_metrics`): ``pytrec_eval.RelevanceEvaluator`` then
  ``pytrec_eval.compute_aggregated_measure`` over ``results.values()``, times 100, as
  allenai/scidocs ``scidocs/user_activity_and_citations.py::get_qrel_metrics`` and allenai/scirepeval
  ``evaluation/evaluator.py::IREvaluator.calc_metrics`` do. Difference: values are not rounded (both
  references round to 2 decimals, the table rounds).
- **Proximity** (:func:`proximity_run`): each query's judged candidates scored by minus the Euclidean
  distance, as allenai/scidocs ``make_run_from_embeddings`` and allenai/scirepeval
  ``IREvaluator.retrieval``. SciDocs writes its run file with scores rounded by ``np.round(x, 5)``
  before pytrec_eval reads it back. ``score_decimals=5`` gives the same floats. Rounding matters:
  trec_eval breaks score ties by document id, *descending* (``strcmp(docno2, docno1)`` in
  ``form_res_rels.c::comp_sim_docno``), so candidates that tie after rounding are re-ordered.
  Distances are computed in float64 as ``sqrt((q - c) . (q - c))``, the operation SciDocs'
  ``np.linalg.norm`` performs on its float64 vectors. SciRepEval's ``euclidean_distances`` works in
  the input precision (float32 for freshly computed embeddings, float16 when loaded from its jsonl),
  so it can tie or swap candidates closer than that precision. We do not reproduce that. The evaluation tasks
  (:mod:`.tasks`) never rank a query paper as its own candidate (SciDocs' queries never are): a judgement of it to
  itself is left out of the run and of the qrels scored (:func:`without_self_judgements`).
- **Ad-hoc search**, judged candidates only (:func:`search_run` with ``qrels``): SciRepEval scores
  search queries like proximity queries (``IREvaluator.retrieval``: ``similarity="l2"``), query
  vectors coming from the query encoder. Difference: query and paper ids live in separate mappings
  (SciRepEval keeps one dict, so a query id equal to a paper id shares its vector).
- **BEIR** (:func:`search_run` without ``qrels``): beir-cellar/beir
  ``beir/retrieval/search/dense/exact_search.py::DenseRetrievalExactSearch.search``: cosine (or dot)
  scores over the whole corpus (BEIR: float32 in torch, here a float32 prefilter and float64 scores for the
  papers it keeps, so that near-equal scores do not swap with the summation order of a float32 product,
  and the corpus is never copied to float64 whole), NaN scores set to -1, the ``top_k`` best (BEIR default 1000)
  kept per query, a document whose id equals the query id dropped (also what
  ``EvaluateRetrieval.evaluate(ignore_identical_ids=True)`` does). Among equal scores at the cut, BEIR's
  ``(score, id)`` heap keeps the larger ids, as we do (and as trec_eval ranks them). BEIR's per-chunk
  ``torch.topk`` may drop some of such ties first, we never do. Older BEIR versions (no heap) kept
  ``top_k + 1`` papers per corpus chunk instead of ``top_k`` in all. BEIR's
  reported ``NDCG@k`` / ``Recall@k`` are pytrec_eval's ``ndcg_cut.k`` / ``recall.k`` (its own
  ``recall_cap`` is a different, capped measure, reported only through ``evaluate_custom``), so
  ``ranking_metrics(qrels, run, ["ndcg_cut_10", "recall_100"])`` is BEIR's number, unrounded (BEIR
  rounds to 5 decimals).
- **Reviewer matching** (:func:`reviewer_run`, :func:`reviewer_matching_metrics`): allenai/scirepeval
  ``reviewer_matching.py::ReviewerMatchingEvaluator``: a reviewer's score for a paper is the mean of
  the top-3 cosine similarities between the paper and the reviewer's papers. The run is built from
  the ``test_hard`` qrels and evaluated (P_5, P_10) against both ``test_hard`` and ``test_soft``.
  Differences: cosines are computed in float64 (the reference works in its vectors' precision), and a
  reviewer with an empty paper list is skipped and counted (the reference fails on it).

Missing vectors raise :class:`MissingVectorsError` unless ``skip_missing=True``, which skips them as
SciDocs and SciRepEval's ``IREvaluator`` do (a query without a vector is left out entirely, a candidate
without one is not scored) and counts what was skipped in the returned :class:`ScoredRun`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import pytrec_eval

from ..choices import StrChoice, choices
from ..data.knn import unit_rows

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
Vectors = Mapping[str, np.ndarray]


class RankingSimilarity(StrChoice):
    """How a candidate's vector is scored against its query's, higher meaning closer."""

    L2 = "l2"
    COSINE = "cosine"
    DOT = "dot"
    MIN_FACET_L2 = "min_facet_l2"


SIMILARITIES = choices(RankingSimilarity)
FULL_CORPUS_SIMILARITIES = (RankingSimilarity.COSINE.value, RankingSimilarity.DOT.value)
#: BEIR's ``EvaluateRetrieval`` default: the largest of its k values (1, 3, 5, 10, 100, 1000).
BEIR_TOP_K = 1000
REVIEWER_MEASURES = ("P_5", "P_10")
#: Rank cut-offs of the nDCG@k, P@k and recall@k that every ranking result reports.
CUTOFFS = (5, 10, 20, 100)
#: Candidate blocks for ``min_facet_l2`` keep the (candidates, K, K, d) difference array near this size.
_FACET_BLOCK_BYTES = 32 * 2**20
_SHOWN_IDS = 5


class MissingVectorsError(KeyError, ValueError):
    """Ids that need a vector have none. ``missing`` lists them all, in order of first need."""

    def __init__(self, what: str, missing: Sequence[str]):
        self.missing = list(missing)
        shown = ", ".join(repr(i) for i in self.missing[:_SHOWN_IDS])
        more = f" (and {len(self.missing) - _SHOWN_IDS} more)" if len(self.missing) > _SHOWN_IDS else ""
        super().__init__(
            f"{len(self.missing)} {what} id(s) have no vector: {shown}{more}; "
            "pass skip_missing=True to skip them as SciDocs / SciRepEval do"
        )

    def __str__(self) -> str:
        # KeyError would print the message with quotes around it.
        return str(self.args[0])


@dataclass
class RankingResult:
    """Ranking metrics of a run against qrels.

    Attributes:
        mean: measure (as asked) -> aggregate over the evaluated queries, x 100 (``num_*`` measures are
            counts: summed, not scaled).
        per_query: query -> measure (as asked) -> pytrec_eval's value (0-1).
        num_queries: queries evaluated: judged in the qrels and present in the run.
        num_candidates: scored (query, candidate) pairs of the evaluated queries.
        unevaluated_queries: qrels queries left out (absent from the run, or with no judgement).
    """

    mean: dict[str, float]
    per_query: dict[str, dict[str, float]]
    num_queries: int
    num_candidates: int
    unevaluated_queries: int


@dataclass
class ScoredRun:
    """A run built from vectors, with what was skipped to build it.

    Attributes:
        run: query id -> candidate id -> score (higher = more relevant).
        skipped_queries: qrels queries left out of the run: no query vector, or (except in reviewer
            matching, which keeps them empty) no candidate scored.
        skipped_candidates: (query, candidate) pairs not scored for want of a vector (for reviewer
            matching: reviewers none of whose papers has a vector).
        unknown_candidates: reviewer matching only: (paper, reviewer) pairs of the qrels whose reviewer
            has no papers in ``reviewer_papers``. Skipped, as the reference does.
        missing_ids: the distinct ids without a vector, in order of first need.
    """

    run: Run
    skipped_queries: int = 0
    skipped_candidates: int = 0
    unknown_candidates: int = 0
    missing_ids: list[str] = field(default_factory=list)

    @property
    def num_queries(self) -> int:
        """Queries in the run."""
        return len(self.run)

    @property
    def num_candidates(self) -> int:
        """Scored (query, candidate) pairs."""
        return sum(len(scores) for scores in self.run.values())


@dataclass
class ReviewerMatchingResult:
    """SciRepEval's Paper-Reviewer Matching numbers.

    Attributes:
        metrics: ``hard_P_5``, ``hard_P_10``, ``soft_P_5``, ``soft_P_10`` (x 100) and ``average``, their mean.
        hard: metrics against the ``test_hard`` qrels, with counts.
        soft: metrics against the ``test_soft`` qrels, with counts.
        scored: the run (built from the hard qrels) and what was skipped.
    """

    metrics: dict[str, float]
    hard: RankingResult
    soft: RankingResult
    scored: ScoredRun


def ranking_metrics(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Iterable[str],
    *,
    relevance_level: int = 1,
) -> RankingResult:
    """Evaluate a run with pytrec_eval and aggregate like SciDocs / SciRepEval (unrounded, x 100).

    pytrec_eval evaluates the queries that are both judged in ``qrels`` and present in ``run``, each
    over the candidates the run scores for it (ties in score are ranked by candidate id, descending).
    A judged query with no relevant candidate is still evaluated and scores 0 on every measure, which
    pulls the mean down (SciDocs and SciRepEval keep it too). A qrels query absent from the run is not
    evaluated and does not count in the mean (counted in ``unevaluated_queries``). One present with an
    empty candidate dict is evaluated (scores 0). Run queries without judgements are ignored.

    Args:
        qrels: query id -> candidate id -> integer relevance (graded allowed).
        run: query id -> candidate id -> score, higher = more relevant.
        measures: pytrec_eval measure names, each naming one value: ``map``, ``ndcg``, ``ndcg_cut_10``,
            ``recall_100``, ``P_5``, ``recip_rank`` and so on. The dotted spelling (``ndcg_cut.10``, as BEIR
            writes it) is accepted and reported under the name given.
        relevance_level: the lowest relevance counted as relevant by binary measures (map, P, recall).

    Returns:
        The means (x 100), per-query values and counts.

    Raises:
        ValueError: an unknown measure or one naming several values (``P``, ``official``). A
            non-integer relevance or a non-numeric / NaN score (naming the query and candidate). No
            query both judged and in the run.
    """
    measures = list(measures)
    if not measures:
        raise ValueError("no measures asked for")
    keys = {measure: _measure_key(measure) for measure in measures}
    clean_qrels = _checked_qrels(qrels)
    clean_run = _checked_run(run)
    evaluator = pytrec_eval.RelevanceEvaluator(clean_qrels, set(measures), relevance_level=relevance_level)
    results = evaluator.evaluate(clean_run)
    if not results:
        raise ValueError(
            f"no query is both judged in the qrels ({len(clean_qrels)} queries) and present in the run "
            f"({len(clean_run)} queries); are the ids the same strings?"
        )
    absent = [measure for measure, key in keys.items() if key not in next(iter(results.values()))]
    if absent:
        raise ValueError(
            f"pytrec_eval gave no value for {absent} when asked for {measures} together; ask for them separately"
        )
    mean = {}
    for measure, key in keys.items():
        value = pytrec_eval.compute_aggregated_measure(key, [values[key] for values in results.values()])
        mean[measure] = value if key.startswith("num_") else 100 * value
    per_query = {query: {measure: values[key] for measure, key in keys.items()} for query, values in results.items()}
    return RankingResult(
        mean=mean,
        per_query=per_query,
        num_queries=len(results),
        num_candidates=sum(len(clean_run[query]) for query in results),
        unevaluated_queries=sum(query not in results for query in clean_qrels),
    )


def ranking_measures(headline: Iterable[str] = (), cutoffs: Iterable[int] = CUTOFFS) -> tuple[str, ...]:
    """A ranking result's measures: its headline ones, then MAP, nDCG, R-precision, nDCG@k, P@k and recall@k.

    A measure of the standard set that names the same pytrec_eval value as a headline one (``ndcg_cut.10`` and
    ``ndcg_cut_10``) is left out.

    Args:
        headline: the benchmark's own measures, first and as named.
        cutoffs: the ranks k of nDCG@k, P@k and recall@k.

    Raises:
        ValueError: a cut-off that is not a positive integer, or an unknown headline measure.
    """
    cutoffs = tuple(cutoffs)
    bad = [k for k in cutoffs if isinstance(k, bool) or not isinstance(k, Integral) or k < 1]
    if bad:
        raise ValueError(
            f"rank cut-offs must be positive integers, got {bad}: give ranks such as --cutoffs 5 10 20 100 "
            "(cutoffs=[5, 10, 20, 100])"
        )
    ranks = sorted(set(cutoffs))
    standard = ("map", "ndcg", "Rprec", *(f"{m}_{k}" for m in ("ndcg_cut", "P", "recall") for k in ranks))
    headline = tuple(headline)
    taken = {_measure_key(measure) for measure in headline}
    return headline + tuple(m for m in standard if _measure_key(m) not in taken)


def measure_definitions(relevance_level: int = 1, cutoffs: Iterable[int] = CUTOFFS) -> dict[str, Any]:
    """How the ranking measures are computed, as a results JSON states it.

    Args:
        relevance_level: the lowest grade that the binary measures count as relevant.
        cutoffs: the ranks k of nDCG@k, P@k and recall@k.
    """
    return {
        "implementation": f"pytrec_eval (trec_eval) {_pytrec_eval_version()}",
        "cutoffs": sorted(set(cutoffs)),
        "ndcg_gain": "linear: a candidate's gain is its relevance grade (negative grades count as 0)",
        "ndcg_discount": "log2(rank + 1)",
        "relevance_level": relevance_level,
        "binary_measures": f"map, Rprec, P_k and recall_k count a candidate as relevant when its grade is >= "
        f"{relevance_level}",
        "ties": "equal scores are ranked by candidate id, descending (trec_eval)",
        "scale": "0-100, per query and as the mean over queries",
    }


@functools.cache
def _pytrec_eval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("pytrec-eval-terrier", "pytrec_eval"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "unknown"


def proximity_run(
    qrels: Mapping[str, Mapping[str, int]],
    vectors: Vectors,
    *,
    similarity: str = "l2",
    score_decimals: int | None = None,
    skip_missing: bool = False,
) -> ScoredRun:
    """Score each qrels query's judged candidates by the similarity of their vectors to the query's.

    Every judged candidate is scored, as the references do. The evaluation tasks first leave out a query paper's
    judgement of itself with :func:`without_self_judgements`.

    Args:
        qrels: query id -> candidate id -> relevance. Query and candidates are papers of ``vectors``.
        vectors: paper id -> vector ``(d,)``, or facet matrix ``(K, d)`` for ``min_facet_l2``.
        similarity: ``"l2"`` (minus the Euclidean distance: SciDocs, SciRepEval), ``"cosine"``,
            ``"dot"``, or ``"min_facet_l2"`` (minus the smallest distance between a query facet and a
            candidate facet: the Multi2SPE ablation).
        score_decimals: round scores with ``np.round`` to this many decimals. 5 reproduces the scores
            SciDocs writes to its run file (and so its tie breaking).
        skip_missing: skip queries and candidates without a vector (and count them) instead of raising.

    Returns:
        The run (queries and candidates in qrels order) and what was skipped.

    Raises:
        MissingVectorsError: ids without a vector, unless ``skip_missing``.
        ValueError: an unknown similarity, or vectors of the wrong shape (naming the paper).
    """
    return _judged_run(qrels, vectors, vectors, similarity, score_decimals, skip_missing)


def without_self_judgements(
    qrels: Mapping[str, Mapping[str, int]], query_papers: Mapping[str, str] | None = None
) -> tuple[Qrels, int]:
    """``qrels`` without the judgements of a query paper to itself, and how many there were.

    A query paper is never its own candidate (SciDocs' protocol), so such a judgement is neither ranked nor scored.
    A query left with no
    judgement is left out.

    Args:
        qrels: query paper id -> candidate paper id -> relevance.
        query_papers: query id -> the paper the query is, where query ids are not paper ids (a facet of a paper).
            Queries it does not name are no paper. Without it every query id is its paper's.
    """
    kept: Qrels = {}
    dropped = 0
    for query, judged in qrels.items():
        own = query if query_papers is None else query_papers.get(query)
        row = {candidate: relevance for candidate, relevance in judged.items() if candidate != own}
        dropped += len(judged) - len(row)
        if row or not judged:
            kept[query] = row
    return kept, dropped


def search_run(
    query_vectors: Vectors,
    candidate_vectors: Vectors,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    *,
    similarity: str = "cosine",
    top_k: int | None = None,
    exclude_identical_ids: bool = True,
    skip_missing: bool = False,
    query_chunk_size: int = 128,
    corpus_chunk_size: int = 50_000,
    query_papers: Mapping[str, str] | None = None,
) -> ScoredRun:
    """Score search queries against papers: judged candidates only (SciRepEval) or the whole corpus (BEIR).

    With ``qrels``, each qrels query's judged candidates are scored, like :func:`proximity_run` but with
    query vectors from their own mapping (SciRepEval's ad-hoc search uses ``similarity="l2"``). ``top_k``,
    if given, keeps each query's best. Without ``qrels``, every query of ``query_vectors`` ranks every
    paper of ``candidate_vectors`` (cosine or dot) and keeps the ``top_k`` best (default 1000), larger id
    first among equal scores: float32 scores for ``query_chunk_size`` queries x ``corpus_chunk_size``
    papers at a time pick the papers that can reach the top, whose scores are then computed in float64.
    Memory: the corpus in its own precision (float32 stays float32), one float32 score block, the kept papers.

    Args:
        query_vectors: query id -> vector ``(d,)``.
        candidate_vectors: paper id -> vector ``(d,)``.
        qrels: query id -> candidate id -> relevance, to score judged candidates only.
        similarity: ``"cosine"`` or ``"dot"``. With ``qrels`` also ``"l2"`` and ``"min_facet_l2"``.
        top_k: candidates kept per query. None keeps all judged ones, or BEIR's 1000 on the whole corpus.
        exclude_identical_ids: whole corpus only: never return a paper whose id is the query id (BEIR).
        skip_missing: with ``qrels``: skip queries and candidates without a vector instead of raising.
        query_chunk_size: whole corpus only: queries scored together.
        corpus_chunk_size: whole corpus only: papers scored together (BEIR's default 50,000).
        query_papers: whole corpus only: query id -> the paper the query is (a facet of a paper), never returned for
            it. A query it does not name is dropped from its own id as ``exclude_identical_ids`` says.

    Returns:
        The run and what was skipped.

    Raises:
        MissingVectorsError: with ``qrels``, ids without a vector, unless ``skip_missing``.
        ValueError: an unknown similarity, a non-positive ``top_k`` or chunk size, empty mappings, or
            vectors of the wrong shape (naming the id).
    """
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be positive, got {top_k}")
    if qrels is not None:
        scored = _judged_run(qrels, query_vectors, candidate_vectors, similarity, None, skip_missing)
        if top_k is not None:
            scored.run = {query: _best(scores, top_k) for query, scores in scored.run.items()}
        return scored
    if similarity not in FULL_CORPUS_SIMILARITIES:
        raise ValueError(
            f"similarity {similarity!r} is not available over the whole corpus; use one of {FULL_CORPUS_SIMILARITIES}"
        )
    if query_chunk_size < 1 or corpus_chunk_size < 1:
        raise ValueError(
            f"chunk sizes must be positive, got {query_chunk_size} queries and {corpus_chunk_size} papers"
        )
    return ScoredRun(
        _full_corpus_run(
            query_vectors,
            candidate_vectors,
            similarity,
            BEIR_TOP_K if top_k is None else top_k,
            exclude_identical_ids,
            query_chunk_size,
            corpus_chunk_size,
            query_papers or {},
        )
    )


def reviewer_run(
    paper_vectors: Vectors,
    reviewer_papers: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    vectors: Vectors | None = None,
    *,
    top_k: int = 3,
    skip_missing: bool = False,
) -> ScoredRun:
    """Score reviewers for submitted papers: mean of the ``top_k`` best cosines to the reviewer's papers.

    A reviewer with fewer than ``top_k`` papers gets the mean of what there is. Candidates of the qrels
    with no papers in ``reviewer_papers`` are skipped and counted in ``unknown_candidates``. A submitted
    paper left with no reviewer to score stays in the run with no candidates, as in the reference, so
    pytrec_eval evaluates it (scores 0).

    Args:
        paper_vectors: submitted paper (qrels query) id -> vector ``(d,)``.
        reviewer_papers: reviewer id -> ids of the reviewer's papers.
        qrels: submitted paper id -> reviewer id -> relevance.
        vectors: reviewer paper id -> vector ``(d,)``. None looks them up in ``paper_vectors`` (SciRepEval
            embeds both kinds of paper into one mapping).
        top_k: best similarities averaged per reviewer (SciRepEval: 3).
        skip_missing: skip submitted papers and reviewer papers without a vector (a reviewer none of
            whose papers has one is skipped) instead of raising.

    Returns:
        The run and what was skipped.

    Raises:
        MissingVectorsError: ids without a vector, unless ``skip_missing``.
        ValueError: a non-positive ``top_k``, or vectors of the wrong shape (naming the paper).
    """
    if top_k < 1:
        raise ValueError(f"top_k must be positive, got {top_k}")
    vectors = paper_vectors if vectors is None else vectors
    reviewers = {query: [r for r in candidates if reviewer_papers.get(r)] for query, candidates in qrels.items()}
    unknown = sum(len(qrels[query]) - len(known) for query, known in reviewers.items())
    missing_queries = [query for query in qrels if query not in paper_vectors]
    needed = dict.fromkeys(p for known in reviewers.values() for r in known for p in reviewer_papers[r])
    missing_papers = [paper for paper in needed if paper not in vectors]
    missing = list(dict.fromkeys(missing_queries + missing_papers))
    if missing and not skip_missing:
        raise MissingVectorsError("paper", missing)
    present = [paper for paper in needed if paper in vectors]
    row_of = {paper: row for row, paper in enumerate(present)}
    unit_papers = unit_rows(_stack(present, vectors, ndim=1)) if present else np.zeros((0, 0))

    run: Run = {}
    skipped_queries = skipped_candidates = 0
    for query, known in reviewers.items():
        if query not in paper_vectors:
            skipped_queries += 1
            continue
        rows = [[row_of[p] for p in reviewer_papers[r] if p in row_of] for r in known]
        scored = [r for r, paper_rows in zip(known, rows) if paper_rows]
        skipped_candidates += len(known) - len(scored)
        if not scored:
            # The reference keeps such a paper with no candidates: pytrec_eval scores it 0.
            run[query] = {}
            continue
        rows = [paper_rows for paper_rows in rows if paper_rows]
        query_vector = _as_vector(query, paper_vectors[query], ndim=1)
        if query_vector.shape[0] != unit_papers.shape[1]:
            raise ValueError(
                f"paper {query!r} has dimension {query_vector.shape[0]}, reviewer papers {unit_papers.shape[1]}"
            )
        cosines = unit_papers @ unit_rows(query_vector[None, :])[0]
        run[query] = dict(zip(scored, _top_mean(cosines, rows, top_k).tolist()))
    return ScoredRun(run, skipped_queries, skipped_candidates, unknown, missing)


def reviewer_matching_metrics(
    paper_vectors: Vectors,
    reviewer_papers: Mapping[str, Sequence[str]],
    hard_qrels: Mapping[str, Mapping[str, int]],
    soft_qrels: Mapping[str, Mapping[str, int]],
    vectors: Vectors | None = None,
    *,
    top_k: int = 3,
    skip_missing: bool = False,
) -> ReviewerMatchingResult:
    """SciRepEval's Paper-Reviewer Matching: P_5 and P_10 on the hard and soft qrels, and their mean.

    As the reference, the run is built from the hard qrels' (paper, reviewer) pairs and evaluated
    against both splits. Soft judgements of reviewers that the hard qrels do not list for a paper are
    therefore never retrieved.

    Args:
        paper_vectors: submitted paper id -> vector ``(d,)``.
        reviewer_papers: reviewer id -> ids of the reviewer's papers.
        hard_qrels: the ``test_hard`` split: paper id -> reviewer id -> relevance.
        soft_qrels: the ``test_soft`` split.
        vectors: reviewer paper id -> vector. None looks them up in ``paper_vectors``.
        top_k: best similarities averaged per reviewer.
        skip_missing: skip papers without a vector instead of raising.

    Returns:
        ``hard_P_5``, ``hard_P_10``, ``soft_P_5``, ``soft_P_10`` (x 100) and ``average``, with the
        per-split results and the run.

    Raises:
        MissingVectorsError: ids without a vector, unless ``skip_missing``.
        ValueError: as :func:`ranking_metrics` and :func:`reviewer_run`.
    """
    scored = reviewer_run(paper_vectors, reviewer_papers, hard_qrels, vectors, top_k=top_k, skip_missing=skip_missing)
    hard = ranking_metrics(hard_qrels, scored.run, REVIEWER_MEASURES)
    soft = ranking_metrics(soft_qrels, scored.run, REVIEWER_MEASURES)
    metrics = {
        f"{split}_{measure}": result.mean[measure]
        for split, result in (("hard", hard), ("soft", soft))
        for measure in REVIEWER_MEASURES
    }
    metrics["average"] = sum(metrics.values()) / len(metrics)
    return ReviewerMatchingResult(metrics, hard, soft, scored)


@functools.cache
def _measure_key(measure: str) -> str:
    """The key under which pytrec_eval reports ``measure``, found by evaluating a one-document run."""
    try:
        probe = pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {measure}).evaluate({"q": {"d": 1.0}})
    except ValueError as error:
        raise ValueError(f"unknown measure {measure!r}: {error}") from None
    keys = sorted(probe["q"])
    if len(keys) != 1:
        raise ValueError(f"measure {measure!r} gives {len(keys)} values ({', '.join(keys)}); ask for one of them")
    return keys[0]


def _checked_qrels(qrels: Mapping[str, Mapping[str, int]]) -> Qrels:
    clean: Qrels = {}
    for query, judged in qrels.items():
        row = clean[str(query)] = {}
        for candidate, relevance in judged.items():
            if isinstance(relevance, bool) or not isinstance(relevance, Integral):
                raise ValueError(
                    f"qrels: query {query!r}, candidate {candidate!r}: relevance must be an integer, got {relevance!r}"
                )
            row[str(candidate)] = int(relevance)
    return clean


def _checked_run(run: Mapping[str, Mapping[str, float]]) -> Run:
    clean: Run = {}
    for query, scores in run.items():
        row = clean[str(query)] = {}
        for candidate, score in scores.items():
            if isinstance(score, bool) or not isinstance(score, Real) or math.isnan(score):
                raise ValueError(
                    f"run: query {query!r}, candidate {candidate!r}: score must be a number, got {score!r}"
                )
            row[str(candidate)] = float(score)
    return clean


def _judged_run(
    qrels: Mapping[str, Mapping[str, int]],
    query_vectors: Vectors,
    candidate_vectors: Vectors,
    similarity: str,
    score_decimals: int | None,
    skip_missing: bool,
) -> ScoredRun:
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown similarity {similarity!r}; use one of {SIMILARITIES}")
    similarity = RankingSimilarity(similarity)
    ndim = 2 if similarity is RankingSimilarity.MIN_FACET_L2 else 1
    missing_queries = [query for query in qrels if query not in query_vectors]
    missing_candidates = [c for judged in qrels.values() for c in judged if c not in candidate_vectors]
    missing = list(dict.fromkeys(missing_queries + missing_candidates))
    if missing and not skip_missing:
        raise MissingVectorsError("query or candidate", missing)

    run: Run = {}
    skipped_queries = skipped_candidates = 0
    for query, judged in qrels.items():
        if query not in query_vectors:
            skipped_queries += 1
            continue
        candidates = [c for c in judged if c in candidate_vectors]
        skipped_candidates += len(judged) - len(candidates)
        if not candidates:
            # SciDocs writes no line for such a query, so pytrec_eval does not evaluate it.
            skipped_queries += 1
            continue
        scores = _similarities(
            similarity,
            query,
            _as_vector(query, query_vectors[query], ndim),
            _stack(candidates, candidate_vectors, ndim),
        )
        if score_decimals is not None:
            scores = np.round(scores, score_decimals)
        run[query] = dict(zip(candidates, scores.tolist()))
    return ScoredRun(run, skipped_queries, skipped_candidates, 0, missing)


def _as_vector(paper: str, vector: np.ndarray, ndim: int) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    if array.ndim != ndim or 0 in array.shape:
        wanted = "a non-empty (d,) vector" if ndim == 1 else "a non-empty (K, d) facet matrix"
        raise ValueError(f"paper {paper!r}: expected {wanted}, got shape {array.shape}")
    return array


def _stack(ids: Sequence[str], vectors: Vectors, ndim: int, dtype: type = np.float64) -> np.ndarray:
    """The vectors of ``ids`` as one array, each checked against the first paper's shape."""
    arrays = [vectors[i] for i in ids]
    first = _as_vector(ids[0], arrays[0], ndim)
    for paper, array in zip(ids, arrays):
        if np.shape(array) != first.shape:
            raise ValueError(
                f"paper {paper!r} has a vector of shape {np.shape(array)}, paper {ids[0]!r} one of shape {first.shape}"
            )
    return np.stack(arrays, dtype=dtype)


def _similarities(
    similarity: RankingSimilarity, query: str, query_vector: np.ndarray, candidates: np.ndarray
) -> np.ndarray:
    """Float64 scores of ``candidates`` for one query, higher meaning closer.

    ``candidates`` is ``(n, d)`` or ``(n, K, d)``.
    """
    if candidates.shape[-1] != query_vector.shape[-1]:
        raise ValueError(
            f"query {query!r} has dimension {query_vector.shape[-1]}, its candidates {candidates.shape[-1]}"
        )
    return _SCORES[similarity](query_vector, candidates)


def _l2_scores(query_vector: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    return -np.sqrt(_squared_norms(candidates - query_vector))


def _cosine_scores(query_vector: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    return unit_rows(candidates) @ unit_rows(query_vector[None, :])[0]


def _dot_scores(query_vector: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    return candidates @ query_vector


def _min_facet_l2_scores(query_facets: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    return -np.sqrt(_min_facet_squared_distances(query_facets, candidates))


#: A similarity -> the scores of ``(n, d)`` or ``(n, K, d)`` candidates against one query's vector.
_SCORES = {
    RankingSimilarity.L2: _l2_scores,
    RankingSimilarity.COSINE: _cosine_scores,
    RankingSimilarity.DOT: _dot_scores,
    RankingSimilarity.MIN_FACET_L2: _min_facet_l2_scores,
}


def _squared_norms(differences: np.ndarray) -> np.ndarray:
    # A batched (1 x d) @ (d x 1) product is a dot product per row: bit for bit what SciDocs'
    # np.linalg.norm computes for one vector, where a sum of squares along an axis rounds differently.
    return np.matmul(differences[..., None, :], differences[..., :, None])[..., 0, 0]


def _min_facet_squared_distances(query_facets: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    count, facets, dim = candidates.shape
    block = max(1, _FACET_BLOCK_BYTES // (8 * facets * query_facets.shape[0] * dim))
    out = np.empty(count)
    for start in range(0, count, block):
        differences = candidates[start : start + block, :, None, :] - query_facets[None, None, :, :]
        out[start : start + block] = _squared_norms(differences).min(axis=(1, 2))
    return out


def _top_mean(similarities: np.ndarray, rows: list[list[int]], top_k: int) -> np.ndarray:
    """Per group of ``rows`` of ``similarities``: the mean of its ``top_k`` largest values."""
    lengths = np.array([len(r) for r in rows])
    padded = np.full((len(rows), lengths.max()), -np.inf)
    padded[np.repeat(np.arange(len(rows)), lengths), np.concatenate([np.arange(n) for n in lengths])] = similarities[
        np.concatenate(rows)
    ]
    best = np.sort(padded, axis=1)[:, ::-1][:, :top_k]
    taken = np.minimum(lengths, top_k)
    return np.where(np.isfinite(best), best, 0.0).sum(axis=1) / taken


def _best(scores: dict[str, float], top_k: int) -> dict[str, float]:
    """The ``top_k`` best of one query's scores, larger id first among equal scores (trec_eval's order)."""
    if len(scores) <= top_k:
        return scores
    return dict(sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:top_k])


def _full_corpus_run(
    query_vectors: Vectors,
    candidate_vectors: Vectors,
    similarity: str,
    top_k: int,
    exclude_identical_ids: bool,
    query_chunk_size: int,
    corpus_chunk_size: int,
    query_papers: Mapping[str, str],
) -> Run:
    """The whole-corpus search: a float32 prefilter, then float64 scores for the papers it keeps.

    The corpus stays in its own precision (float32 embeddings are never copied to float64 whole). Each
    block of queries is scored against each corpus chunk in float32. A paper is kept when its float32 score
    is within twice the float32 error bound of the chunk's ``top_k``-th float32 score, which keeps every
    paper whose float64 score could reach the float64 ``top_k`` (the bound: ``(d + 8) 2^-24`` of
    ``|q| |c|``, the rounding of the inputs and of a d-term dot product in any summation order). The kept
    papers are scored again in float64, so near-equal scores order as the float64 reference orders them.
    """
    query_ids, corpus_ids = list(query_vectors), list(candidate_vectors)
    if not query_ids or not corpus_ids:
        raise ValueError(f"nothing to search: {len(query_ids)} queries, {len(corpus_ids)} papers")
    queries = _stack(query_ids, query_vectors, ndim=1)
    storage = (
        np.float32 if all(np.asarray(candidate_vectors[c]).dtype == np.float32 for c in corpus_ids) else np.float64
    )
    corpus = _stack(corpus_ids, candidate_vectors, ndim=1, dtype=storage)
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, papers {corpus.shape[1]}")
    dim = corpus.shape[1]
    norms = np.concatenate(
        [
            np.linalg.norm(corpus[i : i + corpus_chunk_size].astype(np.float64), axis=1)
            for i in range(0, len(corpus), corpus_chunk_size)
        ]
    )
    if RankingSimilarity(similarity) is RankingSimilarity.COSINE:
        unit_rows(queries, out=queries)
        # 1 / |c| per paper: float32 scores are divided by it, float64 ones use the float64 unit row.
        column_scale = (1.0 / np.maximum(norms, np.finfo(np.float64).tiny)).astype(np.float32)
        largest = 1.0
    else:
        column_scale = None
        largest = float(norms.max())
    queries32 = queries.astype(np.float32)
    error = 2.0 * (dim + 8) * 2.0**-24 * np.linalg.norm(queries, axis=1) * largest
    # Position of each paper id in string order: the tie breaker at the top-k cut.
    id_rank = np.empty(len(corpus_ids), dtype=np.int64)
    id_rank[np.argsort(np.array(corpus_ids))] = np.arange(len(corpus_ids))
    position = {paper: i for i, paper in enumerate(corpus_ids)} if exclude_identical_ids or query_papers else {}
    keep = min(top_k, len(corpus_ids))

    run: Run = {}
    for q_start in range(0, len(query_ids), query_chunk_size):
        chunk_ids = query_ids[q_start : q_start + query_chunk_size]
        own = {
            row: position[paper]
            for row, q in enumerate(chunk_ids)
            if (paper := query_papers.get(q, q if exclude_identical_ids else None)) in position
        }
        best: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0, dtype=np.int64)) for _ in chunk_ids]
        for c_start in range(0, len(corpus_ids), corpus_chunk_size):
            chunk = corpus[c_start : c_start + corpus_chunk_size]
            rough = queries32[q_start : q_start + query_chunk_size] @ chunk.astype(np.float32, copy=False).T
            if column_scale is not None:
                rough *= column_scale[c_start : c_start + len(chunk)]
            for row, index in own.items():
                if c_start <= index < c_start + len(chunk):
                    rough[row, index - c_start] = -np.inf  # before the cut: the query's own paper takes no place
            threshold = _kth_largest(rough, keep) - 2.0 * error[q_start : q_start + query_chunk_size]
            for row in range(len(chunk_ids)):
                columns = np.flatnonzero(~(rough[row] < threshold[row]))  # NaN scores are kept: BEIR scores them -1
                if row in own:
                    columns = columns[columns != own[row] - c_start]
                index = columns + c_start
                exact = _exact_scores(
                    queries[q_start + row], corpus[index], norms[index] if column_scale is not None else None
                )
                scores, kept = np.concatenate([best[row][0], exact]), np.concatenate([best[row][1], index])
                order = np.lexsort((id_rank[kept], scores))[::-1][:keep]
                best[row] = (scores[order], kept[order])
        for row, query in enumerate(chunk_ids):
            scores, kept = best[row]
            run[query] = dict(zip((corpus_ids[i] for i in kept), scores.tolist()))
    return run


def _kth_largest(scores: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k``-th largest score (-inf when the row is shorter). NaN counts as BEIR's -1."""
    if k > scores.shape[1]:
        return np.full(scores.shape[0], -np.inf)
    clean = np.where(np.isnan(scores), -1.0, scores)
    return np.partition(clean, scores.shape[1] - k, axis=1)[:, scores.shape[1] - k]


def _exact_scores(query: np.ndarray, papers: np.ndarray, norms: np.ndarray | None) -> np.ndarray:
    """float64 scores of ``papers`` for one query: cosine when ``norms`` are given, else dot.

    For cosine the query is a unit vector.
    """
    papers = papers.astype(np.float64)
    if norms is not None:
        papers /= np.maximum(norms, np.finfo(np.float64).tiny)[:, None]
    scores = papers @ query
    scores[np.isnan(scores)] = -1  # BEIR
    return scores
