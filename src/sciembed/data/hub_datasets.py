"""``datasets.load_dataset`` for a Hub id or a local folder, without stale local caches.

The local folder is in the Hub layout.

datasets 5.0.1 keys its Arrow cache of a local folder by the folder's name and card, not by the files'
contents: a second folder of the same name (a rebuilt benchmark, another copy of SciDocs) silently
loads the first one's rows. Measured here: folders ``a/x`` (2 rows) and ``b/x`` (3 rows) with equal
README.md both load 2 rows. Local folders therefore get a cache directory of their own, named by a
fingerprint of their files' paths, sizes and modification times. Hub ids keep datasets' own cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import datasets


def load_hub_dataset(
    source: str | os.PathLike[str],
    config: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
):
    """``datasets.load_dataset(source, config, ...)`` with a per-contents cache for local folders."""
    return datasets.load_dataset(str(source), config, cache_dir=_cache_dir(source, cache_dir), **kwargs)


def _cache_dir(source: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None) -> str | None:
    folder = Path(source).expanduser()
    if not folder.is_dir():
        return str(cache_dir) if cache_dir is not None else None
    digest = hashlib.sha1(str(folder.resolve()).encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    root = Path(cache_dir) if cache_dir is not None else Path(datasets.config.HF_DATASETS_CACHE)
    return str(root / "sciembed-local" / digest.hexdigest()[:16])
