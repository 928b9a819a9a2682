"""A run never silently replaces earlier work (issue 22, part 3): an output that exists is refused, naming it and
the remedy, before the model is loaded; ``--overwrite`` replaces it."""

from __future__ import annotations

import json

import pytest
from helpers import PAPERS, counting_encodes

from sciembed.cli import main
from sciembed.io import ids_path, read_embeddings
from sciembed.jobs.embed import embed_to_file


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


@pytest.mark.parametrize("output", ["{folder}", "{folder}/.", "{folder}/v.jsonl"])
def test_embed_with_overwrite_replaces_neither_its_input_s_folder_nor_a_folder_named_as_a_file(
    tmp_path, caplog, output
):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "v.jsonl").mkdir()
    papers, output = _papers(folder), output.format(folder=folder)
    command = ["embed", "--model", str(tmp_path / "no-model"), "--input", str(papers), "--output", output]
    assert main([*command, "--overwrite"]) == 2
    assert (
        "would overwrite the input" in caplog.text or "v.jsonl is a folder, and --output takes a file" in caplog.text
    )
    assert papers.read_text() and (folder / "v.jsonl").is_dir() and "no-model" not in caplog.text


def test_embed_to_file_replaces_no_folder_holding_its_input(tiny_encoder, tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    papers = _papers(folder)
    calls = counting_encodes(monkeypatch)
    with pytest.raises(ValueError, match=r"output .*data would overwrite the input .*the folder .*data holds it"):
        embed_to_file(tiny_encoder, papers, folder, overwrite=True, show_progress_bar=False)
    assert calls == [] and papers.read_text()


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
    assert (
        main(
            [
                "neighbours",
                "--model",
                str(tiny_bert),
                "--papers",
                str(papers),
                "--output",
                str(output),
                "--no-progress",
            ]
        )
        == 2
    )
    assert f"{output} exists" in caplog.text and output.read_text() == "earlier results\n"


def _tiny_training(tiny_bert, papers_and_edges, output):
    papers, cites = papers_and_edges
    return [
        "train",
        "--recipe",
        "specter",
        "--base",
        str(tiny_bert),
        "--papers",
        str(papers),
        "--citations",
        str(cites),
        "--output",
        str(output),
        "--set",
        "max_steps=1",
        "--set",
        "per_device_train_batch_size=4",
        "--set",
        "gradient_accumulation_steps=1",
        "--set",
        "embedding.max_length=16",
        "--set",
        "save_strategy=no",
        "--no-progress",
    ]


@pytest.fixture
def papers_and_edges(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({**PAPERS[i % len(PAPERS)], "paper_id": f"p{i}"}) + "\n" for i in range(12)))
    cites = tmp_path / "cites.csv"
    cites.write_text("citing,cited\n" + "".join(f"p{i},p{(i + k) % 12}\n" for i in range(12) for k in (1, 2)))
    return papers, cites


def test_train_refuses_a_folder_with_an_earlier_run_unless_resumed_or_overwritten(
    tiny_bert, papers_and_edges, tmp_path, caplog, monkeypatch
):
    from sciembed.training import run

    output = tmp_path / "run"
    command = _tiny_training(tiny_bert, papers_and_edges, output)
    assert main(command) == 0
    weights = (output / "model" / "model.safetensors").read_bytes()
    (output / "checkpoint-7").mkdir()
    monkeypatch.setattr(run, "prepare", lambda *a, **k: pytest.fail("the data was read before the output was checked"))
    caplog.clear()
    assert main(command) == 2
    assert (
        f"{output} holds an earlier run (model, train_results.json, checkpoint-7)" in caplog.text
        and "--overwrite" in caplog.text
    )
    assert (output / "model" / "model.safetensors").read_bytes() == weights
    assert main([*command, "--resume", "--overwrite"]) == 2 and "give one of them" in caplog.text
    monkeypatch.undo()
    assert main([*command, "--overwrite", "--set", "learning_rate=0.01", "--set", "warmup_steps=0"]) == 0
    assert not (output / "checkpoint-7").exists() and (output / "model" / "model.safetensors").read_bytes() != weights


