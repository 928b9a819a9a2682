"""Every command that takes papers reads every layout the others read: `embed --input`, `neighbours --papers` and
`evaluate --papers` each take a .jsonl, .json, .csv or .parquet file, a folder of Parquet parts, and a SMART
collection (a folder with a *.all file, or the file), through one reader, and give the same result for each."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from helpers import PAPERS

from sciembed.cli import main
from sciembed.io import read_embeddings, write_embeddings

LAYOUTS = ("jsonl", "json", "csv", "parquet", "parquet-folder", "smart-folder", "smart-file")


def _write_layout(folder: Path, layout: str) -> Path:
    """The five papers of ``helpers.PAPERS`` in ``layout``, under ``folder``."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    if layout == "jsonl":
        path = folder / "papers.jsonl"
        path.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    elif layout == "json":
        path = folder / "papers.json"
        path.write_text(json.dumps({p["paper_id"]: p for p in PAPERS}))
    elif layout == "csv":
        path = folder / "papers.csv"
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["paper_id", "title", "abstract"])
            writer.writeheader()
            writer.writerows(PAPERS)
    elif layout == "parquet":
        path = folder / "papers.parquet"
        pd.DataFrame(PAPERS).to_parquet(path)
    elif layout == "parquet-folder":
        path = folder / "papers"
        path.mkdir()
        pd.DataFrame(PAPERS[:3]).to_parquet(path / "part-00000.parquet")
        pd.DataFrame(PAPERS[3:]).to_parquet(path / "part-00001.parquet")
    else:
        path = folder / "collection"
        path.mkdir()
        fields = (("T", "title"), ("W", "abstract"))
        (path / "papers.all").write_text(
            "".join(
                f".I {p['paper_id']}\n" + "".join(f".{m}\n{p[name]}\n" for m, name in fields if p[name])
                for p in PAPERS
            )
        )
        path = path if layout == "smart-folder" else path / "papers.all"
    return path


QRELS = "p1\tp4\t1\np2\tp5\t1\np3\tp1\t1\n"


def _scores(tiny_bert, qrels: Path, papers: Path) -> dict[str, float]:
    from sciembed.evaluation import evaluate
    from sciembed.evaluation.benchmarks import RetrievalOptions

    report = evaluate(
        str(tiny_bert),
        "retrieval",
        qrels,
        use_cache=False,
        show_progress_bar=False,
        options=RetrievalOptions(papers=papers),
    )
    return report.results[0].metrics


@pytest.fixture(scope="module")
def reference(tiny_bert, tmp_path_factory) -> tuple[list[str], np.ndarray, dict[str, float]]:
    """The ids and vectors `embed` writes for the papers as JSON lines, and their retrieval scores."""
    output = tmp_path_factory.mktemp("reference") / "vectors.npy"
    papers = _write_layout(output.parent, "jsonl")
    assert (
        main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(output), "--no-cache"]) == 0
    )
    (output.parent / "qrels.tsv").write_text(QRELS)
    return (*read_embeddings(output), _scores(tiny_bert, output.parent / "qrels.tsv", papers))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_embed_neighbours_and_evaluate_read_each_papers_layout_alike(
    layout, tiny_bert, reference, tmp_path, caplog, capsys
):
    caplog.set_level(logging.ERROR)
    papers = _write_layout(tmp_path / "in", layout)
    model = ["--model", str(tiny_bert), "--no-progress"]

    output = tmp_path / "vectors.jsonl"
    assert main(["embed", *model, "--input", str(papers), "--output", str(output)]) == 0, caplog.text
    ids, vectors = read_embeddings(output)
    assert ids == reference[0]
    np.testing.assert_allclose(vectors, reference[1], atol=1e-5)

    found = tmp_path / "neighbours.jsonl"
    command = ["neighbours", "--papers", str(papers), "--embeddings", str(output), "-k", "2", "--output", str(found)]
    assert main(command) == 0, caplog.text
    assert [json.loads(line)["paper_id"] for line in found.read_text().splitlines()] == reference[0]

    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(QRELS)
    results = tmp_path / "results.json"
    command = ["evaluate", *model, "--benchmark", "retrieval", "--data", str(qrels), "--papers", str(papers)]
    assert main([*command, "--no-cache", "--output", str(results)]) == 0, caplog.text
    scores = {row["metric"]: row["value"] for row in json.loads(results.read_text())["results"]}
    assert scores == pytest.approx(reference[2], abs=1e-6)


def test_a_folder_without_papers_names_the_layouts_read(tmp_path, caplog):
    (tmp_path / "empty").mkdir()
    assert main(["embed", "--input", str(tmp_path / "empty"), "--output", str(tmp_path / "v.npy")]) == 2
    assert f"{tmp_path / 'empty'} (--input) is a folder holding neither a SMART collection" in caplog.text
    assert "Traceback" not in caplog.text


def test_an_id_field_with_a_smart_collection_is_refused(tmp_path, caplog):
    papers = _write_layout(tmp_path, "smart-folder")
    vectors = np.eye(5, dtype=np.float32)
    write_embeddings(tmp_path / "v.jsonl", [([p["paper_id"] for p in PAPERS], vectors)], total=5, dim=5)
    command = ["neighbours", "--papers", str(papers), "--embeddings", str(tmp_path / "v.jsonl"), "--id-field", "doc"]
    assert main(command) == 2
    assert "whose ids are its .I lines" in caplog.text
