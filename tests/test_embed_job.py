"""The sharded embed job: output equals one pass; an interrupted run resumes from its finished shards."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import PAPERS
from sciembed import PaperEncoder
from sciembed.embed_job import embed_to_file, partial_dir
from sciembed.embeddings_io import read_embeddings

PAPERS_11 = [{**PAPERS[i % len(PAPERS)], "paper_id": f"id{i}"} for i in range(11)]


class Interrupt(Exception):
    pass


def _counting(monkeypatch, fail_on_call=None):
    calls = []
    original = PaperEncoder.encode

    def encode(self, papers, **kwargs):
        calls.append([p["paper_id"] for p in papers])
        if len(calls) == fail_on_call:
            raise Interrupt
        return original(self, papers, **kwargs)

    monkeypatch.setattr(PaperEncoder, "encode", encode)
    return calls


def _interrupted(encoder, output, monkeypatch, fail_on_call):
    """Leave an unfinished run of ``output`` behind: the encoder fails on its ``fail_on_call``-th shard."""
    _counting(monkeypatch, fail_on_call=fail_on_call)
    with pytest.raises(Interrupt):
        embed_to_file(encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False)
    monkeypatch.undo()


@pytest.mark.parametrize("suffix", [".jsonl", ".npy", ".parquet"])
def test_shards_assemble_to_the_one_pass_result(tiny_encoder, tmp_path, suffix):
    report = embed_to_file(tiny_encoder, PAPERS_11, tmp_path / f"out{suffix}", shard_size=4, show_progress_bar=False)
    assert (report.papers, report.dim, report.shards, report.resumed_shards) == (11, 32, 3, 0)
    ids, vectors = read_embeddings(tmp_path / f"out{suffix}")
    assert ids == [p["paper_id"] for p in PAPERS_11]
    np.testing.assert_allclose(vectors, tiny_encoder.encode(PAPERS_11, show_progress_bar=False), atol=1e-5, rtol=0)
    assert not partial_dir(tmp_path / f"out{suffix}").exists()


def test_interrupted_run_resumes_from_the_last_finished_shard(tiny_encoder, tmp_path, monkeypatch):
    output = tmp_path / "out.jsonl"
    calls = _counting(monkeypatch, fail_on_call=3)
    with pytest.raises(Interrupt):
        embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False)
    assert not output.exists()
    assert sorted(p.name for p in partial_dir(output).iterdir()) == ["manifest.json", "shard-00000.npy", "shard-00001.npy"]

    with pytest.raises(FileExistsError, match=r"2 shard\(s\) done.*--resume"):
        embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False)

    calls.clear()
    report = embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, resume=True, show_progress_bar=False)
    assert calls == [["id8", "id9", "id10"]]  # only the unfinished shard is encoded again
    assert (report.shards, report.resumed_shards) == (3, 2)
    ids, vectors = read_embeddings(output)
    np.testing.assert_allclose(vectors, tiny_encoder.encode(PAPERS_11, show_progress_bar=False), atol=1e-5, rtol=0)
    assert ids == [p["paper_id"] for p in PAPERS_11] and not partial_dir(output).exists()


def test_resume_refuses_a_run_with_other_papers_or_settings(tiny_encoder, tiny_bert, tmp_path, monkeypatch):
    output = tmp_path / "out.npy"
    _interrupted(tiny_encoder, output, monkeypatch, 2)
    changed = [*PAPERS_11[:-1], {**PAPERS_11[-1], "title": "Changed"}]
    with pytest.raises(ValueError, match="differs in papers_sha256"):
        embed_to_file(tiny_encoder, changed, output, shard_size=4, resume=True, show_progress_bar=False)
    shorter = PaperEncoder.from_pretrained(tiny_bert, max_length=8, device="cpu")
    with pytest.raises(ValueError, match="differs in encoder_fingerprint, max_length"):
        embed_to_file(shorter, PAPERS_11, output, shard_size=4, resume=True, show_progress_bar=False)


def test_resume_without_a_partial_run_starts_fresh(tiny_encoder, tmp_path):
    report = embed_to_file(tiny_encoder, PAPERS_11, tmp_path / "o.parquet", shard_size=100, resume=True, show_progress_bar=False)
    assert (report.shards, report.resumed_shards) == (1, 0)


def test_resume_is_keyed_by_the_encoder_not_its_path(tiny_bert, tmp_path, monkeypatch):
    """The same model spelt `model/` resumes; other weights saved at the same path are refused."""
    import shutil

    from transformers import AutoModel

    model = shutil.copytree(tiny_bert, tmp_path / "model")
    output = tmp_path / "out.npy"
    _interrupted(PaperEncoder.from_pretrained(str(model), device="cpu"), output, monkeypatch, 2)
    report = embed_to_file(PaperEncoder.from_pretrained(f"{model}/", device="cpu"), PAPERS_11, output, shard_size=4, resume=True,
                           show_progress_bar=False)
    assert report.resumed_shards == 1

    _interrupted(PaperEncoder.from_pretrained(str(model), device="cpu"), output, monkeypatch, 2)
    changed = AutoModel.from_pretrained(model)
    with torch.no_grad():
        changed.embeddings.word_embeddings.weight.add_(0.01)
    changed.save_pretrained(model)
    with pytest.raises(ValueError, match="differs in encoder_fingerprint"):
        embed_to_file(PaperEncoder.from_pretrained(str(model), device="cpu"), PAPERS_11, output, shard_size=4, resume=True,
                      show_progress_bar=False)


@pytest.mark.parametrize("damage", ["truncated shard", "wrong width", "broken manifest"])
def test_damaged_partial_state_is_named(tiny_encoder, tmp_path, monkeypatch, damage):
    output = tmp_path / "out.jsonl"
    _interrupted(tiny_encoder, output, monkeypatch, 3)
    folder = partial_dir(output)
    if damage == "truncated shard":
        shard = folder / "shard-00001.npy"
        shard.write_bytes(shard.read_bytes()[:100])
        expected = r"shard-00001\.npy: not a readable shard"
    elif damage == "wrong width":
        np.save(folder / "shard-00001.npy", np.zeros((4, 7), dtype=np.float32))
        np.save(folder / "shard-00000.npy", np.zeros((3, 32), dtype=np.float32))
        expected = r"shard-00000\.npy: holds float32 vectors of shape \(3, 32\), expected \(4, dim\)"
    else:
        (folder / "manifest.json").write_text("{oops")
        expected = r"manifest\.json: not valid JSON"
    with pytest.raises(ValueError, match=expected):
        embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, resume=True, show_progress_bar=False)


def test_a_run_that_fails_before_any_shard_leaves_nothing_that_blocks_the_next(tiny_encoder, tmp_path, monkeypatch):
    output = tmp_path / "out.jsonl"
    with pytest.raises(ValueError, match="batch_size must be positive"):
        embed_to_file(tiny_encoder, PAPERS_11, output, batch_size=0, show_progress_bar=False)
    _interrupted(tiny_encoder, output, monkeypatch, 1)
    assert not partial_dir(output).exists()
    assert embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False).papers == 11  # no --resume needed
