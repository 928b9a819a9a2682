"""Model cards rendered from data: every family's card, its YAML and model-index, its usage code, its errors."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from helpers import PAPERS, WORDS
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
    "moe_token": ("family", "moe_bert", None, True),
    "spectroid": ("classifier", "spectroid", None, True),
    "bert": ("plain", "bert", None, False),
    "st_bert": ("plain", "bert", None, False),
    "adapters": ("adapters", "bert", "adapters", False),
    "fusion": ("fusion", "bert", "fusion", False),
    "pals": ("pals", "bert", "pals", False),
}
# Case -> (the base: the tiny BERT ([CLS], 64 tokens) or it with sentence-transformers modules as all-MiniLM-L6-v2 has
# them (mean, Normalize, 48 tokens)), family options, and for families whether their own files add a Normalize module.
BUILDS = {
    "multi2spe": ("tiny_st_base", {}, True),
    "control_code": ("tiny_bert", {}, False),  # inserts its code: 63 of the 64 positions are left for the text
    "moe_bert": ("tiny_bert", {"domains": ["cs", "bio"]}, False),  # enforced routing, the default
    "moe_token": ("tiny_st_base", {"routing": "token", "moe_layers": "middle", "domains": ["cs", "bio"]}, True),
    "spectroid": ("tiny_bert", {}, False),
    "bert": ("tiny_bert", {}, False),
    "st_bert": ("tiny_st_base", {}, False),
    "adapters": ("tiny_st_base", {}, False),  # adapters trained from MiniLM keep its mean pooling and Normalize
    "fusion": ("tiny_bert", {}, False),
    "pals": ("tiny_st_base", {}, False),
}


#: SPECTER's SciDocs numbers (Cohan et al. 2020, Table 1) for MAG, co-view and cite: (task, id, kind, metric, value).
SPECTER_ROWS = [
    ("MAG", "mag", "classification", "f1", 82.0),
    ("Co-View", "coview", "proximity", "map", 83.6),
    ("Co-View", "coview", "proximity", "ndcg", 91.5),
    ("Cite", "cite", "proximity", "map", 88.3),
    ("Cite", "cite", "proximity", "ndcg", 94.8),
]


def _evaluation_report(source: str = "/data/scidocs", rows=SPECTER_ROWS) -> dict:
    """A SciDocs report shaped as EvaluationReport.to_dict() writes it, read from ``source``."""
    results = [
        {
            "benchmark": "scidocs",
            "task": task,
            "task_id": task_id,
            "kind": kind,
            "group": None,
            "metric": metric,
            "value": value,
            "counts": {},
            "skipped": {},
        }
        for task, task_id, kind, metric, value in rows
    ]
    values = [row["value"] for row in results]
    return {
        "benchmark": "scidocs",
        "source": source,
        "model": "tiny",
        "sciembed_version": "0.1.0.dev0",
        "settings": {"split": "test", "pooling": "cls", "max_length": 64},
        "results": results,
        "averages": {f"average ({len(values)} metrics)": sum(values) / len(values)},
        "missing_tasks": ["mesh"],
        "skipped_records": {"count": 0, "first": []},
        "embedding": {},
        "tasks": [],
    }


def _training_run() -> dict:
    """A train_results.json dict of a short CPU run of the multi2spe recipe on a local base."""
    return {
        "recipe": "multi2spe",
        "paper": "Seoh, Chang & McCallum 2023, Multi2SPE",
        "base": "/models/tiny-bert",
        "data": {"source": "/data/cacm", "examples": 120, "skipped_records": 0, "queries": 24, "held_out_queries": 0},
        "settings": {
            "model": {"num_cls_tokens": 3},
            "embedding": {"pooling": None, "max_length": None},
            "data": {"held_out": 0.0, "seed": 0, "max_examples": 120, "sampler": "specter"},
            "loss": {"weight": 0.1, "mode": "paper"},
            "training": {
                "learning_rate": 2e-5,
                "lr_scheduler_type": "linear",
                "num_train_epochs": 2,
                "max_steps": 8,
                "per_device_train_batch_size": 8,
                "gradient_accumulation_steps": 4,
                "use_cpu": True,
                "report_to": "none",
            },
        },
        "train_metrics": {"train_loss": 0.6931, "train_runtime": 12.5},
        "eval_metrics": {},
        "global_step": 8,
        "seconds": 12.9,
        "model": "/runs/multi2spe/model",
    }


@pytest.fixture(scope="module", params=list(CASES))
def saved_model(request, tiny_bert, tiny_st_base, tmp_path_factory):
    """(case, folder) of a tiny saved model of each kind (see CASES and BUILDS)."""
    from transformers import AutoModel, AutoTokenizer

    kind, family, _, _ = CASES[request.param]
    base_name, options, normalize = BUILDS[request.param]
    base = {"tiny_bert": tiny_bert, "tiny_st_base": tiny_st_base}[base_name]
    folder = tmp_path_factory.mktemp(request.param)
    torch.manual_seed(0)
    if kind == "family":
        model, tokenizer = from_bert(family, base, **options)
        save_pretrained(model, tokenizer, folder, normalize=normalize)
    elif kind == "classifier":
        model, tokenizer = classifier_from_bert(
            "spectroid", base, head="CH2", num_labels=2, id2label={0: "cs", 1: "bio"}, label2id={"cs": 0, "bio": 1}
        )
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    elif kind == "plain":
        shutil.copytree(base, folder, dirs_exist_ok=True)
    else:
        from sciembed.formats import save_with_format_modules

        model, tokenizer = AutoModel.from_pretrained(base), AutoTokenizer.from_pretrained(base)
        base_names = set(model.state_dict())
        if kind in ("adapters", "fusion"):
            from sciembed.formats.adapters import add_format_adapters, add_format_fusion

            add_format_adapters(model)
            if kind == "fusion":
                add_format_fusion(model)
        elif kind == "pals":
            from sciembed.formats.pals import PALsConfig, add_pals

            add_pals(model, PALsConfig(hidden_size=8, num_attention_heads=2))
        with torch.no_grad():  # adapters start near the identity: random weights make every format's vectors differ
            for name, parameter in model.named_parameters():
                if name not in base_names:
                    parameter.normal_(0, 0.2)
        assert save_with_format_modules(model, folder)
        tokenizer.save_pretrained(folder)
        if base_name == "tiny_st_base":
            _add_mean_pooling_modules(folder)
    return request.param, folder


def _add_mean_pooling_modules(folder) -> None:
    """Sentence-transformers files over the base in ``folder``: mean pooling then Normalize at 48 tokens, as
    ``sciembed train`` writes them for a format model trained from all-MiniLM-L6-v2."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformer = Transformer(str(folder), max_seq_length=48)
    modules = [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode="mean"), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder), create_model_card=False)


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
    # The families' own embedding; SPECTROID's encoder is a BERT whose [CLS] state sciembed takes.
    assert ("pooler_output" in text) == (remote_code and case != "spectroid")


