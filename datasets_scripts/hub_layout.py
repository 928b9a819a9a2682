"""What every builder in ``datasets_scripts/`` shares: the Hub folder layout, the dataset card, the CLI bits.

A built folder holds ``<config>/<split>.parquet`` for every config and a ``README.md`` whose YAML
front matter lists them under ``configs:`` (the "manual configuration" of the Hub's dataset docs), so
``datasets.load_dataset(folder, config)`` reads it offline and the Hub serves it once pushed. Only
Parquet is written: datasets 5.0.1 cannot mix Parquet and JSON across the configs of one local repo.
The card is rendered offline with ``huggingface_hub.DatasetCard.from_template`` from
``hub_cards/dataset_card.md``.

The folder is filled in a hidden temporary sibling and renamed into place only when complete, so an
interrupted build never leaves a folder that looks finished.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset
from huggingface_hub import DatasetCard, DatasetCardData

import sciembed

logger = logging.getLogger("sciembed.datasets_scripts")

TEMPLATE = Path(__file__).resolve().parents[1] / "hub_cards" / "dataset_card.md"

#: Licence left in the card when the builder does not know the upstream licence (Hub metadata value).
UNKNOWN_LICENSE = "unknown"


@dataclass
class CardInfo:
    """What the dataset card says beyond the sizes and fields, which are read from the data itself.

    Attributes:
        benchmark: the name of its :class:`sciembed.data.layouts.DatasetLayout` (written to the card's YAML as
            ``sciembed_benchmark``, so a reader can tell what the folder holds).
        pretty_name: the card's title.
        summary: one paragraph: what the benchmark is, with the paper.
        source: where the raw release came from (repository, Hub id or folder).
        license: a Hub licence id, or :data:`UNKNOWN_LICENSE` when it is not known.
        license_note: the provenance of the licence, or what to check when it is unknown.
        how_built: how the builder turned the release into this folder (the rules applied).
        counts: what was read, skipped or sampled (from the readers' and samplers' stats).
        citation: BibTeX-free text naming the paper(s) to cite.
        tags: extra Hub tags.
    """

    benchmark: str
    pretty_name: str
    summary: str
    source: str
    license: str
    license_note: str
    how_built: str
    counts: Mapping[str, Any] = field(default_factory=dict)
    citation: str = ""
    tags: Sequence[str] = ()


def build_parser(script: str, description: str, *, epilog: str = "") -> argparse.ArgumentParser:
    """An argparse parser with the options every builder shares (``--out``, ``--overwrite``, ``--license``...).

    ``script`` is the builder's ``__file__``, so ``--help`` shows the command to type.
    """
    parser = argparse.ArgumentParser(
        prog=f"python datasets_scripts/{Path(script).name}",
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        help="folder to write (Parquet files + README.md dataset card); created atomically",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT if it exists (the old folder is removed only after the new one is complete)",
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip bad records (counted in the log and the card) instead of stopping at the first",
    )
    parser.add_argument(
        "--license",
        default=None,
        help="Hub licence id for the card (e.g. apache-2.0, odc-by, cc-by-4.0); overrides the builder's default",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="logging level (default INFO)",
    )
    return parser


def configure_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level), format="%(levelname)s %(name)s: %(message)s")


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket for a row count."""
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
    ):
        if rows < limit:
            return name
    return "100M<n<1B"


def write_hub_folder(
    out: Path, configs: Mapping[str, Mapping[str, Dataset]], card: CardInfo, *, overwrite: bool = False
) -> Path:
    """Write ``configs`` (config -> split -> Dataset) as Parquet plus a rendered card, atomically, to ``out``.

    Raises:
        FileExistsError: ``out`` exists and ``overwrite`` is false (checked before anything is written).
        ValueError: no configs, an empty config, or a config / split name the Hub would refuse.
    """
    out = Path(out)
    check_out(out, overwrite)
    if not configs or any(not splits for splits in configs.values()):
        raise ValueError(f"{out}: nothing to write (configs {dict((c, list(s)) for c, s in configs.items())})")
    with _staging(out) as staging:
        yaml_configs, sizes, fields, total = [], [], [], 0
        for config, splits in configs.items():
            _check_name(config, "config")
            data_files = []
            for split, data in splits.items():
                _check_name(split, "split")
                relative = f"{config}/{split}.parquet"
                (staging / config).mkdir(exist_ok=True)
                data.to_parquet(str(staging / relative))
                data_files.append({"split": split, "path": relative})
                sizes.append(
                    {"config": config, "split": split, "rows": len(data), "bytes": (staging / relative).stat().st_size}
                )
                total += len(data)
            yaml_configs.append({"config_name": config, "data_files": data_files})
            first = next(iter(splits.values()))
            fields.append(
                {"config": config, "columns": [(name, _describe(feature)) for name, feature in first.features.items()]}
            )
        card_data = DatasetCardData(
            license=card.license if card.license != UNKNOWN_LICENSE else "other",
            pretty_name=card.pretty_name,
            size_categories=[size_category(total)],
            tags=["sciembed", "scientific-documents", card.benchmark, *card.tags],
            configs=yaml_configs,
            sciembed_benchmark=card.benchmark,
            sciembed_version=sciembed.__version__,
        )
        rendered = DatasetCard.from_template(
            card_data,
            template_path=str(TEMPLATE),
            card=card,
            sizes=sizes,
            fields=fields,
            total_rows=total,
            license_known=card.license != UNKNOWN_LICENSE,
            sciembed_version=sciembed.__version__,
        )
        rendered.save(staging / "README.md")
    logger.info(
        "wrote %s: %d config(s), %d row(s): %s",
        out,
        len(configs),
        total,
        {s["config"] + "/" + s["split"]: s["rows"] for s in sizes},
    )
    return out


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse an existing ``out`` before any work is done, unless ``overwrite``."""
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")


@contextmanager
def _staging(out: Path) -> Iterator[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        yield staging
        old = None
        if out.exists():
            # Move the old folder aside first: at every moment OUT is either the old or the new build.
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
            os.replace(out, old / "previous")
        os.replace(staging, out)
        if old is not None:
            shutil.rmtree(old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_name(name: str, what: str) -> None:
    # The Hub and datasets accept split names matching \w+(\.\w+)*; keep configs to the same safe set.
    if not name.replace("_", "a").replace("-", "a").isalnum():
        raise ValueError(f"{what} name {name!r} must hold only letters, digits, '_' and '-'")


def _describe(feature: Any) -> str:
    """A short type name for the card's field table (``string``, ``int64``, ``list<struct>``...)."""
    dtype = getattr(feature, "dtype", None)
    if isinstance(dtype, str) and dtype != "list":
        return dtype
    if isinstance(feature, dict):
        return "struct{" + ", ".join(f"{k}: {_describe(v)}" for k, v in feature.items()) + "}"
    inner = getattr(feature, "feature", None)
    if inner is not None:
        return f"list<{_describe(inner)}>"
    return type(feature).__name__
