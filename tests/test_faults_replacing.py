"""A run never silently replaces earlier work (issue 22, part 3): an output that exists is refused, naming it and
the remedy, before the model is loaded; ``--overwrite`` replaces it."""

from __future__ import annotations

import json

import pytest

from helpers import PAPERS, counting_encodes
from sciembed.cli import main
from sciembed.commands.embed import embed_to_file
from sciembed.io import ids_path, read_embeddings


def _papers(tmp_path):
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".npy", ".parquet", ""])
def test_embed_refuses_an_existing_output_before_loading_the_model(tiny_bert, tmp_path, caplog, suffix):
    papers, output = _papers(tmp_path), tmp_path / f"vectors{suffix}"
    command = ["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(output), "--no-progress"]
    assert main(command) == 0
    first = read_embeddings(output)
    caplog.clear()
    # A model that does not exist: the refusal must come before any attempt to load it.
    assert main([*command[:2], str(tmp_path / "no-such-model"), *command[3:]]) == 2
    assert f"{output} exists" in caplog.text and "--overwrite" in caplog.text
    assert read_embeddings(output)[0] == first[0]
    assert main([*command, "--overwrite", "--max-length", "8"]) == 0
    assert read_embeddings(output)[0] == first[0]


def test_embed_refuses_a_stray_ids_file_of_an_npy_output(tiny_encoder, tmp_path, monkeypatch):
    output = tmp_path / "vectors.npy"
    ids_path(output).write_text('["someone else\'s"]')
    calls = counting_encodes(monkeypatch)
    with pytest.raises(FileExistsError, match=r"vectors\.ids\.json exists"):
        embed_to_file(tiny_encoder, PAPERS, output, show_progress_bar=False)
    assert calls == [] and not output.exists()


def test_neighbours_refuses_an_existing_output(tiny_bert, tmp_path, caplog):
    papers, output = _papers(tmp_path), tmp_path / "neighbours.csv"
    output.write_text("earlier results\n")
    assert main(["neighbours", "--model", str(tiny_bert), "--papers", str(papers), "--output", str(output), "--no-progress"]) == 2
    assert f"{output} exists" in caplog.text and output.read_text() == "earlier results\n"