def test_library_name_follows_the_folder(saved_model):
    case, folder = saved_model
    meta = _front_matter(render_model_card(folder))
    # Families saved by sciembed carry sentence-transformers files that give their own embedding; MoE with
    # enforced routing needs a domain those files cannot pass; the rest are plain transformers folders.
    expected = (
        "sentence-transformers" if case in ("multi2spe", "control_code", "moe_token", "st_bert") else "transformers"
    )
    assert meta["library_name"] == expected


@pytest.fixture(scope="module")
def scidocs_release(tmp_path_factory):
    """A folder with SciDocs' whole release under its own file names (empty files: only the names matter here)."""
    from sciembed.data.scidocs import (
        CLASSIFICATION_SPLITS,
        CLASSIFICATION_TASKS,
        METADATA_FILES,
        PROXIMITY_TASKS,
        QREL_SPLITS,
    )

    folder = tmp_path_factory.mktemp("release") / "data"
    files = [names[0] for names in METADATA_FILES.values()]
    files += [f"{task}/{split}.qrel" for task in PROXIMITY_TASKS for split in QREL_SPLITS]
    files += [f"{task}/{split}.csv" for task in CLASSIFICATION_TASKS for split in CLASSIFICATION_SPLITS]
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    return folder


def test_model_index_equals_the_results_rows(saved_model, scidocs_release):
    _, folder = saved_model
    report = _evaluation_report(source=str(scidocs_release))
    card = render_model_card(folder, evaluations=[report], repo_id=REPO_ID)
    meta = _front_matter(card)
    name, results = model_index_to_eval_results(meta["model-index"])
    assert name == "tiny-model"
    got = {(r.dataset_type, r.dataset_config, r.dataset_split, r.metric_type): r.metric_value for r in results}
    assert got == {("scidocs", row["task_id"], "test", row["metric"]): row["value"] for row in report["results"]}
    assert {r.task_type for r in results} == {"classification", "proximity"}
    assert {r.dataset_name for r in results} == {
        "SciDocs MAG",
        "SciDocs Co-View",
        "SciDocs Cite",
    }  # SciDocs' own release
    for row in report["results"]:  # the results table shows every row, rounded as the papers print them
        assert f"| {row['task']} | {row['metric']} | {row['value']:.2f} |" in card.text
    assert "mesh" in card.text  # the task absent from the data is named


