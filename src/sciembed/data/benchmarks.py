"""Load a dataset folder that ``datasets_scripts/`` built, checking it against its layout.

Every builder in ``datasets_scripts/`` turns a raw release into a folder of Parquet files, one folder
per config, and a ``README.md`` whose YAML ``configs:`` block names each config's split files: the
layout the Hub serves and ``datasets.load_dataset(folder_or_hub_id, config)`` reads (datasets 5 runs
no loading scripts). A :class:`~.layouts.DatasetLayout` fixes the config names and the columns each
config holds, so the builders write and :func:`load_benchmark` checks the same schema. Each evaluation
benchmark's layout is on its class in ``sciembed.evaluation.benchmarks``. The training sets' layouts are in
:mod:`.layouts`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets import DatasetDict

from .hub_datasets import load_hub_dataset
from .layouts import DatasetLayout, layout_named

logger = logging.getLogger(__name__)


class BenchmarkSourceError(OSError):
    """The source of a benchmark cannot be reached or read.

    The Hub may be offline, a folder missing, or its layout wrong.
    """


@dataclass
class LoadedDataset:
    """One loaded dataset folder: config name -> ``DatasetDict`` of its splits."""

    name: str
    source: str
    configs: dict[str, DatasetDict] = field(default_factory=dict)

    def __getitem__(self, config: str) -> DatasetDict:
        try:
            return self.configs[config]
        except KeyError:
            raise KeyError(f"{self.source}: no config {config!r} loaded; loaded: {', '.join(self.configs)}") from None

    def __contains__(self, config: object) -> bool:
        return config in self.configs

    def sizes(self) -> dict[str, dict[str, int]]:
        """Rows per config and split."""
        return {name: {split: len(data) for split, data in splits.items()} for name, splits in self.configs.items()}


def load_benchmark(
    layout: DatasetLayout | str,
    source: str | os.PathLike[str],
    configs: Iterable[str] | str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> LoadedDataset:
    """Load a dataset folder built by ``datasets_scripts/`` from a Hub id or a local folder.

    Everything goes through ``datasets.load_dataset``, so a Hub copy and a local copy of the same
    folder load identically (tests use local folders offline).

    Args:
        layout: the folder's layout, such as ``SciDocs.layout``, or the name of a registered one
            (:data:`~.layouts.DATASET_LAYOUTS`: ``scidocs``, ``multi_scidocs``, ``scirepeval``, ``beir``,
            ``cocitation`` once ``sciembed.evaluation`` is imported, and ``specter_triplets``).
        source: a local folder holding ``README.md`` with YAML ``configs:``, or a Hub dataset id.
        configs: the configs to load (one name or several). By default every config of the source.
        cache_dir: forwarded to ``datasets``.

    Raises:
        ValueError: an unknown layout name (the registered ones are named). A config the benchmark does not
            have, or a config lacking one of its columns (source, config and columns named). A
            requested config absent from the source (the available ones are named).
        BenchmarkSourceError: a path-like source that does not exist, or a Hub id that cannot be
            reached (e.g. with ``HF_HUB_OFFLINE=1`` and nothing cached). Never a silent fallback.
    """
    spec = layout_named(layout) if isinstance(layout, str) else layout
    name = spec.name
    location = _resolve(source)
    try:
        available = datasets.get_dataset_config_names(location)
    except (ConnectionError, FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as error:
        raise BenchmarkSourceError(_unreachable(name, location, error)) from error

    wanted = list(available) if configs is None else ([configs] if isinstance(configs, str) else list(configs))
    absent = [c for c in wanted if c not in available]
    if absent:
        raise ValueError(
            f"{location}: no config(s) {absent} in this {name} dataset; available: {', '.join(available)}"
        )
    unexpected = [c for c in available if spec.columns_for(c) is None]
    if unexpected:
        raise ValueError(f"{location}: config(s) {unexpected} are not part of {name} ({spec.description})")
    if configs is None:
        for pattern in spec.required:
            if not any(fnmatch.fnmatchcase(c, pattern) for c in available):
                raise ValueError(
                    f"{location}: a {name} dataset needs a config {pattern!r}; found {', '.join(available)} (built "
                    "with datasets_scripts/?)"
                )

    benchmark = LoadedDataset(name, location)
    for config in wanted:
        try:
            loaded = load_hub_dataset(location, config, cache_dir=cache_dir)
        except ConnectionError as error:
            raise BenchmarkSourceError(_unreachable(name, location, error)) from error
        required = spec.columns_for(config) or ()
        for split, data in loaded.items():
            missing = [c for c in required if c not in data.column_names]
            if missing:
                raise ValueError(
                    f"{location}: config {config!r}, split {split!r} lacks column(s) {missing}; {name} needs "
                    f"{list(required)}, found {data.column_names}"
                )
        benchmark.configs[config] = loaded
    logger.info("%s from %s: %s", name, location, benchmark.sizes())
    return benchmark


def _resolve(source: str | os.PathLike[str]) -> str:
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "README.md").is_file():
            raise BenchmarkSourceError(
                f"{path}: no README.md with YAML 'configs:' (build the folder with datasets_scripts/)"
            )
        return str(path)
    text = str(source)
    # A Hub id is "name" or "owner/name"; anything else that looks like a path is a missing folder.
    if (
        isinstance(source, os.PathLike)
        or text.startswith((".", "/", "~"))
        or text.count("/") > 1
        or os.sep in text.replace("/", "")
    ):
        raise BenchmarkSourceError(f"{source}: no such folder (and not a Hub dataset id 'owner/name')")
    return text


def _unreachable(name: str, location: str, error: Exception) -> str:
    offline = datasets.config.HF_HUB_OFFLINE
    hint = (
        " The Hub is disabled (HF_HUB_OFFLINE=1) and the dataset is not in the local cache; "
        "unset it, or pass a local folder."
        if offline
        else ""
    )
    return (
        f"cannot load {name} from {location!r}: not a local folder, and the Hub dataset could not be read "
        f"({error}).{hint}"
    )
