"""Multi²SPE: a BERT encoder with K CLS tokens whose summed outputs embed a paper (Seoh, Chang & McCallum, 2023)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import nn
from transformers import AutoTokenizer, BertModel, PreTrainedModel, PreTrainedTokenizerBase
from transformers.modeling_attn_mask_utils import _prepare_4d_attention_mask_for_sdpa
from transformers.models.bert.modeling_bert import BertEmbeddings, BertLayer
from transformers.utils import ModelOutput, logging

from .configuration_multi2spe import Multi2SPEConfig

logger = logging.get_logger(__name__)


@dataclass
class Multi2SPEModelOutput(ModelOutput):
    """Output of :class:`Multi2SPEModel`; sequence positions include the K−1 inserted CLS tokens.

    Args:
        last_hidden_state: (batch, n + K − 1, hidden) final hidden states; positions 0..K−1 are the
            CLS tokens after the last layer's per-CLS linear layers (when there are some).
        pooler_output: (batch, hidden) the paper embedding Σ_k c_k used at inference in the paper.
        cls_embeddings: (batch, K, hidden) the CLS outputs c_1..c_K (what the training similarity
            λ·max_ij c_i·c_j + (1−λ)·(Σc)·(Σc) needs).
        attention_mask: (batch, n + K − 1) the attention mask of the extended sequence, for consumers
            that pool over token positions.
        hidden_states: the embedding output and the output of every layer (after its per-CLS linear
            layers), when ``output_hidden_states=True``.
    """

    last_hidden_state: Optional[torch.FloatTensor] = None
    pooler_output: Optional[torch.FloatTensor] = None
    cls_embeddings: Optional[torch.FloatTensor] = None
    attention_mask: Optional[torch.LongTensor] = None
    hidden_states: Optional[tuple[torch.FloatTensor, ...]] = None


class Multi2SPECLSLinear(nn.Module):
    """The K linear layers L_{l,k} applied after encoder layer l, one to each CLS position.

    Weights are stored as (K, hidden, hidden) in ``nn.Linear``'s (out, in) layout. With
    ``config.reparameterize`` and K > 1, the effective weight of L_{l,k} is equation (1),
    W_{l,k} − (1/K) Σ_k' W_{l,k'}, plus the identity when ``identity_init`` and
    ``config.reparameterization_init == "identity"`` (see :class:`Multi2SPEConfig`).
    """

    def __init__(self, config: Multi2SPEConfig, identity_init: bool):
        super().__init__()
        k, hidden = config.num_cls_tokens, config.hidden_size
        self.identity_init = identity_init
        self.reparameterize = config.reparameterize and k > 1
        self.identity_offset = self.reparameterize and identity_init and config.reparameterization_init == "identity"
        self.weight = nn.Parameter(torch.empty(k, hidden, hidden))
        self.bias = nn.Parameter(torch.empty(k, hidden))

    def effective_weight(self) -> torch.Tensor:
        """The (K, hidden, hidden) weights actually applied."""
        weight = self.weight
        if self.reparameterize:
            weight = weight - weight.mean(dim=0, keepdim=True)
            if self.identity_offset:
                weight = weight + torch.eye(weight.shape[-1], dtype=weight.dtype, device=weight.device)
        return weight

    def forward(self, cls_states: torch.Tensor) -> torch.Tensor:
        """Map (batch, K, hidden) CLS hidden states, the k-th through L_{l,k}."""
        return torch.einsum("bki,koi->bko", cls_states, self.effective_weight()) + self.bias


class Multi2SPEEncoder(nn.Module):
    """BERT's layers (``layer``, same parameter names as ``BertEncoder``) plus the per-CLS linear layers
    (``cls_linear``, keyed by the 1-based number of the layer they follow)."""

    def __init__(self, config: Multi2SPEConfig):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([BertLayer(config, layer_idx=i) for i in range(config.num_hidden_layers)])
        last = config.num_hidden_layers
        self.cls_linear = nn.ModuleDict(
            {str(n): Multi2SPECLSLinear(config, identity_init=n != last) for n in config.get_linear_layers()}
        )

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: Optional[torch.Tensor], output_hidden_states: bool
    ) -> tuple[torch.Tensor, Optional[tuple[torch.Tensor, ...]]]:
        k = self.config.num_cls_tokens
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        for number, layer in enumerate(self.layer, start=1):
            hidden_states = layer(hidden_states, attention_mask)[0]
            if str(number) in self.cls_linear:
                # A new tensor rather than an in-place write: the layer output is needed for backward.
                cls_states = self.cls_linear[str(number)](hidden_states[:, :k])
                hidden_states = torch.cat([cls_states, hidden_states[:, k:]], dim=1)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
        return hidden_states, all_hidden_states


class Multi2SPEPreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading conventions shared by Multi²SPE models."""

    config_class = Multi2SPEConfig
    base_model_prefix = "multi2spe"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["BertEmbeddings", "BertLayer"]

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation, plus identity (intermediate) or normal (last layer) per-CLS linear layers."""
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        elif isinstance(module, Multi2SPECLSLinear):
            if module.identity_init:
                module.weight.data.copy_(torch.eye(module.weight.shape[-1]).expand_as(module.weight))
            else:
                module.weight.data.normal_(mean=0.0, std=std)
            module.bias.data.zero_()


class Multi2SPEModel(Multi2SPEPreTrainedModel):
    """Multi²SPE encoder: BERT with K CLS tokens and per-CLS linear layers; ``pooler_output`` = Σ_k c_k.

    The model inserts the K−1 extra CLS tokens itself, right after ``[CLS]`` (positions 1..K−1, attention
    mask 1, token type 0), so a plain BERT tokenizer's output goes in unchanged; inputs must therefore
    start with ``[CLS]`` and be right-padded, as BERT tokenizers produce them. Later tokens move K−1
    positions to the right and get the position ids 0..n+K−2 of the extended sequence, as if the
    tokenizer had produced it. An extended sequence longer than ``max_position_embeddings`` loses tokens
    before its final token (the tokenizer's ``[SEP]``), which is kept, as a tokenizer truncating to the
    limit would have done; this is logged once.
    """

    def __init__(self, config: Multi2SPEConfig):
        super().__init__(config)
        extra = config.extra_cls_token_ids or []
        if len(extra) != config.num_cls_tokens - 1:
            raise ValueError(
                f"config.extra_cls_token_ids must list the {config.num_cls_tokens - 1} token ids inserted after "
                "[CLS]; build the model with Multi2SPEModel.from_bert, which fills them"
            )
        self.embeddings = BertEmbeddings(config)
        self.encoder = Multi2SPEEncoder(config)
        self.attn_implementation = config._attn_implementation
        self.register_buffer("extra_cls_token_ids", torch.tensor(extra, dtype=torch.long), persistent=False)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    @property
    def num_inserted_tokens(self) -> int:
        """Tokens the model inserts into each input: a tokenizer must leave room for them below the position limit."""
        return self.config.num_cls_tokens - 1

    @classmethod
    def from_bert(
        cls,
        path_or_model: Union[str, os.PathLike, BertModel],
        tokenizer: Optional[PreTrainedTokenizerBase] = None,
        **options,
    ) -> "Multi2SPEModel":
        """Build Multi²SPE from a BERT checkpoint: every pretrained weight is copied, only the per-CLS
        linear layers (and embedding rows of added tokens) are new.

        Args:
            path_or_model: a folder or Hub id of a BERT checkpoint, or a ``BertModel``.
            tokenizer: the checkpoint's tokenizer; loaded from the path (or ``model.name_or_path``) when
                omitted. The extra CLS tokens are ``[unused1]``..``[unused{K-1}]`` when its vocabulary
                has them (as in the authors' ``utils.py``); otherwise ``[CLS1]``..``[CLS{K-1}]`` are added
                to this tokenizer object in place as special tokens, so a caller who passes it can save
                it next to the model, and the embeddings are resized.
            **options: :class:`Multi2SPEConfig` fields (``num_cls_tokens``, ``linear_layers``, ...); given
                ``extra_cls_token_ids`` are used as they are.

        Returns the model in evaluation mode, as ``from_pretrained`` does.
        """
        bert = path_or_model if isinstance(path_or_model, BertModel) else BertModel.from_pretrained(path_or_model)
        if tokenizer is None:
            source = bert.name_or_path if isinstance(path_or_model, BertModel) else path_or_model
            tokenizer = AutoTokenizer.from_pretrained(source)
        settings = bert.config.to_dict()
        for key in ("model_type", "architectures", "auto_map", "transformers_version"):
            settings.pop(key, None)
        # to_dict leaves the attention implementation out; keep the one the BERT model was loaded with.
        settings["attn_implementation"] = bert.config._attn_implementation
        config = Multi2SPEConfig(**{**settings, **options})
        added_ids: list[int] = []
        if config.extra_cls_token_ids is None:
            extra_tokens = [f"[unused{i}]" for i in range(1, config.num_cls_tokens)]
            vocab = tokenizer.get_vocab()
            if not all(token in vocab for token in extra_tokens):
                extra_tokens = [f"[CLS{i}]" for i in range(1, config.num_cls_tokens)]
                tokenizer.add_special_tokens(
                    {"additional_special_tokens": extra_tokens}, replace_additional_special_tokens=False
                )
            config.extra_cls_token_ids = tokenizer.convert_tokens_to_ids(extra_tokens)
            added_ids = [i for token, i in zip(extra_tokens, config.extra_cls_token_ids) if token not in vocab]
        model = cls(config)
        state = {key: value for key, value in bert.state_dict().items() if not key.startswith("pooler.")}
        missing, unexpected = model.load_state_dict(state, strict=False)
        not_new = [key for key in missing if not key.startswith("encoder.cls_linear.")]
        if not_new or unexpected:
            raise ValueError(f"BERT weights do not fit Multi2SPEModel: missing {not_new}, unexpected {unexpected}")

        new_size = max(config.vocab_size, max(config.extra_cls_token_ids, default=-1) + 1)
        if new_size > config.vocab_size:
            model.resize_token_embeddings(new_size, mean_resizing=False)
        if added_ids:
            # Added CLS tokens start as copies of [CLS]: the pretrained encoder already uses that embedding
            # to aggregate the sequence, and the copies still differ by their position embeddings. (An
            # added id may fall inside a vocabulary padded beyond the tokenizer: that row was unused.)
            with torch.no_grad():
                weight = model.get_input_embeddings().weight
                weight[added_ids] = weight[tokenizer.cls_token_id].clone()
        return model.eval()

    def _extend_inputs(
        self,
        input_ids: Optional[torch.Tensor],
        inputs_embeds: Optional[torch.Tensor],
        attention_mask: Optional[torch.Tensor],
        token_type_ids: Optional[torch.Tensor],
        position_ids: Optional[torch.Tensor],
    ) -> tuple[Optional[torch.Tensor], ...]:
        """Insert the K−1 extra CLS tokens after position 0 and truncate to ``max_position_embeddings``."""
        tokens = input_ids if input_ids is not None else inputs_embeds
        batch_size, length = tokens.shape[:2]
        device = tokens.device
        extra = self.extra_cls_token_ids
        n_extra = extra.numel()
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, length, dtype=torch.long, device=device)
        elif attention_mask.dim() != 2:
            raise ValueError("Multi2SPEModel takes a 2-D attention mask (batch, sequence)")

        def insert(values: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
            return torch.cat([values[:, :1], new.expand(values.shape[0], *new.shape[1:]), values[:, 1:]], dim=1)

        if input_ids is not None:
            input_ids = insert(input_ids, extra[None])
        else:
            inputs_embeds = insert(inputs_embeds, self.embeddings.word_embeddings(extra)[None])
        attention_mask = insert(attention_mask, attention_mask.new_ones(1, n_extra))
        if token_type_ids is not None:
            token_type_ids = insert(token_type_ids, token_type_ids.new_zeros(1, n_extra))
        if position_ids is not None:
            first = position_ids[:, :1]
            position_ids = torch.cat(
                [first, first + torch.arange(1, n_extra + 1, device=device), position_ids[:, 1:] + n_extra], dim=1
            )

        limit = self.config.max_position_embeddings
        if length + n_extra > limit:
            logger.warning_once(
                f"Input of {length} tokens plus {n_extra} inserted CLS tokens exceeds max_position_embeddings="
                f"{limit}; tokens before each sequence's final token are dropped (tokenize to at most "
                f"{limit - n_extra} tokens to avoid this)."
            )
            # Right padding: each row's final real token sits at (number of attended positions − 1).
            final = attention_mask.long().sum(dim=1) - 1
            rows = torch.nonzero(final >= limit).squeeze(1)

            def truncate(values: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
                if values is None:
                    return None
                kept = values[:, :limit].clone()
                if rows.numel():
                    kept[rows, limit - 1] = values[rows, final[rows]]
                return kept

            input_ids, inputs_embeds, token_type_ids = map(truncate, (input_ids, inputs_embeds, token_type_ids))
            attention_mask = attention_mask[:, :limit]
            position_ids = None if position_ids is None else position_ids[:, :limit]
        return input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ) -> Union[tuple[torch.Tensor, ...], Multi2SPEModelOutput]:
        """Encode a batch as BERT tokenizes it; the model inserts the extra CLS tokens itself.

        ``inputs_embeds`` (instead of ``input_ids``) get the word embeddings of the extra tokens
        inserted after position 0. ``position_ids``, when given, are for the input as passed; the
        inserted tokens continue them and later positions shift by K−1.
        """
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Specify exactly one of input_ids or inputs_embeds")
        if input_ids is not None:
            self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)

        input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids = self._extend_inputs(
            input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids
        )
        embedding_output = self.embeddings(
            input_ids=input_ids, position_ids=position_ids, token_type_ids=token_type_ids, inputs_embeds=inputs_embeds
        )
        # The 4-D mask exactly as BertModel.forward builds it (transformers 4.57), so that outputs match it.
        if self.attn_implementation == "sdpa" and self.config.position_embedding_type == "absolute":
            extended_mask = _prepare_4d_attention_mask_for_sdpa(
                attention_mask, embedding_output.dtype, tgt_len=embedding_output.shape[1]
            )
        else:
            extended_mask = self.get_extended_attention_mask(attention_mask, attention_mask.shape)

        sequence_output, hidden_states = self.encoder(embedding_output, extended_mask, output_hidden_states)
        cls_embeddings = sequence_output[:, : self.config.num_cls_tokens]
        if self.config.cls_activation == "tanh" and str(self.config.num_hidden_layers) in self.encoder.cls_linear:
            cls_embeddings = torch.tanh(cls_embeddings)

        output = Multi2SPEModelOutput(
            last_hidden_state=sequence_output,
            pooler_output=cls_embeddings.sum(dim=1),
            cls_embeddings=cls_embeddings,
            attention_mask=attention_mask,
            hidden_states=hidden_states,
        )
        return output if return_dict else output.to_tuple()


Multi2SPEConfig.register_for_auto_class()
Multi2SPEModel.register_for_auto_class("AutoModel")
