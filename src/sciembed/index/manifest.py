"""An index folder's manifest: what the index is, how it was tuned, its files.

Every file is listed with its size and sha256.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..io import atomic_path, file_sha256, load_json_file
from .settings import IndexKind, disk_bytes_per_paper, ram_bytes_per_paper

MANIFEST_FILE = "manifest.json"
#: The layout of index folders this sciembed reads and writes.
FORMAT_VERSION = 1


@dataclass
class Manifest:
    """What ``manifest.json`` holds.

    Attributes:
        kind: ``exact``, ``int8``, ``binary`` or ``pq``.
        factory: the faiss factory string of the index file.
        dim: the vectors' dimension.
        papers: papers indexed.
        metric: always ``inner_product`` (on unit vectors: cosine).
        normalised: vectors are scaled to unit length before indexing, and queries too.
        centred: binary codes are taken of vectors minus the collection's mean (``mean.npy``).
        multiplier: candidates per result that are rescored (binary, pq).
        nprobe: IVF cells probed per query.
        recall: recall@10 against an exact search measured on held-out papers at the tuned settings.
        recall_lower_bound: the lower confidence bound of ``recall`` that tuning compared with the target.
        confidence: the confidence of that bound.
        tuning_queries: the held-out papers ``recall`` was measured on.
        target_recall: the recall tuning had to reach.
        tuned_papers: papers in the index when it was tuned.
        model: the model that embedded the papers, as a :class:`~sciembed.index.model.ModelStamp` dict, if known.
        seed: the seed of the samples, k-means and tuning queries.
        faiss_version, sciembed_version: the versions that wrote the index.
        files: ``{name: {"bytes": n, "sha256": hex}}`` for every file but the manifest.
        format_version: the index folder's layout.
    """

    kind: IndexKind
    factory: str
    dim: int
    papers: int
    seed: int
    target_recall: float
    metric: str = "inner_product"
    normalised: bool = True
    centred: bool = False
    multiplier: int = 1
    nprobe: int | None = None
    recall: float | None = None
    recall_lower_bound: float | None = None
    confidence: float | None = None
    tuning_queries: int = 0
    tuned_papers: int = 0
    model: dict[str, Any] | None = None
    faiss_version: str = ""
    sciembed_version: str = ""
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        self.kind = IndexKind(self.kind)

    @property
    def pq_m(self) -> int | None:
        """The sub-quantizers of a ``pq`` index, read from its factory string."""
        found = re.search(r"PQ(\d+)", self.factory)
        return int(found.group(1)) if found else None

    @property
    def recall_bounded(self) -> bool | None:
        """Whether the lower bound of recall@10 reaches the target (``None``: no bound was stored)."""
        if self.recall_lower_bound is None:
            return None
        return self.recall_lower_bound >= self.target_recall

    @property
    def ivf(self) -> bool:
        """Whether the index file is an inverted file, read from its factory string."""
        return self.factory.startswith("IVF")

    def bytes_per_paper(self) -> tuple[float, float]:
        """Bytes one paper takes in RAM and on disk (:func:`~sciembed.index.settings.ram_bytes_per_paper`)."""
        return (
            ram_bytes_per_paper(self.kind, self.dim, self.ivf, self.pq_m),
            disk_bytes_per_paper(self.kind, self.dim, self.ivf, self.pq_m),
        )

    def write(self, folder: str | os.PathLike[str]) -> None:
        """Hash every file of ``folder`` into :attr:`files`, then write the manifest there atomically."""
        folder = Path(folder)
        self.files = {
            path.name: {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
            for path in sorted(folder.iterdir())
            if path.is_file() and path.name != MANIFEST_FILE and not path.name.startswith(".")
        }
        with atomic_path(folder / MANIFEST_FILE) as temporary:
            temporary.write_text(json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True), encoding="utf-8")

    @classmethod
    def read(cls, folder: str | os.PathLike[str]) -> Manifest:
        """The manifest of ``folder``, checked: this format version, and every file present at its size.

        Raises:
            FileNotFoundError: no manifest, or a file it lists is missing.
            ValueError: another format version, an unreadable manifest, or a file of another size.
        """
        folder = Path(folder)
        path = folder / MANIFEST_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"{folder}: no {MANIFEST_FILE}, so not a sciembed index; build one with sciembed index build"
            )
        data = load_json_file(path)
        if not isinstance(data, dict) or "format_version" not in data:
            raise ValueError(f"{path}: not a sciembed index manifest; build the index again (sciembed index build)")
        if data["format_version"] != FORMAT_VERSION:
            raise ValueError(
                f"{path}: index format version {data['format_version']}, this sciembed reads version "
                f"{FORMAT_VERSION}; build the index again with this sciembed (sciembed index build --overwrite)"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        try:
            manifest = cls(**{k: v for k, v in data.items() if k in known})
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: not a complete index manifest ({error}); build the index again") from None
        for name, entry in manifest.files.items():
            file = folder / name
            if not file.is_file():
                raise FileNotFoundError(
                    f"{folder}: {name}, listed in {MANIFEST_FILE}, is missing; build the index again"
                )
            if file.stat().st_size != entry["bytes"]:
                raise ValueError(
                    f"{file}: {file.stat().st_size} bytes where {MANIFEST_FILE} lists {entry['bytes']} (changed or "
                    "cut short); build the index again"
                )
        return manifest

    def verify(self, folder: str | os.PathLike[str]) -> None:
        """Check the sha256 of every file against the manifest.

        Raises:
            ValueError: naming the first file whose bytes changed.
        """
        for name, entry in sorted(self.files.items()):
            if file_sha256(Path(folder) / name) != entry["sha256"]:
                raise ValueError(
                    f"{Path(folder) / name}: its sha256 differs from the one in {MANIFEST_FILE} (the file was changed "
                    "after the index was written); build the index again"
                )
