"""SPECTER's triplet margin loss (Cohan et al. 2020, eq. 2; SciRepEval's proximity and search loss)."""

from __future__ import annotations

import torch
from torch import nn


class TripletMarginLoss(nn.Module):
    """``mean(max(‖q − p⁺‖₂ − ‖q − p⁻‖₂ + margin, 0))`` over the batch.

    SPECTER eq. 2 with L2 distance and margin 1. Distances are exact L2 norms (torch's
    ``triplet_margin_loss`` adds 1e-6 to each difference, which moves the loss for near-equal papers).

    Args:
        margin: the margin ``m`` (SPECTER: 1).
    """

    def __init__(self, margin: float = 1.0):
        super().__init__()
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        self.margin = margin

    def forward(self, query: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, dim)`` query, positive and negative embeddings."""
        if not query.shape == positive.shape == negative.shape or query.dim() != 2:
            raise ValueError(f"query, positive and negative must share one (batch, dim) shape, got {tuple(query.shape)}, {tuple(positive.shape)}, {tuple(negative.shape)}")
        positive_distance = (query - positive).norm(dim=-1)
        negative_distance = (query - negative).norm(dim=-1)
        return torch.clamp(positive_distance - negative_distance + self.margin, min=0).mean()
