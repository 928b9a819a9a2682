"""The embedding cache streams: opening reads key files only, vectors come from the memory-mapped shards by key, and
many small shards are compacted into one without losing a vector. `embed` and `evaluate` share it: papers one of them
embedded are not embedded again by the other."""

from __future__ import annotations

import json

import numpy as np
from helpers import PAPERS

from sciembed.cli import main
from sciembed.evaluation import cache as cache_module
from sciembed.evaluation.cache import EmbeddingCache
from sciembed.io import file_sha256


def texts(count: int, start: int = 0) -> list[str]:
    return [f"paper number {i} on graphs and parsing" for i in range(start, start + count)]


def test_vectors_are_read_by_key_from_memory_mapped_shards(tiny_encoder, tmp_path):
    first = EmbeddingCache(tiny_encoder, tmp_path)
    expected = first.embed(texts(30), show_progress_bar=False)
    first.embed(texts(30, start=20), show_progress_bar=False)  # 10 cached, 20 new: a second shard
    assert first.encoded == 50 and first.hits == 10 and len(first) == 50

    reopened = EmbeddingCache(tiny_encoder, tmp_path)
    assert len(reopened) == 50 and all(array is None for array in reopened._arrays)  # keys only, no vector read yet
    wanted = [texts(30)[i] for i in (29, 3, 3, 17)]
    np.testing.assert_array_equal(reopened.lookup(wanted), expected[[29, 3, 3, 17]])
    assert any(isinstance(array, np.memmap) for array in reopened._arrays)
    again = reopened.embed(texts(50), show_progress_bar=False)
    assert reopened.encoded == 0 and reopened.hits == 50
    np.testing.assert_array_equal(again[:30], expected)
    np.testing.assert_array_equal(again, EmbeddingCache(tiny_encoder, None).embed(texts(50), show_progress_bar=False))


def test_many_small_shards_are_compacted_into_one_when_opened(tiny_encoder, tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "COMPACT_AT", 4)
    writer = EmbeddingCache(tiny_encoder, tmp_path)
    for start in range(0, 36, 6):
        writer.embed(texts(6, start), show_progress_bar=False)
    assert len(list(writer.folder.glob("shard-*.npy"))) == 6
    expected = writer.lookup(texts(36))

    compacted = EmbeddingCache(tiny_encoder, tmp_path)
    assert len(list(compacted.folder.glob("shard-*.npy"))) == len(list(compacted.folder.glob("shard-*.json"))) == 1
    np.testing.assert_array_equal(compacted.lookup(texts(36)), expected)
    reread = EmbeddingCache(tiny_encoder, tmp_path)  # the compacted shard carries its hash like any other
    np.testing.assert_array_equal(reread.embed(texts(36), show_progress_bar=False), expected)
    assert reread.encoded == 0


def test_shards_are_written_without_a_memory_map(tiny_encoder, tmp_path, monkeypatch):
    real, modes = np.lib.format.open_memmap, []

    def mapped(*args, mode="r+", **kwargs):
        modes.append(mode)
        return real(*args, mode=mode, **kwargs)

    expected = EmbeddingCache(tiny_encoder, None).embed(texts(12), show_progress_bar=False)
    monkeypatch.setattr(np.lib.format, "open_memmap", mapped)
    cache = EmbeddingCache(tiny_encoder, tmp_path)
    cache.embed(texts(12), show_progress_bar=False)
    assert set(modes) <= {"r"}  # read through a map, never written through one (dirty pages count as resident)
    (shard,) = cache.folder.glob("shard-*.npy")
    np.testing.assert_array_equal(np.load(shard), expected)
    assert json.loads(shard.with_suffix(".json").read_text())["npy_sha256"] == file_sha256(shard)


def _retrieval(folder):
    """The papers of ``helpers.PAPERS`` and a qrels file over them, in ``folder``."""
    (folder / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    (folder / "qrels.tsv").write_text("p1\tp4\t1\np2\tp5\t1\np3\tp1\t1\n")
    return folder / "papers.jsonl", folder / "qrels.tsv"


def test_evaluate_after_embed_embeds_nothing_again(tiny_bert, tmp_path):
    papers, qrels = _retrieval(tmp_path)
    shared = ["--model", str(tiny_bert), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    assert main(["embed", *shared, "--input", str(papers), "--output", str(tmp_path / "v.npy")]) == 0
    command = ["evaluate", *shared, "--benchmark", "retrieval", "--data", str(qrels), "--papers", str(papers)]
    assert main([*command, "--output", str(tmp_path / "r.json")]) == 0
    embedding = json.loads((tmp_path / "r.json").read_text())["embedding"]
    assert (embedding["texts_encoded"], embedding["cache_hits"]) == (0, len(PAPERS))


def test_embed_after_evaluate_embeds_nothing_again(tiny_encoder, tmp_path):
    from sciembed.evaluation import evaluate
    from sciembed.evaluation.benchmarks import RetrievalOptions
    from sciembed.jobs.embed import embed_to_file

    papers, qrels = _retrieval(tmp_path)
    report = evaluate(
        tiny_encoder,
        "retrieval",
        qrels,
        cache_dir=tmp_path,
        show_progress_bar=False,
        options=RetrievalOptions(papers=papers),
    )
    assert report.embedding["texts_encoded"] == len(PAPERS)
    embedded = embed_to_file(tiny_encoder, papers, tmp_path / "v.npy", cache_dir=tmp_path, show_progress_bar=False)
    assert embedded.cached_papers == len(PAPERS) and "(5 from the embedding cache)" in embedded.summary()
    again = embed_to_file(tiny_encoder, papers, tmp_path / "w.npy", use_cache=False, show_progress_bar=False)
    assert again.cached_papers == 0
