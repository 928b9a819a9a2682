"""Failures that name their place (file, line, id, setting) in one line, without a traceback (issue 14's
third class).

Each case writes its own files and runs the command a user would: the exit code is 2 (or 0 where the input
is readable after all, or is skipped on request), the message names what was wrong and where, and nothing a
finished run would leave is left behind.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from helpers import PAPERS, Interrupt, counting_encodes, write_s2orc
from test_evaluate import scidocs_folder  # noqa: F401  (a fixture, shared with the evaluation tests)

from sciembed.cli import main
from sciembed.io import read_embeddings, write_embeddings

PAPERS_11 = [{**PAPERS[i % len(PAPERS)], "paper_id": f"id{i}"} for i in range(11)]


def _embed(model, papers, output, *extra) -> int:
    return main(
        ["embed", "--model", str(model), "--input", str(papers), "--output", str(output), "--no-progress", *extra]
    )


def _train(data, output, *settings, base=None, resume=False) -> int:
    base = ["--base", str(base)] if base is not None else []
    return main(
        [
            "-q",
            "train",
            "--recipe",
            "specter",
            *base,
            "--data",
            str(data),
            "--output",
            str(output),
            *[a for s in settings for a in ("--set", s)],
            *(["--resume"] if resume else []),
        ]
    )


# Input encodings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
def test_a_byte_order_mark_is_read_as_utf8(tiny_bert, tmp_path, suffix):
    from sciembed.data.papers import read_papers

    path = tmp_path / f"papers{suffix}"
    text = {
        ".csv": "paper_id,title,abstract\np1,Graphs,about graphs\n",
        ".jsonl": json.dumps({"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}) + "\n",
        ".json": json.dumps([{"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}]),
    }[suffix]
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_papers(path).papers == [{"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}]
    assert _embed(tiny_bert, path, tmp_path / "out.jsonl") == 0 and read_embeddings(tmp_path / "out.jsonl")[0] == [
        "p1"
    ]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_bytes_that_are_not_utf8_name_their_line_and_can_be_skipped(tiny_bert, tmp_path, caplog, suffix):
    path = tmp_path / f"papers{suffix}"
    good = {
        ".csv": b"p1,Graphs,about graphs\n",
        ".jsonl": json.dumps({"paper_id": "p1", "title": "Graphs"}).encode() + b"\n",
    }[suffix]
    bad = {".csv": b"p2,Caf\xe9,latin-1\n", ".jsonl": b'{"paper_id": "p2", "title": "Caf\xe9"}\n'}[suffix]
    path.write_bytes((b"paper_id,title,abstract\n" if suffix == ".csv" else b"") + good + bad)
    output = tmp_path / "out.jsonl"
    assert _embed(tiny_bert, path, output) == 2
    assert f"papers{suffix}, line {3 if suffix == '.csv' else 2}" in caplog.text and "not UTF-8 text" in caplog.text
    assert "Traceback" not in caplog.text and not output.exists()
    assert _embed(tiny_bert, path, output, "--skip-invalid") == 0
    assert "skipped 1 invalid record(s)" in caplog.text and read_embeddings(output)[0] == ["p1"]


def test_a_json_file_that_is_not_utf8_names_its_line(tiny_bert, tmp_path, caplog):
    path = tmp_path / "papers.json"
    path.write_bytes(b'[\n{"paper_id": "p1", "title": "Graphs"},\n{"paper_id": "p2", "title": "Caf\xe9"}\n]')
    assert _embed(tiny_bert, path, tmp_path / "out.jsonl") == 2
    assert "papers.json, line 3: not UTF-8 text" in caplog.text


# Corrupt or truncated state --------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncated shard", "other papers", "broken manifest"])
def test_damaged_partial_state_is_named(tiny_bert, tmp_path, caplog, monkeypatch, damage):
    from sciembed.jobs.embed import partial_dir

    papers, output = tmp_path / "papers.jsonl", tmp_path / "out.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS_11))
    counting_encodes(monkeypatch, fail_on_call=3)
    with pytest.raises(Interrupt):  # no cache: the papers repeat texts, which the cache would embed once
        _embed(tiny_bert, papers, output, "--shard-size", "4", "--no-cache")
    monkeypatch.undo()
    folder = partial_dir(output)
    if damage == "truncated shard":
        part = folder / "parts" / "part-00001.parquet"
        part.write_bytes(part.read_bytes()[:100])
        expected = "part-00001.parquet: not a readable part"
    elif damage == "other papers":
        write_embeddings(
            folder / "parts" / "part-00000.parquet",
            [(["x", "y", "z"], np.zeros((3, 32), dtype=np.float32))],
            total=3,
            dim=32,
        )
        expected = "part-00000.parquet: holds 3 vectors of shape (3, 32) for other papers than the 4 of its shard"
    else:
        (folder / "manifest.json").write_text("{oops")
        expected = "manifest.json: not valid JSON"
    assert _embed(tiny_bert, papers, output, "--shard-size", "4", "--resume", "--no-cache") == 2
    assert expected in caplog.text and not output.exists()


def _interrupted_embed(tiny_bert, tmp_path, monkeypatch):
    """Papers and an output whose embed run stopped after two of its three shards."""
    papers, output = tmp_path / "papers.jsonl", tmp_path / "out.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS_11))
    counting_encodes(monkeypatch, fail_on_call=3)
    with pytest.raises(Interrupt):
        _embed(tiny_bert, papers, output, "--shard-size", "4", "--no-cache")
    monkeypatch.undo()
    return papers, output


def _replace(path, by):
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.mkdir() if by == "folder" else path.write_text("x")


PARTIAL_DAMAGE = {
    "parts a file": (lambda f: _replace(f / "parts", "file"), "parts: not a folder, so the unfinished run in"),
    "partial a file": (lambda f: _replace(f, "file"), "out.jsonl.partial: not a folder, so the unfinished run in"),
    "manifest a folder": (lambda f: _replace(f / "manifest.json", "folder"), "manifest.json: not a file, so the"),
    "first part of another width": (
        lambda f: write_embeddings(
            f / "parts" / "part-00000.parquet", [([f"id{i}" for i in range(4)], np.zeros((4, 7)))], total=4, dim=7
        ),
        "part-00000.parquet: vectors of size 7 where the model's are 32; delete it",
    ),
    "a part of no shard": (
        lambda f: shutil.copy(f / "parts" / "part-00000.parquet", f / "parts" / "part-00003.parquet"),
        "part-00003.parquet: not one of the 3 parts of the unfinished run",
    ),
}


@pytest.mark.parametrize("damage", PARTIAL_DAMAGE)
def test_a_damaged_partial_folder_is_named_with_its_fix(tiny_bert, tmp_path, caplog, monkeypatch, damage):
    from sciembed.jobs.embed import partial_dir

    papers, output = _interrupted_embed(tiny_bert, tmp_path, monkeypatch)
    damaging, expected = PARTIAL_DAMAGE[damage]
    damaging(partial_dir(output))
    caplog.clear()
    assert _embed(tiny_bert, papers, output, "--shard-size", "4", "--resume", "--no-cache") == 2
    assert expected in caplog.text and "delete " in caplog.text and "Traceback" not in caplog.text
    assert not output.exists()


@pytest.mark.parametrize("damage", ["arrow cut short", "arrow empty", "skipped list broken"])
def test_a_damaged_copy_of_the_papers_in_the_partial_folder_is_read_again(
    tiny_bert, tmp_path, caplog, monkeypatch, damage
):
    from sciembed.jobs.embed import partial_dir

    papers, output = _interrupted_embed(tiny_bert, tmp_path, monkeypatch)
    arrow = next(partial_dir(output).glob("papers-*.arrow"))
    if damage == "skipped list broken":
        arrow.with_name(arrow.name.replace(".arrow", ".skipped.json")).write_text("{")
    else:
        arrow.write_bytes(arrow.read_bytes()[: 0 if damage == "arrow empty" else arrow.stat().st_size - 200])
    calls = counting_encodes(monkeypatch)
    assert _embed(tiny_bert, papers, output, "--shard-size", "4", "--resume", "--no-cache") == 0
    assert f"{arrow.name}: damaged" in caplog.text and "reading the papers of" in caplog.text
    assert read_embeddings(output)[0] == [p["paper_id"] for p in PAPERS_11] and len(calls) == 1


def test_truncated_weights_are_named(tiny_bert, tmp_path, caplog):
    folder = shutil.copytree(tiny_bert, tmp_path / "model")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps(PAPERS[0]) + "\n")
    assert _embed(folder, papers, tmp_path / "out.jsonl") == 2
    assert "model: its weights do not load" in caplog.text and "truncated or damaged" in caplog.text


def test_an_evaluation_file_that_does_not_parse_is_named(tiny_bert, tmp_path, caplog):
    (tmp_path / "results.json").write_text("{oops")
    assert (
        main(
            [
                "export",
                "--model",
                str(tiny_bert),
                "--out",
                str(tmp_path / "hub"),
                "--evaluation",
                str(tmp_path / "results.json"),
            ]
        )
        == 2
    )
    assert "results.json (--evaluation): not valid JSON (line 1" in caplog.text and not (tmp_path / "hub").exists()


TINY_RUN = [
    "max_steps=3",
    "save_strategy=steps",
    "save_steps=1",
    "logging_steps=1",
    "learning_rate=1e-3",
    "warmup_steps=0",
    "per_device_train_batch_size=4",
    "gradient_accumulation_steps=1",
    "embedding.max_length=48",
    "dataloader_drop_last=true",
    "lr_scheduler_type=constant",
]


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_resume_names_a_checkpoint_whose_save_never_finished_and_continues_before_it(
    damage, tiny_bert, tmp_path, caplog
):
    """A run stopped while saving checkpoint-3 leaves it without a readable trainer_state.json (the file the
    Trainer writes last): --resume names it, removes it and continues from checkpoint-2, ending with the
    weights of an uninterrupted run."""
    from safetensors.torch import load_file

    data = write_s2orc(tmp_path / "papers.jsonl")
    assert _train(data, tmp_path / "straight", *TINY_RUN, "max_steps=4", base=tiny_bert) == 0
    assert _train(data, tmp_path / "out", *TINY_RUN, base=tiny_bert) == 0
    state = tmp_path / "out" / "checkpoint-3" / "trainer_state.json"
    if damage == "missing":
        state.unlink()
    else:
        state.write_text(state.read_text()[:20])
    assert _train(data, tmp_path / "out", *TINY_RUN, "max_steps=4", base=tiny_bert, resume=True) == 0
    assert f"checkpoint-3: the save of this checkpoint never finished ({state}" in caplog.text
    assert "resumes from checkpoint-2" in caplog.text
    assert json.loads((tmp_path / "out" / "train_results.json").read_text())["global_step"] == 4
    straight, resumed = (load_file(tmp_path / run / "model" / "model.safetensors") for run in ("straight", "out"))
    for name, tensor in straight.items():
        np.testing.assert_allclose(resumed[name].numpy(), tensor.numpy(), atol=1e-5, rtol=1e-4, err_msg=name)


def test_resume_without_a_complete_checkpoint_says_so(tiny_bert, tmp_path, caplog):
    data = write_s2orc(tmp_path / "papers.jsonl")
    assert _train(data, tmp_path / "out", *TINY_RUN, "max_steps=2", "save_total_limit=1", base=tiny_bert) == 0
    (tmp_path / "out" / "checkpoint-2" / "trainer_state.json").write_text("{oops")
    assert _train(data, tmp_path / "out", *TINY_RUN, base=tiny_bert, resume=True) == 2
    assert "is complete (" in caplog.text and "checkpoint-2/trainer_state.json: not valid JSON (line 1" in caplog.text
    assert "run without --resume" in caplog.text


# Model locations and settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location, message",
    [
        (
            "missing",
            "no such model folder here, and no copy of a Hub model of that id in the Hub cache (HF_HUB_OFFLINE is set",
        ),
        ("empty", "holds no config.json"),
        ("file.txt", "a file, not a model folder"),
        ("./runs/x", "no such model folder"),
    ],
)
def test_model_locations_that_cannot_be_models_are_named(tmp_path, caplog, monkeypatch, location, message):
    """Named as what they are; a name that could be a Hub id says it is neither here nor in the offline Hub cache."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps(PAPERS[0]) + "\n")
    assert _embed(location, papers, tmp_path / "out.jsonl") == 2
    assert message in caplog.text and location.lstrip("./") in caplog.text and "Repo id" not in caplog.text


