"""Defaults that once changed results without a word (issue 14's second class): a pooling chosen on the
command line over a sentence-transformers folder keeps the folder's text length and says which it used."""

from __future__ import annotations

import json

import numpy as np
from helpers import PAPERS

import sciembed
from sciembed.cli import main
from sciembed.io import read_embeddings


def test_another_pooling_over_a_sentence_transformers_folder_keeps_its_length(tiny_st_base, tmp_path, caplog):
    """`--pooling cls` reads a sentence-transformers folder as a plain transformer but keeps the folder's
    max_seq_length (as all-MiniLM-L6-v2 writes it: 256 where its tokenizer says 512), not the tokenizer's or
    the transformer's limit, unless a length is given; the length used is logged."""
    import logging
    import shutil

    folder = shutil.copytree(tiny_st_base, tmp_path / "st")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 8, "do_lower_case": False}))
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    caplog.set_level(logging.INFO, logger="sciembed")
    assert (
        main(
            [
                "embed",
                "--model",
                str(folder),
                "--pooling",
                "cls",
                "--input",
                str(papers),
                "--output",
                str(tmp_path / "cls.npy"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "pooling cls over its transformer, at its sentence-transformers max_seq_length 8" in caplog.text
    expected = sciembed.PaperEncoder.from_pretrained(folder, pooling="cls", max_length=8, device="cpu").encode(
        PAPERS, show_progress_bar=False
    )
    np.testing.assert_allclose(read_embeddings(tmp_path / "cls.npy")[1], expected, atol=1e-5, rtol=0)
    longer = sciembed.PaperEncoder.from_pretrained(folder, pooling="cls", max_length=32, device="cpu")
    assert longer.max_length == 32 and not np.allclose(
        longer.encode(PAPERS, show_progress_bar=False), expected, atol=1e-4
    )
