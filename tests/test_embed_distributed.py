"""`sciembed embed` over several processes: torchrun ranks and group-less tasks (SLURM arrays) give the
one-process output, a killed rank's run completes with --resume at another world size, and the input is
read into a memory-mapped Arrow file from any paper format, Parquet included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import WORDS
from test_distributed import free_port

from sciembed.data.papers import PaperReading
from sciembed.distributed import Share
from sciembed.io import read_embeddings

PAPERS_200 = [
    {
        "paper_id": f"p{i:03d}",
        "title": " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(3 + i % 5)),
        "abstract": " ".join(WORDS[(i * 3 + k * k) % len(WORDS)] for k in range(10 + i % 40)),
    }
    for i in range(200)
]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def write_papers(path: Path) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in PAPERS_200), encoding="utf-8")
    return path


def embed_command(model: Path, papers: Path, output: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "sciembed.cli",
        "-q",
        "embed",
        "--model",
        str(model),
        "--input",
        str(papers),
        "--output",
        str(output),
        "--no-progress",
        *extra,
    ]


def run(arguments: list[str], processes: int = 1, launcher: str = "torchrun") -> subprocess.Popen:
    if processes == 1:
        command = [sys.executable]
    elif launcher == "torchrun":
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(processes),
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(free_port()),
        ]
    else:
        # --multi_gpu is accelerate's flag for several processes through torchrun; without CUDA they run on the CPU
        # (its --cpu with --num_processes 2 starts one process).
        command = [
            str(Path(sys.executable).with_name("accelerate")),
            "launch",
            "--multi_gpu",
            "--num_processes",
            str(processes),
            "--num_machines",
            "1",
            "--main_process_port",
            str(free_port()),
        ]
        arguments = arguments[1:]  # accelerate's own -m takes the module
        command.append("-m")
    return subprocess.Popen(
        [*command, *arguments], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def finished(process: subprocess.Popen) -> None:
    assert process.wait(timeout=300) == 0, process.stderr.read()[-4000:]


def assert_same(output: Path, reference: Path) -> None:
    (ids, vectors), (reference_ids, reference_vectors) = read_embeddings(output), read_embeddings(reference)
    assert ids == reference_ids == [p["paper_id"] for p in PAPERS_200]
    assert np.abs(vectors - reference_vectors).max() <= 1e-5


@pytest.fixture(scope="module")
def one_process(tiny_bert, tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("one-process")
    papers = write_papers(folder / "papers.jsonl")
    finished(run(embed_command(tiny_bert, papers, folder / "single.parquet", "--shard-size", "16")))
    return papers, folder / "single.parquet"


def test_torchrun_ranks_write_the_parts_of_one_process(tiny_bert, one_process, tmp_path):
    import datasets

    papers, single = one_process
    finished(run(embed_command(tiny_bert, papers, tmp_path / "vectors", "--shard-size", "16"), processes=2))
    assert sorted(p.name for p in (tmp_path / "vectors").iterdir()) == [f"part-{i:05d}.parquet" for i in range(13)]
    assert not (tmp_path / "vectors.partial").exists()
    assert_same(tmp_path / "vectors", single)
    loaded = datasets.load_dataset("parquet", data_dir=str(tmp_path / "vectors"), split="train")
    assert loaded["paper_id"] == [p["paper_id"] for p in PAPERS_200]
    np.testing.assert_allclose(np.asarray(loaded["embedding"]), read_embeddings(single)[1], atol=1e-5, rtol=0)
    # One file, assembled by rank 0 once both ranks are done; here under `accelerate launch`, logging each share.
    arguments = [
        "-v" if a == "-q" else a
        for a in embed_command(tiny_bert, papers, tmp_path / "vectors.npy", "--shard-size", "16")
    ]
    launched = run(arguments, processes=2, launcher="accelerate")
    log = launched.communicate(timeout=300)[1]
    assert launched.returncode == 0, log[-4000:]
    assert "rank 0 of 2: encoded 7 shard(s)" in log and "rank 1 of 2: encoded 6 shard(s)" in log
    assert_same(tmp_path / "vectors.npy", single)


def test_a_killed_rank_s_run_completes_with_resume_on_another_world_size(tiny_bert, one_process, tmp_path):
    import psutil

    papers, single = one_process
    output = tmp_path / "vectors.jsonl"
    parts = tmp_path / "vectors.jsonl.partial" / "parts"
    launcher = run(embed_command(tiny_bert, papers, output, "--shard-size", "1"), processes=2)
    deadline = time.time() + 300
    while not (parts / "part-00001.parquet").exists():  # rank 1's first shard
        assert launcher.poll() is None and time.time() < deadline, "the run ended before rank 1 finished a shard"
        time.sleep(0.005)
    workers = psutil.Process(launcher.pid).children(recursive=True)
    rank_1 = next(w for w in workers if w.environ().get("RANK") == "1")
    rank_1.send_signal(signal.SIGSTOP)  # holds it where it is, however fast it runs
    odd_done = sum((parts / f"part-{i:05d}.parquet").exists() for i in range(1, 200, 2))
    rank_1.send_signal(signal.SIGKILL)
    assert launcher.wait(timeout=120) != 0  # torchrun ends the other rank and reports the failure
    assert not output.exists() and 1 <= odd_done < 100, (
        f"rank 1 finished {odd_done} of its 100 shards before it was stopped"
    )

    resumed = run(embed_command(tiny_bert, papers, output, "--shard-size", "1", "--resume"))  # now one process
    finished(resumed)
    assert_same(output, single)
    assert not (tmp_path / "vectors.jsonl.partial").exists()


def test_group_less_tasks_share_the_job_and_the_last_one_assembles(tiny_bert, one_process, tmp_path):
    papers, single = one_process
    output = tmp_path / "vectors.parquet"
    finished(run(embed_command(tiny_bert, papers, output, "--shard-size", "16", "--rank", "1", "--world-size", "3")))
    assert not output.exists()
    done = sorted(p.name for p in (tmp_path / "vectors.parquet.partial" / "parts").iterdir())
    assert done == [f"part-{i:05d}.parquet" for i in range(1, 13, 3)]
    # The job goes on with two tasks instead of three: task 0 of 2 joins the run without --resume.
    finished(run(embed_command(tiny_bert, papers, output, "--shard-size", "16", "--rank", "0", "--world-size", "2")))
    assert not output.exists()
    finished(run(embed_command(tiny_bert, papers, output, "--shard-size", "16", "--rank", "1", "--world-size", "2")))
    assert_same(output, single)


def test_papers_are_read_into_a_memory_mapped_arrow_file_from_every_format(tiny_encoder, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sciembed.data.papers import paper_dataset, read_papers
    from sciembed.jobs.embed import embed_to_file

    jsonl = write_papers(tmp_path / "papers.jsonl")
    parquet = tmp_path / "papers.parquet"
    pq.write_table(pa.Table.from_pylist(PAPERS_200), parquet)
    first = paper_dataset(parquet, tmp_path / "cache")
    assert first.dataset.cache_files and first.dataset.cache_files[0]["filename"].startswith(str(tmp_path / "cache"))
    assert first.dataset.to_list() == [{k: p[k] for k in ("paper_id", "title", "abstract")} for p in PAPERS_200]
    assert read_papers(parquet).papers == read_papers(jsonl).papers
    again = paper_dataset(parquet, tmp_path / "cache")  # the Arrow file of the unchanged input is reused
    assert (
        again.dataset.cache_files == first.dataset.cache_files and len(list((tmp_path / "cache").glob("*.arrow"))) == 1
    )

    report = embed_to_file(tiny_encoder, parquet, tmp_path / "from-path.npy", shard_size=32, show_progress_bar=False)
    assert (report.papers, report.shards, report.assembled) == (200, 7, True)
    listed = embed_to_file(
        tiny_encoder, PAPERS_200, tmp_path / "from-list.npy", shard_size=32, show_progress_bar=False
    )
    assert listed.papers == 200
    ids, vectors = read_embeddings(tmp_path / "from-path.npy")
    assert ids == read_embeddings(tmp_path / "from-list.npy")[0]
    np.testing.assert_allclose(vectors, read_embeddings(tmp_path / "from-list.npy")[1], atol=1e-6, rtol=0)


def test_skipped_records_are_reported_by_a_resumed_run_too(tiny_encoder, tmp_path):
    from sciembed.jobs.embed import embed_to_file

    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        json.dumps(PAPERS_200[0]) + "\n{broken\n" + json.dumps(PAPERS_200[1]) + "\n" + json.dumps(PAPERS_200[0]) + "\n"
    )
    report = embed_to_file(
        tiny_encoder,
        papers,
        tmp_path / "out.jsonl",
        reading=PaperReading(skip_invalid=True),
        shard_size=1,
        share=Share(0, 2),
        show_progress_bar=False,
    )
    assert report.papers == 2 and not report.assembled
    assert [problem.location for problem in report.skipped] == ["line 2", "line 4"]
    later = embed_to_file(
        tiny_encoder,
        papers,
        tmp_path / "out.jsonl",
        reading=PaperReading(skip_invalid=True),
        shard_size=1,
        share=Share(1, 2),
        show_progress_bar=False,
    )
    assert later.assembled and [problem.location for problem in later.skipped] == ["line 2", "line 4"]
    assert read_embeddings(tmp_path / "out.jsonl")[0] == ["p000", "p001"]
