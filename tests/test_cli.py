"""The `sciembed` command: help, embed end to end, bad input, resume."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import shared_data

from sciembed.cli import main
from sciembed.io import read_embeddings


def test_console_script_help():
    script = Path(sys.executable).with_name("sciembed")
    result = subprocess.run([str(script), "embed", "--help"], capture_output=True, text=True, check=True)
    for option in ("--model", "--input", "--output", "--resume", "--skip-invalid", "--batch-size", "--max-length"):
        assert option in result.stdout


@pytest.mark.parametrize(
    "command", ["embed", "evaluate", "train", "export", "push", "demo", "neighbours", "from-bert"]
)
def test_help_states_each_default_once_and_never_an_empty_one(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for vacuous in ("(default: None)", "(default: [])", "(default: False)"):
        assert vacuous not in text
    # A help text that states its default is not followed by argparse's own.
    assert not re.search(r"\(default:[^()]*(\([^()]*\)[^()]*)*\) \(default:", text), text


def test_help_does_not_import_torch():
    code = (
        "import sys; from sciembed.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().endswith("False")


def _papers(tmp_path, lines):
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = [
    json.dumps({"paper_id": f"p{i}", "title": f"paper {i} on graph citation", "abstract": "text " * i})
    for i in range(6)
]


def test_embed_with_a_local_model(tiny_bert, tmp_path):
    output = tmp_path / "out.npy"
    code = main(
        [
            "-q",
            "embed",
            "--model",
            str(tiny_bert),
            "--input",
            str(_papers(tmp_path, GOOD)),
            "--output",
            str(output),
            "--shard-size",
            "4",
            "--no-progress",
            "--pooling",
            "mean",
        ]
    )
    assert code == 0
    ids, vectors = read_embeddings(output)
    assert ids == [f"p{i}" for i in range(6)] and vectors.shape == (6, 32)


def test_embed_ends_with_one_summary_line(tiny_bert, tmp_path, caplog, capsys):
    """With --no-progress (no bar to read a rate from) the run ends with one line: papers, seconds, papers/s,
    output."""
    import logging
    import re

    output = tmp_path / "out.jsonl"
    with caplog.at_level(logging.INFO, logger="sciembed"):
        code = main(
            [
                "embed",
                "--model",
                str(tiny_bert),
                "--input",
                str(_papers(tmp_path, GOOD)),
                "--output",
                str(output),
                "--shard-size",
                "4",
                "--no-progress",
            ]
        )
    # Nor the libraries' bars (loading the weights), which are shown again once the command returns.
    assert code == 0 and not {"Encoding", "Loading weights"} & set(
        re.findall(r"Encoding|Loading weights", capsys.readouterr().err)
    )
    from transformers.utils import logging as transformers_logging

    assert transformers_logging.is_progress_bar_enabled()
    embed_lines = [r.getMessage() for r in caplog.records if r.name == "sciembed.jobs.embed"]
    assert len(embed_lines) == 1 and caplog.records[-1].getMessage() == embed_lines[0]
    assert re.fullmatch(
        rf"embedded 6 papers in \d+\.\d s \(\d+\.\d papers/s\); wrote 6 x 32 embeddings to {re.escape(str(output))}",
        embed_lines[0],
    ), embed_lines


def test_bad_input_stops_with_file_line_and_id(tiny_bert, tmp_path, caplog):
    path = _papers(tmp_path, [GOOD[0], GOOD[1], json.dumps({"paper_id": "p0", "title": "again"})])
    code = main(["embed", "--model", str(tiny_bert), "--input", str(path), "--output", str(tmp_path / "o.jsonl")])
    assert code == 2
    assert "papers.jsonl, line 3 (paper_id 'p0'): duplicate paper_id (first at line 1)" in caplog.text
    assert not (tmp_path / "o.jsonl").exists()


def test_skip_invalid_reports_what_it_skipped(tiny_bert, tmp_path, caplog):
    path = _papers(tmp_path, [GOOD[0], "{broken", json.dumps({"paper_id": "e", "abstract": ""}), GOOD[2]])
    output = tmp_path / "o.jsonl"
    code = main(
        [
            "embed",
            "--model",
            str(tiny_bert),
            "--input",
            str(path),
            "--output",
            str(output),
            "--skip-invalid",
            "--no-progress",
        ]
    )
    assert code == 0
    assert (
        "line 2: malformed JSON" in caplog.text and "line 3 (paper_id 'e'): neither title nor abstract" in caplog.text
    )
    assert f"skipped 2 invalid record(s) of {path}" in caplog.text
    assert read_embeddings(output)[0] == ["p0", "p2"]


def test_error_hints_fit_the_error(tiny_bert, tmp_path, caplog):
    """Ids under another name point to --id-field (with the fields the record has), also when every record was
    skipped, and the count is the file's records; a SciDocs folder that does not exist is named as missing."""
    path = tmp_path / "papers.jsonl"
    path.write_text(
        "".join(json.dumps({"pid": f"a{i}", "title": f"paper {i}", "abstract": "text"}) + "\n" for i in range(3))
    )
    for extra in ([], ["--skip-invalid"]):
        caplog.clear()
        assert (
            main(
                [
                    "embed",
                    "--model",
                    str(tiny_bert),
                    "--input",
                    str(path),
                    "--output",
                    str(tmp_path / "o.jsonl"),
                    *extra,
                ]
            )
            == 2
        )
        assert "the record's fields: pid, title, abstract" in caplog.text and "--id-field" in caplog.text
        assert "--skip-invalid" not in caplog.text and "invalid paper record(s)" in caplog.text
    assert "all 3 record(s) invalid)\n3 invalid paper record(s):" in caplog.text
    assert (
        main(
            [
                "embed",
                "--model",
                str(tiny_bert),
                "--input",
                str(path),
                "--output",
                str(tmp_path / "o.jsonl"),
                "--id-field",
                "pid",
                "--no-progress",
            ]
        )
        == 0
    )
    caplog.clear()
    for tasks in ([], ["--tasks", "recomm"]):  # recommendations alone are read apart from the other tasks
        caplog.clear()
        assert (
            main(
                [
                    "evaluate",
                    "--model",
                    str(tiny_bert),
                    "--benchmark",
                    "scidocs",
                    "--data",
                    str(tmp_path / "scidocs-typo"),
                    *tasks,
                ]
            )
            == 2
        )
        assert f"{tmp_path / 'scidocs-typo'}: no such folder" in caplog.text


def test_empty_input_and_bad_output_are_errors(tiny_bert, tmp_path, caplog):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert (
        main(["embed", "--model", str(tiny_bert), "--input", str(empty), "--output", str(tmp_path / "o.jsonl")]) == 2
    )
    assert "empty.jsonl, whole file: no papers" in caplog.text
    assert main(["embed", "--input", str(empty), "--output", str(tmp_path / "o.txt")]) == 2
    assert "o.txt: unsupported embedding output" in caplog.text
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_embed_real_fos_sample_with_the_embedded_model(tmp_path):
    source = shared_data("scirepeval-samples", "fos_small.json")
    output = tmp_path / "fos.jsonl"
    assert main(["-q", "embed", "--input", str(source), "--output", str(output), "--no-progress"]) == 0
    expected = [str(record["corpus_id"]) for record in json.loads(source.read_text())]
    ids, vectors = read_embeddings(output)
    assert ids == expected and vectors.shape == (205, 384)
    assert abs(float((vectors**2).sum(1).mean()) - 1.0) < 1e-4  # the model's own normalisation
