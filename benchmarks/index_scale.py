"""The paper index at scale: synthetic vectors fitted to real MiniLM vectors, against exact ``IndexFlatIP``.

Vectors are drawn from a Gaussian mixture fitted to the MiniLM vectors ``index_quality.py`` caches (the union, else
hep-th, else CACM; a seeded random mixture without them): one component per k-means centre, each with its residuals'
principal directions and a diagonal for the rest, so the papers keep the clusters that real papers form. They are
drawn in seeded blocks written to an ``.npy`` file, so the float32 matrix is never held whole. Above the real
dimension, a paper's tiles share its component and draw their residuals independently (768 = two 384 blocks). A binary
index of the real vectors and of as many synthetic ones shows how alike they are for search. Each kind is built from
the file (``PaperIndex.build``) and measured on one thread: one-query time against exact search, build and tuning time
against exact's ``add``, peak RSS, the RSS that opening the index adds, and bytes per paper. Exact search runs over at
most ``--exact-papers`` vectors in RAM; beyond them its times are scaled by the papers (stated). ``--dry-run`` runs
the steps of a size the machine cannot take now on fewer papers, and projects the requested size's disk, bytes and
flat query times. The load average is recorded at the start and the end.

    python benchmarks/index_scale.py --papers 1e5 --cache /work/cache/index-bench
    python benchmarks/index_scale.py --papers 1e7 --dim 768 --kinds binary --cache /work/cache/index-bench --dry-run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from embed_scale import machine

from sciembed.io import atomic_path, write_embeddings

#: Rows generated per block.
BLOCK = 65_536
#: Mixture components fitted to the real vectors (k-means centres).
COMPONENTS = 256
#: Principal residual directions each component keeps besides its diagonal.
RANK = 8
#: Papers a ``--dry-run`` generates at most.
DRY_RUN_PAPERS = 20_000
#: One-query times are the median over this many queries.
QUERIES = 100
TOP_K = 10


def rss_mb() -> float:
    """The process's resident memory now, in MiB (Linux ``/proc``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    """The process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_phase_peak() -> None:
    """Start measuring a phase's peak resident memory afresh (Linux ``/proc/self/clear_refs``; the process's own
    ``ru_maxrss`` restarts with it)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def phase_peak_mb() -> float:
    """The peak resident memory since :func:`reset_phase_peak`, in MiB (the whole run's where it cannot be reset)."""
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return peak_mb()


class RssSampler:
    """The largest anonymous and file-backed resident memory of this process, sampled by a thread.

    Args:
        every: seconds between samples.
    """

    def __init__(self, every: float = 0.2):
        import threading

        self.every, self.peaks = every, {"RssAnon": 0.0, "RssFile": 0.0}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(OSError), open("/proc/self/status") as status:
            for line in status:
                name = line.split(":")[0]
                if name in self.peaks:
                    self.peaks[name] = max(self.peaks[name], int(line.split()[1]) / 1024)


#: What the memory figures of the results measure.
MEMORY_MEASURED = (
    "peak_rss_mb: the process's peak resident memory (VmHWM) in each phase, reset at its start through "
    "/proc/self/clear_refs; it counts anonymous and file-backed pages. peak_rss_anon_mb and peak_rss_file_mb: the "
    "largest RssAnon and RssFile sampled every 0.2 s in the phase (file-backed pages the kernel can drop)."
)


@dataclass(frozen=True)
class Mixture:
    """A Gaussian mixture to draw synthetic papers from: one component per k-means centre of real vectors.

    Attributes:
        weights: each component's share of the papers.
        centres: ``(k, d)`` component means.
        directions: ``(k, r, d)`` each component's principal residual directions, scaled by their spread.
        spread: ``(k, d)`` each component's remaining residual standard deviation per dimension.
        source: what the mixture was fitted to, in words.
    """

    weights: np.ndarray
    centres: np.ndarray
    directions: np.ndarray
    spread: np.ndarray
    source: str

    @property
    def dim(self) -> int:
        """The dimension of one draw."""
        return self.centres.shape[1]

    def describe(self) -> dict:
        """How the synthetic data is made, for the results."""
        return {
            "fitted_to": self.source,
            "model": (
                f"Gaussian mixture of {len(self.weights)} components: k-means centres of the unit vectors, each "
                f"with its residuals' top {self.directions.shape[1]} principal directions plus a diagonal for the "
                "rest; rows drawn in seeded blocks and scaled to unit length"
            ),
            "components": len(self.weights),
            "rank": self.directions.shape[1],
        }


def real_vectors(cache: Path | None) -> tuple[np.ndarray, str] | None:
    """The unit MiniLM vectors ``index_quality.py`` cached (the union, else hep-th, else CACM) and their name."""
    cached = [cache / name for name in ("union.npy", "hepth.npy", "cacm.npy")] if cache else []
    real = next((path for path in cached if path.is_file()), None)
    if real is None:
        return None
    from sciembed.data.knn import unit_rows
    from sciembed.io import read_embeddings

    _, vectors = read_embeddings(real)
    return unit_rows(vectors.astype(np.float32)), f"MiniLM vectors of {real.name} ({len(vectors)} papers)"


def fitted(real: tuple[np.ndarray, str] | None, seed: int, components: int = COMPONENTS, rank: int = RANK) -> Mixture:
    """The mixture fitted to ``real`` vectors (a seeded random one without them).

    Args:
        real: unit vectors and their name, or ``None``.
        seed: seeds the k-means (or the random mixture).
        components: mixture components (at most one per 16 real vectors).
        rank: principal residual directions kept per component.
    """
    import faiss

    rng = np.random.default_rng(seed)
    if real is None:
        basis = rng.standard_normal((components, 384)).astype(np.float32)
        vectors = basis[rng.integers(0, components, 20 * components)] + 0.5 * rng.standard_normal(
            (20 * components, 384)
        )
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        source = "a seeded random mixture (no real vectors cached)"
    else:
        vectors, source = real
    k = max(1, min(components, len(vectors) // 16))
    kmeans = faiss.Kmeans(vectors.shape[1], k, niter=20, seed=seed, spherical=False)
    kmeans.train(vectors)
    _, assigned = kmeans.index.search(vectors, 1)
    assigned = assigned[:, 0]
    residuals = vectors - kmeans.centroids[assigned]
    pooled = residuals.std(axis=0)
    directions = np.zeros((k, rank, vectors.shape[1]), dtype=np.float32)
    spread = np.tile(pooled, (k, 1)).astype(np.float32)
    for j in range(k):
        own = residuals[assigned == j]
        if len(own) < 2:
            continue
        _, values, basis = np.linalg.svd(own, full_matrices=False)
        kept = min(rank, len(own) - 1)
        directions[j, :kept] = basis[:kept] * (values[:kept, None] / np.sqrt(len(own) - 1))
        rest = own - (own @ basis[:kept].T) @ basis[:kept]
        spread[j] = np.sqrt((rest**2).sum(axis=0) / (len(own) - 1))
    weights = np.bincount(assigned, minlength=k) / len(assigned)
    return Mixture(weights, kmeans.centroids.astype(np.float64), directions, spread, source)


def blocks(papers: int, dim: int, mixture: Mixture, seed: int) -> Iterator[np.ndarray]:
    """``papers`` unit vectors of size ``dim`` in blocks, each block from its own seeded generator.

    Above the mixture's dimension, a paper's tiles share its component and draw their residuals independently.
    """
    tiles = -(-dim // mixture.dim)
    for number, start in enumerate(range(0, papers, BLOCK)):
        rng = np.random.default_rng([seed, number])
        rows = min(BLOCK, papers - start)
        component = rng.choice(len(mixture.weights), rows, p=mixture.weights)
        block = np.empty((rows, tiles * mixture.dim), dtype=np.float32)
        for tile in range(tiles):
            columns = slice(tile * mixture.dim, (tile + 1) * mixture.dim)
            low = rng.standard_normal((rows, mixture.directions.shape[1]))
            noise = rng.standard_normal((rows, mixture.dim))
            for j in np.unique(component):
                mine = component == j
                block[mine, columns] = (
                    mixture.centres[j] + low[mine] @ mixture.directions[j] + noise[mine] * mixture.spread[j]
                )
        block = block[:, :dim]
        yield block / np.linalg.norm(block, axis=1, keepdims=True)


def write_vectors(path: Path, papers: int, dim: int, mixture: Mixture, seed: int) -> None:
    """The synthetic collection as an ``.npy`` file with its ids, written block by block."""
    need = papers * (4 * dim + 32)
    free = shutil.disk_usage(path.parent).free
    if need > free:
        raise SystemExit(f"{path.parent}: {need / 2**30:.1f} GiB needed for the vectors, {free / 2**30:.1f} GiB free")
    chunks = (
        ([f"p{start + i}" for i in range(len(block))], block)
        for start, block in zip(range(0, papers, BLOCK), blocks(papers, dim, mixture, seed))
    )
    write_embeddings(path, chunks, total=papers, dim=dim)


def compare_with_real(real: tuple[np.ndarray, str], mixture: Mixture, workdir: Path, seed: int) -> dict:
    """Binary indexes of the real vectors and of as many synthetic ones: the tuned multiplier and recall of each,
    and the mean similarity of the nearest and the tenth nearest neighbour."""
    from sciembed import PaperIndex

    vectors, _ = real
    synthetic = np.vstack(list(blocks(len(vectors), vectors.shape[1], mixture, seed + 2)))
    compared = {}
    for name, matrix in (("real", vectors), ("synthetic", synthetic)):
        path = workdir / f"compare-{name}.npy"
        write_embeddings(
            path, [([f"p{i}" for i in range(len(matrix))], matrix)], total=len(matrix), dim=matrix.shape[1]
        )
        index = PaperIndex.build(path, workdir / f"compare-{name}", kind="binary", seed=seed, overwrite=True)
        sample = matrix[:: max(1, len(matrix) // QUERIES)][:QUERIES]
        nearest = np.sort(sample @ matrix.T, axis=1)[:, -TOP_K - 1 : -1]  # the top row is each query itself
        compared[name] = {
            "binary_multiplier": index.manifest.multiplier,
            "binary_recall_at_10": round(index.manifest.recall, 4),
            "nearest_similarity": round(float(nearest[:, -1].mean()), 3),
            "tenth_similarity": round(float(nearest[:, 0].mean()), 3),
        }
        del index
        shutil.rmtree(workdir / f"compare-{name}")
    return {"papers": len(vectors), **compared}


def dry_run_projection(requested: int, papers: int, dim: int, kinds: dict, exact_query: float) -> dict:
    """What the requested size needs, projected from a sized-down run: disk, and one-query times that grow with
    the papers a flat index scans."""
    projected: dict[str, object] = {
        "requested_papers": requested,
        "measured_papers": papers,
        "vectors_disk_gib": round(requested * (4 * dim + 32) / 2**30, 1),
        "exact_query_ms": round(1000 * exact_query, 1),
    }
    for kind, row in kinds.items():
        if row["nprobe"] is None:
            projected[f"{kind}_query_ms"] = round(row["query_ms"] * requested / papers, 1)
        projected[f"{kind}_ram_gib"] = round(requested * row["ram_bytes_per_paper"] / 2**30, 2)
        projected[f"{kind}_disk_gib"] = round(requested * row["disk_bytes_per_paper"] / 2**30, 2)
    return projected


def exact_baseline(path: Path, limit: int, queries: np.ndarray) -> dict:
    """Exact ``IndexFlatIP`` over the first ``limit`` vectors: its add time and one-query time."""
    import faiss

    from sciembed.io import npy_blocks

    matrix = np.load(path, mmap_mode="r")  # the shape and offset, for the plain reads
    index = faiss.IndexFlatIP(matrix.shape[1])
    started = time.perf_counter()
    for block in npy_blocks(matrix, 0, BLOCK):  # plain reads: no page of the file stays resident
        index.add(np.ascontiguousarray(block[: limit - index.ntotal], dtype=np.float32))
        if index.ntotal >= limit:
            break
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
    reset_phase_peak()
    with RssSampler() as sampled:
        started = time.perf_counter()
        built = PaperIndex.build(path, folder, kind=kind, seed=seed, overwrite=True)
        build = time.perf_counter() - started
        info = built.info()
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
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
        "tune_seconds": report["tune_seconds"],
        "query_ms": round(1000 * query, 3),
        "open_rss_mb": round(opened, 1),
        "peak_rss_mb": round(phase_peak_mb(), 1),
        "peak_rss_anon_mb": round(sampled.peaks["RssAnon"], 1),
        "peak_rss_file_mb": round(sampled.peaks["RssFile"], 1),
        "ram_bytes_per_paper": info["ram_bytes_per_paper"],
        "disk_bytes_per_paper": info["disk_bytes_per_paper"],
    }


def targets(kinds: dict, papers: int, total: float, peak: float) -> dict[str, bool]:
    """The issue's targets that apply at this size, and whether each holds.

    Args:
        kinds: each kind's measures.
        papers: the papers requested.
        total: the whole run's seconds.
        peak: the whole run's peak RSS in MiB (generation, the exact baseline and every kind).
    """
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
    parser.add_argument(
        "--no-compare",
        dest="compare",
        action="store_false",
        help="skip the binary index built on the real vectors and on as many synthetic ones",
    )
    parser.add_argument(
        "--dry-run",
        nargs="?",
        type=float,
        const=DRY_RUN_PAPERS,
        metavar="PAPERS",
        help=f"run the same steps on at most PAPERS ({DRY_RUN_PAPERS}) and project the requested size from them",
    )
    parser.add_argument("--output", type=Path, help="results JSON (default: results/index_scale_<papers>x<dim>.json)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    args = parser.parse_args()
    requested = int(args.papers)
    papers = min(requested, int(args.dry_run)) if args.dry_run else requested
    name = f"index_scale_{requested}x{args.dim}{'_dry_run' if args.dry_run else ''}.json"
    output = args.output or Path(__file__).parent / "results" / name
    if output.exists() and not args.overwrite:
        parser.error(f"{output} exists: pass --overwrite to replace it, or another --output")
    logging.basicConfig(level=logging.WARNING)
    import faiss
    from threadpoolctl import threadpool_limits

    faiss.omp_set_num_threads(1)
    threadpool_limits(1)  # numpy's BLAS too: exact search and the builds run on one thread
    started = time.perf_counter()
    load_start = os.getloadavg()
    real = real_vectors(args.cache)
    mixture = fitted(real, args.seed)
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        workdir = Path(workdir)
        compared = compare_with_real(real, mixture, workdir, args.seed) if real is not None and args.compare else None
        begun = time.perf_counter()
        path = workdir / "vectors.npy"
        with RssSampler() as generating:
            write_vectors(path, papers, args.dim, mixture, args.seed)
        generated = time.perf_counter() - begun
        queries = next(blocks(QUERIES, args.dim, mixture, args.seed + 1))
        peaks = [phase_peak_mb()]  # fitting, comparing and generating
        reset_phase_peak()
        with RssSampler() as sampled:
            exact = exact_baseline(path, int(args.exact_papers), queries)
        exact["peak_rss_mb"] = phase_peak_mb()
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
            peak = max(*peaks, exact["peak_rss_mb"], *(k["peak_rss_mb"] for k in kinds.values()))
            finished = not args.dry_run and len(kinds) == len(args.kinds)
            held = targets(kinds, requested, total, peak) if finished else {}
            report = {
                "benchmark": "index_scale",
                "description": __doc__.strip().splitlines()[0],
                "papers": papers,
                "dim": args.dim,
                "data": {**mixture.describe(), "tiled": args.dim > mixture.dim},
                "compared_with_real": compared,
                "threads": 1,
                "machine": machine(),
                "load": args.load,
                "load_average": {
                    "start": [round(x, 2) for x in load_start],
                    "end": [round(x, 2) for x in os.getloadavg()],
                },
                "seed": args.seed,
                "exact": {
                    "measured_papers": exact["papers"],
                    "scaled_by": round(scale, 3),
                    "add_seconds": round(exact_add, 3),
                    "query_ms": round(1000 * exact_query, 3),
                    "peak_rss_mb": round(exact["peak_rss_mb"], 1),
                    "peak_rss_anon_mb": round(sampled.peaks["RssAnon"], 1),
                    "peak_rss_file_mb": round(sampled.peaks["RssFile"], 1),
                },
                "generate_seconds": round(generated, 1),
                "generate_peak_rss_mb": round(peaks[0], 1),
                "generate_peak_rss_anon_mb": round(generating.peaks["RssAnon"], 1),
                "generate_peak_rss_file_mb": round(generating.peaks["RssFile"], 1),
                "memory_measured": MEMORY_MEASURED,
                "kinds": kinds,
                "kinds_left": [k for k in args.kinds if k not in kinds],
                "peak_rss_mb": round(peak, 1),
                "total_seconds": round(total, 1),
                "targets": held,
                "targets_held": all(held.values()) if held else None,
            }
            if args.dry_run:
                projected = dry_run_projection(requested, papers, args.dim, kinds, exact_query * requested / papers)
                report["dry_run"] = projected
            write_report(output, report)  # each kind's results as they come
    print(f"wrote {output}")


def write_report(output: Path, report: dict) -> None:
    """``report`` as the JSON ``output``, written atomically."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
