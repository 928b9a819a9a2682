"""SPECTER's triplet margin loss (Cohan et al. 2020, eq. 2, SciRepEval's proximity and search loss)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

DISTANCES = ("l2", "cosine")


class TripletMarginLoss(nn.Module):
    """``mean(max(d(q, p⁺) − d(q, p⁻) + margin, 0))`` over the batch.

    SPECTER eq. 2 uses the L2 distance with margin 1, the distance its unnormalised [CLS] vectors are
    ranked by. For unit vectors (a base such as all-MiniLM-L6-v2, which normalises) the distance they are
    used with is the cosine distance ``1 − cos(a, b)`` (ranking by L2 of unit vectors is the same ranking). It lies in
    [0, 2], so a margin on that scale is needed (margin 1 would be half its range). sciembed's recipes train unit
    vectors with :class:`~.mnr.MultipleNegativesRankingLoss` instead, which these margins did not beat
    (``benchmarks/results/train_cacm_alternatives``, on the documentation's benchmark page). This loss with
    ``distance="cosine"`` is there by name (``loss.name=triplet``, ``loss.distance=cosine``). L2 distances are exact
    norms (torch's ``triplet_margin_loss`` adds 1e-6 to each difference, which moves the loss for near-equal papers).

    Args:
        margin: the margin ``m`` (SPECTER: 1 with L2).
        distance: ``"l2"`` (SPECTER) or ``"cosine"``.
    """

    def __init__(self, margin: float = 1.0, distance: str = "l2"):
        super().__init__()
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        if distance not in DISTANCES:
            raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
        self.margin, self.distance = margin, distance

    def forward(self, query: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, dim)`` query, positive and negative embeddings."""
        if not query.shape == positive.shape == negative.shape or query.dim() != 2:
            raise ValueError(
                f"query, positive and negative must share one (batch, dim) shape, got {tuple(query.shape)}, "
                f"{tuple(positive.shape)}, {tuple(negative.shape)}"
            )
        if self.distance == "l2":
            positive_distance, negative_distance = (query - positive).norm(dim=-1), (query - negative).norm(dim=-1)
        else:
            positive_distance = 1 - F.cosine_similarity(query, positive, dim=-1)
            negative_distance = 1 - F.cosine_similarity(query, negative, dim=-1)
        return torch.clamp(positive_distance - negative_distance + self.margin, min=0).mean()
