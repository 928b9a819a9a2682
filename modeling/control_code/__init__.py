"""SciRepEval's multi-task control-code encoder (Singh et al., 2023): config, model and output classes."""

from .configuration_control_code import ControlCodeConfig
from .modeling_control_code import ControlCodeModel, ControlCodeModelOutput, ControlCodePreTrainedModel

__all__ = ["ControlCodeConfig", "ControlCodeModel", "ControlCodeModelOutput", "ControlCodePreTrainedModel"]
