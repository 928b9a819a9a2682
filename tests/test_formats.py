"""Format adapters and AdapterFusion (sciembed.formats.adapters, in AdapterHub's files): activation, training
stages, encode, save and reload, the files themselves and what is refused. The comparison with the adapters
library itself is in test_adapters_reference.py."""

from __future__ import annotations

import ast
import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import PAPERS

import sciembed
from sciembed.formats import FORMATS, activate_format, format_parameter_counts, model_formats, save_with_format_modules
from sciembed.formats.adapters import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_SAFE_WEIGHTS_FILE,
    ADAPTER_WEIGHTS_FILE,
    FUSION_CONFIG_FILE,
    FUSION_WEIGHTS_FILE,
    BottleneckConfig,
    Fuse,
    FusionConfig,
    activate_adapter_format,
    active_adapter_setup,
    adapter_formats,
    add_format_adapters,
    add_format_fusion,
    base_state_dict,
    fusion_of,
    fusion_regularization_loss,
    has_format_adapters,
    has_fusion,
    load_format_adapters,
    save_format_adapters,
    train_format_adapters,
    train_format_fusion,
)

ROOT = Path(__file__).resolve().parents[1]


def perturbed_adapters(tiny_bert, config="seq_bn", fusion=False):
    """A tiny BERT with four format adapters (and fusions) whose weights are random (adapters start near the
    identity, fusions attend evenly)."""
    from transformers import AutoModel

    model = add_format_adapters(AutoModel.from_pretrained(tiny_bert), config=config)
    if fusion:
        add_format_fusion(model)
    randomize(model)
    return model.eval()


def randomize(model, seed=1, markers=(".adapters.", ".adapter_fusion_layer.")):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if any(marker in name for marker in markers):
                parameter.normal_(0, 0.2)


def cls_vectors(model, tokenizer, task_format=None):
    return sciembed.encode(
        model, PAPERS, tokenizer=tokenizer, task_format=task_format, device="cpu", show_progress_bar=False
    )


def test_each_format_has_its_own_adapter_and_embedding(tiny_bert):
    from transformers import AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    assert adapter_formats(model) == model_formats(model) == FORMATS
    vectors = {
        f: sciembed.encode(model, PAPERS, tokenizer=tokenizer, task_format=f, device="cpu", show_progress_bar=False)
        for f in FORMATS
    }
    for a in FORMATS:
        for b in FORMATS:
            assert (a == b) == np.allclose(vectors[a], vectors[b])
    # No format asked for: proximity, SPECTER2's general-purpose embedding.
    np.testing.assert_array_equal(
        sciembed.encode(model, PAPERS, tokenizer=tokenizer, device="cpu", show_progress_bar=False),
        vectors["proximity"],
    )
    with pytest.raises(
        ValueError, match="no task format 'summary'; its formats: classification, regression, proximity, adhoc_query"
    ):
        activate_format(model, "summary")
    with pytest.raises(ValueError, match="unknown format"):
        add_format_adapters(model, ["summary"])


def test_adapters_train_with_the_base_frozen_then_fusion_with_the_adapters_frozen(tiny_bert):
    model = perturbed_adapters(tiny_bert)
    train_format_adapters(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".adapters." in n for n in trainable)
    assert {n.split(".adapters.")[1].split(".")[0] for n in trainable} == set(FORMATS)

    with pytest.raises(ValueError, match="add the fusion layers first"):
        train_format_fusion(model)
    add_format_fusion(model)
    assert all(has_fusion(model, f) for f in FORMATS)
    train_format_fusion(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".adapter_fusion_layer." in n for n in trainable)
    assert len({n.split(".adapter_fusion_layer.")[1].split(".")[0] for n in trainable}) == len(
        FORMATS
    )  # every format's fusion
    activate_format(model, "regression")
    assert active_adapter_setup(model) == Fuse("regression", "classification", "proximity", "adhoc_query")
    assert repr(active_adapter_setup(model)) == "Fuse[regression, classification, proximity, adhoc_query]"
    activate_format(model, None)  # the proximity default
    assert active_adapter_setup(model) == fusion_of("proximity", FORMATS)
    with pytest.raises(ValueError, match="already has the AdapterFusion"):
        add_format_fusion(model)


