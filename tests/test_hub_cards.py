"""Model cards rendered from data: every family's card, its YAML and model-index, its usage code, its errors."""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
import yaml
from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results

from sciembed.families import classifier_from_bert, from_bert, save_pretrained
from sciembed.hub.cards import inspect_model_folder, read_citations, render_model_card, template_dir

REPO_ID = "sciembed-tests/tiny-model"

# Case -> (how the folder is built, family (model_type), method, whether AutoModel needs remote code).
CASES = {
    "multi2spe": ("family", "multi2spe", None, True),
    "control_code": ("family", "control_code", None, True),
    "moe_bert": ("family", "moe_bert", None, True),
    "spectroid": ("classifier", "spectroid", None, True),
    "bert": ("plain", "bert", None, False),
    "adapters": ("adapters", "bert", "adapters", False),
    "fusion": ("fusion", "bert", "fusion", False),
    "pals": ("pals", "bert", "pals", False),
}


def _evaluation_report() -> dict:
    """A report shaped as EvaluationReport.to_dict() writes it, with SPECTER's SciDocs numbers (Cohan et al.
    2020, Table 1) for MAG, co-view and cite."""
    rows = [
        ("MAG", "mag", "classification", "f1", 82.0),
        ("Co-View", "coview", "proximity", "map", 83.6),
        ("Co-View", "coview", "proximity", "ndcg", 91.5),
        ("Cite", "cite", "proximity", "map", 88.3),
        ("Cite", "cite", "proximity", "ndcg", 94.8),
    ]
    results = [{"benchmark": "scidocs", "task": task, "task_id": task_id, "kind": kind, "group": None, "metric": metric,
                "value": value, "counts": {}, "skipped": {}} for task, task_id, kind, metric, value in rows]
    values = [row["value"] for row in results]
    return {
        "benchmark": "scidocs", "source": "/data/scidocs", "model": "tiny", "sciembed_version": "0.1.0.dev0",
        "settings": {"split": "test", "pooling": "cls", "max_length": 64},
        "results": results, "averages": {f"average ({len(values)} metrics)": sum(values) / len(values)},
        "missing_tasks": ["mesh"], "skipped_records": {"count": 0, "first": []}, "embedding": {}, "tasks": [],
    }


def _training_run() -> dict:
    """A train_results.json dict of a short CPU run of the multi2spe recipe on a local base."""
    return {
        "recipe": "multi2spe", "paper": "Seoh, Chang & McCallum 2023, Multi2SPE", "base": "/models/tiny-bert",
        "data": {"source": "/data/cacm", "examples": 120, "skipped_records": 0, "queries": 24, "held_out_queries": 0},
        "settings": {
            "model": {"num_cls_tokens": 3}, "embedding": {"pooling": None, "max_length": None},
            "data": {"held_out": 0.0, "seed": 0, "max_examples": 120, "sampler": "specter"},
            "loss": {"weight": 0.1, "mode": "paper"},
            "training": {"learning_rate": 2e-5, "lr_scheduler_type": "linear", "num_train_epochs": 2, "max_steps": 8,
                         "per_device_train_batch_size": 8, "gradient_accumulation_steps": 4, "use_cpu": True, "report_to": "none"},
        },
        "train_metrics": {"train_loss": 0.6931, "train_runtime": 12.5}, "eval_metrics": {}, "global_step": 8, "seconds": 12.9,
        "model": "/runs/multi2spe/model",
    }


@pytest.fixture(scope="module", params=list(CASES))
def saved_model(request, tiny_bert, tmp_path_factory):
    """(case, folder) of a tiny saved model of each kind."""
    from transformers import AutoModel, AutoTokenizer

    kind, family, _, _ = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    torch.manual_seed(0)
    if kind == "family":
        options = {"domains": ["cs", "bio"]} if family == "moe_bert" else {}
        model, tokenizer = from_bert(family, tiny_bert, **options)
        save_pretrained(model, tokenizer, folder)
    elif kind == "classifier":
        model, tokenizer = classifier_from_bert("spectroid", tiny_bert, head="CH2", num_labels=2, id2label={0: "cs", 1: "bio"},
                                                label2id={"cs": 0, "bio": 1})
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    else:
        from sciembed.formats import save_with_format_modules

        model, tokenizer = AutoModel.from_pretrained(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert)
        if kind in ("adapters", "fusion"):
            from sciembed.formats.adapters import add_format_adapters, add_format_fusion

            add_format_adapters(model)
            if kind == "fusion":
                add_format_fusion(model)
        elif kind == "pals":
            from sciembed.formats.pals import PALsConfig, add_pals

            add_pals(model, PALsConfig(hidden_size=8, num_attention_heads=2))
        if not save_with_format_modules(model, folder):
            model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return request.param, folder


