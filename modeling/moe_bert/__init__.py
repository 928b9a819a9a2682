"""MoE BERT (Hallee et al.): a pretrained BERT whose MLPs become experts.

The experts have enforced, sentence or token routing.
"""

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
