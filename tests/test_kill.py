"""`sciembed train` and `sciembed embed` killed with SIGKILL mid-run, then `--resume`: the same final weights
(vectors and ids) as a run never interrupted, and nothing left behind that looks finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import WORDS, write_s2orc

# Enough steps after the second checkpoint that the kill lands mid-run even on a busy machine.
SETTINGS = [
    "max_steps=60",
    "save_strategy=steps",
    "save_steps=1",
    "save_total_limit=2",
    "logging_steps=1",
    "learning_rate=1e-3",
    "warmup_steps=0",
    "per_device_train_batch_size=4",
    "gradient_accumulation_steps=1",
    "embedding.max_length=32",
    "dataloader_drop_last=true",
    "lr_scheduler_type=constant",
]


def _train(tiny_bert, data, output, *extra):
    command = [
        sys.executable,
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
        str(output),
        *[a for s in SETTINGS for a in ("--set", s)],
        *extra,
    ]
    return subprocess.Popen(
        command,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model" / "model.safetensors")


@pytest.mark.slow
def test_sigkill_then_resume_ends_with_the_weights_of_an_uninterrupted_run(tiny_bert, tmp_path):
    data = write_s2orc(tmp_path / "papers.jsonl")
    straight = _train(tiny_bert, data, tmp_path / "straight")
    assert straight.wait(timeout=300) == 0, straight.stderr.read()[-3000:]

    killed = _train(tiny_bert, data, tmp_path / "killed")
    deadline = time.time() + 300
    # Any finished checkpoint from step 2 on: with save_total_limit=2 a given one lives only two steps.
    while not any(
        int(state.parent.name.split("-")[1]) >= 2
        for state in (tmp_path / "killed").glob("checkpoint-*/trainer_state.json")
    ):
        assert killed.poll() is None and time.time() < deadline, "the run ended before its second checkpoint"
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert not (tmp_path / "killed" / "model").exists()  # no model folder that looks finished

    resumed = _train(tiny_bert, data, tmp_path / "killed", "--resume")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()[-3000:]
    for (name, a), b in zip(
        sorted(_weights(tmp_path / "straight").items()), [v for _, v in sorted(_weights(tmp_path / "killed").items())]
    ):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.slow
def test_sigkill_then_resume_gives_the_npy_pair_of_an_uninterrupted_embed(tiny_bert, tmp_path):
    import json

    import numpy as np

    from sciembed.io import read_embeddings

    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "".join(
            json.dumps(
                {
                    "paper_id": f"p{i}",
                    "title": " ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(8)),
                    "abstract": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60)),
                }
            )
            + "\n"
            for i in range(3000)
        )
    )

    def embed(output, *extra):
        command = [
            sys.executable,
            "-m",
            "sciembed.cli",
            "-q",
            "embed",
            "--model",
            str(tiny_bert),
            "--input",
            str(papers),
            "--output",
            str(output),
            "--shard-size",
            "100",
            "--batch-size",
            "8",
            "--no-progress",
            *extra,
        ]
        return subprocess.Popen(
            command,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    straight = embed(tmp_path / "straight.npy")
    assert straight.wait(timeout=600) == 0, straight.stderr.read()[-3000:]
    killed = embed(tmp_path / "killed.npy")
    deadline = time.time() + 600
    while not (tmp_path / "killed.npy.partial" / "parts" / "part-00002.parquet").exists():
        assert killed.poll() is None and time.time() < deadline, "the run ended before its third shard"
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert not (tmp_path / "killed.npy").exists() and not (tmp_path / "killed.ids.json").exists()
    resumed = embed(tmp_path / "killed.npy", "--resume")
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()[-3000:]
    (ids, vectors), (straight_ids, straight_vectors) = (
        read_embeddings(tmp_path / "killed.npy"),
        read_embeddings(tmp_path / "straight.npy"),
    )
    assert ids == straight_ids == [f"p{i}" for i in range(3000)]
    np.testing.assert_allclose(vectors, straight_vectors, atol=1e-5, rtol=0)
