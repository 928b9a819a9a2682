"""Multi²SPE: a BERT encoder with K CLS tokens (Seoh, Chang & McCallum, 2023).

The summed outputs of the CLS tokens embed a paper.
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
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertEmbeddings, BertLayer
from transformers.utils import ModelOutput, logging

from .configuration_multi2spe import Multi2SPEConfig

logger = logging.get_logger(__name__)


@dataclass
class Multi2SPEModelOutput(ModelOutput):
    """Output of :class:`Multi2SPEModel`. Sequence positions include the K−1 inserted CLS tokens.

    Args:
        last_hidden_state: (batch, n + K − 1, hidden) final hidden states. Positions 0..K−1 are the
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
    W_{l,k} − (1/K) Σ_k' W_{l,k'}, plus the identity when ``init == "identity"`` and
    ``config.reparameterization_init == "identity"`` (see :class:`Multi2SPEConfig`).

    Args:
        init: how the weights start: ``"identity"``, ``"zero"`` or ``"normal"`` (BERT's normal(0,
            initializer_range)). Biases start at zero.
    """

    def __init__(self, config: Multi2SPEConfig, init: str):
        super().__init__()
        k, hidden = config.num_cls_tokens, config.hidden_size
        self.init = init
        self.reparameterize = config.reparameterize and k > 1
        self.identity_offset = (
            self.reparameterize and init == "identity" and config.reparameterization_init == "identity"
        )
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


def additive_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """BERT's additive attention mask, of shape ``(batch, 1, 1, keys)``.

    The mask is 0 on the tokens of the 2-D ``attention_mask`` and the dtype's minimum on padding. It is plain torch,
    because every attention implementation BERT layers have on transformers 4.57 and 5.x (eager, sdpa) takes this
    mask, while transformers' own mask helpers are private and were removed in 5.0."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def layer_output(output: Union[torch.Tensor, tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """A ``BertLayer``'s hidden states: transformers 5 returns them, transformers 4 a tuple led by them."""
    return output[0] if isinstance(output, tuple) else output


class Multi2SPEEncoder(nn.Module):
    """BERT's layers plus the per-CLS linear layers.

    The layers are ``layer``, with the parameter names of ``BertEncoder``. The linear layers are ``cls_linear``,
    keyed by the 1-based number of the layer they follow.
    """

    def __init__(self, config: Multi2SPEConfig):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([BertLayer(config, layer_idx=i) for i in range(config.num_hidden_layers)])
        last = config.num_hidden_layers
        last_init = {"paper": "normal", "base": "zero" if config.text_pooling == "mean" else "identity"}[
            config.initialization
        ]
        self.cls_linear = nn.ModuleDict(
            {
                str(n): Multi2SPECLSLinear(config, init="identity" if n != last else last_init)
                for n in config.get_linear_layers()
            }
        )

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: Optional[torch.Tensor], output_hidden_states: bool
    ) -> tuple[torch.Tensor, Optional[tuple[torch.Tensor, ...]], torch.Tensor]:
        """Returns the final hidden states, every layer's and the last layer's output before its linears.

        Every layer's hidden states come only when asked. The last layer's output before its per-CLS linear layers
        is what ``text_pooling="mean"`` averages.
        """
        k = self.config.num_cls_tokens
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        for number, layer in enumerate(self.layer, start=1):
            hidden_states = layer_output(layer(hidden_states, attention_mask))
            layer_states = hidden_states
            if str(number) in self.cls_linear:
                # A new tensor rather than an in-place write: the layer output is needed for backward.
                cls_states = self.cls_linear[str(number)](hidden_states[:, :k])
                hidden_states = torch.cat([cls_states, hidden_states[:, k:]], dim=1)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
        return hidden_states, all_hidden_states, layer_states


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


# Copied from sciembed.modeling.spectroid.modeling_spectroid.SpectroidClassificationHead with Spectroid->Multi2SPE
class Multi2SPEClassificationHead(nn.Module):
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


class Multi2SPEPreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading conventions shared by Multi²SPE models."""

    config_class = Multi2SPEConfig
    base_model_prefix = "multi2spe"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["BertEmbeddings", "BertLayer"]

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation (:func:`init_bert_module`), plus the per-CLS linear layers' own start
        (:class:`Multi2SPECLSLinear`'s ``init``)."""
        std = self.config.initializer_range
        init_bert_module(module, std)
        if isinstance(module, Multi2SPECLSLinear):
            if module.init == "identity":
                with torch.no_grad():
                    module.weight.copy_(torch.eye(module.weight.shape[-1]).expand_as(module.weight))
            elif module.init == "zero":
                nn.init.zeros_(module.weight)
            else:
                nn.init.normal_(module.weight, mean=0.0, std=std)
            nn.init.zeros_(module.bias)


class Multi2SPEModel(Multi2SPEPreTrainedModel):
    """Multi²SPE encoder: BERT with K CLS tokens and per-CLS linear layers. ``pooler_output`` = Σ_k c_k.

    The model inserts the K−1 extra CLS tokens itself, right after ``[CLS]`` (positions 1..K−1, attention
    mask 1, token type 0), so a plain BERT tokenizer's output goes in unchanged. Inputs must therefore
    start with ``[CLS]`` and be right-padded, as BERT tokenizers produce them. Later tokens move K−1
    positions to the right and get the position ids 0..n+K−2 of the extended sequence, as if the
    tokenizer had produced it. An extended sequence longer than ``max_position_embeddings`` loses tokens
    before its final token (the tokenizer's ``[SEP]``), which is kept, as a tokenizer truncating to the
    limit would have done. This is logged once.
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
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    @property
    def num_inserted_tokens(self) -> int:
        """Positions the inserted tokens take.

        A tokenizer must leave room for them below the position limit (none with ``initialization="base"``, whose extra
        CLS tokens share position 0).
        """
        return 0 if self._shares_cls_position else self.config.num_cls_tokens - 1

    @property
    def _shares_cls_position(self) -> bool:
        return self.config.initialization == "base"

    @classmethod
    def from_bert(
        cls,
        path_or_model: Union[str, os.PathLike, BertModel],
        tokenizer: Optional[PreTrainedTokenizerBase] = None,
        **options,
    ) -> Multi2SPEModel:
        """Builds Multi²SPE from a BERT checkpoint.

        Every pretrained weight is copied. Only the per-CLS linear layers (and embedding rows of added tokens) are
        new.

        Args:
            path_or_model: a folder or Hub id of a BERT checkpoint, or a ``BertModel``.
            tokenizer: the checkpoint's tokenizer. Loaded from the path (or ``model.name_or_path``) when
                omitted. The extra CLS tokens are ``[unused1]``..``[unused{K-1}]`` when its vocabulary
                has them (as in the authors' ``utils.py``). Otherwise ``[CLS1]``..``[CLS{K-1}]`` are added
                to this tokenizer object in place as special tokens, so a caller who passes it can save
                it next to the model, and the embeddings are resized.
            **options: :class:`Multi2SPEConfig` fields (``num_cls_tokens``, ``linear_layers``, ...). Given
                ``extra_cls_token_ids`` are used as they are.

        Returns the model in evaluation mode, as ``from_pretrained`` does.
        """
        bert = path_or_model if isinstance(path_or_model, BertModel) else BertModel.from_pretrained(path_or_model)
        if tokenizer is None:
            source = bert.name_or_path if isinstance(path_or_model, BertModel) else path_or_model
            tokenizer = AutoTokenizer.from_pretrained(source)
        config = config_from_bert(Multi2SPEConfig, bert.config, **options)
        added_ids: list[int] = []
        if config.extra_cls_token_ids is None:
            extra_tokens = [f"[unused{i}]" for i in range(1, config.num_cls_tokens)]
            vocab = tokenizer.get_vocab()
            if not all(token in vocab for token in extra_tokens):
                extra_tokens = [f"[CLS{i}]" for i in range(1, config.num_cls_tokens)]
                tokenizer.add_tokens(extra_tokens, special_tokens=True)
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
        seeded = config.extra_cls_token_ids if config.initialization == "base" else added_ids
        if seeded:
            # The extra CLS tokens start as copies of [CLS]: the pretrained encoder already uses that embedding
            # to aggregate the sequence ("paper": added tokens only, which still differ by their positions; an
            # added id may fall inside a vocabulary padded beyond the tokenizer: that row was unused).
            with torch.no_grad():
                weight = model.get_input_embeddings().weight
                weight[seeded] = weight[tokenizer.cls_token_id].clone()
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
        # From the config on each call, not a buffer: transformers 5 leaves non-persistent buffers uninitialised
        # when it loads a model.
        extra = torch.tensor(self.config.extra_cls_token_ids, dtype=torch.long, device=device)
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
        if self._shares_cls_position:
            # Every CLS token at [CLS]'s position; the text keeps the positions the tokenizer gave it.
            if position_ids is None:
                position_ids = torch.arange(length, device=device).expand(batch_size, length)
            position_ids = insert(position_ids, position_ids[:, :1].expand(-1, n_extra))
        elif position_ids is not None:
            first = position_ids[:, :1]
            position_ids = torch.cat(
                [first, first + torch.arange(1, n_extra + 1, device=device), position_ids[:, 1:] + n_extra], dim=1
            )

        limit = self.config.max_position_embeddings
        if not self._shares_cls_position and length + n_extra > limit:
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

    def _cls_key_bias(self, attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The additive 4-D attention mask of ``initialization="base"``.

        Padding masked as BERT masks it, and −log K on the keys of the K CLS tokens, so that K copies of one state
        weigh as that state once (Σ_k exp(s − log K) = exp(s)) and the base's attention is unchanged at step 0.
        """
        k = self.config.num_cls_tokens
        mask = additive_attention_mask(attention_mask, dtype)
        bias = torch.zeros(attention_mask.shape[1], dtype=dtype, device=attention_mask.device)
        bias[:k] = -torch.log(torch.tensor(float(k), dtype=dtype))
        return mask + bias

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
        """Encode a batch as BERT tokenizes it. The model inserts the extra CLS tokens itself.

        ``inputs_embeds`` (instead of ``input_ids``) get the word embeddings of the extra tokens
        inserted after position 0. ``position_ids``, when given, are for the input as passed. The
        inserted tokens continue them and later positions shift by K−1.
        """
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
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
        if self._shares_cls_position:
            extended_mask = self._cls_key_bias(attention_mask, embedding_output.dtype)
        else:
            extended_mask = additive_attention_mask(attention_mask, embedding_output.dtype)

        sequence_output, hidden_states, last_layer_states = self.encoder(
            embedding_output, extended_mask, output_hidden_states
        )
        k = self.config.num_cls_tokens
        cls_embeddings = sequence_output[:, :k]
        if self.config.cls_activation == "tanh" and str(self.config.num_hidden_layers) in self.encoder.cls_linear:
            cls_embeddings = torch.tanh(cls_embeddings)
        if self.config.text_pooling == "mean":
            # [CLS] and the text, as the base's mean pooling saw them; not the inserted copies of [CLS].
            weights = attention_mask.to(last_layer_states.dtype).clone()
            weights[:, 1:k] = 0
            mean = (last_layer_states * weights[..., None]).sum(dim=1) / weights.sum(dim=1, keepdim=True)
            cls_embeddings = cls_embeddings + mean[:, None] / k

        output = Multi2SPEModelOutput(
            last_hidden_state=sequence_output,
            pooler_output=cls_embeddings.sum(dim=1),
            cls_embeddings=cls_embeddings,
            attention_mask=attention_mask,
            hidden_states=hidden_states,
        )
        return output if return_dict else output.to_tuple()


class Multi2SPEForSequenceClassification(Multi2SPEPreTrainedModel):
    """Multi²SPE with SPECTROID's MLP classification head (Capuano et al.) on the paper embedding Σ_k c_k.

    Build it from BERT with :meth:`from_bert`, or from a saved Multi²SPE encoder with
    ``Multi2SPEForSequenceClassification.from_pretrained(folder, num_labels=n, classifier_hidden_sizes=[64])``:
    the encoder's weights load under the ``multi2spe.`` prefix and the head is new. ``AutoModel`` on a saved
    classifier folder loads the encoder alone.
    """

    def __init__(self, config: Multi2SPEConfig):
        super().__init__(config)
        self.multi2spe = Multi2SPEModel(config)
        self.classifier = Multi2SPEClassificationHead(config)
        # register_for_auto_class writes only this class's auto_map entry; the encoder's lets
        # AutoModel.from_pretrained(folder, trust_remote_code=True) load the encoder of a saved classifier.
        encoder = f"{__name__.rsplit('.', 1)[-1]}.Multi2SPEModel"
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
    ) -> Multi2SPEForSequenceClassification:
        """:meth:`Multi2SPEModel.from_bert` (which may add the extra CLS tokens to ``tokenizer``) plus a new head.

        Args:
            path_or_model, tokenizer: as for :meth:`Multi2SPEModel.from_bert`.
            head: ``"CH1"``, ``"CH2"`` (default) or ``"CH3"`` (``SPECTROID_HEADS``), or a list of hidden sizes.
            num_labels: the number of labels. Defaults to the length of ``id2label`` when that is among the
                options, else 2. The checkpoint's own label maps are not carried over.
            **options: :class:`Multi2SPEConfig` fields (``num_cls_tokens``, ``problem_type``, ``id2label``, ...).
        """
        if "classifier_hidden_sizes" in options:
            raise TypeError("give the head as head= (a name or a list of hidden sizes), not classifier_hidden_sizes")
        labels = {"num_labels": num_labels, "id2label": None, "label2id": None}
        encoder = Multi2SPEModel.from_bert(
            path_or_model,
            tokenizer=tokenizer,
            classifier_hidden_sizes=head_hidden_sizes(head),
            **{**labels, **options},
        )
        model = cls(encoder.config).to(device=encoder.device, dtype=encoder.dtype)
        model.multi2spe = encoder  # the converted BERT replaces the randomly initialised encoder
        return model.train(encoder.training)

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        labels: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ) -> Union[SequenceClassifierOutput, tuple[torch.Tensor, ...]]:
        """Classifies the batch, with the loss when ``labels`` are given.

        Takes :meth:`Multi2SPEModel.forward`'s inputs.

        Args:
            labels: as for ``BertForSequenceClassification``: class indices for single-label classification,
                multi-hot floats for multi-label, targets for regression.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        outputs = self.multi2spe(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        logits = self.classifier(outputs.pooler_output)
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if return_dict else output.to_tuple()


Multi2SPEConfig.register_for_auto_class()
Multi2SPEModel.register_for_auto_class("AutoModel")
Multi2SPEForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
