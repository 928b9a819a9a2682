"""Co-citation pairs (MoE paper rules) on a synthetic S2ORC file with internal citations and on the real sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import shared_data

from sciembed.data.cocitation import load_cocitation_pairs
from sciembed.data.cocitation_sampling import (
    CocitationConfig,
    build_cocitation_pairs,
    cocitation_pairs_from_s2orc,
    write_cocitation_pairs,
)
from sciembed.data.graph import CitationGraph
from sciembed.data.s2orc import read_s2orc

FIELDS = ["Medicine", "Medicine", "Medicine", "Physics", "Computer Science"]


def write_s2orc_fixture(path: Path, n: int = 120, seed: int = 7) -> Path:
    """S2ORC JSONL with internal citations (listed from both ends), years 2015-2020, MAG fields.

    Two communities (even / odd ids) cite only inside themselves, each with a few heavily cited
    "classic" papers, so some papers cited >= 15 times are never co-cited (negatives exist); p002 and
    p003 (one classic per community) are from 2020, so test negatives exist too. Some papers lack an
    abstract, a year or a field.
    """
    rng = np.random.default_rng(seed)
    outbound = {}
    for i in range(n):
        same = np.arange(i % 2, n, 2)
        weights = 1.0 / (same + 1.0) ** 1.2
        outbound[i] = sorted(set(rng.choice(same, size=6, replace=False, p=weights / weights.sum()).tolist()) - {i})
    inbound = {i: [] for i in range(n)}
    for i, cited in outbound.items():
        for j in cited:
            inbound[j].append(i)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            year = 2020 if i in (2, 3) else (None if i % 23 == 4 else int(2015 + rng.integers(0, 6)))
            record = {
                "paper_id": f"p{i:03d}",
                "title": f"Paper {i} title",
                "abstract": None if i % 17 == 5 else f"Abstract of paper {i} about topic {i % 7}.",
                "year": year,
                "mag_field_of_study": [FIELDS[i % len(FIELDS)]] if i % 19 != 3 else None,
                "outbound_citations": [f"p{j:03d}" for j in outbound[i]] + ([f"outside{i}"] if i % 5 == 0 else []),
                "inbound_citations": [f"p{j:03d}" for j in inbound[i]],
            }
            handle.write(json.dumps(record) + "\n")
    return path


@pytest.fixture(scope="module")
def fixture_file(tmp_path_factory) -> Path:
    return write_s2orc_fixture(tmp_path_factory.mktemp("s2orc") / "papers.jsonl")


@pytest.fixture(scope="module")
def built(fixture_file):
    config = CocitationConfig(min_citations=15, valid_fraction=0.2, seed=3)
    return cocitation_pairs_from_s2orc(fixture_file, config)


@pytest.fixture(scope="module")
def reference(fixture_file):
    """Independent facts about the fixture: who cites whom, years, abstracts (plain Python sets)."""
    records = [json.loads(line) for line in fixture_file.read_text().splitlines()]
    citers: dict[str, set[str]] = {}
    for r in records:
        for cited in r["outbound_citations"]:
            citers.setdefault(cited, set()).add(r["paper_id"])
    years = {r["paper_id"]: r["year"] for r in records}
    abstracts = {r["paper_id"]: r["abstract"] for r in records}
    return citers, years, abstracts


def test_positives_are_cocited_and_train_repeats_by_frequency(built, reference):
    citers, _, abstracts = reference
    train = built.pairs["train"]
    assert len(train) > 50 and set(train["label"]) == {1}
    repeats: dict[tuple[str, str], int] = {}
    for a_id, b_id, a, b in zip(train["a_id"], train["b_id"], train["a"], train["b"]):
        assert a == abstracts[a_id] and b == abstracts[b_id]  # the texts are the papers' abstracts
        repeats[(a_id, b_id)] = repeats.get((a_id, b_id), 0) + 1
    for (a_id, b_id), count in repeats.items():
        # Each pair appears exactly once per paper citing both.
        assert count == len(citers.get(a_id, set()) & citers.get(b_id, set())) >= 1
    assert max(repeats.values()) > 1  # the duplication is exercised
    for split in ("valid", "test"):
        data = built.pairs[split]
        for a_id, b_id, label in zip(data["a_id"], data["b_id"], data["label"]):
            if label == 1:
                assert citers.get(a_id, set()) & citers.get(b_id, set())


def test_negatives_never_cocited_and_both_cited_enough(built, reference):
    citers, _, _ = reference
    negatives = 0
    for split in ("valid", "test"):
        data = built.pairs[split]
        for a_id, b_id, label in zip(data["a_id"], data["b_id"], data["label"]):
            if label == 0:
                negatives += 1
                assert not (citers.get(a_id, set()) & citers.get(b_id, set()))
                assert len(citers[a_id]) >= 15 and len(citers[b_id]) >= 15 and a_id != b_id
    assert negatives > 0 and any(label == 0 for label in built.pairs["test"]["label"])
    _, _, abstracts = reference
    assert built.stats["negative_pool"] == sum(1 for p, c in citers.items() if len(c) >= 15 and abstracts.get(p))


def test_split_by_most_recent_year(built, reference):
    _, years, _ = reference
    assert built.test_from_year == 2020
    recent = {p for p, y in years.items() if y is not None and y >= 2020}
    test = built.pairs["test"]
    assert len(test) > 0
    assert all(a in recent or b in recent for a, b in zip(test["a_id"], test["b_id"]))
    for split in ("train", "valid"):
        data = built.pairs[split]
        assert not any(a in recent or b in recent for a, b in zip(data["a_id"], data["b_id"]))
    train_pairs = set(zip(built.pairs["train"]["a_id"], built.pairs["train"]["b_id"]))
    valid_pairs = set(zip(built.pairs["valid"]["a_id"], built.pairs["valid"]["b_id"]))
    assert not train_pairs & valid_pairs and valid_pairs


def test_papers_without_abstract_never_emitted(built, reference):
    _, _, abstracts = reference
    for data in built.pairs.values():
        assert all(abstracts[p] for p in list(data["a_id"]) + list(data["b_id"]))
    assert built.stats["pairs_without_text"] > 0


def test_seeded(fixture_file, built):
    again = cocitation_pairs_from_s2orc(fixture_file, CocitationConfig(min_citations=15, valid_fraction=0.2, seed=3))
    other = cocitation_pairs_from_s2orc(fixture_file, CocitationConfig(min_citations=15, valid_fraction=0.2, seed=4))
    for split in ("train", "valid", "test"):
        assert again.pairs[split].to_dict() == built.pairs[split].to_dict()
    assert other.pairs["valid"].to_dict() != built.pairs["valid"].to_dict()


def test_threshold_and_cap_are_configurable(fixture_file, built):
    loose = cocitation_pairs_from_s2orc(fixture_file, CocitationConfig(min_citations=3, max_repeats=1, seed=3))
    assert loose.stats["negative_pool"] > built.stats["negative_pool"]
    assert len(loose.pairs["train"]) == loose.stats["train_unique_pairs"] and loose.stats["train_repeats_capped"] > 0


def test_written_folder_loads_with_the_cocitation_reader(built, tmp_path):
    folder = write_cocitation_pairs(built, tmp_path / "pairs")
    loaded = load_cocitation_pairs(folder)
    assert set(loaded.pairs) == {"train", "valid", "test"}
    for split in ("train", "valid", "test"):
        assert loaded.stats[f"{split}_pairs"] == len(built.pairs[split])
        assert loaded.stats[f"{split}_positive"] == sum(built.pairs[split]["label"])
        assert loaded.stats[f"{split}_skipped"] == 0
    assert not list(Path(folder).glob(".*tmp"))  # atomic writes leave no temporaries


def test_hub_columns_only(fixture_file):
    result = cocitation_pairs_from_s2orc(fixture_file, CocitationConfig(with_ids=False, min_citations=15))
    assert result.pairs["train"].column_names == ["a", "b", "label"]


def test_every_cocited_pair_accounted_for(built):
    stats = built.stats
    kept = stats["train_unique_pairs"] + stats["valid_positive"] + stats["test_positive"]
    assert stats["cocited_pairs"] == kept + stats["pairs_without_text"] and kept > 0


def test_real_s2orc_sample():
    """The real sample's citations leave it: no co-cited pair has two records, and that is reported, not hidden."""
    s2orc = read_s2orc(shared_data("s2orc-sample", "data", "metadata"), skip_invalid=True)
    graph = CitationGraph.from_edges(s2orc.citing, s2orc.cited, papers_with_text=s2orc.papers["paper_id"])
    result = build_cocitation_pairs(graph, s2orc.papers, CocitationConfig(min_citations=15, seed=0))
    counts = graph.cocitation_counts()
    assert (
        result.test_from_year
        == 2020
        == max(y for y, a in zip(s2orc.papers["year"], s2orc.papers["abstract"]) if y and a)
    )
    assert result.stats["papers_with_text"] == 488  # papers with an abstract
    assert result.stats["cocited_pairs"] == counts.nnz // 2 == 56_872
    assert result.stats["pairs_without_text"] == 56_872
    assert (
        result.stats["negative_pool"]
        == int(
            np.count_nonzero(
                graph.in_degree[
                    graph.index_of([p for p, a in zip(s2orc.papers["paper_id"], s2orc.papers["abstract"]) if a])
                ]
                >= 15
            )
        )
        == 44
    )
    assert all(len(result.pairs[split]) == 0 for split in ("train", "valid", "test"))
