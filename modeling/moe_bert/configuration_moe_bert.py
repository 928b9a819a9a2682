"""Configuration of MoE BERT (Hallee et al., Scientific Reports 2025).

The paper is "Contrastive learning and mixture of experts enables precise vector embeddings", arXiv:2401.15713.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from transformers import BertConfig

ROUTINGS = ("enforced", "sentence", "token")

#: The five biomedical domains of the paper's co-citation data sets (their result files are named
#: CVD, COPD, CANCER, AUTOIMMUNE, PARASITIC in the authors' repository).
PAPER_DOMAINS = ("cvd", "copd", "cancer", "autoimmune", "parasitic")


class MoEBertConfig(BertConfig):
    r"""Configuration of a [`MoEBertModel`]: every field of [`BertConfig`] plus the mixture of experts.

    A MoE layer keeps BERT's attention and replaces the feed-forward block (intermediate + output dense) by
    `num_experts` experts, each the gated form of BERT's MLP (paper, "MoE extension"):

        expert(x) = W2 (act(W1 x + b1) * (W3 x + b3)) + b2

    W1, b1, W2, b2 are copies of the pretrained layer's MLP and W3 = 0, b3 = 1, so every expert equals the dense MLP
    at initialisation and the converted model reproduces the base model exactly.

    Args:
        num_experts (`int`, *optional*):
            E, the number of experts of every MoE layer. Defaults to `len(domains)` (one expert per domain, as the
            paper's enforced routing). Enforced routing requires exactly that.
        moe_layers (`str` or `list[int]`, *optional*, defaults to `"all"`):
            Which layers become MoE: `"all"` (the paper's full extension), `"middle"` (SMoE, only layer
            `num_hidden_layers // 2`, the index the authors' `single_moe` uses), or a list of 0-based layer indices.
        routing (`str`, *optional*, defaults to `"enforced"`):
            `"enforced"`: each sequence goes to the expert of its domain, given as a domain token in place of
            `[CLS]` or as `domain_ids` in the forward pass (no learned router). `"sentence"`: a learned linear
            router (no bias) on the attention-masked mean of the layer input picks the `num_experts_per_tok` experts
            of the whole sequence. `"token"`: a learned linear router picks the `num_experts_per_tok` experts of
            every token (Mixtral). In both learned modes the softmax weights of the chosen experts are renormalised
            to sum to 1.
        num_experts_per_tok (`int`, *optional*, defaults to 2):
            Experts per sequence (`"sentence"`) or per token (`"token"`). 2 as Mixtral and the authors' configs
            (`topk: 2`). Unused by enforced routing. Mixtral's name: `top_k` is a generation setting, which
            transformers 5 refuses to save in a model config (a `top_k` in a config saved earlier is read as this).
        domains (`list[str]`, *optional*):
            Domain names. Defaults to the paper's five (`PAPER_DOMAINS`). Domain `i` is routed to expert `i`.
        domain_tokens (`list[str]`, *optional*):
            The special token of each domain, which replaces `[CLS]`. Defaults to `f"[{name.upper()}]"`
            (`"cvd"` -> `"[CVD]"`).
        domain_token_ids (`list[int]`, *optional*):
            Vocabulary ids of `domain_tokens`, filled by `MoEBertModel.from_bert`. Needed to read the domain from
            `input_ids[:, 0]`.
        classifier_hidden_sizes (`list[int]`, *optional*, defaults to `[]`):
            The hidden-layer sizes, each Linear + ReLU, of the SPECTROID classification head (Capuano et al.) that
            [`MoEBertForSequenceClassification`] puts on the paper embedding. `[]` is a linear head. Unused by the
            encoder.
        kwargs:
            The fields of [`BertConfig`].
    """

    model_type = "moe_bert"

    def __init__(
        self,
        num_experts: Optional[int] = None,
        moe_layers: Union[str, list[int]] = "all",
        routing: str = "enforced",
        num_experts_per_tok: int = 2,
        domains: Optional[list[str]] = None,
        domain_tokens: Optional[list[str]] = None,
        domain_token_ids: Optional[list[int]] = None,
        classifier_hidden_sizes: Optional[list[int]] = None,
        **kwargs: Any,
    ) -> None:
        num_experts_per_tok = kwargs.pop("top_k", num_experts_per_tok)
        super().__init__(**kwargs)
        self.domains = list(PAPER_DOMAINS if domains is None else domains)
        self.domain_tokens = (
            [f"[{name.upper()}]" for name in self.domains] if domain_tokens is None else list(domain_tokens)
        )
        self.domain_token_ids = None if domain_token_ids is None else [int(i) for i in domain_token_ids]
        self.num_experts = len(self.domains) if num_experts is None else int(num_experts)
        self.moe_layers = moe_layers if isinstance(moe_layers, str) else [int(i) for i in moe_layers]
        self.routing = routing
        self.num_experts_per_tok = int(num_experts_per_tok)
        self.classifier_hidden_sizes = [int(size) for size in classifier_hidden_sizes or []]
        self._validate()

    def _validate(self) -> None:
        if any(size < 1 for size in self.classifier_hidden_sizes):
            raise ValueError(
                f"classifier_hidden_sizes must be positive layer sizes, got {self.classifier_hidden_sizes}"
            )
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {self.routing!r}")
        if len(self.domain_tokens) != len(self.domains):
            raise ValueError(f"{len(self.domain_tokens)} domain_tokens for {len(self.domains)} domains")
        if self.domain_token_ids is not None and len(self.domain_token_ids) != len(self.domains):
            raise ValueError(f"{len(self.domain_token_ids)} domain_token_ids for {len(self.domains)} domains")
        if self.num_experts < 1:
            raise ValueError("num_experts must be at least 1 (give num_experts or a non-empty domains list)")
        if self.routing == "enforced" and self.num_experts != len(self.domains):
            raise ValueError(
                f"enforced routing sends domain i to expert i: num_experts ({self.num_experts}) must equal "
                f"the number of domains ({len(self.domains)})"
            )
        if self.routing != "enforced" and not 1 <= self.num_experts_per_tok <= self.num_experts:
            raise ValueError(
                f"num_experts_per_tok must be between 1 and num_experts ({self.num_experts}), "
                f"got {self.num_experts_per_tok}"
            )
        self.moe_layer_indices()

    def moe_layer_indices(self) -> list[int]:
        """The sorted 0-based indices of the layers that are MoE layers."""
        if self.moe_layers == "all":
            return list(range(self.num_hidden_layers))
        if self.moe_layers == "middle":
            return [self.num_hidden_layers // 2]
        if isinstance(self.moe_layers, str):
            raise ValueError(f'moe_layers must be "all", "middle" or a list of layer indices, got {self.moe_layers!r}')
        indices = sorted(set(self.moe_layers))
        if not indices or indices[0] < 0 or indices[-1] >= self.num_hidden_layers:
            raise ValueError(
                f"moe_layers {self.moe_layers} must be a non-empty list of indices in [0, {self.num_hidden_layers})"
            )
        return indices


__all__ = ["MoEBertConfig"]
