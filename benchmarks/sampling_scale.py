"""SPECTER triplet sampling at scale: a synthetic power-law citation graph, and a dict-of-dicts baseline.

Part 1 (scale): builds a synthetic citation graph (default 1,000,000 papers, 20,000,000 citations;
seeded numpy), turns it into a :class:`sciembed.data.graph.CitationGraph`, and samples SPECTER
triplets (5 per query: 2 hard, 3 easy) for every query with text. It reports the wall time of graph
generation, graph build and sampling, triplets per second, and the process's peak resident memory
(``resource.getrusage(...).ru_maxrss``, taken right after this part, so it covers everything up to then).
Target: build + sampling under 3 minutes and peak under 6 GB on a 2-core machine.

Part 2 (comparison, same run): on a smaller graph from the same generator (default 100,000 papers,
same citations per paper) it times sciembed's vectorised sampler against a straightforward
dict-of-dicts implementation of the same rules (``{citing: {cited: 1}}``, a Python set for the
two-hop pool, ``random.choice``), and reports the speed ratio.

The generator: each citation's citing paper is drawn with probability proportional to a Pareto
"productivity" weight and its cited paper with probability proportional to a Zipf "popularity" weight
(``rank ** -alpha`` over a random permutation), so both out- and in-degrees are heavy-tailed, as in
real citation graphs; self-citations and repeats are then dropped by the graph builder (and counted).
A share of papers (``--text-share``) has text.

Part 3 (string ids, same run): the scale graph again, its papers named by 40-character hex ids as
Semantic Scholar's, the citations written to Parquet as string columns. Each way of building the graph
from that file runs in its own process, so that each peak memory (its ``VmHWM``) is its own: ``arrow``,
:meth:`CitationGraph.from_edges` on the Arrow columns as read (ids factorised by Arrow's
``dictionary_encode``), and ``numpy_unicode``, the factorisation the library used before (the columns as
numpy unicode arrays, ``np.unique(..., return_inverse=True)`` over their concatenation, then the same CSR
build). Both then sample SPECTER triplets, and must give the same graph. A way that does not finish (the
kernel ends it when memory runs out) is reported as failed, and both are then compared at a quarter of
the size as well.

    python benchmarks/sampling_scale.py                      # full size, a few minutes
    python benchmarks/sampling_scale.py --papers 20000 --citations 400000 --baseline-papers 5000   # quick
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sciembed.data.graph import CitationGraph
from sciembed.data.samplers import sample_specter_triplets
from sciembed.io import atomic_path

logger = logging.getLogger("sampling_scale")


def synthetic_citations(
    papers: int, citations: int, seed: int, alpha: float = 0.8
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """``(citing, cited, rng)``: index arrays of a power-law citation graph (see the module docstring) and
    the generator, to draw further seeded values from."""
    rng = np.random.default_rng(seed)
    productivity = rng.pareto(2.0, papers) + 1.0
    popularity = np.empty(papers)
    popularity[rng.permutation(papers)] = np.arange(1, papers + 1, dtype=np.float64) ** -alpha
    citing = _draw(rng, productivity, citations)
    cited = _draw(rng, popularity, citations)
    return citing, cited, rng


def _draw(rng: np.random.Generator, weights: np.ndarray, size: int) -> np.ndarray:
    cumulative = np.cumsum(weights)
    cumulative /= cumulative[-1]
    return np.minimum(np.searchsorted(cumulative, rng.random(size), side="right"), len(weights) - 1).astype(np.int32)


def synthetic_graph(papers: int, citations: int, seed: int, text_share: float) -> CitationGraph:
    citing, cited, rng = synthetic_citations(papers, citations, seed)
    has_text = rng.random(papers) < text_share
    return CitationGraph.from_indices(citing, cited, papers, has_text=has_text)


def dict_of_dicts_sampler(
    graph: dict[int, dict[int, int]], text: set[int], seed: int, per_query: int = 5, hard: int = 2
) -> list[tuple[int, int, int]]:
    """The same SPECTER rules, written the straightforward way over a dict of dicts."""
    chooser = random.Random(seed)
    text_list = sorted(text)
    triplets = []
    for query in sorted(graph):
        if query not in text:
            continue
        cited = graph[query]
        positives = [c for c in cited if c in text]
        if not positives:
            continue
        reached: set[int] = set()
        for c in cited:
            reached.update(graph.get(c, ()))
        pool = [x for x in reached if x != query and x not in cited and x in text]
        n_hard = hard if pool else 0
        for slot in range(per_query):
            positive = chooser.choice(positives)
            if slot < n_hard:
                negative = chooser.choice(pool)
            else:
                while True:
                    negative = chooser.choice(text_list)
                    if negative != query and negative not in cited:
                        break
            triplets.append((query, positive, negative))
    return triplets


def peak_memory_gb() -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e9


def own_peak_memory_gb() -> float:
    """This process's resident-memory high-water mark since it started (Linux ``VmHWM``). ``ru_maxrss`` would
    not do for a child: Linux carries the parent's peak at fork time across ``exec`` into it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e9
    return peak_memory_gb()


