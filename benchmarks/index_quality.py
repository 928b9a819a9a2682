"""The paper index's quality on real vectors: every kind against exact ``IndexFlatIP`` in the same run and threads.

The embedded MiniLM embeds CACM, every linked hep-th paper and the other shared collections with text
(``UNION_SOURCES``) once into ``--cache`` (``sciembed embed``; later runs reuse the files). The union holds every
source's papers, deduplicated by id within the source and prefixed by its name, with the count per source and what was
skipped. arXiv is a seeded sample of ``--arxiv-papers`` papers (``--arxiv-papers all`` embeds every one).
For each kind this measures recall@10 against exact search with its lower confidence bound (and the build's own
tuning recall, bound and held-out papers), bytes per paper in RAM and on disk, the one-thread query and build times as
ratios of exact's, CACM cite MAP on the vectors the index scores with (``evaluate`` on the decoded codes) against
float32, and on hep-th the share of the top 10 neighbours that cite or are cited by the query, against exact's share.
The issue's targets are recorded with whether each holds, and the results are written after each collection.

    python benchmarks/index_quality.py --data ../shared/data --cache /work/cache/index-bench
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from embed_scale import machine

from sciembed.io import atomic_path, write_embeddings

KINDS = ("exact", "int8", "binary", "pq")
COLLECTIONS = ("cacm", "hepth", "union")


@dataclass(frozen=True)
class Source:
    """One shared collection of the union besides CACM and hep-th.

    Args:
        files: its paper files under ``--data``, read in order (a repeated id keeps the first).
        sampled: whether ``--arxiv-papers`` samples it.
        arxiv_ids: whether its ids are arXiv ids, some damaged upstream (:func:`arxiv_id` repairs them).
        left_out: files of the collection that hold no paper records, and why they are left out.
    """

    files: tuple[str, ...]
    sampled: bool = False
    arxiv_ids: bool = False
    left_out: tuple[str, ...] = ()


#: The other shared collections with text that the union holds besides CACM and hep-th.
UNION_SOURCES = {
    "arxiv": Source(
        ("arxiv-metadata/kaggle-first-2000/arxiv_data.csv", "arxiv-metadata/random-2007-2008/arxiv_sample.csv"),
        sampled=True,
        arxiv_ids=True,
    ),
    "s2orc": Source(("s2orc-sample/data/metadata/sample.jsonl",)),
    "scirepeval": Source(
        ("scirepeval-samples/fos_small.json", "scirepeval-samples/mesh_small.json"),
        left_out=(
            "scirepeval-samples/specter_small.json: citation triplets, not paper records",
            "scirepeval-samples/search_small.jsonl: search sessions, not paper records",
        ),
    ),
    "specter": Source(("specter/sample-metadata.json", "specter/training/metadata.json")),
}
#: An arXiv id that a float conversion damaged upstream: ``704.2`` is ``0704.2000``.
DAMAGED_ARXIV_ID = re.compile(r"(\d{3,4})\.(\d{1,4})")
#: Queries timed per kind, the same for every kind.
TIMED_QUERIES = 1000
TOP_K = 10


def hepth_source(data: Path, folder: Path):
    """hep-th's papers with text and both citation sets, as one citation source (papers written to ``folder``)."""
    from sciembed.data.arxiv import read_arxiv_abstracts
    from sciembed.data.edges import read_edge_list
    from sciembed.training.examples import CitationFiles, read_citation_source

    listing = read_arxiv_abstracts(data / "hepth" / "abstracts", skip_invalid=True)
    papers = folder / "hepth-all.jsonl"
    papers.write_text(
        "".join(json.dumps({k: p[k] for k in ("paper_id", "title", "abstract")}) + "\n" for p in listing.papers)
    )
    edges = [
        read_edge_list(data / "hepth" / "citations-2000-2002" / "df_formatted.csv"),
        read_edge_list(data / "hepth" / "citations-1992-2001-prefix" / "Cit-HepTh.txt"),
    ]
    citations = folder / "hepth-citations.csv"
    citations.write_text(
        "citing,cited\n"
        + "".join(f"{a},{b}\n" for e in edges for a, b in zip(e.citing.to_pylist(), e.cited.to_pylist()))
    )
    return read_citation_source(CitationFiles(papers, citations))