def test_max_length_beyond_the_model_is_refused_for_sentence_transformers_too(tiny_st_base, tmp_path, caplog):
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps(PAPERS[0]) + "\n")
    assert _embed(tiny_st_base, papers, tmp_path / "out.jsonl", "--max-length", "100") == 2
    assert "max_length 100 exceeds the 64 tokens the model takes" in caplog.text


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("max_steps=two", "setting max_steps='two': expected int, got str"),
        ("learning_rate=fast", "setting learning_rate='fast': expected float, got str"),
        ("fp16=3", "setting fp16=3: expected bool, got int"),
        ("loss.micro_batch_size=0", "loss.micro_batch_size is the texts embedded per forward pass"),
        (
            "loss.micro_batch_size=half",
            "a positive integer), auto (from the memory the attention scores take) or null",
        ),
    ],
)
def test_settings_of_the_wrong_type_are_refused_before_training(tmp_path, caplog, assignment, message):
    data = write_s2orc(tmp_path / "papers.jsonl")
    assert _train(data, tmp_path / "out", assignment) == 2
    assert message in caplog.text and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("data.sampel=scincl", "unknown setting(s) data.sampel for recipe specter (triplet objective); its data"),
        ("model.num_cls_tokens=2", "unknown setting(s) model.num_cls_tokens for recipe specter"),
        ("data.held_out=most", "setting data.held_out='most': expected float, got str"),
        ("data.sampler=bogus", "setting data.sampler='bogus': expected one of 'specter', 'spectroid', 'scincl'"),
        ("data.triplets_per_query=2.5", "setting data.triplets_per_query=2.5: expected int, got float"),
        ("embedding.pooling=max", "setting embedding.pooling='max': expected one of 'cls', 'mean' or null"),
        ("loss.temperature=0.1", "loss.temperature: not a setting of TripletMarginLoss (loss.name=triplet)"),
    ],
)
def test_settings_outside_the_objective_s_schema_are_refused_before_the_data_is_read(
    tmp_path, caplog, monkeypatch, assignment, message
):
    """Each section's keys and types are the objective's: a misspelt key or a wrong type names the key, what it takes
    and the known keys, before the data is read or the model loads."""
    import sciembed.training.examples as examples

    def no_reading(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr(examples, "read_citation_source", no_reading)
    data = write_s2orc(tmp_path / "papers.jsonl")
    assert _train(data, tmp_path / "out", assignment) == 2
    assert message in caplog.text and not (tmp_path / "out").exists()


def test_micro_batches_for_a_loss_that_takes_none_are_refused(tmp_path, caplog):
    data = write_s2orc(tmp_path / "papers.jsonl")
    arguments = ["train", "--recipe", "moe-cocitation", "--data", str(data), "--output", str(tmp_path / "out")]
    assert main([*arguments, "--set", "loss.micro_batch_size=8"]) == 2
    assert "loss.micro_batch_size: recipe moe-cocitation (pairs objective) embeds each batch at once" in caplog.text
    assert not (tmp_path / "out").exists()


def test_an_moe_model_with_enforced_routing_needs_its_domain(tiny_bert, tmp_path, caplog):
    from sciembed.families import from_bert, save_pretrained

    model, tokenizer = from_bert("moe_bert", tiny_bert, domains=["cs", "bio"], routing="enforced")
    folder = save_pretrained(model, tokenizer, tmp_path / "moe")
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps(PAPERS[0]) + "\n")
    assert _embed(folder, papers, tmp_path / "out.jsonl") == 2
    assert "--domain on the command line), one of cs, bio" in caplog.text
    assert _embed(folder, papers, tmp_path / "out.jsonl", "--domain", "bio") == 0


