"""Nearest neighbours: the numpy and faiss searches against brute force, and `sciembed neighbours` /
`sciembed.neighbours` on papers files that are not CACM (checked against brute-force cosine on the same vectors),
embedding files, written output, query-id errors, citation links and the CACM / example-set view."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from helpers import WORDS, shared_data

import sciembed
from sciembed.cli import main
from sciembed.data.example import example_citation_links, example_papers
from sciembed.data.knn import IVFSettings, faiss_neighbours, nearest_neighbours, unit_rows
from sciembed.data.papers import PaperReading
from sciembed.io import write_embeddings
from sciembed.search.neighbours import UnknownQueryError


def test_unit_rows_match_scikit_learn_and_keep_zero_rows_zero():
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        matrix = rng.standard_normal((50, 8)).astype(dtype)
        matrix[[3, 17]] = 0
        np.testing.assert_allclose(unit_rows(matrix), normalize(matrix), rtol=1e-6 if dtype == np.float32 else 1e-12)
        assert not unit_rows(matrix)[[3, 17]].any() and np.isfinite(unit_rows(matrix)).all()
        in_place = matrix.copy()
        assert unit_rows(in_place, out=in_place) is in_place
        np.testing.assert_allclose(in_place, normalize(matrix), rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_nearest_neighbours_match_scikit_learn():
    from sklearn.neighbors import NearestNeighbors

    vectors = np.random.default_rng(1).standard_normal((50, 8)).astype(np.float32)
    indices, scores = nearest_neighbours(vectors, k=5, block=16)
    reference = NearestNeighbors(n_neighbors=6, metric="cosine", algorithm="brute").fit(vectors)
    distances, expected = reference.kneighbors(vectors)
    np.testing.assert_array_equal(indices, expected[:, 1:])  # sklearn returns each point first
    np.testing.assert_allclose(scores, 1 - distances[:, 1:], atol=1e-5)


def _brute_force(vectors: np.ndarray, rows, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k most similar other rows by float64 cosine, ties by position."""
    unit = vectors.astype(np.float64) / np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    similarity = unit[rows] @ unit.T
    similarity[np.arange(len(rows)), rows] = -np.inf
    order = np.lexsort((np.broadcast_to(np.arange(len(vectors)), similarity.shape), -similarity), axis=1)[:, :k]
    return order, np.take_along_axis(similarity, order, axis=1)


def test_faiss_neighbours_equal_brute_force_cosine():
    rng = np.random.default_rng(2)
    vectors = (rng.standard_normal((400, 24)) * rng.uniform(0.1, 10, (400, 1))).astype(
        np.float32
    )  # norms vary: cosine, not dot
    vectors[7] = vectors[3]  # a copy is a neighbour (the query itself is not)
    rows = np.array([3, 7, 0, 399, 200])
    indices, scores = faiss_neighbours(vectors, 12, queries=rows, rows=2)
    expected, expected_scores = _brute_force(vectors, rows, 12)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-12)
    assert indices[0, 0] == 7 and indices[1, 0] == 3 and scores[0, 0] == pytest.approx(1.0)
    # Every row at once, and an IVF index probing every cell, give the same.
    everything, _ = faiss_neighbours(vectors, 5)
    np.testing.assert_array_equal(everything, _brute_force(vectors, np.arange(400), 5)[0])
    ivf, _ = faiss_neighbours(vectors, 5, queries=rows, ivf=IVFSettings(cells=8, nprobe=8, seed=0))
    np.testing.assert_array_equal(ivf, expected[:, :5])
    with pytest.raises(ValueError, match="query positions"):
        faiss_neighbours(vectors, 3, queries=[400])


def _papers(n: int = 30, seed: int = 0) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    return [
        {"paper_id": f"x{i}", "title": " ".join(rng.choice(WORDS, 4)), "abstract": " ".join(rng.choice(WORDS, 12))}
        for i in range(n)
    ]


def _write_csv(path, papers):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "title", "abstract", "year"])
        writer.writeheader()
        writer.writerows(
            {"id": p["paper_id"], "title": p["title"], "abstract": p["abstract"], "year": 2001} for p in papers
        )
    return path


