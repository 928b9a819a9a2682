"""SPECTROID: a SPECTER-style encoder fine-tuned through an MLP classification head.

SPECTROID (Capuano et al., "SPECTROID: A Centroid-Based Citation-Aware Approach to Paper Classification"): a
SPECTER-style BERT encoder fine-tuned end-to-end, with cross-entropy, through an MLP classification head on its paper
embedding.

- :class:`SpectroidModel` is the encoder: a ``BertModel`` whose ``pooler_output`` is SPECTER's embedding, the
  final hidden state of ``[CLS]``.
- :class:`SpectroidForSequenceClassification` is that encoder (as ``bert``, the base-model prefix) plus the
  head, saved and loaded as one model. ``AutoModel.from_pretrained`` of a saved classifier folder loads the
  encoder alone, as it loads the ``BertModel`` of a ``BertForSequenceClassification`` checkpoint.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Optional, Union

import torch
from torch import nn
from torch.nn import functional as F
from transformers import BertModel, PretrainedConfig
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertEmbeddings, BertPreTrainedModel

from .configuration_spectroid import SpectroidConfig

#: SPECTROID's classification heads by name -> the hidden-layer sizes of the MLP (each Linear + ReLU, then the
#: output Linear). CH1 is linear and CH2 has one hidden layer of 64 units. CH3 is the head the authors trained
#: and evaluated: ``"CH3": {"n_layers": 5, "n_units": 64}`` in ``MLP_Classification/commons/experiment.py``,
#: which their ``SpecterClassifier`` builds as Linear(768, 64) followed by five Linear(64, 64), i.e. six
#: hidden layers of 64 (the architecture their notebook prints for the CH3 runs), although the notebook's prose
#: speaks of "5 linear layers". Those CH3 runs did not learn, so the head
#: here is initialised for depth (SpectroidClassificationHead.init_weights). Any other head is a list of sizes.
SPECTROID_HEADS: dict[str, tuple[int, ...]] = {"CH1": (), "CH2": (64,), "CH3": (64,) * 6}

# Entries of a BERT config that describe the source checkpoint (or a head of its own), not this model.
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


def head_hidden_sizes(head: Union[str, Sequence[int]]) -> list[int]:
    """The hidden-layer sizes of ``head``: a name in ``SPECTROID_HEADS`` or the sizes themselves."""
    if not isinstance(head, str):
        return list(head)
    if head not in SPECTROID_HEADS:
        valid = ", ".join(SPECTROID_HEADS)
        raise ValueError(f"unknown classification head {head!r}; valid names: {valid} (or a list of hidden sizes)")
    return list(SPECTROID_HEADS[head])


class SpectroidClassificationHead(nn.Module):
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


class SpectroidPooler(nn.Module):
    """SPECTER's paper embedding: the final hidden state of ``[CLS]`` as it is.

    BERT's pooler would add a dense layer and tanh.
    """

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states[:, 0]


class SpectroidModel(BertModel):
    """The SPECTROID encoder: a ``BertModel`` whose ``pooler_output`` is the paper embedding.

    The SPECTROID encoder: ``BertModel`` (same parameters, no pooler weights) whose ``pooler_output`` is the final
    ``[CLS]`` hidden state, the embedding SPECTER and SciNCL use, or with ``config.text_pooling="mean"`` the mean of
    the real tokens' final states.
    """

    config_class = SpectroidConfig

    def __init__(self, config: SpectroidConfig) -> None:
        super().__init__(config, add_pooling_layer=False)
        self.pooler = SpectroidPooler()

    def forward(
        self, input_ids: Optional[torch.Tensor] = None, attention_mask: Optional[torch.Tensor] = None, **kwargs
    ):
        """``BertModel.forward``. With ``text_pooling="mean"`` the ``pooler_output`` is the masked mean."""
        outputs = super().forward(input_ids, attention_mask=attention_mask, **kwargs)
        if getattr(self.config, "text_pooling", None) != "mean":
            return outputs
        hidden = outputs[0]
        mask = (attention_mask if attention_mask is not None else hidden.new_ones(hidden.shape[:2])).to(hidden.dtype)
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        if isinstance(outputs, tuple):
            return (hidden, pooled, *outputs[2:])
        outputs.pooler_output = pooled
        return outputs


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


class SpectroidPreTrainedModel(BertPreTrainedModel):
    """BERT's weight initialisation and loading conventions (base-model prefix ``bert``) for SPECTROID."""

    config_class = SpectroidConfig

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation. The head's hidden layers He's (:func:`init_bert_module`)."""
        init_bert_module(module, self.config.initializer_range)


class SpectroidForSequenceClassification(SpectroidPreTrainedModel):
    """A BERT encoder with SPECTROID's MLP head on the ``[CLS]`` embedding, trained end-to-end.

    Build it from any BERT checkpoint with :meth:`from_bert`. With ``labels`` the output carries the loss of
    ``BertForSequenceClassification`` (cross-entropy for single-label classification, SPECTROID's loss).

    The head reads the paper embedding SPECTER produces and evaluates, the final ``[CLS]`` hidden state (or the
    text's mean, ``config.text_pooling="mean"``, for a mean-pooling base). (The authors' ``SpecterClassifier`` reads
    ``BertModel``'s second output, the dense + tanh pooler on top of ``[CLS]``, which is no part of SPECTER's
    embedding.)
    """

    def __init__(self, config: SpectroidConfig) -> None:
        super().__init__(config)
        self.bert = SpectroidModel(config)
        self.classifier = SpectroidClassificationHead(config)
        # register_for_auto_class writes only this class's auto_map entry; the encoder's lets
        # AutoModel.from_pretrained(folder, trust_remote_code=True) load the encoder of a saved classifier.
        encoder = f"{__name__.rsplit('.', 1)[-1]}.SpectroidModel"
        config.auto_map = {"AutoModel": encoder, **(getattr(config, "auto_map", None) or {})}
        self.post_init()

    @classmethod
    def from_bert(
        cls,
        path_or_model: Union[str, os.PathLike, BertModel],
        head: Union[str, Sequence[int]] = "CH2",
        num_labels: Optional[int] = None,
        **options,
    ) -> SpectroidForSequenceClassification:
        """Put a new classification head on a BERT checkpoint. Every pretrained encoder weight is copied.

        Args:
            path_or_model: a folder or Hub id loadable by ``BertModel.from_pretrained`` (SPECTER, SciNCL,
                SciBERT, a sentence-transformers folder), or a ``BertModel``.
            head: ``"CH1"``, ``"CH2"`` (default) or ``"CH3"`` (see ``SPECTROID_HEADS``), or a list of hidden sizes.
            num_labels: the number of labels. Defaults to the length of ``id2label`` when that is among the
                options, else 2. The checkpoint's own label maps are not carried over.
            **options: :class:`SpectroidConfig` / ``BertConfig`` fields (``problem_type``, ``classifier_dropout``,
                ``id2label``, ...).

        Returns the model in the training mode of the BERT model (evaluation mode when loaded from a path).
        """
        if "classifier_hidden_sizes" in options:
            raise TypeError("give the head as head= (a name or a list of hidden sizes), not classifier_hidden_sizes")
        bert = path_or_model if isinstance(path_or_model, BertModel) else BertModel.from_pretrained(path_or_model)
        head_settings = {
            "classifier_hidden_sizes": head_hidden_sizes(head),
            **({} if num_labels is None else {"num_labels": num_labels}),
        }
        config = config_from_bert(SpectroidConfig, bert.config, **{**head_settings, **options})
        model = cls(config).to(device=bert.device, dtype=bert.dtype)
        model.bert.load_state_dict({k: v for k, v in bert.state_dict().items() if not k.startswith("pooler.")})
        return model.train(bert.training)

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.Tensor] = None,
        head_mask: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        labels: Optional[torch.Tensor] = None,
        output_attentions: Optional[bool] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ) -> Union[SequenceClassifierOutput, tuple[torch.Tensor, ...]]:
        """Classifies the batch, with the loss when ``labels`` are given.

        Takes BERT's inputs.

        Args:
            labels: class indices ``(batch,)`` for single-label classification, multi-hot floats
                ``(batch, num_labels)`` for multi-label, targets for regression (see ``config.problem_type``).
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        outputs = self.bert(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            head_mask=head_mask,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        logits = self.classifier(outputs.pooler_output)
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )
        return output if return_dict else output.to_tuple()


SpectroidConfig.register_for_auto_class()
SpectroidModel.register_for_auto_class("AutoModel")
SpectroidForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
