"""Memory and time bounded by the model's length, not the input's (issue 22, part 4): an over-long text is cut
before tokenizing, the tokens the model reads (and so the vectors) are unchanged, in the encoder (PyTorch and
ONNX) and in training's collators."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pytest
from helpers import WORDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sciembed import PaperEncoder
from sciembed.truncation import CHARS_PER_TOKEN, cut_text

MAX_LENGTH = 16
_SEPARATORS = st.sampled_from([" ", "  ", "\n", "\t", " \n ", ", ", ". ", " - "])
_WORD = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(["naïve", "Schrödinger", "x²", "αβγ", "e-mail", "C++", "3.14", "(ibid.)"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzé", min_size=1, max_size=30),
)
TEXTS = st.lists(st.tuples(_WORD, _SEPARATORS), min_size=1, max_size=200).map(
    lambda parts: "".join(w + s for w, s in parts)
)


def _tokenizers(tiny_bert):
    """The families' WordPiece (the tiny BERT's; MiniLM's) and trained byte-level BPE and SentencePiece-style ones."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    import sciembed

    corpus = [" ".join(WORDS[i:] + WORDS[:i]) + " naïve Schrödinger x² αβγ C++ 3.14" for i in range(len(WORDS))]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=300, special_tokens=["<unk>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    unigram = Tokenizer(models.Unigram())
    unigram.normalizer, unigram.pre_tokenizer = normalizers.NFKC(), pre_tokenizers.Metaspace()
    unigram.train_from_iterator(
        corpus, trainers.UnigramTrainer(vocab_size=200, special_tokens=["<unk>"], unk_token="<unk>")
    )
    return {
        "tiny-bert": AutoTokenizer.from_pretrained(tiny_bert),
        "minilm": AutoTokenizer.from_pretrained(sciembed.default_model_path()),
        "byte-level-bpe": PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>"),
        "sentencepiece-unigram": PreTrainedTokenizerFast(tokenizer_object=unigram, unk_token="<unk>"),
    }


@pytest.fixture(scope="module")
def tokenizers(tiny_bert):
    return _tokenizers(tiny_bert)


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXTS, repeat=st.integers(1, 40), chars_per_token=st.integers(1, CHARS_PER_TOKEN))
def test_the_cut_keeps_every_token_the_model_reads(tokenizers, text, repeat, chars_per_token):
    """Any text and any first head size (small ones put the head's last word right at the model's last token)."""
    text = (text * repeat)[: 3 * MAX_LENGTH * CHARS_PER_TOKEN]
    with mock.patch("sciembed.truncation.CHARS_PER_TOKEN", chars_per_token):
        for name, tokenizer in tokenizers.items():
            head = cut_text(text, tokenizer, MAX_LENGTH)
            assert text.startswith(head)
            expected = tokenizer(text, truncation=True, max_length=MAX_LENGTH)["input_ids"]
            assert tokenizer(head, truncation=True, max_length=MAX_LENGTH)["input_ids"] == expected, name


def test_a_huge_abstract_is_never_tokenized_whole_and_embeds_as_its_head_does(tiny_bert, tmp_path, monkeypatch):
    """One paper with a 20 MB abstract: the tokenizer sees a few thousand characters, the vector is the same as
    for the abstract's first 200,000 characters (which is tokenized whole), on PyTorch and on ONNX."""
    pytest.importorskip("onnxruntime")
    from transformers import PreTrainedTokenizerBase

    abstract = " ".join(WORDS[i % len(WORDS)] for i in range(3_500_000))[:20_000_000]
    huge, head = {"title": "A huge one", "abstract": abstract}, {"title": "A huge one", "abstract": abstract[:200_000]}
    longest = []
    call = PreTrainedTokenizerBase.__call__

    def recording(self, text=None, *args, **kwargs):
        longest.append(max(map(len, [text] if isinstance(text, str) else text)))
        return call(self, text, *args, **kwargs)

    for backend in ("pytorch", "onnx"):
        encoder = PaperEncoder.from_pretrained(
            tiny_bert, device="cpu", backend=backend, engine_cache=tmp_path, max_length=MAX_LENGTH
        )
        expected = encoder.encode([head], show_progress_bar=False)
        monkeypatch.setattr(PreTrainedTokenizerBase, "__call__", recording)
        vectors = encoder.encode([huge], show_progress_bar=False)
        monkeypatch.undo()
        np.testing.assert_array_equal(vectors, expected)
        assert max(longest) < 64 * MAX_LENGTH * CHARS_PER_TOKEN, backend


def test_training_batches_of_long_papers_are_unchanged_by_the_cut(tiny_bert):
    from transformers import AutoTokenizer

    from sciembed.data.papers import paper_text
    from sciembed.training.collators import TripletCollator

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    long = [
        {"title": f"paper {i}", "abstract": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(5_000))}
        for i in range(6)
    ]
    rows = [{"query": long[i], "positive": long[i + 1], "negative": long[i + 2]} for i in range(4)]
    batch = TripletCollator(tokenizer, MAX_LENGTH)(rows)
    texts = [paper_text(row[role], tokenizer.sep_token) for role in ("query", "positive", "negative") for row in rows]
    whole = tokenizer(texts, padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
    assert json.dumps(batch["input_ids"].tolist()) == json.dumps(whole["input_ids"].tolist())