def _front_matter(card: ModelCard) -> dict:
    text = str(card)
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_every_family_card_renders_with_valid_yaml(saved_model):
    case, folder = saved_model
    _, family, method, remote_code = CASES[case]
    card = render_model_card(folder, evaluations=[_evaluation_report()], repo_id=REPO_ID)
    meta = _front_matter(card)
    assert meta == ModelCard(str(card)).data.to_dict()  # huggingface_hub reads the same YAML
    assert meta["pipeline_tag"] == ("text-classification" if case == "spectroid" else "feature-extraction")
    assert meta["license"] == "apache-2.0"
    assert {"sciembed", "scientific-documents", family.replace("_", "-")} <= set(meta["tags"])
    assert meta["library_name"] in ("sentence-transformers", "transformers")
    assert "base_model" not in meta  # no training run given
    info = inspect_model_folder(folder)
    assert (info.family, info.method) == (family, method)
    text = card.text
    assert f'AutoModel.from_pretrained("{REPO_ID}"' in text or "snapshot_download" in text
    assert ("trust_remote_code=True" in text) == remote_code
    assert "sciembed.PaperEncoder.from_pretrained(" in text
    assert ("with_format(" in text) == bool(info.formats)
    assert "```bibtex" in text and "## Limitations" in text
    assert ("pooler_output" in text) == remote_code


def test_library_name_follows_the_folder(saved_model):
    case, folder = saved_model
    meta = _front_matter(render_model_card(folder))
    # Families saved by sciembed carry sentence-transformers files that give their own embedding; MoE with
    # enforced routing needs a domain those files cannot pass; the rest are plain transformers folders.
    expected = "sentence-transformers" if case in ("multi2spe", "control_code") else "transformers"
    assert meta["library_name"] == expected


def test_model_index_equals_the_results_rows(saved_model):
    _, folder = saved_model
    report = _evaluation_report()
    card = render_model_card(folder, evaluations=[report], repo_id=REPO_ID)
    meta = _front_matter(card)
    name, results = model_index_to_eval_results(meta["model-index"])
    assert name == "tiny-model"
    got = {(r.dataset_type, r.dataset_config, r.dataset_split, r.metric_type): r.metric_value for r in results}
    assert got == {("scidocs", row["task_id"], "test", row["metric"]): row["value"] for row in report["results"]}
    assert {r.task_type for r in results} == {"classification", "proximity"}
    for row in report["results"]:  # the results table shows every row, rounded as the papers print them
        assert f"| {row['task']} | {row['metric']} | {row['value']:.2f} |" in card.text
    assert "mesh" in card.text  # the task absent from the data is named


def test_training_section_and_base_model(tiny_bert, tmp_path):
    model, tokenizer = from_bert("multi2spe", tiny_bert)
    folder = save_pretrained(model, tokenizer, tmp_path / "multi2spe")
    local = render_model_card(folder, training=_training_run())
    meta = _front_matter(local)
    assert "base_model" not in meta and "datasets" not in meta  # local paths are no Hub ids
    text = local.text
    assert "Recipe `multi2spe`" in text and "Seoh, Chang & McCallum 2023" in text
    assert "not a Hub id" in text and "cacm (a local folder)" in text and "examples: 120" in text
    assert "`training.learning_rate` | `2e-05`" in text and "`loss.weight` | `0.1`" in text
    assert "short training budget" in text and "trained on CPU" in text and "max_steps=8" in text
    assert "/data/cacm" not in text  # the machine's paths stay out of a public card
    assert "seoh-etal-2023-multi2spe" in text
    assert "multi2spe" in meta["tags"]

    hub = render_model_card(folder, training={**_training_run(), "base": "allenai/scibert_scivocab_uncased",
                                              "data": {"source": "allenai/scirepeval", "examples": 10}})
    meta = _front_matter(hub)
    assert meta["base_model"] == "allenai/scibert_scivocab_uncased" and meta["datasets"] == ["allenai/scirepeval"]
    embedded = render_model_card(folder, training={**_training_run(), "base": "all-MiniLM-L6-v2 (embedded)"})
    assert _front_matter(embedded)["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_architecture_sections(saved_model):
    case, folder = saved_model
    text = render_model_card(folder).text
    expected = {
        "multi2spe": ["sum of the K CLS outputs", "W_k minus the mean"],
        "control_code": ["`[PRX]` for proximity", "control code's position"],
        "moe_bert": ["copied into 2 experts", "enforced", "`cs` -> `[CS]`", 'domain="cs"'],
        "spectroid": ["CH2 (hidden layers 64)", "cross-entropy", "Labels:\ncs, bio"],
        "bert": ["triplet margin loss", "margin of 1"],
        "adapters": ["bottleneck adapter", "classification, regression, proximity, adhoc_query", "load_adapter"],
        "fusion": ["AdapterFusion layer", "load_adapter_fusion", "fusion_<format>/"],
        "pals": ["projected attention", "`pals/`", "without** its PALs"],
    }[case]
    for phrase in expected:
        assert phrase in text, phrase


def test_usage_code_runs(saved_model, monkeypatch):
    """Every Python block of the card runs against the saved folder (the Hub id replaced by its path) and
    embeds the example paper."""
    import huggingface_hub

    case, folder = saved_model
    text = render_model_card(folder, repo_id=REPO_ID).text
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id: str(folder))
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == (3 if case in ("multi2spe", "control_code") else 2)  # transformers, [sentence-transformers,] sciembed
    for block in blocks:
        namespace: dict = {}
        exec(compile(block.replace(f'"{REPO_ID}"', repr(str(folder))), f"<{case} card>", "exec"), namespace)
        assert tuple(namespace["embeddings"].shape) == (1, 32)


