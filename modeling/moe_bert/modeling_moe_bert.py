"""MoE BERT: a pretrained BERT whose feed-forward blocks are copied into experts.

From Hallee et al., "Contrastive learning and mixture of experts enables precise vector embeddings"
(arXiv:2401.15713, Scientific Reports 2025).

Conversion (the paper's "MoE extension"): in every MoE layer the pretrained MLP W2 act(W1 x + b1) + b2 is copied
into E experts of the gated form

    expert_e(x) = W2 (act(W1 x + b1) * (W3 x + b3)) + b2,   W3 = 0, b3 = 1 at initialisation,

so the converted model computes exactly what the base model computes until training moves W3 and b3. The
experts' outputs are combined as

    MoE(x) = sum_{e in TopK(x)} g_e(x) expert_e(x),   g(x) = softmax(router(x)) renormalised over TopK(x),

with TopK the domain's expert (enforced routing, g = 1), the sequence's top-k experts (sentence routing) or each
token's top-k experts (token routing, as Mixtral). Attention, residuals and LayerNorms are BERT's.

Parameter names: a MoE layer keeps BertLayer's `attention.*` and `output.LayerNorm.*`. The pretrained
`intermediate.dense` (W1, b1) and `output.dense` (W2, b2) of that layer live in every expert as
`moe.experts.{e}.w1` and `moe.experts.{e}.w2`, next to the new gate `moe.experts.{e}.w3` and (for learned
routing) `moe.router`. Layers that are not MoE are plain `BertLayer`s, so a `BertModel` state dict loads under
the same keys.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import nn
from torch.nn import functional as F
from transformers import AutoTokenizer, BertModel, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertAttention, BertEmbeddings, BertLayer
from transformers.utils import ModelOutput, logging

from .configuration_moe_bert import MoEBertConfig

logger = logging.get_logger(__name__)


# Copied from sciembed.modeling.multi2spe.modeling_multi2spe.additive_attention_mask
def additive_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """BERT's additive attention mask, of shape ``(batch, 1, 1, keys)``.

    The mask is 0 on the tokens of the 2-D ``attention_mask`` and the dtype's minimum on padding. It is plain torch,
    because every attention implementation BERT layers have on transformers 4.57 and 5.x (eager, sdpa) takes this
    mask, while transformers' own mask helpers are private and were removed in 5.0."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


