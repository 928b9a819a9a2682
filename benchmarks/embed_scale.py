"""`sciembed embed` on 1 and on 2 processes (torchrun, gloo, one thread each), same papers, one run.

Both embed the same distinct papers (``real_papers.py``: CACM, SciRepEval and S2ORC samples, then real
titles paired with other papers' abstracts up to ``--papers``) with the embedded MiniLM, as the command a
user runs: one process with ``OMP_NUM_THREADS=1``, then ``torchrun --nproc-per-node 2`` with one thread per
process. Reported: wall time and papers/s of each, their ratio (2.0 would be perfect scaling), that the
two outputs hold the same ids and vectors (max abs diff), each process's peak resident memory (``VmHWM``,
read while it runs), the Parquet output's and the Arrow input file's bytes per paper, and the model on
paper for ``--project`` papers: shards, hours per process at the measured rate, and disk.

    python benchmarks/embed_scale.py            # 20,000 papers: about an hour on 2 cores
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

import numpy as np
import psutil
from real_papers import distinct_papers

from sciembed.data.papers import paper_dataset
from sciembed.io import atomic_path, read_embeddings


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
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "embed_scale.json")
    args = parser.parse_args()

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
        two_s, two_peak = timed(
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
        (one_ids, one_vectors), (two_ids, two_vectors) = read_embeddings(work / "one"), read_embeddings(work / "two")
        output_bytes = sum(f.stat().st_size for f in (work / "two").glob("*.parquet"))

    rate_one, rate_two = args.papers / one_s, args.papers / two_s
    per_process = rate_two / 2
    shards = math.ceil(args.project / 10_000)
    result = {
        "benchmark": "embed_scale",
        "data": description,
        "model": "embedded all-MiniLM-L6-v2 (mean pooling, L2 normalised), max length 256",
        "settings": {"batch_size": args.batch_size, "shard_size": args.shard_size, "threads_per_process": 1},
        "one_process": {"seconds": round(one_s, 1), "papers_per_s": round(rate_one, 2), "peak_memory_gb": one_peak},
        "two_processes": {
            "seconds": round(two_s, 1),
            "papers_per_s": round(rate_two, 2),
            "peak_memory_gb_by_rank": two_peak,
        },
        "speedup_two_over_one": round(rate_two / rate_one, 3),
        "same_ids": one_ids == two_ids == [p["paper_id"] for p in papers],
        "max_abs_diff": float(np.abs(one_vectors - two_vectors).max()),
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
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": len(os.sched_getaffinity(0)),
            "cpu": cpu_model(),
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
