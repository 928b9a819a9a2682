"""Multi-SciDocs builder: rules of positives / negatives, field balance, seeds, and read_scidocs on the output."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import shared_data
from test_cocitation_sampling import write_s2orc_fixture

from sciembed.data.multi_scidocs import MultiSciDocsConfig, build_multi_scidocs
from sciembed.data.scidocs import read_scidocs

CONFIG = MultiSciDocsConfig(queries_per_field=8, negatives=50, seed=1)


@pytest.fixture(scope="module")
def fixture_file(tmp_path_factory) -> Path:
    return write_s2orc_fixture(tmp_path_factory.mktemp("s2orc") / "papers.jsonl", n=200)


@pytest.fixture(scope="module")
def built(fixture_file, tmp_path_factory):
    return build_multi_scidocs(fixture_file, tmp_path_factory.mktemp("multi") / "out", CONFIG)


@pytest.fixture(scope="module")
def facts(fixture_file):
    records = [json.loads(line) for line in fixture_file.read_text().splitlines()]
    cites = {r["paper_id"]: set(r["outbound_citations"]) for r in records}
    citers: dict[str, set[str]] = {}
    for r in records:
        for cited in r["outbound_citations"]:
            citers.setdefault(cited, set()).add(r["paper_id"])
    field = {r["paper_id"]: (r["mag_field_of_study"] or [None])[0] for r in records}
    return cites, citers, field, {r["paper_id"] for r in records}


def cocited(citers, a, b) -> bool:
    return bool(citers.get(a, set()) & citers.get(b, set()))


def test_positives_and_negatives_follow_the_rules(built, facts):
    cites, citers, _, with_text = facts
    for task in ("cite", "cocite"):
        for split in ("val", "test"):
            rows = built.qrels[task][split]
            per_query = Counter(q for q, _, _ in rows)
            assert per_query
            for q, p, rel in rows:
                assert p in with_text and p != q
                related = p in cites[q] if task == "cite" else cocited(citers, q, p)
                assert related == (rel == 1)
                # A negative is not related to the query in any way.
                if rel == 0:
                    assert p not in cites[q] and q not in cites.get(p, set()) and not cocited(citers, q, p)
            positives = Counter(q for q, _, rel in rows if rel == 1)
            negatives = Counter(q for q, _, rel in rows if rel == 0)
            assert all(1 <= c <= 5 for c in positives.values())
            assert set(negatives.values()) == {50}


def test_fields_balanced_and_splits_disjoint(built, facts):
    _, _, field, _ = facts
    for task in ("cite", "cocite"):
        queries = {q for split in ("val", "test") for q, _, _ in built.qrels[task][split]}
        fields = Counter(field[q] for q in queries)
        assert None not in fields and max(fields.values()) <= CONFIG.queries_per_field
        # Medicine has 3x the papers of the other fields in the fixture, yet no more queries.
        assert fields["Medicine"] == fields["Physics"] == CONFIG.queries_per_field
        assert built.query_fields[task] == {q: field[q] for q in queries}
        val = {q for q, _, _ in built.qrels[task]["val"]}
        test = {q for q, _, _ in built.qrels[task]["test"]}
        assert not val & test


def test_shortfalls_are_reported(fixture_file, tmp_path):
    result = build_multi_scidocs(
        fixture_file, tmp_path / "big", MultiSciDocsConfig(queries_per_field=1000, negatives=500, seed=1)
    )
    stats = result.stats["cite"]
    assert (
        stats["queries_with_fewer_negatives"] == stats["val_queries"] + stats["test_queries"] > 0
    )  # 200 papers < 500
    for task in ("cite", "cocite"):
        rows = [r for split in ("val", "test") for r in result.qrels[task][split]]
        positives = Counter(q for q, _, rel in rows if rel == 1)
        assert result.stats[task]["queries_with_fewer_positives"] == sum(1 for c in positives.values() if c < 5)
    assert result.stats["cocite"]["queries_with_fewer_positives"] > 0
    assert any(key.startswith("field_short:") for key in stats)


def test_seeded(fixture_file, built, tmp_path):
    again = build_multi_scidocs(fixture_file, tmp_path / "again", CONFIG)
    other = build_multi_scidocs(
        fixture_file, tmp_path / "other", MultiSciDocsConfig(queries_per_field=8, negatives=50, seed=2)
    )
    assert again.qrels == built.qrels
    assert (tmp_path / "again" / "cite" / "test.qrel").read_bytes() == (
        built.folder / "cite" / "test.qrel"
    ).read_bytes()
    assert other.qrels != built.qrels


def test_read_scidocs_loads_the_output(built):
    release = read_scidocs(built.folder)
    assert set(release.qrels) == {"cite", "cocite"}
    for task in ("cite", "cocite"):
        for split in ("val", "test"):
            data = release.qrels[task][split]
            assert len(data) == len(built.qrels[task][split])
            assert sum(data["score"]) == sum(rel for _, _, rel in built.qrels[task][split])
        assert release.stats[task]["test_unknown_papers"] == 0
    assert "mag" in release.missing  # MAG classification is SciDocs' own, not built here
    assert not list(built.folder.rglob(".*tmp"))


def test_real_s2orc_sample(tmp_path):
    """The real sample has no citation between two of its papers (its 4 internal edges are self-citations):
    no query can have a positive, and the builder says so with the counts instead of writing empty tasks."""
    path = shared_data("s2orc-sample", "data", "metadata")
    with pytest.raises(ValueError, match="no query paper could be built") as error:
        build_multi_scidocs(
            path, tmp_path / "real", MultiSciDocsConfig(queries_per_field=5, negatives=100, min_queries_per_field=1)
        )
    assert "'papers_with_a_positive': 0" in str(error.value) and "'papers_without_field': 47" in str(error.value)
    assert not (tmp_path / "real").exists()


def test_real_sample_with_fixture_citations(tmp_path):
    """Real S2ORC records (texts, fields) plus synthetic internal citations: the builder runs on real metadata."""
    records = [
        json.loads(line)
        for line in (shared_data("s2orc-sample", "data", "metadata") / "sample.jsonl").read_text().splitlines()
    ]
    ids = [r["paper_id"] for r in records]
    for k, r in enumerate(records):  # each paper cites the next 6 (a ring), all inside the sample
        r["outbound_citations"] = [ids[(k + step) % len(ids)] for step in range(1, 7)]
        r["inbound_citations"] = []
    path = tmp_path / "ring.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = build_multi_scidocs(
        path, tmp_path / "out", MultiSciDocsConfig(queries_per_field=10, negatives=100, seed=0)
    )
    release = read_scidocs(result.folder)
    for task in ("cite", "cocite"):
        stats = result.stats[task]
        queries = stats["val_queries"] + stats["test_queries"]
        assert queries > 0 and max(v for k, v in stats.items() if k.startswith("queries:")) <= 10
        assert stats["val_negatives"] + stats["test_negatives"] == 100 * queries
        assert len(release.qrels[task]["val"]) + len(release.qrels[task]["test"]) == sum(
            stats[f"{s}_{kind}"] for s in ("val", "test") for kind in ("positives", "negatives")
        )