def embedded(papers: Path, output: Path) -> Path:
    """``output`` (``.npy``), embedding ``papers`` with the embedded MiniLM unless it is there already."""
    if not output.is_file():
        command = [sys.executable, "-m", "sciembed.cli", "embed", "--input", str(papers), "--output", str(output)]
        subprocess.run([*command, "--skip-invalid", "--resume", "--no-progress"], check=True)
    return output


def collections(data: Path, cache: Path, names: list[str], arxiv_papers: int | None, seed: int) -> dict[str, dict]:
    """The collections in ``names``: their vectors (``.npy`` in ``cache``) and citation links (id -> linked ids).

    Args:
        data: the shared data folder.
        cache: the folder of embedded vectors, reused by later runs.
        names: ``cacm``, ``hepth`` and ``union``.
        arxiv_papers: the size of the union's seeded arXiv sample, ``None`` for every arXiv paper.
        seed: seeds the arXiv sample.
    """
    from sciembed.data.smart import CACM_CITATION, read_smart_collection

    cache.mkdir(parents=True, exist_ok=True)
    found: dict[str, dict] = {}
    if {"cacm", "union"} & set(names):
        cacm = read_smart_collection(data / "cacm", skip_invalid=True)
        found["cacm"] = {
            "vectors": embedded(data / "cacm", cache / "cacm.npy"),
            "links": cacm.neighbours(CACM_CITATION),
            "counts": {
                "files": ["cacm/cacm.all"],
                "read": len(cacm.papers),
                "skipped": skipped_records(cacm.skipped, data),
            },
        }
    if {"hepth", "union"} & set(names):
        hepth = hepth_source(data, cache)
        linked = set(hepth.neighbours())
        papers = cache / "hepth-linked.jsonl"
        if not papers.is_file():
            with open(cache / "hepth-all.jsonl", encoding="utf-8") as lines, atomic_path(papers) as temporary:
                temporary.write_text("".join(line for line in lines if json.loads(line)["paper_id"] in linked))
        left = f"{len(hepth.papers) - len(linked)} abstracts that no citation link names (only linked papers are kept)"
        files = ["hepth/abstracts", "hepth/citations-2000-2002", "hepth/citations-1992-2001-prefix"]
        counts = {"files": files, "read": len(hepth.papers), "skipped": [], "left_out": [left]}
        found["hepth"] = {
            "vectors": embedded(papers, cache / "hepth.npy"),
            "links": hepth.neighbours(),
            "counts": counts,
        }
    if "union" in names:
        found["union"] = union(data, cache, found, arxiv_papers, seed)
    return found


def union(data: Path, cache: Path, found: dict[str, dict], arxiv_papers: int | None, seed: int) -> dict:
    """The union of CACM, hep-th and ``UNION_SOURCES``: ids prefixed by source, with each source's counts.

    Args:
        data: the shared data folder.
        cache: the folder of embedded vectors.
        found: CACM's and hep-th's vectors and counts (:func:`collections`).
        arxiv_papers: the size of the seeded arXiv sample, ``None`` for every arXiv paper.
        seed: seeds the arXiv sample.
    """
    from sciembed.io import read_embeddings

    members = {name: (found[name]["vectors"], found[name]["counts"]) for name in ("cacm", "hepth")}
    for name, source in UNION_SOURCES.items():
        members[name] = source_vectors(data, cache, name, arxiv_papers if source.sampled else None, seed)
    parts = {name: read_embeddings(vectors) for name, (vectors, _) in members.items()}
    described = {
        name: {**counts, "papers": len(parts[name][0]), "vectors": Path(vectors).name}
        for name, (vectors, counts) in members.items()
    }
    output, described_file = cache / "union.npy", cache / "union.members.json"
    if not output.is_file() or not described_file.is_file() or json.loads(described_file.read_text()) != described:
        ids = [f"{name}:{paper_id}" for name, (own, _) in parts.items() for paper_id in own]
        matrix = np.vstack([vectors for _, vectors in parts.values()])
        write_embeddings(output, [(ids, matrix)], total=len(ids), dim=matrix.shape[1])
        with atomic_path(described_file) as temporary:
            temporary.write_text(json.dumps(described, indent=1), encoding="utf-8")
    return {"vectors": output, "links": None, "members": described}


