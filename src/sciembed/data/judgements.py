"""Judgements made from citation data and collections, as the benchmarks' protocols make them.

What an evaluation task scores and what training on labels uses, without the task objects of ``evaluation``.

- :func:`cite_qrels`: SciDocs' cite protocol on any citation links: each query's linked papers with text
  (up to 5) are relevant, 25 random unlinked papers with text are not.
- :func:`cacm_categories`: CACM's CR categories as single labels (the top class of a paper's first category).
- :func:`swapped_columns`, :func:`grades_of_ids`, :func:`check_qrels_columns`: whether a judgement file's query and
  document columns look swapped, or its relevance column holds ids, and why. The columns read in the order the user
  states.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..choices import StrChoice, choices
from .problems import paper_id_order


class QrelsColumns(StrChoice):
    """The order of a judgement file's id columns, when the user states it."""

    QUERY_DOCUMENT = "query-document"
    DOCUMENT_QUERY = "document-query"


#: How a judgement file's query and document columns are read when stated (``--qrels-columns``): query first, or
#: the document first (swapped back on reading). Unstated, the query comes first and a swapped shape is refused.
QRELS_COLUMNS = choices(QrelsColumns)
#: Fewer distinct queries than this and a judgement file's shape reads as swapped columns only when each query is
#: judged once.
SWAP_MIN_QUERIES = 8
#: Fewer distinct queries than this and a judgement file's shape never reads as swapped columns.
SWAP_FEWEST_QUERIES = 3


def cite_qrels(
    papers: Mapping[str, Any],
    neighbours: Mapping[str, set[str]],
    *,
    query_ids: Iterable[str] | None = None,
    positives: int = 5,
    negatives: int = 25,
    seed: int = 0,
) -> dict[str, dict[str, int]]:
    """SciDocs' cite protocol: query paper -> {candidate: relevance}.

    A candidate is 1 for a linked paper and 0 for a random unlinked one.

    Args:
        papers: paper id -> record, the papers with text (candidates are drawn from them).
        neighbours: paper id -> the ids it is linked to (cites or is cited by).
        query_ids: the query papers (default: every paper with a link). A query without text or without a
            linked paper with text is left out.
        positives, negatives: linked papers kept at most, and random unlinked papers drawn, per query.
        seed: the draws' seed (queries in id order, so the same queries give the same judgements).
    """
    pool = np.array(sorted(papers, key=paper_id_order))
    rng = np.random.default_rng(seed)
    chosen = sorted(query_ids if query_ids is not None else neighbours, key=paper_id_order)
    qrels: dict[str, dict[str, int]] = {}
    for query in chosen:
        linked = sorted((p for p in neighbours.get(query, ()) if p in papers), key=paper_id_order)
        if query not in papers or not linked:
            continue
        relevant = rng.permutation(linked)[:positives].tolist()
        excluded = set(linked) | {query}
        draw = rng.choice(pool, size=min(len(pool), negatives + len(excluded)), replace=False)
        others = [p for p in draw.tolist() if p not in excluded][:negatives]
        qrels[query] = {**{p: 1 for p in relevant}, **{p: 0 for p in others}}
    return qrels


def swapped_columns(
    queries: Sequence[str],
    documents: Sequence[str],
    *,
    known_queries: Collection[str] | None = None,
    known_documents: Collection[str] | None = None,
    scores: Sequence[int] | None = None,
) -> str | None:
    """Why a judgement file's query and document columns look swapped.

    ``None`` when they do not.

    Three signs, any one enough. The ids fit the other way round: more rows whose query id is a known document and
    whose document id a known query than rows that fit as read, with queries and documents told apart by
    ``known_queries`` and ``known_documents``. Or, with at least :data:`SWAP_FEWEST_QUERIES` queries and fewer
    distinct documents than queries, the shape of a file read backwards: a third as many distinct documents as
    queries or fewer (each query of a collection is judged against many documents, so read backwards the few real
    queries are judged many times), each query judged once when they are fewer than :data:`SWAP_MIN_QUERIES`. Or,
    with ``scores``, half the queries or more without a relevant document (read backwards, the judged non-relevant
    documents become queries with nothing relevant). A collection whose queries have one judged document each is
    legitimate when those documents are many and distinct, and passes. Judgements whose relation runs both ways
    (papers that cite each other) read the same backwards: no sign tells their columns apart.

    Args:
        queries: the query column, one id a judgement.
        documents: the document column, in the same order.
        known_queries: the ids a query may have (a queries file's), when they are not the documents'.
        known_documents: the ids a document may have (the papers'), when known.
        scores: the relevance column, in the same order (1 or more: relevant), when known.
    """
    rows = len(queries)
    if known_queries is not None and known_documents is not None and set(known_queries) != set(known_documents):
        as_read = sum(q in known_queries and d in known_documents for q, d in zip(queries, documents))
        reversed_ = sum(d in known_queries and q in known_documents for q, d in zip(queries, documents))
        if reversed_ > as_read and 2 * reversed_ >= rows:
            return (
                f"{reversed_} of {rows} judgements name a known document in the query column and a known query in "
                f"the document column ({as_read} fit the other way)"
            )
        # The queries named may be absent from the queries file: documents in the query column still tell.
        documents_first = sum(q in known_documents and q not in known_queries for q in queries)
        if documents_first > as_read and 2 * documents_first >= rows:
            return (
                f"{documents_first} of {rows} judgements name a known document, not a known query, in the query "
                f"column ({as_read} name a known query and document as read; or are the queries another file's?)"
            )
    distinct_queries, distinct_documents = len(set(queries)), len(set(documents))
    if distinct_queries < SWAP_FEWEST_QUERIES or distinct_documents >= distinct_queries:
        return None
    few = distinct_queries < SWAP_MIN_QUERIES
    if 3 * distinct_documents <= distinct_queries and (not few or rows == distinct_queries):
        return (
            f"{distinct_queries} queries judged {rows / distinct_queries:.1f} times each on average, against "
            f"{distinct_documents} distinct documents judged {rows / distinct_documents:.1f} times each"
        )
    if scores is not None:
        answered = {query for query, score in zip(queries, scores) if score >= 1}
        if 2 * len(answered) <= distinct_queries:
            return (
                f"{distinct_queries - len(answered)} of {distinct_queries} queries have no relevant document, and "
                f"the {distinct_documents} distinct documents are fewer than the queries"
            )
    return None


