"""Shared fixtures (a tiny random BERT saved to disk, with sentence-transformers modules, as a family model;
encoders) and the session's environment: an offline Hub and a datasets cache of its own. Plain helpers
are in ``helpers.py``."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests never reach a model hub; set before transformers / huggingface_hub read it.
os.environ["HF_HUB_OFFLINE"] = "1"
# A datasets cache of the session's own, so no test reads Arrow files another run left behind.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="sciembed-tests-datasets-")
atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], ignore_errors=True)
# An embedding cache of the session's own for session fixtures; each test gets its own (own_embedding_cache).
os.environ["SCIEMBED_CACHE"] = tempfile.mkdtemp(prefix="sciembed-tests-cache-")
atexit.register(shutil.rmtree, os.environ["SCIEMBED_CACHE"], ignore_errors=True)

from helpers import WORDS  # noqa: E402  (after the environment is set)


@pytest.fixture(autouse=True)
def own_embedding_cache(tmp_path_factory) -> Iterator[None]:
    """Each test caches vectors in a folder of its own, never the user's: no test finds another's vectors. Set apart
    from ``monkeypatch``, so that a test undoing its own patches keeps it."""
    before = os.environ.get("SCIEMBED_CACHE")
    os.environ["SCIEMBED_CACHE"] = str(tmp_path_factory.mktemp("embedding-cache"))
    yield
    if before is None:
        os.environ.pop("SCIEMBED_CACHE", None)
    else:
        os.environ["SCIEMBED_CACHE"] = before


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) with a small word-piece vocabulary, saved to disk."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-bert")
    # No repeated entries: a repeat leaves a hole in the ids, and tokens added later would reuse a real id.
    vocab = list(
        dict.fromkeys(
            [
                "[PAD]",
                "[UNK]",
                "[CLS]",
                "[SEP]",
                "[MASK]",
                *WORDS,
                *[f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"],
                *"abcdefghijklmnopqrstuvwxyz.,;:",
            ]
        )
    )
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(folder, model_max_length=64)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_st_base(tiny_bert, tmp_path_factory) -> Path:
    """The tiny BERT as a sentence-transformers model used as all-MiniLM-L6-v2 is: mean pooling, then Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    folder = tmp_path_factory.mktemp("tiny-st-base")
    transformer = Transformer(str(tiny_bert), max_seq_length=48)
    modules = [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode="mean"), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder), create_model_card=False)
    return folder


@pytest.fixture(scope="session")
def family_model(tiny_bert, tmp_path_factory) -> Path:
    """A saved Multi2SPE model folder (remote code and all), with a checkpoint folder a training run left in it."""
    from sciembed.families import from_bert, save_pretrained

    model, tokenizer = from_bert("multi2spe", tiny_bert)
    folder = save_pretrained(model, tokenizer, tmp_path_factory.mktemp("m2s") / "model")
    (folder / "checkpoint-3").mkdir()  # what a training run leaves behind
    (folder / "checkpoint-3" / "optimizer.pt").write_bytes(b"x")
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert):
    from sciembed import PaperEncoder

    return PaperEncoder.from_pretrained(tiny_bert, device="cpu")


@pytest.fixture(scope="session")
def minilm_encoder():
    from sciembed import PaperEncoder

    return PaperEncoder.from_pretrained(device="cpu")


@pytest.fixture(scope="session")
def cacm_graph():
    """CACM's citation links as a graph; only papers with an abstract count as having text, so that the
    text rule is exercised."""
    from helpers import shared_data

    from sciembed.data.graph import CitationGraph
    from sciembed.data.smart import CACM_CITATION, read_smart_collection

    collection = read_smart_collection(shared_data("cacm"), skip_invalid=True)
    links = sorted(collection.links[CACM_CITATION])
    with_abstract = [p["paper_id"] for p in collection.papers if p["abstract"]]
    return CitationGraph.from_undirected_pairs(
        [a for a, _ in links], [b for _, b in links], papers_with_text=with_abstract
    )
