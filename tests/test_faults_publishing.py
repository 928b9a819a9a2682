"""An export publishes the model and nothing else (issue 22, part 2): stray files and links out of the model
folder are left out and named; ``push`` uploads exactly the exported files and refuses anything added later."""

from __future__ import annotations

import os
import shutil

import pytest

from sciembed.cli import main
from sciembed.hub.export import export_model
from sciembed.hub.files import hub_files
from sciembed.hub.push import push_folder


class UploadRecorder:
    """Stands in for huggingface_hub.HfApi; records what upload_folder was allowed to send."""

    def __init__(self):
        self.allowed = None

    def create_repo(self, repo_id, **_):
        pass

    def upload_folder(self, *, repo_id, folder_path, allow_patterns=None, **_):
        self.allowed = allow_patterns
        return "https://huggingface.co/commit"


@pytest.fixture
def cluttered(tiny_bert, tmp_path):
    """The tiny BERT's folder as people keep one: a key linked in from outside, notes, a run's leftovers."""
    outside = tmp_path / "home"
    (outside / "ssh").mkdir(parents=True)
    (outside / "ssh" / "id_ed25519").write_text("PRIVATE KEY")
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    (model / ".env").write_text("HF_TOKEN=hf_secret")
    (model / "notes.txt").write_text("reviewer 2 is wrong")
    (model / "optimizer.pt").write_bytes(b"state")
    (model / "checkpoint-4").mkdir()
    (model / "checkpoint-4" / "model.safetensors").write_bytes(b"old")
    (model / "key.json").symlink_to(outside / "ssh" / "id_ed25519")
    (model / "ssh").symlink_to(outside / "ssh", target_is_directory=True)
    # A link inside the folder is the folder's own file: exported as a file.
    (model / "weights").mkdir()
    (model / "model.safetensors").rename(model / "weights" / "model.safetensors")
    (model / "model.safetensors").symlink_to(model / "weights" / "model.safetensors")
    return model


def test_export_writes_only_the_model_and_names_what_it_left_out(cluttered, tmp_path, caplog):
    report = export_model(cluttered, tmp_path / "hub")
    assert report.validated
    assert set(report.left_out) == {
        ".env",
        "notes.txt",
        "optimizer.pt",
        "checkpoint-4/model.safetensors",
        "key.json",
        "ssh/",
        "weights/model.safetensors",
    }
    assert report.left_out["key.json"].startswith(
        f"a link to {tmp_path / 'home' / 'ssh' / 'id_ed25519'}, outside the model folder"
    )
    assert report.left_out[".env"] == "a hidden file"
    exported = {str(p.relative_to(tmp_path / "hub")) for p in (tmp_path / "hub").rglob("*")}
    assert (
        exported
        == set(report.files)
        == {
            "README.md",
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
            "vocab.txt",
            *({"special_tokens_map.json"} & exported),
        }
    )
    assert not any(p.is_symlink() for p in (tmp_path / "hub").rglob("*"))
    assert (tmp_path / "hub" / "model.safetensors").read_bytes() == (
        cluttered / "weights" / "model.safetensors"
    ).read_bytes()
    assert "left out 7 file(s) that do not belong on the Hub" in caplog.text and "key.json (a link to" in caplog.text


def test_push_uploads_the_exported_files_only_and_refuses_additions(cluttered, tmp_path, monkeypatch):
    from huggingface_hub import constants

    report = export_model(cluttered, tmp_path / "hub", validate=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    api = UploadRecorder()
    push_folder(tmp_path / "hub", "org/model", api=api)
    assert api.allowed == report.files
    (tmp_path / "hub" / ".env").write_text("HF_TOKEN=hf_secret")
    os.symlink(tmp_path / "home" / "ssh" / "id_ed25519", tmp_path / "hub" / "vocab.json")
    api = UploadRecorder()
    with pytest.raises(
        ValueError,
        match=r"holds 2 file\(s\) an export does not write.*\.env \(a hidden file\); vocab\.json \(a link to",
    ):
        push_folder(tmp_path / "hub", "org/model", api=api)
    assert api.allowed is None


def test_the_cli_export_lists_what_it_left_out(cluttered, tmp_path, caplog):
    assert main(["export", "--model", str(cluttered), "--out", str(tmp_path / "hub"), "--no-validate"]) == 0
    assert "notes.txt (not a weights, config, tokenizer or code file)" in caplog.text
    assert not (tmp_path / "hub" / "notes.txt").exists()


@pytest.mark.parametrize("file", ["model.safetensors", "config.json", "tokenizer.json"])
def test_export_refuses_a_file_the_model_needs_linked_from_outside(tiny_bert, tmp_path, caplog, file):
    model = shutil.copytree(tiny_bert, tmp_path / "model")
    (model / file).unlink()
    (model / file).symlink_to(tiny_bert / file)
    assert main(["export", "--model", str(model), "--out", str(tmp_path / "hub")]) == 2
    assert f"{model / file} is a link to {tiny_bert / file}, outside the model folder" in caplog.text
    assert "copy the file itself into the model folder" in caplog.text and "Traceback" not in caplog.text
    assert not (tmp_path / "hub").exists()


def test_a_hub_cache_snapshot_is_read_through_its_blob_links(tiny_bert, tmp_path):
    repo = tmp_path / "models--org--tiny"
    snapshot = repo / "snapshots" / "abc123"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for number, file in enumerate(sorted(p for p in tiny_bert.iterdir() if p.is_file())):
        blob = repo / "blobs" / f"blob{number}"
        shutil.copyfile(file, blob)
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    files, left_out = hub_files(snapshot)
    assert left_out == {} and "model.safetensors" in files


def test_export_of_modules_it_cannot_describe_names_the_model_s_file_and_the_way_to_publish(
    tiny_st_base, tmp_path, caplog
):
    import json

    import torch
    from sentence_transformers.sentence_transformer.modules import Dense

    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    torch.manual_seed(0)
    (model / "2_Dense").mkdir()
    Dense(32, 8).save(str(model / "2_Dense"))
    modules = json.loads((model / "modules.json").read_text())[:2]
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (model / "modules.json").write_text(json.dumps(modules))
    assert main(["export", "--model", str(model), "--out", str(tmp_path / "hub")]) == 2
    assert f"{model / 'modules.json'}: modules Transformer -> Pooling -> Dense" in caplog.text
    assert "push_to_hub" in caplog.text and "partial" not in caplog.text and "train" not in caplog.text
    assert not (tmp_path / "hub").exists() and not (tmp_path / ".hub.partial").exists()
