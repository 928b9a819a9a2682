"""The paper index at scale: synthetic vectors fitted to real MiniLM vectors, against exact ``IndexFlatIP``.

Vectors are drawn from a Gaussian with the mean and covariance of the MiniLM vectors ``index_quality.py`` caches (the
union, else hep-th, else CACM; a seeded random covariance without them), in seeded blocks written to an ``.npy`` file,
so the float32 matrix is never held whole. Above the real dimension, independent draws are tiled side by side (768 =
two 384 blocks). Each kind is built from the file (``PaperIndex.build``) and measured on one thread: one-query time
against exact search, build time against exact's ``add``, peak RSS, the RSS that opening the index adds, and bytes per
paper. Exact search runs over at most ``--exact-papers`` vectors in RAM; beyond them its times are scaled by the papers
(stated).

    python benchmarks/index_scale.py --papers 1e5 --cache /work/cache/index-bench
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from sciembed.io import atomic_path, write_embeddings

#: Rows generated per block.
BLOCK = 65_536
#: One-query times are the median over this many queries.
QUERIES = 200
TOP_K = 10


def rss_mb() -> float:
    """The process's resident memory now, in MiB (Linux ``/proc``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    """The process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fitted(cache: Path | None, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The mean and a Cholesky factor of the covariance to draw from, and what they were fitted to."""
    cached = [cache / name for name in ("union.npy", "hepth.npy", "cacm.npy")] if cache else []
    real = next((path for path in cached if path.is_file()), None)
    if real is not None:
        from sciembed.io import read_embeddings

        _, vectors = read_embeddings(real)
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        mean, covariance = vectors.mean(axis=0), np.cov(vectors, rowvar=False)
        source = f"MiniLM vectors of {real.name} ({len(vectors)} papers)"
    else:
        rng = np.random.default_rng(seed)
        basis = rng.standard_normal((384, 384)) / np.sqrt(384)
        mean, covariance = rng.standard_normal(384) * 0.02, basis @ basis.T / 384
        source = "a seeded random covariance (no real vectors cached)"
    factor = np.linalg.cholesky(covariance + 1e-6 * np.eye(len(mean)))
    return mean.astype(np.float64), factor, source


