"""Multiple-negatives ranking loss (Henderson et al. 2017, sentence-transformers' ``MultipleNegativesRankingLoss``).

Each anchor ``a_i`` is scored against every positive in the batch and every hard negative, and the loss
is the cross-entropy of picking its own positive ``p_i``: with ``s(·,·)`` the similarity and ``τ`` the
temperature,

    L = −(1/B) Σ_i log( exp(s(a_i, p_i)/τ) / (Σ_j exp(s(a_i, p_j)/τ) + Σ_j exp(s(a_i, n_j)/τ)) )

so one batch of B triplets gives each anchor 2B − 1 negatives instead of one. Under DDP the positives
and negatives of every process are gathered (differentiably, with torch's functional ``all_gather_single``)
so each anchor is scored against the whole global batch, as sentence-transformers' ``gather_across_devices``.
The MoE paper (Hallee et al. 2024) trains co-citation pairs with it and a learned temperature.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

SIMILARITIES = ("dot", "cosine")


class MultipleNegativesRankingLoss(nn.Module):
    """In-batch-negatives cross-entropy, with optional hard negatives as extra columns.

    Args:
        temperature: τ. The logits are similarities divided by it (sentence-transformers' ``scale`` is 1/τ:
            its default 20 is τ = 0.05). The MoE paper starts a learned τ at 0.7.
        learn_temperature: train τ with the model (a parameter of this module, the trainers give it its own
            optimiser group).
        similarity: ``"dot"`` (the MoE paper, on its unnormalised mean-pooled vectors) or ``"cosine"``.
        symmetric: also score each positive against all anchors and average the two directions (pairs
            only: hard negatives have no direction of their own).
        gather_across_processes: under ``torch.distributed``, score against the candidates of all processes.
    """

    def __init__(
        self,
        temperature: float = 0.05,
        learn_temperature: bool = False,
        similarity: str = "cosine",
        symmetric: bool = False,
        gather_across_processes: bool = True,
    ):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        self.temperature = nn.Parameter(torch.tensor(float(temperature)), requires_grad=learn_temperature)
        self.similarity, self.symmetric, self.gather_across_processes = similarity, symmetric, gather_across_processes

    def forward(
        self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The loss of a batch of ``(batch, dim)`` embeddings.

        Args:
            anchor: the anchors. ``anchor[i]`` and ``positive[i]`` are a positive pair.
            positive: the positives.
            negative: optional. ``negative[i]`` is anchor ``i``'s hard negative, and a negative for every anchor.
        """
        if (
            anchor.shape != positive.shape
            or anchor.dim() != 2
            or (negative is not None and negative.shape != anchor.shape)
        ):
            shapes = [tuple(t.shape) for t in (anchor, positive, negative) if t is not None]
            raise ValueError(f"anchor, positive (and negative) must share one (batch, dim) shape, got {shapes}")
        if self.symmetric and negative is not None:
            raise ValueError("symmetric scoring is for pairs; hard negatives have no direction of their own")
        if self.similarity == "cosine":
            anchor, positive = F.normalize(anchor, dim=-1), F.normalize(positive, dim=-1)
            negative = None if negative is None else F.normalize(negative, dim=-1)
        offset, positives = self._gathered(positive)
        candidates = positives if negative is None else torch.cat([positives, self._gathered(negative)[1]])
        logits = anchor @ candidates.T / self.temperature
        target = torch.arange(len(anchor), device=anchor.device) + offset
        loss = F.cross_entropy(logits, target)
        if self.symmetric:
            offset, anchors = self._gathered(anchor)
            loss = (loss + F.cross_entropy(positive @ anchors.T / self.temperature, target)) / 2
        return loss

    def _gathered(self, local: torch.Tensor) -> tuple[int, torch.Tensor]:
        """This process's rows' offset in the global batch, and the global batch.

        Gradients flow back to every process's own rows.
        """
        import torch.distributed as dist

        if not (
            self.gather_across_processes
            and dist.is_available()
            and dist.is_initialized()
            and dist.get_world_size() > 1
        ):
            return 0, local
        # torch's replacement for the deprecated torch.distributed.nn.functional.all_gather: differentiable,
        # its backward a reduce-scatter that sums every rank's gradient for this rank's rows.
        from torch.distributed._functional_collectives import all_gather_single

        return dist.get_rank() * len(local), all_gather_single(local.contiguous(), 0, dist.group.WORLD).wait()
