"""Training under torchrun: two CPU processes (gloo) on a tiny model end with identical weights, evaluate
once, and score each anchor against the other process's examples (gathered negatives)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from helpers import write_s2orc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(worker: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(Path(__file__).with_name(worker)),
        *args,
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_two_process_mnr_scores_every_rank_s_examples(tmp_path):
    """Under DDP each rank's MNR loss is its anchors against the positives and hard negatives of both ranks,
    and the gradients reaching each rank's rows are those of the whole batch's loss (all_gather is
    differentiable): what one process computes on the concatenated batch."""
    import torch

    done = torchrun("ddp_mnr_worker.py", str(tmp_path))
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"mnr{r}.json").read_text()) for r in (0, 1)]
    torch.manual_seed(0)
    anchor, positive, negative = (torch.randn(6, 8).requires_grad_() for _ in range(3))
    # Rank r's anchors against all six positives and six negatives: the gathered candidates.
    expected = [
        torch.nn.functional.cross_entropy(
            torch.nn.functional.normalize(anchor[r * 3 : (r + 1) * 3], dim=-1)
            @ torch.nn.functional.normalize(torch.cat([positive, negative]), dim=-1).T
            / 0.05,
            torch.arange(3) + 3 * r,
        )
        for r in (0, 1)
    ]
    (expected[0] + expected[1]).backward()
    for r in (0, 1):
        assert abs(ranks[r]["loss"] - expected[r].item()) < 1e-5
        assert abs(ranks[r]["loss"] - ranks[r]["local_loss"]) > 1e-3  # the other rank's examples count
        rows = slice(r * 3, (r + 1) * 3)
        for got, tensor in zip(ranks[r]["grads"], (anchor, positive, negative)):
            torch.testing.assert_close(torch.tensor(got), tensor.grad[rows], atol=1e-5, rtol=0)


def test_two_process_gloo_training_ends_with_identical_weights(tiny_bert, tmp_path):
    from transformers import AutoModel

    data = write_s2orc(tmp_path / "papers.jsonl")
    done = torchrun("ddp_worker.py", str(tiny_bert), str(data), str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [(tmp_path / "out" / f"rank{r}.txt").read_text().split() for r in (0, 1)]
    assert ranks[0][:2] == ranks[1][:2] == ["2", "3"]  # world size 2, three steps on each rank
    assert ranks[0][2] == ranks[1][2]  # identical weights
    # The held-out evaluation ran on rank 0 alone, and rank 1 received its metrics.
    assert ranks[0][3:] == ["evaluated", ranks[1][4]] and ranks[1][3] == "received"

    initial = hashlib.sha256()
    for name, tensor in sorted(AutoModel.from_pretrained(tiny_bert).state_dict().items()):
        initial.update(name.encode() + tensor.numpy().tobytes())
    assert ranks[0][2] != initial.hexdigest()  # and training changed them


def test_sciembed_train_under_torchrun_ends_cleanly(tiny_bert, tmp_path):
    """The command itself under torchrun: both ranks train, rank 0 saves, and the run leaves its process group
    before exiting, so a finished run exits 0 (left to interpreter shutdown, gloo could abort it)."""
    data = write_s2orc(tmp_path / "papers.jsonl")
    settings = [
        "max_steps=2",
        "per_device_train_batch_size=4",
        "gradient_accumulation_steps=1",
        "save_strategy=no",
        "embedding.max_length=32",
        "ddp_backend=gloo",
        "use_cpu=true",
        "dataloader_drop_last=true",
        "embedding.normalize=true",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        "-m",
        "sciembed.cli",
        "-q",
        "train",
        "--recipe",
        "specter",
        "--base",
        str(tiny_bert),
        "--data",
        str(data),
        "--output",
        str(tmp_path / "out"),
        *[a for s in settings for a in ("--set", s)],
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads((tmp_path / "out" / "train_results.json").read_text())
    assert summary["global_step"] == 2 and (tmp_path / "out" / "model" / "model.safetensors").is_file()
