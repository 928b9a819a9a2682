"""Remote-code model families, one folder each (shipped next to the weights; installed as sciembed.modeling).

Files inside a family folder import only torch, transformers and their sibling file, so a saved model
loads with ``AutoModel.from_pretrained(path, trust_remote_code=True)`` where sciembed is not installed.
Importing this package registers the families with ``AutoConfig`` / ``AutoModel``, so that where sciembed
is installed they load without trusting remote code. (``import sciembed`` alone does not import torch or
transformers, which keeps the CLI quick to start; sciembed's loaders import this package first.)
"""

from transformers import AutoConfig, AutoModel

from .control_code import ControlCodeConfig, ControlCodeModel
from .moe_bert import MoEBertConfig, MoEBertModel
from .multi2spe import Multi2SPEConfig, Multi2SPEModel

for _config, _model in ((Multi2SPEConfig, Multi2SPEModel), (ControlCodeConfig, ControlCodeModel), (MoEBertConfig, MoEBertModel)):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModel.register(_config, _model, exist_ok=True)

__all__ = ["ControlCodeConfig", "ControlCodeModel", "MoEBertConfig", "MoEBertModel", "Multi2SPEConfig", "Multi2SPEModel"]