def test_an_unknown_task_is_named_with_the_tasks_that_are_there(tiny_bert, scidocs_folder, caplog):  # noqa: F811
    code = main(
        [
            "evaluate",
            "--model",
            str(tiny_bert),
            "--benchmark",
            "scidocs",
            "--data",
            str(scidocs_folder),
            "--tasks",
            "citation",
            "--no-progress",
        ]
    )
    assert code == 2
    assert (
        "no task(s) ['citation'] in scidocs; tasks here: " in caplog.text
        and "cite" in caplog.text.split("tasks here: ")[1]
    )


# Data that is not what the command needs -------------------------------------------------------------------


def test_train_data_without_papers_or_citations_says_what_it_found(tmp_path, caplog):
    embeddings = tmp_path / "embeddings.jsonl"
    embeddings.write_text(
        "".join(json.dumps({"paper_id": f"p{i}", "embedding": [0.1 * i, 0.2]}) + "\n" for i in range(3))
    )
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "".join(json.dumps({"paper_id": f"p{i}", "title": f"paper {i}", "abstract": "text"}) + "\n" for i in range(3))
    )
    assert _train(embeddings, tmp_path / "a") == 2
    assert "embeddings.jsonl: none of its records is a paper with a title or abstract; 3 skipped" in caplog.text
    assert _train(papers, tmp_path / "b") == 2
    assert "papers.jsonl: 3 papers with text but no citation between two of them" in caplog.text
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_run_that_fails_before_any_shard_leaves_nothing_that_blocks_the_next(tiny_bert, tmp_path, caplog):
    from sciembed.jobs.embed import partial_dir

    papers, output = tmp_path / "papers.jsonl", tmp_path / "out.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS_11))
    assert _embed(tiny_bert, papers, output, "--batch-size", "0") == 2
    assert "batch_size must be positive" in caplog.text and not partial_dir(output).exists()
    assert _embed(tiny_bert, papers, output) == 0  # no --resume needed
    assert len(read_embeddings(output)[0]) == 11


