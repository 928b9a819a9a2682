"""The sharded embed job: output equals one pass; an interrupted run resumes from its finished shards."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import PAPERS, Interrupt, counting_encodes

from sciembed import PaperEncoder
from sciembed.io import read_embeddings
from sciembed.jobs.embed import embed_to_file, partial_dir

PAPERS_11 = [{**PAPERS[i % len(PAPERS)], "paper_id": f"id{i}"} for i in range(11)]


def _interrupted(encoder, output, monkeypatch, fail_on_call):
    """Leave an unfinished run of ``output`` behind: the encoder fails on its ``fail_on_call``-th shard (no cache:
    the papers repeat texts, which the cache would embed once)."""
    counting_encodes(monkeypatch, fail_on_call=fail_on_call)
    with pytest.raises(Interrupt):
        embed_to_file(encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False, use_cache=False)
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
    calls = counting_encodes(monkeypatch, fail_on_call=3)
    with pytest.raises(Interrupt):
        embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False, use_cache=False)
    assert not output.exists()
    assert sorted(p.name for p in partial_dir(output).iterdir()) == ["manifest.json", "parts"]
    assert sorted(p.name for p in (partial_dir(output) / "parts").iterdir()) == [
        "part-00000.parquet",
        "part-00001.parquet",
    ]

    with pytest.raises(FileExistsError, match=r"2 shard\(s\) done.*--resume"):
        embed_to_file(tiny_encoder, PAPERS_11, output, shard_size=4, show_progress_bar=False, use_cache=False)

    calls.clear()
    report = embed_to_file(
        tiny_encoder, PAPERS_11, output, shard_size=4, resume=True, show_progress_bar=False, use_cache=False
    )
    assert calls == [["id8", "id9", "id10"]]  # only the unfinished shard is encoded again
    assert (report.shards, report.resumed_shards, report.encoded_papers) == (3, 2, 3) and report.seconds > 0
    assert (
        report.summary().startswith("embedded 3 papers in ")
        and "; 2 shard(s) were done by an earlier run; wrote 11 x 32 embeddings to" in report.summary()
    )
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
    report = embed_to_file(
        tiny_encoder, PAPERS_11, tmp_path / "o.parquet", shard_size=100, resume=True, show_progress_bar=False
    )
    assert (report.shards, report.resumed_shards) == (1, 0)