def source_vectors(data: Path, cache: Path, name: str, sample: int | None, seed: int) -> tuple[Path, dict]:
    """The vectors of one of ``UNION_SOURCES`` (embedded into ``cache`` unless there already) and its counts.

    Args:
        data: the shared data folder.
        cache: the folder of embedded vectors.
        name: the source's name in ``UNION_SOURCES``.
        sample: the size of a seeded sample of its papers, ``None`` for all of them.
        seed: seeds the sample.
    """
    papers, counts = source_papers(data, UNION_SOURCES[name], sample, seed)
    stem = f"union-{name}" + (f"-{sample}-seed{seed}" if "sampled_from" in counts else "")
    records = cache / f"{stem}.jsonl"
    if not records.is_file():
        with atomic_path(records) as temporary:
            temporary.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    return embedded(records, cache / f"{stem}.npy"), counts


def source_papers(data: Path, source: Source, sample: int | None, seed: int) -> tuple[list[dict], dict]:
    """One source's papers (id, title, abstract), deduplicated by id, and what was read, skipped and sampled.

    Args:
        data: the shared data folder.
        source: the source's files.
        sample: the size of a seeded sample of its papers, ``None`` for all of them.
        seed: seeds the sample.
    """
    from sciembed.data.papers import read_papers

    papers: dict[str, dict] = {}
    counts: dict = {"files": list(source.files), "read": 0, "skipped": [], "repeated_ids": 0}
    for file in source.files:
        read = read_papers(data / file, skip_invalid=True)
        counts["read"] += len(read.papers)
        counts["skipped"] += skipped_records(read.skipped, data)
        for paper in read.papers:
            paper_id = arxiv_id(paper["paper_id"]) if source.arxiv_ids else paper["paper_id"]
            if paper_id in papers:
                counts["repeated_ids"] += 1
            else:
                papers[paper_id] = {"paper_id": paper_id, **{k: paper.get(k) or "" for k in ("title", "abstract")}}
    if source.left_out:
        counts["left_out"] = list(source.left_out)
    kept = list(papers.values())
    if sample is not None and sample < len(kept):
        rows = np.sort(np.random.default_rng(seed).choice(len(kept), sample, replace=False))
        counts["sampled_from"] = len(kept)
        kept = [kept[row] for row in rows]
    return kept, counts


def skipped_records(problems: list, data: Path) -> list[str]:
    """The skipped records as text, their files named relative to the data folder."""
    return [str(problem).replace(f"{data}{os.sep}", "") for problem in problems]


def arxiv_id(paper_id: str) -> str:
    """The arXiv id ``paper_id`` stands for, repairing one a float conversion damaged (``704.2``: ``0704.2000``)."""
    damaged = DAMAGED_ARXIV_ID.fullmatch(paper_id)
    return f"{damaged[1].zfill(4)}.{damaged[2].ljust(4, '0')}" if damaged else paper_id


def exact_neighbours(vectors: np.ndarray, query_rows: np.ndarray) -> tuple[np.ndarray, float]:
    """The exact top 10 of each query row (itself left out) by ``IndexFlatIP``, and the seconds its search took."""
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    started = time.perf_counter()
    _, rows = index.search(vectors[query_rows], TOP_K + 1)
    seconds = time.perf_counter() - started
    kept = np.array([[r for r in row if r != own][:TOP_K] for row, own in zip(rows, query_rows)])
    return kept, seconds


def linked_share(rows: np.ndarray, query_rows: np.ndarray, ids: list[str], links: dict[str, set[str]]) -> float:
    """The share of the queries' neighbours that cite or are cited by their query."""
    hits = [ids[r] in links.get(ids[q], ()) for q, row in zip(query_rows, rows) for r in row if r >= 0]
    return float(np.mean(hits))


def cite_map(vectors: Path, suite) -> float:
    """CACM cite MAP of the vectors in ``vectors`` (``evaluate --embeddings``)."""
    from sciembed.evaluation.runner import evaluate_embeddings

    report = evaluate_embeddings(vectors, suite, n_jobs=1)
    metrics = report.results[0].metrics
    return float(metrics.get("map", metrics.get("MAP", next(iter(metrics.values())))))