def test_a_card_shows_each_task_s_primary_metrics_and_points_to_the_rest(tiny_bert, scidocs_release):
    report = _evaluation_report(source=str(scidocs_release))
    extra = [("ndcg_cut_10", 90.1), ("P_5", 40.2), ("recall_10", 70.3), ("Rprec", 60.4)]
    primary = list(report["results"])
    report["results"] += [
        {**row, "metric": metric, "value": value}
        for row in primary
        if row["kind"] == "proximity" and row["metric"] == "map"
        for metric, value in extra
    ]
    report["tasks"] = [
        {
            "benchmark": "scidocs",
            "task": task,
            "task_id": task_id,
            "primary_metrics": ["f1"] if kind == "classification" else ["map", "ndcg"],
        }
        for task, task_id, kind in {(r["task"], r["task_id"], r["kind"]) for r in primary}
    ]
    card = render_model_card(tiny_bert, evaluations=[report], repo_id=REPO_ID)
    _, results = model_index_to_eval_results(_front_matter(card)["model-index"])
    assert sorted((r.dataset_config, r.metric_type) for r in results) == sorted(
        (r["task_id"], r["metric"]) for r in primary
    )
    table = [line for line in card.text.splitlines() if line.startswith("| ") and " | " in line[2:]]
    assert len(table) == 1 + len(primary) + 1  # the header, the primary rows and the average
    assert not any(f"| {metric} |" in card.text for metric, _ in extra)
    assert "every measure of every task (nDCG@k, P@k, recall@k, R-precision, ...)" in " ".join(card.text.split())


