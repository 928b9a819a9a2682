"""The embedding cache under damage: a shard of the wrong width, vectors changed in place, a key file that
does not parse. Each is dropped with a warning naming it and its texts are embedded again, so scores equal
those of an undamaged cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import PAPERS
from sciembed.evaluation.cache import EmbeddingCache


@pytest.mark.parametrize("damage", ["wrong width", "changed in place", "key file does not parse", "legacy wrong width"])
def test_a_damaged_shard_is_dropped_and_embedded_again(tiny_encoder, tmp_path, caplog, damage):
    texts = tiny_encoder.texts(PAPERS)
    first = EmbeddingCache(tiny_encoder, tmp_path)
    expected = first.embed(texts, show_progress_bar=False)
    (keys_path,) = first.folder.glob("shard-*.json")
    vectors_path = keys_path.with_suffix(".npy")
    if damage in ("wrong width", "legacy wrong width"):
        np.save(vectors_path, np.zeros((len(texts), 7), dtype=np.float32))
        if damage == "legacy wrong width":  # an older key file: a plain list, no hash to catch it
            keys_path.write_text(json.dumps(json.loads(keys_path.read_text())["keys"]))
    elif damage == "changed in place":
        changed = np.load(vectors_path)
        changed[0] += 1
        np.save(vectors_path, changed)
    else:
        keys_path.write_text("{oops")
    again = EmbeddingCache(tiny_encoder, tmp_path)
    assert str(vectors_path) in caplog.text and "embedded again" in caplog.text
    np.testing.assert_allclose(again.embed(texts, show_progress_bar=False), expected, atol=1e-6)
    assert again.encoded == len(set(texts)) and not vectors_path.exists()
