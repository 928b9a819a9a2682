"""A batch's loss from embeddings computed a micro-batch at a time.

This is GradCache (Gao et al. 2021).

A loss over a batch's embeddings, in-batch negatives included, is computed in three passes: every micro-batch is
embedded without a graph, the loss and its gradient with respect to the embeddings are computed once, and in the
backward pass each micro-batch is embedded again, with the random state of its first pass (the same dropout masks),
and back-propagated with its share of that gradient. The model's gradients are those of the whole batch up to float
rounding, where the activations held at once are one micro-batch's. sentence-transformers'
``CachedMultipleNegativesRankingLoss`` works the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

#: The bytes that one layer's attention scores of a micro-batch may take (``loss.micro_batch_size=auto``).
ATTENTION_BUDGET = 40 * 10**6


def check_micro_batch_size(value: Any) -> int | str | None:
    """``loss.micro_batch_size`` as given, checked: a positive number of texts, ``auto`` or ``None`` (whole batch).

    Args:
        value: the setting's value.
    """
    if value is None or value == "auto" or (type(value) is int and value > 0):
        return value
    raise ValueError(
        f"loss.micro_batch_size is the texts embedded per forward pass (a positive integer), auto (from the memory "
        f"the attention scores take) or null (the whole batch); got {value!r}"
    )


def texts_per_forward(size: int | str | None, texts: int, tokens: int, heads: int) -> int:
    """The texts one forward pass embeds, for a batch of ``texts`` padded to ``tokens``.

    Args:
        size: ``loss.micro_batch_size`` (see :func:`check_micro_batch_size`).
        texts: the texts in the batch.
        tokens: the batch's padded length.
        heads: the model's attention heads per layer.
    """
    if size is None:
        return texts
    if size == "auto":
        size = max(1, ATTENTION_BUDGET // (heads * tokens * tokens * 4))
    return min(size, texts)


class _RandomState:
    """The random state of the CPU and of the GPUs in use, when made.

    It is replayed inside ``with replayed()``.
    """

    def __init__(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    @contextlib.contextmanager
    def replayed(self) -> Iterator[None]:
        devices = list(range(torch.cuda.device_count())) if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state_all(self.cuda)
            yield


def cached_loss(
    embed: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    features: Mapping[str, torch.Tensor],
    size: int,
    loss: nn.Module | None = None,
) -> torch.Tensor:
    """The loss of a batch, embedded ``size`` texts at a time. Its backward pass gives the model its gradients.

    Args:
        embed: the embeddings of some rows of ``features`` (one per row, or rows of any shape).
        loss_of: the loss of all the rows' embeddings, in order.
        features: the batch's tokenized texts (tensors with one row per text).
        size: the texts per forward pass.
        loss: the loss module, whose trainable parameters get their gradients too.
    """
    rows = len(next(iter(features.values())))
    parts = [{k: v[start : start + size] for k, v in features.items()} for start in range(0, rows, size)]
    states, pieces = [], []
    with torch.no_grad():
        for part in parts:
            states.append(_RandomState())
            pieces.append(embed(part))
    embeddings = torch.cat(pieces).requires_grad_()
    parameters = [p for p in loss.parameters() if p.requires_grad] if loss is not None else []
    with torch.enable_grad():
        value = loss_of(embeddings)
    gradients = torch.autograd.grad(value, [embeddings, *parameters])
    shares = gradients[0].split(size)

    def second_pass(scale: torch.Tensor) -> None:
        for parameter, gradient in zip(parameters, gradients[1:]):
            parameter.grad = gradient * scale if parameter.grad is None else parameter.grad + gradient * scale
        for part, state, share in zip(parts, states, shares):
            with state.replayed(), torch.enable_grad():
                (embed(part) * share * scale).sum().backward()

    result = value.detach().requires_grad_()
    result.register_hook(second_pass)
    return result
