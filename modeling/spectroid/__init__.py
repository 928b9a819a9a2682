"""SPECTROID (Capuano et al.): a BERT encoder fine-tuned end-to-end with an MLP classification head.

The heads are the paper's CH1, CH2 and CH3.
"""

from .configuration_spectroid import SpectroidConfig
from .modeling_spectroid import (
    SPECTROID_HEADS,
    SpectroidForSequenceClassification,
    SpectroidModel,
    SpectroidPreTrainedModel,
)

__all__ = [
    "SPECTROID_HEADS",
    "SpectroidConfig",
    "SpectroidForSequenceClassification",
    "SpectroidModel",
    "SpectroidPreTrainedModel",
]
