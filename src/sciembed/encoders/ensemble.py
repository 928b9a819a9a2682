"""Ensembles of encoders: the mean of their embeddings for the same format (SciRepEval's best row).

SciRepEval (Singh et al. 2023, Table 3) gets its best results by averaging, per format, the embedding
of the format-adapter model and that of the control-code model. :class:`EnsembleEncoder` does this for
any encoders with the same embedding size, and is an :class:`~sciembed.encode.Encoder`, so it
goes wherever one does (:func:`sciembed.encode`, :func:`sciembed.evaluation.evaluate`, the embed job).
A folder holding ``sciembed_ensemble.json`` (:func:`save_ensemble`) loads as one through
:meth:`sciembed.Encoder.from_pretrained`, so ``sciembed evaluate --model FOLDER`` evaluates the ensemble.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint_files import ENSEMBLE_FILE
from ..checkpoint_hub import resolve_model
from ..encode import Encoder, PaperEncoder
from ..io import RepeatedKeyError, atomic_path, json_error, json_place, loads_json
from ..removed import module_getattr

#: Loaders this module no longer has, and the one loader that replaces them.
REMOVED = {
    "load_encoder": "sciembed.Encoder.from_pretrained(name_or_folder)",
    "load_ensemble": "sciembed.Encoder.from_pretrained(ensemble_folder)",
}

__getattr__ = module_getattr(__name__, REMOVED)


#: How an ensemble folder may combine its members (``combine`` in its description).
ENSEMBLE_COMBINATIONS = ("mean",)


class EnsembleEncoder(Encoder, folder_file=ENSEMBLE_FILE):
    """The mean of several encoders' embeddings, each taken in the same task format.

    A member without task formats embeds every format alike and is used as it is. The ensemble's
    formats are those every multi-format member has.

    Args:
        members: two or more encoders whose embeddings have one size.
        task_format: the format to embed in (default: each member's own default).
    """

    def __init__(self, members: Sequence[Encoder], *, task_format: str | None = None):
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two encoders, got {len(members)}")
        self.members = list(members)
        if task_format is not None:
            unknown = [m.name_or_path for m in self.members if m.task_formats and task_format not in m.task_formats]
            if unknown:
                raise ValueError(f"task format {task_format!r} is not one of the formats of {', '.join(unknown)}")
            self.members = [m.with_format(task_format) if m.task_formats else m for m in self.members]
        self.forward_options = {"task_format": task_format} if task_format else {}
        first = self.members[0]
        self.tokenizer, self.device, self.max_length = (
            first.tokenizer,
            first.device,
            min(m.max_length for m in self.members),
        )
        self.pooling, self.normalize, self.facets = "ensemble", False, False
        engines = {(m.backend, m.quantization) for m in self.members}
        self.backend, self.quantization = engines.pop() if len(engines) == 1 else ("mixed", "mixed")

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike[str] | None = None, **options: Any) -> EnsembleEncoder:
        """The ensemble described by ``name_or_path/sciembed_ensemble.json``, each member loaded with ``options``.

        Args:
            name_or_path: the ensemble folder.
            options: those of :meth:`sciembed.Encoder.from_pretrained` (``device``, ``max_length``, ...). A
                ``task_format`` is the ensemble's. ``revision`` is refused: a local folder has none.

        Raises:
            ValueError: the description cannot be read, names an unknown combination, or a member that does not load
                (named by its number in the file).
        """
        if name_or_path is None:
            raise ValueError("an ensemble loads from its folder: give the folder holding " + ENSEMBLE_FILE)
        if options.get("revision") is not None:
            raise ValueError(
                f"{name_or_path} is a local ensemble folder, which has no revisions: leave revision unset"
            )
        path = Path(name_or_path) / ENSEMBLE_FILE
        try:
            spec = loads_json(path.read_text(encoding="utf-8"))
            members, combine = spec["members"], spec.get("combine", "mean")
        except (json.JSONDecodeError, RepeatedKeyError) as error:
            raise ValueError(
                f"{json_place(path, error)}: not a readable ensemble description ({json_error(error)})"
            ) from None
        except OSError as error:
            raise ValueError(f"{path}: not a readable ensemble description ({error})") from None
        except (KeyError, TypeError, AttributeError):
            raise ValueError(
                f'{path}: not an ensemble description, which is an object with a "members" list'
            ) from None
        if not isinstance(members, list) or not all(isinstance(m, str) and m for m in members):
            raise ValueError(
                f"{path}: members = {json.dumps(members)} is not a list of models; write each member as a folder "
                '(relative to the ensemble) or a Hub id, e.g. "members": ["model-a", "model-b"]'
            )
        if combine not in ENSEMBLE_COMBINATIONS:
            raise ValueError(f"{path}: unknown combination {combine!r}; sciembed averages (mean)")
        task_format = options.pop("task_format", None)
        folder = Path(name_or_path)
        loaded = []
        for number, member in enumerate(members, start=1):
            where = folder / member
            try:
                loaded.append(PaperEncoder.from_pretrained(str(where) if where.exists() else member, **options))
            except (ValueError, OSError) as error:
                raise ValueError(
                    f"{path}: member {number} ({member!r}, a folder relative to the ensemble or a Hub id) does not "
                    f"load: {error}"
                ) from None
        return cls(loaded, task_format=task_format)

    @property
    def task_formats(self) -> tuple[str, ...]:
        with_formats = [m.task_formats for m in self.members if m.task_formats]
        if not with_formats:
            return ()
        return tuple(f for f in with_formats[0] if all(f in formats for formats in with_formats))

    def with_format(self, task_format: str | None) -> EnsembleEncoder:
        return EnsembleEncoder(
            [m.with_format(task_format) if m.task_formats else m for m in self.members], task_format=task_format
        )

    @property
    def transformer(self):
        raise ValueError("an ensemble has no single transformers model (facet vectors and the like need one encoder)")

    @property
    def name_or_path(self) -> str:
        return "ensemble(" + ", ".join(m.name_or_path for m in self.members) + ")"

    @property
    def revision(self) -> list[str | None] | None:  # type: ignore[override]
        """The members' revisions, in order (``None`` when no member has one)."""
        revisions = [m.revision for m in self.members]
        return revisions if any(r is not None for r in revisions) else None

    def named_by_hub(self, repo_id: str, snapshot: str) -> EnsembleEncoder:
        """This ensemble, each member in ``snapshot`` named ``repo_id/subfolder`` at the snapshot's commit.

        Args:
            repo_id: the Hub id of the ensemble.
            snapshot: the Hub cache snapshot folder the ensemble was read from.
        """
        commit = resolve_model(snapshot)[1]
        for member in self.members:
            folder = Path(member.name_or_path)
            if isinstance(member, PaperEncoder) and folder.is_relative_to(snapshot):
                member.folder = str(folder)
                member.source, member.revision = f"{repo_id}/{folder.relative_to(snapshot).as_posix()}", commit
        return self

    def save_pretrained(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write an ensemble folder naming the members as they were loaded (:func:`save_ensemble`).

        Args:
            path: the folder to write.
            overwrite: replace a folder that is there (refused otherwise).
        """
        from ..io import refuse_replacing

        refuse_replacing(path, overwrite=overwrite)
        return save_ensemble(path, [getattr(m, "folder", None) or m.name_or_path for m in self.members])

    def fingerprint(self) -> str:
        digest = hashlib.sha256(b"ensemble-mean")
        for member in self.members:
            digest.update(member.fingerprint().encode())
        return digest.hexdigest()

    def _encode(
        self,
        papers: list[Mapping[str, Any] | str],
        *,
        batch_size: int | None,
        show_progress_bar: bool,
        progress_desc: str,
    ) -> np.ndarray:
        """The mean over members of their embeddings of ``papers`` (each member makes its own text)."""
        vectors = [
            m.encode(
                papers,
                batch_size=batch_size,
                show_progress_bar=show_progress_bar,
                progress_desc=f"{progress_desc} ({i + 1}/{len(self.members)})",
            )
            for i, m in enumerate(self.members)
        ]
        shapes = {v.shape for v in vectors}
        if len(shapes) != 1:
            raise ValueError(f"ensemble members give embeddings of different shapes {sorted(shapes)}")
        return np.mean(vectors, axis=0, dtype=np.float64).astype(np.float32)


def save_ensemble(folder: str | os.PathLike[str], members: Sequence[str | os.PathLike[str]]) -> Path:
    """Writes ``folder/sciembed_ensemble.json``, naming the member models.

    A member's path is relative to ``folder`` where it lies inside it, else as given. Hub ids stay as they are.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for member in members:
        path = Path(member)
        names.append(os.path.relpath(path.resolve(), folder.resolve()) if path.exists() else str(member))
    with atomic_path(folder / ENSEMBLE_FILE) as temporary:
        temporary.write_text(json.dumps({"combine": "mean", "members": names}, indent=1) + "\n", encoding="utf-8")
    return folder