def test_datasets_are_named_by_what_they_are(tiny_bert, scidocs_release, tmp_path):
    """SciDocs' names only for SciDocs' own release (its Hub id or a folder with its whole file set); a user's papers
    read as SciDocs (its classification layout, say) are named by their folder, a Hub id or the name given, with the
    tasks by their ids."""
    own = tmp_path / "thesis-labels"
    for split in ("train", "val", "test"):  # one classification task in SciDocs' layout: the user's labels as "mesh"
        (own / "mesh").mkdir(parents=True, exist_ok=True)
        (own / "mesh" / f"{split}.csv").write_text("pid,class_label\n")
    (own / "paper_metadata_mag_mesh.json").write_text("{}")
    mesh = [("MeSH", "mesh", "classification", "f1", 71.0)]

    def named(source, names=()):
        card = render_model_card(
            tiny_bert, evaluations=[_evaluation_report(source=source, rows=mesh)], dataset_names=names
        )
        (result,) = model_index_to_eval_results(_front_matter(card)["model-index"])[1]
        return (
            result.dataset_type,
            result.dataset_name,
            result.dataset_config,
            result.task_name,
            result.metric_name,
        ), card.text

    (identity, text) = named(str(own))
    assert identity == ("thesis-labels", "thesis-labels mesh", "mesh", "mesh", "mesh f1")
    assert "SciDocs MeSH" not in text and "| mesh | f1 | 71.00 |" in text
    assert "thesis-labels (a local folder, read as SciDocs, split `test`" in text
    assert named(str(tmp_path / "gone" / "labels"))[0][:2] == ("labels", "labels mesh")  # no longer here: its name
    assert named(str(scidocs_release))[0] == ("scidocs", "SciDocs MeSH", "mesh", "MeSH", "MeSH f1")
    assert named("allenai/scidocs")[0] == ("allenai/scidocs", "SciDocs MeSH", "mesh", "MeSH", "MeSH f1")
    assert named("someone/labels")[0] == ("someone/labels", "someone/labels mesh", "mesh", "mesh", "mesh f1")
    assert named(str(own), ["Thesis abstracts"])[0][:2] == ("Thesis abstracts", "Thesis abstracts mesh")
    assert named("someone/labels", ["Thesis abstracts"])[0][:2] == ("someone/labels", "Thesis abstracts mesh")
    with pytest.raises(ValueError, match="2 dataset name\\(s\\) for 1 evaluation report"):
        named(str(own), ["a", "b"])


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

    hub = render_model_card(
        folder,
        training={
            **_training_run(),
            "base": "allenai/scibert_scivocab_uncased",
            "data": {"source": "allenai/scirepeval", "examples": 10},
        },
    )
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
        "moe_token": ["copied into 2 experts", "learned** (token-level)"],
        "spectroid": ["CH2 (hidden layers 64)", "cross-entropy", "Labels:\ncs, bio"],
        "bert": ["triplet margin loss", "margin of 1", "hidden state of the `[CLS]` token"],
        "st_bert": ["mean-pooled, L2-normalised embedding", "pooling and L2 normalisation"],
        "adapters": [
            "bottleneck adapter",
            "classification, regression, proximity, adhoc_query",
            "load_adapter",
            "the mean of the final token states (padding excluded), L2-normalised, with that adapter active",
        ],
        "fusion": ["AdapterFusion layer", "load_adapter_fusion", "fusion_<format>/"],
        "pals": ["projected attention", "`pals/`", "without** its PALs"],
    }[case]
    for phrase in expected:
        assert phrase in text, phrase


#: The papers the usage code embeds in place of the card's example: one longer than every model's limit (truncation),
#: short ones (padding), one without an abstract and one without a title (the text is then the other alone).
USAGE_PAPERS = [
    {"paper_id": "long", "title": "Graph neural network learning", "abstract": " ".join(WORDS * 3)},
    *PAPERS,
]
USAGE_QUERIES = ["language representation models"]
# The sections whose Python blocks run without sciembed, and the one that needs it.
WITHOUT_SCIEMBED, WITH_SCIEMBED = ("transformers", "sentence-transformers"), ("sciembed",)
#: The card's variables that hold vectors, and how sciembed.encode gives them (texts, task format).
USAGE_OUTPUTS = {
    "embeddings": (USAGE_PAPERS, None),
    "for_classification": (USAGE_PAPERS, "classification"),
    "queries": (USAGE_QUERIES, "adhoc_query"),
}

# Runs the blocks of one card in one fresh process, each in a namespace of its own, the Hub id standing for the
# exported folder (snapshot_download returns it, offline): first the blocks meant for a user without sciembed, with
# sciembed unimportable, then the sciembed blocks with it importable again. Saves every block's vectors.
USAGE_RUNNER = """
import json, sys
from pathlib import Path
import numpy as np
import huggingface_hub
job = json.loads(Path(sys.argv[1]).read_text())
huggingface_hub.snapshot_download = lambda repo_id, **_: job["folder"]
vectors = {}
for index, (section, code) in enumerate(job["blocks"]):
    if section in job["with_sciembed"]:
        sys.modules.pop("sciembed", None)
    else:
        sys.modules["sciembed"] = None  # the card's user has no sciembed
    namespace = {"__name__": "__main__"}
    exec(compile(code, f"<{section} block>", "exec"), namespace)
    for name in job["outputs"]:
        if name in namespace:
            value = namespace[name]
            value = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
            vectors[f"{index}|{section}|{name}"] = value.astype(np.float32)
np.savez(job["vectors"], **vectors)
"""


