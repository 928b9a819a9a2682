"""Router losses of MoEBertModel (MoE paper: Hallee, Kapur et al. 2024, after Mod-Squad and Switch).

Router logits come per MoE layer as ``(batch, experts)`` (sentence routing) or ``(batch, tokens,
experts)`` (token routing, padding is left out through ``attention_mask``). For each layer:

- **router cross-entropy**: the router should pick the expert of the paper's domain,
  ``CE(logits, domain)`` (every token of a paper carries the paper's domain).
- **mutual information** (Mod-Squad, Chen et al. 2023, eq. 4): with ``P(e | t)`` the mean routing
  probability of expert ``e`` over the batch's routed positions of task (domain) ``t`` and ``P(t)``
  their share, ``MI = Σ_te P(t, e) log(P(t, e) / (P(t) P(e)))``. The loss is ``−MI`` (experts that
  specialise by task).
- **load balancing** (Switch Transformer, Fedus et al. 2022, eq. 4, with top-k routing as Mixtral):
  ``E · Σ_e f_e · P_e``, ``f_e`` the share of routing choices that go to ``e`` (``top_k`` per position)
  and ``P_e`` the mean routing probability of ``e``. 1 when routing is uniform.

Layers are averaged. :class:`RouterLoss` sums the three with their weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F


def _flatten(logits: torch.Tensor, domain_ids: torch.Tensor | None, attention_mask: torch.Tensor | None):
    """Routed positions as ``(n, experts)`` logits with the domain of each (``None`` without domains)."""
    if logits.dim() == 2:
        return logits, domain_ids
    if logits.dim() != 3:
        raise ValueError(
            f"router logits must be (batch, experts) or (batch, tokens, experts), got {tuple(logits.shape)}"
        )
    keep = (
        torch.ones(logits.shape[:2], dtype=torch.bool, device=logits.device)
        if attention_mask is None
        else attention_mask.bool()
    )
    domains = None if domain_ids is None else domain_ids[:, None].expand(logits.shape[:2])[keep]
    return logits[keep], domains


def router_cross_entropy(
    logits: torch.Tensor, domain_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Cross-entropy of one layer's router logits against each paper's domain (expert) index."""
    flat, domains = _flatten(logits, domain_ids, attention_mask)
    return F.cross_entropy(flat.float(), domains)


def mutual_information_loss(
    logits: torch.Tensor, domain_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """``−MI(task; expert)`` of one layer (Mod-Squad)."""
    flat, domains = _flatten(logits, domain_ids, attention_mask)
    probabilities = flat.float().softmax(-1)
    tasks = torch.unique(domains)
    p_task = torch.stack([(domains == t).float().mean() for t in tasks])
    p_expert_given_task = torch.stack([probabilities[domains == t].mean(0) for t in tasks])
    joint = p_task[:, None] * p_expert_given_task
    p_expert = joint.sum(0)
    ratio = joint / (p_task[:, None] * p_expert[None, :]).clamp_min(1e-12)
    return -(joint * torch.log(ratio.clamp_min(1e-12))).sum()


def load_balancing_loss(
    logits: torch.Tensor, top_k: int = 1, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Switch-style ``E · Σ_e f_e · P_e`` of one layer."""
    flat, _ = _flatten(logits, None, attention_mask)
    experts = flat.shape[-1]
    if not 1 <= top_k <= experts:
        raise ValueError(f"top_k must be in [1, {experts}], got {top_k}")
    probabilities = flat.float().softmax(-1)
    chosen = F.one_hot(probabilities.topk(top_k, dim=-1).indices, experts).sum(1).float()
    share = chosen.mean(0) / top_k
    return experts * (share * probabilities.mean(0)).sum()


class RouterLoss(nn.Module):
    """Weighted sum of the router losses, averaged over MoE layers.

    Args:
        cross_entropy_weight, mutual_information_weight, load_balancing_weight: the weights (0 leaves a
            term out).
        top_k: routing choices per position counted by the load-balancing term (the model's ``top_k``).
    """

    def __init__(
        self,
        cross_entropy_weight: float = 1.0,
        mutual_information_weight: float = 0.0,
        load_balancing_weight: float = 0.0,
        top_k: int = 1,
    ):
        super().__init__()
        weights = (cross_entropy_weight, mutual_information_weight, load_balancing_weight)
        if any(w < 0 for w in weights) or not any(weights):
            raise ValueError(f"weights must be >= 0 and not all 0, got {weights}")
        self.weights, self.top_k = weights, top_k

    def forward(
        self,
        router_logits: Sequence[torch.Tensor | None],
        domain_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Loss of a model output's ``router_logits`` (layers without a router, ``None``, are skipped)."""
        layers = [logits for logits in router_logits if logits is not None]
        if not layers:
            raise ValueError("no router logits: enforced routing has no router to train")
        if domain_ids is None and any(self.weights[:2]):
            raise ValueError("the cross-entropy and mutual-information terms need domain_ids")
        ce, mi, balance = self.weights
        total = 0.0
        for logits in layers:
            if ce:
                total = total + ce * router_cross_entropy(logits, domain_ids, attention_mask)
            if mi:
                total = total + mi * mutual_information_loss(logits, domain_ids, attention_mask)
            if balance:
                total = total + balance * load_balancing_loss(logits, self.top_k, attention_mask)
        return total / len(layers)