def grades_of_ids(documents: Sequence[str], scores: Sequence[int], known_documents: Collection[str]) -> str | None:
    """Why a judgement file's relevance column looks like its document ids (``qid rel docid``), or ``None``.

    The sign: the document column holds a few small integers, as grades are. The relevance column holds more than
    twice as many distinct values, and half of its values or more are ids of ``known_documents``.

    Args:
        documents: the document column, one id a judgement.
        scores: the relevance column, in the same order.
        known_documents: the ids a document may have (the papers').
    """
    grades = set(documents)
    if len(grades) > 5 or not all(grade.lstrip("-").isdigit() for grade in grades):
        return None
    distinct = len(set(scores))
    known = sum(str(score) in known_documents for score in scores)
    if distinct > max(4, 2 * len(grades)) and 2 * known >= len(scores):
        return (
            f"{known} of {len(scores)} relevance values are ids of known documents ({distinct} distinct), and the "
            f"document column holds only {', '.join(sorted(grades, key=int))}, as grades are"
        )
    return None


def check_qrels_columns(
    source: str | os.PathLike[str],
    columns: dict[str, list],
    *,
    qrels_columns: str | None = None,
    known_queries: Collection[str] | None = None,
    known_documents: Collection[str] | None = None,
    layout: str = "'qid 0 docid rel' or 'qid docid rel'",
) -> dict[str, list]:
    """The judgement ``columns`` (``query_id``, ``cand_id``, ...) read in the order ``qrels_columns`` says.

    Args:
        source: the judgement file, named in the error.
        columns: the columns as the file's lines give them.
        qrels_columns: ``None`` (query first, refused when :func:`swapped_columns` finds them swapped),
            ``query-document`` (query first, as stated: not checked) or ``document-query`` (the columns swapped back).
        known_queries, known_documents: as for :func:`swapped_columns`.
        layout: the file's line layout, named in the error.

    Raises:
        ValueError: an unknown ``qrels_columns``, columns that look swapped (why, and the switch that reads them), or
            a relevance column of document ids (:func:`grades_of_ids`, unless an order is stated).
    """
    if qrels_columns is not None and qrels_columns not in QRELS_COLUMNS:
        raise ValueError(f"unknown qrels_columns {qrels_columns!r}; one of {', '.join(QRELS_COLUMNS)}")
    if qrels_columns == QrelsColumns.DOCUMENT_QUERY:
        return {**columns, "query_id": columns["cand_id"], "cand_id": columns["query_id"]}
    if qrels_columns is None and known_documents is not None and "score" in columns:
        why = grades_of_ids(columns["cand_id"], columns["score"], known_documents)
        if why:
            raise ValueError(
                f"{source}: the relevance column holds document ids: {why}. A judgement line is {layout}: put the "
                "columns in that order"
            )
    if qrels_columns is None:
        why = swapped_columns(
            columns["query_id"],
            columns["cand_id"],
            known_queries=known_queries,
            known_documents=known_documents,
            scores=columns.get("score"),
        )
        if why:
            raise ValueError(
                f"{source}: the query and document columns look swapped: {why}. A judgement line names the query "
                f"first ({layout}): swap the columns, or pass --qrels-columns document-query (qrels_columns="
                "'document-query') to read them swapped, or --qrels-columns query-document if the order is right"
            )
    return columns


def cacm_categories(papers: Iterable[Mapping[str, Any]], *, min_papers: int = 6) -> dict[str, int]:
    """Paper id -> the top-level class of its first listed CR category.

    The class of ``3.7`` is ``3``. Papers without a category are left out. Classes with fewer than ``min_papers``
    papers are left out too (a stratified 3-fold split of half of them needs at least 3 per side).
    """
    labels = {}
    for paper in papers:
        codes = re.findall(r"\d+(?:\.\d+)?", paper.get("categories") or "")
        if codes:
            labels[paper["paper_id"]] = int(float(codes[0]))
    counts = Counter(labels.values())
    return {pid: label for pid, label in labels.items() if counts[label] >= min_papers}
