"""Relational anchoring: keep how papers outside the training data relate to one another.

Fine-tuning on one field's citations reshapes the whole embedding space, and papers of other fields lose the
distinctions the base drew between them (a fields-of-study probe drops several points, ``docs/training.md``). This
term keeps, for a batch of *anchor* papers the run never trains on otherwise (unlabelled, from other fields), the
cosine between every two of them as the starting model had it: with ``e`` the trained model's embeddings and ``t``
the starting model's,

    L = w · mean_{i≠j} (cos(e_i, e_j) − cos(t_i, t_j))²

the distance-wise term of relational knowledge distillation (Park et al. 2019, "Relational Knowledge
Distillation"), taken between cosines, with the starting model as its own teacher, as Learning without Forgetting
(Li & Hoiem 2017) keeps the old model's outputs on new data. Only relations are kept: the space may rotate or move
as a whole, which a linear probe or a nearest-neighbour search does not see.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class RelationalAnchorLoss(nn.Module):
    """``weight`` times the mean squared change of the pairwise cosines of anchor papers.

    The cosines are those of one batch of anchor papers.

    Args:
        weight: the term's weight against the training loss.
    """

    def __init__(self, weight: float = 1.0):
        super().__init__()
        if not weight > 0:
            raise ValueError(f"the anchor loss's weight must be positive, got {weight}")
        self.weight = weight

    def forward(self, embeddings: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Loss of ``(batch, dim)`` embeddings against the starting model's ``targets`` of the same papers."""
        if embeddings.shape[0] != targets.shape[0] or embeddings.shape[0] < 2:
            raise ValueError(
                f"anchoring compares two or more papers' embeddings with as many targets, got {embeddings.shape[0]} "
                f"embeddings and {targets.shape[0]} targets"
            )
        current = _cosines(embeddings)
        starting = _cosines(targets.to(embeddings.dtype))
        off_diagonal = ~torch.eye(current.shape[0], dtype=torch.bool, device=current.device)
        return self.weight * (current - starting)[off_diagonal].pow(2).mean()


def _cosines(embeddings: torch.Tensor) -> torch.Tensor:
    unit = F.normalize(embeddings, dim=-1)
    return unit @ unit.T
