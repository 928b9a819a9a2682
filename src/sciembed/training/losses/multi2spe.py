"""Multi²SPE's loss over multiple CLS embeddings (Ostendorff-style facets, Seoh, Chang, McCallum 2023, eqs. 2–3).

With a paper's K CLS embeddings ``c_1..c_K``, the similarity of two papers is

    S(a, b) = λ · max_ij (c_i^a · c_j^b) + (1 − λ) · (Σ_i c_i^a) · (Σ_j c_j^b)            (eq. 3)

and the loss is the cross-entropy of picking the positive among {P⁺, P⁻}:
``−log softmax([S(q, p⁺), S(q, p⁻)])[0]`` (eq. 2), averaged over the batch.

The authors' released code (ronaldseoh/multi2spe) computes something else: the weighted sum of two
cross-entropies, ``(1 − λ) · CE(summed similarities) + λ · CE(max-pair similarities)``. It is offered
as ``mode="released"``. The default is ``mode="paper"``, the equations above.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

MODES = ("paper", "released")
SIMILARITIES = ("dot", "cosine")


class Multi2SPELoss(nn.Module):
    """Cross-entropy over {positive, negative} with the Multi²SPE facet similarity.

    Args:
        weight: λ, the weight of the max-pair term (paper: 0.1). λ = 0 is SPECTER-style summed
            similarity. With λ = 1 it uses the best facet pair alone.
        mode: ``"paper"`` (eqs. 2–3, default) or ``"released"`` (the authors' mix of two cross-entropies).
        similarity: ``"dot"`` (the paper's products) or ``"cosine"``: each product taken between unit
            vectors (the facets c_i, c_j, and the sums Σc), for a base trained in unit vectors.
        temperature: τ. The similarities are divided by it before the cross-entropy. The paper uses 1 for dot
            products, and sentence-transformers uses ``0.05`` for cosines.
        in_batch_negatives: pick the positive among every positive and negative of the batch (this
            process's), as the multiple-negatives ranking loss does, instead of among its own pair.
    """

    def __init__(
        self,
        weight: float = 0.1,
        mode: str = "paper",
        similarity: str = "dot",
        temperature: float = 1.0,
        in_batch_negatives: bool = False,
    ):
        super().__init__()
        if not 0 <= weight <= 1:
            raise ValueError(f"weight (λ) must be in [0, 1], got {weight}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.weight, self.mode, self.similarity_name = weight, mode, similarity
        self.temperature, self.in_batch_negatives = temperature, in_batch_negatives

    def _terms(self, a: torch.Tensor, b: torch.Tensor, paired: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The max over facet pairs of c_i·c_j and the product of the summed facets.

        ``a`` and ``b`` are ``(batch, K, dim)``, compared row by row (``paired``, shape ``(batch,)``) or every row of
        ``a`` against every row of ``b`` (shape ``(len(a), len(b))``)."""
        sum_a, sum_b = a.sum(1), b.sum(1)
        if self.similarity_name == "cosine":
            a, b, sum_a, sum_b = (F.normalize(t, dim=-1) for t in (a, b, sum_a, sum_b))
        if paired:
            return torch.einsum("bid,bjd->bij", a, b).flatten(1).max(dim=1).values, (sum_a * sum_b).sum(-1)
        return torch.einsum("bid,njd->bnij", a, b).flatten(2).max(dim=-1).values, sum_a @ sum_b.T

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """S(a, b) of eq. 3 for ``(batch, K, dim)`` facet tensors, row by row. Returns ``(batch,)``."""
        best, summed = self._terms(a, b, paired=True)
        return self.weight * best + (1 - self.weight) * summed

    def forward(self, query: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, K, dim)`` CLS embeddings (``cls_embeddings`` of Multi2SPEModel)."""
        if not query.shape == positive.shape == negative.shape or query.dim() != 3:
            raise ValueError(
                f"query, positive and negative must share one (batch, K, dim) shape, got {tuple(query.shape)}, "
                f"{tuple(positive.shape)}, {tuple(negative.shape)}"
            )
        if self.in_batch_negatives:
            best, summed = self._terms(query, torch.cat([positive, negative]), paired=False)
            target = torch.arange(len(query), device=query.device)
        else:
            (best_pos, summed_pos), (best_neg, summed_neg) = (
                self._terms(query, positive, True),
                self._terms(query, negative, True),
            )
            best, summed = torch.stack([best_pos, best_neg], dim=1), torch.stack([summed_pos, summed_neg], dim=1)
            target = torch.zeros(len(query), dtype=torch.long, device=query.device)
        if self.mode == "paper":
            return F.cross_entropy((self.weight * best + (1 - self.weight) * summed) / self.temperature, target)
        return (1 - self.weight) * F.cross_entropy(summed / self.temperature, target) + self.weight * F.cross_entropy(
            best / self.temperature, target
        )