# Copied from sciembed.modeling.multi2spe.modeling_multi2spe.layer_output
def layer_output(output: Union[torch.Tensor, tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """A ``BertLayer``'s hidden states: transformers 5 returns them, transformers 4 a tuple led by them."""
    return output[0] if isinstance(output, tuple) else output


@dataclass
class MoEBertModelOutput(ModelOutput):
    r"""Output of [`MoEBertModel`].

    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(batch_size, sequence_length, hidden_size)`):
            Hidden states of the last layer.
        pooler_output (`torch.FloatTensor` of shape `(batch_size, hidden_size)`):
            The paper embedding: the mean of `last_hidden_state` over the tokens of `attention_mask` (the pooling
            of the authors' embedding code and of the all-MiniLM-L6-v2 base model, it includes the domain token).
        hidden_states (`tuple(torch.FloatTensor)`, *optional*, returned with `output_hidden_states=True`):
            The embedding output and the output of every layer, each `(batch_size, sequence_length, hidden_size)`.
        router_logits (`tuple(torch.FloatTensor)`, *optional*):
            One tensor per MoE layer, for the router cross-entropy, mutual-information and load-balancing losses:
            `(batch_size, num_experts)` for sentence routing, `(batch_size, sequence_length, num_experts)` for token
            routing (padding tokens included, mask them with `attention_mask`). `None` for enforced routing, which
            has no learned router.
        domain_ids (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
            The domain index of every input (into `config.domains`): the one enforced routing used, or under
            learned routing the one given or read from the domain tokens, as labels for the router losses.
    """

    last_hidden_state: Optional[torch.FloatTensor] = None
    pooler_output: Optional[torch.FloatTensor] = None
    hidden_states: Optional[tuple[torch.FloatTensor, ...]] = None
    router_logits: Optional[tuple[torch.FloatTensor, ...]] = None
    domain_ids: Optional[torch.LongTensor] = None


class MoEBertExpert(nn.Module):
    """One expert: BERT's MLP with the multiplicative gate W3 x + b3.

    At initialisation W3 = 0 and b3 = 1.
    """

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.w3 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.w3.expert_gate = True  # W3 = 0, b3 = 1 (MoEBertPreTrainedModel._init_weights)
        self.w2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.w2(self.act(self.w1(hidden_states)) * self.w3(hidden_states))


class MoEBertSparseMLP(nn.Module):
    """The experts of one MoE layer and their routing. Each expert runs only on the rows or tokens routed to it."""

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__()
        self.routing = config.routing
        self.top_k = config.num_experts_per_tok
        self.experts = nn.ModuleList(MoEBertExpert(config) for _ in range(config.num_experts))
        self.router = (
            nn.Linear(config.hidden_size, config.num_experts, bias=False) if config.routing != "enforced" else None
        )

    def forward(
        self, hidden_states: torch.Tensor, token_mask: torch.Tensor, domain_ids: Optional[torch.LongTensor]
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Returns the combined expert outputs `(batch, seq_len, hidden)` and the router logits (or `None`)."""
        if self.routing == "enforced":
            return self._dispatch(hidden_states, domain_ids.unsqueeze(1), None), None
        if self.routing == "sentence":
            # The authors average per-token router logits over all positions; averaging only real tokens keeps a
            # sequence's experts independent of how much padding its batch has (mean(Wx) = W mean(x): same logits).
            mask = token_mask.to(hidden_states.dtype).unsqueeze(-1)
            pooled = (hidden_states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            router_logits = self.router(pooled)
            weights, selected = self._top_k(router_logits)
            return self._dispatch(hidden_states, selected, weights), router_logits
        batch_size, seq_length, hidden_size = hidden_states.shape
        tokens = hidden_states.reshape(-1, hidden_size)
        router_logits = self.router(tokens)
        weights, selected = self._top_k(router_logits)
        output = self._dispatch(tokens, selected, weights).view(batch_size, seq_length, hidden_size)
        return output, router_logits.view(batch_size, seq_length, -1)

    def _top_k(self, router_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Renormalising over the chosen experts makes the weights sum to 1, so identical experts (the converted
        # model at step 0) give exactly the dense MLP's output.
        probabilities = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
        weights, selected = torch.topk(probabilities, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(router_logits.dtype), selected

    def _dispatch(self, inputs: torch.Tensor, selected: torch.Tensor, weights: Optional[torch.Tensor]) -> torch.Tensor:
        """sum_k weights[i, k] * expert_{selected[i, k]}(inputs[i]) for every row i of `inputs` (sequences or tokens).

        `weights` is `None` when each row has exactly one expert with weight 1 (enforced routing).
        """
        counts = torch.bincount(selected.flatten(), minlength=len(self.experts)).tolist()
        # A batch of one domain (the usual case when encoding) runs its expert on the batch as is, without copies.
        if weights is None and max(counts) == inputs.shape[0]:
            return self.experts[counts.index(inputs.shape[0])](inputs)
        output = torch.zeros_like(inputs)
        for index, count in enumerate(counts):
            if count == 0:
                continue
            rows, slots = torch.nonzero(selected == index, as_tuple=True)
            expert_output = self.experts[index](inputs.index_select(0, rows))
            if weights is not None:
                expert_output = expert_output * weights[rows, slots].view(-1, *[1] * (inputs.dim() - 1))
            output.index_add_(0, rows, expert_output)
        return output


class MoEBertOutput(nn.Module):
    """BertOutput without its dense layer (that moved into the experts): dropout, residual, LayerNorm."""

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__()
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(hidden_states) + input_tensor)


class MoEBertLayer(GradientCheckpointingLayer):
    """A BertLayer whose feed-forward block is a mixture of experts (same `attention` and `output.LayerNorm`)."""

    def __init__(self, config: MoEBertConfig, layer_idx: Optional[int] = None) -> None:
        super().__init__()
        self.attention = BertAttention(config, layer_idx=layer_idx)
        self.moe = MoEBertSparseMLP(config)
        self.output = MoEBertOutput(config)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: Optional[torch.Tensor],
        token_mask: torch.Tensor,
        domain_ids: Optional[torch.LongTensor],
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        attention_output = self.attention(hidden_states, attention_mask)[0]
        moe_output, router_logits = self.moe(attention_output, token_mask, domain_ids)
        return self.output(moe_output, attention_output), router_logits


class MoEBertEncoder(nn.Module):
    """BERT's encoder with the layers of `config.moe_layers` replaced by MoE layers."""

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__()
        moe_layers = set(config.moe_layer_indices())
        self.layer = nn.ModuleList(
            MoEBertLayer(config, layer_idx=i) if i in moe_layers else BertLayer(config, layer_idx=i)
            for i in range(config.num_hidden_layers)
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: Optional[torch.Tensor],
        token_mask: torch.Tensor,
        domain_ids: Optional[torch.LongTensor],
        output_hidden_states: bool,
    ) -> tuple[torch.Tensor, Optional[tuple[torch.Tensor, ...]], tuple[Optional[torch.Tensor], ...]]:
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        router_logits = ()
        for layer in self.layer:
            if isinstance(layer, MoEBertLayer):
                hidden_states, logits = layer(hidden_states, attention_mask, token_mask, domain_ids)
                router_logits += (logits,)
            else:
                hidden_states = layer_output(layer(hidden_states, attention_mask))
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
        return hidden_states, all_hidden_states, router_logits


# Copied from sciembed.modeling.spectroid.modeling_spectroid.SPECTROID_HEADS. Each family folder ships alone as
# remote code, so SPECTROID's head is repeated per family, as transformers repeats code across model files.
SPECTROID_HEADS: dict[str, tuple[int, ...]] = {"CH1": (), "CH2": (64,), "CH3": (64,) * 6}


# Copied from sciembed.modeling.spectroid.modeling_spectroid.head_hidden_sizes
def head_hidden_sizes(head: Union[str, Sequence[int]]) -> list[int]:
    """The hidden-layer sizes of ``head``: a name in ``SPECTROID_HEADS`` or the sizes themselves."""
    if not isinstance(head, str):
        return list(head)
    if head not in SPECTROID_HEADS:
        valid = ", ".join(SPECTROID_HEADS)
        raise ValueError(f"unknown classification head {head!r}; valid names: {valid} (or a list of hidden sizes)")
    return list(SPECTROID_HEADS[head])


# Copied from sciembed.modeling.spectroid.modeling_spectroid.SpectroidClassificationHead with Spectroid->MoEBert
class MoEBertClassificationHead(nn.Module):
    """SPECTROID's MLP head, from the paper embedding to the logits.

    Dropout on the paper embedding, then Linear + ReLU for each of ``config.classifier_hidden_sizes``, then a Linear
    to ``config.num_labels`` (the logits).

    The dropout is BertForSequenceClassification's: ``config.classifier_dropout``, else ``hidden_dropout_prob``.
    """

    def __init__(self, config: PretrainedConfig) -> None:
        super().__init__()
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        sizes = [config.hidden_size, *config.classifier_hidden_sizes]
        self.hidden = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))
        for layer in self.hidden:
            layer.relu_follows = True  # He initialisation (init_bert_module)
        self.out_proj = nn.Linear(sizes[-1], config.num_labels)

    def forward(self, embedding: torch.Tensor) -> torch.Tensor:
        hidden = self.dropout(embedding)
        for layer in self.hidden:
            hidden = torch.relu(layer(hidden))
        return self.out_proj(hidden)


# Copied from sciembed.modeling.spectroid.modeling_spectroid.sequence_classification_loss
def sequence_classification_loss(config: PretrainedConfig, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """BertForSequenceClassification's loss: MSE for ``"regression"``, cross-entropy for
    ``"single_label_classification"``, BCE with logits for ``"multi_label_classification"``. An unset
    ``config.problem_type`` is inferred from ``num_labels`` and the labels' dtype and stored, as BERT does."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        return F.mse_loss(logits.squeeze(), labels.squeeze()) if config.num_labels == 1 else F.mse_loss(logits, labels)
    if config.problem_type == "single_label_classification":
        return F.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits, labels)


# Copied from sciembed.modeling.spectroid.modeling_spectroid.SOURCE_ONLY_CONFIG_KEYS
SOURCE_ONLY_CONFIG_KEYS = (
    "model_type",
    "architectures",
    "auto_map",
    "transformers_version",
    "_name_or_path",
    "id2label",
    "label2id",
    "problem_type",
)


# Copied from sciembed.modeling.spectroid.modeling_spectroid.config_from_bert
def config_from_bert(
    config_class: type[PretrainedConfig], bert_config: PretrainedConfig, **options
) -> PretrainedConfig:
    """A family's config from a BERT checkpoint's config and ``options``.

    A family's config from a BERT checkpoint's: the checkpoint's architecture settings (not the entries that describe
    the checkpoint itself, nor its values of the family's own fields, such as a generation default ``top_k``), then
    ``options``, keeping the attention implementation the BERT model was loaded with.
    """
    family_fields = set(inspect.signature(config_class.__init__).parameters) - {"self", "kwargs"}
    settings = {
        key: value
        for key, value in bert_config.to_diff_dict().items()
        if key not in SOURCE_ONLY_CONFIG_KEYS and key not in family_fields
    }
    # to_diff_dict leaves the attention implementation out.
    settings["attn_implementation"] = bert_config._attn_implementation
    return config_class(**{**settings, **options})


# Copied from sciembed.modeling.spectroid.modeling_spectroid.init_bert_module
def init_bert_module(module: nn.Module, std: float) -> None:
    """BERT's initialisation of one module through ``torch.nn.init``.

    BERT's initialisation of one module (a ``_init_weights`` step) through ``torch.nn.init``, whose calls transformers
    5 skips for weights loaded from a checkpoint (in-place writes to ``.data`` would overwrite them).

    A Linear layer marked ``relu_follows`` (a SPECTROID head's hidden layers) gets He initialisation. BERT's
    small N(0, std) would shrink the signal at every narrow ReLU layer. ``BertEmbeddings``' position and
    token-type buffers, which transformers 5 does not load, are refilled.
    """
    if isinstance(module, nn.Linear):
        if getattr(module, "relu_follows", False):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        else:
            nn.init.normal_(module.weight, mean=0.0, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=std)
        if module.padding_idx is not None:
            nn.init.zeros_(module.weight[module.padding_idx])
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, BertEmbeddings):
        with torch.no_grad():
            module.position_ids.copy_(torch.arange(module.position_ids.shape[-1]).expand_as(module.position_ids))
            module.token_type_ids.zero_()


class MoEBertPreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading for MoE BERT models."""

    config_class = MoEBertConfig
    config: MoEBertConfig
    base_model_prefix = "moe_bert"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["BertEmbeddings", "BertLayer", "MoEBertLayer"]

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation (:func:`init_bert_module`), then W3 = 0, b3 = 1 in every expert's gate.

        The gate values are set on the Linear itself, since transformers 5 initialises only modules that hold
        parameters.
        """
        init_bert_module(module, self.config.initializer_range)
        if getattr(module, "expert_gate", False):
            nn.init.zeros_(module.weight)
            nn.init.ones_(module.bias)


class MoEBertModel(MoEBertPreTrainedModel):
    """BERT with mixture-of-experts feed-forward blocks. `pooler_output` is the paper embedding (masked mean).

    Build it from any BERT checkpoint with [`MoEBertModel.from_bert`]. At that point its outputs equal the base
    model's for every routing mode. The forward pass takes BERT's inputs plus `domain_ids`.
    """

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__(config)
        if config.is_decoder or config.add_cross_attention:
            raise ValueError("MoEBertModel is an encoder: is_decoder and add_cross_attention must be False")
        self.embeddings = BertEmbeddings(config)
        self.encoder = MoEBertEncoder(config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.LongTensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.FloatTensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        domain_ids: Optional[torch.LongTensor] = None,
    ) -> Union[MoEBertModelOutput, tuple[torch.Tensor, ...]]:
        r"""BERT's inputs (`attention_mask` 2-D, `(batch_size, sequence_length)`), plus:

        domain_ids (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
            Index into `config.domains` of every input. Enforced routing sends input i to expert `domain_ids[i]`.
            Without it the domain is read from `input_ids[:, 0]`, which must then be a domain token (in place of
            `[CLS]`). `domain_ids` wins over the tokens. It selects experts only and does not change the tokens, so
            encode the way the model was trained (domain tokens, or `[CLS]` with `domain_ids`). Learned routing
            ignores the domain and only reports it in the output.
        """
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Specify exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
            input_shape = input_ids.size()
            device = input_ids.device
        else:
            input_shape = inputs_embeds.size()[:-1]
            device = inputs_embeds.device
        batch_size, seq_length = input_shape
        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=device)
        elif attention_mask.dim() != 2:
            raise ValueError(f"attention_mask must be 2-D (batch_size, sequence_length), got {attention_mask.dim()}-D")
        domain_ids = self._domain_ids(input_ids, domain_ids, batch_size)

        embedding_output = self.embeddings(
            input_ids=input_ids, position_ids=position_ids, token_type_ids=token_type_ids, inputs_embeds=inputs_embeds
        )
        extended_attention_mask = additive_attention_mask(attention_mask, embedding_output.dtype)

        sequence_output, hidden_states, router_logits = self.encoder(
            embedding_output, extended_attention_mask, attention_mask, domain_ids, output_hidden_states
        )
        mask = attention_mask.to(sequence_output.dtype).unsqueeze(-1)
        pooled_output = (sequence_output * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)

        output = MoEBertModelOutput(
            last_hidden_state=sequence_output,
            pooler_output=pooled_output,
            hidden_states=hidden_states,
            router_logits=None if self.config.routing == "enforced" else router_logits,
            domain_ids=domain_ids,
        )
        return output if return_dict else output.to_tuple()

    def _domain_ids(
        self, input_ids: Optional[torch.LongTensor], domain_ids: Optional[torch.LongTensor], batch_size: int
    ) -> Optional[torch.LongTensor]:
        """The domain of every input.

        It is `domain_ids` if given, else read from the domain tokens at position 0.
        """
        domains = self.config.domains
        if domain_ids is not None:
            if domain_ids.shape != (batch_size,):
                raise ValueError(f"domain_ids must have shape ({batch_size},), got {tuple(domain_ids.shape)}")
            if domain_ids.numel() and (domain_ids.min() < 0 or domain_ids.max() >= len(domains)):
                raise ValueError(f"domain_ids must be indices into config.domains {domains}")
            return domain_ids.long()
        if input_ids is not None and self.config.domain_token_ids:
            token_ids = torch.tensor(self.config.domain_token_ids, device=input_ids.device)
            matches = input_ids[:, :1] == token_ids
            if matches.any(dim=1).all():
                return matches.int().argmax(dim=1)
        if self.config.routing != "enforced":
            return None
        hint = "" if self.config.domain_token_ids else " (config.domain_token_ids is unset: build with from_bert)"
        raise ValueError(
            f"enforced routing needs the domain of every input: pass domain_ids (indices into config.domains "
            f"{domains}) or start every input with one of the domain tokens {self.config.domain_tokens} in place "
            f"of [CLS]{hint}"
        )

    @classmethod
    def from_bert(
        cls,
        path_or_model: Union[str, os.PathLike, BertModel],
        tokenizer: Optional[PreTrainedTokenizerBase] = None,
        **options,
    ) -> MoEBertModel:
        """Converts a pretrained BERT into a MoE BERT with equal outputs.

        Every pretrained weight is copied: embeddings, attention and LayerNorms under their own names, and the MLP
        of each MoE layer into every expert (W1 <- intermediate.dense, W2 <- output.dense). W3 = 0, b3 = 1 and the
        routers are initialised as new. When `config.domains` is not empty, the domain tokens are added to
        `tokenizer` in place (loaded from the checkpoint when not given) as special tokens, the embeddings are
        resized, and each new token's row is a copy of the `[CLS]` row (the paper seeds domain tokens from
        `[CLS]`). Tokens the tokenizer already had keep their pretrained rows.

        Args:
            path_or_model: the BERT checkpoint: a folder, a Hub id or a `BertModel`. A folder may also hold
                sentence-transformers files.
            tokenizer: the checkpoint's tokenizer, extended in place with the domain tokens.
            options: fields of [`MoEBertConfig`] (`num_experts`, `moe_layers`, `routing`, `num_experts_per_tok`,
                `domains`, `domain_tokens`) or of `BertConfig` (e.g. `hidden_dropout_prob`) to override.
        """
        if isinstance(path_or_model, BertModel):
            base = path_or_model
        elif isinstance(path_or_model, (str, os.PathLike)):
            # With its pooler (unused here), because most BERT checkpoints have one and loading it stays quiet.
            base = BertModel.from_pretrained(path_or_model)
        else:
            raise TypeError(f"from_bert takes a path, a Hub id or a BertModel, not {type(path_or_model).__name__}")

        config = config_from_bert(MoEBertConfig, base.config, **options)
        model = cls(config).to(device=base.device, dtype=base.dtype)

        moe_layers = config.moe_layer_indices()
        moved = {
            f"encoder.layer.{i}.{block}.dense.{name}"
            for i in moe_layers
            for block in ("intermediate", "output")
            for name in ("weight", "bias")
        }
        missing, unexpected = model.load_state_dict(base.state_dict(), strict=False)
        missing = [key for key in missing if ".moe." not in key]
        unexpected = [key for key in unexpected if key not in moved and not key.startswith("pooler.")]
        if missing or unexpected:
            raise ValueError(
                f"the base model does not have BERT's layout: missing {missing[:5]}, unexpected {unexpected[:5]}"
            )
        with torch.no_grad():
            for i in moe_layers:
                base_layer = base.encoder.layer[i]
                for expert in model.encoder.layer[i].moe.experts:
                    expert.w1.weight.copy_(base_layer.intermediate.dense.weight)
                    expert.w1.bias.copy_(base_layer.intermediate.dense.bias)
                    expert.w2.weight.copy_(base_layer.output.dense.weight)
                    expert.w2.bias.copy_(base_layer.output.dense.bias)

        if config.domains:
            if tokenizer is None:
                source = base.name_or_path if path_or_model is base else path_or_model
                tokenizer = AutoTokenizer.from_pretrained(source)
            model._add_domain_tokens(tokenizer)
        model.train(base.training)
        return model

    def _add_domain_tokens(self, tokenizer: PreTrainedTokenizerBase) -> None:
        """Adds the domain tokens to `tokenizer` (in place), seeds new rows from [CLS], fills domain_token_ids."""
        if tokenizer.cls_token_id is None:
            raise ValueError("the tokenizer has no [CLS] token to seed the domain tokens from")
        vocabulary = tokenizer.get_vocab()
        # All of them become special tokens, so the word-piece tokenizer never splits "[CVD]" into "[", "cvd", "]".
        tokenizer.add_tokens(list(self.config.domain_tokens), special_tokens=True)
        token_ids = tokenizer.convert_tokens_to_ids(list(self.config.domain_tokens))
        taken = {token_id: token for token, token_id in vocabulary.items()}
        for token, token_id in zip(self.config.domain_tokens, token_ids):
            if token not in vocabulary and token_id in taken:
                # A vocabulary with duplicate entries has fewer ids than lines, so the tokenizer numbers added
                # tokens from a count that is already taken.
                logger.warning(
                    f"the tokenizer gave the new token {token} the id {token_id}, which it already uses for "
                    f"{taken[token_id]!r} (duplicate vocabulary entries?); that embedding row is re-seeded"
                )
        # Rows the base model trained (a token it already knew) are kept; only rows new to it are seeded.
        seeded = [
            token_id
            for token, token_id in zip(self.config.domain_tokens, token_ids)
            if token not in vocabulary or token_id >= self.config.vocab_size
        ]
        if len(tokenizer) > self.config.vocab_size:
            self.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        weight = self.get_input_embeddings().weight
        with torch.no_grad():
            weight[seeded] = weight[tokenizer.cls_token_id].clone()
        self.config.domain_token_ids = token_ids


class MoEBertForSequenceClassification(MoEBertPreTrainedModel):
    """MoE BERT with SPECTROID's MLP classification head (Capuano et al.).

    The head reads the paper embedding (the masked mean).

    Build it from BERT with [`MoEBertForSequenceClassification.from_bert`], or from a saved MoE BERT encoder with
    `MoEBertForSequenceClassification.from_pretrained(folder, num_labels=n, classifier_hidden_sizes=[64])`: the
    encoder's weights load under the `moe_bert.` prefix and the head is new. `AutoModel` on a saved classifier
    folder loads the encoder alone. The output has no router logits: train the router losses on the encoder's.
    """

    def __init__(self, config: MoEBertConfig) -> None:
        super().__init__(config)
        self.moe_bert = MoEBertModel(config)
        self.classifier = MoEBertClassificationHead(config)
        # register_for_auto_class writes only this class's auto_map entry; the encoder's lets
        # AutoModel.from_pretrained(folder, trust_remote_code=True) load the encoder of a saved classifier.
        encoder = f"{__name__.rsplit('.', 1)[-1]}.MoEBertModel"
        config.auto_map = {"AutoModel": encoder, **(getattr(config, "auto_map", None) or {})}
        self.post_init()

    @classmethod
    def from_bert(
        cls,
        path_or_model: Union[str, os.PathLike, BertModel],
        head: Union[str, Sequence[int]] = "CH2",
        num_labels: Optional[int] = None,
        tokenizer: Optional[PreTrainedTokenizerBase] = None,
        **options,
    ) -> MoEBertForSequenceClassification:
        """[`MoEBertModel.from_bert`] (which adds the domain tokens to `tokenizer`) plus a new head.

        Args:
            path_or_model, tokenizer: as for [`MoEBertModel.from_bert`].
            head: `"CH1"`, `"CH2"` (default) or `"CH3"` (`SPECTROID_HEADS`), or a list of hidden sizes.
            num_labels: the number of labels. Defaults to the length of `id2label` when that is among the options,
                else 2. The checkpoint's own label maps are not carried over.
            options: fields of [`MoEBertConfig`] (`routing`, `domains`, `problem_type`, ...).
        """
        if "classifier_hidden_sizes" in options:
            raise TypeError("give the head as head= (a name or a list of hidden sizes), not classifier_hidden_sizes")
        labels = {"num_labels": num_labels, "id2label": None, "label2id": None}
        encoder = MoEBertModel.from_bert(
            path_or_model,
            tokenizer=tokenizer,
            classifier_hidden_sizes=head_hidden_sizes(head),
            **{**labels, **options},
        )
        model = cls(encoder.config).to(device=encoder.device, dtype=encoder.dtype)
        model.moe_bert = encoder  # the converted BERT replaces the randomly initialised encoder
        return model.train(encoder.training)

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.LongTensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.FloatTensor] = None,
        labels: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        domain_ids: Optional[torch.LongTensor] = None,
    ) -> Union[SequenceClassifierOutput, tuple[torch.Tensor, ...]]:
        r"""Classifies the batch, with the loss when `labels` are given.

        Takes [`MoEBertModel.forward`]'s inputs (`domain_ids` included).

        Args:
            labels: as for `BertForSequenceClassification`: class indices for single-label classification,
                multi-hot floats for multi-label, targets for regression.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        outputs = self.moe_bert(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            domain_ids=domain_ids,
        )
        logits = self.classifier(outputs.pooler_output)
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if return_dict else output.to_tuple()


MoEBertConfig.register_for_auto_class()
MoEBertModel.register_for_auto_class("AutoModel")
MoEBertForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")

__all__ = ["MoEBertForSequenceClassification", "MoEBertModel", "MoEBertModelOutput", "MoEBertPreTrainedModel"]
