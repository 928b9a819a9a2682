"""SciNCL triplet sampling at scale with faiss (exact ``IndexFlat`` or ``IndexIVFFlat``), and its accuracy
against an exact float64 numpy ranking.

Stages, each timed: a synthetic power-law citation graph (default 1,000,000 papers, 20 citations per
paper; seeded numpy), the :class:`sciembed.data.graph.CitationGraph`, the FastRP citation-graph embedding
exactly as :func:`sciembed.data.scincl.sample_scincl_triplets` computes it
(:func:`~sciembed.data.graph_embedding.citation_graph_embedding`, 64 dims), and SciNCL triplets (5 per query:
positives from kNN ranks [20, 25), 2 hard negatives from [3998, 4000), 3 random) for every query with
``--index`` (exact or ivf). It reports wall time per stage, triplets/s and the process's peak resident
memory (``ru_maxrss`` right after sampling).

Accuracy, on ``--recall-queries`` random queries, against an exact float64 ranking of all candidates:

- ``recall_at_25``: the share of each query's exact 25 nearest found among the index's 25 nearest (a
  second run, same parameters and seed, asking for ranks [0, 25) as positives so all 25 come back);
- the true ranks of the main run's positives (requested [20, 25)) and hard negatives (requested
  [3998, 4000)): share inside the requested range, share within 10 % of it, median and 90th percentile.

The generator is the one of ``benchmarks/sampling_scale.py`` (citing paper drawn by a Pareto
productivity, cited paper by a Zipf popularity) with topics added, because a nearest-neighbour index is
only meaningful on data with neighbourhoods: each paper belongs to one of ``papers / --topic-size``
topics, and a share ``--in-topic`` of its citations go to papers of its own topic (by popularity within
the topic), the rest anywhere. ``--in-topic 0`` gives the unclustered graph, whose FastRP embedding is
close to uniform on the sphere (there, rank 4,000 of a million is barely nearer than a random paper).

With ``--tradeoff CELLS:NPROBE,...`` it samples only ``--timing-queries`` random queries per IVF setting
(and the exact index on a fifth of them), reports the accuracy of each on the first ``--recall-queries``
of them, the search time per query (the run on all timing queries less a run on one query, which pays the
index training) and the time that setting would take for every query, and writes
``scincl_scale_<papers>_tradeoff.json``: where a full run at 10^6 papers would take too long, this says
what each setting costs and gives.

    python benchmarks/scincl_scale.py --papers 100000 --index exact --recall-queries 1000
    python benchmarks/scincl_scale.py --index ivf                        # 1,000,000 papers
    python benchmarks/scincl_scale.py --tradeoff 1000:50,1000:100,1000:200,1000:300
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
from sampling_scale import cpu_count

from sciembed.data.graph import CitationGraph
from sciembed.data.graph_embedding import EMBEDDING_DIM, citation_graph_embedding
from sciembed.data.scincl import SciNCLConfig, sample_scincl_triplets
from sciembed.io import atomic_path

logger = logging.getLogger("scincl_scale")


def synthetic_citations(
    papers: int, citations: int, seed: int, topic_size: int, in_topic: float, alpha: float = 0.8
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """``(citing, cited, rng)``: index arrays of a power-law citation graph with topics (module docstring)."""
    rng = np.random.default_rng(seed)
    productivity = rng.pareto(2.0, papers) + 1.0
    popularity = np.empty(papers)
    popularity[rng.permutation(papers)] = np.arange(1, papers + 1, dtype=np.float64) ** -alpha
    topics = max(1, papers // topic_size)
    topic = rng.integers(0, topics, papers)
    citing = _draw(rng, productivity, citations)
    # Popularity laid out topic by topic: a cited paper inside topic t is a uniform point of t's share of
    # the cumulative popularity, found by one searchsorted for all citations.
    by_topic = np.argsort(topic, kind="stable")
    cumulative = np.cumsum(popularity[by_topic])
    bounds = np.searchsorted(topic[by_topic], np.arange(topics + 1))
    low = np.concatenate([[0.0], cumulative])[bounds[:-1]]
    high = np.concatenate([[0.0], cumulative])[bounds[1:]]
    own = topic[citing]
    local = rng.random(citations) < in_topic
    u = rng.random(citations)
    target = np.where(local, low[own] + u * (high[own] - low[own]), u * cumulative[-1])
    cited = by_topic[np.minimum(np.searchsorted(cumulative, target, side="right"), papers - 1)]
    return citing, cited.astype(np.int32), rng


def _draw(rng: np.random.Generator, weights: np.ndarray, size: int) -> np.ndarray:
    cumulative = np.cumsum(weights)
    cumulative /= cumulative[-1]
    return np.minimum(np.searchsorted(cumulative, rng.random(size), side="right"), len(weights) - 1).astype(np.int32)


def faiss_version() -> str:
    import faiss

    return faiss.__version__


def peak_memory_gb() -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e9


def exact_ranks(
    vectors: np.ndarray, candidates: np.ndarray, query: np.ndarray, others: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each ``query[i]`` and each paper in row ``others[i]``: its exact 0-based rank among the other
    candidates (the count of strictly nearer ones, euclidean, float64), and each query's 25 nearest."""
    vectors = vectors.astype(
        np.float64
    )  # FastRP rows are float32: rank them in float64, as the sampler's boundaries are
    cand = vectors[candidates]
    norms = np.einsum("ij,ij->i", cand, cand)
    position = np.full(len(vectors), -1, dtype=np.int64)
    position[candidates] = np.arange(len(candidates))
    ranks = np.empty(others.shape, dtype=np.int64)
    top = np.empty((len(query), 25), dtype=np.int64)
    step = max(1, 4_000_000 // len(candidates))
    for start in range(0, len(query), step):
        block = query[start : start + step]
        distance = norms - 2.0 * (vectors[block] @ cand.T)
        distance[np.arange(len(block)), position[block]] = np.inf
        target = np.take_along_axis(distance, position[others[start : start + step]], axis=1)
        ranks[start : start + step] = (distance[:, None, :] < target[:, :, None]).sum(axis=2)
        top[start : start + step] = candidates[np.argpartition(distance, 24, axis=1)[:, :25]]
    return ranks, top


def rank_summary(ranks: np.ndarray, start: int, end: int) -> dict[str, float]:
    """How the true ranks of papers meant for ``[start, end)`` fall."""
    slack = max(1, round(0.1 * end))
    return {
        "requested": [start, end],
        "share_in_range": round(float(((ranks >= start) & (ranks < end)).mean()), 4),
        "share_within_10pct": round(float(((ranks >= start - slack) & (ranks < end + slack)).mean()), 4),
        "median": float(np.median(ranks)),
        "p10": float(np.percentile(ranks, 10)),
        "p90": float(np.percentile(ranks, 90)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=1_000_000, help="papers in the graph (default 1,000,000)")
    parser.add_argument(
        "--citations-per-paper", type=float, default=20.0, help="citations drawn per paper (default 20)"
    )
    parser.add_argument("--topic-size", type=int, default=2000, help="mean papers per topic (default 2,000)")
    parser.add_argument(
        "--in-topic", type=float, default=0.8, help="share of citations inside the citing paper's topic (default 0.8)"
    )
    parser.add_argument("--text-share", type=float, default=0.9, help="share of papers with text (default 0.9)")
    parser.add_argument("--index", choices=("exact", "ivf"), default="ivf", help="the kNN index (default ivf)")
    parser.add_argument(
        "--ivf-nprobe", type=int, default=None, help="IVF cells probed per query (default: the sampler's)"
    )
    parser.add_argument(
        "--ivf-cells", type=int, default=None, help="IVF cells (default: the sampler's, sqrt(candidates))"
    )
    parser.add_argument(
        "--recall-queries", type=int, default=200, help="queries checked against exact kNN (default 200)"
    )
    parser.add_argument(
        "--compare-exact", action="store_true", help="also time the exact index on every query (quadratic)"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="faiss OpenMP threads (default: faiss's, one per core)"
    )
    parser.add_argument(
        "--tradeoff", help="CELLS:NPROBE,... IVF settings to measure on --timing-queries sampled queries"
    )
    parser.add_argument(
        "--timing-queries", type=int, default=2000, help="queries timed per --tradeoff setting (default 2,000)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--output", type=Path, default=None, help="JSON path (default results/scincl_scale_<papers>_<index>.json)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    name = "tradeoff" if args.tradeoff else args.index
    output = args.output or Path(__file__).parent / "results" / f"scincl_scale_{args.papers}_{name}.json"
    index = {"index": args.index} | (
        {"ivf_nprobe": args.ivf_nprobe, "ivf_cells": args.ivf_cells} if args.index == "ivf" else {}
    )
    if args.threads:
        import faiss

        faiss.omp_set_num_threads(args.threads)

    t0 = time.perf_counter()
    citing, cited, rng = synthetic_citations(
        args.papers, round(args.citations_per_paper * args.papers), args.seed, args.topic_size, args.in_topic
    )
    has_text = rng.random(args.papers) < args.text_share
    t1 = time.perf_counter()
    graph = CitationGraph.from_indices(citing, cited, args.papers, has_text=has_text)
    del citing, cited
    t2 = time.perf_counter()
    vectors = citation_graph_embedding(graph, EMBEDDING_DIM, seed=args.seed)
    t3 = time.perf_counter()
    if args.tradeoff:
        write(
            output,
            tradeoff(graph, vectors, args)
            | {
                "seconds": {
                    "generate": round(t1 - t0, 2),
                    "build_graph": round(t2 - t1, 2),
                    "embed_fastrp": round(t3 - t2, 2),
                }
            },
        )
        return
    triplets = sample_scincl_triplets(graph, config=SciNCLConfig(**index), vectors=vectors, seed=args.seed)
    t4 = time.perf_counter()
    peak = peak_memory_gb()
    stats = triplets.stats

    # Accuracy on a sample of queries against an exact float64 ranking.
    t5 = time.perf_counter()
    candidates = np.nonzero(graph.has_text & np.isfinite(vectors).all(axis=1))[0]
    sample_rng = np.random.default_rng(args.seed + 1)
    used = np.unique(triplets.query)
    sample = np.sort(sample_rng.choice(used, size=min(args.recall_queries, len(used)), replace=False))
    k = stats.positive_ranks_used[1] - stats.positive_ranks_used[0]
    h = stats.hard_negative_ranks_used[1] - stats.hard_negative_ranks_used[0]
    mine = np.isin(triplets.query, sample)
    order = np.argsort(
        triplets.query[mine], kind="stable"
    )  # triplets come query by query; keep each query's rows together
    positives = triplets.positive[mine][order].reshape(len(sample), k)
    hards = triplets.negative[mine & triplets.hard][
        np.argsort(triplets.query[mine & triplets.hard], kind="stable")
    ].reshape(len(sample), h)
    ranks, exact_top = exact_ranks(vectors, candidates, sample, np.concatenate([positives, hards], axis=1))
    top = SciNCLConfig(positives=25, positive_ranks=(0, 25), easy_negatives=23, **index)
    top25 = sample_scincl_triplets(graph, sample, config=top, vectors=vectors, seed=args.seed)
    index_top = top25.positive.reshape(len(sample), 25)
    recall = float(np.mean([len(np.intersect1d(a, b)) / 25 for a, b in zip(exact_top, index_top)]))
    accuracy = {
        "queries": len(sample),
        "recall_at_25": round(recall, 4),
        "positive_ranks": rank_summary(ranks[:, :k], *stats.positive_ranks_used),
        "hard_negative_ranks": rank_summary(ranks[:, k:], *stats.hard_negative_ranks_used),
        "seconds": round(time.perf_counter() - t5, 2),
    }
    logger.info("accuracy: %s", accuracy)

    exact = None
    if args.compare_exact and args.index != "exact":
        t6 = time.perf_counter()
        reference = sample_scincl_triplets(graph, config=SciNCLConfig(index="exact"), vectors=vectors, seed=args.seed)
        exact_s = time.perf_counter() - t6
        exact = {
            "sample_s": round(exact_s, 2),
            "triplets": len(reference),
            "speedup_of_ivf": round(exact_s / (t4 - t3), 2),
        }
        logger.info("exact index: %s", exact)

    result = {
        "benchmark": "scincl_scale",
        "papers": args.papers,
        "graph": graph.stats.as_dict(),
        "generator": {
            "citations_per_paper": args.citations_per_paper,
            "topic_size": args.topic_size,
            "in_topic": args.in_topic,
            "text_share": args.text_share,
            "seed": args.seed,
        },
        "seconds": {
            "generate": round(t1 - t0, 2),
            "build_graph": round(t2 - t1, 2),
            "embed_fastrp": round(t3 - t2, 2),
            "sample": round(t4 - t3, 2),
            "build_embed_sample": round(t4 - t1, 2),
        },
        "triplets": len(triplets),
        "triplets_per_s": round(len(triplets) / (t4 - t3)),
        "peak_memory_gb": round(peak, 3),
        "sampling": stats.as_dict(),
        "accuracy_vs_exact": accuracy,
        "exact_index": exact,
        "peak_memory_gb_whole_run": round(peak_memory_gb(), 3),
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "faiss": faiss_version(),
            "platform": platform.platform(),
            "cpus": cpu_count(),
        },
    }
    write(output, result)


def write(output: Path, result: dict) -> None:
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    logger.info("wrote %s", output)


def tradeoff(graph: CitationGraph, vectors: np.ndarray, args: argparse.Namespace) -> dict:
    """Each IVF setting of ``--tradeoff`` (and exact search) on a sample of queries: accuracy, time per query,
    and the time for every query."""
    candidates = np.nonzero(graph.has_text & np.isfinite(vectors).all(axis=1))[0]
    sample = np.random.default_rng(args.seed + 1).choice(
        candidates, size=min(args.timing_queries, len(candidates)), replace=False
    )
    checked = np.sort(sample[: args.recall_queries])
    settings = [("ivf", int(c), int(p)) for c, p in (pair.split(":") for pair in args.tradeoff.split(","))] + [
        ("exact", None, None)
    ]
    rows = []
    for kind, cells, nprobe in settings:
        config = SciNCLConfig(index=kind, ivf_cells=cells, ivf_nprobe=nprobe)
        timed = sample if kind == "ivf" else sample[: max(len(checked), len(sample) // 5)]
        t = time.perf_counter()
        sample_scincl_triplets(graph, timed[:1], config=config, vectors=vectors, seed=args.seed)
        fixed = time.perf_counter() - t
        t = time.perf_counter()
        triplets = sample_scincl_triplets(graph, timed, config=config, vectors=vectors, seed=args.seed)
        per_query = (time.perf_counter() - t - fixed) / (len(timed) - 1)
        mine = np.isin(triplets.query, checked)
        order = np.argsort(triplets.query[mine], kind="stable")
        positives = triplets.positive[mine][order].reshape(len(checked), 5)
        hard = mine & triplets.hard
        hards = triplets.negative[hard][np.argsort(triplets.query[hard], kind="stable")].reshape(len(checked), 2)
        ranks, _ = exact_ranks(vectors, candidates, checked, np.concatenate([positives, hards], axis=1))
        hard_ranks = ranks[:, 5:]
        distance = np.maximum(0, np.maximum(3998 - hard_ranks, hard_ranks - 3999))
        row = {
            "index": kind,
            "cells": cells,
            "nprobe": nprobe,
            "queries_timed": len(timed),
            "index_setup_s": round(fixed, 2),
            "ms_per_query": round(1000 * per_query, 3),
            "minutes_for_every_query": round(per_query * len(candidates) / 60, 1),
            "positives_in_true_top_25": round(float((ranks[:, :5] < 25).mean()), 4),
            "positive_ranks": rank_summary(ranks[:, :5], 20, 25),
            "hard_negative_ranks": rank_summary(hard_ranks, 3998, 4000),
            "hard_negative_median_distance_to_range": float(np.median(distance)),
            "hard_negative_median_distance_share_of_rank": round(float(np.median(distance)) / 4000, 4),
        }
        logger.info("tradeoff: %s", row)
        rows.append(row)
    return {
        "benchmark": "scincl_scale_tradeoff",
        "papers": args.papers,
        "candidates": len(candidates),
        "settings": rows,
        "target": {
            "hard_negative_median_distance_share_of_rank": 0.01,
            "positives_in_true_top_25": 1.0,
            "minutes_for_every_query": 15,
        },
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "faiss": faiss_version(),
            "platform": platform.platform(),
            "cpus": cpu_count(),
        },
    }


if __name__ == "__main__":
    main()
