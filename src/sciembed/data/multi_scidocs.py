"""Multi-SciDocs: multi-domain cite / co-cite tasks built from S2ORC-format data, in SciDocs' layout.

Seoh, Chang, McCallum ("Multi²SPE", ronaldseoh/multi2spe) evaluate on SciDocs-style proximity tasks
whose query papers span the MAG fields of study instead of SciDocs' computer-science-heavy sample.
The rules kept here (SciDocs' own, Cohan et al. 2020 sec. 4, plus the field balance of Multi-SciDocs):

- **queries** are papers with text and a MAG field, sampled per field so that no field dominates: at
  most ``queries_per_field`` queries of each field (a paper belongs to its first listed field), and a
  field with fewer than ``min_queries_per_field`` candidates is left out. Both shortfalls are reported.
- **positives**: up to 5 per query. ``cite``: papers the query cites. ``cocite``: papers cited
  together with the query by a third paper (a co-citation count ``A^T A`` > 0).
- **negatives**: 500 random papers with text per query that are not the query and not related to it
  (not cited by it, not citing it, not co-cited with it), so no true relation is labelled 0.

Queries are split half / half into ``val`` and ``test`` within each field, so both splits are balanced.
Written atomically in the SciDocs release layout that :func:`sciembed.data.scidocs.read_scidocs`
loads: ``paper_metadata_view_cite_read.json`` (``{pid: {paper_id, title, abstract}}``) and
``cite/{val,test}.qrel``, ``cocite/{val,test}.qrel`` with lines ``qid 0 pid rel``. Plus
``query_fields.json`` (task -> query id -> field) for per-field scores. The MAG classification task is
not built: Multi-SciDocs reuses SciDocs' ``mag/`` folder and ``paper_metadata_mag_mesh.json`` — copy
them into the output folder to evaluate it.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..io import atomic_path
from .graph import CitationGraph
from .s2orc import S2orcPapers, read_s2orc

logger = logging.getLogger(__name__)

TASKS = ("cite", "cocite")
METADATA_FILE = "paper_metadata_view_cite_read.json"


@dataclass(frozen=True)
class MultiSciDocsConfig:
    """Settings of :func:`build_multi_scidocs` (defaults: SciDocs' 5 positives and 500 negatives)."""

    queries_per_field: int = 100
    min_queries_per_field: int = 2
    max_positives: int = 5
    negatives: int = 500
    tasks: tuple[str, ...] = TASKS
    seed: int = 0

    def __post_init__(self):
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"unknown Multi-SciDocs task(s) {unknown}; supported: {', '.join(TASKS)}")
        if min(self.queries_per_field, self.max_positives, self.negatives) < 1 or self.min_queries_per_field < 1:
            raise ValueError("queries_per_field, min_queries_per_field, max_positives and negatives must be >= 1")


@dataclass
class MultiSciDocs:
    """What was written: the folder, the qrels and the counts.

    The qrels are (query, paper, rel) id lists, per task and split.
    """

    folder: Path
    qrels: dict[str, dict[str, list[tuple[str, str, int]]]]
    query_fields: dict[str, dict[str, str]]
    stats: dict[str, Counter] = field(default_factory=dict)


