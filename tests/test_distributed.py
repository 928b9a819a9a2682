"""Training under torchrun: two CPU processes (gloo) on a tiny model end with identical weights."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from conftest import WORDS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_s2orc(path: Path) -> Path:
    """Forty papers citing each other in S2ORC's metadata format (each cites the next three)."""
    lines = []
    for i in range(40):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12))
        cites = [f"p{(i + k) % 40}" for k in (1, 2, 3)]
        lines.append(json.dumps({"paper_id": f"p{i}", "title": words[:40], "abstract": words, "year": 2000,
                                 "outbound_citations": cites, "inbound_citations": []}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_process_gloo_training_ends_with_identical_weights(tiny_bert, tmp_path):
    from transformers import AutoModel

    data = write_s2orc(tmp_path / "papers.jsonl")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), str(Path(__file__).with_name("ddp_worker.py")), str(tiny_bert), str(data), str(tmp_path / "out")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [(tmp_path / "out" / f"rank{r}.txt").read_text().split() for r in (0, 1)]
    assert ranks[0][:2] == ranks[1][:2] == ["2", "3"]  # world size 2, three steps on each rank
    assert ranks[0][2] == ranks[1][2]  # identical weights

    initial = hashlib.sha256()
    for name, tensor in sorted(AutoModel.from_pretrained(tiny_bert).state_dict().items()):
        initial.update(name.encode() + tensor.numpy().tobytes())
    assert ranks[0][2] != initial.hexdigest()  # and training changed them