def check_rules(graph: CitationGraph, triplets, count: int, seed: int) -> int:
    """Check the SPECTER rules on a random subset of the triplets; returns how many were checked."""
    pick = np.random.default_rng(seed).choice(len(triplets), size=min(count, len(triplets)), replace=False)
    q, p, n, h = triplets.query[pick], triplets.positive[pick], triplets.negative[pick], triplets.hard[pick]
    assert graph.has_text[q].all() and graph.has_text[p].all() and graph.has_text[n].all()
    assert graph.has_edge(q, p).all() and not graph.has_edge(q, n).any()
    for query, negative in zip(q[h][:200], n[h][:200]):
        assert negative in set(graph.two_hop(query).tolist())
    return len(pick)


def write_string_id_edges(folder: Path, papers: int, citations: int, seed: int, text_share: float) -> None:
    """The scale graph's citations with 40-character hex ids, as Parquet string columns, and its papers with text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    citing, cited, rng = synthetic_citations(papers, citations, seed)
    has_text = rng.random(papers) < text_share
    ids = pa.array(
        [f"{value:040x}" for value in np.random.default_rng(seed + 7).integers(0, 2**63, papers, dtype=np.int64)]
    )
    pq.write_table(
        pa.table({"citing": ids.take(pa.array(citing)), "cited": ids.take(pa.array(cited))}),
        folder / "citations.parquet",
    )
    pq.write_table(pa.table({"paper_id": ids.filter(pa.array(has_text))}), folder / "papers_with_text.parquet")


def build_from_string_ids(folder: Path, way: str, seed: int) -> dict:
    """Read the Parquet citations, build the graph the given way, sample SPECTER triplets; times and peak memory."""
    import pyarrow.parquet as pq

    start = time.perf_counter()
    citations = pq.read_table(folder / "citations.parquet")
    with_text = pq.read_table(folder / "papers_with_text.parquet").column("paper_id")
    read = time.perf_counter()
    if way == "arrow":
        graph = CitationGraph.from_edges(
            citations.column("citing"), citations.column("cited"), papers_with_text=with_text
        )
    else:
        # One column at a time, each freed once converted, to give the old way its best chance.
        citing = citations.column("citing").to_numpy().astype(str)
        cited = citations.column("cited").to_numpy().astype(str)
        del citations
        text = with_text.to_numpy().astype(str)
        ids, inverse = np.unique(np.concatenate([citing, cited, text]), return_inverse=True)
        edges = len(citing)
        has_text = np.zeros(len(ids), dtype=bool)
        has_text[inverse[2 * edges :]] = True
        graph = CitationGraph.from_indices(
            inverse[:edges], inverse[edges : 2 * edges], len(ids), ids=ids, has_text=has_text
        )
    built = time.perf_counter()
    triplets = sample_specter_triplets(graph, seed=seed)
    sampled = time.perf_counter()
    return {
        "way": way,
        "read_s": round(read - start, 2),
        "build_s": round(built - read, 2),
        "sample_s": round(sampled - built, 2),
        "peak_memory_gb": round(own_peak_memory_gb(), 3),
        "papers": graph.num_papers,
        "citations": graph.num_citations,
        "triplets": len(triplets),
        "ids_bytes_per_paper": round(graph.ids.nbytes / graph.num_papers),
        "structure_sha": _graph_digest(graph),
    }


def _graph_digest(graph: CitationGraph) -> str:
    import hashlib

    digest = hashlib.sha256()
    for array in (graph.out_indptr, graph.out_indices, graph.has_text):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update("\n".join(graph.ids[:: max(1, graph.num_papers // 1000)].tolist()).encode())
    return digest.hexdigest()[:16]


def string_id_comparison(args: argparse.Namespace) -> dict:
    """Part 3: both ways of building from 40-character string ids, each in its own process, at the scale
    graph's size and, when a way does not finish there (the machine's memory), at a quarter of it too."""
    result = {}
    for share in (1, 4):
        papers, citations = args.papers // share, args.citations // share
        with tempfile.TemporaryDirectory() as folder:
            t0 = time.perf_counter()
            write_string_id_edges(Path(folder), papers, citations, args.seed, args.text_share)
            runs = {
                "papers": papers,
                "citations_drawn": citations,
                "id_length": 40,
                "write_parquet_s": round(time.perf_counter() - t0, 2),
            }
            for way in ("arrow", "numpy_unicode"):
                done = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--string-ids-way",
                        way,
                        "--string-ids-folder",
                        folder,
                        "--seed",
                        str(args.seed),
                    ],
                    capture_output=True,
                    text=True,
                )
                if done.returncode == 0:
                    runs[way] = json.loads(done.stdout.strip().splitlines()[-1])
                else:  # the kernel's out-of-memory killer ends it with SIGKILL
                    runs[way] = {
                        "failed": f"exit {done.returncode}"
                        + (" (SIGKILL: out of memory)" if done.returncode == -9 else ""),
                        "stderr": done.stderr[-500:],
                    }
                logger.info("string ids, %d papers, %s: %s", papers, way, runs[way])
        if "failed" not in runs["arrow"] and "failed" not in runs["numpy_unicode"]:
            runs |= {
                "same_graph": runs["arrow"]["structure_sha"] == runs["numpy_unicode"]["structure_sha"],
                "peak_memory_ratio_numpy_over_arrow": round(
                    runs["numpy_unicode"]["peak_memory_gb"] / runs["arrow"]["peak_memory_gb"], 2
                ),
                "build_time_ratio_numpy_over_arrow": round(
                    runs["numpy_unicode"]["build_s"] / runs["arrow"]["build_s"], 2
                ),
            }
        result["full_scale" if share == 1 else "quarter_scale"] = runs
        if "failed" not in runs["numpy_unicode"]:
            break
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=1_000_000, help="papers in the scale graph (default 1,000,000)")
    parser.add_argument(
        "--citations", type=int, default=20_000_000, help="citations drawn for the scale graph (default 20,000,000)"
    )
    parser.add_argument(
        "--baseline-papers",
        type=int,
        default=100_000,
        help="papers in the comparison graph (same citations per paper)",
    )
    parser.add_argument("--text-share", type=float, default=0.9, help="share of papers with text (default 0.9)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "sampling_scale.json")
    parser.add_argument(
        "--string-ids-way", choices=("arrow", "numpy_unicode"), help=argparse.SUPPRESS
    )  # part 3's worker
    parser.add_argument("--string-ids-folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.string_ids_way:
        print(json.dumps(build_from_string_ids(args.string_ids_folder, args.string_ids_way, args.seed)))
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    # Part 1: scale.
    start = time.perf_counter()
    citing, cited, rng = synthetic_citations(args.papers, args.citations, args.seed)
    has_text = rng.random(args.papers) < args.text_share
    generated = time.perf_counter()
    graph = CitationGraph.from_indices(citing, cited, args.papers, has_text=has_text)
    del citing, cited
    built = time.perf_counter()
    triplets = sample_specter_triplets(graph, seed=args.seed)
    sampled = time.perf_counter()
    scale_peak = peak_memory_gb()
    checked = check_rules(graph, triplets, 10_000, args.seed)
    build_s, sample_s = built - generated, sampled - built
    scale = {
        "papers": args.papers,
        "citations_drawn": args.citations,
        "graph": graph.stats.as_dict(),
        "max_out_degree": int(graph.out_degree.max()),
        "max_in_degree": int(graph.in_degree.max()),
        "sampling": triplets.stats.as_dict(),
        "generate_s": round(generated - start, 2),
        "build_s": round(build_s, 2),
        "sample_s": round(sample_s, 2),
        "build_plus_sample_s": round(build_s + sample_s, 2),
        "triplets_per_s": round(len(triplets) / sample_s),
        "peak_memory_gb": round(scale_peak, 3),
        "rules_checked_on": checked,
        "target": {"build_plus_sample_s": 180, "peak_memory_gb": 6},
        "meets_target": bool(build_s + sample_s < 180 and scale_peak < 6),
    }
    logger.info("scale: %s", scale)
    del graph, triplets

    # Part 2: the same rules, vectorised vs dict of dicts, on one smaller graph.
    per_paper = args.citations / args.papers
    small = synthetic_graph(
        args.baseline_papers, int(per_paper * args.baseline_papers), args.seed + 1, args.text_share
    )
    t0 = time.perf_counter()
    ours = sample_specter_triplets(small, seed=args.seed)
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    as_dicts = {int(i): {int(c): 1 for c in small.cited(i)} for i in range(small.num_papers) if small.out_degree[i]}
    text = set(np.nonzero(small.has_text)[0].tolist())
    convert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    baseline = dict_of_dicts_sampler(as_dicts, text, args.seed)
    baseline_s = time.perf_counter() - t0
    base_q = np.array([t[0] for t in baseline])
    base_n = np.array([t[2] for t in baseline])
    comparison = {
        "papers": args.baseline_papers,
        "citations": small.num_citations,
        "sciembed_s": round(ours_s, 3),
        "dict_of_dicts_s": round(baseline_s, 3),
        "dict_of_dicts_graph_conversion_s": round(convert_s, 3),
        "speed_ratio": round(baseline_s / ours_s, 1),
        "sciembed_triplets": len(ours),
        "dict_of_dicts_triplets": len(baseline),
        "sciembed_hard_negatives": ours.stats.hard_negatives,
        "dict_of_dicts_negatives_cited": int(small.has_edge(base_q, base_n).sum()),
    }
    logger.info("comparison: %s", comparison)

    string_ids = string_id_comparison(args)
    result = {
        "benchmark": "sampling_scale",
        "scale": scale,
        "comparison": comparison,
        "string_ids": string_ids,
        "peak_memory_gb_whole_run": round(peak_memory_gb(), 3),
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            "cpus": cpu_count(),
        },
    }
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    logger.info("wrote %s", args.output)


def cpu_count() -> int | None:
    """CPUs this process may run on (its affinity set where the platform has one)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


if __name__ == "__main__":
    main()