@pytest.fixture(scope="module")
def exported_card(saved_model, tmp_path_factory):
    """(case, exported folder, {section: [Python blocks]}) of the card ``sciembed export`` writes for each case."""
    from sciembed.hub.export import export_model

    case, folder = saved_model
    out = tmp_path_factory.mktemp(f"{case}-export") / "hub"
    export_model(folder, out, repo_id=REPO_ID, validate=False)
    return case, out, _card_blocks(out)


def _usage_job(blocks, folder, workdir, sections) -> Path:
    """The runner's job: the blocks of ``sections``, the Hub id replaced by the folder, the example papers by
    USAGE_PAPERS."""
    runnable = []
    for section in sections:
        for code in blocks.get(section, ()):
            code, papers = re.subn(r"^papers = \[.*\]$", f"papers = {USAGE_PAPERS!r}", code, flags=re.M)
            assert papers == 1, f"{section}: the block should define papers once:\n{code}"
            runnable.append((section, code.replace(f'"{REPO_ID}"', repr(str(folder)))))
    workdir.mkdir(parents=True, exist_ok=True)
    job = workdir / "job.json"
    job.write_text(
        json.dumps(
            {
                "folder": str(folder),
                "blocks": runnable,
                "with_sciembed": list(WITH_SCIEMBED),
                "outputs": list(USAGE_OUTPUTS),
                "vectors": str(workdir / "vectors.npz"),
            }
        )
    )
    return job


def _expected_vectors(folder, case) -> dict:
    """``sciembed.encode``'s vectors of the card's outputs for ``folder``, by default (a domain for enforced
    routing)."""
    import sciembed

    domain = {"domain": "cs"} if case == "moe_bert" else {}
    formats = inspect_model_folder(folder).formats
    return {
        name: sciembed.encode(folder, texts, task_format=task_format, device="cpu", show_progress_bar=False, **domain)
        for name, (texts, task_format) in USAGE_OUTPUTS.items()
        if task_format is None or task_format in formats
    }


def _compare(vectors, expected, case) -> float:
    """The largest difference of any block's vectors to sciembed.encode's (each within 1e-5); prints it per block."""
    import numpy as np

    largest = 0.0
    for key, got in vectors.items():
        name = key.rsplit("|", 1)[1]
        np.testing.assert_allclose(got, expected[name], atol=1e-5, rtol=0, err_msg=f"{case}: {key}")
        difference = float(np.abs(got - expected[name]).max())
        print(f"usage {case} {key}: max abs difference {difference:.2e}")
        largest = max(largest, difference)
    return largest


#: The sections with Python code per case: transformers alone cannot attach format adapters or PALs (their cards say
#: so and show no transformers code), the adapters library can attach adapters, and the format routes sciembed export
#: writes for multi-format models load them in sentence-transformers.
USAGE_SECTIONS = {
    "multi2spe": {"transformers", "sentence-transformers", "sciembed"},
    "control_code": {"transformers", "sentence-transformers", "sciembed"},
    "moe_bert": {"transformers", "sciembed"},
    "moe_token": {"transformers", "sentence-transformers", "sciembed"},
    "spectroid": {"transformers", "sciembed"},
    "bert": {"transformers", "sciembed"},
    "st_bert": {"transformers", "sentence-transformers", "sciembed"},
    "adapters": {"adapters", "sentence-transformers", "sciembed"},
    "fusion": {"adapters", "sentence-transformers", "sciembed"},
    "pals": {"sentence-transformers", "sciembed"},
}


