"""Judgements made from citation data and collections, as the benchmarks' protocols make them: what an
evaluation task scores and what training on labels uses, without the task objects of ``evaluation``.

- :func:`cite_qrels`: SciDocs' cite protocol on any citation links: each query's linked papers with text
  (up to 5) are relevant, 25 random unlinked papers with text are not.
- :func:`cacm_categories`: CACM's CR categories as single labels (the top class of a paper's first category).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .papers import paper_id_order


def cite_qrels(
    papers: Mapping[str, Any],
    neighbours: Mapping[str, set[str]],
    *,
    query_ids: Iterable[str] | None = None,
    positives: int = 5,
    negatives: int = 25,
    seed: int = 0,
) -> dict[str, dict[str, int]]:
    """Query paper -> {candidate: 1 for a linked paper, 0 for a random unlinked one}, SciDocs' cite protocol.

    Args:
        papers: paper id -> record, the papers with text (candidates are drawn from them).
        neighbours: paper id -> the ids it is linked to (cites or is cited by).
        query_ids: the query papers (default: every paper with a link); a query without text or without a
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


def cacm_categories(papers: Iterable[Mapping[str, Any]], *, min_papers: int = 6) -> dict[str, int]:
    """Paper id -> the top-level class of its first listed CR category (``3.7`` -> ``3``), for the papers
    that have one. Classes with fewer than ``min_papers`` papers are left out (a stratified 3-fold split of
    half of them needs at least 3 per side)."""
    labels = {}
    for paper in papers:
        codes = re.findall(r"\d+(?:\.\d+)?", paper.get("categories") or "")
        if codes:
            labels[paper["paper_id"]] = int(float(codes[0]))
    counts = Counter(labels.values())
    return {pid: label for pid, label in labels.items() if counts[label] >= min_papers}