def test_neighbours_of_a_papers_csv_equal_brute_force_cosine(tiny_encoder, tmp_path):
    papers = _papers()
    path = _write_csv(tmp_path / "my-papers.csv", papers)
    result = sciembed.neighbours(
        tiny_encoder, path, top_k=4, query_ids=["x5", "x0", "x5", "x29"], show_progress_bar=False
    )
    assert result.query_ids == ["x5", "x0", "x29"]  # in the order asked, repeats once
    vectors = tiny_encoder.encode_document(papers, show_progress_bar=False)
    rows = np.array([5, 0, 29])
    expected, expected_scores = _brute_force(vectors, rows, 4)
    np.testing.assert_array_equal(result.indices, expected)
    np.testing.assert_allclose(result.scores, expected_scores, atol=1e-9)
    first = result.neighbours_of("x5")
    assert [n["paper_id"] for n in first] == [papers[i]["paper_id"] for i in expected[0]]
    assert first[0] == {
        "rank": 1,
        "paper_id": papers[expected[0][0]]["paper_id"],
        "title": papers[expected[0][0]]["title"],
        "score": pytest.approx(float(expected_scores[0][0])),
    }
    assert result.source == str(path) and "CACM" not in result.format()
    text = result.format()
    assert f"[x5] {papers[5]['title']}" in text and f"[{first[0]['paper_id']}] {first[0]['title']}" in text
    # Every paper when no query ids are given.
    assert len(sciembed.neighbours(tiny_encoder, path, top_k=2, show_progress_bar=False)) == 30


def test_unknown_query_ids_are_named_before_anything_is_embedded(tmp_path, monkeypatch, caplog):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the query ids were checked")

    monkeypatch.setattr(sciembed.Encoder, "from_pretrained", no_model)
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in _papers(10)))
    with pytest.raises(
        UnknownQueryError, match=r"2 query id\(s\) not among the 10 papers of .*papers.jsonl: 'nope', 'x99'"
    ) as error:
        sciembed.neighbours(papers=papers, query_ids=["x1", "nope", "x99"])
    assert error.value.unknown == ["nope", "x99"] and isinstance(error.value, KeyError)
    assert main(["neighbours", "--papers", str(papers), "--query-ids", "x1", "ghost"]) == 2
    assert "1 query id(s) not among the 10 papers" in caplog.text and "'ghost'" in caplog.text
    (tmp_path / "queries.txt").write_text("# my queries\nx1\n\nmissing-one\n")
    assert main(["neighbours", "--papers", str(papers), "--query-file", str(tmp_path / "queries.txt")]) == 2
    assert "queries.txt, line 4 ('missing-one'): 1 query id(s) not among the 10 papers" in caplog.text


def test_cli_writes_jsonl_and_csv_and_never_replaces_a_file_unasked(tiny_bert, tiny_encoder, tmp_path, capsys, caplog):
    papers = _papers(12, seed=1)
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    output = tmp_path / "out" / "neighbours.jsonl"
    arguments = [
        "-q",
        "neighbours",
        "--model",
        str(tiny_bert),
        "--papers",
        str(path),
        "--top-k",
        "3",
        "--no-progress",
        "--device",
        "cpu",
    ]
    assert main([*arguments, "--output", str(output)]) == 0
    assert f"wrote the 3 nearest neighbours of 12 paper(s) of {path} to {output}" in capsys.readouterr().out
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["paper_id"] for r in records] == [p["paper_id"] for p in papers]
    expected, scores = _brute_force(tiny_encoder.encode_document(papers, show_progress_bar=False), np.arange(12), 3)
    assert [[n["paper_id"] for n in r["neighbours"]] for r in records] == [
        [papers[i]["paper_id"] for i in row] for row in expected
    ]
    assert records[4]["neighbours"][0]["title"] == papers[expected[4][0]]["title"]
    assert records[4]["neighbours"][0]["score"] == pytest.approx(scores[4][0], abs=1e-6)
    assert not list(output.parent.glob(".*tmp"))

    # An existing output is refused (before embedding) unless --overwrite.
    before = output.read_text()
    output.write_text("mine\n")
    assert main([*arguments, "--output", str(output)]) == 2
    assert "exists; pass --overwrite" in caplog.text and output.read_text() == "mine\n"
    assert main([*arguments, "--output", str(output), "--overwrite"]) == 0
    assert output.read_text() == before

    table = tmp_path / "neighbours.csv"
    assert main([*arguments, "--output", str(table), "--query-ids", "x3"]) == 0
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["rank"] for r in rows] == ["1", "2", "3"] and {r["query_id"] for r in rows} == {"x3"}
    assert rows[0]["paper_id"] == papers[expected[3][0]]["paper_id"] and float(rows[0]["score"]) == pytest.approx(
        scores[3][0], abs=1e-6
    )
    assert (
        main([*arguments, "--output", str(tmp_path / "n.txt")]) == 2 and "unsupported neighbours output" in caplog.text
    )