def test_saved_adapters_and_fusions_reload_with_the_same_vectors_next_to_a_clean_base(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    alone = {f: cls_vectors(model, tokenizer, f) for f in FORMATS}
    add_format_fusion(model)
    randomize(model, seed=2, markers=[".adapter_fusion_layer."])
    fused = {f: cls_vectors(model, tokenizer, f) for f in FORMATS}
    folder = tmp_path / "multi-format"
    assert save_with_format_modules(model, folder)
    tokenizer.save_pretrained(folder)
    assert {p.name for p in folder.iterdir() if p.is_dir()} == {*FORMATS, *(f"fusion_{f}" for f in FORMATS)}

    encoder = sciembed.PaperEncoder.from_pretrained(folder, device="cpu")
    assert encoder.task_formats == FORMATS
    for task_format in FORMATS:
        np.testing.assert_allclose(
            encoder.with_format(task_format).encode(PAPERS, show_progress_bar=False), fused[task_format], atol=1e-6
        )
        assert not np.allclose(fused[task_format], alone[task_format])

    base, info = AutoModel.from_pretrained(folder, output_loading_info=True)  # a clean base
    assert not info["unexpected_keys"] and not info["missing_keys"]
    torch.testing.assert_close(base.state_dict(), base_state_dict(model))
    # Without the fusion folders, each format is its adapter alone.
    adapters_only = tmp_path / "adapters-only"
    shutil.copytree(folder, adapters_only, ignore=shutil.ignore_patterns("fusion_*"))
    assert load_format_adapters(base, adapters_only) == FORMATS and not any(has_fusion(base, f) for f in FORMATS)
    for task_format in FORMATS:
        np.testing.assert_allclose(cls_vectors(base, tokenizer, task_format), alone[task_format], atol=1e-6)
    with pytest.raises(ValueError, match="with fusions for classification, .*; BertModel .* fusions for none"):
        load_format_adapters(base, folder)


def test_a_model_with_format_adapters_takes_back_the_weights_it_saved(tiny_bert, tmp_path):
    """Into a model like the one that saved them, the saved adapters and fusions are copied (what is frozen stays
    frozen); a folder with other formats, fusions or configs is refused before anything is copied."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    saved = perturbed_adapters(tiny_bert, fusion=True)
    save_format_adapters(saved, tmp_path / "fused")
    save_format_adapters(perturbed_adapters(tiny_bert), tmp_path / "adapters-only")
    model = perturbed_adapters(tiny_bert, fusion=True)
    randomize(model, seed=3)
    train_format_fusion(model)
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(ValueError, match="with fusions for none; BertModel .* with fusions for classification, reg"):
        load_format_adapters(model, tmp_path / "adapters-only")
    torch.testing.assert_close(model.state_dict(), before)  # nothing copied

    assert load_format_adapters(model, tmp_path / "fused") == FORMATS
    torch.testing.assert_close(model.state_dict(), saved.state_dict())
    assert all(p.requires_grad == (".adapter_fusion_layer." in n) for n, p in model.named_parameters())
    for task_format in FORMATS:
        np.testing.assert_allclose(
            cls_vectors(model, tokenizer, task_format), cls_vectors(saved, tokenizer, task_format), atol=1e-6
        )
    other = perturbed_adapters(tiny_bert, config={"reduction_factor": 8}, fusion=True)
    with pytest.raises(ValueError, match="or other configs"):
        load_format_adapters(other, tmp_path / "fused")


def test_the_files_are_adapterhubs(tiny_bert, tmp_path):
    """The names, JSON and weight keys of AdapterHub (adapters 1.3.0's save_adapter / save_adapter_fusion)."""
    model = perturbed_adapters(tiny_bert, fusion=True)
    save_format_adapters(model, tmp_path)
    assert sorted(p.name for p in (tmp_path / "proximity").iterdir()) == [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]
    assert sorted(p.name for p in (tmp_path / "fusion_proximity").iterdir()) == [
        FUSION_CONFIG_FILE,
        FUSION_WEIGHTS_FILE,
    ]
    config = json.loads((tmp_path / "proximity" / ADAPTER_CONFIG_FILE).read_text())
    assert config.keys() == {"config", "hidden_size", "model_class", "model_name", "model_type", "name", "version"}
    assert (config["name"], config["hidden_size"], config["model_class"], config["model_type"]) == (
        "proximity",
        32,
        "BertModel",
        "bert",
    )
    assert config["version"] == "adapters.1.3.0"
    assert config["config"] == BottleneckConfig().to_dict() and len(config["config"]) == 33  # every SeqBnConfig field
    assert (config["config"]["reduction_factor"], config["config"]["non_linearity"]) == (16, "relu")
    weights = torch.load(tmp_path / "proximity" / ADAPTER_WEIGHTS_FILE, weights_only=True)
    assert {k: tuple(v.shape) for k, v in weights.items() if k.startswith("encoder.layer.0.")} == {
        "encoder.layer.0.output.adapters.proximity.adapter_down.0.weight": (2, 32),  # 32 // 16
        "encoder.layer.0.output.adapters.proximity.adapter_down.0.bias": (2,),
        "encoder.layer.0.output.adapters.proximity.adapter_up.weight": (32, 2),
        "encoder.layer.0.output.adapters.proximity.adapter_up.bias": (32,),
    }
    fusion = json.loads((tmp_path / "fusion_proximity" / FUSION_CONFIG_FILE).read_text())
    assert fusion["adapter_names"] == ["proximity", "classification", "regression", "adhoc_query"]
    assert (
        fusion["name"] == "proximity,classification,regression,adhoc_query"
        and fusion["config"] == FusionConfig().to_dict()
    )
    assert fusion["config"] == {
        "dropout_prob": None,
        "key": True,
        "query": True,
        "query_before_ln": False,
        "regularization": True,
        "residual_before": False,
        "temperature": False,
        "value": True,
        "value_before_softmax": True,
        "value_initialized": True,
    }
    weights = torch.load(tmp_path / "fusion_proximity" / FUSION_WEIGHTS_FILE, weights_only=True)
    prefix = "encoder.layer.1.output.adapter_fusion_layer.proximity,classification,regression,adhoc_query."
    assert {k[len(prefix) :] for k in weights if k.startswith(prefix)} == {
        "query.weight",
        "query.bias",
        "key.weight",
        "key.bias",
        "value.weight",
    }
    # A fresh fusion's value matrix starts at the identity (1e-6 off the diagonal), as adapters initialises it.
    fresh = add_format_fusion(add_format_adapters(type(model)(model.config)))
    value = fresh.encoder.layer[0].output.adapter_fusion_layer[fusion["name"]].value.weight
    torch.testing.assert_close(value, torch.full((32, 32), 1e-6).fill_diagonal_(1.0))


def test_a_model_with_a_head_saves_its_keys_under_the_base_prefix(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer, BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(tiny_bert, num_labels=2)
    add_format_adapters(model, ["proximity", "classification"])
    randomize(model)
    save_format_adapters(model, tmp_path)
    assert all(
        k.startswith("bert.encoder.layer.")
        for k in torch.load(tmp_path / "proximity" / ADAPTER_WEIGHTS_FILE, weights_only=True)
    )
    # ... and they load into a plain encoder (the keys are read relative to the base model).
    plain = AutoModel.from_pretrained(tiny_bert)
    assert load_format_adapters(plain, tmp_path) == ("classification", "proximity")
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    np.testing.assert_allclose(
        cls_vectors(plain, tokenizer, "proximity"), cls_vectors(model.bert, tokenizer, "proximity"), atol=1e-6
    )


def test_options_per_layer_and_a_deep_copy(tiny_bert, tmp_path):
    """A per-layer reduction factor with a default, leave_out, ln_before, scaling and another activation build the
    layers adapters builds, and survive saving; a deep copy switches formats on its own."""
    from transformers import AutoModel, AutoTokenizer

    config = BottleneckConfig(
        reduction_factor={"0": 4, "default": 8}, non_linearity="gelu", scaling=0.5, ln_before=True, leave_out=[1]
    )
    model = perturbed_adapters(tiny_bert, config=config, fusion=True)
    layers = model.encoder.layer
    assert layers[0].output.adapters["proximity"].adapter_down[1].weight.shape == (8, 32)  # 32 // 4
    assert "proximity" not in layers[1].output.adapters  # left out
    save_format_adapters(model, tmp_path)
    keys = set(torch.load(tmp_path / "regression" / ADAPTER_WEIGHTS_FILE, weights_only=True))
    assert (
        "encoder.layer.0.output.adapters.regression.adapter_norm_before.weight" in keys
    )  # both names, as adapters saves them
    assert "encoder.layer.0.output.adapters.regression.adapter_down.0.weight" in keys and not any(
        ".layer.1." in k for k in keys
    )
    saved = json.loads((tmp_path / "regression" / ADAPTER_CONFIG_FILE).read_text())["config"]
    assert (saved["reduction_factor"], saved["leave_out"], saved["ln_before"], saved["scaling"]) == (
        {"0": 4, "default": 8},
        [1],
        True,
        0.5,
    )
    assert BottleneckConfig.from_dict(saved) == config

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    twin = copy.deepcopy(model)
    activate_format(twin, "classification")
    activate_format(model, "regression")
    assert active_adapter_setup(model) == fusion_of("regression", FORMATS)
    assert active_adapter_setup(twin) == fusion_of("classification", FORMATS)
    reloaded = AutoModel.from_pretrained(tiny_bert)
    load_format_adapters(reloaded, tmp_path)
    for task_format in ("classification", "regression"):
        np.testing.assert_allclose(
            cls_vectors(reloaded, tokenizer, task_format), cls_vectors(model, tokenizer, task_format), atol=1e-6
        )
        np.testing.assert_allclose(
            cls_vectors(twin, tokenizer, task_format), cls_vectors(model, tokenizer, task_format), atol=1e-6
        )
    with torch.no_grad():
        twin.encoder.layer[0].output.adapters["classification"].adapter_up.bias.add_(1.0)
    assert not np.allclose(
        cls_vectors(twin, tokenizer, "classification"), cls_vectors(model, tokenizer, "classification")
    )


@pytest.mark.parametrize("family, options", [("multi2spe", {}), ("moe_bert", {"routing": "sentence"})])
def test_sciembeds_families_take_format_adapters(tiny_bert, family, options):
    """Their layers end in output.LayerNorm(f(x) + input_tensor) as BERT's do: with no adapter active the
    family gives its own embedding, and each format's adapter changes it."""
    from sciembed.families import from_bert

    model, tokenizer = from_bert(family, tiny_bert, **options)
    inputs = tokenizer(
        [sciembed.paper_text(p, tokenizer.sep_token) for p in PAPERS], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        before = model.eval()(**inputs).pooler_output
    add_format_adapters(model, ["proximity", "classification"])
    randomize(model)
    assert model_formats(model) == ("classification", "proximity")
    vectors = {f: cls_vectors(model, tokenizer, f) for f in ("proximity", "classification")}
    assert not np.allclose(vectors["proximity"], vectors["classification"]) and not np.allclose(
        vectors["proximity"], before.numpy()
    )
    activate_adapter_format(model, None)
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).pooler_output, before)


def test_adapter_and_fusion_sizes_for_a_bert_base_shaped_model():
    """SciRepEval Table 5: adapters ~1M and fusion ~22M parameters per format for BERT-base (PALs' count
    is checked in test_pals.py, control codes below)."""
    from transformers import BertConfig, BertModel

    model = add_format_adapters(BertModel(BertConfig()))
    add_format_fusion(model)
    counts = format_parameter_counts(model)
    assert counts.keys() == set(FORMATS) and len({tuple(c.values()) for c in counts.values()}) == 1
    adapter, fusion = counts["proximity"]["adapter"], counts["proximity"]["fusion"]
    # seq_bn: reduction factor 16 (768 -> 48 -> 768) after the feed-forward block of each of 12 layers.
    assert adapter == 12 * (768 * 48 + 48 + 48 * 768 + 768) == 894_528
    # Fusion: query and key (768 x 768 + bias) and value (768 x 768, no bias) per layer.
    assert fusion == 12 * (2 * (768 * 768 + 768) + 768 * 768) == 21_252_096


def test_saved_pals_reload_through_sciembed_with_the_same_vectors(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from sciembed.formats.pals import PALsConfig, add_pals

    model = AutoModel.from_pretrained(tiny_bert).eval()
    add_pals(model, PALsConfig(hidden_size=12, num_attention_heads=4))
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    folder = tmp_path / "pals-model"
    assert save_with_format_modules(model, folder)
    tokenizer.save_pretrained(folder)
    encoder = sciembed.PaperEncoder.from_pretrained(folder, device="cpu")
    assert encoder.task_formats == FORMATS
    vectors = {}
    for task_format in FORMATS:
        vectors[task_format] = encoder.with_format(task_format).encode(PAPERS, show_progress_bar=False)
        expected = sciembed.encode(
            model, PAPERS, tokenizer=tokenizer, task_format=task_format, device="cpu", show_progress_bar=False
        )
        np.testing.assert_allclose(vectors[task_format], expected, atol=1e-6)
    assert not np.allclose(vectors["proximity"], vectors["adhoc_query"])
    assert not save_with_format_modules(
        AutoModel.from_pretrained(tiny_bert), tmp_path / "plain"
    )  # nothing to save that way


def test_ensemble_averages_per_format_and_loads_from_a_folder(tiny_bert, tmp_path):
    """SciRepEval's ensemble: the mean of a format-adapter and a control-code embedding of one format."""
    from transformers import AutoTokenizer

    from sciembed.encoders.ensemble import EnsembleEncoder, save_ensemble
    from sciembed.families import from_bert, save_pretrained

    adapters_model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    save_with_format_modules(adapters_model, tmp_path / "adapters")
    tokenizer.save_pretrained(tmp_path / "adapters")
    control, control_tokenizer = from_bert("control_code", tiny_bert)
    save_pretrained(control, control_tokenizer, tmp_path / "control")
    members = [
        sciembed.PaperEncoder.from_pretrained(tmp_path / name, device="cpu") for name in ("adapters", "control")
    ]

    ensemble = EnsembleEncoder(members)
    assert ensemble.task_formats == FORMATS
    for task_format in ("classification", "adhoc_query"):
        expected = np.mean(
            [m.with_format(task_format).encode(PAPERS, show_progress_bar=False) for m in members], axis=0
        )
        np.testing.assert_allclose(
            sciembed.encode(ensemble.with_format(task_format), PAPERS, show_progress_bar=False), expected, atol=1e-6
        )
    assert ensemble.with_format("proximity").fingerprint() != ensemble.with_format("regression").fingerprint()

    save_ensemble(tmp_path / "ensemble", [tmp_path / "adapters", tmp_path / "control"])
    loaded = sciembed.Encoder.from_pretrained(tmp_path / "ensemble", device="cpu", task_format="regression")
    assert isinstance(loaded, EnsembleEncoder)
    np.testing.assert_allclose(
        loaded.encode(PAPERS, show_progress_bar=False),
        ensemble.with_format("regression").encode(PAPERS, show_progress_bar=False),
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="at least two encoders"):
        EnsembleEncoder(members[:1])
    # One interface for both kinds, with nothing of PaperEncoder's single model inherited.
    assert isinstance(loaded, sciembed.Encoder) and not isinstance(loaded, sciembed.PaperEncoder)
    assert loaded.encode_query(["graph search"], show_progress_bar=False).shape == (1, 32)
    with pytest.raises(TypeError, match="abstract"):
        sciembed.Encoder()


def test_a_control_code_adds_one_embedding_row_per_format(tiny_bert):
    from sciembed.families import from_bert

    model, _ = from_bert("control_code", tiny_bert)
    assert format_parameter_counts(model) == {
        f: {"control_code": 32} for f in model_formats(model)
    }  # hidden size 32 (768 in BERT-base)


def test_evaluate_embeds_each_task_in_its_format(tiny_bert, monkeypatch):
    """sciembed evaluate with a format-adapter model: categories in classification, search queries in
    adhoc_query and their candidates in proximity."""
    from helpers import shared_data
    from transformers import AutoTokenizer

    from sciembed.evaluation import Reading, evaluate

    data = shared_data("cacm")
    encoder = sciembed.PaperEncoder(
        perturbed_adapters(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert), device="cpu"
    )
    seen = []
    original = sciembed.PaperEncoder.encode

    def recording(self, papers, **kwargs):
        seen.append((self.forward_options.get("task_format"), len(papers)))
        return original(self, papers, **kwargs)

    monkeypatch.setattr(sciembed.PaperEncoder, "encode", recording)
    report = evaluate(
        encoder,
        "cacm",
        data,
        use_cache=False,
        show_progress_bar=False,
        reading=Reading(tasks=["categories", "search"], skip_invalid=True),
    )
    assert {r.task for r in report.results} == {"categories", "search"}
    assert {fmt for fmt, _ in seen} == {"proximity", "classification", "adhoc_query"}
    assert dict(seen)["adhoc_query"] == 52  # only the judged search queries take the query format


def test_search_queries_and_candidates_take_their_own_formats(tiny_bert, tiny_encoder):
    from transformers import AutoTokenizer

    encoder = sciembed.PaperEncoder(
        perturbed_adapters(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert), device="cpu"
    )
    queries = ["garbage collection", "matrix algorithm"]
    np.testing.assert_array_equal(
        encoder.encode_query(queries, show_progress_bar=False),
        encoder.with_format("adhoc_query").encode(queries, show_progress_bar=False),
    )
    np.testing.assert_array_equal(
        encoder.encode_document(PAPERS, show_progress_bar=False),
        encoder.with_format("proximity").encode(PAPERS, show_progress_bar=False),
    )
    assert not np.allclose(
        encoder.encode_query(queries, show_progress_bar=False),
        encoder.encode_document(queries, show_progress_bar=False),
    )
    # A single-format model embeds both alike.
    np.testing.assert_array_equal(
        tiny_encoder.encode_query(queries, show_progress_bar=False),
        tiny_encoder.encode(queries, show_progress_bar=False),
    )


def test_a_local_specter2_layout_loads(tiny_bert, tmp_path):
    """SPECTER2 ships a base (allenai/specter2_base) and one adapter repository per format; a local copy
    (base files, adapter repositories as sub-folders) loads through sciembed, each repository as its format."""
    from transformers import AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    saved = save_format_adapters(model, tmp_path / "saved")
    root = tmp_path / "specter2"
    shutil.copytree(tiny_bert, root)
    for task_format, repository in (
        ("proximity", "specter2"),
        ("adhoc_query", "specter2_adhoc_query"),
        ("classification", "specter2_classification"),
        ("regression", "specter2_regression"),
    ):
        shutil.copytree(saved / task_format, root / repository)
    assert has_format_adapters(root)
    encoder = sciembed.PaperEncoder.from_pretrained(root, device="cpu")
    assert encoder.task_formats == FORMATS
    for task_format in FORMATS:
        np.testing.assert_allclose(
            encoder.with_format(task_format).encode(PAPERS, show_progress_bar=False),
            cls_vectors(model, tokenizer, task_format),
            atol=1e-6,
        )

    shutil.copytree(saved / "proximity", root / "proximity")
    with pytest.raises(ValueError, match="both proximity/ and specter2/ hold a proximity adapter"):
        sciembed.PaperEncoder.from_pretrained(root, device="cpu")


def _legacy_copy(source: Path, target: Path, *, name: str, prefix: str, legacy: bool, safetensors: bool) -> Path:
    """``source`` (an adapter folder sciembed saved) rewritten as older or other writers wrote it: another file
    name for the adapter, keys under a model-with-head prefix, adapter-transformers' module names and no version."""
    header = json.loads((source / ADAPTER_CONFIG_FILE).read_text())
    old_name = header["name"]
    header["name"] = name
    if legacy:
        del header["version"]
        header["config"]["non_linearity"] = {"gelu": "gelu_orig", "gelu_new": "gelu"}.get(
            header["config"]["non_linearity"], header["config"]["non_linearity"]
        )
    weights = {}
    for key, value in torch.load(source / ADAPTER_WEIGHTS_FILE, weights_only=True).items():
        key = prefix + key.replace(
            f".adapters.{old_name}.", f".{'layer_text_task_adapters' if legacy else 'adapters'}.{name}."
        )
        weights[key] = value
    target.mkdir(parents=True)
    (target / ADAPTER_CONFIG_FILE).write_text(json.dumps(header))
    if safetensors:
        from safetensors.torch import save_file

        save_file(weights, str(target / ADAPTER_SAFE_WEIGHTS_FILE))
    else:
        torch.save(weights, target / ADAPTER_WEIGHTS_FILE)
    return target


@pytest.mark.parametrize("legacy, safetensors", [(False, True), (True, False)])
def test_files_from_other_writers_load_under_the_format_name(tiny_bert, tmp_path, legacy, safetensors):
    """SPECTER2's adapters were saved from a BertAdapterModel (keys under ``bert.``) as ``[PRX]``; older
    libraries named the module dict ``layer_text_task_adapters`` and wrote no version (their ``gelu`` is
    ``gelu_new``, their ``gelu_orig`` today's ``gelu``)."""
    from transformers import AutoModel, AutoTokenizer

    model = perturbed_adapters(tiny_bert, config={"non_linearity": "gelu"})
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    saved = save_format_adapters(model, tmp_path / "saved")
    root = tmp_path / "root"
    _legacy_copy(
        saved / "proximity", root / "specter2", name="[PRX]", prefix="bert.", legacy=legacy, safetensors=safetensors
    )
    plain = AutoModel.from_pretrained(tiny_bert)
    assert load_format_adapters(plain, root) == ("proximity",)
    np.testing.assert_allclose(
        cls_vectors(plain, tokenizer, "proximity"), cls_vectors(model, tokenizer, "proximity"), atol=1e-6
    )


def _saved_folder(tiny_bert, tmp_path, fusion=False) -> Path:
    folder = tmp_path / "model"
    save_with_format_modules(perturbed_adapters(tiny_bert, fusion=fusion), folder)
    return folder


def _edit_json(path: Path, **changes) -> None:
    header = json.loads(path.read_text())
    header.update({k: v for k, v in changes.items() if k != "config"})
    header["config"].update(changes.get("config", {}))
    path.write_text(json.dumps(header))


@pytest.mark.parametrize(
    "key, value",
    [
        ("phm_layer", True),
        ("is_parallel", True),
        ("mh_adapter", True),
        ("use_gating", True),
        ("inv_adapter", "nice"),
        ("ln_after", True),
        ("original_ln_before", False),
        ("residual_before_ln", "post_add"),
        ("scaling", "learned"),
        ("non_linearity", "no_such_activation"),
        ("reduction_factor", {"0": 8}),
        ("leave_out", "1"),
        ("output_adapter", False),
        ("cross_adapter", True),
        ("stochastic_depth", 0.1),
        ("init_weights", "lora"),
        ("a_new_option", 1),
    ],
)
def test_adapter_options_sciembed_does_not_implement_are_refused_by_file_and_key(tiny_bert, tmp_path, key, value):
    from transformers import AutoModel

    folder = _saved_folder(tiny_bert, tmp_path)
    _edit_json(folder / "proximity" / ADAPTER_CONFIG_FILE, config={key: value})
    model = AutoModel.from_pretrained(folder)
    error = pytest.raises(ValueError, load_format_adapters, model, folder)
    assert str(folder / "proximity" / ADAPTER_CONFIG_FILE) in str(error.value) and key in str(error.value)
    assert adapter_formats(model) == ()  # nothing was attached


@pytest.mark.parametrize(
    "key, value",
    [
        ("temperature", True),
        ("query_before_ln", True),
        ("residual_before", True),
        ("value", False),
        ("key", False),
        ("value_before_softmax", False),
        ("regularization", "yes"),
        ("dropout_prob", 2.0),
        ("a_new_option", 1),
    ],
)
def test_fusion_options_sciembed_does_not_implement_are_refused_by_file_and_key(tiny_bert, tmp_path, key, value):
    from transformers import AutoModel

    folder = _saved_folder(tiny_bert, tmp_path, fusion=True)
    _edit_json(folder / "fusion_regression" / FUSION_CONFIG_FILE, config={key: value})
    with pytest.raises(ValueError, match=rf"{folder / 'fusion_regression' / FUSION_CONFIG_FILE}.*{key}"):
        load_format_adapters(AutoModel.from_pretrained(folder), folder)


def test_broken_files_are_named(tiny_bert, tmp_path):
    from transformers import AutoModel

    folder = _saved_folder(tiny_bert, tmp_path, fusion=True)
    weights_path = folder / "regression" / ADAPTER_WEIGHTS_FILE
    weights = torch.load(weights_path, weights_only=True)

    def refused(match, error=ValueError):
        with pytest.raises(error, match=match):
            load_format_adapters(AutoModel.from_pretrained(folder), folder)

    torch.save({**weights, "encoder.layer.0.output.adapters.regression.gate.weight": torch.zeros(1, 32)}, weights_path)
    refused(rf"{weights_path} does not fit: unexpected encoder\.layer\.0\.output\.adapters\.regression\.gate\.weight")
    torch.save(
        {**weights, "encoder.layer.0.attention.output.adapters.regression.adapter_up.bias": torch.zeros(32)},
        weights_path,
    )
    refused(
        rf"{weights_path}: key 'encoder\.layer\.0\.attention\.output\.adapters\.regression\.adapter_up\.bias' matches "
        r"no adapter module"
    )
    torch.save(
        {**weights, "encoder.layer.0.output.adapters.regression.adapter_up.bias": torch.zeros(31)}, weights_path
    )
    refused(
        r"encoder\.layer\.0\.output\.adapters\.regression\.adapter_up\.bias has shape \(31,\), the model needs \(32,\)"
    )
    torch.save({k: v for k, v in weights.items() if "layer.1" not in k}, weights_path)
    refused(r"does not fit: missing encoder\.layer\.1\.output\.adapters\.regression\.adapter_down\.0\.bias")
    weights_path.unlink()
    refused(
        rf"{folder / 'regression'}: no weights \(adapter\.safetensors or pytorch_adapter\.bin\)", FileNotFoundError
    )
    torch.save(weights, weights_path)
    _edit_json(folder / "regression" / ADAPTER_CONFIG_FILE, hidden_size=768)
    refused(r"regression/adapter_config\.json is for a model of hidden size 768; BertModel's is 32")
    _edit_json(folder / "regression" / ADAPTER_CONFIG_FILE, hidden_size=32)
    _edit_json(folder / "fusion_regression" / FUSION_CONFIG_FILE, adapter_names=["regression", "proximity"])
    refused(
        r"fuses \['regression', 'proximity'\]; fusion_regression/ must hold Fuse\[regression, classification, "
        r"proximity, adhoc_query\]"
    )
    shutil.rmtree(folder / "fusion_regression")
    loaded = AutoModel.from_pretrained(folder)
    assert (
        load_format_adapters(loaded, folder) == FORMATS
        and not has_fusion(loaded, "regression")
        and has_fusion(loaded, "proximity")
    )


def test_fusion_regularization_and_the_frozen_base_check_in_the_trainers(tiny_bert, tmp_path):
    """adapter_training: the base must be frozen; for fusion, 0.01 * sum ||I - V||^2 joins the loss."""
    from transformers import AutoTokenizer, TrainingArguments

    from sciembed.training.trainers import TripletTrainer

    model = perturbed_adapters(tiny_bert, fusion=True)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    arguments = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, save_strategy="no")
    trainer = TripletTrainer(model, arguments, adapter_training="fusion", processing_class=tokenizer)
    with pytest.raises(ValueError, match=r"trainable base parameter\(s\) \(embeddings\.word_embeddings\.weight"):
        trainer.callback_handler.on_train_begin(trainer.args, trainer.state, trainer.control)
    with pytest.raises(ValueError, match="adapter_training must be 'adapters' or 'fusion'"):
        TripletTrainer(model, arguments, adapter_training="lora")

    train_format_fusion(model)
    trainer.callback_handler.on_train_begin(trainer.args, trainer.state, trainer.control)  # now frozen: no error
    values = [
        layer.output.adapter_fusion_layer[fusion_of(f, FORMATS).name].value.weight
        for layer in model.encoder.layer
        for f in FORMATS
    ]
    expected = 0.01 * sum(((torch.eye(32) - v) ** 2).sum() for v in values)
    torch.testing.assert_close(fusion_regularization_loss(model), expected)

    inputs = tokenizer([f"paper {i} graph" for i in range(6)], padding=True, return_tensors="pt")
    plain = TripletTrainer(model, arguments, processing_class=tokenizer)
    model.train()
    losses = []
    for each in (trainer, plain):
        torch.manual_seed(0)  # the same dropout masks
        losses.append(each.compute_loss(model, dict(inputs)))
    torch.testing.assert_close(losses[0] - losses[1], expected)
    # The regulariser's gradient reaches only the fusions' value matrices.
    model.zero_grad()
    fusion_regularization_loss(model).backward()
    assert all(
        p.grad is None or not p.grad.any() for n, p in model.named_parameters() if not n.endswith(".value.weight")
    )
    # No regularisation for a fusion whose config does not ask for it, nor for value matrices being kept frozen.
    model.eval()
    unregularized = perturbed_adapters(tiny_bert)
    add_format_fusion(unregularized, FusionConfig(regularization=False))
    assert fusion_regularization_loss(unregularized) is None
    train_format_adapters(model)
    assert fusion_regularization_loss(model) is None


def test_nothing_in_the_package_imports_the_adapters_library():
    """The adapters library is the reference in a side venv only (it pins transformers 4.57.6)."""
    offenders = []
    for path in [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("modeling").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            )
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno}" for name in names if name.split(".")[0] == "adapters"
            ]
    assert not offenders, f"imports of the adapters library: {', '.join(offenders)}"


