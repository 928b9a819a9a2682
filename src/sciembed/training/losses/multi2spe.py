"""Multi²SPE's loss over multiple CLS embeddings (Ostendorff-style facets; Seoh, Chang, McCallum 2023, eqs. 2–3).

With a paper's K CLS embeddings ``c_1..c_K``, the similarity of two papers is

    S(a, b) = λ · max_ij (c_i^a · c_j^b) + (1 − λ) · (Σ_i c_i^a) · (Σ_j c_j^b)            (eq. 3)

and the loss is the cross-entropy of picking the positive among {P⁺, P⁻}:
``−log softmax([S(q, p⁺), S(q, p⁻)])[0]`` (eq. 2), averaged over the batch.

The authors' released code (ronaldseoh/multi2spe) computes something else: the weighted sum of two
cross-entropies, ``(1 − λ) · CE(summed similarities) + λ · CE(max-pair similarities)``. It is offered
as ``mode="released"``; the default is ``mode="paper"``, the equations above.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

MODES = ("paper", "released")


def _pair_terms(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: max over facet pairs of c_i·c_j, and the dot product of the summed facets."""
    pairwise = torch.einsum("bid,bjd->bij", a, b)
    return pairwise.flatten(1).max(dim=1).values, (a.sum(1) * b.sum(1)).sum(-1)


class Multi2SPELoss(nn.Module):
    """Cross-entropy over {positive, negative} with the Multi²SPE facet similarity.

    Args:
        weight: λ, the weight of the max-pair term (paper: 0.1). λ = 0 is SPECTER-style summed
            similarity; λ = 1 uses the best facet pair alone.
        mode: ``"paper"`` (eqs. 2–3, default) or ``"released"`` (the authors' mix of two cross-entropies).
    """

    def __init__(self, weight: float = 0.1, mode: str = "paper"):
        super().__init__()
        if not 0 <= weight <= 1:
            raise ValueError(f"weight (λ) must be in [0, 1], got {weight}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.weight, self.mode = weight, mode

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """S(a, b) of eq. 3 for ``(batch, K, dim)`` facet tensors; returns ``(batch,)``."""
        best, summed = _pair_terms(a, b)
        return self.weight * best + (1 - self.weight) * summed

    def forward(self, query: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, K, dim)`` CLS embeddings (``cls_embeddings`` of Multi2SPEModel)."""
        if not query.shape == positive.shape == negative.shape or query.dim() != 3:
            raise ValueError(f"query, positive and negative must share one (batch, K, dim) shape, got {tuple(query.shape)}, {tuple(positive.shape)}, {tuple(negative.shape)}")
        target = torch.zeros(len(query), dtype=torch.long, device=query.device)
        if self.mode == "paper":
            logits = torch.stack([self.similarity(query, positive), self.similarity(query, negative)], dim=1)
            return F.cross_entropy(logits, target)
        (best_pos, summed_pos), (best_neg, summed_neg) = _pair_terms(query, positive), _pair_terms(query, negative)
        summed = F.cross_entropy(torch.stack([summed_pos, summed_neg], dim=1), target)
        best = F.cross_entropy(torch.stack([best_pos, best_neg], dim=1), target)
        return (1 - self.weight) * summed + self.weight * best
