"""Memory: training recomputes activations instead of keeping them, and the CLI gives freed blocks back."""

from __future__ import annotations

import json
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


def _without_dropout(trainer) -> None:
    for module in trainer.model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0


@pytest.mark.parametrize("loss", ["triplet", "mnr"])
def test_micro_batches_train_the_weights_of_the_whole_batch(loss, tiny_bert, tmp_path):
    """A batch embedded two texts at a time trains the weights of the whole batch at once, up to float rounding (SGD:
    Adam divides near-zero gradients by their own size, which magnifies rounding); a micro-batch as large as the batch
    is the whole batch, bit for bit."""
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    weights = {}
    for size in (None, 2, 12):
        run = prepare(
            "specter",
            tiny_bert,
            data,
            tmp_path / str(size),
            {**RUN, "optim": "sgd", "loss.name": loss, "loss.micro_batch_size": size},
        )
        _without_dropout(run.trainer)
        run.trainer.train()
        weights[size] = run.trainer.model.state_dict()
    assert RUN["per_device_train_batch_size"] * 3 == 12  # texts in a batch
    for key, whole in weights[None].items():
        assert torch.equal(weights[12][key], whole), key
        assert torch.allclose(weights[2][key], whole, atol=1e-6), key
    assert any(not torch.equal(weights[2][k], v) for k, v in weights[None].items() if v.is_floating_point())


def test_a_micro_batch_is_embedded_again_with_the_dropout_of_its_first_pass(tiny_bert):
    """The gradients of :func:`cached_loss` are those of the micro-batches embedded once, with the graph, in the
    same random state (dropout on)."""
    from transformers import AutoModel

    from sciembed.training.micro_batches import cached_loss

    model = AutoModel.from_pretrained(tiny_bert).train()
    assert model.config.hidden_dropout_prob > 0
    features = {"input_ids": torch.randint(5, 40, (6, 10)), "attention_mask": torch.ones(6, 10, dtype=torch.long)}

    def embed(part):
        return model(**part).last_hidden_state[:, 0]

    def loss_of(embeddings):
        return (embeddings[:3] @ embeddings[3:].T).logsumexp(-1).mean()

    torch.manual_seed(1)
    cached_loss(embed, loss_of, features, 2).backward()
    cached = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    torch.manual_seed(1)
    loss_of(torch.cat([embed({k: v[s : s + 2] for k, v in features.items()}) for s in range(0, 6, 2)])).backward()
    for name, parameter in model.named_parameters():
        if parameter.grad is not None:
            assert torch.allclose(cached[name], parameter.grad, atol=1e-6), name


def test_the_demo_embeds_its_batch_whole_and_auto_splits_longer_texts():
    """The demo embeds its 32 triplets at 128 tokens at once (its numbers stay those of the whole batch); ``auto``
    splits them at MiniLM's 256 tokens."""
    from transformers import AutoConfig

    from sciembed.commands.demo import CACM_BUDGET, SHARED
    from sciembed.default_model import default_model_path
    from sciembed.training.micro_batches import texts_per_forward

    heads = AutoConfig.from_pretrained(default_model_path()).num_attention_heads
    texts = 3 * CACM_BUDGET["per_device_train_batch_size"]
    demo = json.loads(SHARED["loss.micro_batch_size"])
    assert texts_per_forward(demo, texts, SHARED["data.max_length"], heads) == texts
    assert texts_per_forward("auto", texts, 256, heads) <= texts // 3
