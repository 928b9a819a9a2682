"""PaperEncoder tokenizes each text once: batches are padded from the ids of the length pass, same vectors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from helpers import WORDS

from sciembed import PaperEncoder
from sciembed.truncation import CHARS_PER_TOKEN, cut_texts


def _texts(count: int = 9, longest: int = 300, *, cut: bool = True) -> list[str]:
    """Distinct texts of one to ``longest`` words, and with ``cut`` one long enough to be cut before tokenizing."""
    rng = np.random.default_rng(0)
    sizes = np.linspace(1, longest, count).astype(int)
    texts = [f"{i} " + " ".join(rng.choice(WORDS, size)) for i, size in enumerate(sizes)]
    return [*texts, "cut " + " ".join(rng.choice(WORDS, 4 * longest * CHARS_PER_TOKEN // 5))] if cut else texts


def _two_pass(encoder: PaperEncoder, texts: list[str], batch_size: int) -> np.ndarray:
    """The vectors as each batch tokenized again (:meth:`PaperEncoder.features`) gives them: the reference."""
    texts = cut_texts(texts, encoder.tokenizer, encoder.max_length)
    ids = encoder.tokenizer(texts, truncation=True, max_length=encoder.max_length)["input_ids"]
    order = np.argsort(-np.array([len(i) for i in ids]), kind="stable")
    rows = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    with torch.inference_mode():
        batches = [encoder.features([texts[i] for i in batch]) for batch in rows]
        if encoder._engine is not None:
            outputs = [encoder._engine.session(encoder)(features) for features in batches]
        else:
            outputs = [encoder._float32(encoder.forward(features)) for features in batches]
    vectors = np.empty((len(texts), *outputs[0].shape[1:]), dtype=np.float32)
    for batch, output in zip(rows, outputs):
        vectors[batch] = output
    return vectors


@pytest.fixture(params=["bert", "bert-mean-left", "st", "multi2spe-facets", "onnx", "onnx-st", "openvino"])
def encoder(request, tiny_bert, tiny_st_base, family_model, tmp_path) -> PaperEncoder:
    kind = request.param
    if kind == "bert-mean-left":
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tiny_bert, padding_side="left")
        return PaperEncoder(AutoModel.from_pretrained(tiny_bert), tokenizer, pooling="mean", device="cpu")
    folder = {"st": tiny_st_base, "onnx-st": tiny_st_base, "multi2spe-facets": family_model}.get(kind, tiny_bert)
    options = {
        "onnx": {"backend": "onnx", "engine_cache": tmp_path},
        "onnx-st": {"backend": "onnx", "engine_cache": tmp_path},
        "openvino": {"backend": "openvino", "engine_cache": tmp_path},
        "multi2spe-facets": {"facets": True},
    }.get(kind, {})
    return PaperEncoder.from_pretrained(folder, device="cpu", **options)


def test_vectors_equal_those_of_batches_tokenized_again(encoder):
    texts = _texts()
    assert encoder._batch_padding() is not None  # batches are padded from the stored ids
    for batch_size in (1, 3, 32):
        vectors = encoder.encode(texts, batch_size=batch_size, show_progress_bar=False)
        np.testing.assert_array_equal(vectors, _two_pass(encoder, texts, batch_size))


def test_the_embedded_minilm_gives_the_same_vectors(minilm_encoder):
    texts = _texts(6, longest=400)
    assert minilm_encoder._batch_padding() is not None
    vectors = minilm_encoder.encode(texts, batch_size=4, show_progress_bar=False)
    np.testing.assert_array_equal(vectors, _two_pass(minilm_encoder, texts, 4))


@pytest.mark.parametrize("folder", ["tiny_bert", "tiny_st_base"])
def test_each_text_is_tokenized_once(folder, request, monkeypatch):
    encoder = PaperEncoder.from_pretrained(request.getfixturevalue(folder), device="cpu")
    texts = _texts(12, longest=60, cut=False)
    seen: Counter[str] = Counter()
    tokenizer_class = type(encoder.tokenizer)
    original = tokenizer_class.__call__

    def counting(self, text=None, *args, **kwargs):
        seen.update([text] if isinstance(text, str) else text or [])
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(tokenizer_class, "__call__", counting)
    encoder.encode(texts, batch_size=4, show_progress_bar=False)
    assert {text: seen[text] for text in texts} == dict.fromkeys(texts, 1)


def test_a_tokenizer_without_a_padding_token_still_tokenizes_each_batch(tiny_bert):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    encoder = PaperEncoder(AutoModel.from_pretrained(tiny_bert), tokenizer, device="cpu")
    tokenizer.pad_token = None
    with pytest.raises(ValueError, match="padding token"):
        encoder.encode(_texts(3, longest=20), batch_size=3, show_progress_bar=False)
