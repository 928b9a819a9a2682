"""Format adapters and AdapterFusion (adapters library): activation, encode, save and reload."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sciembed
from helpers import PAPERS
from sciembed.formats import FORMATS, activate_format, format_parameter_counts, model_formats, save_with_format_modules
from sciembed.formats.adapters import (
    add_format_adapters, add_format_fusion, adapter_formats, base_state_dict, has_fusion, train_format_adapters, train_format_fusion,
)


def perturbed_adapters(tiny_bert):
    """A tiny BERT with four format adapters whose weights are random (adapters start as the identity)."""
    from transformers import AutoModel

    model = add_format_adapters(AutoModel.from_pretrained(tiny_bert))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".adapters." in name:
                parameter.normal_(0, 0.2)
    return model.eval()


def test_each_format_has_its_own_adapter_and_embedding(tiny_bert):
    from transformers import AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    assert adapter_formats(model) == model_formats(model) == FORMATS
    vectors = {f: sciembed.encode(model, PAPERS, tokenizer=tokenizer, task_format=f, device="cpu", show_progress_bar=False) for f in FORMATS}
    for a in FORMATS:
        for b in FORMATS:
            assert (a == b) == np.allclose(vectors[a], vectors[b])
    # No format asked for: proximity, SPECTER2's general-purpose embedding.
    np.testing.assert_array_equal(sciembed.encode(model, PAPERS, tokenizer=tokenizer, device="cpu", show_progress_bar=False), vectors["proximity"])
    with pytest.raises(ValueError, match="no task format 'summary'; its formats: classification, regression, proximity, adhoc_query"):
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
    assert len({n.split(".adapter_fusion_layer.")[1].split(".")[0] for n in trainable}) == len(FORMATS)  # every format's fusion
    activate_format(model, "regression")
    assert str(model.active_adapters).startswith("Fuse[regression, classification")


def test_saved_adapters_reload_through_sciembed_and_the_adapters_library(tiny_bert, tmp_path):
    from adapters import init as adapters_init
    from transformers import AutoModel, AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    add_format_fusion(model)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    folder = tmp_path / "multi-format"
    assert save_with_format_modules(model, folder)
    tokenizer.save_pretrained(folder)
    assert {p.name for p in folder.iterdir() if p.is_dir()} == {*FORMATS, *(f"fusion_{f}" for f in FORMATS)}

    encoder = sciembed.PaperEncoder.from_pretrained(folder, device="cpu")
    assert encoder.task_formats == FORMATS
    for task_format in FORMATS:
        expected = sciembed.encode(model, PAPERS, tokenizer=tokenizer, task_format=task_format, device="cpu", show_progress_bar=False)
        np.testing.assert_allclose(encoder.with_format(task_format).encode(PAPERS, show_progress_bar=False), expected, atol=1e-6)

    base, info = AutoModel.from_pretrained(folder, output_loading_info=True)  # a clean base
    assert not info["unexpected_keys"] and not info["missing_keys"]
    torch.testing.assert_close(base.state_dict(), {k: v for k, v in base_state_dict(model).items()})
    adapters_init(base)  # what SPECTER2's model card does
    base.load_adapter(str(folder / "proximity"), load_as="proximity", set_active=True)
    features = tokenizer(["graph citation"], return_tensors="pt")
    activate_format(model, "proximity")
    model.set_active_adapters("proximity")  # the adapter alone, as the card loads it
    with torch.no_grad():
        torch.testing.assert_close(base.eval()(**features).last_hidden_state, model(**features).last_hidden_state)


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
        expected = sciembed.encode(model, PAPERS, tokenizer=tokenizer, task_format=task_format, device="cpu", show_progress_bar=False)
        np.testing.assert_allclose(vectors[task_format], expected, atol=1e-6)
    assert not np.allclose(vectors["proximity"], vectors["adhoc_query"])
    assert not save_with_format_modules(AutoModel.from_pretrained(tiny_bert), tmp_path / "plain")  # nothing to save that way


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
    members = [sciembed.PaperEncoder.from_pretrained(tmp_path / name, device="cpu") for name in ("adapters", "control")]

    ensemble = EnsembleEncoder(members)
    assert ensemble.task_formats == FORMATS
    for task_format in ("classification", "adhoc_query"):
        expected = np.mean([m.with_format(task_format).encode(PAPERS, show_progress_bar=False) for m in members], axis=0)
        np.testing.assert_allclose(sciembed.encode(ensemble.with_format(task_format), PAPERS, show_progress_bar=False), expected, atol=1e-6)
    assert ensemble.with_format("proximity").fingerprint() != ensemble.with_format("regression").fingerprint()

    save_ensemble(tmp_path / "ensemble", [tmp_path / "adapters", tmp_path / "control"])
    from sciembed.encoders.ensemble import load_encoder

    loaded = load_encoder(tmp_path / "ensemble", device="cpu", task_format="regression")
    assert isinstance(loaded, EnsembleEncoder)
    np.testing.assert_allclose(loaded.encode(PAPERS, show_progress_bar=False),
                               ensemble.with_format("regression").encode(PAPERS, show_progress_bar=False), atol=1e-6)
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
    assert format_parameter_counts(model) == {f: {"control_code": 32} for f in model_formats(model)}  # hidden size 32 (768 in BERT-base)


def test_evaluate_embeds_each_task_in_its_format(tiny_bert, monkeypatch):
    """sciembed evaluate with a format-adapter model: categories in classification, search queries in
    adhoc_query and their candidates in proximity."""
    from transformers import AutoTokenizer

    from helpers import shared_data
    from sciembed.evaluation import evaluate

    data = shared_data("cacm")
    encoder = sciembed.PaperEncoder(perturbed_adapters(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert), device="cpu")
    seen = []
    original = sciembed.PaperEncoder.encode

    def recording(self, papers, **kwargs):
        seen.append((self.forward_options.get("task_format"), len(papers)))
        return original(self, papers, **kwargs)

    monkeypatch.setattr(sciembed.PaperEncoder, "encode", recording)
    report = evaluate(encoder, "cacm", data, tasks=["categories", "search"], skip_invalid=True, use_cache=False, show_progress_bar=False)
    assert {r.task for r in report.results} == {"categories", "search"}
    assert {fmt for fmt, _ in seen} == {"proximity", "classification", "adhoc_query"}
    assert dict(seen)["adhoc_query"] == 52  # only the judged search queries take the query format


def test_search_queries_and_candidates_take_their_own_formats(tiny_bert, tiny_encoder):
    from transformers import AutoTokenizer

    encoder = sciembed.PaperEncoder(perturbed_adapters(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert), device="cpu")
    queries = ["garbage collection", "matrix algorithm"]
    np.testing.assert_array_equal(encoder.encode_query(queries, show_progress_bar=False),
                                  encoder.with_format("adhoc_query").encode(queries, show_progress_bar=False))
    np.testing.assert_array_equal(encoder.encode_document(PAPERS, show_progress_bar=False),
                                  encoder.with_format("proximity").encode(PAPERS, show_progress_bar=False))
    assert not np.allclose(encoder.encode_query(queries, show_progress_bar=False), encoder.encode_document(queries, show_progress_bar=False))
    # A single-format model embeds both alike.
    np.testing.assert_array_equal(tiny_encoder.encode_query(queries, show_progress_bar=False), tiny_encoder.encode(queries, show_progress_bar=False))


def test_a_local_specter2_layout_loads_as_with_the_adapters_library(tiny_bert, tmp_path):
    """SPECTER2 ships a base (allenai/specter2_base) and one adapter repository per format; a local copy
    (base files, adapter repositories as sub-folders) loads through sciembed as its card loads it."""
    import shutil

    from adapters import init as adapters_init
    from transformers import AutoModel, AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    root = tmp_path / "specter2"
    shutil.copytree(tiny_bert, root)
    for task_format, repository in (("proximity", "specter2"), ("adhoc_query", "specter2_adhoc_query"),
                                    ("classification", "specter2_classification"), ("regression", "specter2_regression")):
        model.save_adapter(str(root / repository), task_format)
    encoder = sciembed.PaperEncoder.from_pretrained(root, device="cpu")
    assert encoder.task_formats == FORMATS

    tokenizer = AutoTokenizer.from_pretrained(root)
    for task_format, repository in (("proximity", "specter2"), ("adhoc_query", "specter2_adhoc_query")):
        card = AutoModel.from_pretrained(root)  # as on the model card
        adapters_init(card)
        card.load_adapter(str(root / repository), load_as=task_format, set_active=True)
        features = tokenizer([sciembed.paper_text(p, tokenizer.sep_token) for p in PAPERS], padding=True, return_tensors="pt")
        with torch.no_grad():
            expected = card.eval()(**features).last_hidden_state[:, 0].numpy()
        np.testing.assert_allclose(encoder.with_format(task_format).encode(PAPERS, show_progress_bar=False), expected, atol=1e-5)

    model.save_adapter(str(root / "proximity"), "proximity")
    with pytest.raises(ValueError, match="both proximity/ and specter2/ hold a proximity adapter"):
        sciembed.PaperEncoder.from_pretrained(root, device="cpu")


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
    from sciembed.training.run import MODEL_FOLDER, prepare, save_trained

    data = shared_data("scirepeval-samples")
    settings = {"max_steps": 1, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1, "warmup_steps": 0,
                "save_strategy": "no", "embedding.max_length": 32, "data.max_examples": 8}
    folders, expected = {}, {}
    for recipe, base in (("scirepeval-ctrl", None), ("scirepeval-adapters", None), ("scirepeval-fusion", "adapters"),
                         ("scirepeval-pals", None)):
        run = prepare(recipe, folders.get(base), data, tmp_path / recipe, settings)
        run.trainer.train()
        folder = save_trained(run.trainer, run.tokenizer, tmp_path / recipe / MODEL_FOLDER)
        folders[recipe.split("-")[1]] = folder
        model = run.trainer.model.eval()
        # The embedding the run trained in: MiniLM's own mean pooling and normalisation (the family's own pooling).
        assert run.trainer.normalize and run.trainer.pooling == ("family" if recipe == "scirepeval-ctrl" else "mean")
        encoder = sciembed.PaperEncoder(model, run.tokenizer, device="cpu", max_length=32, normalize=True,
                                        pooling=None if recipe == "scirepeval-ctrl" else "mean")
        assert encoder.task_formats == FORMATS
        vectors = {f: encoder.with_format(f).encode(PAPERS, show_progress_bar=False) for f in FORMATS}
        assert not np.allclose(vectors["proximity"], vectors["classification"])  # formats differ
        with pytest.raises(ValueError, match="no task format 'summary'"):
            encoder.with_format("summary")
        expected.update({f"{folder}|{f}": v for f, v in vectors.items()})

    out = tmp_path / "fresh.npz"
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS, json.dumps(PAPERS), str(out), *map(str, folders.values())],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = np.load(out)
    assert set(fresh.files) == set(expected)
    for key, vectors in expected.items():
        np.testing.assert_allclose(fresh[key], vectors, atol=1e-5, err_msg=key)