def blocks(papers: int, dim: int, mean: np.ndarray, factor: np.ndarray, seed: int) -> Iterator[np.ndarray]:
    """``papers`` unit vectors of size ``dim`` in blocks, each block from its own seeded generator."""
    real = len(mean)
    for number, start in enumerate(range(0, papers, BLOCK)):
        rng = np.random.default_rng([seed, number])
        rows = min(BLOCK, papers - start)
        tiles = [mean + rng.standard_normal((rows, real)) @ factor.T for _ in range(-(-dim // real))]
        block = np.hstack(tiles)[:, :dim].astype(np.float32)
        yield block / np.linalg.norm(block, axis=1, keepdims=True)


def write_vectors(path: Path, papers: int, dim: int, mean: np.ndarray, factor: np.ndarray, seed: int) -> None:
    """The synthetic collection as an ``.npy`` file with its ids, written block by block."""
    need = papers * (4 * dim + 32)
    free = shutil.disk_usage(path.parent).free
    if need > free:
        raise SystemExit(f"{path.parent}: {need / 2**30:.1f} GiB needed for the vectors, {free / 2**30:.1f} GiB free")
    chunks = (
        ([f"p{start + i}" for i in range(len(block))], block)
        for start, block in zip(range(0, papers, BLOCK), blocks(papers, dim, mean, factor, seed))
    )
    write_embeddings(path, chunks, total=papers, dim=dim)


def exact_baseline(path: Path, limit: int, queries: np.ndarray) -> dict:
    """Exact ``IndexFlatIP`` over the first ``limit`` vectors: its add time and one-query time."""
    import faiss

    from sciembed.io import open_npy_embeddings

    _, matrix = open_npy_embeddings(path)
    index = faiss.IndexFlatIP(matrix.shape[1])
    started = time.perf_counter()
    for start in range(0, min(limit, len(matrix)), BLOCK):
        index.add(np.ascontiguousarray(matrix[start : min(start + BLOCK, limit)], dtype=np.float32))
    add = time.perf_counter() - started
    query = one_query_seconds(lambda q: index.search(q, TOP_K), queries)
    return {"papers": index.ntotal, "add_seconds": add, "query_seconds": query}


def one_query_seconds(search, queries: np.ndarray) -> float:
    """The median seconds of ``search`` on one query at a time."""
    search(queries[:1])
    times = []
    for row in range(len(queries)):
        started = time.perf_counter()
        search(queries[row : row + 1])
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def measure_kind(kind: str, path: Path, workdir: Path, queries: np.ndarray, seed: int) -> dict:
    """Build a ``kind`` index of ``path``, then open it again and time one query at a time."""
    import gc

    from sciembed import PaperIndex

    folder = workdir / kind
    started = time.perf_counter()
    built = PaperIndex.build(path, folder, kind=kind, seed=seed, overwrite=True)
    build = time.perf_counter() - started
    info = built.info()
    del built
    gc.collect()
    before = rss_mb()
    index = PaperIndex.load(folder)
    opened = rss_mb() - before
    m = index.manifest
    none = np.full(1, -1, dtype=np.int64)
    query = one_query_seconds(
        lambda q: index.codes.search(q, TOP_K, none, multiplier=m.multiplier, nprobe=m.nprobe), queries
    )
    return {
        "factory": m.factory,
        "multiplier": m.multiplier,
        "nprobe": m.nprobe,
        "recall_at_10": m.recall,
        "build_seconds": round(build, 2),
        "query_ms": round(1000 * query, 3),
        "open_rss_mb": round(opened, 1),
        "ram_bytes_per_paper": info["ram_bytes_per_paper"],
        "disk_bytes_per_paper": info["disk_bytes_per_paper"],
    }


def targets(kinds: dict, papers: int, dim: int, peak: float, total: float) -> dict[str, bool]:
    """The issue's targets that apply at this size, and whether each holds."""
    held = {}
    if "binary" in kinds:
        held["binary + rescore one query <= 0.10x exact"] = kinds["binary"]["query_vs_exact"] <= 0.10
        held["binary build <= 30x exact add"] = kinds["binary"]["build_vs_exact_add"] <= 30
    if "int8" in kinds and kinds["int8"]["factory"].startswith("IVF"):
        held["IVF-int8 one query <= 0.05x exact"] = kinds["int8"]["query_vs_exact"] <= 0.05
        held["IVF-int8 build <= 30x exact add"] = kinds["int8"]["build_vs_exact_add"] <= 30
    if papers >= 10_000_000:
        held["peak RSS <= 8 GB"] = peak <= 8 * 1024
        held["binary one query <= 250 ms"] = kinds["binary"]["query_ms"] <= 250
        held["opening adds <= 50 MB"] = all(k["open_rss_mb"] <= 50 for k in kinds.values())
        held["whole run <= 30 minutes"] = total <= 1800
    elif papers <= 100_000:
        held["whole run <= 2 minutes"] = total <= 120
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=float, default=1e5, help="papers to generate: 1e5, 1e6, 1e7")
    parser.add_argument("--dim", type=int, default=384, help="their dimension (above the real one: tiled draws)")
    parser.add_argument("--kinds", nargs="+", default=["binary", "int8"], help="kinds to build")
    parser.add_argument(
        "--cache",
        type=Path,
        help="index_quality.py's cache: the draws are fitted to its union, hep-th or CACM vectors",
    )
    parser.add_argument("--workdir", type=Path, help="folder for the vectors and indexes (default: a temporary one)")
    parser.add_argument("--exact-papers", type=float, default=1e6, help="exact search over at most this many")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", default="unstated", help="what else ran on the machine, recorded in the results")
    parser.add_argument("--output", type=Path, help="results JSON (default: results/index_scale_<papers>x<dim>.json)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    args = parser.parse_args()
    papers = int(args.papers)
    output = args.output or Path(__file__).parent / "results" / f"index_scale_{papers}x{args.dim}.json"
    if output.exists() and not args.overwrite:
        parser.error(f"{output} exists: pass --overwrite to replace it, or another --output")
    logging.basicConfig(level=logging.WARNING)
    import faiss

    faiss.omp_set_num_threads(1)
    started = time.perf_counter()
    mean, factor, source = fitted(args.cache, args.seed)
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        workdir = Path(workdir)
        path = workdir / "vectors.npy"
        write_vectors(path, papers, args.dim, mean, factor, args.seed)
        generated = time.perf_counter() - started
        queries = next(blocks(QUERIES, args.dim, mean, factor, args.seed + 1))
        exact = exact_baseline(path, int(args.exact_papers), queries)
        scale = papers / exact["papers"]
        exact_query, exact_add = exact["query_seconds"] * scale, exact["add_seconds"] * scale
        kinds = {}
        for kind in args.kinds:
            row = measure_kind(kind, path, workdir, queries, args.seed)
            row["query_vs_exact"] = round(row["query_ms"] / 1000 / exact_query, 4)
            row["build_vs_exact_add"] = round(row["build_seconds"] / exact_add, 2)
            kinds[kind] = row
            print(kind, json.dumps(row), flush=True)
    total = time.perf_counter() - started
    held = targets(kinds, papers, args.dim, peak_mb(), total)
    report = {
        "benchmark": "index_scale",
        "description": __doc__.strip().splitlines()[0],
        "papers": papers,
        "dim": args.dim,
        "fitted_to": source,
        "tiled": args.dim > len(mean),
        "threads": 1,
        "load": args.load,
        "seed": args.seed,
        "exact": {
            "measured_papers": exact["papers"],
            "scaled_by": round(scale, 3),
            "add_seconds": round(exact_add, 3),
            "query_ms": round(1000 * exact_query, 3),
        },
        "generate_seconds": round(generated, 1),
        "kinds": kinds,
        "peak_rss_mb": round(peak_mb(), 1),
        "total_seconds": round(total, 1),
        "targets": held,
        "targets_held": all(held.values()),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
