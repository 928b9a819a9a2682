"""Memory: training recomputes activations instead of keeping them, and the CLI gives freed blocks back."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import torch
from helpers import write_s2orc

RUN = {
    "max_steps": 2,
    "save_strategy": "no",
    "learning_rate": 0.01,
    "warmup_steps": 0,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "embedding.max_length": 48,
    "data.max_examples": 24,
}


@pytest.mark.parametrize("recipe", ["specter", "multi2spe"])
def test_training_recomputes_activations_and_ends_with_the_same_weights(recipe, tiny_bert, tmp_path):
    """Gradient checkpointing is on by default and trains exactly the weights a run that keeps its activations does
    (dropout included); ``activation_checkpointing=false`` turns it off."""
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    recomputed = prepare(recipe, tiny_bert, data, tmp_path / "recomputed", RUN)
    recomputed.trainer.train()
    kept = prepare(recipe, tiny_bert, data, tmp_path / "kept", {**RUN, "activation_checkpointing": False})
    start = {k: v.clone() for k, v in kept.trainer.model.state_dict().items()}
    kept.trainer.train()
    assert recomputed.trainer.model.is_activation_checkpointing and not kept.trainer.model.is_activation_checkpointing
    assert recomputed.trainer.model.config.hidden_dropout_prob > 0
    after, same = kept.trainer.model.state_dict(), recomputed.trainer.model.state_dict()
    assert any(not torch.equal(start[k], after[k]) for k in start if start[k].is_floating_point())
    for key, value in after.items():
        assert torch.equal(same[key], value), key


_HOLD_AND_FREE = """
import sys
from sciembed.cli import return_freed_memory
def resident_mb():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
print(return_freed_memory())
blocks = [bytearray(4 << 20) for _ in range(2)]
del blocks  # glibc now serves blocks of this size from its heap unless told otherwise
before = resident_mb()
blocks = [bytearray(4 << 20) for _ in range(60)]
del blocks[:-1]  # the last block, at the top of the heap, would keep the rest of the heap resident
print(round(resident_mb() - before))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_cli_gives_freed_blocks_back_to_the_system():
    """After ``return_freed_memory`` (what ``sciembed`` runs first), freeing large blocks shrinks the process."""
    done = subprocess.run([sys.executable, "-c", _HOLD_AND_FREE], capture_output=True, text=True, check=True)
    applied, held = done.stdout.split()
    assert applied == "True"
    assert int(held) < 40, f"{held} MB of freed blocks still resident"
