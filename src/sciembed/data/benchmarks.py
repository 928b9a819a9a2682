"""Benchmarks as Hugging Face datasets: the layout ``datasets_scripts/`` writes, and :func:`load_benchmark`.

Every builder in ``datasets_scripts/`` turns a raw release into a folder of Parquet files, one folder
per config, and a ``README.md`` whose YAML ``configs:`` block names each config's split files: the
layout the Hub serves and ``datasets.load_dataset(folder_or_hub_id, config)`` reads (datasets 5 runs
no loading scripts). :data:`BENCHMARKS` fixes, per benchmark, the config names and the columns each
config holds, so the builders write and :func:`load_benchmark` checks the same schema, and the same
call serves training (``specter_triplets``, ``cocitation`` ``train``) and evaluation (everything else).

Config layout per benchmark (columns in brackets):

- ``scidocs`` / ``multi_scidocs``: ``papers_view_cite_read``, ``papers_mag_mesh``, ``papers_recomm``
  (split ``evaluation``: paper_id, title, abstract). ``cite``, ``cocite``, ``coview``, ``coread``
  (``val`` / ``test``: query_id, cand_id, score). ``mag``, ``mesh`` (``train`` / ``val`` / ``test``:
  paper_id, label). Multi-SciDocs is written in SciDocs' layout, so it has the same configs.
- ``scirepeval``: ``meta_<metadata config>`` (split ``evaluation``, as allenai/scirepeval ships it),
  ``<task>`` (the labels or qrels of allenai/scirepeval_test, as shipped) and optionally
  ``train_<fos|mesh|specter|search>`` (the training-sample formats, split ``train``).
- ``specter_triplets``: ``triplets`` (``train`` / ``val`` / ``test``: query_id, positive_id,
  negative_id, hard) and ``papers`` (split ``train``: paper_id, title, abstract).
- ``cocitation``: one config per domain (``default`` for one set): a, b, label.
- ``beir``: ``corpus`` (paper_id, title, abstract), ``queries`` (query_id, text), ``qrels``
  (one split per ``qrels/<split>.tsv``: query_id, cand_id, score).
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

logger = logging.getLogger(__name__)

PAPER_COLUMNS = ("paper_id", "title", "abstract")
QREL_COLUMNS = ("query_id", "cand_id", "score")
TRIPLET_COLUMNS = ("query_id", "positive_id", "negative_id", "hard")
PAIR_COLUMNS = ("a", "b", "label")
#: Split name for the papers (or queries and candidates) to embed, as allenai/scirepeval names it.
EVALUATION_SPLIT = "evaluation"


@dataclass(frozen=True)
class BenchmarkSpec:
    """The configs a benchmark's folder may hold (fnmatch patterns, first match wins) and their columns.

    Attributes:
        name: the benchmark name passed to :func:`load_benchmark`.
        description: one line for error messages and cards.
        configs: ``(pattern, required columns)`` pairs. A config matching no pattern is refused.
        required: patterns of which at least one config each must be present.
    """

    name: str
    description: str
    configs: tuple[tuple[str, tuple[str, ...]], ...]
    required: tuple[str, ...] = ()

    def columns_for(self, config: str) -> tuple[str, ...] | None:
        """The columns a config must hold, or ``None`` when the benchmark has no such config."""
        return next((columns for pattern, columns in self.configs if fnmatch.fnmatchcase(config, pattern)), None)


_SCIDOCS_CONFIGS = (
    ("papers_*", PAPER_COLUMNS),
    *((task, QREL_COLUMNS) for task in ("cite", "cocite", "coview", "coread")),
    *((task, ("paper_id", "label")) for task in ("mag", "mesh")),
)

BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec("scidocs", "SciDocs (Cohan et al. 2020) in its release layout", _SCIDOCS_CONFIGS, ("papers_*",)),
        BenchmarkSpec(
            "multi_scidocs",
            "Multi-SciDocs: multi-domain cite / co-cite in SciDocs' layout",
            _SCIDOCS_CONFIGS,
            ("papers_*",),
        ),
        BenchmarkSpec(
            "scirepeval",
            "SciRepEval (Singh et al. 2023) metadata and test labels",
            (("meta_*", ()), ("train_*", ()), ("*", ())),
            ("meta_*",),
        ),
        BenchmarkSpec(
            "specter_triplets",
            "SPECTER / SPECTROID training triplets from a citation graph",
            (("triplets", TRIPLET_COLUMNS), ("papers", PAPER_COLUMNS)),
            ("triplets", "papers"),
        ),
        BenchmarkSpec(
            "cocitation", "co-citation pair sets (MoE paper, Hallee, Kapur et al. 2024)", (("*", PAIR_COLUMNS),)
        ),
        BenchmarkSpec(
            "beir",
            "BEIR-layout ad-hoc search (corpus, queries, qrels)",
            (("corpus", PAPER_COLUMNS), ("queries", ("query_id", "text")), ("qrels", QREL_COLUMNS)),
            ("corpus", "queries", "qrels"),
        ),
    )
}


class BenchmarkSourceError(OSError):
    """The source of a benchmark cannot be reached or read (offline Hub, missing folder, wrong layout)."""


@dataclass
class Benchmark:
    """One loaded benchmark: config name -> ``DatasetDict`` of its splits."""

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
    name: str,
    source: str | os.PathLike[str],
    configs: Iterable[str] | str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Benchmark:
    """Load a benchmark built by ``datasets_scripts/`` from a Hub id or a local folder.

    Everything goes through ``datasets.load_dataset``, so a Hub copy and a local copy of the same
    folder load identically (tests use local folders offline).

    Args:
        name: one of :data:`BENCHMARKS` (``scidocs``, ``multi_scidocs``, ``scirepeval``,
            ``specter_triplets``, ``cocitation``, ``beir``).
        source: a local folder holding ``README.md`` with YAML ``configs:``, or a Hub dataset id.
        configs: the configs to load (one name or several). By default every config of the source.
        cache_dir: forwarded to ``datasets``.

    Raises:
        ValueError: an unknown benchmark (the supported ones are named). A config the benchmark does not
            have, or a config lacking one of its columns (source, config and columns named). A
            requested config absent from the source (the available ones are named).
        BenchmarkSourceError: a path-like source that does not exist, or a Hub id that cannot be
            reached (e.g. with ``HF_HUB_OFFLINE=1`` and nothing cached). Never a silent fallback.
    """
    spec = BENCHMARKS.get(name)
    if spec is None:
        raise ValueError(f"unknown benchmark {name!r}; supported: {', '.join(BENCHMARKS)}")
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

    benchmark = Benchmark(name, location)
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
