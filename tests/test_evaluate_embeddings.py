"""`sciembed evaluate --embeddings` (``evaluate(..., embeddings=...)``) scores the vectors `sciembed embed` wrote: the
same numbers as `evaluate --model` on the same papers, and a clear refusal where the file cannot hold what a task
needs (papers without a vector, two vectors for one paper, an encoder option without the model); what the file cannot
hold is embedded by the model its stamp names, and a model given must be that model."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from helpers import WORDS

from sciembed.cli import main
from sciembed.evaluation import evaluate
from sciembed.evaluation.benchmarks import Candidates, ClassificationOptions, RetrievalOptions
from sciembed.io import file_sha256, write_embeddings
from sciembed.jobs.embed import embed_to_file


@pytest.fixture(scope="module")
def own_files(tmp_path_factory) -> Path:
    """Thirty papers, a labels file with a split column, graded qrels over paper queries and a text queries file."""
    folder = tmp_path_factory.mktemp("own")
    rng = np.random.default_rng(3)
    papers = [
        {"paper_id": f"d{i}", "title": " ".join(rng.choice(WORDS, 4)), "abstract": " ".join(rng.choice(WORDS, 12))}
        for i in range(30)
    ]
    (folder / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers))
    (folder / "labels.csv").write_text(
        "paper_id,label,split\n" + "".join(f"d{i},{'abc'[i % 3]},{'train' if i < 21 else 'test'}\n" for i in range(30))
    )
    (folder / "qrels.tsv").write_text(
        "".join(f"d{q}\td{(q * 7 + k) % 30}\t{k % 3}\n" for q in range(8) for k in (1, 2, 3, 4))
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{q}", "text": "graph memory"}) + "\n" for q in range(8))
    )
    return folder


@pytest.mark.parametrize("suffix", [".npy", ".parquet", ""])
def test_evaluate_embeddings_equals_evaluate_model_in_python(tiny_encoder, own_files, tmp_path, suffix):
    vectors = tmp_path / f"vectors{suffix}"
    embed_to_file(tiny_encoder, own_files / "papers.jsonl", vectors, shard_size=7, show_progress_bar=False)
    papers = own_files / "papers.jsonl"
    runs = [
        ("classification", own_files / "labels.csv", ClassificationOptions(papers=papers)),
        ("retrieval", own_files / "qrels.tsv", RetrievalOptions(papers=papers, candidates=Candidates.ALL)),
        ("retrieval", own_files / "qrels.tsv", RetrievalOptions(papers=papers, candidates=Candidates.JUDGED)),
    ]
    for benchmark, data, options in runs:
        common = dict(options=options, n_jobs=1)
        embedded = evaluate(tiny_encoder, benchmark, data, use_cache=False, show_progress_bar=False, **common)
        read = evaluate(None, benchmark, data, embeddings=vectors, **common)
        assert read.results[0].metrics == pytest.approx(embedded.results[0].metrics, abs=1e-4)
        assert read.model == embedded.model and read.settings["embeddings"] == str(vectors)
        assert read.inputs["papers"] == embedded.inputs["papers"] == {"papers.jsonl": file_sha256(papers)}
        assert {name: sorted(files) for name, files in read.inputs.items() if name.startswith("embeddings")} == {
            ".npy": {"embeddings": ["vectors.npy"], "embeddings_ids": ["vectors.ids.json"]},
            ".parquet": {"embeddings": ["vectors.parquet"]},
            "": {"embeddings": [f"part-0000{i}.parquet" for i in range(5)]},
        }[suffix]


def test_evaluate_embeddings_equals_evaluate_model_on_the_command_line(tiny_bert, own_files, tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    papers, vectors = own_files / "papers.jsonl", tmp_path / "vectors.jsonl"
    assert main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]) == 0
    command = ["evaluate", "--benchmark", "classification", "--data", str(own_files / "labels.csv"), "--jobs", "1"]
    command += ["--papers", str(papers)]
    assert main([*command, "--model", str(tiny_bert), "--no-cache", "--output", str(tmp_path / "model.json")]) == 0
    assert main([*command, "--embeddings", str(vectors), "--output", str(tmp_path / "file.json")]) == 0, caplog.text
    scores = [
        {row["metric"]: row["value"] for row in json.loads((tmp_path / name).read_text())["results"]}
        for name in ("model.json", "file.json")
    ]
    assert scores[1] == pytest.approx(scores[0], abs=1e-4) and scores[0]
    settings = json.loads((tmp_path / "file.json").read_text())["settings"]
    assert settings["papers"] == str(papers) and settings["embeddings"] == str(vectors)


def test_what_an_embedding_file_cannot_hold_is_refused_before_scoring(tiny_bert, own_files, tmp_path, caplog):
    ids = [f"d{i}" for i in range(30)]
    vectors = np.random.default_rng(0).standard_normal((30, 8)).astype(np.float32)
    write_embeddings(tmp_path / "all.npy", [(ids, vectors)], total=30, dim=8)
    write_embeddings(tmp_path / "short.jsonl", [(ids[1:], vectors[1:])], total=29, dim=8)
    command = ["evaluate", "--benchmark", "retrieval", "--data", str(own_files / "qrels.tsv")]
    command += ["--papers", str(own_files / "papers.jsonl")]
    cases = [
        (["--embeddings", str(tmp_path / "short.jsonl")], "has no vector for 1 of the 30 papers of retrieval"),
        (["--embeddings", str(tmp_path / "all.npy"), "--queries", str(own_files / "queries.jsonl")], "no model stamp"),
        (["--embeddings", str(tmp_path / "all.npy"), "--max-length", "16"], "--max-length: with --embeddings"),
        (["--embeddings", str(tmp_path / "all.npy"), "--model", str(tiny_bert), "--text-fields", "title"], "fixed"),
    ]
    for extra, message in cases:
        caplog.clear()
        assert main([*command, *extra]) == 2, extra
        assert message in caplog.text and "Traceback" not in caplog.text, caplog.text


def test_an_embedding_file_giving_a_paper_two_vectors_or_two_sizes_is_refused(tmp_path):
    from sciembed.io import read_embeddings

    vectors = np.eye(3, dtype=np.float32)
    write_embeddings(tmp_path / "twice.jsonl", [(["a", "b", "a"], vectors)], total=3, dim=3)
    with pytest.raises(ValueError, match=r"paper_id 'a' has two vectors \(rows 0 and 2"):
        read_embeddings(tmp_path / "twice.jsonl")
    (tmp_path / "parts").mkdir()
    write_embeddings(tmp_path / "parts" / "part-00000.parquet", [(["a"], vectors[:1])], total=1, dim=3)
    write_embeddings(tmp_path / "parts" / "part-00001.parquet", [(["b"], np.ones((1, 4), np.float32))], total=1, dim=4)
    with pytest.raises(ValueError, match="part-00001.parquet: vectors of size 4, part-00000.parquet holds size 3"):
        read_embeddings(tmp_path / "parts")


# The model that made the vectors: the stamp beside the file -------------------------------------------------------


def _retrieval(own_files: Path, *extra: str) -> list[str]:
    command = ["evaluate", "--benchmark", "retrieval", "--data", str(own_files / "qrels.tsv"), "--no-cache"]
    return [*command, "--papers", str(own_files / "papers.jsonl"), "--no-progress", *extra]


def test_text_queries_are_embedded_by_the_stamped_model_with_the_numbers_of_evaluate_model(
    tiny_bert, own_files, tmp_path, caplog
):
    papers, vectors = own_files / "papers.jsonl", tmp_path / "vectors.npy"
    assert main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]) == 0
    queries = ["--queries", str(own_files / "queries.jsonl")]
    assert main(_retrieval(own_files, *queries, "--model", str(tiny_bert), "--output", str(tmp_path / "m.json"))) == 0
    assert (
        main(_retrieval(own_files, *queries, "--embeddings", str(vectors), "--output", str(tmp_path / "f.json"))) == 0
    )
    model, read = (json.loads((tmp_path / name).read_text()) for name in ("m.json", "f.json"))
    assert [r["value"] for r in read["results"]] == pytest.approx([r["value"] for r in model["results"]], abs=1e-4)
    assert read["model"] == model["model"] == str(tiny_bert)
    assert read["settings"]["revision"] == model["settings"]["revision"]
    assert read["embedding"]["model_stamp"]["name"] == str(tiny_bert) and read["embedding"]["texts_encoded"] == 1


def test_a_model_other_than_the_stamped_one_is_refused_naming_both(tiny_bert, own_files, tmp_path, caplog):
    papers, vectors = own_files / "papers.jsonl", tmp_path / "vectors.jsonl"
    assert main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]) == 0
    caplog.clear()
    other = ["--model", str(tiny_bert), "--pooling", "mean"]
    assert main(_retrieval(own_files, "--embeddings", str(vectors), *other)) == 2
    assert f"{vectors} was embedded with {tiny_bert}" in caplog.text and "but the model given" in caplog.text
    assert "Traceback" not in caplog.text
    with pytest.raises(ValueError, match="embeds a probe paper differently"):
        evaluate(
            lambda: __import__("sciembed").Encoder.from_pretrained(tiny_bert, pooling="mean"),
            "retrieval",
            own_files / "qrels.tsv",
            embeddings=vectors,
            options=RetrievalOptions(papers=papers, queries=own_files / "queries.jsonl"),
        )


def test_a_file_without_a_stamp_is_scored_with_a_warning_and_takes_the_model_for_queries(
    tiny_bert, own_files, tmp_path, caplog
):
    papers, vectors = own_files / "papers.jsonl", tmp_path / "vectors.npy"
    assert main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]) == 0
    (tmp_path / "vectors.npy.meta.json").unlink()
    caplog.clear()
    assert main(_retrieval(own_files, "--embeddings", str(vectors), "--output", str(tmp_path / "r.json"))) == 0
    assert "has no model stamp (vectors.npy.meta.json" in caplog.text and "cannot be checked" in caplog.text
    assert json.loads((tmp_path / "r.json").read_text())["model"] == f"vectors read from {vectors}"
    queries = ["--queries", str(own_files / "queries.jsonl"), "--model", str(tiny_bert)]
    assert main(_retrieval(own_files, "--embeddings", str(vectors), *queries)) == 0, caplog.text


def test_vectors_embedded_from_other_fields_than_a_task_reads_are_named(tiny_bert, own_files, tmp_path, caplog):
    papers, vectors = own_files / "papers.jsonl", tmp_path / "vectors.npy"
    embed = ["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]
    assert main([*embed, "--text-fields", "title"]) == 0
    caplog.clear()
    assert main(_retrieval(own_files, "--embeddings", str(vectors))) == 0
    assert (
        f"retrieval qrels reads papers as title + abstract, but the vectors of {vectors} were embedded from title"
        in (caplog.text)
    )
