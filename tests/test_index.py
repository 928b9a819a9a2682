"""The paper index (``sciembed.PaperIndex``): each kind builds, loads memory-mapped and searches; exact search equals
numpy; int8 and binary reach their recall; the manifest refuses tampered files and other models; ids are never
repeated; ``add`` equals a rebuild; builds are byte-identical."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers import PAPERS

from sciembed.index import IndexSettings, PaperIndex
from sciembed.index.settings import choose_kind
from sciembed.index.tuning import multiplier_ladder, recall
from sciembed.io import write_embeddings

N, DIM = 8000, 64


def clustered(n: int = N, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """Unit vectors around 500 random centres."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((500, dim))
    vectors = centres[rng.integers(0, 500, n)] + rng.standard_normal((n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def near(vectors: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Unit queries near ``n`` random rows of ``vectors``."""
    rng = np.random.default_rng(seed)
    queries = vectors[rng.choice(len(vectors), n, replace=False)] + 0.05 * rng.standard_normal((n, vectors.shape[1]))
    return (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)


def write(path, vectors, ids=None):
    ids = ids if ids is not None else [f"p{i}" for i in range(len(vectors))]
    write_embeddings(path, [(ids, vectors)], total=len(ids), dim=vectors.shape[1])
    return path


def brute_force(vectors, queries, k, exclude=None):
    scores = queries.astype(np.float64) @ vectors.astype(np.float64).T
    if exclude is not None:
        scores[np.arange(len(queries)), exclude] = -np.inf
    order = np.lexsort((np.broadcast_to(np.arange(len(vectors)), scores.shape), -scores), axis=1)[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)


@pytest.fixture(scope="module")
def vectors():
    return clustered()


@pytest.fixture(scope="module")
def source(vectors, tmp_path_factory):
    return write(tmp_path_factory.mktemp("vectors") / "vectors.npy", vectors)


@pytest.fixture(scope="module")
def built(source, tmp_path_factory):
    folder = tmp_path_factory.mktemp("indexes")
    cache = {}

    def build(kind):
        if kind not in cache:
            cache[kind] = PaperIndex.build(source, folder / kind, kind=kind).folder
        return PaperIndex.load(cache[kind])

    return build


@pytest.mark.parametrize("kind", ["exact", "int8", "binary", "pq"])
def test_each_kind_builds_loads_and_leaves_the_query_paper_out(built, kind):
    index = built(kind)
    result = index.search(ids=["p3", "p40"], top_k=10)
    assert index.kind == kind and len(index) == N and result.rows.shape == (2, 10)
    assert "p3" not in result.ids[0] and "p40" not in result.ids[1]
    assert (np.diff(result.scores, axis=1) <= 0).all() and result.scores.dtype == np.float64
    assert index.info()["recall_at_10"] >= 0.95


def test_exact_search_equals_a_numpy_brute_force(built, vectors):
    queries = near(vectors, 20, seed=1)
    result = built("exact").search(queries, top_k=10)
    rows, scores = brute_force(vectors, queries, 10)
    np.testing.assert_array_equal(result.rows, rows)
    np.testing.assert_allclose(result.scores, scores, atol=1e-6)


def test_int8_recall_at_10_is_at_least_099(built, vectors):
    queries = near(vectors, 300, seed=2)
    truth, _ = brute_force(vectors, queries, 10)
    assert recall(built("int8").search(queries, top_k=10).rows, truth) >= 0.99


def test_binary_multiplier_is_the_smallest_whose_lower_bound_reaches_the_target(built, vectors):
    from scipy.stats import t

    index, m = built("binary"), built("binary").manifest
    rng = np.random.default_rng(0)
    rng.choice(N, N, replace=False)  # the build's sample draw, then its held-out queries
    rows = np.sort(rng.choice(N, 1000, replace=False))
    truth, _ = brute_force(vectors, vectors[rows], 10, exclude=rows)

    def measured(multiplier):  # the mean recall@10 and its one-sided 95% Student's t lower bound
        found, _ = index.codes.search(vectors[rows], 10, rows, multiplier=multiplier)
        shares = np.array([len(np.intersect1d(f, r)) / 10 for f, r in zip(found, truth, strict=True)])
        return shares.mean(), shares.mean() - t.ppf(0.95, 999) * shares.std(ddof=1) / np.sqrt(1000)

    mean, bound = measured(m.multiplier)
    assert (m.recall, m.recall_lower_bound) == (pytest.approx(mean), pytest.approx(bound)) and bound >= 0.95
    assert (m.confidence, m.tuning_queries, m.recall_bounded) == (0.95, 1000, True)
    ladder = multiplier_ladder("binary", N, 10)
    mean, bound = measured(ladder[ladder.index(m.multiplier) - 1])
    assert mean >= 0.95 > bound  # the mean of the step below reaches the target, its bound does not


@pytest.mark.parametrize("kind", ["binary", "pq"])
def test_the_report_and_info_hold_the_lower_bound_and_the_held_out_papers(built, kind):
    index = built(kind)
    report = json.loads((index.folder / "report.json").read_text())
    info = index.info()
    for shown in (report, info):
        assert shown["recall_at_10_lower_bound"] == index.manifest.recall_lower_bound < shown["recall_at_10"]
        assert (shown["confidence"], shown["tuning_queries"], shown["recall_bounded"]) == (0.95, 1000, True)


def test_every_embedding_format_gives_the_same_index(vectors, tmp_path):
    import shutil

    small = vectors[:300]
    results = []
    for name in ("v.npy", "v.jsonl", "v.parquet", "parts"):
        path = tmp_path / name
        if name == "parts":
            path.mkdir()
            write(path / "part-00000.parquet", small[:100], [f"p{i}" for i in range(100)])
            write(path / "part-00001.parquet", small[100:], [f"p{i}" for i in range(100, 300)])
        else:
            write(path, small)
        index = PaperIndex.build(path, tmp_path / f"{name}.index", kind="exact")
        results.append(index.search(ids=["p5", "p250"]).rows)
        shutil.rmtree(index.folder)
    assert all((r == results[0]).all() for r in results)


def test_blocks_of_any_size_and_every_layout_give_the_same_files(vectors, tmp_path, monkeypatch):
    from sciembed.index import blocks

    small, files = vectors[:300], {}
    for name in ("v.npy", "v.jsonl", "v.parquet", "parts"):
        path = tmp_path / name
        if name == "parts":
            path.mkdir()
            write(path / "part-00000.parquet", small[:100], [f"p{i}" for i in range(100)])
            write(path / "part-00001.parquet", small[100:], [f"p{i}" for i in range(100, 300)])
        else:
            write(path, small)
        for rows in (7, 1000):
            monkeypatch.setattr(blocks, "BLOCK_ROWS", rows)
            folder = PaperIndex.build(path, tmp_path / f"{name}-{rows}.index", kind="binary").folder
            names = sorted(p.name for p in folder.iterdir() if p.name not in ("report.json", "manifest.json"))
            files[name, rows] = {n: (folder / n).read_bytes() for n in names}
    first = files["v.npy", 7]
    assert "ids.bytes.npy" in first and all(built == first for built in files.values())


def test_the_ids_of_an_npy_output_are_read_block_by_block(tmp_path):
    import tracemalloc

    from sciembed.index.blocks import open_embeddings

    ids = [f"paper-{i:09d}" for i in range(100_000)]
    write(tmp_path / "v.npy", np.ones((len(ids), 2), dtype=np.float32), ids)
    tracemalloc.start()
    json.loads((tmp_path / "v.ids.json").read_text())
    whole = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    source = open_embeddings(tmp_path / "v.npy")
    read = [block[-1] for block, _ in source.blocks(1000)]
    streamed = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert read == ids[999::1000] and streamed < whole / 4, (streamed, whole)


def test_the_ids_of_an_npy_output_are_written_block_by_block(tmp_path):
    import tracemalloc

    ids = [f"paper-{i:09d}" for i in range(400_000)]  # 7.6 MB of JSON, beyond the 1 MB blocks the hash reads
    blocks = ((ids[i : i + 1000], np.ones((1000, 2), dtype=np.float32)) for i in range(0, len(ids), 1000))
    tracemalloc.start()
    whole = len(json.dumps({"ids": ids}))
    tracemalloc.reset_peak()
    write_embeddings(tmp_path / "v.npy", blocks, total=len(ids), dim=2)
    streamed = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    text = (tmp_path / "v.ids.json").read_text()
    sha = json.loads(text)["npy_sha256"]
    assert text == json.dumps({"ids": ids, "rows": len(ids), "npy_sha256": sha}) and streamed < whole / 3, streamed


def test_an_ids_file_holding_something_else_than_ids_is_named(tmp_path):
    write(tmp_path / "v.npy", clustered(3))
    for text, problem in (
        ('["a", null, "c"]', r"id #1 \(counted from 0\) is null: ids are strings"),
        ('["a", "b" "c"]', r"id #1 \(counted from 0\) is not followed by ',' or '\]'"),
        ('["a", "b"]', r"2 vectors but 3 ids|3 vectors but 2 ids"),
        ('{"ids": ["a", "b", "c"]}', r"no npy_sha256"),
    ):
        (tmp_path / "v.ids.json").write_text(text)
        with pytest.raises(ValueError, match=rf"v\.(ids\.json|npy).*{problem}"):
            PaperIndex.build(tmp_path / "v.npy", tmp_path / "index", kind="exact")


def test_a_tampered_file_is_named_by_check_and_a_cut_one_by_load(built, tmp_path):
    import shutil

    folder = shutil.copytree(built("binary").folder, tmp_path / "copy")
    store = folder / "store.npy"
    data = bytearray(store.read_bytes())
    data[-1] ^= 1
    store.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"store\.npy: its sha256 differs"):
        PaperIndex.load(folder).check()
    store.write_bytes(bytes(data[:-10]))
    with pytest.raises(ValueError, match=r"store\.npy: .* bytes where manifest\.json lists"):
        PaperIndex.load(folder)


def test_another_format_version_is_refused_with_the_fix(built, tmp_path):
    import shutil

    folder = shutil.copytree(built("exact").folder, tmp_path / "copy")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(ValueError, match="format version 99.*build the index again"):
        PaperIndex.load(folder)


def test_a_manifest_of_an_unknown_kind_is_refused_with_the_fix(built, tmp_path):
    import shutil

    folder = shutil.copytree(built("exact").folder, tmp_path / "copy")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "kind": "hnsw"}))
    with pytest.raises(ValueError, match=r"manifest\.json: not a complete index manifest .*'hnsw'.*build the index"):
        PaperIndex.load(folder)


def test_a_repeated_id_is_named_with_both_rows(tmp_path):
    path = write(tmp_path / "v.jsonl", clustered(6), ["a", "b", "c", "b", "e", "f"])
    with pytest.raises(ValueError, match=r"paper_id 'b' has two vectors \(rows 1 and 3"):
        PaperIndex.build(path, tmp_path / "index", kind="exact")
    assert not (tmp_path / "index").exists() and [p.name for p in tmp_path.iterdir()] == ["v.jsonl"]


def test_the_id_table_sorts_and_looks_up_without_padding_ids_to_the_longest(tmp_path):
    import tracemalloc

    from sciembed.index.ids import IdTable, IdTableWriter

    ids = [f"p{i}" for i in range(20_000)] + ["x" * 20_000, "p1" + "y" * 40]
    tracemalloc.start()
    table = IdTableWriter(tmp_path, len(ids))
    table.append(ids)
    table.finish("these ids")
    rows = IdTable(tmp_path).rows_of(["p1", "x" * 20_000, "p1" + "y" * 40, "p1" + "y" * 41, "absent"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert rows.tolist() == [1, 20_000, 20_001, -1, -1] and peak < 20 * 2**20, peak  # padded: 400 MB
    order = np.load(tmp_path / "ids.order.npy")
    assert [ids[row] for row in order] == sorted(ids, key=lambda i: i.encode())


def test_add_looks_up_a_block_of_ids_at_once(built, vectors, tmp_path, monkeypatch):
    import shutil

    from sciembed.index.ids import IdTable

    index = PaperIndex.load(shutil.copytree(built("exact").folder, tmp_path / "copy"))
    monkeypatch.setattr(IdTable, "row_of", lambda *_: pytest.fail("an id looked up alone"))
    new = [f"new{i}" for i in range(50)]
    assert index.add(write(tmp_path / "new.npy", vectors[:50], new)).papers == N + 50
    assert PaperIndex.load(tmp_path / "copy").table.rows_of(new[::7]).tolist() == list(range(N, N + 50, 7))


def test_a_zero_vector_is_named(tmp_path):
    vectors = clustered(6)
    vectors[4] = 0
    with pytest.raises(ValueError, match=r"paper_id 'p4' \(row 4\) is all zeros"):
        PaperIndex.build(write(tmp_path / "v.npy", vectors), tmp_path / "index", kind="exact")


@pytest.mark.parametrize("kind", ["exact", "int8", "binary"])
def test_adding_a_tenth_equals_a_rebuild_with_the_same_training(vectors, tmp_path, kind):
    first, rest = vectors[:900], vectors[900:1000]
    write(tmp_path / "all.npy", vectors[:1000])
    write(tmp_path / "first.npy", first)
    write(tmp_path / "rest.npy", rest, [f"p{i}" for i in range(900, 1000)])
    index = PaperIndex.build(
        tmp_path / "first.npy", tmp_path / "added", kind=kind, settings=IndexSettings(sample_size=900)
    )
    report = index.add(tmp_path / "rest.npy")
    like = tmp_path / "added" if kind != "exact" else None  # the ranges and mean of the first 900 papers
    rebuilt = PaperIndex.build(tmp_path / "all.npy", tmp_path / "rebuilt", kind=kind, trained_like=like)
    assert (report.added, report.papers, len(PaperIndex.load(tmp_path / "added"))) == (100, 1000, 1000)
    names = sorted(p.name for p in rebuilt.folder.iterdir() if p.name not in ("report.json", "manifest.json"))
    assert names == sorted(p.name for p in index.folder.iterdir() if p.name not in ("report.json", "manifest.json"))
    for name in names:  # the store of binary too
        assert (tmp_path / "added" / name).read_bytes() == (tmp_path / "rebuilt" / name).read_bytes(), name
    queries = near(vectors, 10, seed=3)
    np.testing.assert_array_equal(index.search(queries).rows, rebuilt.search(queries).rows)


def test_add_links_the_unchanged_files_and_a_failure_leaves_the_old_index(vectors, tmp_path, monkeypatch):
    import sciembed.index.paper_index as module

    write(tmp_path / "first.npy", vectors[:900])
    write(tmp_path / "rest.npy", vectors[900:1000], [f"p{i}" for i in range(900, 1000)])
    folder = PaperIndex.build(
        tmp_path / "first.npy", tmp_path / "index", kind="binary", settings=IndexSettings(sample_size=900)
    ).folder
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    inodes = {name: (folder / name).stat().st_ino for name in ("ranges.npy", "mean.npy", "report.json")}
    added = module.add_codes

    def fails_midway(*args):
        added(*args)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, "add_codes", fails_midway)
    with pytest.raises(OSError, match="No space left"):
        PaperIndex.load(folder).add(tmp_path / "rest.npy")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    PaperIndex.load(folder).check()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "first.ids.json",
        "first.npy",
        "index",
        "rest.ids.json",
        "rest.npy",
    ]
    monkeypatch.setattr(module, "add_codes", added)
    PaperIndex.load(folder).add(tmp_path / "rest.npy")
    assert {name: (folder / name).stat().st_ino for name in inodes} == inodes  # linked, not copied
    assert len(PaperIndex.load(folder)) == 1000 and (folder / "store.npy").stat().st_size > 1000 * DIM


def test_add_reports_the_share_of_clipped_components(vectors, tmp_path, capsys):
    from sciembed.cli import main

    write(tmp_path / "first.npy", vectors[:900])
    write(tmp_path / "axes.npy", np.eye(DIM, dtype=np.float32)[:4], ["x0", "x1", "x2", "x3"])
    PaperIndex.build(tmp_path / "first.npy", tmp_path / "index", kind="int8", settings=IndexSettings(sample_size=900))
    capsys.readouterr()
    assert main(["index", "add", str(tmp_path / "index"), str(tmp_path / "axes.npy")]) == 0
    printed = capsys.readouterr().out
    share = float(re.search(r"; ([0-9.]+)% of components clipped", printed).group(1)) / 100
    ranges = np.load(tmp_path / "index" / "ranges.npy")
    axes = np.eye(DIM)[:4]
    assert share == pytest.approx(((axes < ranges[0]) | (axes > ranges[1])).mean(), abs=1e-4) and share > 0


def test_add_refuses_vectors_of_another_model(tiny_encoder, tiny_st_base, tmp_path):
    from sciembed import PaperEncoder
    from sciembed.jobs.embed import embed_to_file

    embed_to_file(tiny_encoder, PAPERS[:3], tmp_path / "v.npy", show_progress_bar=False)
    other = PaperEncoder.from_pretrained(tiny_st_base, device="cpu")
    embed_to_file(other, PAPERS[3:], tmp_path / "other.npy", show_progress_bar=False)
    index = PaperIndex.build(tmp_path / "v.npy", tmp_path / "index", kind="exact")
    with pytest.raises(ValueError, match=r"other\.npy was embedded with .*vectors of two models do not compare"):
        index.add(tmp_path / "other.npy")
    assert len(PaperIndex.load(tmp_path / "index")) == 3


def test_add_refuses_ids_already_indexed(built, vectors, tmp_path):
    import shutil

    index = PaperIndex.load(shutil.copytree(built("exact").folder, tmp_path / "copy"))
    with pytest.raises(ValueError, match=r"2 paper\(s\) are already in .*'p7', 'p9'"):
        index.add(write(tmp_path / "new.npy", vectors[:3], ["new", "p7", "p9"]))
    with pytest.raises(ValueError, match=r"paper_id 'n' has two vectors"):
        index.add(write(tmp_path / "twice.npy", vectors[:2], ["n", "n"]))
    assert len(PaperIndex.load(tmp_path / "copy")) == N


@pytest.mark.parametrize("kind", ["exact", "int8", "binary", "pq"])
def test_two_builds_with_one_seed_are_byte_identical(vectors, tmp_path, kind):
    write(tmp_path / "v.npy", vectors[:4000])
    folders = [PaperIndex.build(tmp_path / "v.npy", tmp_path / f"i{n}", kind=kind).folder for n in (1, 2)]
    names = sorted(p.name for p in folders[0].iterdir())
    for name in names:
        if name not in ("report.json", "manifest.json"):  # the report holds timings, the manifest its hash
            assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), name


def test_bytes_per_paper_are_those_of_the_files(vectors, tmp_path, monkeypatch):
    import sciembed.index.settings as settings

    monkeypatch.setattr(settings, "IVF_THRESHOLD", 1000)  # an IVF int8 index from 1,000 papers on
    write(tmp_path / "many.npy", vectors[:2000])
    write(tmp_path / "few.npy", vectors[:900])
    write(tmp_path / "rest.npy", vectors[900:1100], [f"p{i}" for i in range(900, 1100)])
    ivf = PaperIndex.build(tmp_path / "many.npy", tmp_path / "ivf", kind="int8")
    flat = PaperIndex.build(
        tmp_path / "few.npy", tmp_path / "flat", kind="int8", settings=IndexSettings(sample_size=900)
    )
    flat.add(tmp_path / "rest.npy")  # a flat index grown past the threshold stays flat
    for index in (ivf, flat):
        info, sizes = index.info(), {p.name: p.stat().st_size / len(index) for p in index.folder.iterdir()}
        codes = sizes["index.faiss"]
        assert 0 <= codes - info["ram_bytes_per_paper"] < 8, (info, sizes)
        assert 0 <= codes + sizes.get("store.npy", 0) - info["disk_bytes_per_paper"] < 8, (info, sizes)
    assert ivf.manifest.factory.startswith("IVF") and not flat.manifest.factory.startswith("IVF")


def test_a_memory_budget_nothing_fits_names_the_shards(source, tmp_path):
    assert [choose_kind(10**6, 384, gib * 2**30)[0] for gib in (4, 1, 0.1)] == ["exact", "int8", "binary"]
    assert choose_kind(10**7, 384, 0.3 * 2**30) == ("pq", 24)  # the most sub-quantizers that fit
    with pytest.raises(ValueError, match=r"split the collection into 63 shards of at most 127 papers"):
        PaperIndex.build(source, tmp_path / "index", settings=IndexSettings(memory="1K"))
    assert not (tmp_path / "index").exists()


def test_text_and_paper_queries_use_the_index_model(tiny_encoder, tmp_path):
    from sciembed.jobs.embed import embed_to_file

    embed_to_file(tiny_encoder, PAPERS, tmp_path / "v.npy", show_progress_bar=False)
    index = PaperIndex.build(tmp_path / "v.npy", tmp_path / "index", kind="exact")
    assert index.model.name == tiny_encoder.name_or_path and index.info()["fingerprinted"]
    text = "garbage collection of lists"
    by_text = index.search(text, top_k=3, encoder=tiny_encoder)
    np.testing.assert_array_equal(by_text.rows, index.search(tiny_encoder.encode_query([text]), top_k=3).rows)
    paper = {"title": "Garbage collection", "abstract": "Lists and memory."}
    by_paper = index.search(paper, top_k=3, encoder=tiny_encoder)
    np.testing.assert_array_equal(by_paper.rows, index.search(tiny_encoder.encode([paper]), top_k=3).rows)
    own = index.search(PAPERS[0], top_k=3, encoder=tiny_encoder)
    assert PAPERS[0]["paper_id"] not in own.ids[0]


def test_a_query_model_other_than_the_index_model_is_refused(tiny_encoder, tiny_st_base, tmp_path):
    from sciembed import PaperEncoder
    from sciembed.jobs.embed import embed_to_file

    embed_to_file(tiny_encoder, PAPERS, tmp_path / "v.parquet", show_progress_bar=False)
    index = PaperIndex.build(tmp_path / "v.parquet", tmp_path / "index", kind="exact")
    other = PaperEncoder.from_pretrained(tiny_st_base, device="cpu")
    with pytest.raises(
        ValueError,
        match=f"index was embedded with .* the model given, {other.name_or_path} .* embeds a probe paper differently",
    ):
        index.search("graphs", encoder=other)
    pooled = PaperEncoder.from_pretrained(tiny_encoder.name_or_path, device="cpu", pooling="mean")
    assert tiny_encoder.pooling == "cls"  # the same weights, another format of their vectors
    with pytest.raises(
        ValueError, match=r"the model given, .* embeds a probe paper differently \(another model, format"
    ):
        index.search("graphs", encoder=pooled)
    with pytest.raises(ValueError, match=r"embedded with .* not .*: leave --model out"):
        PaperIndex.build(tmp_path / "v.parquet", tmp_path / "again", model=other)


def test_an_index_without_a_model_takes_vectors_and_ids_not_text(built):
    with pytest.raises(ValueError, match="does not know the model .* not text or papers; build it again with --model"):
        built("exact").search("graphs")


def test_free_text_with_the_embedded_minilm(minilm_encoder, tmp_path):
    from sciembed.jobs.embed import embed_to_file

    embed_to_file(minilm_encoder, PAPERS, tmp_path / "v.jsonl", show_progress_bar=False)
    index = PaperIndex.build(tmp_path / "v.jsonl", tmp_path / "index", kind="int8")
    # The embedded model is named by its Hub id, not by its folder on this machine, and loaded from the package.
    assert index.model.name == "sentence-transformers/all-MiniLM-L6-v2"
    result = index.search(["garbage collection of list structure"], top_k=2)  # the model loaded from the manifest
    assert result.ids[0][0] == "p1" and index.model.dim == 384


@pytest.mark.parametrize("kind", ["binary", "pq"])
def test_parts_trained_alike_merge_into_the_one_build(vectors, tmp_path, kind):
    bounds = [0, 1500, 2500, 4000]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        write(tmp_path / f"v{n}.npy", vectors[lo:hi], [f"p{i}" for i in range(lo, hi)])
    first = PaperIndex.build(tmp_path / "v0.npy", tmp_path / "part0", kind=kind)
    for n in (1, 2):
        PaperIndex.build(tmp_path / f"v{n}.npy", tmp_path / f"part{n}", trained_like=first)
    merged = PaperIndex.merge([tmp_path / f"part{n}" for n in range(3)], tmp_path / "merged")
    write(tmp_path / "all.npy", vectors[:4000])
    PaperIndex.build(tmp_path / "all.npy", tmp_path / "whole", trained_like=first)
    assert len(merged) == 4000
    for name in ("index.faiss", "store.npy", "ids.bytes.npy", "ids.offsets.npy", "ids.order.npy"):
        assert (tmp_path / "merged" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_parts_trained_apart_are_refused(vectors, tmp_path):
    write(tmp_path / "a.npy", vectors[:300])
    write(tmp_path / "b.npy", vectors[300:600], [f"q{i}" for i in range(300)])
    for name in "ab":
        PaperIndex.build(tmp_path / f"{name}.npy", tmp_path / name, kind="binary")
    with pytest.raises(ValueError, match=r"b was trained apart from .*a .*trained_like"):
        PaperIndex.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")


@pytest.mark.parametrize("kind", ["exact", "int8", "binary", "pq"])
def test_parts_served_as_shards_give_the_merged_results(vectors, tmp_path, kind):
    bounds = [0, 1500, 2500, 4000]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        write(tmp_path / f"v{n}.npy", vectors[lo:hi], [f"p{i}" for i in range(lo, hi)])
    first = PaperIndex.build(tmp_path / "v0.npy", tmp_path / "part0", kind=kind)
    for n in (1, 2):
        PaperIndex.build(tmp_path / f"v{n}.npy", tmp_path / f"part{n}", trained_like=first)
    parts = [tmp_path / f"part{n}" for n in range(3)]
    merged = PaperIndex.merge(parts, tmp_path / "merged")
    shards = PaperIndex.load_shards(parts)
    queries, ids = near(vectors[:4000], 50, seed=3), ["p7", "p1600", "p3999"]
    for args, options in (((queries,), {}), ((), {"ids": ids})):
        got, want = shards.search(*args, top_k=10, **options), merged.search(*args, top_k=10, **options)
        assert got.ids == want.ids and np.array_equal(got.scores, want.scores)


def test_shards_holding_one_paper_twice_are_refused(vectors, tmp_path):
    write(tmp_path / "a.npy", vectors[:300])
    write(tmp_path / "b.npy", vectors[300:600], [f"p{i}" for i in range(250, 550)])
    first = PaperIndex.build(tmp_path / "a.npy", tmp_path / "a", kind="int8")
    PaperIndex.build(tmp_path / "b.npy", tmp_path / "b", trained_like=first)
    with pytest.raises(ValueError, match=r"paper_id 'p250' is in two index parts .*disjoint"):
        PaperIndex.load_shards([tmp_path / "a", tmp_path / "b"])


def test_binary_search_of_every_paper_ranks_them_as_the_int8_store_does(vectors, tmp_path):
    from sciembed.index.codes import dequantized

    index = PaperIndex.build(write(tmp_path / "v.npy", vectors[:1500]), tmp_path / "index", kind="binary")
    store = dequantized(np.asarray(index.codes.store), index.codes.ranges)
    queries = near(vectors[:1500], 30, seed=5)
    found = index.search(queries, top_k=10, multiplier=200)  # every paper a candidate, shortlisted in float32
    want, scores = brute_force(store, queries, 10)
    np.testing.assert_array_equal(found.rows, want)
    np.testing.assert_allclose(found.scores, scores, rtol=0, atol=1e-6)  # the query is normalised again
