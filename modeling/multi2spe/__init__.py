"""Multi²SPE (Seoh, Chang & McCallum, 2023): BERT with K CLS tokens.

The summed outputs of the CLS tokens embed a paper.
"""

from .configuration_multi2spe import Multi2SPEConfig
from .modeling_multi2spe import (
    Multi2SPEForSequenceClassification,
    Multi2SPEModel,
    Multi2SPEModelOutput,
    Multi2SPEPreTrainedModel,
)

__all__ = [
    "Multi2SPEConfig",
    "Multi2SPEForSequenceClassification",
    "Multi2SPEModel",
    "Multi2SPEModelOutput",
    "Multi2SPEPreTrainedModel",
]