def test_multi_format_usage_names_the_formats(tiny_bert, tmp_path):
    model, tokenizer = from_bert("control_code", tiny_bert)
    text = render_model_card(save_pretrained(model, tokenizer, tmp_path / "ctrl"), repo_id=REPO_ID).text
    assert 'task_format="proximity"' in text and 'with_format("adhoc_query")' in text


def test_non_finite_values_stay_out_of_the_model_index(tiny_bert, tmp_path):
    report = _evaluation_report()
    report["results"][0]["value"] = math.nan
    card = render_model_card(tiny_bert, evaluations=[report])
    _, results = model_index_to_eval_results(_front_matter(card)["model-index"])
    assert len(results) == len(report["results"]) - 1
    assert "Left out of the metadata (not a finite number): MAG f1" in card.text


# Folder -> (files in it, the error, what the message says); None: the folder does not exist.
BAD_FOLDERS = {
    "absent": (None, FileNotFoundError, "not a folder"),
    "empty": ({}, FileNotFoundError, "no config.json"),
    "broken": ({"config.json": "{not json"}, ValueError, "not valid JSON"),
    "gpt": ({"config.json": json.dumps({"model_type": "gpt2"})}, ValueError, "model_type 'gpt2'"),
    "ensemble": ({"sciembed_ensemble.json": "{}"}, ValueError, "ensemble"),
}


@pytest.mark.parametrize("name", list(BAD_FOLDERS))
def test_bad_model_folders_give_clear_errors(name, tmp_path):
    files, error, message = BAD_FOLDERS[name]
    folder = tmp_path / name
    if files is not None:
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
    with pytest.raises(error, match=message):
        render_model_card(folder)


def test_bad_evaluations_and_training_give_clear_errors(tiny_bert):
    with pytest.raises(ValueError, match="'results' list"):
        render_model_card(tiny_bert, evaluations=[{"benchmark": "scidocs"}])
    bad = _evaluation_report()
    del bad["results"][0]["metric"]
    with pytest.raises(ValueError, match="lacks metric"):
        render_model_card(tiny_bert, evaluations=[bad])
    with pytest.raises(ValueError, match="reported twice"):
        render_model_card(tiny_bert, evaluations=[_evaluation_report(), _evaluation_report()])
    with pytest.raises(ValueError, match="train_results.json"):
        render_model_card(tiny_bert, training={"paper": "x"})
    with pytest.raises(ValueError, match="not a Hub repository id"):
        render_model_card(tiny_bert, repo_id="not a repo")


def test_templates_and_citations_ship_together():
    folder = template_dir()
    assert (folder / "model_card.md").is_file()
    partials = {p.stem for p in (folder / "model_families").glob("*.md")}
    assert {"bert", "multi2spe", "control_code", "moe_bert", "spectroid", "adapters", "pals"} <= partials
    entries = read_citations(folder)
    assert len(entries) == 8 and all(entry.rstrip().endswith("}") for entry in entries.values())
