"""Upload an exported folder to the Hugging Face Hub through ``huggingface_hub.HfApi``.

:func:`push_folder` creates the repository (``exist_ok``) and uploads the folder in one commit: exactly the files
an export writes (:func:`~.files.hub_files`), and it refuses a folder holding anything else, or a link out of
it, since something added after the export was never checked. Offline
(``HF_HUB_OFFLINE=1``) it stops at once with a message that says so, instead of the library's retries:
by then ``sciembed push`` has already written and validated the folder, so nothing is lost.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checkpoints import check_published_code
from ..removed import module_getattr
from .files import hub_files

if TYPE_CHECKING:
    from ..encode import Encoder

logger = logging.getLogger(__name__)

__getattr__ = module_getattr(__name__, {"push_encoder": "sciembed.hub.push.push_to_hub(encoder, repo_id)"})


class HubOfflineError(OSError):
    """The Hub cannot be reached (``HF_HUB_OFFLINE`` is set)."""


def push_folder(
    folder: str | os.PathLike[str],
    repo_id: str,
    *,
    api: Any = None,
    private: bool = False,
    commit_message: str | None = None,
    token: str | None = None,
    trust_remote_code: bool = False,
) -> str:
    """Create ``repo_id`` (if needed) and upload ``folder`` to it. Returns the commit URL.

    Args:
        folder: an exported folder (:func:`~.export.export_model`).
        repo_id: ``ORG/NAME``.
        api: an ``HfApi`` (default: a new one, tests pass a recording fake).
        private: create the repository private.
        commit_message: default ``"Upload <model_type> model with sciembed"``.
        token: a Hub token (default: the one ``huggingface-cli login`` stored).
        trust_remote_code: publish code the folder holds or names that is not sciembed's own (refused otherwise,
            :func:`sciembed.checkpoints.check_published_code`), which every user loading it with
            ``trust_remote_code=True`` would run.

    Raises:
        HubOfflineError: ``HF_HUB_OFFLINE`` is set.
        ValueError: ``repo_id`` is not ``ORG/NAME``, ``folder`` has no model card, it holds files an export
            does not write (named), or it names code that is not sciembed's own and ``trust_remote_code`` is false.
    """
    from huggingface_hub import constants

    folder = Path(folder)
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"repo_id must be ORG/NAME, got {repo_id!r}")
    if not (folder / "README.md").is_file() or not (folder / "config.json").is_file():
        raise ValueError(
            f"{folder}: not an exported model folder (README.md and config.json expected); run sciembed export first"
        )
    check_published_code(folder, trust_remote_code=trust_remote_code)
    files, strays = hub_files(folder)
    if strays:
        shown = "; ".join(f"{name} ({why})" for name, why in list(strays.items())[:8])
        raise ValueError(
            f"{folder} holds {len(strays)} file(s) an export does not write, which would be published unchecked: "
            f"{shown}. Remove them, or export the model again (sciembed export --overwrite)"
        )
    if constants.HF_HUB_OFFLINE:
        raise HubOfflineError(
            f"HF_HUB_OFFLINE is set, so the Hub is not reachable: {folder} is ready but was not pushed to {repo_id}. "
            "Unset HF_HUB_OFFLINE on a machine with network access and run the push again."
        )
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    message = commit_message or f"Upload {_model_type(folder)} model with sciembed"
    api.create_repo(repo_id, private=private, exist_ok=True)
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=message, allow_patterns=files)
    url = str(getattr(commit, "commit_url", commit))
    logger.info("pushed %s to %s (%s)", folder, repo_id, url)
    return url


def push_to_hub(
    encoder: Encoder,
    repo_id: str,
    *,
    private: bool = False,
    commit_message: str | None = None,
    token: str | None = None,
    license: str = "apache-2.0",
    trust_remote_code: bool = False,
    validate: bool = True,
    api: Any = None,
) -> str:
    """Upload ``encoder`` as ``sciembed push`` uploads a folder: saved, exported, checked, then pushed.

    sentence-transformers' ``model.push_to_hub(repo_id)`` is ``push_to_hub(encoder, repo_id)`` here (``from
    sciembed.hub.push import push_to_hub``): publishing sits above the encoders, which never import it.

    The folder is written by the encoder's ``save_pretrained`` into a temporary folder, made Hub-ready and checked
    by :func:`~.export.export_model` (model card, safetensors, a load in a fresh process with ``validate``), and
    uploaded by :func:`push_folder` with its refusals (``HF_HUB_OFFLINE``, files an export does not write, code that
    is not sciembed's own without ``trust_remote_code``).

    Args:
        encoder: the encoder (an ensemble is refused: it names its members, which are published one by one).
        repo_id: ``ORG/NAME``.
        private: create the repository private.
        commit_message: default ``"Upload <model_type> model with sciembed"``.
        token: a Hub token (default: the one ``hf auth login`` stored).
        license: the model card's licence.
        trust_remote_code: publish code the folder holds or names that is not sciembed's own.
        validate: load the exported folder in a fresh process before uploading.
        api: an ``HfApi`` (default: a new one).
    """
    import tempfile

    from ..encoders import EnsembleEncoder
    from .export import export_model

    if isinstance(encoder, EnsembleEncoder):
        raise ValueError("an ensemble is published member by member: push each member model, then the ensemble file")

    with tempfile.TemporaryDirectory(prefix="sciembed-push-") as scratch:
        saved = encoder.save_pretrained(Path(scratch) / "model")
        report = export_model(
            saved,
            Path(scratch) / "hub",
            repo_id=repo_id,
            license=license,
            validate=validate,
            trust_remote_code=trust_remote_code,
        )
        return push_folder(
            report.folder,
            repo_id,
            api=api,
            private=private,
            commit_message=commit_message,
            token=token,
            trust_remote_code=trust_remote_code,
        )


def _model_type(folder: Path) -> str:
    import json

    return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type", "transformers")
