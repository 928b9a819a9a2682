"""SciRepEval's multi-task control-code encoder (Singh et al., 2023): config, model and output classes."""

from .configuration_control_code import ControlCodeConfig
from .modeling_control_code import (
    ControlCodeForSequenceClassification,
    ControlCodeModel,
    ControlCodeModelOutput,
    ControlCodePreTrainedModel,
)

__all__ = [
    "ControlCodeConfig",
    "ControlCodeForSequenceClassification",
    "ControlCodeModel",
    "ControlCodeModelOutput",
    "ControlCodePreTrainedModel",
]
