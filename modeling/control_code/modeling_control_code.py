"""SciRepEval's multi-task control-code encoder (MTL CTRL, Singh et al., EMNLP 2023) as a transformers model.

One BERT encoder serves four task formats. The format of each input is a control code, a special
token inserted right after ``[CLS]`` (``[CLF]`` classification, ``[RGN]`` regression, ``[PRX]``
proximity, ``[QRY]`` ad-hoc search queries), and the document embedding for that format is the final
hidden state at the control code's position, index 1.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

import torch
from torch import nn
from torch.nn import functional as F
from transformers import AutoTokenizer, BertModel, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertEmbeddings, BertEncoder
from transformers.utils import ModelOutput, logging

from .configuration_control_code import ControlCodeConfig

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


#: Where the control code sits and where the embedding is read: right after ``[CLS]``.
CONTROL_CODE_POSITION = 1


@dataclass
class ControlCodeModelOutput(ModelOutput):
    """Output of :class:`ControlCodeModel`. Sequences are one token longer than the input (the control code).

    Args:
        last_hidden_state: ``(batch, n + 1, hidden)`` final hidden states, control code at index 1.
        pooler_output: ``(batch, hidden)`` the paper embedding for the requested task format: the
            final hidden state of the control code (SciRepEval reads ``last_hidden_state[:, 1]``), or with
            ``config.text_pooling="mean"`` the mean of the other real tokens' final states.
        hidden_states: with ``output_hidden_states``, the embedding output and every layer's output,
            each ``(batch, n + 1, hidden)``.
        attention_mask: ``(batch, n + 1)`` the attention mask of the sequence the encoder saw, with the
            control code (pool or mask ``last_hidden_state`` with this one, not the input's).
    """

    last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attention_mask: torch.LongTensor | None = None


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


# Copied from sciembed.modeling.spectroid.modeling_spectroid.SpectroidClassificationHead with Spectroid->ControlCode
class ControlCodeClassificationHead(nn.Module):
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


class ControlCodePreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading for the control-code model (BERT's: SciRepEval starts from SciBERT)."""

    config_class = ControlCodeConfig
    base_model_prefix = "control_code"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["BertEmbeddings", "BertLayer"]

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation (:func:`init_bert_module`). The control-code rows are ordinary word-embedding rows,
        N(0, initializer_range)."""
        init_bert_module(module, self.config.initializer_range)


def _insert_after_first(tensor: torch.Tensor, column: torch.Tensor) -> torch.Tensor:
    """``tensor`` with ``column`` (batch, 1, ...) inserted at position 1 of dimension 1."""
    return torch.cat([tensor[:, :CONTROL_CODE_POSITION], column, tensor[:, CONTROL_CODE_POSITION:]], dim=1)


class ControlCodeModel(ControlCodePreTrainedModel):
    """BERT with SciRepEval's task-format control codes. ``pooler_output`` is the embedding at the code.

    Parameter names are ``BertModel``'s without the pooler (``embeddings.*``, ``encoder.layer.N.*``),
    so any BERT checkpoint loads into it. Build one with :meth:`from_bert`, which also adds the codes
    to the tokenizer.

    Example::

        model = ControlCodeModel.from_bert("allenai/scibert_scivocab_uncased", tokenizer=tokenizer)
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        embeddings = model(**batch, task_format="classification").pooler_output
    """

    def __init__(self, config: ControlCodeConfig):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    @property
    def num_inserted_tokens(self) -> int:
        """Tokens the model inserts into each input.

        A tokenizer must leave room for them below the position limit.
        """
        return 1

    @classmethod
    def from_bert(
        cls,
        path_or_model: str | os.PathLike[str] | BertModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        **options: object,
    ) -> ControlCodeModel:
        """Build the model from a BERT checkpoint and add the control codes to its tokenizer.

        Every pretrained weight (embeddings and all layers, not the pooler, which the model lacks) is
        copied. The control codes are added to ``tokenizer`` *in place* as additional special tokens,
        in sorted order as SciRepEval's ``training/pl_training.py`` adds them, so save that tokenizer next
        to the model. Codes the tokenizer already knows (e.g. starting from a control-code checkpoint)
        keep their ids and trained rows. Each newly added code gets a new word-embedding row as
        ``control_code_init`` says: drawn from N(0, initializer_range), BERT's init, which is what
        SciRepEval's ``resize_token_embeddings`` call gave in the transformers of its time (recent releases
        default to mean-resizing instead), or a copy of the tokenizer's ``[SEP]`` row.

        Args:
            path_or_model: a folder or Hub id loadable by ``BertModel.from_pretrained`` (a
                sentence-transformers folder works too), or a ``BertModel``.
            tokenizer: the checkpoint's tokenizer. Loaded with ``AutoTokenizer`` from the path (or the
                model's ``name_or_path``) when omitted.
            **options: :class:`ControlCodeConfig` fields (``control_codes``, ``default_task_format``,
                or BERT fields such as dropout). ``control_code_token_ids`` is filled here.
        """
        if "control_code_token_ids" in options:
            raise TypeError("control_code_token_ids is filled by from_bert from the tokenizer; do not pass it")
        bert = path_or_model if isinstance(path_or_model, BertModel) else BertModel.from_pretrained(path_or_model)
        if tokenizer is None:
            source = bert.name_or_path if isinstance(path_or_model, BertModel) else path_or_model
            if not source:
                raise ValueError("the BertModel has no name_or_path to load its tokenizer from: pass tokenizer=")
            tokenizer = AutoTokenizer.from_pretrained(source)

        model = cls(config_from_bert(ControlCodeConfig, bert.config, **options)).to(
            device=bert.device, dtype=bert.dtype
        )
        model.load_state_dict({k: v for k, v in bert.state_dict().items() if not k.startswith("pooler.")})

        codes = sorted(set(model.config.control_codes.values()))
        new_codes = [code for code in codes if code not in tokenizer.get_vocab()]
        # add_tokens(special_tokens=True): one call that neither splits the codes nor replaces other special
        # tokens on transformers 4.57 and 5.x alike (their add_special_tokens keywords differ).
        tokenizer.add_tokens(codes, special_tokens=True)
        # A word-piece vocabulary with a repeated entry leaves an id unused, and tokenizers then hands an
        # added token the id of an existing word: the code and that word would share one embedding row.
        vocab = tokenizer.get_vocab()
        code_of_id = {vocab[code]: code for code in codes}
        clashes = [
            f"{code_of_id[i]} and {word!r} (id {i})" for word, i in vocab.items() if code_of_id.get(i, word) != word
        ]
        if clashes:
            raise ValueError(
                f"the tokenizer gives control codes the ids of other tokens: {'; '.join(clashes)} "
                "(does its vocabulary file repeat an entry?)"
            )
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        if new_codes:
            weight = model.get_input_embeddings().weight
            rows = torch.tensor(tokenizer.convert_tokens_to_ids(new_codes), device=weight.device)
            with torch.no_grad():
                if model.config.control_code_init == "sep":
                    if tokenizer.sep_token_id is None:
                        raise ValueError("control_code_init='sep' needs a tokenizer with a [SEP] token")
                    weight[rows] = weight[tokenizer.sep_token_id].expand_as(weight[rows])
                else:
                    weight[rows] = torch.empty_like(weight[rows]).normal_(0.0, model.config.initializer_range)
        model.config.control_code_token_ids = {
            name: tokenizer.convert_tokens_to_ids(code) for name, code in model.config.control_codes.items()
        }
        return model

    def _control_code_ids(self, task_format: str | Sequence[str] | None, rows: torch.Tensor) -> torch.LongTensor:
        """The control-code token id of each row of ``rows`` for ``task_format``.

        One format for the batch is filled from ``rows`` itself, so that an exported graph (ONNX) keeps the batch
        size as an input rather than a constant.

        Args:
            task_format: one format for the batch, one per row, or ``None`` for the default (see :meth:`forward`).
            rows: the batch's ``input_ids`` or ``inputs_embeds``.
        """
        batch_size = rows.shape[0]
        single = task_format is None or isinstance(task_format, str)
        if single:
            formats = [task_format or self.config.default_task_format]
        else:
            formats = list(task_format)
            if len(formats) != batch_size:
                raise ValueError(f"task_format has {len(formats)} entries for a batch of {batch_size}")
        valid = ", ".join(self.config.control_codes)
        for name in formats:
            if name not in self.config.control_codes:
                raise ValueError(f"unknown task_format {name!r}; valid formats: {valid}")
            if name not in self.config.control_code_token_ids:
                raise ValueError(
                    f"no token id for the {name!r} control code: build the model with ControlCodeModel.from_bert, "
                    "which adds the codes to the tokenizer"
                )
        ids = [self.config.control_code_token_ids[name] for name in formats]
        if single:
            return torch.full_like(rows[:, 0].long() if rows.dim() == 2 else rows[:, 0, 0].long(), ids[0])
        return torch.tensor(ids, dtype=torch.long, device=self.device)

    def _insert_control_code(self, codes, input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids):
        """The inputs with each row's control code inserted after ``[CLS]``.

        The code has attention 1, token type 0 and the position after ``[CLS]``'s. The following tokens shift by one.
        """
        batch_size, length = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
        if input_ids is not None:
            self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
            all_codes = torch.tensor(list(self.config.control_code_token_ids.values()), device=input_ids.device)
            if length > CONTROL_CODE_POSITION and torch.isin(input_ids[:, CONTROL_CODE_POSITION], all_codes).any():
                raise ValueError(
                    "input_ids already hold a control code after [CLS]; pass the plain text's tokens and choose the "
                    "code with task_format (the model inserts it)"
                )
            input_ids = _insert_after_first(input_ids, codes[:, None])
        else:
            inputs_embeds = _insert_after_first(inputs_embeds, self.embeddings.word_embeddings(codes)[:, None])
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, length, dtype=torch.long, device=codes.device)
        # Columns made from the tensors themselves, not from their sizes, so that an export keeps any batch size.
        attention_mask = _insert_after_first(attention_mask, torch.ones_like(attention_mask[:, :1]))
        if token_type_ids is not None:
            token_type_ids = _insert_after_first(token_type_ids, torch.zeros_like(token_type_ids[:, :1]))
        if position_ids is not None:
            head, tail = position_ids[:, :CONTROL_CODE_POSITION], position_ids[:, CONTROL_CODE_POSITION:]
            position_ids = torch.cat([head, head[:, -1:] + 1, tail + 1], dim=1)
        return input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids

    def _fit_to_positions(self, input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids):
        """Inputs that the inserted code made too long, cut back as SciRepEval's tokenizer would.

        Inputs that the inserted code made longer than the model's positions, cut back as SciRepEval's truncating
        tokenizer would have: each overflowing row loses its last text token before its final one (``[SEP]``), with a
        warning.
        """
        limit = self.config.max_position_embeddings
        if attention_mask.shape[1] <= limit:
            return input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids
        logger.warning_once(
            f"with the control code the input has {attention_mask.shape[1]} tokens, more than the model's "
            f"{limit} positions: dropping the last text tokens before each row's final token ([SEP]); "
            f"tokenize to at most {limit - 1} tokens to avoid this"
        )
        batch_size = attention_mask.shape[0]
        lengths = attention_mask.sum(dim=1).long()
        keep = torch.arange(limit, device=attention_mask.device).expand(batch_size, limit).clone()
        overflow = lengths > limit
        keep[overflow, -1] = lengths[overflow] - 1
        attention_mask = attention_mask.gather(1, keep)
        if input_ids is not None:
            input_ids = input_ids.gather(1, keep)
        else:
            inputs_embeds = inputs_embeds.gather(1, keep[..., None].expand(-1, -1, inputs_embeds.shape[-1]))
        if token_type_ids is not None:
            token_type_ids = token_type_ids.gather(1, keep)
        if position_ids is not None:
            position_ids = position_ids[:, :limit]
        return input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        task_format: str | Sequence[str] | None = None,
    ) -> ControlCodeModelOutput | tuple[torch.Tensor, ...]:
        """Encode a batch with the control code of ``task_format`` inserted after ``[CLS]``.

        The inputs are a plain BERT tokenizer's output (``[CLS]`` first, right padding, 2-D mask). The
        model inserts the code at position 1, with attention 1 and token type 0, which gives exactly the
        sequence SciRepEval feeds its encoder: it prepends the code to the text (``f"{code} {text}"``,
        ``evaluation/encoders.py`` and ``training/mtl_datasets.py``), so the tokenizer yields
        ``[CLS] code text [SEP]``. Input that already holds a control code at position 1 is refused
        rather than given a second code. When the extra token makes a sequence longer than
        ``max_position_embeddings``, the last text token before each overflowing row's final token
        (its ``[SEP]``) is dropped, with a warning, as SciRepEval's truncating tokenizer would do.

        Args:
            input_ids, attention_mask, token_type_ids, inputs_embeds: as for ``BertModel``, without the
                control code (``inputs_embeds`` get the code's word embedding inserted).
            position_ids: positions of the given tokens. The code takes the position after ``[CLS]``'s
                and the following tokens shift by one. Usually left unset.
            output_hidden_states: also return every layer's hidden states.
            return_dict: return a :class:`ControlCodeModelOutput` (default) or a tuple.
            task_format: ``"classification"``, ``"regression"``, ``"proximity"`` or ``"adhoc_query"``
                (the keys of ``config.control_codes``) for the whole batch, or a list with one format
                per row for task-heterogeneous batches. ``config.default_task_format`` when ``None``.
        """
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        codes = self._control_code_ids(task_format, input_ids if input_ids is not None else inputs_embeds)
        inputs = self._insert_control_code(
            codes, input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids
        )
        input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids = self._fit_to_positions(*inputs)

        embedding_output = self.embeddings(
            input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids, inputs_embeds=inputs_embeds
        )
        extended_mask = additive_attention_mask(attention_mask, embedding_output.dtype)
        # BertEncoder's layers, run here: its own forward differs between transformers 4.57 and 5.x (5.x
        # collects hidden states with hooks on BertModel and returns no tuple from a layer).
        hidden_states = embedding_output
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        for layer in self.encoder.layer:
            hidden_states = layer_output(layer(hidden_states, extended_mask))
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
        if getattr(self.config, "text_pooling", None) == "mean":
            text = attention_mask.clone()
            text[:, CONTROL_CODE_POSITION] = 0
            weights = text.unsqueeze(-1).to(hidden_states.dtype)
            pooled = (hidden_states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        else:
            pooled = hidden_states[:, CONTROL_CODE_POSITION]
        output = ControlCodeModelOutput(
            last_hidden_state=hidden_states,
            pooler_output=pooled,
            hidden_states=all_hidden_states,
            attention_mask=attention_mask,
        )
        return output if return_dict else output.to_tuple()


class ControlCodeForSequenceClassification(ControlCodePreTrainedModel):
    """The control-code encoder with SPECTROID's MLP classification head (Capuano et al.).

    The head reads the embedding at the control code of the requested task format.
    Pass ``task_format="classification"`` (SciRepEval's ``[CLF]``, ``"regression"`` for ``[RGN]``) to the forward
    pass, or build the model with ``default_task_format="classification"``. Build it from BERT with
    :meth:`from_bert`, or from a saved control-code encoder with
    ``ControlCodeForSequenceClassification.from_pretrained(folder, num_labels=n, classifier_hidden_sizes=[64])``:
    the encoder's weights load under the ``control_code.`` prefix and the head is new. ``AutoModel`` on a saved
    classifier folder loads the encoder alone.
    """

    def __init__(self, config: ControlCodeConfig):
        super().__init__(config)
        self.control_code = ControlCodeModel(config)
        self.classifier = ControlCodeClassificationHead(config)
        # register_for_auto_class writes only this class's auto_map entry; the encoder's lets
        # AutoModel.from_pretrained(folder, trust_remote_code=True) load the encoder of a saved classifier.
        encoder = f"{__name__.rsplit('.', 1)[-1]}.ControlCodeModel"
        config.auto_map = {"AutoModel": encoder, **(getattr(config, "auto_map", None) or {})}
        self.post_init()

    @classmethod
    def from_bert(
        cls,
        path_or_model: str | os.PathLike[str] | BertModel,
        head: str | Sequence[int] = "CH2",
        num_labels: int | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        **options: object,
    ) -> ControlCodeForSequenceClassification:
        """:meth:`ControlCodeModel.from_bert` (which adds the control codes to ``tokenizer``) plus a new head.

        Args:
            path_or_model, tokenizer: as for :meth:`ControlCodeModel.from_bert`.
            head: ``"CH1"``, ``"CH2"`` (default) or ``"CH3"`` (``SPECTROID_HEADS``), or a list of hidden sizes.
            num_labels: the number of labels. Defaults to the length of ``id2label`` when that is among the
                options, else 2. The checkpoint's own label maps are not carried over.
            **options: :class:`ControlCodeConfig` fields (``default_task_format``, ``problem_type``, ...).
        """
        if "classifier_hidden_sizes" in options:
            raise TypeError("give the head as head= (a name or a list of hidden sizes), not classifier_hidden_sizes")
        labels = {"num_labels": num_labels, "id2label": None, "label2id": None}
        encoder = ControlCodeModel.from_bert(
            path_or_model,
            tokenizer=tokenizer,
            classifier_hidden_sizes=head_hidden_sizes(head),
            **{**labels, **options},
        )
        model = cls(encoder.config).to(device=encoder.device, dtype=encoder.dtype)
        model.control_code = encoder  # the converted BERT replaces the randomly initialised encoder
        return model.train(encoder.training)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        task_format: str | Sequence[str] | None = None,
    ) -> SequenceClassifierOutput | tuple[torch.Tensor, ...]:
        """Classifies the batch, with the loss when ``labels`` are given.

        Takes :meth:`ControlCodeModel.forward`'s inputs (``task_format`` included).

        Args:
            labels: as for ``BertForSequenceClassification``: class indices for single-label classification,
                multi-hot floats for multi-label, targets for regression.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        outputs = self.control_code(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            task_format=task_format,
        )
        logits = self.classifier(outputs.pooler_output)
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if return_dict else output.to_tuple()


ControlCodeConfig.register_for_auto_class()
ControlCodeModel.register_for_auto_class("AutoModel")
ControlCodeForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
