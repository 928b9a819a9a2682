"""Co-citation pair sets in the Hub format of the MoE paper.

The paper is Hallee, Kapur et al. 2024, arXiv:2401.15713.

Each domain is one Hub dataset (Gleghorn-Lab/Mixture-of-Experts-Sentence-Similarity, ``data/get_data.py``
and ``data_compilation/to_HF.ipynb``) with splits ``train``, ``valid``, ``test`` and columns ``a``, ``b``
(the two abstracts) and ``label`` (1 = the papers are co-cited by a third paper, 0 = a negative pair,
the training split holds co-cited pairs, repeated by co-citation frequency). The same layout is read
from a local folder through ``datasets.load_dataset``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from datasets import DatasetDict

from .hub_datasets import load_hub_dataset
from .papers import InvalidPaperError, PaperProblem

logger = logging.getLogger(__name__)

COLUMNS = ("a", "b", "label")
SPLITS = ("train", "valid", "test")
LABELS = (0, 1)

#: The MoE paper's domains and their Hub datasets (``data/get_data.py`` of the paper's repository).
DOMAIN_DATASETS = {
    "copd": "GleghornLab/abstract_domain_copd",
    "cvd": "GleghornLab/abstract_domain_cvd",
    "cancer": "GleghornLab/abstract_domain_skincancer",
    "parasitic": "GleghornLab/abstract_domain_parasitic",
    "autoimmune": "GleghornLab/abstract_domain_autoimmune",
}


@dataclass
class CocitationPairs:
    """The pair splits, with per-split counts and the rows skipped."""

    source: str
    pairs: DatasetDict
    stats: Counter = field(default_factory=Counter)
    skipped: list[PaperProblem] = field(default_factory=list)


def load_cocitation_pairs(
    source: str | os.PathLike[str],
    *,
    skip_invalid: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CocitationPairs:
    """Loads a co-citation pair set from a Hub id, a domain name or a folder.

    The domain names are those of :data:`DOMAIN_DATASETS`.

    Args:
        source: ``GleghornLab/abstract_domain_cvd``, ``"cvd"``, or a local folder in that layout.
        skip_invalid: drop rows with an empty abstract or a label other than 0 / 1 (counted, logged and
            listed in ``skipped``) instead of raising.
        cache_dir: forwarded to ``datasets.load_dataset``.

    Raises:
        ValueError: a split lacks one of the columns ``a``, ``b``, ``label`` (the columns found are named).
        InvalidPaperError: bad rows (split and row named) and ``skip_invalid`` is false.
    """
    source = DOMAIN_DATASETS.get(str(source), str(source))
    loaded = load_hub_dataset(source, cache_dir=cache_dir)
    stats: Counter = Counter()
    problems: list[PaperProblem] = []
    splits = {}
    for split, data in loaded.items():
        absent = [c for c in COLUMNS if c not in data.column_names]
        if absent:
            raise ValueError(
                f"{source}, split {split!r}: no column(s) {absent}; a co-citation pair set has {list(COLUMNS)}, found "
                f"{data.column_names}"
            )
        a = np.array([text.strip() if isinstance(text, str) else "" for text in data["a"]], dtype=object)
        b = np.array([text.strip() if isinstance(text, str) else "" for text in data["b"]], dtype=object)
        labels = np.array([_label(v) for v in data["label"]], dtype=np.int64)
        bad_label = ~np.isin(labels, LABELS)
        empty = (a == "") | (b == "")
        keep = ~(bad_label | empty)
        for index in np.flatnonzero(~keep):
            reason = (
                f"label must be 0 or 1, got {data[int(index)]['label']!r}"
                if bad_label[index]
                else "empty abstract in a or b"
            )
            problems.append(PaperProblem(source, f"split {split!r}, row {index}", reason))
        stats[f"{split}_pairs"] = len(data)
        stats[f"{split}_positive"] = int(np.count_nonzero(labels[keep] == 1))
        stats[f"{split}_skipped"] = int(np.count_nonzero(~keep))
        # Identical texts are legal (the same abstract can be listed twice) but worth seeing.
        stats[f"{split}_identical_texts"] = int(np.count_nonzero((a == b) & keep))
        splits[split] = data if keep.all() else data.select(np.flatnonzero(keep))
    if problems:
        if not skip_invalid:
            raise InvalidPaperError(problems)
        logger.warning("%s: dropped %d pair(s): %s", source, len(problems), "; ".join(map(str, problems[:10])))
    absent_splits = [s for s in SPLITS if s not in splits]
    if absent_splits:
        logger.info("%s: no %s split(s)", source, ", ".join(absent_splits))
    logger.info("%s: %s", source, dict(stats))
    return CocitationPairs(source, DatasetDict(splits), stats, problems)


def _label(value) -> int:
    # Labels come as int, bool-like float (1.0) or, from CSV, strings; anything else is -1 (reported).
    try:
        number = float(value)
    except (TypeError, ValueError):
        return -1
    return int(number) if number.is_integer() else -1
