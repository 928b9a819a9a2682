"""Vectors that are not numbers are never written or scored (issue 22, part 1): every path that makes or reads
vectors (the encoder on PyTorch and ONNX, ``embed``, the evaluation cache, ``read_embeddings``, training's
held-out evaluation) stops with an error naming the model or file and the first papers affected."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
from helpers import PAPERS

from sciembed import PaperEncoder
from sciembed.cli import main
from sciembed.io import NonFiniteVectorsError, file_sha256, ids_path, read_embeddings, write_embeddings

IDS = [{**paper, "paper_id": f"p{i}"} for i, paper in enumerate(PAPERS)]


@pytest.fixture(scope="module")
def nan_bert(tiny_bert, tmp_path_factory):
    """The tiny BERT with one NaN in its embedding LayerNorm: every output is NaN (a damaged checkpoint)."""
    from transformers import BertModel

    folder = tmp_path_factory.mktemp("nan-bert")
    shutil.copytree(tiny_bert, folder, dirs_exist_ok=True)
    model = BertModel.from_pretrained(tiny_bert)
    model.embeddings.LayerNorm.weight.data[0] = float("nan")
    model.save_pretrained(folder)
    return folder


def test_the_encoder_refuses_non_finite_vectors_naming_model_and_papers(nan_bert):
    encoder = PaperEncoder.from_pretrained(nan_bert, device="cpu")
    with pytest.raises(
        NonFiniteVectorsError,
        match=rf"model {nan_bert}: {len(IDS)} of {len(IDS)} vector\(s\) hold NaN or infinity "
        r"\(paper_id 'p\d', paper_id 'p\d', paper_id 'p\d' and \d more\); nothing was kept",
    ):
        encoder.encode(IDS, batch_size=len(IDS), show_progress_bar=False)


def test_the_onnx_path_refuses_to_export_or_run_non_finite_vectors(nan_bert, tiny_bert, tmp_path):
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import numpy_helper

    with pytest.raises(NonFiniteVectorsError, match=rf"model {nan_bert}: .* nothing was exported"):
        PaperEncoder.from_pretrained(nan_bert, device="cpu", backend="onnx", engine_cache=tmp_path).encode(
            IDS, show_progress_bar=False
        )
    assert not any(tmp_path.rglob("*.onnx"))
    # A cached export damaged after the fact: ONNX Runtime's vectors are checked too.
    encoder = PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="onnx", engine_cache=tmp_path)
    encoder.encode(IDS[:1], show_progress_bar=False)
    (path,) = tmp_path.rglob("model.onnx")
    graph = onnx.load(path)
    weight = next(
        t
        for t in graph.graph.initializer
        if t.data_type == onnx.TensorProto.FLOAT and numpy_helper.to_array(t).size > 8
    )
    weight.CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(weight), np.nan), weight.name))
    onnx.save(graph, path)
    damaged = PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="onnx", engine_cache=tmp_path)
    with pytest.raises(NonFiniteVectorsError, match=rf"model {tiny_bert}: .*paper_id 'p0'"):
        damaged.encode(IDS, show_progress_bar=False)


def test_the_openvino_path_refuses_to_convert_non_finite_vectors(nan_bert, tmp_path):
    pytest.importorskip("openvino")
    with pytest.raises(NonFiniteVectorsError, match=rf"model {nan_bert}: .* nothing was exported"):
        PaperEncoder.from_pretrained(nan_bert, device="cpu", backend="openvino", engine_cache=tmp_path).encode(
            IDS, show_progress_bar=False
        )
    assert not list(tmp_path.glob("*/*"))


def test_embed_exits_with_an_error_and_writes_nothing(nan_bert, tmp_path, caplog):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in IDS))
    for output in (tmp_path / "vectors.jsonl", tmp_path / "vectors.npy", tmp_path / "vectors.parquet"):
        assert (
            main(["embed", "--model", str(nan_bert), "--input", str(papers), "--output", str(output), "--no-progress"])
            == 2
        )
        assert "hold NaN or infinity" in caplog.text and "paper_id 'p" in caplog.text
        assert sorted(p.name for p in tmp_path.iterdir()) == ["papers.jsonl"]


def test_write_embeddings_refuses_non_finite_vectors_and_leaves_no_file(tmp_path):
    vectors = np.ones((3, 4), dtype=np.float32)
    vectors[1, 2] = np.inf
    for output in (tmp_path / "v.jsonl", tmp_path / "v.npy", tmp_path / "v.parquet"):
        with pytest.raises(NonFiniteVectorsError, match=r"1 of 3 vector\(s\) hold NaN or infinity \('b'\)"):
            write_embeddings(output, [(["a", "b", "c"], vectors)], total=3, dim=4)
        assert list(tmp_path.iterdir()) == []


def test_read_embeddings_refuses_non_finite_vectors_in_each_format(tmp_path):
    jsonl = tmp_path / "v.jsonl"
    jsonl.write_text('{"paper_id": "a", "embedding": [1.0, 2.0]}\n{"paper_id": "b", "embedding": [NaN, 2.0]}\n')
    with pytest.raises(NonFiniteVectorsError, match=rf"{jsonl}: 1 of 2 vector\(s\) hold NaN or infinity \('b'\)"):
        read_embeddings(jsonl)
    npy = tmp_path / "v.npy"
    np.save(npy, np.array([[1.0, np.nan], [1.0, 2.0]], dtype=np.float32))
    ids_path(npy).write_text('["x", "y"]')
    with pytest.raises(NonFiniteVectorsError, match=r"\('x'\)"):
        read_embeddings(npy)
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "v.parquet"
    pq.write_table(pa.table({"paper_id": ["a"], "embedding": [[float("-inf"), 1.0]]}), parquet)
    with pytest.raises(NonFiniteVectorsError, match=r"\('a'\)"):
        read_embeddings(parquet)


def test_neighbours_on_a_file_with_nan_vectors_is_refused(tmp_path, caplog):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in IDS))
    vectors = tmp_path / "v.jsonl"
    vectors.write_text(
        "".join(
            json.dumps({"paper_id": p["paper_id"], "embedding": [float(i), 1.0]}) + "\n" for i, p in enumerate(IDS)
        ).replace("[3.0", "[NaN")
    )
    assert (
        main(
            ["neighbours", "--papers", str(papers), "--embeddings", str(vectors), "--query-ids", "p0", "--no-progress"]
        )
        == 2
    )
    assert "hold NaN or infinity ('p3')" in caplog.text


@pytest.mark.parametrize("command", ["neighbours", "evaluate"])
def test_an_all_zero_vector_in_an_embedding_file_is_named(tmp_path, caplog, command):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in IDS))
    vectors = tmp_path / "v.jsonl"
    vectors.write_text(
        "".join(
            json.dumps({"paper_id": p["paper_id"], "embedding": [0.0, 0.0] if i == 2 else [float(i), 1.0]}) + "\n"
            for i, p in enumerate(IDS)
        )
    )
    if command == "neighbours":
        argv = ["neighbours", "--papers", str(papers), "--embeddings", str(vectors), "--no-progress"]
    else:
        qrels = tmp_path / "qrels.tsv"
        qrels.write_text("".join(f"{IDS[i]['paper_id']}\t{IDS[i + 1]['paper_id']}\t1\n" for i in range(4)))
        argv = ["evaluate", "--benchmark", "retrieval", "--data", str(qrels), "--papers", str(papers)]
        argv += ["--embeddings", str(vectors)]
    assert main(argv) == 2
    assert "1 vector(s) are all zeros ('p2')" in caplog.text


def test_a_cache_shard_holding_nan_is_dropped_and_embedded_again(tiny_encoder, tmp_path, caplog):
    from sciembed.evaluation.cache import EmbeddingCache

    texts = tiny_encoder.texts(PAPERS)
    cache = EmbeddingCache(tiny_encoder, tmp_path)
    expected = cache.embed(texts, show_progress_bar=False)
    # A shard an older sciembed wrote with NaN in it (its recorded hash made to match, as that writer's would).
    (shard,) = cache.folder.glob("shard-*.npy")
    damaged = np.load(shard)
    damaged[0, 0] = np.nan
    np.save(shard, damaged)
    keys = shard.with_suffix(".json")
    keys.write_text(json.dumps({**json.loads(keys.read_text()), "npy_sha256": file_sha256(shard)}))
    with caplog.at_level(logging.WARNING):
        again = EmbeddingCache(tiny_encoder, tmp_path).embed(texts, show_progress_bar=False)
    assert "it holds NaN or infinity" in caplog.text and str(shard) in caplog.text
    np.testing.assert_allclose(again, expected, atol=1e-6)


def test_training_held_out_evaluation_stops_on_a_model_that_diverged(tiny_bert, tmp_path):
    import torch

    from sciembed.training.examples import CitationFiles
    from sciembed.training.run import prepare

    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({**PAPERS[i % len(PAPERS)], "paper_id": f"p{i}"}) + "\n" for i in range(12)))
    cites = tmp_path / "cites.csv"
    cites.write_text("citing,cited\n" + "".join(f"p{i},p{(i + k) % 12}\n" for i in range(12) for k in (1, 2)))
    run = prepare(
        "specter",
        tiny_bert,
        CitationFiles(papers, cites),
        tmp_path / "run",
        {"data.held_out": 0.3, "embedding.max_length": 16, "max_steps": 1, "save_strategy": "no"},
    )
    with torch.no_grad():
        next(run.trainer.model.parameters()).fill_(float("nan"))
    with pytest.raises(NonFiniteVectorsError, match="hold NaN or infinity"):
        run.trainer.evaluate()


def _parquet(table):
    import pyarrow as pa
    import pyarrow.parquet as pq

    return lambda path: pq.write_table(pa.table(table), path)


def _npy(array):
    def write(path):
        np.save(path, array)
        ids_path(path).write_text(json.dumps([str(i) for i in range(len(array))]))

    return write


@pytest.mark.parametrize(
    ("suffix", "write", "message"),
    [
        (
            ".jsonl",
            lambda p: p.write_text(
                '{"paper_id": "a", "embedding": [1.0, 2.0]}\n{"paper_id": "b", "embedding": [1.0, "x"]}\n'
            ),
            r"v\.jsonl, line 2 \(paper_id 'b'\): its embedding holds something other than numbers",
        ),
        (
            ".jsonl",
            lambda p: p.write_text(
                '{"paper_id": "a", "embedding": [1.0, 2.0]}\n{"paper_id": "b", "embedding": [1.0]}\n'
            ),
            r"v\.jsonl, line 2 \(paper_id 'b'\): its embedding is not a list of 2 numbers",
        ),
        (
            ".parquet",
            _parquet({"paper_id": ["a"], "embedding": ["0.1 0.2"]}),
            r"v\.parquet: column 'embedding' holds string, expected a list of numbers",
        ),
        (".parquet", _parquet({"id": ["a"]}), r"v\.parquet: no 'paper_id' column \(columns: id\)"),
        (
            ".parquet",
            _parquet({"paper_id": ["a", "b", "c"], "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5]]}),
            r"v\.parquet: column 'embedding' holds lists of 2 different lengths \(\[1, 2\]\): row 2 \(paper_id 'c'\)",
        ),
        (
            ".npy",
            lambda p: (np.save(p, np.ones((1, 2))), ids_path(p).write_text('{"ids": ["a"]}')),
            r"v\.ids\.json: no npy_sha256, the checksum of v\.npy that ties the ids to the vectors",
        ),
        (".parquet", lambda p: p.write_bytes(b"PAR1 not really"), r"v\.parquet: not a readable Parquet file"),
        (
            ".npy",
            _npy(np.array(["a", "b"])),
            r"v\.npy: holds a <U1 array of shape \(2,\), expected \(papers, dimensions\) numbers",
        ),
    ],
)
def test_read_embeddings_names_the_file_and_row_of_a_malformed_file(tmp_path, suffix, write, message):
    """Issue 22, part 6: wrong types in a user's vector file give one line naming the file and the column or row."""
    path = tmp_path / f"v{suffix}"
    write(path)
    with pytest.raises(ValueError, match=message):
        read_embeddings(path)
