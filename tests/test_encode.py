"""sciembed.encode: order restoration, pooling against a hand-pooled forward, sentence-transformers."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from helpers import PAPERS

import sciembed
from sciembed import PaperEncoder, paper_text
from sciembed.tokens import TokenIds


def _hand_pooled(model, tokenizer, texts, pooling="cls", max_length=512):
    """One text at a time, no padding: the reference each batched result must match."""
    rows = []
    with torch.no_grad():
        for text in texts:
            features = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model(**features).last_hidden_state[0]
            rows.append(hidden[0] if pooling == "cls" else hidden.mean(0))
    return torch.stack(rows).numpy()


def test_default_model_path_is_the_embedded_minilm():
    from pathlib import Path

    folder = Path(sciembed.default_model_path())
    assert (folder / "config.json").is_file() and (folder / "modules.json").is_file()
    assert '"hidden_size": 384' in (folder / "config.json").read_text()


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_matches_hand_pooled_forward(tiny_bert, pooling):
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(tiny_bert).eval(), AutoTokenizer.from_pretrained(tiny_bert)
    vectors = sciembed.encode(
        model, PAPERS, tokenizer=tokenizer, batch_size=2, pooling=pooling, show_progress_bar=False
    )
    texts = [paper_text(p, tokenizer.sep_token) for p in PAPERS]
    assert vectors.dtype == np.float32 and vectors.shape == (len(PAPERS), 32)
    np.testing.assert_allclose(vectors, _hand_pooled(model, tokenizer, texts, pooling), atol=1e-5, rtol=0)


def test_order_is_restored_whatever_the_batching(tiny_encoder):
    reference = tiny_encoder.encode(PAPERS, batch_size=1, show_progress_bar=False)
    permutation = [3, 0, 4, 2, 1]
    for batch_size in (2, 3, 64):
        shuffled = tiny_encoder.encode(
            [PAPERS[i] for i in permutation], batch_size=batch_size, show_progress_bar=False
        )
        np.testing.assert_allclose(shuffled, reference[permutation], atol=1e-5, rtol=0)
    # Papers of very different lengths really are batched out of input order.
    lengths = [len(t) for t in tiny_encoder.texts(PAPERS)]
    order = TokenIds.of(tiny_encoder.tokenizer, tiny_encoder.texts(PAPERS), tiny_encoder.max_length).longest_first()
    assert list(order) != list(range(len(PAPERS)))
    assert lengths.index(max(lengths)) == order[0]


def test_texts_and_records_give_the_same_vectors(tiny_encoder):
    texts = tiny_encoder.texts(PAPERS)
    assert texts[0] == "Garbage collection of list structure[SEP]We reclaim memory in a time sharing system."
    np.testing.assert_array_equal(
        tiny_encoder.encode(texts, show_progress_bar=False), tiny_encoder.encode(PAPERS, show_progress_bar=False)
    )


def test_max_length_truncates(tiny_bert):
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(tiny_bert).eval(), AutoTokenizer.from_pretrained(tiny_bert)
    encoder = PaperEncoder(model, tokenizer, max_length=6, device="cpu")
    texts = encoder.texts(PAPERS)
    np.testing.assert_allclose(
        encoder.encode(PAPERS, show_progress_bar=False),
        _hand_pooled(model, tokenizer, texts, max_length=6),
        atol=1e-5,
        rtol=0,
    )
    assert PaperEncoder(model, tokenizer, device="cpu").max_length == 64  # the model's own limit


def test_normalize(tiny_encoder, tiny_bert):
    encoder = PaperEncoder.from_pretrained(tiny_bert, normalize=True, device="cpu")
    vectors = encoder.encode(PAPERS, show_progress_bar=False)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    raw = tiny_encoder.encode(PAPERS, show_progress_bar=False)
    np.testing.assert_allclose(vectors, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.encode([], show_progress_bar=False), "no papers to encode"),
        (lambda e: e.encode(PAPERS, batch_size=0), "batch_size must be positive"),
        (lambda e: e.encode([{"paper_id": "z", "title": ""}]), "'z' has neither a title nor an abstract"),
    ],
)
def test_bad_calls(tiny_encoder, call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny_encoder)


def test_bad_options(tiny_bert):
    with pytest.raises(ValueError, match="pooling must be one of"):
        PaperEncoder.from_pretrained(tiny_bert, pooling="max")
    with pytest.raises(ValueError, match="a tokenizer only with a loaded model"):
        sciembed.encode(str(tiny_bert), PAPERS, tokenizer=object())
    with pytest.raises(ValueError, match="max_length 65 exceeds the 64 tokens the model takes"):
        PaperEncoder.from_pretrained(tiny_bert, max_length=65)


def test_encoder_settings_are_not_overridden_per_call(tiny_encoder):
    with pytest.raises(ValueError, match="an encoder holds its own settings; set max_length, device"):
        sciembed.encode(tiny_encoder, PAPERS, max_length=8, device="cpu")


def test_a_hub_id_loads_from_the_hub_cache_offline_and_is_named_when_not_there(tiny_bert, tmp_path):
    """A Hub id goes through the Hub loaders: offline, a copy in the Hub cache's layout
    (models--ORG--NAME/snapshots/REV, refs/main) loads; an id with no copy is named, with the reason."""
    import shutil
    import subprocess
    import sys

    repo = tmp_path / "hub" / "models--org--tiny"
    shutil.copytree(tiny_bert, repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    script = "import sys, sciembed; print(sciembed.encode(sys.argv[1], [{'paper_id': 'p', 'title': 'Graphs'}]).shape)"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    found = subprocess.run(
        [sys.executable, "-c", script, "org/tiny"], env=env, capture_output=True, text=True, timeout=300
    )
    assert found.returncode == 0 and found.stdout.strip() == "(1, 32)", found.stderr[-2000:]
    missing = subprocess.run(
        [sys.executable, "-c", script, "allenai/specter2_base"], env=env, capture_output=True, text=True, timeout=300
    )
    assert missing.returncode != 0
    assert (
        "allenai/specter2_base: no such model folder here, and no copy of a Hub model of that id in the Hub cache "
        "(HF_HUB_OFFLINE is set"
    ) in missing.stderr


@pytest.mark.slow
def test_embedded_model_pools_its_own_way(minilm_encoder):
    """all-MiniLM-L6-v2 ships sentence-transformers modules: mean pooling, then L2 normalisation."""
    from transformers import AutoModel, AutoTokenizer

    path = sciembed.default_model_path()
    model, tokenizer = AutoModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    vectors = minilm_encoder.encode(PAPERS, batch_size=2, show_progress_bar=False)
    expected = _hand_pooled(model, tokenizer, minilm_encoder.texts(PAPERS), "mean", max_length=256)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)
    assert minilm_encoder.max_length == 256 and minilm_encoder.sep_token == "[SEP]"


@pytest.mark.slow
def test_embedded_model_matches_sentence_transformers(minilm_encoder):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(sciembed.default_model_path(), device="cpu")
    texts = minilm_encoder.texts(PAPERS)
    expected = st.encode(texts, batch_size=2, convert_to_numpy=True)
    np.testing.assert_allclose(
        sciembed.encode(st, PAPERS, batch_size=3, show_progress_bar=False), expected, atol=1e-4, rtol=0
    )
    np.testing.assert_allclose(minilm_encoder.encode(PAPERS, show_progress_bar=False), expected, atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="sentence-transformers model tokenizes and pools with its own modules"):
        PaperEncoder(st, pooling="cls")


def test_an_ensemble_in_the_hub_cache_loads_as_an_ensemble_offline(tiny_bert, tmp_path):
    """A Hub repository holding sciembed_ensemble.json (models--ORG--NAME/snapshots/REV, refs/main) is an ensemble,
    at the revision asked, read from the Hub cache given; a repository or revision without it is one model."""
    import shutil

    import huggingface_hub.constants

    from sciembed.encoders import EnsembleEncoder, save_ensemble

    hub, main, other = tmp_path / "hub", "a" * 40, "b" * 40  # a revision of 40 hex digits is a commit
    ensemble_snapshot = hub / "models--org--ens" / "snapshots" / main
    for member in ("a", "b"):
        shutil.copytree(tiny_bert, ensemble_snapshot / member)
    save_ensemble(ensemble_snapshot, [ensemble_snapshot / "a", ensemble_snapshot / "b"])
    shutil.copytree(tiny_bert, hub / "models--org--ens" / "snapshots" / other)  # one model at another revision
    shutil.copytree(tiny_bert, hub / "models--org--tiny" / "snapshots" / main)
    for name in ("ens", "tiny"):
        (hub / f"models--org--{name}" / "refs").mkdir()
        (hub / f"models--org--{name}" / "refs" / "main").write_text(main)
    assert huggingface_hub.constants.HF_HUB_OFFLINE
    ensemble = sciembed.Encoder.from_pretrained("org/ens", cache_dir=hub, device="cpu")
    assert isinstance(ensemble, EnsembleEncoder) and len(ensemble.members) == 2
    assert [m.name_or_path for m in ensemble.members] == ["org/ens/a", "org/ens/b"] and ensemble.revision == [main] * 2
    saved = ensemble.save_pretrained(tmp_path / "saved")
    assert isinstance(sciembed.Encoder.from_pretrained(saved), EnsembleEncoder)  # saved with the snapshot's folders
    vector = ensemble.encode("graph memory")
    np.testing.assert_allclose(vector, sciembed.Encoder.from_pretrained(tiny_bert).encode("graph memory"), atol=1e-6)
    assert isinstance(sciembed.Encoder.from_pretrained("org/ens", revision=main, cache_dir=hub), EnsembleEncoder)
    one = sciembed.Encoder.from_pretrained("org/ens", revision=other, cache_dir=hub)
    assert isinstance(one, sciembed.PaperEncoder) and one.revision == other
    assert isinstance(sciembed.Encoder.from_pretrained("org/tiny", cache_dir=hub), sciembed.PaperEncoder)
    with pytest.raises(FileNotFoundError, match="org/ens: no such model folder here"):
        sciembed.Encoder.from_pretrained("org/ens", revision="f" * 40, cache_dir=hub)