def measure(name: str, collection: dict, suite, workdir: Path, seed: int, kinds: tuple[str, ...] = KINDS) -> dict:
    """Every kind's measures on one collection, against exact ``IndexFlatIP`` in the same run."""
    import faiss

    from sciembed import PaperIndex
    from sciembed.data.knn import unit_rows
    from sciembed.index.tuning import lower_bound, recall_shares
    from sciembed.io import read_embeddings

    ids, vectors = read_embeddings(collection["vectors"])
    vectors = unit_rows(vectors).astype(np.float32)
    links = collection["links"]
    candidates = np.arange(len(ids))
    if links is not None:
        candidates = np.array([i for i, paper_id in enumerate(ids) if links.get(paper_id)])
    rng = np.random.default_rng(seed)
    query_rows = np.sort(rng.choice(candidates, min(TIMED_QUERIES, len(candidates)), replace=False))
    faiss.omp_set_num_threads(1)
    truth, exact_seconds = exact_neighbours(vectors, query_rows)
    result = {"papers": len(ids), "dim": vectors.shape[1], "queries": len(query_rows), "kinds": {}}
    result["load_average_start"] = [round(x, 2) for x in os.getloadavg()]
    exact_share = linked_share(truth, query_rows, ids, links) if links is not None else None
    float_map = cite_map(collection["vectors"], suite) if suite is not None else None
    build_exact = None
    for kind in ("exact", *(kind for kind in kinds if kind != "exact")):  # exact first: the others' baseline
        folder = workdir / f"{name}-{kind}"
        started = time.perf_counter()
        index = PaperIndex.build(collection["vectors"], folder, kind=kind, seed=seed, overwrite=True)
        build = time.perf_counter() - started
        build_exact = build_exact or build
        m = index.manifest
        exclude = query_rows.astype(np.int64)
        started = time.perf_counter()
        rows, _ = index.codes.search(vectors[query_rows], TOP_K, exclude, multiplier=m.multiplier, nprobe=m.nprobe)
        seconds = time.perf_counter() - started
        info = index.info()
        shares = recall_shares(rows, truth)
        row = {
            "factory": m.factory,
            "multiplier": m.multiplier,
            "nprobe": m.nprobe,
            "recall_at_10": round(float(np.mean(shares)), 4),
            "recall_at_10_lower_bound": round(lower_bound(shares, m.confidence), 4),
            "tuning_recall_at_10": round(m.recall, 4),
            "tuning_recall_lower_bound": round(m.recall_lower_bound, 4),
            "tuning_queries": m.tuning_queries,
            "confidence": m.confidence,
            "ram_bytes_per_paper": info["ram_bytes_per_paper"],
            "disk_bytes_per_paper": info["disk_bytes_per_paper"],
            "query_time_vs_exact": round(seconds / exact_seconds, 2),
            "build_seconds": round(build, 2),
            "build_time_vs_exact": round(build / build_exact, 2),
        }
        if links is not None:
            row["citation_share_vs_exact"] = round(linked_share(rows, query_rows, ids, links) / exact_share, 4)
        if suite is not None:
            decoded = workdir / f"{name}-{kind}.npy"
            write_embeddings(decoded, [(ids, index.vectors(ids))], total=len(ids), dim=vectors.shape[1])
            row["cacm_cite_map"] = round(cite_map(decoded, suite), 2)
            row["cacm_cite_map_change"] = round(row["cacm_cite_map"] - float_map, 2)
        row["targets"] = targets(kind, row, vectors.shape[1], pq_m=_pq_m(m.factory))
        result["kinds"][kind] = row
        print(name, kind, json.dumps(row), flush=True)
    result["kinds_not_measured"] = [kind for kind in KINDS if kind not in result["kinds"]]
    result["exact_citation_share"] = exact_share
    result["float32_cacm_cite_map"] = float_map
    return result


def _pq_m(factory: str) -> int | None:
    return int(factory.split("PQ")[1].split("x")[0]) if "PQ" in factory else None