def test_neighbours_with_a_folder_that_holds_no_cacm_is_an_error(tmp_path, caplog):
    """A given --data that is missing (or has no cacm/) stops with its name, not a silent switch to invented papers."""
    assert main(["neighbours", "--data", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no cacm/ folder here ({tmp_path / 'nowhere'} does not exist)" in caplog.text
    assert "example set" not in caplog.text


def test_a_full_disk_names_the_output_and_leaves_nothing(tiny_bert, tmp_path, monkeypatch, caplog):
    """Issue 22, part 6: pyarrow's '[Errno 28] Error writing bytes to file' says which output it was."""
    import errno
    import json

    import pyarrow.parquet as pq
    from helpers import PAPERS

    from sciembed.cli import main

    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    output = tmp_path / "vectors.parquet"
    assert (
        main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(output), "--no-progress"])
        != 0
    )
    assert "was not written (Error writing bytes to file); nothing was left in its place" in caplog.text
    assert f"{output}.partial/parts/part-00000.parquet was not written" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["papers.jsonl"]


def test_unsafe_pickle_weights_and_foreign_code_name_sciembeds_own_remedy(tiny_bert, tmp_path):
    """Issue 22, part 6: not a TensorFlow checkpoint, not a Hub URL for a local folder."""
    import json
    import os
    import shutil

    import torch
    from safetensors.torch import load_file

    from sciembed import PaperEncoder

    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_bert, pickled)
    state = load_file(pickled / "model.safetensors")
    state["payload"] = _Payload()
    torch.save(state, pickled / "pytorch_model.bin")
    os.remove(pickled / "model.safetensors")
    with pytest.raises(
        ValueError,
        match=r"pickled: its pickle weights \(pytorch_model\.bin\) are an unsafe pickle: .*GLOBAL.*"
        r"sciembed loads tensors only\. Use safetensors weights",
    ):
        PaperEncoder.from_pretrained(pickled, device="cpu")

    foreign = tmp_path / "foreign"
    shutil.copytree(tiny_bert, foreign)
    config = json.loads((foreign / "config.json").read_text())
    config.update(model_type="foreign", auto_map={"AutoConfig": "configuration_foreign.ForeignConfig"})
    (foreign / "config.json").write_text(json.dumps(config))
    (foreign / "configuration_foreign.py").write_text(
        "from transformers import BertConfig\nclass ForeignConfig(BertConfig):\n    model_type = 'foreign'\n"
    )
    with pytest.raises(
        ValueError,
        match=rf"the folder {foreign} names code that is not sciembed's own.*configuration_foreign.py is not "
        r"sciembed's own code.*--trust-remote-code "
        r"\(command line\) or trust_remote_code=True \(Python\)",
    ) as refused:
        PaperEncoder.from_pretrained(foreign, device="cpu")
    assert "hf.co" not in str(refused.value)


