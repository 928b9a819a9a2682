"""What a model folder or Hub snapshot holds.

That is its window, its sentence-transformers modules and the folder of its transformer, and the embedding it
declares.

These read files only: nothing of the checkpoint is imported or run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoints import module_folders
from .families import foreign_code
from .formats.embedding import POOLINGS

#: A folder holding this file describes an ensemble of encoders (:mod:`sciembed.encoders.ensemble`).
ENSEMBLE_FILE = "sciembed_ensemble.json"


#: The fewest tokens a window read from a model folder may hold (``tokenizer_config.json``'s ``model_max_length``,
#: ``sentence_bert_config.json``'s or a format route's ``max_seq_length``): fewer leaves a paper no more than the
#: first words of its title, so such a value is refused as a damaged setting. An explicit ``max_length`` may be
#: smaller; it needs room for one token of text beside the special tokens.
MIN_FOLDER_WINDOW = 8


#: A window above this many tokens read from a model folder means "no limit" (transformers writes ``1e30``).
UNSET_WINDOW = 1_000_000


def folder_window(value: Any, source: str) -> int | None:
    """A window (tokens per text) as a model folder sets it, checked. ``None`` where it sets no limit.

    Args:
        value: the value read. ``None`` or above :data:`UNSET_WINDOW` (transformers' ``1e30``) means no limit.
        source: the file and key it was read from, for the error.

    Raises:
        ValueError: a value that is not a whole number, or is below :data:`MIN_FOLDER_WINDOW`. The message names
            ``source`` and ``--max-length``, which sets the window instead.
    """
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and value > UNSET_WINDOW:
        return None
    if number and float(value).is_integer() and value >= MIN_FOLDER_WINDOW:
        return int(value)
    problem = (
        f"below {MIN_FOLDER_WINDOW} tokens, too few for a paper's text"
        if number and float(value).is_integer()
        else "not a whole number of tokens"
    )
    raise ValueError(
        f"{source} is {value!r}: {problem}; correct it there, or, where the command takes one, give the window with "
        "--max-length (max_length=)"
    )


@dataclass(frozen=True)
class BaseEmbedding:
    """How a checkpoint's authors embed with it, as :func:`base_embedding` reads it.

    Attributes:
        pooling: ``"cls"`` or ``"mean"`` (``None``: the checkpoint prescribes none, a plain transformers model).
        normalize: whether its vectors are L2-normalised.
        max_length: the sentence-transformers ``max_seq_length`` (``None`` when not set).
        source: where this was read from, for logs and ``train_results.json``.
    """

    pooling: str | None
    normalize: bool
    max_length: int | None
    source: str


#: What the training does about modules :func:`base_embedding` cannot reproduce.
TRAINING_REMEDY = "set embedding.pooling and embedding.normalize to train another embedding"


def base_embedding(name_or_path: str | os.PathLike[str], remedy: str = TRAINING_REMEDY) -> BaseEmbedding:
    """The embedding a checkpoint is used with: its pooling and normalisation.

    The embedding a checkpoint is used with: its sentence-transformers modules (``modules.json``: a Transformer, then
    Pooling with ``cls`` or ``mean``, then optionally Normalize, or format routes, a Router then
    :class:`~sciembed.formats.format_routes.MultiFormatTransformer`) when it has them, else nothing prescribed
    (``pooling=None``). Training starts from this, so that a model is trained in the embedding its base is used with
    (:func:`pool` reproduces those modules exactly).

    Args:
        name_or_path: the checkpoint's folder or Hub id.
        remedy: what the caller's user can do about modules :func:`pool` cannot reproduce (ends the message).

    Raises:
        ValueError: the modules hold something :func:`pool` cannot reproduce (a Dense layer, max
            pooling, ...). The message names the file and the module.
    """
    name = str(name_or_path)
    if not has_sentence_transformers_modules(name):
        return BaseEmbedding(None, False, None, "no sentence-transformers modules")
    module_folders(name)  # every module path stays inside the checkpoint
    modules_file = _st_file(name, "modules.json")
    kinds = [
        (entry.get("type", "").rsplit(".", 1)[-1], entry)
        for entry in json.loads(Path(modules_file).read_text(encoding="utf-8"))
    ]
    names = [kind for kind, _ in kinds]
    pooling, modes, window = None, [], None
    if names[:2] == ["Transformer", "Pooling"]:
        config = json.loads(Path(_st_file(name, f"{kinds[1][1]['path']}/config.json")).read_text(encoding="utf-8"))
        # sentence-transformers 5 writes "pooling_mode" (a name or a list); earlier releases one flag per mode.
        modes = config.get("pooling_mode") or [
            mode.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
            for mode, on in config.items()
            if mode.startswith("pooling_mode_") and on
        ]
        modes = [modes] if isinstance(modes, str) else list(modes)
        pooling = modes[0] if modes in (["cls"], ["mean"]) else None
        rest = names[2:]
    elif names[:2] == ["Router", "MultiFormatTransformer"]:
        # Format routes (sciembed.formats.format_routes): the model pools as its config says, "family" meaning its own.
        where = kinds[1][1]["path"]
        pooling = _st_json(name, "/".join(filter(None, [where, "multi_format_config.json"])))["pooling"]
        pooling = pooling if pooling in POOLINGS else None
        rest = names[2:]
        # Every route tokenizes to the window sciembed encodes the model with.
        router = kinds[0][1]["path"]
        route = next(iter(_st_json(name, "/".join(filter(None, [router, "router_config.json"])))["types"]))
        window_file = "/".join(filter(None, [router, route, "task_format_config.json"]))
        window = folder_window(_st_json(name, window_file)["max_seq_length"], f"{name}/{window_file}: max_seq_length")
    else:
        # A sciembed family's folder: its Transformer module returns the family's own embedding.
        rest = names[1:] if names[:1] == ["Transformer"] else names
    if (modes and pooling is None) or rest not in ([], ["Normalize"]):
        raise ValueError(
            f"{modules_file}: modules {' -> '.join(names)}{f' (pooling {modes})' if modes else ''} cannot be "
            "reproduced by sciembed.encode.pool, which reproduces Transformer -> Pooling (cls or mean) "
            f"[-> Normalize]; {remedy}"
        )
    normalize = rest == ["Normalize"]
    return BaseEmbedding(pooling, normalize, window or st_window(name), modules_file)


def st_window(name_or_path: str) -> int | None:
    """The window a sentence-transformers checkpoint sets, checked by :func:`folder_window` (``None``: no limit).
    sentence-transformers < 6 writes it as ``sentence_bert_config.json``'s ``max_seq_length``. 6 writes it as the
    tokenizer's ``model_max_length`` instead. Either sits at the top or in the first module's folder."""
    first = _first_module_path(name_or_path)
    for filename, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        # Older sentence-transformers releases write them in the transformer's folder (0_Transformer/).
        for file in dict.fromkeys([filename, "/".join(filter(None, [first, filename]))]):
            value = _st_json(name_or_path, file).get(key)
            if value is not None:
                return folder_window(value, f"{name_or_path}/{file}: {key}")
    return None


def _st_json(name_or_path: str, filename: str) -> dict[str, Any]:
    """A JSON file of a sentence-transformers checkpoint, ``{}`` when it has none."""
    try:
        return json.loads(Path(_st_file(name_or_path, filename)).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _st_file(name_or_path: str, filename: str) -> str:
    if Path(name_or_path).is_dir():
        path = Path(name_or_path) / filename
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing")
        return str(path)
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return hf_hub_download(name_or_path, filename)
    except EntryNotFoundError:
        raise FileNotFoundError(f"{name_or_path}: no {filename}") from None


def only_sciembed_code(name_or_path: str) -> bool:
    """Whether a local sentence-transformers folder runs no code but its own and sciembed's.

    Whether a local sentence-transformers folder runs no code but sentence-transformers' and sciembed's own: its module
    classes (``modules.json``, a Router's ``router_config.json``) are ``sentence_transformers.*`` or ``sciembed.*``
    ones, and every Python file in it is byte-for-byte one of sciembed's remote-code files.

    sentence-transformers 6 asks for ``trust_remote_code=True`` before it imports any class outside its own
    namespace, even from a local folder. sciembed passes it for such a folder, which is what sciembed saved.
    """
    folder = Path(name_or_path)
    if not folder.is_dir():
        return False
    classes = [module.get("type", "") for module in json.loads((folder / "modules.json").read_text(encoding="utf-8"))]
    router = folder / "router_config.json"
    if router.is_file():
        classes += list(json.loads(router.read_text(encoding="utf-8")).get("types", {}).values())
    own = all(str(name).startswith(("sentence_transformers.", "sciembed.")) for name in classes)
    return own and not any(foreign_code(sub) for sub in {path.parent for path in folder.rglob("*.py")})


def tokenizer_window(name_or_path: str, folder: str) -> None:
    """Refuse the window of ``folder``'s ``tokenizer_config.json`` when no paper fits in it (:func:`folder_window`)."""
    filename = "/".join(filter(None, [folder, "tokenizer_config.json"]))
    value = _st_json(name_or_path, filename).get("model_max_length")
    if value is not None:
        folder_window(value, f"{name_or_path}/{filename}: model_max_length")


def transformer_folder(name_or_path: str) -> str | None:
    """The folder of a sentence-transformers model's first module, when that is a transformers model.

    The folder is relative to the model's, as ``modules.json`` says, and holds ``config.json``. ``None`` otherwise.
    """
    first = json.loads(Path(_st_file(name_or_path, "modules.json")).read_text(encoding="utf-8"))[0]
    folder = first.get("path", "")
    try:
        _st_file(name_or_path, "/".join(filter(None, [folder, "config.json"])))
    except FileNotFoundError:
        return None
    return folder


def transformer_path(name_or_path: str | os.PathLike[str]) -> str:
    """Where transformers finds a checkpoint's transformer: the checkpoint, or its first module's folder.

    A sentence-transformers model's transformer sits in a module folder (``0_Transformer/``) when older
    sentence-transformers releases saved it. ``modules.json`` names that folder.

    Args:
        name_or_path: a local folder or a Hub id.

    Raises:
        ValueError: a sentence-transformers checkpoint whose first module is no transformers model (no
            ``config.json`` in its folder), naming ``modules.json`` and that folder.
    """
    name = str(name_or_path)
    if not has_sentence_transformers_modules(name) or _is_file(name, "config.json"):
        return name
    module_folders(name)  # every module path stays inside the checkpoint
    folder = transformer_folder(name)
    if folder is None:
        first = _first_module_path(name)
        raise ValueError(
            f"{name}/modules.json: its first module ({first or 'the folder itself'}) holds no config.json, so it is "
            "no transformers model to start from; give the folder of the transformer itself"
        )
    if Path(name).is_dir():
        return str(Path(name) / folder)
    from huggingface_hub import snapshot_download

    return str(Path(snapshot_download(name, allow_patterns=[f"{folder}/*"])) / folder)


def _first_module_path(name_or_path: str) -> str:
    """The folder ``modules.json`` gives its first module (``""``: the checkpoint itself, or no module)."""
    modules = json.loads(Path(_st_file(name_or_path, "modules.json")).read_text(encoding="utf-8"))
    first = modules[0] if isinstance(modules, list) and modules and isinstance(modules[0], dict) else {}
    path = first.get("path") or ""
    return path if isinstance(path, str) else ""


def _is_file(name_or_path: str, filename: str) -> bool:
    """Whether a local folder or Hub repository holds ``filename``."""
    try:
        _st_file(name_or_path, filename)
    except FileNotFoundError:
        return False
    return True


def format_routes_at_root(name_or_path: str) -> bool:
    """Whether a sentence-transformers model has format routes around the model at its root.

    That is the layout :func:`sciembed.encoders.router.add_format_routes` writes: ``config.json`` beside
    ``router_config.json``.
    """
    try:
        _st_file(name_or_path, "router_config.json")
        _st_file(name_or_path, "config.json")
    except FileNotFoundError:
        return False
    return True


def has_sentence_transformers_modules(name_or_path: str) -> bool:
    if Path(name_or_path).is_dir():
        return (Path(name_or_path) / "modules.json").is_file()
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        hf_hub_download(name_or_path, "modules.json")
    except EntryNotFoundError:
        # Also raised offline or with the Hub unreachable; transformers then reports that itself.
        return False
    return True