def targets(kind: str, row: dict, dim: int, pq_m: int | None) -> dict[str, bool]:
    """The issue's targets for ``kind`` on real vectors, and whether each holds."""
    held: dict[str, bool] = {}
    if kind == "int8":
        held["recall_at_10 >= 0.99"] = row["recall_at_10"] >= 0.99
        held["ram_bytes_per_paper <= d + 16"] = row["ram_bytes_per_paper"] <= dim + 16
    if kind == "binary":
        held["recall_at_10 >= 0.95"] = row["recall_at_10"] >= 0.95
        held["ram_bytes_per_paper <= d/8 + 16"] = row["ram_bytes_per_paper"] <= dim / 8 + 16
        if "citation_share_vs_exact" in row:
            held["citation_share_vs_exact >= 0.98"] = row["citation_share_vs_exact"] >= 0.98
    if kind == "pq" and pq_m:
        held["ram_bytes_per_paper <= M + 16"] = row["ram_bytes_per_paper"] <= pq_m + 16
    if kind in ("int8", "binary") and "cacm_cite_map_change" in row:
        held["cacm cite MAP within 0.1 of float32"] = abs(row["cacm_cite_map_change"]) <= 0.1
    return held


def write_report(output: Path, results: dict, seed: int, load_start: list[float]) -> None:
    """The results so far, with the targets each collection holds and misses, and the machine and its load."""
    held = {
        f"{c} {k}: {t}": ok
        for c, r in results.items()
        for k, row in r["kinds"].items()
        for t, ok in row["targets"].items()
    }
    report = {
        "benchmark": "index_quality",
        "description": __doc__.strip().splitlines()[0],
        "seed": seed,
        "threads": 1,
        "model": "embedded all-MiniLM-L6-v2",
        "machine": machine(),
        "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "collections": results,
        "targets_held": all(held.values()),
        "targets_missed": [name for name, ok in held.items() if not ok],
    }
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def arxiv_sample(value: str) -> int | None:
    """``--arxiv-papers``: a positive count, or ``all`` (``None``)."""
    if value == "all":
        return None
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a positive number of papers, or 'all'")
    return int(value)


def described(collection: dict, arxiv_papers: int | None) -> dict:
    """What a collection's results say of its sources: counts, skipped records, and a sample if one was drawn."""
    members = collection.get("members")
    if not members:
        return {"source": collection["counts"]} if "counts" in collection else {}
    sampled = {name: counts["sampled_from"] for name, counts in members.items() if "sampled_from" in counts}
    notes = [
        f"a seeded sample of {arxiv_papers} of {name}'s {total} papers is embedded (--arxiv-papers all embeds all)"
        for name, total in sampled.items()
    ]
    return {"members": members, **({"note": "; ".join(notes)} if notes else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/ and hepth/")
    parser.add_argument("--cache", type=Path, required=True, help="folder for the embedded vectors, reused by reruns")
    parser.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=list(COLLECTIONS), help="to measure")
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="index kinds to measure (exact always is)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the query sample and the union's arXiv sample")
    parser.add_argument(
        "--arxiv-papers",
        type=arxiv_sample,
        default=500,
        help="the size of the union's seeded arXiv sample, or 'all' for every arXiv paper (default 500)",
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "index_quality.json")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    parser.add_argument(
        "--keep-others",
        action="store_true",
        help="with --overwrite, keep the collections of --output that this run does not measure",
    )
    args = parser.parse_args()
    if args.output.exists() and not args.overwrite:
        parser.error(f"{args.output} exists: pass --overwrite to replace it, or another --output")
    if args.keep_others and not args.output.is_file():
        parser.error(f"--keep-others: {args.output} does not exist, so there are no other collections to keep")
    logging.basicConfig(level=logging.WARNING)
    from sciembed.evaluation.loaders import load_tasks

    found = collections(args.data, args.cache, args.collections, args.arxiv_papers, args.seed)
    suite = load_tasks("cacm", args.data / "cacm", tasks=["cite"], skip_invalid=True)
    load_start = [round(x, 2) for x in os.getloadavg()]
    results = {}
    if args.keep_others:
        results = json.loads(args.output.read_text(encoding="utf-8"))["collections"]
    with tempfile.TemporaryDirectory(dir=args.cache) as workdir:
        for name in args.collections:
            own_suite = suite if name == "cacm" else None
            results[name] = measure(name, found[name], own_suite, Path(workdir), args.seed, tuple(args.kinds))
            results[name].update(described(found[name], args.arxiv_papers))
            ordered = {name: results[name] for name in COLLECTIONS if name in results}
            write_report(args.output, ordered, args.seed, load_start)  # each collection's results as they come
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
