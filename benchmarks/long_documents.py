"""Papers longer than the window: cutting them against embedding them window by window, where the truth is known.

The embedded all-MiniLM-L6-v2 reads 256 tokens, more than almost every CACM or hep-th abstract holds: its embedding
of the whole paper (``full``) is the truth. With the window shrunk to ``--window`` tokens (48 by default) most
papers overflow it, and this measures what a user with papers longer than their model's window gets from

- ``truncated``: the paper cut at the window (what sciembed does without ``--long-documents``);
- ``windows-mean`` and ``windows-tokens``: :class:`sciembed.encoders.WindowedEncoder`, the title at the head of every
  window, windows overlapping by ``--overlap`` tokens, their vectors averaged (or weighted by their text tokens).

On the cite task (SciDocs' protocol: up to 5 linked papers against 25 random ones, -L2, pytrec_eval MAP) of CACM (every
linked query) and of a seeded sample of hep-th queries, with per-query paired 95% bootstrap intervals against
``truncated`` and against ``full``; and the cosine of each paper's vector to its ``full`` vector, over the papers that
overflow the window. Results go to ``results/long_documents.json``.

    python benchmarks/long_documents.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from recipes import BOOTSTRAP, FixedTasks
from tqdm.auto import tqdm

import sciembed
from sciembed.encoders import WindowedEncoder, WindowSettings
from sciembed.evaluation import evaluate_suite
from sciembed.evaluation.cache import EmbeddingCache
from sciembed.evaluation.loaders import TaskSuite
from sciembed.io import atomic_path, default_cache_dir


def cite_suite(fixed: FixedTasks, data: Path, hepth_queries: int, seed: int) -> TaskSuite:
    """CACM's cite task over every linked query, and hep-th's over a seeded sample of ``hepth_queries`` queries."""
    from sciembed.evaluation.loaders import load_tasks

    cacm = load_tasks("cacm", data / "cacm", tasks=["cite"], skip_invalid=True, seed=seed)
    linked = fixed.hepth.linked_queries()
    chosen = np.random.default_rng(seed).choice(len(linked), size=min(hepth_queries, len(linked)), replace=False)
    hepth = fixed.hepth.cite_task([linked[i] for i in sorted(chosen)], seed=seed)
    tasks = [
        replace(cacm.tasks[0], task_id="cacm_cite", keep_per_query=True),
        replace(hepth, task_id="hepth_cite", keep_per_query=True),
    ]
    return TaskSuite("long-documents", "cacm + hepth", tasks)


def paired(ours: dict[str, float], theirs: dict[str, float], seed: int) -> dict[str, Any]:
    """The mean per-query difference with its 95% percentile bootstrap interval."""
    values = np.array([ours[q] - theirs[q] for q in ours])
    means = values[np.random.default_rng(seed).integers(0, len(values), size=(BOOTSTRAP, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"difference": round(float(values.mean()), 2), "interval": [round(float(low), 2), round(float(high), 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/ and hepth/")
    parser.add_argument("--window", type=int, default=48, help="tokens per window (and the truncated row's length)")
    parser.add_argument("--overlap", type=int, default=16, help="tokens each window shares with the one before")
    parser.add_argument("--hepth-queries", type=int, default=300, help="hep-th query papers sampled")
    parser.add_argument("--seed", type=int, default=0, help="the hep-th sample's and the candidates' seed")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "long_documents.json")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="the embedding cache (default: sciembed's, reused by reruns)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.output.exists() and not args.overwrite:
        raise SystemExit(f"{args.output} exists; pass --overwrite to replace it")
    folders = {name: args.data / name for name in ("cacm", "hepth", "arxiv-metadata", "scirepeval-samples")}
    missing = [str(folder) for folder in folders.values() if not folder.is_dir()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} absent: this benchmark needs the real data (../shared/data/README.md)")
    fixed = FixedTasks.read(folders)
    suite = cite_suite(fixed, args.data, args.hepth_queries, args.seed)
    full = sciembed.PaperEncoder.from_pretrained(device="cpu")
    encoders = {
        "full": full,
        "truncated": sciembed.PaperEncoder.from_pretrained(device="cpu", max_length=args.window),
        **{
            f"windows-{combine}": WindowedEncoder(
                full, WindowSettings(window=args.window, overlap=args.overlap, combine=combine)
            )
            for combine in ("mean", "tokens")
        },
    }
    cache_dir = args.cache_dir or default_cache_dir()
    rows: dict[str, Any] = {}
    for name, encoder in tqdm(encoders.items(), desc="encoders"):
        started = time.perf_counter()
        report = evaluate_suite(encoder, suite, cache_dir=cache_dir, n_jobs=1, show_progress_bar=False)
        rows[name] = {
            "metrics": {r.task_id: {m: round(v, 2) for m, v in r.metrics.items()} for r in report.results},
            "per_query": {r.task_id: {q: v["map"] for q, v in r.details["per_query"].items()} for r in report.results},
            "seconds": round(time.perf_counter() - started, 1),
            "texts_encoded": report.embedding["texts_encoded"],
            "cache_hits": report.embedding["cache_hits"],
        }
    # How close each paper's vector comes to its full-length one, over the papers longer than the window: the
    # evaluation cached every paper's vector under its model text, so this embeds nothing again.
    closeness: dict[str, dict[str, Any]] = {}
    for task in suite.tasks:
        papers = list(task.documents.values())
        overflowing = [p for p in papers if len(encoders["windows-mean"].paper_windows(p)) > 1]
        vectors = {
            name: EmbeddingCache(encoder, cache_dir).lookup(encoder.texts(overflowing, task.fields))
            for name, encoder in encoders.items()
        }
        closeness[task.task_id] = {"papers": len(papers), "longer_than_window": len(overflowing)}
        for name in ("truncated", "windows-mean", "windows-tokens"):
            cosine = (vectors[name] * vectors["full"]).sum(1) / (
                np.linalg.norm(vectors[name], axis=1) * np.linalg.norm(vectors["full"], axis=1)
            )
            closeness[task.task_id][f"{name}_cosine_to_full"] = round(float(cosine.mean()), 4)
    comparisons = {
        task.task_id: {
            f"{name} - {other}": paired(
                rows[name]["per_query"][task.task_id], rows[other]["per_query"][task.task_id], args.seed
            )
            for name, other in [
                ("windows-mean", "truncated"),
                ("windows-tokens", "truncated"),
                ("windows-tokens", "windows-mean"),
                ("windows-mean", "full"),
                ("truncated", "full"),
            ]
        }
        for task in suite.tasks
    }
    result = {
        "benchmark": "long_documents",
        "description": __doc__.strip().splitlines()[0],
        "settings": {
            "model": "all-MiniLM-L6-v2 (embedded), its own window 256 for full",
            "window": args.window,
            "overlap": args.overlap,
            "hepth_queries": args.hepth_queries,
            "seed": args.seed,
            "bootstrap": BOOTSTRAP,
        },
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine()},
        "metrics": {name: row["metrics"] for name, row in rows.items()},
        "paired_map": comparisons,
        "closeness": closeness,
        # Seconds to embed and score, with what the cache already held (a rerun embeds nothing again).
        "seconds": {
            name: {key: row[key] for key in ("seconds", "texts_encoded", "cache_hits")} for name, row in rows.items()
        },
        "per_query": {name: row["per_query"] for name, row in rows.items()},
    }
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "per_query"}, indent=1))


if __name__ == "__main__":
    main()