def _card_blocks(folder):
    """{section: [Python blocks]} of the usage section of the card in ``folder``."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    usage = text[text.index("## Usage") : text.index("## Model\n")]
    blocks = {}
    for section in re.split(r"^### ", usage, flags=re.M)[1:]:
        name, body = section.split("\n", 1)
        blocks[name.strip()] = re.findall(r"```python\n(.*?)```", body, re.S)
    return blocks


def _run_usage_code(blocks, folder, workdir) -> dict:
    """The vectors of every transformers, sentence-transformers and sciembed block, from one fresh process."""
    import os
    import subprocess
    import sys

    import numpy as np

    job = _usage_job(blocks, folder, workdir, WITHOUT_SCIEMBED + WITH_SCIEMBED)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(workdir / "modules")}
    done = subprocess.run(
        [sys.executable, "-c", USAGE_RUNNER, str(job)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(np.load(workdir / "vectors.npz"))


def test_usage_code_gives_the_models_vectors(exported_card, tmp_path):
    """Every Python block of the exported card, run in a fresh process (transformers and sentence-transformers with
    sciembed unimportable), gives sciembed.encode's vectors of the folder to 1e-5: same pooling, normalisation,
    length, format and domain. (The adapters library's block runs in the transformers 4.57.6 side venv, below.)"""
    case, folder, blocks = exported_card
    assert {name for name, code in blocks.items() if code} == USAGE_SECTIONS[case]
    assert all(len(code) == 1 for code in blocks.values() if code)
    vectors = _run_usage_code(blocks, folder, tmp_path)
    expected = _expected_vectors(folder, case)
    ran = {key.split("|")[1] for key in vectors}
    assert ran == USAGE_SECTIONS[case] - {"adapters"}
    # Each block gives the default embedding; the sciembed block gives the other formats too.
    assert {key.split("|", 1)[1] for key in vectors} >= {f"{section}|embeddings" for section in ran}
    assert {key.rsplit("|", 1)[1] for key in vectors if key.split("|")[1] == "sciembed"} == set(expected)
    _compare(vectors, expected, case)


@pytest.mark.slow
def test_usage_code_of_the_embedded_minilm_gives_its_vectors(tmp_path):
    """The card of the embedded all-MiniLM-L6-v2 (mean pooling, Normalize, 256 tokens): its transformers,
    sentence-transformers and sciembed code give sciembed.encode's vectors, not the [CLS] state."""
    import sciembed
    from sciembed.hub.export import export_model

    folder = tmp_path / "minilm"
    export_model(sciembed.default_model_path(), folder, repo_id=REPO_ID, validate=False)
    blocks = _card_blocks(folder)
    assert {name for name, code in blocks.items() if code} == {"transformers", "sentence-transformers", "sciembed"}
    assert "last_hidden_state[:, 0]" not in blocks["transformers"][0] and "max_length=256" in blocks["transformers"][0]
    _compare(_run_usage_code(blocks, folder, tmp_path / "run"), _expected_vectors(folder, "minilm"), "minilm")


@pytest.mark.parametrize("saved_model", ["adapters", "fusion"], indirect=True)
def test_adapters_library_usage_code_gives_the_models_vectors(exported_card, tmp_path):
    """The adapters library's block of a format-adapter card (alone and with AdapterFusion), run in the transformers
    4.57.6 side venv (adapters 1.3.0, no sciembed), gives sciembed.encode's vectors to 1e-5."""
    import numpy as np
    from helpers import run_side_python, side_python

    side_python()
    case, folder, blocks = exported_card
    job = _usage_job(blocks, folder, tmp_path, ("adapters",))
    run_side_python(USAGE_RUNNER.replace("sys.argv[1]", repr(str(job))), tmp_path)
    vectors = dict(np.load(tmp_path / "vectors.npz"))
    assert set(vectors) == {"0|adapters|embeddings"}
    _compare(vectors, _expected_vectors(folder, case), case)


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
    assert (
        "Left out of the metadata (not a finite number): mag f1" in card.text
    )  # a folder named scidocs, not the release


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
    assert all(entry.rstrip().endswith("}") for entry in entries.values())
    # Every key a card can cite is in the file, and every entry of the file is cited by something.
    from sciembed.hub import cards

    cited = {
        key
        for table in (
            cards._FAMILY_CITATIONS,
            cards._METHOD_CITATIONS,
            cards._RECIPE_CITATIONS,
            cards._BENCHMARK_CITATIONS,
        )
        for keys in table.values()
        for key in keys
    }
    assert cited == set(entries)