FRESH_PROCESS = """
import json, sys
import numpy as np
import sciembed
from sciembed.formats import FORMATS
papers, out = json.loads(sys.argv[1]), sys.argv[2]
vectors = {}
for folder in sys.argv[3:]:
    encoder = sciembed.PaperEncoder.from_pretrained(folder, device="cpu", max_length=32)
    for task_format in encoder.task_formats:
        vectors[f"{folder}|{task_format}"] = encoder.with_format(task_format).encode(papers, show_progress_bar=False)
np.savez(out, **vectors)
"""


def test_every_variant_trains_on_minilm_and_reloads_in_a_fresh_process(tmp_path):
    """Control codes, format adapters, AdapterFusion and PALs built on the embedded MiniLM, trained a step
    on SciRepEval's samples, saved, and reloaded in a new Python process: same vectors per format."""
    import json
    import subprocess
    import sys

    from helpers import shared_data

    from sciembed.checkpoint_files import base_embedding
    from sciembed.training.run import MODEL_FOLDER, prepare, save_trained

    data = shared_data("scirepeval-samples")
    settings = {
        "max_steps": 1,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "warmup_steps": 0,
        "save_strategy": "no",
        "embedding.max_length": 32,
        "data.max_examples": 8,
    }
    folders, expected = {}, {}
    for recipe, base in (
        ("scirepeval-ctrl", None),
        ("scirepeval-adapters", None),
        ("scirepeval-fusion", "adapters"),
        ("scirepeval-pals", None),
    ):
        run = prepare(recipe, folders.get(base), data, tmp_path / recipe, settings)
        if recipe == "scirepeval-fusion":  # an adapters model saved from MiniLM embeds in unit vectors too
            assert run.settings["loss"]["proximity"] == "mnr" and run.settings["training"]["learning_rate"] == 1e-3
        run.trainer.train()
        folder = save_trained(run.trainer, run.tokenizer, tmp_path / recipe / MODEL_FOLDER)
        assert base_embedding(str(folder)).max_length == 32  # the window it trained in, not MiniLM's tokenizer's 512
        folders[recipe.split("-")[1]] = folder
        model = run.trainer.model.eval()
        # The embedding the run trained in: MiniLM's own mean pooling and normalisation (the family's own pooling).
        assert run.trainer.normalize and run.trainer.pooling == ("family" if recipe == "scirepeval-ctrl" else "mean")
        encoder = sciembed.PaperEncoder(
            model,
            run.tokenizer,
            device="cpu",
            max_length=32,
            normalize=True,
            pooling=None if recipe == "scirepeval-ctrl" else "mean",
        )
        assert encoder.task_formats == FORMATS
        vectors = {f: encoder.with_format(f).encode(PAPERS, show_progress_bar=False) for f in FORMATS}
        assert not np.allclose(vectors["proximity"], vectors["classification"])  # formats differ
        with pytest.raises(ValueError, match="no task format 'summary'"):
            encoder.with_format("summary")
        expected.update({f"{folder}|{f}": v for f, v in vectors.items()})

    out = tmp_path / "fresh.npz"
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, json.dumps(PAPERS), str(out), *map(str, folders.values())],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = np.load(out)
    assert set(fresh.files) == set(expected)
    for key, vectors in expected.items():
        np.testing.assert_allclose(fresh[key], vectors, atol=1e-5, err_msg=key)


def test_scirepeval_fusion_in_unit_vectors_ranks_citations_at_a_rate_that_moves_the_fusion():
    """From a base trained in unit vectors, the fusion trains proximity and search with multiple-negatives ranking at
    1e-3; the paper's settings (triplets with margin 1, SciRepEval's 5e-5) stay without."""
    from sciembed.training.recipes import RECIPES

    recipe = RECIPES["scirepeval-fusion"]
    in_unit_vectors = recipe.resolve(unit_vectors=True)
    assert in_unit_vectors["loss"]["proximity"] == "mnr"
    assert in_unit_vectors["training"]["learning_rate"] == 1e-3
    paper = recipe.resolve()
    assert paper["loss"].get("proximity", "triplet") == "triplet" and paper["loss"]["margin"] == 1.0
    assert paper["training"]["learning_rate"] == 5e-5
