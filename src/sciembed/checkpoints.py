"""The code a model folder or Hub repository's configs name, and its module folders.

With ``trust_remote_code=True``, transformers runs the code an ``auto_map`` entry names. That is a module beside
the config (``module.Class``), or one in another repository or local folder (``OTHER--module.Class``).
sentence-transformers does the same for the module classes of ``modules.json`` and a Router's
``router_config.json``. sciembed runs its own families' and format routes' code without asking. So
:func:`check_remote_code` accepts an entry only when it names sciembed's own code: a file beside the config that is
byte for byte sciembed's (:func:`sciembed.families.foreign_code`), or a sentence-transformers or sciembed class.
Every other entry is refused unless the user trusts the model's code. :func:`module_folders` refuses a module path
that leaves the folder, whatever the user trusts.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .families import foreign_code
from .formats import route_code_paths
from .formats.names import ROUTER_CONFIG_FILE
from .io import RepeatedKeyError, json_error, json_place, loads_json

logger = logging.getLogger(__name__)

MODULES_FILE = "modules.json"
#: The configs a Hub repository is read for (a local folder: every ``*config*.json`` of it and of its modules).
_HUB_CONFIGS = (
    "config.json",
    "tokenizer_config.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "processor_config.json",
    "preprocessor_config.json",
)
#: The packages whose sentence-transformers module classes load without remote code.
_OWN_PACKAGES = ("sentence_transformers.", "sciembed.")
_MODULE_CLASS = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
_REMEDY = "Read that code, then pass --trust-remote-code (command line) or trust_remote_code=True (Python)"


@dataclass(frozen=True)
class CodeEntry:
    """An entry of a checkpoint's files that names code sciembed did not write.

    Attributes:
        file: the file holding the entry (a path, or ``repo_id/filename`` for a Hub repository).
        key: where in the file, e.g. ``auto_map["AutoModel"]`` or ``[1].type``.
        value: the entry as written.
        why: what it names, in words.
    """

    file: str
    key: str
    value: Any
    why: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key} = {json.dumps(self.value)} ({self.why})"


class _Checkpoint:
    """The files of a local folder or of a Hub repository.

    A Hub repository's files are fetched into, or read from, the Hub cache.
    """

    def __init__(self, name_or_path: str | os.PathLike[str]) -> None:
        self.name = str(name_or_path)
        self.local = Path(self.name).is_dir()

    def where(self, relative: str) -> str:
        return str(Path(self.name) / relative) if self.local else f"{self.name}/{relative}"

    def file(self, relative: str) -> Path | None:
        """The file at ``relative``, or ``None`` when there is none.

        Args:
            relative: a path already checked to stay inside.
        """
        if self.local:
            path = Path(self.name) / relative
            return path if path.is_file() else None
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        try:
            return Path(hf_hub_download(self.name, relative))
        except (EntryNotFoundError, OSError, ValueError):
            # Not in the repository, not cached while offline, or the Hub unreachable: the loaders report the last.
            return None

    def json(self, relative: str) -> Any:
        """The JSON file at ``relative``, or ``None`` when there is none."""
        path = self.file(relative)
        if path is None:
            return None
        try:
            return loads_json(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{self.where(relative)}: not valid JSON ({error})") from None
        except (json.JSONDecodeError, RepeatedKeyError) as error:
            raise ValueError(f"{json_place(self.where(relative), error)}: {json_error(error)}") from None

    def configs(self, folder: str) -> list[str]:
        """The config files in ``folder`` (relative to the checkpoint) that a loader may read."""
        if self.local:
            here = Path(self.name) / folder
            return sorted(_join(folder, p.name) for p in here.glob("*config*.json") if p.is_file())
        return [_join(folder, name) for name in _HUB_CONFIGS]


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def module_folders(name_or_path: str | os.PathLike[str]) -> list[str]:
    """The module folders ``modules.json`` names, and the route folders of a Router among them.

    The folders are relative to the checkpoint, ``""`` being the checkpoint itself. Without ``modules.json``: ``[]``.

    Args:
        name_or_path: a local folder or a Hub id.

    Raises:
        ValueError: ``modules.json`` is not a list of modules, or a path leaves the folder (``..``, an absolute
            path, a link to elsewhere). The message names the file and the entry.
    """
    checkpoint = _Checkpoint(name_or_path)
    modules = checkpoint.json(MODULES_FILE)
    if modules is None:
        return []
    where = checkpoint.where(MODULES_FILE)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ValueError(f"{where}: not a list of sentence-transformers modules (objects with a path and a type)")
    folders: dict[str, None] = {}
    names: dict[str, int] = {}
    for index, module in enumerate(modules):
        path = _inside(checkpoint, module.get("path", ""), where, f"[{index}].path")
        _check_module_entry(checkpoint, module, path, where, index, names)
        folders[path] = None
        routes = checkpoint.json(_join(path, ROUTER_CONFIG_FILE))
        types = routes.get("types") if isinstance(routes, dict) else None
        for route in types if isinstance(types, dict) else ():
            route_file = checkpoint.where(_join(path, ROUTER_CONFIG_FILE))
            folders[_inside(checkpoint, _join(path, str(route)), route_file, f"types[{json.dumps(route)}]")] = None
    return list(folders)


def _check_module_entry(
    checkpoint: _Checkpoint, module: dict[str, Any], path: str, where: str, index: int, names: dict[str, int]
) -> None:
    """Refuse a ``modules.json`` entry that sentence-transformers would drop, fail on or load from nothing.

    Args:
        checkpoint: the checkpoint holding ``modules.json``.
        module: the entry.
        path: its folder, already checked to stay inside the checkpoint.
        where: ``modules.json`` as the message names it.
        index: the entry's position in the list.
        names: the module names of the entries before it, each with its position (updated here).
    """
    name, kind = module.get("name"), module.get("type")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: [{index}].name = {json.dumps(name)} is not a module name; give each module one")
    if name in names:
        raise ValueError(
            f"{where}: [{index}].name = {json.dumps(name)} is the name of [{names[name]}] too; sentence-transformers "
            "would keep only the last of the two modules: give each module a name of its own"
        )
    names[name] = index
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{where}: [{index}].type = {json.dumps(kind)} names no module class; give its class")
    if "--" in kind or not kind.startswith(_OWN_PACKAGES):
        return  # code of the folder or elsewhere: checked for consent by remote_code
    from sentence_transformers.util.misc import import_from_string

    try:
        import_from_string(kind)
    except ImportError:
        package = kind.split(".", 1)[0]
        raise ValueError(
            f"{where}: [{index}].type = {json.dumps(kind)} is no class of the installed {package}; correct the "
            "class name, or install the release that saved the model"
        ) from None
    if checkpoint.local and path and not kind.endswith(".Normalize") and not (Path(checkpoint.name) / path).is_dir():
        raise ValueError(
            f"{where}: [{index}].path = {json.dumps(path)} is not a folder of the model folder, so its module would "
            "load without its settings: correct the path, or restore the folder"
        )


def _inside(checkpoint: _Checkpoint, path: Any, where: str, key: str) -> str:
    """``path`` normalised (``""`` for the checkpoint itself). Refused when it leaves the checkpoint."""
    if not isinstance(path, str):
        raise ValueError(
            f"{where}: {key} = {json.dumps(path)} is not a folder path; write the module's folder inside the model "
            'folder as a string ("" for the folder itself)'
        )
    normal = os.path.normpath(path.replace("\\", "/")) if path else "."
    escapes = PurePosixPath(normal).is_absolute() or normal.split("/")[0] == ".."
    escapes = escapes or bool(re.match("[A-Za-z]:", normal))
    if not escapes and checkpoint.local:
        root = Path(checkpoint.name).resolve()
        escapes = not (root / normal).resolve().is_relative_to(root)
    if escapes:
        raise ValueError(
            f"{where}: {key} = {json.dumps(path)} leaves the model folder; sentence-transformers would load that "
            "module from outside it. A module's path is a folder inside the model folder: correct the entry"
        )
    return "" if normal == "." else normal


def remote_code(name_or_path: str | os.PathLike[str]) -> list[CodeEntry]:
    """The entries of a checkpoint that name code other than sciembed's or sentence-transformers'.

    It reads the ``auto_map`` of every config at the top and in the module folders (model, tokenizer and
    sentence-transformers configs), and the module classes of ``modules.json`` and a Router's ``router_config.json``.

    Args:
        name_or_path: a local folder or a Hub id (its files are read through the Hub cache).

    Raises:
        ValueError: as :func:`module_folders`.
    """
    checkpoint = _Checkpoint(name_or_path)
    folders = module_folders(name_or_path) or [""]
    entries: list[CodeEntry] = []
    for folder in dict.fromkeys(["", *folders]):
        for config_file in checkpoint.configs(folder):
            config = checkpoint.json(config_file)
            if isinstance(config, dict) and "auto_map" in config:
                entries += _auto_map_entries(checkpoint, folder, config_file, config["auto_map"])
            if isinstance(config, dict):
                entries += _elsewhere_entries(checkpoint, folder, config_file, config)
    modules = checkpoint.json(MODULES_FILE) or []
    classes = [(MODULES_FILE, f"[{i}].type", m.get("type")) for i, m in enumerate(modules)]
    for folder in folders:
        routes = checkpoint.json(_join(folder, ROUTER_CONFIG_FILE))
        types = routes.get("types") if isinstance(routes, dict) else None
        if isinstance(types, dict):
            file = _join(folder, ROUTER_CONFIG_FILE)
            classes += [(file, f"types[{json.dumps(route)}]", value) for route, value in types.items()]
    for file, key, value in classes:
        why = _module_class_problem(checkpoint, value)
        if why:
            entries.append(CodeEntry(checkpoint.where(file), key, value, why))
    return entries


def check_remote_code(name_or_path: str | os.PathLike[str], *, trust_remote_code: bool = False) -> list[CodeEntry]:
    """Refuse a checkpoint naming code other than sciembed's own, unless the user trusts it.

    Returns the entries :func:`remote_code` finds: what the user then trusts.

    Args:
        name_or_path: a local folder or a Hub id.
        trust_remote_code: the user has read the checkpoint's code and lets it run.

    Raises:
        ValueError: naming each file, its entry and ``--trust-remote-code``. Also as :func:`module_folders`.
    """
    entries = remote_code(name_or_path)
    if trust_remote_code:
        check_code_present(name_or_path)
    if entries and not trust_remote_code:
        where = f"the folder {name_or_path}" if Path(name_or_path).is_dir() else f"the Hub repository {name_or_path}"
        raise ValueError(
            f"{where} names code that is not sciembed's own, which loading it (and every user of a copy published "
            f"with it) would run: {'; '.join(map(str, entries))}. {_REMEDY}"
        )
    if entries:
        logger.warning("%s: running code it names, as trusted: %s", name_or_path, "; ".join(map(str, entries)))
    return entries


def check_code_present(name_or_path: str | os.PathLike[str]) -> None:
    """Refuses a local folder whose ``auto_map`` or module class names a module file it lacks.

    transformers would look that file up on the Hub and name a Hub address, even for a local folder.

    Args:
        name_or_path: a local folder (a Hub id is left to the loaders, which fetch the file).

    Raises:
        ValueError: naming the folder, the config file, the entry and the missing file.
    """
    checkpoint = _Checkpoint(name_or_path)
    if not checkpoint.local:
        return
    for folder in dict.fromkeys(["", *module_folders(name_or_path)]):
        for config_file in checkpoint.configs(folder):
            config = checkpoint.json(config_file)
            auto_map = config.get("auto_map") if isinstance(config, dict) else None
            for auto_class, value in auto_map.items() if isinstance(auto_map, dict) else ():
                for reference in value if isinstance(value, list) else [value]:
                    _check_module_file(
                        checkpoint, folder, config_file, f"auto_map[{json.dumps(auto_class)}]", reference
                    )
    modules = checkpoint.json(MODULES_FILE) or []
    for index, module in enumerate(modules):
        value = module.get("type")
        if isinstance(value, str) and not value.startswith(_OWN_PACKAGES):
            _check_module_file(checkpoint, "", MODULES_FILE, f"[{index}].type", value)


def _check_module_file(checkpoint: _Checkpoint, folder: str, file: str, key: str, reference: Any) -> None:
    """Refuse ``reference`` (``module.Class``) when ``module.py`` is not beside ``file`` in a local checkpoint."""
    if not isinstance(reference, str):
        return
    if "--" in reference:
        repository, _, code = reference.partition("--")
        if hub_offline() and not Path(repository).is_dir() and not in_hub_cache(repository):
            raise ValueError(
                f"the folder {checkpoint.name}: {file}: {key} = {json.dumps(reference)} names code in the Hub "
                f"repository {repository}, which HF_HUB_OFFLINE keeps from being fetched and the Hub cache does not "
                f"hold (nor is it a local folder): download {repository} while online, or correct the entry"
            )
        return
    if not _MODULE_CLASS.fullmatch(reference):
        return
    module = _join(folder, f"{reference.split('.')[0]}.py")
    if checkpoint.file(module) is None:
        raise ValueError(
            f"the folder {checkpoint.name}: {file}: {key} = {json.dumps(reference)} names code in {module}, which is "
            "not in the folder: copy that file into it from where the model was published, or correct the entry"
        )


def check_tokenizer(
    name_or_path: str | os.PathLike[str], folder: str = "", *, trust_remote_code: bool = False
) -> None:
    """Refuses a tokenizer that would not load as saved, or would load with no vocabulary.

    The error names the file at fault.

    A tokenizer written as code (an ``AutoTokenizer`` entry in ``auto_map``) is :func:`check_remote_code`'s. One
    with ``tokenizer.json`` loads from it. Otherwise ``tokenizer_config.json`` names its class: a class transformers
    does not have is refused, and so is a class whose vocabulary files the folder lacks (transformers would build
    a tokenizer that knows no word). A class that needs a package (sentencepiece, tiktoken) keeps transformers'
    advice, with the folder named.

    Args:
        name_or_path: a local folder or a Hub id.
        folder: the transformer's folder inside it (a sentence-transformers module's path).
        trust_remote_code: the user lets the checkpoint's own code run.

    Raises:
        ValueError: naming the file, the class and what to do.
    """
    checkpoint = _Checkpoint(name_or_path)
    file = _join(folder, "tokenizer_config.json")
    config = checkpoint.json(file)
    if isinstance(config, dict) and "auto_map" in config:
        return
    if checkpoint.local and checkpoint.file(_join(folder, "tokenizer.json")):
        tokenizer = checkpoint.json(_join(folder, "tokenizer.json"))  # a damaged file is named here
        if not isinstance(tokenizer, dict) or "model" not in tokenizer:
            raise ValueError(
                f"{checkpoint.where(_join(folder, 'tokenizer.json'))}: not a tokenizers file (no 'model' entry); copy "
                "the tokenizer's files into the folder again"
            )
        return
    if not isinstance(config, dict) or checkpoint.file(_join(folder, "tokenizer.json")):
        return
    name = config.get("tokenizer_class")
    if not isinstance(name, str):
        return
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES, tokenizer_class_from_name

    tokenizer_class = tokenizer_class_from_name(name)
    where = checkpoint.where(file)
    if tokenizer_class is None:
        close = difflib.get_close_matches(name, {n for n in TOKENIZER_MAPPING_NAMES.values() if n}, n=1, cutoff=0.85)
        raise ValueError(
            f"{where}: tokenizer_class = {json.dumps(name)}, a class transformers does not have. It is misspelt"
            f"{f' (transformers has {close[0]})' if close else ''}, or it is remote code: then the folder must name "
            "its module in an auto_map entry, and --trust-remote-code (command line) or trust_remote_code=True "
            "(Python) lets it run, given only for a folder you trust"
        )
    wanted = [f for key, f in getattr(tokenizer_class, "vocab_files_names", {}).items() if key != "tokenizer_file"]
    if checkpoint.local and wanted and not any(checkpoint.file(_join(folder, f)) for f in wanted):
        raise ValueError(
            f"{where}: tokenizer_class = {json.dumps(name)} reads its vocabulary from tokenizer.json or "
            f"{' and '.join(wanted)}, and {checkpoint.where(folder or '.')} holds none of them: transformers would "
            "build a tokenizer that knows no word. Copy the tokenizer's files into the folder"
        )
    from transformers import AutoTokenizer

    try:
        AutoTokenizer.from_pretrained(checkpoint.name, subfolder=folder, trust_remote_code=trust_remote_code)
    except (ImportError, ValueError, OSError) as error:
        message = " ".join(str(error).split())
        if not any(package in message for package in ("sentencepiece", "tiktoken", "protobuf")):
            raise
        raise ValueError(
            f"{checkpoint.where(folder or '.')}: its tokenizer ({name}) does not load: {message}"
        ) from None


def check_published_code(folder: str | os.PathLike[str], *, trust_remote_code: bool = False) -> None:
    """Refuses to publish a folder with code other than sciembed's, unless the user trusts it.

    The code may be held in the folder or named by its configs.

    Args:
        folder: the model folder to export, or the exported folder to push.
        trust_remote_code: the user has read that code and means to publish it.

    Raises:
        ValueError: naming the Python files that are not sciembed's, or as :func:`check_remote_code`.
    """
    root = Path(folder)
    subfolders = sorted({path.parent for path in root.rglob("*.py")})
    foreign = [
        str((sub / name).relative_to(root)) for sub in subfolders for name in foreign_code(sub, route_code_paths())
    ]
    if foreign and not trust_remote_code:
        raise ValueError(
            f"{root}: {', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not sciembed's own code; publishing "
            f"would hand (and validating would run) code sciembed did not write. {_REMEDY}"
        )
    check_remote_code(root, trust_remote_code=trust_remote_code)


#: Keys of a sentence-transformers module's config that load a model or tokenizer from another folder or repository.
_LOADED_FROM = ("tokenizer_name_or_path", "model_name_or_path")


def _elsewhere_entries(checkpoint: _Checkpoint, folder: str, file: str, config: dict[str, Any]) -> list[CodeEntry]:
    """A module config's tokenizer or model read from outside the checkpoint.

    Whatever code it names would run under the trust given to this checkpoint.
    """
    entries = []
    for key in _LOADED_FROM:
        value = config.get(key)
        if value in (None, "", ".", "./"):
            continue
        inside = isinstance(value, str) and checkpoint.local and not Path(value).is_absolute()
        if inside:
            root = Path(checkpoint.name).resolve()
            inside = (root / folder / value).resolve().is_relative_to(root)
        if not inside:
            why = f"a {key.split('_')[0]} read from outside the model folder, whose code is not checked"
            entries.append(CodeEntry(checkpoint.where(file), key, value, why))
    return entries


def _auto_map_entries(checkpoint: _Checkpoint, folder: str, file: str, auto_map: Any) -> list[CodeEntry]:
    where = checkpoint.where(file)
    if not isinstance(auto_map, dict):
        return [CodeEntry(where, "auto_map", auto_map, "not a mapping of Auto classes to code")]
    entries = []
    for auto_class, value in auto_map.items():
        references = value if isinstance(value, list) else [value]
        # A tokenizer's entry is [slow, fast]; null where there is none.
        problems = [_reference_problem(checkpoint, folder, ref) for ref in references if ref is not None]
        problems = [problem for problem in problems if problem]
        if problems:
            why = "; ".join(dict.fromkeys(problems))
            if auto_class == "AutoTokenizer":
                why = f"the tokenizer is remote code: {why}"
            entries.append(CodeEntry(where, f"auto_map[{json.dumps(auto_class)}]", value, why))
    return entries


def _reference_problem(checkpoint: _Checkpoint, folder: str, reference: Any) -> str | None:
    """Why ``reference`` (``module.Class`` or ``REPO--module.Class``) is not sciembed's code in ``folder``, if so."""
    if not isinstance(reference, str):
        return f"{json.dumps(reference)} is not a module.Class name"
    if "--" in reference:
        return f"code in {reference.split('--')[0]}, outside the model folder"
    if not _MODULE_CLASS.fullmatch(reference):
        return f"{reference} is not a module.Class name of a file beside the config"
    return _own_file_problem(checkpoint, _join(folder, f"{reference.split('.')[0]}.py"))


def _module_class_problem(checkpoint: _Checkpoint, value: Any) -> str | None:
    """Why a sentence-transformers module class is neither sentence-transformers' nor sciembed's, if so."""
    if isinstance(value, str) and "--" not in value and value.startswith(_OWN_PACKAGES):
        return None
    if isinstance(value, str) and ("--" in value or _MODULE_CLASS.fullmatch(value)):
        return _reference_problem(checkpoint, "", value)
    return "a class outside sentence_transformers and sciembed"


def _own_file_problem(checkpoint: _Checkpoint, relative: str) -> str | None:
    path = checkpoint.file(relative)
    if path is None:
        return f"{relative} is not in the model folder"
    if path.name in foreign_code(path.parent, route_code_paths()):
        return f"{relative} is not sciembed's own code"
    return None


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` keeps the Hub from being reached."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def in_hub_cache(repo_id: str) -> bool:
    """Whether the Hub cache holds a config file of the model ``repo_id``.

    Offline loading needs one.
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        return any(
            isinstance(try_to_load_from_cache(repo_id, marker), str) for marker in ("config.json", "modules.json")
        )
    except HFValidationError:
        return False
