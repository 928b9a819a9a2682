"""``sciembed index``: the commands a user runs, their exit codes and their one-line messages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import PAPERS

from sciembed.cli import main
from sciembed.io import write_embeddings


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    path = tmp_path_factory.mktemp("cli") / "vectors.npy"
    write_embeddings(path, [([f"p{i}" for i in range(400)], vectors)], total=400, dim=16)
    return path


@pytest.fixture(scope="module")
def index(vectors_file):
    folder = vectors_file.parent / "papers.index"
    assert main(["index", "build", str(vectors_file), "--output", str(folder), "--kind", "binary"]) == 0
    return folder


def test_build_search_info_and_check(index, capsys, tmp_path):
    capsys.readouterr()
    assert main(["index", "search", str(index), "--ids", "p1", "p2", "-k", "3"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("p1\n   1. ") and printed.count("[p") == 6 and "[p1]" not in printed
    assert main(["index", "search", str(index), "--ids", "p1", "--output", str(tmp_path / "r.jsonl")]) == 0
    record = json.loads((tmp_path / "r.jsonl").read_text())
    assert record["query"] == "p1" and len(record["neighbours"]) == 10
    assert main(["index", "info", str(index)]) == 0
    assert "kind: binary\n" in capsys.readouterr().out
    assert main(["index", "check", str(index), "-q"]) == 0  # -v and -q are taken after the action too


def test_bad_input_exits_2_with_one_message(index, vectors_file, caplog, tmp_path):
    narrow = tmp_path / "narrow.npy"
    write_embeddings(narrow, [(["n0", "n1"], np.eye(2, 8, dtype=np.float32))], total=2, dim=8)
    build = ["index", "build", str(vectors_file), "--output", str(tmp_path / "i")]
    cases = [
        (
            ["index", "build", str(narrow), "--output", str(tmp_path / "i"), "--trained-like", str(index)],
            r"narrow\.npy: vectors of size 8, the index .* \(--trained-like\) holds size 16",
        ),
        ([*build, "--kind", "pq", "--pq-m", "5"], r"--pq-m 5 \(pq_m=\) must divide the dimension 16 .*1, 2, 4, 8, 16"),
        ([*build, "--kind", "pq", "--nlist", "5000"], r"--nlist 5000 .* a sample of 400: give --nlist 10 or fewer"),
        (["index", "search", str(index), "--ids", "p1", "--multiplier", "0"], r"multiplier \(--multiplier\) must be"),
        (["index", "search", str(index), "--ids", "p1", "--nprobe", "-2"], r"nprobe \(--nprobe\) must be positive"),
        (["index", "search", str(index), "--ids", "nope"], r"1 id\(s\) not among the 400 papers .*'nope'"),
        (["index", "search", str(index), "--query", "graphs"], r"does not know the model .*--model NAME"),
        (["index", "build", str(vectors_file), "--output", str(index)], r"exists; pass --overwrite"),
        (
            ["index", "build", str(vectors_file), "--output", str(tmp_path / "i"), "--memory", "100"],
            r"into 8 shards of at most 50 papers",
        ),
        (["index", "info", str(tmp_path)], r"no manifest\.json, so not a sciembed index"),
        ([*build, "--confidence", "1"], r"--confidence \(confidence=\) must lie strictly between 0 and 1, got 1\.0"),
        ([*build, "--confidence", "0"], r"--confidence \(confidence=\) must lie strictly between 0 and 1, got 0\.0"),
        (["index", "build", str(tmp_path / "none.npy"), "--output", str(tmp_path / "i")], r"none\.npy .*no such"),
    ]
    for argv, message in cases:
        caplog.clear()
        assert main(argv) == 2, argv
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and "Traceback" not in caplog.text, caplog.text
        assert re.search(message, errors[0].getMessage()), errors[0].getMessage()


def test_confidence_sets_the_bound_the_build_prints_and_info_shows(vectors_file, tmp_path, capsys):
    folder = tmp_path / "i"
    build = ["index", "build", str(vectors_file), "--output", str(folder), "--kind", "binary", "--confidence", "0.9"]
    assert main(build) == 0
    printed = capsys.readouterr().out
    assert re.search(r"recall@10 0\.\d{3}, at least 0\.9[5-9]\d with confidence 0\.9 \(multiplier", printed), printed
    assert main(["index", "info", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert "confidence: 0.9\n" in shown and "tuning_queries: 400\n" in shown and "recall_bounded: True\n" in shown
    assert re.search(r"recall_at_10_lower_bound: 0\.9[5-9]", shown), shown


def test_too_few_papers_to_bound_the_target_are_said_so(tmp_path, capsys, caplog):
    vectors = np.random.default_rng(1).standard_normal((30, 16)).astype(np.float32)
    write_embeddings(tmp_path / "few.npy", [([f"p{i}" for i in range(30)], vectors)], total=30, dim=16)
    build = ["index", "build", str(tmp_path / "few.npy"), "--output", str(tmp_path / "i"), "--kind", "int8"]
    assert main([*build, "--target-recall", "0.985"]) == 0  # the mean of the 30 papers reaches 0.985, the bound not
    assert re.search(r"at least 0\.9\d\d with confidence 0\.95, below the target 0\.985", capsys.readouterr().out)
    assert "the 30 held-out papers reaches the target 0.985, but its lower bound" in caplog.text
    assert "--confidence (confidence=)" in caplog.text
    assert main(["index", "info", str(tmp_path / "i")]) == 0
    assert "recall_bounded: False\n" in capsys.readouterr().out


def test_check_names_a_tampered_file(index, tmp_path, caplog):
    import shutil

    copy = shutil.copytree(index, tmp_path / "copy")
    order = copy / "ids.order.npy"
    data = bytearray(order.read_bytes())
    data[-8:] = bytes(reversed(data[-8:]))
    order.write_bytes(bytes(data))
    assert main(["index", "check", str(copy)]) == 2
    assert "ids.order.npy: its sha256 differs" in caplog.text


def test_free_text_search_after_sciembed_embed(tiny_bert, tmp_path, capsys):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    out = tmp_path / "vectors.parquet"
    assert (
        main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(out), "--no-progress"]) == 0
    )
    assert json.loads((tmp_path / "vectors.parquet.meta.json").read_text())["name"] == str(tiny_bert)
    assert main(["index", "build", str(out), "--output", str(tmp_path / "index"), "--kind", "exact"]) == 0
    capsys.readouterr()
    assert main(["index", "search", str(tmp_path / "index"), "--query", "garbage collection", "-k", "2"]) == 0
    assert capsys.readouterr().out.startswith("garbage collection\n   1. ")


def test_neighbours_with_an_index_gives_the_index_search_results(tiny_bert, tmp_path):
    from sciembed import PaperIndex, neighbours

    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    vectors = tmp_path / "vectors.npy"
    assert main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(vectors)]) == 0
    index = PaperIndex.build(vectors, tmp_path / "index", kind="binary")
    searched = index.search(ids=["p1", "p2"], top_k=3)
    result = neighbours(papers=papers, index=tmp_path / "index", query_ids=["p1", "p2"], top_k=3)
    assert [[n["paper_id"] for n in result.neighbours_of(q)] for q in ("p1", "p2")] == searched.ids
    np.testing.assert_array_equal(result.scores, searched.scores)
    out = tmp_path / "n.jsonl"
    argv = ["neighbours", "--papers", str(papers), "--index", str(tmp_path / "index"), "--query-ids", "p1"]
    assert main([*argv, "--top-k", "3", "--output", str(out)]) == 0
    assert [n["paper_id"] for n in json.loads(out.read_text())["neighbours"]] == searched.ids[0]


def test_parts_built_alike_merge_and_parts_built_apart_are_refused(vectors_file, tmp_path, caplog):
    part = ["index", "build", str(vectors_file), "--kind", "binary", "--output"]
    assert main([*part, str(tmp_path / "a")]) == 0
    assert main([*part, str(tmp_path / "b"), "--trained-like", str(tmp_path / "a")]) == 0
    assert main([*part, str(tmp_path / "c"), "--no-centre"]) == 0
    merge = ["index", "merge", str(tmp_path / "a"), "--output", str(tmp_path / "m")]
    assert main([*merge[:3], str(tmp_path / "c"), *merge[3:]]) == 2
    assert "c was trained apart from" in caplog.text
    assert main([*merge[:3], str(tmp_path / "b"), *merge[3:]]) == 2  # the same papers twice
    assert re.search(r"paper_id 'p0' has two vectors \(rows 0 and 400", caplog.text)


def test_search_over_parts_gives_the_merged_index_results(tmp_path, capsys, caplog):
    rng = np.random.default_rng(1)
    for n in range(2):
        ids = [f"p{i}" for i in range(200 * n, 200 * n + 200)]
        vectors = rng.standard_normal((200, 16)).astype(np.float32)
        write_embeddings(tmp_path / f"v{n}.npy", [(ids, vectors)], total=200, dim=16)
    build = ["index", "build", "--kind", "int8", "--output"]
    assert main([*build, str(tmp_path / "a"), str(tmp_path / "v0.npy")]) == 0
    assert main([*build, str(tmp_path / "b"), str(tmp_path / "v1.npy"), "--trained-like", str(tmp_path / "a")]) == 0
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "--output", str(tmp_path / "m")]) == 0
    search = ["index", "search", "--ids", "p3", "p250", "-k", "5", "--output"]
    assert main([*search, str(tmp_path / "m.jsonl"), str(tmp_path / "m")]) == 0
    assert main([*search, str(tmp_path / "s.jsonl"), str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert (tmp_path / "s.jsonl").read_text() == (tmp_path / "m.jsonl").read_text()
    assert main([*search, str(tmp_path / "x.jsonl"), str(tmp_path / "a"), str(tmp_path / "a")]) == 2
    assert "paper_id 'p0' is in two index parts" in caplog.text


def test_neighbours_from_vectors_or_an_index_refuse_the_options_of_a_model(tmp_path, caplog, capsys):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    ids = [p["paper_id"] for p in PAPERS]
    vectors = np.random.default_rng(0).standard_normal((len(ids), 8)).astype(np.float32)
    write_embeddings(tmp_path / "v.npy", [(ids, vectors)], total=len(ids), dim=8)
    assert main(["index", "build", str(tmp_path / "v.npy"), "--output", str(tmp_path / "ix"), "--kind", "exact"]) == 0
    for option, source in (("--embeddings", tmp_path / "v.npy"), ("--index", tmp_path / "ix")):
        caplog.clear()
        argv = ["neighbours", "--papers", str(papers), option, str(source), "--query-ids", ids[0]]
        assert main([*argv, "--device", "cpu", "--max-length", "16"]) == 2
        assert f"--max-length, --device: with {option} (" in caplog.text, caplog.text
        assert main(argv) == 0


def test_check_and_info_of_shards_cover_every_part(tmp_path, capsys, caplog):
    from sciembed import PaperIndex

    rng = np.random.default_rng(2)
    for n in range(2):
        ids = [f"p{i}" for i in range(200 * n, 200 * n + 200)]
        vectors = rng.standard_normal((200, 16)).astype(np.float32)
        write_embeddings(tmp_path / f"v{n}.npy", [(ids, vectors)], total=200, dim=16)
    build = ["index", "build", "--kind", "binary", "--output"]
    parts = [str(tmp_path / "shards" / "part-0000"), str(tmp_path / "shards" / "part-0001")]
    assert main([*build, parts[0], str(tmp_path / "v0.npy")]) == 0
    assert main([*build, parts[1], str(tmp_path / "v1.npy"), "--trained-like", parts[0]]) == 0
    disk = sum(p.stat().st_size for part in parts for p in Path(part).iterdir() if p.name != "manifest.json")
    for given in (parts, [str(tmp_path / "shards")]):  # the parts, or the folder of part-* folders
        capsys.readouterr()
        assert main(["index", "info", *given]) == 0
        printed = capsys.readouterr().out
        assert "papers: 400\n" in printed and f"disk_bytes: {disk}\n" in printed and f"parts: {parts}\n" in printed
    store = Path(parts[1]) / "store.npy"
    data = bytearray(store.read_bytes())
    data[-1] ^= 1
    store.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"part-0001/store\.npy: its sha256 differs"):
        PaperIndex.load_shards(parts).check()
    for given in (parts, [str(tmp_path / "shards")]):
        caplog.clear()
        assert main(["index", "check", *given]) == 2
        assert "part-0001/store.npy: its sha256 differs" in caplog.text
