"""Shared fixtures: a tiny random BERT saved to disk, the shared data folder, offline Hub."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Tests never reach a model hub; set before transformers / huggingface_hub read it.
os.environ["HF_HUB_OFFLINE"] = "1"
# A datasets cache of the session's own, so no test reads Arrow files another run left behind.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="sciembed-tests-datasets-")
atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], ignore_errors=True)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

WORDS = (
    "the a of and in on for with by to is are we paper method model results graph citation "
    "neural network learning embedding document scientific text language data set task "
    "garbage collection memory query database join index matrix linear system algorithm "
    "compiler syntax translation program time sharing operating storage list structure"
).split()


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data, skipping the test with a clear reason when it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (see ../shared/data/README.md)")
    return path


def write_s2orc(path: Path) -> Path:
    """Forty papers citing each other in S2ORC's metadata format (each cites the next three)."""
    import json

    lines = []
    for i in range(40):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12))
        cites = [f"p{(i + k) % 40}" for k in (1, 2, 3)]
        lines.append(json.dumps({"paper_id": f"p{i}", "title": words[:40], "abstract": words, "year": 2000,
                                 "outbound_citations": cites, "inbound_citations": []}))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_hub_folder(root: Path, configs: dict) -> Path:
    """A local folder in the Hub layout: Parquet files per config and split, plus README.md with YAML
    ``configs:`` (what ``datasets.load_dataset(folder, config)`` reads offline)."""
    root.mkdir(parents=True)
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split, data in splits.items():
            (root / config).mkdir(exist_ok=True)
            data.to_parquet(root / config / f"{split}.parquet")
            lines += [f"  - split: {split}", f"    path: {config}/{split}.parquet"]
    (root / "README.md").write_text("\n".join(lines + ["---", "Test copy in a Hub dataset layout."]) + "\n")
    return root


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) with a small word-piece vocabulary, saved to disk."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-bert")
    # No repeated entries: a repeat leaves a hole in the ids, and tokens added later would reuse a real id.
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *[f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"], *"abcdefghijklmnopqrstuvwxyz.,;:"]))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), model_max_length=64)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=64,
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


PAPERS = [
    {"paper_id": "p1", "title": "Garbage collection of list structure", "abstract": "We reclaim memory in a time sharing system."},
    {"paper_id": "p2", "title": "Query join index", "abstract": ""},
    {"paper_id": "p3", "title": "", "abstract": "A linear system algorithm for the matrix of a graph, with a long abstract about citation embedding of scientific documents and neural network learning on text data."},
    {"paper_id": "p4", "title": "Compiler syntax translation", "abstract": "The program translation of a language."},
    {"paper_id": "p5", "title": "Embedding", "abstract": "Document."},
]


class Interrupt(Exception):
    """What a patched encoder raises to stop a run mid-way, as a kill would."""


def counting_encodes(monkeypatch, fail_on_call: int | None = None) -> list[list[str]]:
    """Record the paper ids of every ``PaperEncoder.encode`` call (one per embed shard); raise
    :class:`Interrupt` on call ``fail_on_call``."""
    from sciembed import PaperEncoder

    calls = []
    original = PaperEncoder.encode

    def encode(self, papers, **kwargs):
        calls.append([p["paper_id"] for p in papers])
        if len(calls) == fail_on_call:
            raise Interrupt
        return original(self, papers, **kwargs)

    monkeypatch.setattr(PaperEncoder, "encode", encode)
    return calls