class _Payload:
    """What a malicious pickle carries: a call to run on load."""

    def __reduce__(self):
        import os

        return (os.getcwd, ())


def _smart_folder(folder, *, categories=True, links=True, judged="1"):
    """A SMART collection of 24 papers in 4 categories, each linked to the next, with one query judged."""
    folder.mkdir()
    (folder / "cacm.all").write_text(
        "".join(
            f".I {i}\n.T\nPaper {i} on lists\n.W\nAbout lists {i}\n"
            + (f".C\n{i % 4 + 1}.2\n" if categories else "")
            + (f".X\n{i % 24 + 1}\t5\t{i}\n" if links else "")
            for i in range(1, 25)
        )
    )
    (folder / "query.text").write_text(".I 1\n.W\npapers on lists\n")
    (folder / "qrels.text").write_text(f"{judged} 3 0 0\n")
    return folder


@pytest.mark.parametrize(
    "task, kind, message",
    [
        ("categories", dict(categories=False), r"cacm\.all: no record has \.C categories .*--tasks cite search"),
        ("cite", dict(links=False), r"cacm\.all: no \.X line links two of its records; .*--tasks categories search"),
        ("search", dict(judged="99"), r"the cacm task 'search' has nothing to score: no query has a judgement"),
    ],
)
def test_a_benchmark_task_whose_data_is_empty_is_named_before_the_model_loads(tmp_path, caplog, task, kind, message):
    folder = _smart_folder(tmp_path / "cacm", **kind)
    extra = ["--skip-invalid"] if task == "search" else []
    command = ["evaluate", "--benchmark", "cacm", "--data", str(folder), "--tasks", task, "--model", "/absent/model"]
    assert main([*command, "--no-cache", "--output", str(tmp_path / "r.json"), *extra]) == 2
    assert len(re.findall(message, caplog.text)) == 1 and "/absent/model" not in caplog.text
    assert "n_samples" not in caplog.text and not (tmp_path / "r.json").exists()


def test_a_benchmark_task_whose_data_is_empty_is_listed_as_missing_when_not_asked_for(tmp_path):
    from sciembed.evaluation.loaders import load_tasks

    suite = load_tasks("cacm", _smart_folder(tmp_path / "cacm", categories=False))
    assert [task.task_id for task in suite.tasks] == ["cite", "search"]
    assert suite.missing == ["categories (no record has .C categories (CR category codes) to classify by)"]