def test_vectors_from_an_embedding_file_and_citation_links(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(
        sciembed.Encoder, "from_pretrained", lambda *a, **k: pytest.fail("embeddings given: no model to load")
    )
    papers = _papers(20, seed=2)
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20, 8)).astype(np.float32)
    order = rng.permutation(20)  # the file's rows in another order, plus a paper that is not in the papers file
    ids = [papers[i]["paper_id"] for i in order] + ["elsewhere"]
    stored = np.concatenate([vectors[order], rng.standard_normal((1, 8)).astype(np.float32)])
    embeddings = tmp_path / "vectors.npy"
    write_embeddings(embeddings, [(ids, stored)], total=21, dim=8)
    edges = tmp_path / "cites.csv"
    edges.write_text("citing,cited\nx0,x1\nx2,x0\nx0,outside\n")

    result = sciembed.neighbours(papers=path, embeddings=embeddings, top_k=5, citations=edges)
    expected, scores = _brute_force(vectors, np.arange(20), 5)
    np.testing.assert_array_equal(result.indices, expected)
    np.testing.assert_allclose(result.scores, scores, atol=1e-9)
    assert result.model == f"vectors read from {embeddings}"
    # x0 is linked to x1 and x2 (both directions), x1 and x2 to x0 only.
    assert [len(result.links[i]) for i in range(4)] == [2, 1, 1, 0]
    hits = [len({0: {1, 2}, 1: {0}, 2: {0}}[q] & set(expected[q])) / 5 for q in (0, 1, 2)]
    assert result.link_share == pytest.approx(np.mean(hits)) and result.random_share == pytest.approx(
        np.mean([2, 1, 1]) / 19
    )
    record = next(result.records())
    assert record["links"] == 2 and all("linked" in n for n in record["neighbours"])
    assert "Share of citation links among the 5 nearest neighbours, over the 3 query papers" in result.format()

    # A paper without a vector stops the run, naming it, unless skipped.
    write_embeddings(embeddings, [(ids[1:], stored[1:])], total=20, dim=8)
    missing = papers[order[0]]["paper_id"]
    with pytest.raises(ValueError, match=rf"no vector for 1 of the 20 papers of .*: '{missing}'"):
        sciembed.neighbours(papers=path, embeddings=embeddings, top_k=3)
    skipped = sciembed.neighbours(papers=path, embeddings=embeddings, top_k=3, reading=PaperReading(skip_invalid=True))
    assert len(skipped.ids) == 19 and missing not in skipped.ids and skipped.skipped[0].paper_id == missing
    with pytest.raises(ValueError, match="not both"):
        sciembed.neighbours("some-model", path, embeddings=embeddings)


