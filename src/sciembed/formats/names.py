"""The task formats of SciRepEval (Singh et al. 2023): one embedding per format; and the file names the format
modules are saved under, here so that code which only lists files (``sciembed.hub.files``) imports no torch."""

FORMATS = ("classification", "regression", "proximity", "adhoc_query")
#: The format a multi-format model embeds in when none is asked for.
DEFAULT_FORMAT = "proximity"

# Format adapters and AdapterFusion, in the adapters library's layout (sciembed.formats.adapters).
ADAPTER_CONFIG_FILE = "adapter_config.json"
ADAPTER_WEIGHTS_FILE = "pytorch_adapter.bin"
ADAPTER_SAFE_WEIGHTS_FILE = "adapter.safetensors"
FUSION_CONFIG_FILE = "adapter_fusion_config.json"
FUSION_WEIGHTS_FILE = "pytorch_model_adapter_fusion.bin"
FUSION_SAFE_WEIGHTS_FILE = "model_adapter_fusion.safetensors"
FUSION_PREFIX = "fusion_"
# PALs (sciembed.formats.pals).
PALS_FOLDER = "pals"
PALS_CONFIG_FILE = "pals_config.json"
PALS_WEIGHTS_FILE = "pals.safetensors"