def build_multi_scidocs(
    source: str | os.PathLike[str] | S2orcPapers,
    folder: str | os.PathLike[str],
    config: MultiSciDocsConfig | None = None,
) -> MultiSciDocs:
    """Build the Multi-SciDocs cite / co-cite tasks from S2ORC metadata and write them into ``folder``.

    Args:
        source: an S2ORC metadata file or folder (read with ``skip_invalid=True``, skips counted) or
            an already read :class:`~sciembed.data.s2orc.S2orcPapers`.
        folder: the output folder (created, files replaced atomically).
        config: the settings.

    Raises:
        ValueError: no task got a single query (e.g. every citation leaves the file). The counts are named.
    """
    config = config or MultiSciDocsConfig()
    s2orc = source if isinstance(source, S2orcPapers) else read_s2orc(source, skip_invalid=True)
    papers = s2orc.papers
    graph = CitationGraph.from_edges(s2orc.citing, s2orc.cited, papers_with_text=papers["paper_id"])
    rng = np.random.default_rng(config.seed)
    n = graph.num_papers

    record_index = (
        np.asarray(graph.index_of(papers["paper_id"]), dtype=np.int64) if len(papers) else np.zeros(0, np.int64)
    )
    primary = np.full(n, "", dtype=object)
    primary[record_index] = [fields[0] if fields else "" for fields in papers["mag_field_of_study"]]
    text_pool = np.flatnonzero(graph.has_text)
    adjacency = graph.adjacency
    cocited = graph.cocitation_counts()
    # Papers related to each paper in any way (cited, citing, co-cited): never a negative of it.
    related = (adjacency + adjacency.T + cocited).tocsr()
    relations = {"cite": adjacency.tocsr(), "cocite": cocited}

    qrels: dict[str, dict[str, list[tuple[str, str, int]]]] = {}
    query_fields: dict[str, dict[str, str]] = {}
    stats: dict[str, Counter] = {}
    emitted: set[int] = set()
    for task in config.tasks:
        counter: Counter = Counter()
        positives_of = relations[task]
        # Positives must have text; a query needs at least one.
        positive_count = positives_of @ graph.has_text.astype(np.int64)
        candidates = graph.has_text & (primary != "") & (positive_count > 0)
        counter["papers_without_field"] = int(np.count_nonzero(graph.has_text & (primary == "")))
        counter["papers_with_a_positive"] = int(np.count_nonzero(graph.has_text & (positive_count > 0)))
        queries_by_split: dict[str, list[int]] = {"val": [], "test": []}
        fields_of: dict[str, str] = {}
        for name in sorted(set(primary[candidates])):
            pool = np.flatnonzero(candidates & (primary == name))
            if len(pool) < config.min_queries_per_field:
                counter[f"field_too_small:{name}"] = len(pool)
                continue
            if len(pool) < config.queries_per_field:
                counter[f"field_short:{name}"] = config.queries_per_field - len(pool)
            chosen = rng.permutation(pool)[: config.queries_per_field]
            half = (len(chosen) + 1) // 2
            queries_by_split["val"] += chosen[:half].tolist()
            queries_by_split["test"] += chosen[half:].tolist()
            fields_of.update({graph.ids[q]: name for q in chosen})
            counter[f"queries:{name}"] = len(chosen)

        task_qrels: dict[str, list[tuple[str, str, int]]] = {}
        for split, queries in queries_by_split.items():
            rows: list[tuple[str, str, int]] = []
            for q in queries:
                positives = _row(positives_of, q)
                positives = positives[graph.has_text[positives]]
                positives = np.sort(rng.permutation(positives)[: config.max_positives])
                if len(positives) < config.max_positives:
                    counter["queries_with_fewer_positives"] += 1
                negatives = _negatives(text_pool, np.append(_row(related, q), q), config.negatives, rng)
                if len(negatives) < config.negatives:
                    counter["queries_with_fewer_negatives"] += 1
                qid = graph.ids[q]
                rows += [(qid, graph.ids[p], 1) for p in positives] + [(qid, graph.ids[p], 0) for p in negatives]
                emitted.update([q, *positives.tolist(), *negatives.tolist()])
                counter[f"{split}_positives"] += len(positives)
                counter[f"{split}_negatives"] += len(negatives)
            counter[f"{split}_queries"] = len(queries)
            task_qrels[split] = rows
        qrels[task], query_fields[task], stats[task] = task_qrels, fields_of, counter
        short = {k: v for k, v in counter.items() if k.startswith(("field_", "queries_with_fewer")) and v}
        if short:
            logger.warning("Multi-SciDocs %s: could not fill: %s", task, short)
        logger.info("Multi-SciDocs %s: %s", task, dict(counter))

    if not any(c["val_queries"] + c["test_queries"] for c in stats.values()):
        raise ValueError(
            f"{getattr(s2orc, 'path', source)}: no query paper could be built (a query needs text, a MAG field and a "
            f"{' / '.join(config.tasks)} positive with text among the records; citations leaving the file do not "
            f"count): { {t: dict(c) for t, c in stats.items()} }"
        )
    folder = _write(Path(folder), qrels, query_fields, papers, graph, emitted)
    return MultiSciDocs(folder, qrels, query_fields, stats)


def _row(matrix: sp.csr_array, i: int) -> np.ndarray:
    return matrix.indices[matrix.indptr[i] : matrix.indptr[i + 1]].astype(np.int64)


def _negatives(pool: np.ndarray, excluded: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct papers of ``pool`` outside ``excluded`` (fewer when the pool runs out), sorted."""
    # Drawing count + |excluded| without replacement always leaves enough after removing the excluded.
    draw = rng.choice(pool, size=min(len(pool), count + len(excluded)), replace=False)
    draw = draw[~np.isin(draw, excluded)]
    return np.sort(draw[:count])


def _write(folder: Path, qrels, query_fields, papers, graph: CitationGraph, emitted: set[int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wanted = set(graph.ids[sorted(emitted)].tolist())
    metadata = {
        pid: {"paper_id": pid, "title": title or "", "abstract": abstract or ""}
        for pid, title, abstract in zip(papers["paper_id"], papers["title"], papers["abstract"])
        if pid in wanted
    }
    with atomic_path(folder / METADATA_FILE) as temporary:
        temporary.write_text(json.dumps(metadata, ensure_ascii=False), encoding="utf-8")
    for task, splits in qrels.items():
        for split, rows in splits.items():
            with atomic_path(folder / task / f"{split}.qrel") as temporary:
                temporary.write_text("".join(f"{q} 0 {p} {rel}\n" for q, p, rel in rows), encoding="utf-8")
    with atomic_path(folder / "query_fields.json") as temporary:
        temporary.write_text(json.dumps(query_fields, indent=1, sort_keys=True), encoding="utf-8")
    return folder
