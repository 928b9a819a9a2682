"""MoE BERT (Hallee et al.): a pretrained BERT whose MLPs become experts with enforced, sentence or token routing."""

from .configuration_moe_bert import MoEBertConfig
from .modeling_moe_bert import (
    MoEBertForSequenceClassification,
    MoEBertModel,
    MoEBertModelOutput,
    MoEBertPreTrainedModel,
)

__all__ = [
    "MoEBertConfig",
    "MoEBertForSequenceClassification",
    "MoEBertModel",
    "MoEBertModelOutput",
    "MoEBertPreTrainedModel",
]