def test_vectors_from_a_file_name_the_stamped_model_or_warn_without_a_stamp(tiny_encoder, tmp_path, caplog):
    from sciembed.jobs.embed import embed_to_file

    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in _papers(6, seed=1)))
    embeddings = embed_to_file(tiny_encoder, path, tmp_path / "vectors.npy", show_progress_bar=False).output
    result = sciembed.neighbours(papers=path, embeddings=embeddings, top_k=2)
    assert result.model == tiny_encoder.name_or_path and "cannot be checked" not in caplog.text
    (tmp_path / "vectors.npy.meta.json").unlink()
    result = sciembed.neighbours(papers=path, embeddings=embeddings, top_k=2)
    assert result.model == f"vectors read from {embeddings}"
    assert "has no model stamp (vectors.npy.meta.json" in caplog.text and "cannot be checked" in caplog.text


def test_a_smart_collection_is_a_papers_input_and_named_by_its_path(tmp_path, monkeypatch):
    """A SMART collection that is not CACM (CISI's weights in the .X middle column, read with smart_links="all")."""
    monkeypatch.setattr(sciembed.Encoder, "from_pretrained", lambda *a, **k: pytest.fail("no model"))
    folder = tmp_path / "cisi"
    folder.mkdir()
    records = []
    for i in range(1, 7):
        links = "".join(f"{j}\t1\t{i}\n" for j in (i - 1, i + 1) if 1 <= j <= 6)
        records.append(
            f".I {i}\n.T\nPaper {i} on {WORDS[i]}\n.W\nAbout {WORDS[i + 5]} and {WORDS[i + 9]}.\n.X\n{links}"
        )
    (folder / "CISI.ALL").write_text("".join(records))
    vectors = np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32)
    write_embeddings(tmp_path / "v.jsonl", [([str(i) for i in range(1, 7)], vectors)], total=6, dim=5)
    with pytest.raises(ValueError, match="smart-links all"):
        sciembed.neighbours(papers=folder, embeddings=tmp_path / "v.jsonl")
    result = sciembed.neighbours(
        papers=folder, embeddings=tmp_path / "v.jsonl", reading=PaperReading(smart_links="all"), top_k=2
    )
    assert result.source == f"SMART collection {folder / 'CISI.ALL'}" and "CACM" not in result.format()
    assert [len(result.links[i]) for i in range(6)] == [1, 2, 2, 2, 2, 1]
    np.testing.assert_array_equal(result.indices, _brute_force(vectors, np.arange(6), 2)[0])


def test_cacm_folder_as_papers_with_vectors_given(tmp_path, capsys):
    cacm = shared_data("cacm")
    from sciembed.data.smart import read_smart_collection

    ids = [p["paper_id"] for p in read_smart_collection(cacm, skip_invalid=True).papers]
    vectors = np.random.default_rng(5).standard_normal((len(ids), 16)).astype(np.float32)
    write_embeddings(tmp_path / "cacm.parquet", [(ids, vectors)], total=len(ids), dim=16)
    assert (
        main(
            [
                "-q",
                "neighbours",
                "--papers",
                str(cacm),
                "--embeddings",
                str(tmp_path / "cacm.parquet"),
                "--skip-invalid",
                "--queries",
                "2",
                "-k",
                "5",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert f"Data:  SMART collection {cacm / 'cacm.all'}: 3203 papers (1 record(s) skipped" in printed
    assert "5 nearest neighbours by cosine of 3203 query paper(s); 2 shown" in printed
    assert "citation link(s)" in printed and "over the 1749 query papers with at least one link" in printed


@pytest.mark.slow
def test_the_view_without_papers_runs_on_the_example_set(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)  # no ../shared/data/cacm from here
    assert main(["neighbours", "-k", "5", "--no-progress"]) == 0
    assert "no data given" in caplog.text
    printed = capsys.readouterr().out
    assert "Data:  sciembed example set (invented papers, not real data): 18 papers" in printed
    assert printed.count("citation link(s);") == 3 and "cites/cited" in printed
    result = sciembed.neighbours(
        None, example_papers(), top_k=5, citations=example_citation_links(), show_progress_bar=False
    )
    assert len(result.linked_queries) == 18
    # The embedded model groups the three invented topics, so linked papers are far above chance.
    assert result.link_share > 3 * result.random_share
