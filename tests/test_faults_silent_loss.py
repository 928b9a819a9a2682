"""Faults that once lost or corrupted data, or ran code, with exit code 0 (issue 14's first class).

Each case writes its own files, runs the command a user would, and asserts the exit code, that the message
names the file / line / id / setting, and that nothing was lost or overwritten.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from helpers import PAPERS, Interrupt, counting_encodes

import sciembed
from sciembed.cli import main
from sciembed.io import ids_path, read_embeddings, write_embeddings

PAPERS_11 = [{**PAPERS[i % len(PAPERS)], "paper_id": f"id{i}"} for i in range(11)]


def _jsonl(path, papers=PAPERS_11):
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    return path


# 1. CSV rows whose field count differs from the header's ------------------------------------------------


def test_csv_rows_with_the_wrong_field_count_stop_the_run_or_are_skipped_and_counted(tiny_bert, tmp_path, caplog):
    papers = tmp_path / "papers.csv"
    papers.write_text(
        "paper_id,title,abstract\np1,Graphs,about graphs\np2,Lists, trees and graphs,about lists\np3,Short\n"
    )
    output = tmp_path / "out.jsonl"
    assert (
        main(["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(output), "--no-progress"])
        == 2
    )
    assert (
        "papers.csv, line 3 (paper_id 'p2'): 4 fields where the header names 3" in caplog.text and not output.exists()
    )

    caplog.clear()
    assert (
        main(
            [
                "embed",
                "--model",
                str(tiny_bert),
                "--input",
                str(papers),
                "--output",
                str(output),
                "--no-progress",
                "--skip-invalid",
            ]
        )
        == 0
    )
    assert (
        "skipped 2 invalid record(s)" in caplog.text
        and "line 4 (paper_id 'p3'): 2 fields where the header names 3" in caplog.text
    )
    assert read_embeddings(output)[0] == ["p1"]


# 2. An output that is the input ----------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["papers.jsonl", "./papers.jsonl", "papers.npy"])
def test_embed_refuses_to_overwrite_its_input(tiny_bert, tmp_path, caplog, monkeypatch, output):
    """An output that resolves to the input (itself, another spelling of it, or an .npy whose ids file would be
    it) is refused before anything is read or written; the papers are untouched."""
    monkeypatch.chdir(tmp_path)
    path = _jsonl(tmp_path / ("papers.ids.json" if output.endswith(".npy") else "papers.jsonl"))
    before = path.read_bytes()
    assert main(["embed", "--model", str(tiny_bert), "--input", str(path), "--output", output]) == 2
    assert "would overwrite the input" in caplog.text and path.read_bytes() == before


# 3. --resume keyed by what the vectors depend on ------------------------------------------------------------


def test_resume_is_keyed_by_the_encoder_not_its_path(tiny_bert, tmp_path, caplog, monkeypatch):
    """The same model spelt `model/` resumes from the finished shards; other weights saved at the same path
    are refused, naming what differs."""
    from transformers import AutoModel

    model = shutil.copytree(tiny_bert, tmp_path / "model")
    papers, output = _jsonl(tmp_path / "papers.jsonl"), tmp_path / "out.npy"

    def embed(model_path, *extra):
        return main(
            [
                "embed",
                "--model",
                model_path,
                "--input",
                str(papers),
                "--output",
                str(output),
                "--shard-size",
                "4",
                "--no-progress",
                "--no-cache",  # counts shards encoded: the papers repeat texts, which the cache would embed once
                *extra,
            ]
        )

    counting_encodes(monkeypatch, fail_on_call=2)
    with pytest.raises(Interrupt):
        embed(str(model))
    monkeypatch.undo()
    calls = counting_encodes(monkeypatch)
    assert embed(f"{model}/", "--resume") == 0
    assert calls == [["id4", "id5", "id6", "id7"], ["id8", "id9", "id10"]]  # the finished shard is not embedded again
    assert read_embeddings(output)[0] == [p["paper_id"] for p in PAPERS_11]
    monkeypatch.undo()

    output.unlink()
    ids_path(output).unlink()
    counting_encodes(monkeypatch, fail_on_call=2)
    with pytest.raises(Interrupt):
        embed(str(model))
    monkeypatch.undo()
    changed = AutoModel.from_pretrained(model)
    with torch.no_grad():
        changed.embeddings.word_embeddings.weight.add_(0.01)
    changed.save_pretrained(model)
    assert embed(str(model), "--resume") == 2
    assert "differs in encoder_fingerprint" in caplog.text and not output.exists()


def test_resume_by_another_model_is_refused_naming_both(tiny_bert, tmp_path, caplog, monkeypatch):
    papers, output = _jsonl(tmp_path / "papers.jsonl"), tmp_path / "out.npy"
    command = ["embed", "--input", str(papers), "--output", str(output), "--shard-size", "4", "--no-progress"]
    counting_encodes(monkeypatch, fail_on_call=2)
    with pytest.raises(Interrupt):
        main([*command, "--model", str(tiny_bert), "--no-cache"])
    monkeypatch.undo()
    assert main([*command, "--resume"]) == 2  # the embedded default model
    assert f"it was embedding with {tiny_bert} (revision None), this run with " in caplog.text
    assert "resume with the model it was started with" in caplog.text and not output.exists()


# 4. Embedding cache shards of the wrong width or changed in place -----------------------------------------


@pytest.mark.parametrize(
    "damage", ["wrong width", "changed in place", "key file does not parse", "legacy wrong width"]
)
def test_a_damaged_cache_shard_is_named_dropped_and_embedded_again(tiny_encoder, tmp_path, caplog, damage):
    """Scores from a damaged cache equal those of an undamaged one: the shard is named and re-embedded."""
    from sciembed.evaluation.cache import EmbeddingCache

    texts = tiny_encoder.texts(PAPERS)
    first = EmbeddingCache(tiny_encoder, tmp_path)
    expected = first.embed(texts, show_progress_bar=False)
    (keys_path,) = first.folder.glob("shard-*.json")
    vectors_path = keys_path.with_suffix(".npy")
    if damage in ("wrong width", "legacy wrong width"):
        np.save(vectors_path, np.zeros((len(texts), 7), dtype=np.float32))
        if damage == "legacy wrong width":  # an older key file: a plain list, no hash to catch it
            keys_path.write_text(json.dumps(json.loads(keys_path.read_text())["keys"]))
    elif damage == "changed in place":
        changed = np.load(vectors_path)
        changed[0] += 1
        np.save(vectors_path, changed)
    else:
        keys_path.write_text("{oops")
    again = EmbeddingCache(tiny_encoder, tmp_path)
    # Named when the cache is opened, or (vectors changed in place: their hash) when they are first needed.
    np.testing.assert_allclose(again.embed(texts, show_progress_bar=False), expected, atol=1e-6)
    assert str(vectors_path) in caplog.text and "embedded again" in caplog.text
    assert again.encoded == len(set(texts)) and not vectors_path.exists()


# 5. Code in a model folder that the user did not choose to trust -----------------------------------------


def test_export_refuses_code_that_is_not_sciembed_s_before_running_it(family_model, tmp_path, caplog):
    """A tampered configuration file in the model folder is refused (naming it) and never executed; with
    --trust-remote-code the user takes responsibility and the export validates it as usual."""
    folder = shutil.copytree(family_model, tmp_path / "model")
    marker = tmp_path / "ran"
    config = folder / "configuration_multi2spe.py"
    config.write_text(config.read_text() + f"\nimport pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n")
    assert main(["export", "--model", str(folder), "--out", str(tmp_path / "hub")]) == 2
    assert (
        "configuration_multi2spe.py is not sciembed's own code" in caplog.text and "--trust-remote-code" in caplog.text
    )
    assert not marker.exists() and not (tmp_path / "hub").exists()
    assert main(["export", "--model", str(folder), "--out", str(tmp_path / "hub"), "--trust-remote-code"]) == 0
    assert marker.exists()  # the fresh-process validation ran the code the user chose to trust


# 6. Crash windows in writes ------------------------------------------------------------------------------


def test_npy_ids_name_their_vectors_so_a_torn_pair_is_refused(tmp_path):
    """A crash between the two renames of an .npy pair (simulated: the new ids beside the old vectors) is an
    error naming both files, never new ids read with old vectors; a plain list of ids (older files) still reads."""
    ids, vectors = ["a", "b", "c"], np.arange(12, dtype=np.float32).reshape(3, 4)
    path = tmp_path / "out.npy"
    write_embeddings(path, iter([(ids, vectors)]), total=3, dim=4)
    old_vectors = path.read_bytes()
    write_embeddings(path, iter([(ids, vectors[::-1].copy())]), total=3, dim=4)
    path.write_bytes(old_vectors)
    with pytest.raises(ValueError, match="out.ids.json was written with other vectors than .*out.npy"):
        read_embeddings(path)
    ids_path(path).write_text(json.dumps(ids))
    assert read_embeddings(path)[0] == ids


def test_embed_outputs_get_the_permissions_of_the_umask(tiny_bert, tmp_path):
    import os
    import stat

    papers = _jsonl(tmp_path / "papers.jsonl")
    previous = os.umask(0o022)
    try:
        for name in ("out.jsonl", "out.npy"):
            assert (
                main(
                    [
                        "-q",
                        "embed",
                        "--model",
                        str(tiny_bert),
                        "--input",
                        str(papers),
                        "--output",
                        str(tmp_path / name),
                        "--no-progress",
                    ]
                )
                == 0
            )
    finally:
        os.umask(previous)
    for path in (tmp_path / "out.jsonl", tmp_path / "out.npy", tmp_path / "out.ids.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_replace_folder_swaps_in_the_new_folder_and_keeps_nothing_else(tmp_path):
    from sciembed.io import replace_folder

    destination, staging = tmp_path / "model", tmp_path / ".model.partial"
    destination.mkdir()
    (destination / "old.txt").write_text("old")
    staging.mkdir()
    (staging / "new.txt").write_text("new")
    replace_folder(staging, destination)
    assert [p.name for p in destination.iterdir()] == ["new.txt"] and sorted(p.name for p in tmp_path.iterdir()) == [
        "model"
    ]
    staging.mkdir()
    replace_folder(staging, tmp_path / "fresh")  # no destination yet: a plain rename
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "model"]


def test_export_over_an_existing_folder_replaces_it_whole_when_asked(tiny_st_base, tmp_path):
    out = tmp_path / "hub"
    out.mkdir()
    (out / "stale.txt").write_text("from an older export")
    assert (
        main(["-q", "export", "--model", str(tiny_st_base), "--out", str(out), "--no-validate"]) == 2
    )  # never unasked
    assert main(["-q", "export", "--model", str(tiny_st_base), "--out", str(out), "--no-validate", "--overwrite"]) == 0
    assert not (out / "stale.txt").exists() and (out / "README.md").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hub"]  # no temporary folder left beside it


# 7. The temporary folder's name in the published card ---------------------------------------------------


def test_card_names_the_model_or_the_repo_id(tiny_st_base, tmp_path):
    """The card's title and model-index name come from --model-name, the repo id or the model's own folder, never
    from the output folder (a folder named `hub` is no model's name); a plain encoder's title says the embedding
    its modules record."""
    import yaml

    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "benchmark": "cacm",
                "source": "cacm",
                "model": "m",
                "sciembed_version": "0",
                "results": [
                    {
                        "benchmark": "cacm",
                        "task": "cite",
                        "task_id": "cite",
                        "kind": "proximity",
                        "group": None,
                        "metric": "map",
                        "value": 71.25,
                    }
                ],
            }
        )
    )
    assert (
        main(
            [
                "-q",
                "export",
                "--model",
                str(tiny_st_base),
                "--out",
                str(tmp_path / "hub"),
                "--evaluation",
                str(results),
            ]
        )
        == 0
    )
    card = (tmp_path / "hub" / "README.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["model-index"][0]["name"] == tiny_st_base.name
    assert (
        f"\n# {tiny_st_base.name}\n" in card
        and "partial" not in card
        and "mean-pooled, L2-normalised embedding" in card
    )
    assert (
        main(
            [
                "-q",
                "export",
                "--model",
                str(tiny_st_base),
                "--out",
                str(tmp_path / "named"),
                "--evaluation",
                str(results),
                "--model-name",
                "my-encoder",
            ]
        )
        == 0
    )
    card = (tmp_path / "named" / "README.md").read_text()
    assert (
        yaml.safe_load(card.split("---")[1])["model-index"][0]["name"] == "my-encoder" and "\n# my-encoder\n" in card
    )
    assert (
        main(
            [
                "-q",
                "push",
                "--model",
                str(tiny_st_base),
                "--out",
                str(tmp_path / "other"),
                "--evaluation",
                str(results),
                "--repo-id",
                "org/specter-minilm",
                "--no-validate",
                "--dry-run",
            ]
        )
        == 0
    )
    card = (tmp_path / "other" / "README.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["model-index"][0]["name"] == "specter-minilm"


# 10. A JSON record that names one key twice --------------------------------------------------------------------

REPEATED = '{"paper_id": "a", "title": "Graphs", "abstract": "about graphs", "paper_id": "b"}'


def test_a_repeated_key_in_a_jsonl_record_stops_the_run_naming_the_line_and_key(tiny_bert, tmp_path, caplog):
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps(PAPERS_11[0]) + "\n" + REPEATED + "\n" + json.dumps(PAPERS_11[1]) + "\n")
    output = tmp_path / "out.jsonl"
    command = ["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(output), "--no-progress"]
    assert main(command) == 2
    assert "papers.jsonl, line 2: the key 'paper_id' appears twice in one object" in caplog.text
    assert not output.exists()
    caplog.clear()
    assert main([*command, "--skip-invalid"]) == 0
    assert "skipped 1 invalid record(s)" in caplog.text
    assert read_embeddings(output)[0] == ["id0", "id1"]


@pytest.mark.parametrize("reader", ["papers .json", "beir corpus", "beir queries", "s2orc", "scirepeval", "queries"])
def test_every_json_reader_refuses_a_repeated_key(tmp_path, reader):
    from sciembed.data.beir import read_beir
    from sciembed.data.papers import read_papers
    from sciembed.data.s2orc import read_s2orc
    from sciembed.data.scirepeval import read_scirepeval_sample
    from sciembed.evaluation.custom import read_queries

    record = {"paper_id": "p1", "title": "Graphs", "abstract": "about graphs"}
    if reader == "papers .json":
        path = tmp_path / "papers.json"
        path.write_text("[" + json.dumps(record) + ",\n" + REPEATED + "]")
        call = lambda: read_papers(path)  # noqa: E731
    elif reader.startswith("beir"):
        (tmp_path / "qrels").mkdir()
        (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
        corpus = (
            '{"_id": "d1", "title": "T", "text": "x", "_id": "d2"}'
            if reader == "beir corpus"
            else '{"_id": "d1", "text": "x"}'
        )
        queries = (
            '{"_id": "q1", "text": "x", "text": "y"}' if reader == "beir queries" else '{"_id": "q1", "text": "x"}'
        )
        (tmp_path / "corpus.jsonl").write_text(corpus + "\n")
        (tmp_path / "queries.jsonl").write_text(queries + "\n")
        path = tmp_path / ("corpus.jsonl" if reader == "beir corpus" else "queries.jsonl")
        call = lambda: read_beir(tmp_path)  # noqa: E731
    elif reader == "s2orc":
        path = tmp_path / "metadata.jsonl"
        path.write_text('{"paper_id": "p1", "title": "T", "outbound_citations": ["p2"], "outbound_citations": []}\n')
        call = lambda: read_s2orc(path)  # noqa: E731
    elif reader == "scirepeval":
        path = tmp_path / "fos.jsonl"
        path.write_text('{"doc_id": "p1", "title": "T", "abstract": "A", "fos": ["Physics"], "fos": ["Art"]}\n')
        call = lambda: read_scirepeval_sample(path)  # noqa: E731
    else:
        path = tmp_path / "queries.jsonl"
        path.write_text('{"_id": "q1", "text": "graphs", "_id": "q2"}\n')
        call = lambda: read_queries(path)  # noqa: E731
    with pytest.raises(ValueError, match=rf"{path.name}.*the key '\w+' appears twice in one object"):
        call()


@pytest.mark.parametrize(
    "name, text",
    [
        ("papers.json", '[{"paper_id": "a", "title": "T"},\n {"paper_id": "b",\n  "title": "U", "paper_id": "c"}]'),
        ("metadata.json", '{"a": {"title": "T"},\n "b": {"title": "U"},\n "a": {"title": "V"}}'),
        ("queries.json", '{"q1": {"title": "T, \\"paper_id\\": [{"},\n "q2": {"paper_id": "x",\n "paper_id": "y"}}'),
    ],
    ids=["list", "keyed by id", "brackets in a string"],
)
def test_a_repeated_key_in_a_whole_json_file_is_named_by_its_line(tmp_path, caplog, name, text):
    papers = tmp_path / name
    papers.write_text(text)
    assert main(["embed", "--input", str(papers), "--output", str(tmp_path / "out.jsonl")]) == 2
    key = "a" if name == "metadata.json" else "paper_id"
    assert f"{name}, line 3: the key '{key}' appears twice in one object" in caplog.text


def test_export_names_the_line_of_a_repeated_key_in_a_results_file(tiny_bert, tmp_path, caplog):
    results = tmp_path / "results.json"
    results.write_text('{"benchmark": "cacm",\n "benchmark": "scidocs"}')
    command = ["export", "--model", str(tiny_bert), "--out", str(tmp_path / "hub"), "--evaluation", str(results)]
    assert main(command) == 2
    assert "results.json, line 2 (--evaluation): the key 'benchmark' appears twice" in caplog.text


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_header_that_names_a_column_twice_is_refused(tmp_path, suffix):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sciembed.data.papers import read_papers

    path = tmp_path / f"papers{suffix}"
    if suffix == ".csv":
        path.write_text("paper_id,title,abstract,title\np1,First,about graphs,Second\n")
    else:
        columns = [pa.array(["p1"]), pa.array(["First"]), pa.array(["about graphs"]), pa.array(["Second"])]
        pq.write_table(pa.table(columns, names=["paper_id", "title", "abstract", "title"]), path)
    with pytest.raises(ValueError, match=rf"papers\{suffix}, (line 1|schema): the column 'title' is named twice"):
        read_papers(path)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_header_that_names_a_column_twice_but_for_spaces_is_refused(tmp_path, suffix):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sciembed.data.papers import read_papers

    path = tmp_path / f"papers{suffix}"
    if suffix == ".csv":
        path.write_text("paper_id,title,abstract, title\np1,First,about graphs,Second\n")
    else:
        columns = [pa.array(["p1"]), pa.array(["First"]), pa.array(["about graphs"]), pa.array(["Second"])]
        pq.write_table(pa.table(columns, names=["paper_id", "title", "abstract", "title "]), path)
    with pytest.raises(ValueError, match=r"the column 'title' is named twice \('\s?title\s?' and '\s?title\s?'\)"):
        read_papers(path)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_settings_file_that_names_a_key_twice_is_refused(tmp_path, caplog, suffix):
    config = tmp_path / f"settings{suffix}"
    if suffix == ".json":
        config.write_text('{"training": {"max_steps": 1000},\n\n "training": {"max_steps": 2}}')
    else:
        config.write_text("training:\n  max_steps: 1000\ntraining:\n  max_steps: 2\n")
    assert main(["train", "--recipe", "specter", "--config", str(config), "--show-settings"]) == 2
    assert f"settings{suffix}, line 3: the key 'training' appears twice in one object" in caplog.text
    caplog.clear()
    assert main(["train", "--recipe", "specter", "--set", 'loss={"margin": 1, "margin": 2}', "--show-settings"]) == 2
    assert '--set loss={"margin": 1, "margin": 2}: the key \'margin\' appears twice' in caplog.text


def test_an_ensemble_or_labels_file_naming_a_key_or_column_twice_is_refused(tiny_bert, tmp_path):
    from sciembed.evaluation.benchmarks.scidocs import _query_fields
    from sciembed.evaluation.custom import read_labels

    (tmp_path / "ensemble").mkdir()
    members = json.dumps([str(tiny_bert)])
    (tmp_path / "ensemble" / "sciembed_ensemble.json").write_text(
        f'{{"members": {members}, "combine": "mean", "members": [{members[1:-1]}, {members[1:-1]}]}}'
    )
    with pytest.raises(ValueError, match=r"sciembed_ensemble\.json, line 1: .*'members' appears twice"):
        sciembed.Encoder.from_pretrained(tmp_path / "ensemble")
    (tmp_path / "query_fields.json").write_text('{"cite": {"p1": "Biology", "p1": "Physics"}}')
    with pytest.raises(ValueError, match=r"query_fields\.json, line 1: the key 'p1' appears twice"):
        _query_fields(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("paper_id,label,label\np1,a,b\n")
    with pytest.raises(ValueError, match=r"labels\.csv, line 1: the column 'label' is named twice"):
        read_labels(labels)


def test_an_embedding_line_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "vectors.jsonl"
    path.write_text('{"paper_id": "a", "embedding": [1.0, 2.0], "paper_id": "b"}\n')
    with pytest.raises(ValueError, match=r"vectors.jsonl, line 1: .*'paper_id' appears twice"):
        read_embeddings(path)


def test_an_npy_ids_file_naming_its_ids_twice_is_refused(tmp_path):
    path = tmp_path / "vectors.npy"
    write_embeddings(path, [(["a", "b"], np.eye(2, dtype=np.float32))], total=2, dim=2)
    stored = json.loads(ids_path(path).read_text())
    ids_path(path).write_text(
        '{"ids": ["b", "a"],\n "npy_sha256": ' + json.dumps(stored["npy_sha256"]) + ',\n "ids": ["a", "b"]}'
    )
    with pytest.raises(ValueError, match=r"vectors.ids.json, line 3: the key 'ids' appears twice"):
        read_embeddings(path)


@pytest.mark.parametrize("file", ["config.json", "tokenizer_config.json"])
def test_a_model_config_naming_a_key_twice_is_refused_in_every_command(tiny_bert, tmp_path, caplog, file):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    text = (model / file).read_text()
    key, value = ("hidden_act", '"relu"') if file == "config.json" else ("do_lower_case", "false")
    assert f'"{key}"' in text
    (model / file).write_text(text.replace("{", "{\n  " + f'"{key}": {value},', 1))
    papers = _jsonl(tmp_path / "papers.jsonl")
    for command in (
        ["embed", "--model", str(model), "--input", str(papers), "--output", str(tmp_path / "o.jsonl")],
        ["export", "--model", str(model), "--out", str(tmp_path / "export"), "--no-validate"],
    ):
        caplog.clear()
        assert main(command) == 2
        assert f"{file}, line " in caplog.text and f"the key {key!r} appears twice" in caplog.text
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "export").exists()


# 11. A SMART record that lost its .I line ----------------------------------------------------------------------


def _smart(records: int) -> str:
    return "".join(
        f".I {i}\n.T\nTitle {i}\n.W\nAbstract {i}\n.B\nCACM 1960\n.X\n{i % records + 1}\t5\t{i}\n"
        for i in range(1, records + 1)
    )


@pytest.mark.parametrize("lost", [".I 7\n", ".I 40\n"])
def test_a_smart_record_without_its_id_line_is_not_merged_into_the_one_before(tmp_path, lost):
    from sciembed import InvalidPaperError
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "tiny.all"
    path.write_text(_smart(40).replace(lost, ""))
    previous = int(lost.split()[1]) - 1
    with pytest.raises(
        InvalidPaperError, match=rf"paper_id '{previous}'\): a second \.T field at line \d+.*missing \.I"
    ):
        read_smart_collection(path)
    collection = read_smart_collection(path, skip_invalid=True)
    assert len(collection.papers) == 38 and len(collection.skipped) == 1


def test_a_smart_field_after_the_x_lines_starts_no_merged_record(tmp_path):
    from sciembed import InvalidPaperError
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "tiny.all"
    # Record 3 ends with .X; record 4 lost its .I line and has no .T or .X of its own to repeat.
    path.write_text(".I 3\n.T\nThree\n.X\n1\t5\t3\n.W\nFour's abstract\n.B\nCACM 1960\n.I 5\n.T\nFive\n")
    with pytest.raises(InvalidPaperError, match=r"paper_id '3'\): a \.W field at line 6 after the record's \.X lines"):
        read_smart_collection(path)


@pytest.mark.parametrize("broken", [".I4", ".i 4", " .I 4", ".I", ".I 4 x"])
def test_a_broken_smart_id_line_is_named_as_one(tmp_path, broken):
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "tiny.all"
    path.write_text(f".I 3\n.T\nThree\n.W\nAn abstract\n{broken}\n.T\nFour\n")
    with pytest.raises(ValueError, match=r"tiny\.all, line 6: .* is not a record line '\.I <id>' \(a broken \.I line"):
        read_smart_collection(path)


def test_smart_x_lines_owned_by_another_record_are_named(tmp_path):
    from sciembed import InvalidPaperError
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "tiny.all"
    # Record 2's own fields are gone with its .I line but its .X lines remain, after record 1's.
    path.write_text(".I 1\n.T\nOne\n.X\n2\t5\t1\n1\t5\t2\n.I 3\n.T\nThree\n")
    with pytest.raises(
        InvalidPaperError, match=r"line 1 \(paper_id '1'\): its \.X lines from line 6 name the record 2"
    ):
        read_smart_collection(path)


@pytest.mark.parametrize("lost", [".I 7\n.T\n", ".I 1\n.T\n", ".I 1\n", ".I 7\n.T\nTitle 7\n.W\n"])
def test_a_smart_record_without_its_id_line_is_named_as_one_whatever_it_also_lost(tmp_path, lost):
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "tiny.all"
    path.write_text(_smart(10).replace(lost, ""))
    with pytest.raises(ValueError, match=r"tiny\.all, line \d+: .*a missing \.I line\?"):
        read_smart_collection(path)


@pytest.mark.parametrize("newline, sep", [("\n", "\t"), ("\r\n", "\t"), ("\n", " ")])
@pytest.mark.parametrize("before", [".I", ".T", ".B", ".N", ".A"])
def test_smart_link_lines_that_lost_their_x_line_are_refused(tmp_path, before, newline, sep):
    from sciembed.data.smart import read_smart_collection, read_smart_queries

    fields = {".I": "", ".T": ".T\nThree\n"}.get(before, f".T\nThree\n{before}\nsome text\n")
    record = f".I 3\n{fields}.X\n1\t5\t3\n3\t5\t3\n.I 4\n.T\nFour\n.X\n4\t5\t4\n"
    path = tmp_path / "tiny.all"
    path.write_text(record.replace(".X\n", "", 1).replace("\n", newline).replace("\t", sep), newline="")
    line = record.count("\n", 0, record.index(".X")) + 1
    message = rf"tiny\.all, line {line}: the record '3' holds link lines .*a lost \.X line\?"
    with pytest.raises(ValueError, match=message):
        read_smart_collection(path)
    with pytest.raises(ValueError, match=message):
        read_smart_queries(path)


def test_a_smart_query_with_a_field_twice_is_refused(tmp_path):
    from sciembed.data.smart import read_smart_queries

    path = tmp_path / "query.text"
    path.write_text(".I 1\n.W\nfirst query\n.W\nsecond query\n")
    with pytest.raises(ValueError, match=r"line 4: a second \.W field .* in query '1'.*missing \.I"):
        read_smart_queries(path)


def _cacm_like(records: int = 12) -> str:
    """Records with CACM's fields in CACM's order: .T .W .B .A .K .C .N .X."""
    return "".join(
        f".I {i}\n.T\nOn the Compilation of List {i}\n.W\nA method of compiling lists is given\nand its cost is "
        f"shown.\n.B\nCACM March, 19{60 + i}\n.A\nPerlis, A. J.\nSamelson, K.\n.K\nlist processing, compilers,"
        f"\nstorage allocation\n.C\n4.12 4.22\n.N\nCA6{i:05d} JB March 22, 1978  8:28 PM\n.X\n{i}\t5\t{i}\n"
        for i in range(1, records + 1)
    )


@pytest.mark.parametrize("lost", [".B", ".A", ".K", ".C", ".N"])
def test_a_smart_field_that_lost_its_marker_is_named_by_the_shape_of_its_lines(tmp_path, lost):
    from sciembed import InvalidPaperError
    from sciembed.data.smart import read_smart_collection

    text = _cacm_like()
    at = text.index(f"{lost}\n", text.index(".I 7\n"))
    path = tmp_path / "cacm.all"
    path.write_text(text[:at] + text[at + len(lost) + 1 :])
    line = text.count("\n", 0, at) + 1
    message = rf"cacm\.all, line \d+ \(paper_id '7'\): line {line} .* has the shape of a \{lost} line: a lost \{lost}"
    with pytest.raises(InvalidPaperError, match=message):
        read_smart_collection(path)
    collection = read_smart_collection(path, skip_invalid=True)
    assert len(collection.papers) == 11 and [p.paper_id for p in collection.skipped] == ["7"]


def test_a_smart_title_holding_its_abstract_is_named_in_a_warning(tmp_path, caplog):
    from sciembed.data.smart import read_smart_collection

    text = _cacm_like().replace("shown.\n", "shown. " + "More words of the abstract follow here. " * 12 + "\n")
    path = tmp_path / "cacm.all"
    path.write_text(text.replace(".W\n", "", 2))
    assert len(read_smart_collection(path).papers) == 12
    assert "2 record(s) have a title far longer than the file's others" in caplog.text
    assert "1 (line 1, " in caplog.text and "2 (line " in caplog.text and "a lost .W line" in caplog.text


def test_a_second_line_in_a_smart_field_of_one_line_is_named_in_a_warning(tmp_path, caplog):
    from sciembed.data.smart import read_smart_collection

    path = tmp_path / "cacm.all"
    path.write_text(_cacm_like().replace(".A\nPerlis, A. J.\nSamelson, K.\n", "ACM Special Interest Committee\n", 1))
    assert len(read_smart_collection(path).papers) == 12
    assert "1 record(s) hold a second line in a field that is one line in every other record" in caplog.text
    assert "1 (line 9: 'ACM Special Interest Committee' in its .B field)" in caplog.text


def test_a_smart_query_that_lost_its_author_marker_is_refused(tmp_path):
    from sciembed.data.smart import read_smart_queries

    path = tmp_path / "query.text"
    path.write_text(
        "".join(f".I {i}\n.W\nPapers on lists {i}\n.A\nPooch, U.\n.N\n {i}. A reader\n" for i in (1, 2, 3))
    )
    path.write_text(path.read_text().replace(".A\n", "", 1))
    with pytest.raises(
        ValueError, match=r"line 1: query '1': line 4 \('Pooch, U\.'\), in its \.W field, has the shape"
    ):
        read_smart_queries(path)


def test_no_record_of_the_real_cacm_is_taken_for_one_that_lost_a_marker(caplog):
    from helpers import shared_data

    from sciembed.data.smart import read_smart_collection

    collection = read_smart_collection(shared_data("cacm", "cacm.all"), skip_invalid=True)
    assert [problem.paper_id for problem in collection.skipped] == [
        "28"
    ]  # the record whose .I line broke: '.I 28' '56'
    assert "a lost ." not in caplog.text and "far longer" not in caplog.text and len(collection.papers) == 3203
    assert "skipped 1 record(s)" in caplog.text
