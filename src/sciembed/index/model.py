"""Which model made an index's vectors: its name, revision and fingerprint.

Queries are checked against the fingerprint.
The fingerprint is the model's vector of a fixed probe paper, rounded. Two encoders agree when the cosine of their
probe vectors is at least :data:`SAME_MODEL_COSINE`. ``sciembed embed`` writes a stamp beside its output
(``<output>.meta.json``), and ``sciembed index build`` reads it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..default_model import DEFAULT_MODEL_HUB_ID, default_model_path
from ..io import atomic_path, load_json_file

if TYPE_CHECKING:
    from ..encode import Encoder

logger = logging.getLogger(__name__)

#: The paper whose vector fingerprints a model.
PROBE_PAPER = {
    "paper_id": "sciembed-probe",
    "title": "Citation-informed transformers for scientific document representation",
    "abstract": "We embed papers so that papers that cite each other lie close together.",
}
#: Probe vectors at least this close (cosine) come from the same model.
SAME_MODEL_COSINE = 0.999
#: Decimals the probe vector is stored with.
PROBE_DECIMALS = 5


@dataclass(frozen=True)
class ModelStamp:
    """The model that embedded a collection.

    Attributes:
        name: the model's name or path.
        revision: its Hub commit (``None`` for a local folder).
        probe: its unit vector of :data:`PROBE_PAPER`, rounded (``None`` when the model was named but not loaded).
        dim: the vectors' dimension.
        normalised: whether the model's vectors are unit length.
        text_fields: the paper fields its texts were made of.
    """

    name: str
    revision: str | None = None
    probe: tuple[float, ...] | None = None
    dim: int | None = None
    normalised: bool | None = None
    text_fields: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelStamp:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for name in ("probe", "text_fields"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        return cls(**values)

    def matches(self, other: ModelStamp) -> bool:
        """Whether ``other``'s probe vector lies within :data:`SAME_MODEL_COSINE` of this one's."""
        if self.probe is None or other.probe is None or len(self.probe) != len(other.probe):
            return False
        a, b = np.asarray(self.probe, dtype=np.float64), np.asarray(other.probe, dtype=np.float64)
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) >= SAME_MODEL_COSINE


def stamp_of(encoder: Encoder, text_fields: Sequence[str] | None = None) -> ModelStamp:
    """The stamp of ``encoder``: its name, revision and the vector of the probe paper's text.

    Args:
        encoder: the model.
        text_fields: the paper fields its texts are made of, when not title and abstract.
    """
    text = encoder.texts([PROBE_PAPER])[0]
    vector = np.asarray(encoder.encode([text], show_progress_bar=False), dtype=np.float64)[0]
    revision = encoder.revision if isinstance(encoder.revision, str) or encoder.revision is None else None
    return ModelStamp(
        name=portable_name(encoder.name_or_path),
        revision=revision,
        probe=tuple(np.round(vector / np.linalg.norm(vector), PROBE_DECIMALS).tolist()),
        dim=int(vector.shape[0]),
        normalised=bool(abs(np.linalg.norm(vector) - 1) < 1e-3),
        text_fields=tuple(text_fields) if text_fields else None,
    )


def portable_name(name_or_path: Any) -> str:
    """How a stamp names a model: the embedded default by its Hub id.

    The default's folder differs between machines.
    """
    try:
        embedded = Path(str(name_or_path)).resolve() == Path(default_model_path()).resolve()
    except (ImportError, OSError):
        embedded = False
    return DEFAULT_MODEL_HUB_ID if embedded else str(name_or_path)


def sidecar_path(output: str | os.PathLike[str]) -> Path:
    """The stamp file beside an embedding output: ``vectors.npy`` -> ``vectors.npy.meta.json``."""
    output = Path(output)
    return output.with_name(output.name + ".meta.json")


def write_sidecar(output: str | os.PathLike[str], stamp: ModelStamp) -> Path:
    """Write ``stamp`` beside the embedding output ``output``, atomically."""
    path = sidecar_path(output)
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(stamp.to_dict(), indent=2), encoding="utf-8")
    return path


def read_sidecar(output: str | os.PathLike[str]) -> ModelStamp | None:
    """The stamp beside the embedding output ``output``, or ``None`` when there is none.

    Raises:
        ValueError: a stamp file that is not one, named.
    """
    path = sidecar_path(output)
    if not path.is_file():
        return None
    data = load_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ValueError(f"{path}: not a model stamp written by sciembed embed; delete it or embed the papers again")
    return ModelStamp.from_dict(data)


def checked_sidecar(output: str | os.PathLike[str]) -> ModelStamp | None:
    """The stamp beside the embedding output ``output``. A warning when there is none, as its model cannot be checked.

    Args:
        output: the embedding file, or folder of Parquet parts.
    """
    stamp = read_sidecar(output)
    if stamp is None:
        logger.warning(
            "%s has no model stamp (%s, written by sciembed embed): the model that made its vectors cannot be checked",
            output,
            sidecar_path(output).name,
        )
    return stamp


def stamped_encoder(stamp: ModelStamp, encoder: Encoder | None, source: str) -> Encoder:
    """The encoder for what a stamped collection still needs embedded, checked against the stamp's fingerprint.

    Args:
        stamp: the model that embedded the collection.
        encoder: the encoder given, or ``None`` to load the stamp's model (the embedded default offline).
        source: the embedding output or index the stamp belongs to, for the messages.

    Raises:
        ValueError: an encoder whose vector of the probe paper differs from the stamp's, naming both models.
    """
    if encoder is None:
        from ..encode import Encoder

        options = {"revision": stamp.revision} if stamp.revision else {}
        # The embedded default is named by its Hub id and loaded from the package, offline.
        encoder = Encoder.from_pretrained(None if stamp.name == DEFAULT_MODEL_HUB_ID else stamp.name, **options)
    if stamp.probe is None:
        logger.warning("%s names its model (%s) without a fingerprint: the model is not checked", source, stamp.name)
        return encoder
    given = stamp_of(encoder)
    if not stamp.matches(given):
        raise ValueError(
            f"{source} was embedded with {stamp.name} (revision {stamp.revision}), but the model given, {given.name} "
            f"(revision {given.revision}), embeds a probe paper differently (another model, format or settings): "
            f"leave the model out to use {stamp.name}, or embed the papers again with {given.name}"
        )
    return encoder
