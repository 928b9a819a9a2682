"""Which files of a model folder belong on the Hub.

The files are an allow-list, so that nothing else is ever published.

A model folder is also where people keep what must not leave the machine: a ``.env``, notes, optimizer
states, a link to a key in their home folder. :func:`hub_files` lists what a Hub model folder needs and
nothing more:

- at the top: weights (safetensors, or ``pytorch_model.bin`` that export converts), the configs of
  transformers and sentence-transformers, calibrated int8 ranges (:data:`sciembed.quantization.RANGES_FILE`), the
  tokenizer's files and the remote-code ``.py`` files (which
  :func:`sciembed.families.foreign_code` checks separately).
- the folders of sentence-transformers modules named in ``modules.json`` (and a Router's route folders): their
  configs, weights and tokenizer files.
- format adapters and AdapterFusion layers (folders holding the adapters library's configs) and PALs
  (``pals/``): their configs and weights.
- ``onnx/``: ONNX graphs and their external data.

Everything else is left out and named, with the reason. A symbolic link is followed only when it stays
inside the folder, or, in a Hub cache snapshot (``models--*/snapshots/REV``), when it points into that
repository's own ``blobs/``, which is how the Hub cache stores every file.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from ..checkpoints import module_folders
from ..formats.names import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_SAFE_WEIGHTS_FILE,
    ADAPTER_WEIGHTS_FILE,
    FUSION_CONFIG_FILE,
    FUSION_SAFE_WEIGHTS_FILE,
    FUSION_WEIGHTS_FILE,
    MULTI_FORMAT_CONFIG_FILE,
    PALS_CONFIG_FILE,
    PALS_FOLDER,
    PALS_WEIGHTS_FILE,
    ROUTER_CONFIG_FILE,
)
from ..quantization import RANGES_FILE

CARD_FILE = "README.md"
ONNX_FOLDER = "onnx"

_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "chat_template.jinja",
)
_WEIGHT_PATTERNS = (
    "model.safetensors",
    "model-*-of-*.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
)
_TOP_LEVEL = (
    "config.json",
    "generation_config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    ROUTER_CONFIG_FILE,
    MULTI_FORMAT_CONFIG_FILE,
    RANGES_FILE,
    CARD_FILE,
    "*.py",
    *_TOKENIZER_FILES,
    *_WEIGHT_PATTERNS,
)
# A sentence-transformers module's folder: its module config (named by the module class), weights, tokenizer.
_MODULE_FILES = ("*.json", "*.safetensors", "pytorch_model.bin", *_TOKENIZER_FILES)
_ADAPTER_FILES = (
    ADAPTER_CONFIG_FILE,
    ADAPTER_WEIGHTS_FILE,
    ADAPTER_SAFE_WEIGHTS_FILE,
    FUSION_CONFIG_FILE,
    FUSION_WEIGHTS_FILE,
    FUSION_SAFE_WEIGHTS_FILE,
    "head_config.json",
    "pytorch_model_head.bin",
    "model_head.safetensors",
)
_ONNX_FILES = ("*.onnx", "*.onnx_data", "*.onnx.data")


def hub_files(folder: str | os.PathLike[str]) -> tuple[list[str], dict[str, str]]:
    """The files of ``folder`` a Hub model folder holds, and those left out with why.

    The files are relative paths, sorted.

    Links are never followed out of ``folder`` (see the module docstring). A folder reached through a link is
    left out.
    """
    root = Path(folder)
    real_root = root.resolve()
    modules = _module_folders(root)
    kept: list[str] = []
    left_out: dict[str, str] = {}
    for directory, subfolders, names in os.walk(root):
        here = Path(directory)
        for name in sorted(subfolders):
            if (here / name).is_symlink():
                left_out[str((here / name).relative_to(root)) + "/"] = "a linked folder"
        for name in sorted(names):
            path = here / name
            relative = str(path.relative_to(root))
            if path.is_symlink() and not _link_stays_home(path, real_root):
                left_out[relative] = f"a link to {os.path.realpath(path)}, outside the model folder"
                continue
            allowed = _allowed(Path(relative), modules)
            if allowed is True:
                kept.append(relative)
            else:
                left_out[relative] = allowed
    return sorted(kept), left_out


def _allowed(relative: Path, modules: set[str]) -> bool | str:
    """True when the file at ``relative`` belongs on the Hub, else why not."""
    parts = relative.parts
    name = relative.name
    if any(part.startswith(".") for part in parts):
        return "a hidden file"
    if len(parts) == 1:
        return True if _matches(name, _TOP_LEVEL) else "not a weights, config, tokenizer or code file"
    top = parts[0]
    if top == ONNX_FOLDER:
        return True if _matches(name, _ONNX_FILES) else "not an ONNX graph"
    if top == PALS_FOLDER and len(parts) == 2:
        return True if name in (PALS_CONFIG_FILE, PALS_WEIGHTS_FILE) else "not a PALs config or weights file"
    if any(str(Path(*parts[:depth])) in modules for depth in range(1, len(parts))):
        return (
            True
            if _matches(name, _MODULE_FILES)
            else "not a sentence-transformers module's config, weights or tokenizer file"
        )
    if len(parts) == 2 and name in _ADAPTER_FILES:
        return True
    return "in a folder that is no sentence-transformers module, format adapter, PALs or ONNX folder"


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _module_folders(root: Path) -> set[str]:
    """The module folders ``modules.json`` names, and the route folders of a Router among them.

    A Router's route folders are its ``router_config.json``'s ``types``. The top-level module's path, "", is left
    out. A path out of ``root`` is refused (:func:`sciembed.checkpoints.module_folders`).
    """
    return {folder for folder in module_folders(root) if folder}


def _link_stays_home(path: Path, real_root: Path) -> bool:
    target = Path(os.path.realpath(path))
    if target.is_relative_to(real_root):
        return True
    # The Hub cache: models--ORG--NAME/snapshots/REV/file -> models--ORG--NAME/blobs/HASH.
    snapshots = real_root.parent
    return snapshots.name == "snapshots" and target.parent == snapshots.parent / "blobs"
