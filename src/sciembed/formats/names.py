"""The task formats of SciRepEval (Singh et al. 2023): one embedding per format. And the file names the format
modules are saved under, here so that code which only lists files (``sciembed.hub.files``) imports no torch."""

FORMATS = ("classification", "regression", "proximity", "adhoc_query")
#: The format a multi-format model embeds in when none is asked for.
DEFAULT_FORMAT = "proximity"
#: The formats ad-hoc search embeds queries and candidates in (SciRepEval).
QUERY_FORMAT, DOCUMENT_FORMAT = "adhoc_query", "proximity"
#: The sentence-transformers routes ``encode_query`` and ``encode_document`` take (sciembed.formats.format_routes);
#: every other format's route is named after it.
FORMAT_ROUTES = {QUERY_FORMAT: "query", DOCUMENT_FORMAT: "document"}


def route_of(task_format: str) -> str:
    """The sentence-transformers Router route (``encode``'s ``task``) that embeds in ``task_format``."""
    return FORMAT_ROUTES.get(task_format, task_format)


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
# The format routes' configs (sciembed.formats.format_routes), and the Router's own (sentence-transformers' name).
MULTI_FORMAT_CONFIG_FILE = "multi_format_config.json"
TASK_FORMAT_CONFIG_FILE = "task_format_config.json"
ROUTER_CONFIG_FILE = "router_config.json"
# The sentence-transformers modules of a multi-format model exported with its routes (sciembed.formats.format_routes)
# and all they import: shipped as remote code beside the weights (sciembed.encoders.router.add_format_routes).
ROUTE_CODE_FILES = ("format_routes.py", "embedding.py", "names.py", "adapters.py", "pals.py")
