"""`sciembed embed` on 1 and on 2 workers (torchrun, gloo; a local Ray cluster), one thread each, same papers.

All embed the same distinct papers (``real_papers.py``: CACM, SciRepEval and S2ORC samples, then real
titles paired with other papers' abstracts up to ``--papers``) with the embedded MiniLM, as a user runs them: the
command in one process with ``OMP_NUM_THREADS=1``, then ``torchrun --nproc-per-node 2`` with one thread per
process, then on a local Ray cluster of 2 CPUs (``sciembed.jobs.ray_embed``: Ray Data's ``map_batches`` over 2
actors, and the sharded job as 2 Ray tasks; the cluster's start and the workers' model loads are timed). Reported:
wall time and papers/s of each, their ratio to one process (2.0 would be perfect scaling), that every output holds
the ids and vectors of one process (max abs diff), the command's peak resident memory per process (``VmHWM``, read
while it runs), the Parquet output's and the Arrow input file's bytes per paper, and the model on paper for
``--project`` papers: shards, hours per process at the measured rate, and disk. ``--routes`` runs a subset (one
process is always the reference).

    python benchmarks/embed_scale.py            # 20,000 papers: about an hour and a half on 2 cores
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from real_papers import distinct_papers

from sciembed.data.papers import paper_dataset
from sciembed.io import atomic_path, read_embeddings

ROUTES = ("torchrun", "ray-data", "ray-tasks")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_gb(pid: int) -> float | None:
    """The process's resident-memory high-water mark (Linux ``VmHWM``), None once it has ended."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        return None
    return None


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def machine() -> dict[str, object]:
    """The machine a benchmark ran on: Python, platform, usable CPUs and the CPU model."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": len(os.sched_getaffinity(0)),
        "cpu": cpu_model(),
    }


def timed(command: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Run ``command``; returns its wall time and the peak memory of each process that embeds (by rank)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks: dict[str, float] = {}
    while process.poll() is None:
        workers = [psutil.Process(process.pid)]
        try:
            workers += workers[0].children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        for worker in workers:
            try:
                if "sciembed.cli" not in worker.cmdline():
                    continue
                rank = worker.environ().get("RANK", "0")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            peak = peak_rss_gb(worker.pid)
            if peak is not None:
                peaks[rank] = round(max(peaks.get(rank, 0.0), peak), 3)
        time.sleep(0.5)
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{process.stderr.read()[-4000:]}")
    return seconds, peaks


def on_ray(route: str, work: Path, batch_size: int, shard_size: int) -> float:
    """Seconds to embed ``work/papers.parquet`` into ``work/<route>`` on a fresh local Ray cluster of 2 CPUs (its
    start, the workers' imports and model loads included), one thread per worker, the dashboard off."""
    import functools

    import ray

    from sciembed import Encoder
    from sciembed.jobs.ray_embed import embed_parquet_with_ray, embed_with_ray_tasks

    model = functools.partial(Encoder.from_pretrained, device="cpu")
    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}},
    )
    try:
        if route == "ray-data":
            embed_parquet_with_ray(
                work / "papers.parquet",
                work / route,
                encoder=model,
                batch_size=shard_size,
                encode_batch_size=batch_size,
                num_cpus=0.5,  # the two actors leave CPUs free for Ray Data's reads and writes
                num_blocks=-(-pq.ParquetFile(work / "papers.parquet").metadata.num_rows // shard_size),
            )
        else:
            embed_with_ray_tasks(
                work / "papers.parquet", work / route, encoder=model, shard_size=shard_size, batch_size=batch_size
            )
    finally:
        ray.shutdown()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared" / "data",
        help="the shared data folder (cacm/, scirepeval-samples/, s2orc-sample/)",
    )
    parser.add_argument("--papers", type=int, default=20_000)
    parser.add_argument("--shard-size", type=int, default=1_000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--project", type=float, default=1e8, help="papers of the model on paper (default 10^8)")
    parser.add_argument(
        "--routes",
        nargs="+",
        choices=ROUTES,
        default=list(ROUTES),
        help="the two-worker routes timed against one process",
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "embed_scale.json")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    args = parser.parse_args()
    if args.output.exists() and not args.overwrite:
        raise SystemExit(f"{args.output} exists; pass --overwrite to replace it")

    papers, description = distinct_papers(args.data, args.papers)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        source = work / "papers.jsonl"
        source.write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
        start = time.perf_counter()
        arrow = paper_dataset(source, work / "arrow")
        read_s = time.perf_counter() - start
        arrow_bytes = sum(f.stat().st_size for f in (work / "arrow").glob("*.arrow"))
        del arrow

        embed = [
            "-m",
            "sciembed.cli",
            "-q",
            "embed",
            "--input",
            str(source),
            "--shard-size",
            str(args.shard_size),
            "--batch-size",
            str(args.batch_size),
            "--no-progress",
            "--output",
        ]
        one_s, one_peak = timed([sys.executable, *embed, str(work / "one")], env)
        one_ids, one_vectors = read_embeddings(work / "one")
        two: dict[str, dict[str, Any]] = {}
        if "torchrun" in args.routes:
            seconds, peaks = timed(
                [
                    sys.executable,
                    "-m",
                    "torch.distributed.run",
                    "--nproc_per_node",
                    "2",
                    "--master_addr",
                    "127.0.0.1",
                    "--master_port",
                    str(free_port()),
                    *embed,
                    str(work / "two"),
                ],
                env,
            )
            two["torchrun"] = {"seconds": seconds, "peak_memory_gb_by_rank": peaks, "output": work / "two"}
            output_bytes = sum(f.stat().st_size for f in (work / "two").glob("*.parquet"))
        else:
            output_bytes = sum(f.stat().st_size for f in (work / "one").glob("*.parquet"))
        ray_routes = [route for route in args.routes if route.startswith("ray")]
        if ray_routes:
            pq.write_table(pa.Table.from_pylist(papers), work / "papers.parquet")
            for route in ray_routes:
                two[route] = {"seconds": on_ray(route, work, args.batch_size, args.shard_size), "output": work / route}
        for row in two.values():
            ids, vectors = read_embeddings(row.pop("output"))
            row["same_ids"] = sorted(ids) == sorted(one_ids) and len(ids) == len(one_ids)
            # Ray Data writes in its own order: compare by id, and only where the ids are the same.
            order = {paper_id: i for i, paper_id in enumerate(ids)}
            row["max_abs_diff"] = (
                float(np.abs(vectors[[order[i] for i in one_ids]] - one_vectors).max()) if row["same_ids"] else None
            )

    rate_one = args.papers / one_s
    for row in two.values():
        row["papers_per_s"] = round(args.papers / row["seconds"], 2)
        row["speedup_over_one_process"] = round(args.papers / row["seconds"] / rate_one, 3)
        row["seconds"] = round(row["seconds"], 1)
    # The model on paper from the best two-process rate measured here (one process's when no route ran).
    per_process = max([row["papers_per_s"] for row in two.values()], default=2 * rate_one) / 2
    shards = math.ceil(args.project / 10_000)
    result = {
        "benchmark": "embed_scale",
        "data": description,
        "model": "embedded all-MiniLM-L6-v2 (mean pooling, L2 normalised), max length 256",
        "settings": {"batch_size": args.batch_size, "shard_size": args.shard_size, "threads_per_process": 1},
        "one_process": {
            "seconds": round(one_s, 1),
            "papers_per_s": round(rate_one, 2),
            "peak_memory_gb": one_peak,
            "same_ids_as_input": one_ids == [p["paper_id"] for p in papers],
        },
        "two_workers": two,
        "input_to_arrow": {
            "seconds": round(read_s, 2),
            "papers_per_s": round(args.papers / read_s),
            "bytes_per_paper": round(arrow_bytes / args.papers),
        },
        "output_parquet_bytes_per_paper": round(output_bytes / args.papers),
        "model_on_paper": {
            "papers": args.project,
            "shards_of_10000": shards,
            "hours_per_process_at_measured_rate_one_thread": round(args.project / per_process / 3600),
            "processes_for_one_day": math.ceil(args.project / per_process / 86_400),
            "output_gb": round(args.project * output_bytes / args.papers / 1e9),
            "arrow_input_gb": round(args.project * arrow_bytes / args.papers / 1e9),
            "hours_to_read_input_into_arrow_one_process": round(args.project / (args.papers / read_s) / 3600, 1),
        },
        "machine": machine(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
