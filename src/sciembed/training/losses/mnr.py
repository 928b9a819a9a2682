"""Multiple-negatives ranking loss with a learned temperature (the MoE paper: Hallee, Kapur et al. 2024).

For a batch of pairs (a_i, b_i), every b_j with j ≠ i is a negative of a_i: the logits are the full
``(batch, batch)`` matrix of dot products divided by a learned temperature τ, and the loss is the
cross-entropy of each row against its diagonal. ``symmetric=True`` also scores each b_i against every
a_j (columns) and averages the two directions.

The authors' released code (Gleghorn-Lab/Mixture-of-Experts-Sentence-Similarity) starts τ at 0.7 but
uses only the diagonal of the similarity matrix, so it has no in-batch negatives; this module always
uses the whole matrix.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MultipleNegativesRankingLoss(nn.Module):
    """In-batch-negatives cross-entropy over dot products scaled by ``1 / τ`` (τ learned).

    Args:
        temperature: initial τ (authors: 0.7).
        learn_temperature: train τ with the model (a parameter of this module; pass the loss's
            parameters to the optimizer).
        symmetric: average the a→b and b→a directions.
    """

    def __init__(self, temperature: float = 0.7, learn_temperature: bool = True, symmetric: bool = False):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = nn.Parameter(torch.tensor(float(temperature)), requires_grad=learn_temperature)
        self.symmetric = symmetric

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, dim)`` embeddings where ``a[i]`` and ``b[i]`` are a positive pair."""
        if a.shape != b.shape or a.dim() != 2:
            raise ValueError(f"a and b must share one (batch, dim) shape, got {tuple(a.shape)} and {tuple(b.shape)}")
        logits = a @ b.T / self.temperature
        target = torch.arange(len(a), device=a.device)
        loss = F.cross_entropy(logits, target)
        return (loss + F.cross_entropy(logits.T, target)) / 2 if self.symmetric else loss
