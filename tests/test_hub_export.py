"""sciembed export / push: Hub-ready folders, validation without sciembed, HfApi through a recording fake."""

from __future__ import annotations

import json

import pytest
import torch

from sciembed.cli import main
from sciembed.hub.export import export_model
from sciembed.hub.push import HubOfflineError, push_folder

RESULTS = {
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
        },
        {
            "benchmark": "cacm",
            "task": "cite",
            "task_id": "cite",
            "kind": "proximity",
            "group": None,
            "metric": "ndcg",
            "value": 81.5,
        },
    ],
}


class RecordingHfApi:
    """Stands in for huggingface_hub.HfApi: records the calls and the files it was asked to upload."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, *, private=None, exist_ok=False, **_):
        self.calls.append(("create_repo", repo_id, {"private": private, "exist_ok": exist_ok}))

    def upload_folder(self, *, repo_id, folder_path, commit_message=None, **_):
        from pathlib import Path

        files = sorted(str(p.relative_to(folder_path)) for p in Path(folder_path).rglob("*") if p.is_file())
        self.calls.append(("upload_folder", repo_id, {"files": files, "commit_message": commit_message}))
        return type("CommitInfo", (), {"commit_url": f"https://huggingface.co/{repo_id}/commit/abc"})()


def test_export_writes_a_hub_ready_folder_that_loads_without_sciembed(family_model, tmp_path):
    from huggingface_hub import ModelCard

    report = export_model(family_model, tmp_path / "hub", evaluations=[RESULTS], repo_id="org/m2s")
    assert report.validated and any("loads without sciembed as Multi2SPEModel" in c for c in report.checks)
    files = set(report.files)
    assert {
        "README.md",
        "config.json",
        "model.safetensors",
        "modules.json",
        "configuration_multi2spe.py",
        "modeling_multi2spe.py",
    } <= files
    assert not any(f.startswith("checkpoint-") for f in files)
    config = json.loads((tmp_path / "hub" / "config.json").read_text())
    assert config["auto_map"]["AutoModel"].endswith("Multi2SPEModel")
    card = ModelCard.load(tmp_path / "hub" / "README.md")
    metrics = {(r.metric_type, r.metric_value) for r in card.data.eval_results}
    assert {("map", 71.25), ("ndcg", 81.5)} <= metrics
    assert not (tmp_path / ".hub.partial").exists()


def test_export_converts_bin_weights_and_refuses_non_models(tiny_bert, tmp_path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert)
    model.save_pretrained(tmp_path / "bin", safe_serialization=False)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        if (tiny_bert / name).exists():
            (tmp_path / "bin" / name).write_bytes((tiny_bert / name).read_bytes())
    report = export_model(tmp_path / "bin", tmp_path / "out")
    assert "model.safetensors" in report.files and "pytorch_model.bin" not in report.files
    reloaded = AutoModel.from_pretrained(tmp_path / "out")
    for (name, a), b in zip(model.state_dict().items(), reloaded.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        export_model(tmp_path, tmp_path / "nothing")


def test_push_goes_through_hfapi(family_model, tmp_path, monkeypatch):
    from huggingface_hub import constants

    export_model(family_model, tmp_path / "hub", validate=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    api = RecordingHfApi()
    url = push_folder(tmp_path / "hub", "org/m2s", api=api, private=True)
    assert url.endswith("/commit/abc")
    (create, repo, options), (upload, repo2, upload_options) = api.calls
    assert (create, repo, options) == ("create_repo", "org/m2s", {"private": True, "exist_ok": True})
    assert (upload, repo2) == ("upload_folder", "org/m2s")
    assert upload_options["commit_message"] == "Upload multi2spe model with sciembed"
    assert {"README.md", "config.json", "model.safetensors", "modeling_multi2spe.py"} <= set(upload_options["files"])
    with pytest.raises(ValueError, match="ORG/NAME"):
        push_folder(tmp_path / "hub", "no-org", api=api)
    with pytest.raises(ValueError, match="run sciembed export first"):
        push_folder(family_model, "org/m2s", api=api)


def test_push_offline_stops_after_a_complete_export(family_model, tmp_path, caplog):
    out = tmp_path / "ready"
    assert (
        main(
            [
                "push",
                "--model",
                str(family_model),
                "--repo-id",
                "org/m2s",
                "--out",
                str(out),
                "--no-validate",
                "--dry-run",
            ]
        )
        == 0
    )
    assert (out / "README.md").is_file()
    with pytest.raises(HubOfflineError, match="HF_HUB_OFFLINE is set"):
        push_folder(out, "org/m2s", api=RecordingHfApi())
    assert (
        main(
            [
                "push",
                "--model",
                str(family_model),
                "--repo-id",
                "org/m2s",
                "--out",
                str(out),
                "--no-validate",
                "--overwrite",
            ]
        )
        == 2
    )
    assert "HF_HUB_OFFLINE is set" in caplog.text and (out / "model.safetensors").is_file()


def test_export_names_the_model_after_the_run_and_the_data_after_what_it_is(family_model, tmp_path, caplog):
    """A run's model exported to a folder named hub is named after the run (or --model-name), never after the output
    folder; a user's labels read as SciDocs are named after their folder (or --dataset-name), never "SciDocs MeSH"."""
    import shutil

    from huggingface_hub import ModelCard

    run = tmp_path / "specter-thesis"
    shutil.copytree(family_model, run / "model")
    (run / "train_results.json").write_text(json.dumps({"recipe": "specter", "settings": {}}))
    labels = tmp_path / "thesis-labels"
    (labels / "mesh").mkdir(parents=True)
    report = {
        **RESULTS,
        "benchmark": "scidocs",
        "source": str(labels),
        "settings": {"split": "test"},
        "results": [
            {
                "benchmark": "scidocs",
                "task": "MeSH",
                "task_id": "mesh",
                "kind": "classification",
                "group": None,
                "metric": "f1",
                "value": 64.5,
            }
        ],
    }
    evaluation = tmp_path / "results.json"
    evaluation.write_text(json.dumps(report))
    export = [
        "export",
        "--model",
        str(run / "model"),
        "--out",
        str(tmp_path / "hub"),
        "--no-validate",
        "--evaluation",
        str(evaluation),
    ]

    def written():
        card = ModelCard.load(tmp_path / "hub" / "README.md")
        (result,) = card.data.eval_results
        return card.text.split("\n", 3)[1], card.data.model_name, result.dataset_name

    assert main(export) == 0
    assert written() == ("# specter-thesis", "specter-thesis", "thesis-labels mesh")
    assert main([*export, "--model-name", "thesis-specter", "--dataset-name", "Thesis abstracts", "--overwrite"]) == 0
    assert written() == ("# thesis-specter", "thesis-specter", "Thesis abstracts mesh")
    assert main([*export, "--dataset-name", "a", "--dataset-name", "b"]) == 2
    assert "--dataset-name given 2 time(s) for 1 evaluation(s)" in caplog.text
