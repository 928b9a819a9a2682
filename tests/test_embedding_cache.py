"""The evaluation's embedding cache streams: opening reads key files only, vectors come from the
memory-mapped shards by key, and many small shards are compacted into one without losing a vector."""

from __future__ import annotations

import numpy as np

from sciembed.evaluation import cache as cache_module
from sciembed.evaluation.cache import EmbeddingCache


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
