"""Remote-code model families, one folder each (shipped next to the weights, installed as sciembed.modeling).

Files inside a family folder import only torch, transformers and their sibling file, so a saved model
loads with ``AutoModel.from_pretrained(path, trust_remote_code=True)`` where sciembed is not installed.
Importing this package registers the families with ``AutoConfig`` / ``AutoModel`` and their SPECTROID
classifiers with ``AutoModelForSequenceClassification``, so that where sciembed is installed they load
without trusting remote code. (``import sciembed`` alone does not import torch or transformers, which keeps
the CLI quick to start, sciembed's loaders import this package first.)
"""

from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

from .control_code import ControlCodeConfig, ControlCodeForSequenceClassification, ControlCodeModel
from .moe_bert import MoEBertConfig, MoEBertForSequenceClassification, MoEBertModel
from .multi2spe import Multi2SPEConfig, Multi2SPEForSequenceClassification, Multi2SPEModel
from .spectroid import SpectroidConfig, SpectroidForSequenceClassification, SpectroidModel

for _config, _model, _classifier in (
    (Multi2SPEConfig, Multi2SPEModel, Multi2SPEForSequenceClassification),
    (ControlCodeConfig, ControlCodeModel, ControlCodeForSequenceClassification),
    (MoEBertConfig, MoEBertModel, MoEBertForSequenceClassification),
    (SpectroidConfig, SpectroidModel, SpectroidForSequenceClassification),
):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModel.register(_config, _model, exist_ok=True)
    AutoModelForSequenceClassification.register(_config, _classifier, exist_ok=True)

__all__ = [
    "ControlCodeConfig",
    "ControlCodeForSequenceClassification",
    "ControlCodeModel",
    "MoEBertConfig",
    "MoEBertForSequenceClassification",
    "MoEBertModel",
    "Multi2SPEConfig",
    "Multi2SPEForSequenceClassification",
    "Multi2SPEModel",
    "SpectroidConfig",
    "SpectroidForSequenceClassification",
    "SpectroidModel",
]
