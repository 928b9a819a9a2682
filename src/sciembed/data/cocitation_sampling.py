"""Co-citation pair sets built from a citation graph, by the rules of the MoE paper.

Hallee, Kapur et al. 2024 (arXiv:2401.15713, "Mixture of Experts ... sentence similarity"), data section:

- a **positive** pair is two papers cited together by a third paper (co-citation), and the training
  split repeats each pair once per co-citing paper ("duplicated by co-citation frequency").
- an **evaluation negative** is a pair of papers that are never co-cited, where each paper is cited
  at least 15 times (so "never co-cited" is informative rather than an accident of obscurity).
- the **test** split holds the pairs that contain a paper of the most recent publication year, so a
  model is tested on papers newer than everything it trained on.

The output has the Hub layout of the paper's datasets (``GleghornLab/abstract_domain_*``, built by
``data_compilation/to_HF.ipynb`` of Gleghorn-Lab/Mixture-of-Experts-Sentence-Similarity): splits
``train`` / ``valid`` / ``test`` with columns ``a``, ``b`` (the two abstracts) and ``label`` (1 co-cited,
0 negative). The paper's ``clean_datasets.py`` keeps only citations between papers of the corpus and
drops papers without an abstract, which is what happens here too (papers without an abstract are never
emitted, they may still be the *co-citing* paper). By default two extra columns ``a_id`` / ``b_id`` keep
the paper ids (``with_ids=False`` gives exactly the Hub columns). :func:`write_cocitation_pairs` writes
Parquet files plus a README whose ``configs:`` names the splits, so
:func:`sciembed.data.cocitation.load_cocitation_pairs` reads the folder back.

Choices the paper leaves open, made here and configurable in :class:`CocitationConfig`: ``valid`` is a
random ``valid_fraction`` of the co-cited pairs without a recent paper (held out from ``train``).
``valid`` and ``test`` hold each co-cited pair once, plus ``negatives_per_positive`` negatives per
positive. Test negatives contain a recent paper too (the split rule holds for every test row), valid
and train rows contain none. Papers without a year are never "recent" (counted).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict, Features, Value

from ..io import atomic_path
from .graph import CitationGraph
from .s2orc import read_s2orc

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
#: Enumerate all candidate negative pairs when there are at most this many; sample by rejection otherwise.
_ENUMERATE_LIMIT = 4_000_000
_REJECTION_ROUNDS = 20


@dataclass(frozen=True)
class CocitationConfig:
    """Settings of :func:`build_cocitation_pairs` (defaults: the MoE paper's rules).

    Attributes:
        min_citations: each paper of an evaluation negative is cited at least this often (paper: 15).
        test_from_year: pairs with a paper published in or after this year go to ``test``. ``None``
            means the most recent year among the papers with an abstract (the paper's rule).
        valid_fraction: share of the non-test co-cited pairs held out for ``valid``.
        negatives_per_positive: negatives added to ``valid`` / ``test`` per positive pair.
        max_repeats: cap on the repeats of one pair in ``train`` (``None``: the co-citation count).
        text_field: the paper column used as text (``abstract``, as the Hub sets).
        with_ids: add ``a_id`` / ``b_id`` columns.
        seed: seeds every random choice (valid hold-out, negatives, row order).
    """

    min_citations: int = 15
    test_from_year: int | None = None
    valid_fraction: float = 0.1
    negatives_per_positive: float = 1.0
    max_repeats: int | None = None
    text_field: str = "abstract"
    with_ids: bool = True
    seed: int = 0

    def __post_init__(self):
        if self.min_citations < 1:
            raise ValueError(f"min_citations must be >= 1, got {self.min_citations}")
        if not 0.0 <= self.valid_fraction < 1.0:
            raise ValueError(f"valid_fraction must lie in [0, 1), got {self.valid_fraction}")
        if self.negatives_per_positive < 0:
            raise ValueError(f"negatives_per_positive must be >= 0, got {self.negatives_per_positive}")
        if self.max_repeats is not None and self.max_repeats < 1:
            raise ValueError(f"max_repeats must be >= 1 or None, got {self.max_repeats}")


@dataclass
class CocitationPairSet:
    """The splits, the year that starts ``test``, and the counts of what was kept.

    The counts also say what was dropped or short.
    """

    pairs: DatasetDict
    test_from_year: int | None
    config: CocitationConfig
    stats: Counter = field(default_factory=Counter)


def build_cocitation_pairs(
    graph: CitationGraph, papers: Dataset, config: CocitationConfig | None = None
) -> CocitationPairSet:
    """Co-citation pairs of ``graph`` with the texts of ``papers``.

    The module docstring gives the rules.

    Args:
        graph: the citation graph. co-citations are counted over all its papers, also those without text.
        papers: records with ``paper_id``, the ``config.text_field`` column and ``year`` (e.g.
            :attr:`S2orcPapers.papers`). Papers of the graph absent here, or with an empty text, never
            appear in a pair (counted as ``pairs_without_text``).
        config: the rules' settings.
    """
    config = config or CocitationConfig()
    for column in ("paper_id", config.text_field, "year"):
        if column not in papers.column_names:
            raise ValueError(f"papers need a {column!r} column (have {papers.column_names})")
    rng = np.random.default_rng(config.seed)
    stats: Counter = Counter()
    n = graph.num_papers

    # Per graph index: text and year from the records (papers not in the graph are counted and ignored).
    position = graph.ids.positions(papers["paper_id"])
    in_graph = position >= 0
    stats["papers_not_in_graph"] = int(np.count_nonzero(~in_graph))
    index = position[in_graph].astype(np.int64)
    texts = np.full(n, "", dtype=object)
    texts[index] = [(t or "").strip() for t, keep in zip(papers[config.text_field], in_graph) if keep]
    years = np.full(n, -1, dtype=np.int64)
    years[index] = [(-1 if y is None else int(y)) for y, keep in zip(papers["year"], in_graph) if keep]
    usable = (texts != "") & graph.has_text
    stats["papers_with_text"] = int(usable.sum())
    stats["usable_papers_without_year"] = int(np.count_nonzero(usable & (years < 0)))

    test_from = config.test_from_year
    if test_from is None:
        known = years[usable & (years >= 0)]
        test_from = int(known.max()) if len(known) else None
    recent = (years >= test_from) if test_from is not None else np.zeros(n, dtype=bool)

    # Co-cited pairs, each once (upper triangle), with their frequency.
    a, b, freq = graph.cocited_pairs()
    stats["cocited_pairs"] = len(a)
    # Every co-cited pair (also those without text, a < b), so negatives stay out of all of them.
    cocited_keys = np.sort(a * n + b)
    keep = usable[a] & usable[b]
    stats["pairs_without_text"] = int(np.count_nonzero(~keep))
    a, b, freq = a[keep], b[keep], freq[keep]

    is_test = recent[a] | recent[b]
    held = np.flatnonzero(~is_test)
    valid_mask = np.zeros(len(a), dtype=bool)
    valid_mask[rng.permutation(held)[: int(round(config.valid_fraction * len(held)))]] = True
    train_mask = ~is_test & ~valid_mask

    repeats = freq[train_mask] if config.max_repeats is None else np.minimum(freq[train_mask], config.max_repeats)
    stats["train_repeats_capped"] = int(np.count_nonzero(freq[train_mask] > repeats))
    split_pairs = {
        "train": (np.repeat(a[train_mask], repeats), np.repeat(b[train_mask], repeats)),
        "valid": (a[valid_mask], b[valid_mask]),
        "test": (a[is_test], b[is_test]),
    }
    stats["train_unique_pairs"] = int(train_mask.sum())

    # Negative pools: papers with text cited at least min_citations times; test ones hold a recent paper.
    eligible = usable & (graph.in_degree >= config.min_citations)
    stats["negative_pool"] = int(eligible.sum())
    stats["negative_pool_recent"] = int(np.count_nonzero(eligible & recent))
    old_pool, recent_pool, all_pool = (
        np.flatnonzero(eligible & ~recent),
        np.flatnonzero(eligible & recent),
        np.flatnonzero(eligible),
    )
    negatives = {
        "valid": _non_cocited_pairs(
            old_pool, old_pool, _wanted(len(split_pairs["valid"][0]), config), cocited_keys, n, rng
        ),
        "test": _non_cocited_pairs(
            recent_pool, all_pool, _wanted(len(split_pairs["test"][0]), config), cocited_keys, n, rng
        ),
    }

    splits = {}
    for split in SPLITS:
        first, second = split_pairs[split]
        labels = np.ones(len(first), dtype=np.int64)
        if split in negatives:
            wanted = _wanted(len(first), config)
            neg_a, neg_b = negatives[split]
            stats[f"{split}_negatives_short"] = wanted - len(neg_a)
            first, second = np.concatenate([first, neg_a]), np.concatenate([second, neg_b])
            labels = np.concatenate([labels, np.zeros(len(neg_a), dtype=np.int64)])
        order = rng.permutation(len(first))  # shuffled rows: in-batch negatives need mixed batches
        first, second, labels = first[order], second[order], labels[order]
        stats[f"{split}_rows"] = len(first)
        stats[f"{split}_positive"] = int(labels.sum())
        columns = {"a": texts[first].tolist(), "b": texts[second].tolist(), "label": labels.tolist()}
        features = {"a": Value("string"), "b": Value("string"), "label": Value("int64")}
        if config.with_ids:
            columns |= {"a_id": graph.ids[first].tolist(), "b_id": graph.ids[second].tolist()}
            features |= {"a_id": Value("string"), "b_id": Value("string")}
        splits[split] = Dataset.from_dict(columns, features=Features(features))

    short = {k: v for k, v in stats.items() if k.endswith("_short") and v}
    if short:
        logger.warning(
            "co-citation pairs: too few never-co-cited pairs of papers cited >= %d times: %s",
            config.min_citations,
            short,
        )
    if stats["usable_papers_without_year"]:
        logger.info(
            "co-citation pairs: %d paper(s) with text have no year and never count as recent",
            stats["usable_papers_without_year"],
        )
    logger.info("co-citation pairs (test from year %s): %s", test_from, dict(stats))
    return CocitationPairSet(DatasetDict(splits), test_from, config, stats)


def cocitation_pairs_from_s2orc(
    path: str | os.PathLike[str], config: CocitationConfig | None = None, *, skip_invalid: bool = True
) -> CocitationPairSet:
    """Read S2ORC metadata (:func:`~sciembed.data.s2orc.read_s2orc`) and build its co-citation pairs.

    Every listed citation counts, also those from papers outside the file: a co-citing paper needs no
    record of its own (the paired papers do need an abstract).
    """
    s2orc = read_s2orc(path, skip_invalid=skip_invalid)
    graph = CitationGraph.from_edges(s2orc.citing, s2orc.cited, papers_with_text=s2orc.papers["paper_id"])
    result = build_cocitation_pairs(graph, s2orc.papers, config)
    result.stats["s2orc_records_skipped"] = len(s2orc.skipped)
    return result


def write_cocitation_pairs(pairs: DatasetDict | CocitationPairSet, folder: str | os.PathLike[str]) -> Path:
    """Write ``<split>.parquet`` per split and a README.md with ``configs:`` naming them, each atomically.

    ``datasets.load_dataset(folder)`` (and so :func:`~sciembed.data.cocitation.load_cocitation_pairs`)
    then returns the splits under their own names (``valid`` stays ``valid``).
    """
    if isinstance(pairs, CocitationPairSet):
        pairs = pairs.pairs
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for split, data in pairs.items():
        with atomic_path(folder / f"{split}.parquet") as temporary:
            data.to_parquet(str(temporary))
    files = "".join(f"  - split: {split}\n    path: {split}.parquet\n" for split in pairs)
    card = (
        f"---\nconfigs:\n- config_name: default\n  data_files:\n{files}---\n\nCo-citation pairs (columns a, b, label) "
        "built by sciembed.data.cocitation_sampling.\n"
    )
    with atomic_path(folder / "README.md") as temporary:
        temporary.write_text(card, encoding="utf-8")
    return folder


# ---------------------------------------------------------------------- helpers


def _wanted(positives: int, config: CocitationConfig) -> int:
    return int(round(positives * config.negatives_per_positive))


def _non_cocited_pairs(
    first: np.ndarray, second: np.ndarray, count: int, cocited_keys: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``count`` distinct unordered pairs that were never co-cited.

    Each pair has x in ``first`` and y in ``second``, with x != y. Small pools are enumerated exactly (so a
    shortfall is real, not bad luck). Large ones are sampled by rejection in vectorised rounds.
    """
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if count <= 0 or len(first) == 0 or len(second) == 0:
        return empty
    if len(first) * len(second) <= _ENUMERATE_LIMIT:
        keys = _valid_keys(np.repeat(first, len(second)), np.tile(second, len(first)), cocited_keys, n)
        keys = keys[rng.permutation(len(keys))[:count]]
    else:
        keys = np.zeros(0, np.int64)
        for _ in range(_REJECTION_ROUNDS):
            draw = 2 * (count - len(keys)) + 16
            found = _valid_keys(rng.choice(first, draw), rng.choice(second, draw), cocited_keys, n)
            keys = np.concatenate([keys, found[~np.isin(found, keys)]])
            if len(keys) >= count:
                break
        keys = keys[:count]
    return np.divmod(keys, n)


def _valid_keys(x: np.ndarray, y: np.ndarray, cocited_keys: np.ndarray, n: int) -> np.ndarray:
    """Unique keys ``min*n + max`` of the pairs with x != y, in first-seen order.

    Keys in ``cocited_keys`` are left out.
    """
    x, y = x.astype(np.int64), y.astype(np.int64)
    distinct = x != y
    keys = np.minimum(x, y)[distinct] * n + np.maximum(x, y)[distinct]
    _, first = np.unique(keys, return_index=True)
    keys = keys[np.sort(first)]
    position = np.searchsorted(cocited_keys, keys)
    hit = (
        cocited_keys[np.minimum(position, len(cocited_keys) - 1)] == keys
        if len(cocited_keys)
        else np.zeros(len(keys), bool)
    )
    return keys[~hit]
