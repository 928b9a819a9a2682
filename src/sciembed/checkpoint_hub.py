"""Finding a model, and load errors that name it.

Finding a model: a local folder checked before anything loads, a Hub id resolved to a snapshot in the Hub cache, and
load errors that name the model the user gave.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .checkpoint_files import ENSEMBLE_FILE
from .checkpoints import hub_offline, in_hub_cache
from .io import broken_link

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def check_model_location(name: str) -> None:
    """Fail early, naming what is wrong, for a model meant as a local folder.

    Fail early, naming what is wrong, for a model that is meant as a local folder: a folder without ``config.json``
    (nor sentence-transformers ``modules.json``), or a path that does not exist. Anything shaped like a Hub id
    (``name`` or ``owner/name``) that is not a local folder is left to the Hub loaders.

    Raises:
        FileNotFoundError: with the path and what is missing.
    """
    path = Path(name).expanduser()
    if (link := broken_link(path)) is not None:
        raise FileNotFoundError(f"{name} is {link}: not a model folder; point it at the folder itself")
    if path.is_dir():
        if not any((path / marker).is_file() for marker in ("config.json", "modules.json", ENSEMBLE_FILE)):
            raise FileNotFoundError(
                f"{name}: this folder holds no config.json (nor modules.json): not a saved model folder"
            )
        return
    if path.exists():
        raise FileNotFoundError(f"{name}: a file, not a model folder or Hub id")
    if _looks_local(name):
        raise FileNotFoundError(f"{name}: no such model folder")
    if hub_offline() and not in_hub_cache(name):
        raise FileNotFoundError(
            f"{name}: no such model folder here, and no copy of a Hub model of that id in the Hub cache "
            "(HF_HUB_OFFLINE is set, so it cannot be downloaded)"
        )


#: Files a Hub snapshot leaves out: weights of other frameworks and exports that sciembed never loads.
HUB_IGNORED = ("*.h5", "*.msgpack", "*.ot", "*.tflite", "*.onnx", "*.onnx_data", "onnx/*", "openvino/*", "coreml/*")


def resolve_model(
    name: str,
    *,
    revision: str | None = None,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    local_files_only: bool = False,
) -> tuple[str, str | None]:
    """The local folder a model name stands for, and its Hub commit.

    Args:
        name: a local model folder or a Hub id.
        revision: a Hub id's branch, tag or commit. Refused for a local folder.
        token: a Hub token.
        cache_dir: the Hub cache (default: ``HF_HUB_CACHE``).
        local_files_only: read the Hub cache only.

    Returns:
        ``(folder, commit)``: a Hub id's snapshot folder and commit. A local folder as given, with the commit of a
        Hub cache snapshot folder (``.../snapshots/<commit>``), else ``None``.

    Raises:
        FileNotFoundError: no such folder, or a Hub id that is not in the cache and cannot be downloaded.
        ValueError: a ``revision`` for a local folder, or one the Hub repository does not have.
    """
    path = Path(name).expanduser()
    if path.exists() or broken_link(path) is not None or _looks_local(name):
        if revision is not None:
            raise ValueError(f"{name} is a local folder, which has no revisions: leave revision (--revision) unset")
        check_model_location(name)
        return name, _snapshot_commit(path)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    offline = hub_offline() or local_files_only
    try:
        folder = snapshot_download(
            name,
            revision=revision,
            token=token,
            cache_dir=cache_dir,
            local_files_only=offline,
            ignore_patterns=list(HUB_IGNORED),
        )
    except HFValidationError:
        raise FileNotFoundError(f"{name}: no such model folder, and not a Hub id") from None
    except RevisionNotFoundError:
        raise ValueError(f"{name}: the Hub repository has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise FileNotFoundError(f"{name}: no such model folder, and no Hub repository of that id") from None
    except LocalEntryNotFoundError:
        why = "HF_HUB_OFFLINE is set" if hub_offline() else "local_files_only is set"
        raise FileNotFoundError(
            f"{name}: no such model folder here, and no copy of a Hub model of that id"
            f"{f' at revision {revision}' if revision else ''} in the Hub cache{f' {cache_dir}' if cache_dir else ''} "
            f"({why}, so it cannot be downloaded)"
        ) from None
    return folder, _snapshot_commit(Path(folder))


def hub_folder_with(
    name: str,
    filename: str,
    *,
    revision: str | None = None,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    local_files_only: bool = False,
) -> str | None:
    """The snapshot folder of the Hub repository ``name`` when the repository holds ``filename``, else ``None``.

    The file is looked up first (from the cache, or one download). Only a repository that has it is fetched whole.

    Args:
        name: a Hub id (a local folder gives ``None``).
        filename: the file to look for at the repository's root.
        revision, token, cache_dir, local_files_only: as for :func:`resolve_model`.
    """
    path = Path(name).expanduser()
    if path.exists() or broken_link(path) is not None or _looks_local(name):
        return None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, HFValidationError

    try:
        hf_hub_download(
            name,
            filename,
            revision=revision,
            token=token,
            cache_dir=cache_dir,
            local_files_only=hub_offline() or local_files_only,
        )
    except (EntryNotFoundError, HFValidationError, HfHubHTTPError):
        return None  # no such file; a repository or revision that is not there is named by resolve_model
    return resolve_model(name, revision=revision, token=token, cache_dir=cache_dir, local_files_only=local_files_only)[
        0
    ]


@contextlib.contextmanager
def named_as(given: str, folder: str):
    """Errors about a Hub snapshot told with the Hub id the user wrote.

    Errors about the Hub snapshot ``folder`` told with the Hub id ``given`` the user wrote, as when it was read from
    the Hub: "the Hub repository org/name", "org/name/config.json".
    """
    if folder == given:
        yield
        return
    try:
        yield
    except (ValueError, OSError) as error:
        message = str(error).replace(f"the folder {folder}", f"the Hub repository {given}").replace(folder, given)
        if message == str(error):
            raise
        error.args = (message,)
        raise error.with_traceback(None) from None


def _looks_local(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or name.endswith(("/", os.sep)) or name.count("/") > 1 or "\\" in name


def _snapshot_commit(folder: Path) -> str | None:
    """The commit of a Hub cache snapshot folder (``models--org--name/snapshots/<commit>``). ``None`` otherwise."""
    parent = folder.parent
    if parent.name == "snapshots" and parent.parent.name.startswith("models--"):
        return folder.name
    return None


def check_module_chain(model: SentenceTransformer, name: str) -> None:
    """Embed one word, so that a module that does not fit is named now.

    Embed one word with a sentence-transformers model whose modules go beyond Transformer, Pooling and Normalize, so
    that a module that does not fit the one before it (a Dense layer's input size) is named now.

    Args:
        model: the loaded model.
        name: the folder or Hub id, as the message names it.

    Raises:
        ValueError: the modules do not fit one another, naming ``modules.json`` and the error.
    """
    kinds = [type(module).__name__ for module in model]
    if all(kind in ("Transformer", "Pooling", "Normalize") for kind in kinds):
        return
    try:
        model.encode(["a"], show_progress_bar=False)
    except RuntimeError as error:
        raise ValueError(
            f"{name}/modules.json: its modules ({' -> '.join(kinds)}) do not fit one another: {error}. Correct the "
            "module whose input size differs from the output of the one before it, or save the model again"
        ) from None


@contextlib.contextmanager
def load_errors_named(name: str):
    """Turn the loaders' failures into one error naming the model and sciembed's remedy.

    The failures: damaged weights (a truncated ``model.safetensors``), pickle weights that
    ``torch.load(weights_only=True)`` refuses (transformers 4 suggests a TensorFlow checkpoint for them, torch to load
    with ``weights_only=False``: both wrong here), a local folder without weights, and code outside sciembed's own
    (transformers' message names a Hub URL even for a local folder)."""
    import pickle

    from safetensors import SafetensorError

    try:
        yield
    except SafetensorError as error:
        raise ValueError(f"{name}: its weights do not load ({error}); the file may be truncated or damaged") from None
    except (pickle.UnpicklingError, OSError) as error:
        chain = [error]
        while chain[-1].__cause__ or chain[-1].__context__:
            chain.append(chain[-1].__cause__ or chain[-1].__context__)
        refused = next((e for e in chain if isinstance(e, pickle.UnpicklingError)), None)
        if refused is None and "no file named" in str(error) and Path(name).is_dir():
            raise ValueError(
                f"{name}: holds no weights file ({str(error).strip().rstrip('.')}); the folder has the model's "
                "config but not its weights: copy the weights file (model.safetensors) into it, or give the folder "
                "that holds them"
            ) from None
        if refused is None:
            raise
        reason = str(refused).strip().splitlines()[-3:]
        detail = next((line for line in reason if "GLOBAL" in line), "it holds objects other than tensors")
        raise ValueError(
            f"{name}: its pickle weights (pytorch_model.bin) are an unsafe pickle: {detail.strip()} Loading them "
            "would run that code, so sciembed loads tensors only. Use safetensors weights, or convert the file on a "
            "machine where you trust it"
        ) from None
    except RuntimeError as error:
        if "Error(s) in loading state_dict" not in str(error):
            raise
        lines = [line.strip().rstrip(".") for line in str(error).splitlines() if line.strip()]
        raise ValueError(
            f"{name}: {lines[0].removeprefix('Error(s) in loading state_dict for ').rstrip(':')}'s weights do not fit "
            f"its settings ({'; '.join(lines[1:3])}). Correct that module's config.json to describe its weights, or "
            "save the model again; nothing was loaded"
        ) from None
    except ValueError as error:
        if "trust_remote_code" not in str(error):
            raise
        where = f"the folder {name}" if Path(name).is_dir() else f"the Hub repository {name}"
        raise ValueError(
            f"{where} holds Python code that is not sciembed's own; loading it runs that code. Read it, then pass "
            "--trust-remote-code (command line) or trust_remote_code=True (Python)"
        ) from None