def test_export_and_evaluate_refuse_an_existing_output(tiny_bert, papers_and_edges, tmp_path, caplog):
    papers, cites = papers_and_edges
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "notes.txt").write_text("mine")
    export = ["export", "--model", str(tiny_bert), "--out", str(hub), "--no-validate"]
    assert main(export) == 2 and f"{hub} exists" in caplog.text and (hub / "notes.txt").read_text() == "mine"
    assert main([*export, "--overwrite"]) == 0 and (hub / "config.json").is_file() and not (hub / "notes.txt").exists()

    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"p{i}\tp{(i + 1) % 12}\t1\n" for i in range(12)))
    report = tmp_path / "report.json"
    report.write_text("{}")
    evaluate = [
        "evaluate",
        "--model",
        str(tmp_path / "no-such-model"),
        "--benchmark",
        "retrieval",
        "--data",
        str(qrels),
        "--papers",
        str(papers),
        "--output",
        str(report),
        "--no-cache",
        "--no-progress",
    ]
    caplog.clear()
    assert main(evaluate) == 2 and f"{report} exists" in caplog.text and report.read_text() == "{}"
    caplog.clear()
    bad = tmp_path / "bad.tsv"
    bad.write_text("query-id\tcorpus-id\tscore\np1\n")
    # The input is read before the model (which does not exist) is loaded: its error is the one reported.
    assert main([*evaluate[:6], str(bad), *evaluate[7:], "--overwrite"]) == 2 and "bad.tsv" in caplog.text
    evaluate[2] = str(tiny_bert)
    assert main([*evaluate, "--overwrite"]) == 0 and json.loads(report.read_text())["results"]


def test_the_demo_refuses_an_earlier_demo_s_folder(tmp_path, caplog):
    output = tmp_path / "demo-output"
    output.mkdir()
    assert main(["demo", "--data", str(tmp_path / "no-data"), "--output", str(output)]) == 2
    assert f"{output} exists" in caplog.text and not any(output.iterdir())


def test_embed_reads_and_checks_its_input_before_loading_the_model(tmp_path, caplog):
    """Issue 22, part 5: a malformed papers file fails on its own line, before the (absent) model would be loaded."""
    papers = tmp_path / "papers.jsonl"
    papers.write_text('{"paper_id": "a", "title": "One", "abstract": "x"}\n{"paper_id": "b", "title": \n')
    command = [
        "embed",
        "--model",
        str(tmp_path / "no-such-model"),
        "--input",
        str(papers),
        "--output",
        str(tmp_path / "v.npy"),
        "--no-progress",
    ]
    assert main(command) == 2
    assert f"{papers}, line 2" in caplog.text and "no-such-model" not in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["papers.jsonl"]


@pytest.mark.parametrize("command", ["embed", "neighbours", "train"])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(
    command, tiny_bert, papers_and_edges, tmp_path, caplog, monkeypatch
):
    """Issue 22, part 5: an output under a file (not a folder) fails at once, naming it, not after the model ran."""
    from sciembed.training import run

    papers, _ = papers_and_edges
    blocker = tmp_path / "results"
    blocker.write_text("a file where a folder was meant")
    monkeypatch.setattr(run, "prepare", lambda *a, **k: pytest.fail("the data was read before the output was checked"))
    argv = {
        "embed": [
            "embed",
            "--model",
            str(tmp_path / "no-such-model"),
            "--input",
            str(papers),
            "--output",
            str(blocker / "v.npy"),
            "--no-progress",
        ],
        "neighbours": [
            "neighbours",
            "--model",
            str(tmp_path / "no-such-model"),
            "--papers",
            str(papers),
            "--output",
            str(blocker / "n.csv"),
            "--no-progress",
        ],
        "train": _tiny_training(tiny_bert, papers_and_edges, blocker / "run"),
    }[command]
    assert main(argv) == 2
    assert f"cannot be written: {blocker} is a file, not a folder" in caplog.text


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_evaluate_refuses_a_folder_as_output_before_loading_the_model(tmp_path, caplog, overwrite):
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "kept.txt").write_text("mine")
    evaluate = ["evaluate", "--model", str(tmp_path / "no-such-model"), "--benchmark", "retrieval"]
    evaluate += ["--data", str(tmp_path / "no-such.tsv"), "--output", str(folder), "--no-progress", *overwrite]
    assert main(evaluate) == 2
    assert f"{folder} is a folder, and --output takes a file" in caplog.text and "no-such" not in caplog.text
    assert (folder / "kept.txt").read_text() == "mine"
