"""PALs per task format (sciembed.formats.pals) on tiny random BERTs."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModel, BertConfig, BertForSequenceClassification, BertModel

from sciembed.formats import FORMATS, activate_format, model_formats
from sciembed.formats.pals import (
    PALS_CONFIG_FILE,
    PALS_FOLDER,
    PALS_WEIGHTS_FILE,
    PALs,
    PALsConfig,
    add_pals,
    base_state_dict,
    has_pals,
    has_saved_pals,
    load_pals,
    pals_formats,
    parameter_count,
    save_pals,
    set_active_format,
)

TINY = dict(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=37,
    max_position_embeddings=64,
)
SMALL_PALS = PALsConfig(hidden_size=12, num_attention_heads=6)


def tiny_bert(seed: int = 0, **options) -> BertModel:
    torch.manual_seed(seed)
    return BertModel(BertConfig(**{**TINY, **options})).eval()


def add_pals_to(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with the tiny PALs added (inactive)."""
    add_pals(model, SMALL_PALS)
    return model


def batch(seed: int = 1) -> dict[str, torch.Tensor]:
    """Three inputs of lengths 9, 6 and 4, right-padded."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, TINY["vocab_size"], (3, 9), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 6:] = 0
    attention_mask[2, 4:] = 0
    return {"input_ids": input_ids.masked_fill(attention_mask == 0, 0), "attention_mask": attention_mask}


def embed(model: torch.nn.Module, inputs: dict[str, torch.Tensor], task_format: str | None) -> torch.Tensor:
    set_active_format(model, task_format)
    with torch.no_grad():
        return model(**inputs).last_hidden_state


def test_config_validates_and_round_trips():
    config = PALsConfig(hidden_size=12, num_attention_heads=4, formats=["proximity", "adhoc_query"], dropout=0.0)
    assert config.formats == ("proximity", "adhoc_query")
    assert PALsConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert (PALsConfig().hidden_size, PALsConfig().num_attention_heads, PALsConfig().formats) == (204, 6, FORMATS)
    for bad, message in [
        (dict(hidden_size=12, num_attention_heads=5), "divisible"),
        (dict(formats=()), "empty"),
        (dict(formats=("search",)), "'search'.*classification, regression, proximity, adhoc_query"),
        (dict(formats=("proximity", "proximity")), "repeats"),
        (dict(dropout=1.0), "dropout"),
        (dict(hidden_size=0), "positive"),
    ]:
        with pytest.raises(ValueError, match=message):
            PALsConfig(**bad)
    with pytest.raises(ValueError, match="unknown PALsConfig key.*hidden_size_aug"):
        PALsConfig.from_dict({"hidden_size_aug": 204})


def test_parameter_count_per_format_by_hand():
    model = tiny_bert()
    before = sum(p.numel() for p in model.parameters())
    add_pals(model, SMALL_PALS)
    d, p, layers = 32, 12, 2
    per_format = (d * p + p) + (p * d + d) + layers * 3 * (p * p + p)
    assert per_format == 1748
    assert all(parameter_count(model, name) == per_format for name in FORMATS)
    # Registered as a submodule: model.parameters() (what an optimiser or Trainer sees) includes the PALs.
    assert sum(p.numel() for p in model.parameters()) == before + len(FORMATS) * per_format
    assert isinstance(model.pals, PALs) and has_pals(model) and pals_formats(model) == FORMATS


def test_parameter_count_bert_base_matches_scirepeval():
    # BERT-base's shape on the meta device: no memory, no time. SciRepEval's PALs: width 204, 6 heads.
    with torch.device("meta"):
        model = BertModel(
            BertConfig(
                vocab_size=8, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=8
            )
        )
        add_pals(model)
    # (768·204 + 204) + (204·768 + 768) + 12 · 3 · (204² + 204) = 1,819,836: the ~1.8M ("~2M") per format.
    assert parameter_count(model, "proximity") == 1_819_836


def test_inactive_pals_give_the_base_output_exactly():
    model, inputs = tiny_bert(), batch()
    with torch.no_grad():
        base = model(**inputs).last_hidden_state
    add_pals(model, SMALL_PALS)
    assert model.pals.active_format is None
    assert torch.equal(embed(model, inputs, None), base)
    active = embed(model, inputs, "classification")
    assert not torch.equal(active, base)
    # SciRepEval's init (N(0, 0.02), zero biases): a small perturbation of the base at step 0.
    assert (active - base).abs().max() < 0.05
    assert torch.equal(embed(model, inputs, None), base)


def test_pal_joins_the_feed_forward_residual_before_the_final_layernorm():
    # SciRepEval's BERTLayer: LN(FFN(a) + a + PAL(h)), a = LN(h + SA(h)), h the layer's input.
    model = add_pals_to(tiny_bert(num_hidden_layers=1))
    inputs = {"input_ids": batch()["input_ids"][:1]}
    layer = model.encoder.layer[0]
    with torch.no_grad():
        set_active_format(model, "regression")
        h = model.embeddings(input_ids=inputs["input_ids"])
        a = layer.attention(h)[0]
        pal = model.pals(h, None, 0)
        expected = layer.output.LayerNorm(layer.output.dense(layer.intermediate(a)) + a + pal)
        torch.testing.assert_close(model(**inputs).last_hidden_state, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_padding_does_not_change_real_tokens(attn_implementation):
    model = add_pals_to(tiny_bert(attn_implementation=attn_implementation))
    inputs = batch()
    padded = embed(model, inputs, "regression")
    for row in (1, 2):
        length = int(inputs["attention_mask"][row].sum())
        alone = {key: value[row : row + 1, :length] for key, value in inputs.items()}
        torch.testing.assert_close(embed(model, alone, "regression")[0], padded[row, :length], atol=1e-5, rtol=1e-5)


def test_joint_training_reaches_pals_and_base_and_separates_formats():
    model, inputs = add_pals_to(tiny_bert()).train(), batch()
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    before = (embed(model.eval(), inputs, "classification") - embed(model, inputs, "regression")).abs().max()
    model.train()
    set_active_format(model, "classification")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    target = torch.randn(3, 32, generator=torch.Generator().manual_seed(2))
    for step in range(3):
        optimizer.zero_grad()
        loss = (model(**inputs).last_hidden_state[:, 0] - target).pow(2).mean()
        loss.backward()
        if step == 0:
            grads = {name: p.grad for name, p in model.named_parameters()}
            assert all(grads[n] is not None and grads[n].abs().sum() > 0 for n in grads if ".classification." in n)
            assert all(grads[n] is None for n in grads if ".regression." in n or ".proximity." in n)
            assert grads["encoder.layer.0.attention.self.query.weight"].abs().sum() > 0
            assert grads["embeddings.word_embeddings.weight"].abs().sum() > 0
        optimizer.step()
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, initial[name])}
    assert {"pals.decoders.classification.weight", "pals.attentions.classification.1.query.weight"} <= changed
    assert "encoder.layer.1.output.dense.weight" in changed
    assert not any(".regression." in name for name in changed)
    after = (embed(model.eval(), inputs, "classification") - embed(model, inputs, "regression")).abs().max()
    assert after > 10 * before


def test_trainer_trains_pals_with_the_network(tmp_path):
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(**TINY, num_labels=2))
    add_pals(model, SMALL_PALS)  # on the classifier: its base_model's layers get the PALs
    set_active_format(model, "proximity")
    inputs = batch()
    rows = [
        {"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": i % 2}
        for i in range(3)
    ] * 2
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    arguments = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=3,
        learning_rate=0.05,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
    )
    Trainer(model=model, args=arguments, train_dataset=rows).train()
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, initial[name])}
    assert "pals.encoders.proximity.weight" in changed and "bert.encoder.layer.0.attention.self.key.weight" in changed
    assert not any(".classification." in name for name in changed)


def test_save_and_load_reproduce_every_format(tmp_path):
    model, inputs = add_pals_to(tiny_bert()), batch()
    for name in FORMATS:  # distinct weights per format, away from the init
        with torch.no_grad():
            model.pals.decoders[name].bias.normal_(generator=torch.Generator().manual_seed(len(name)))
    model.save_pretrained(tmp_path, state_dict=base_state_dict(model))
    assert save_pals(model, tmp_path) == tmp_path / PALS_FOLDER
    assert has_saved_pals(tmp_path) and (tmp_path / PALS_FOLDER / PALS_WEIGHTS_FILE).is_file()
    assert not has_saved_pals(tmp_path / PALS_FOLDER)

    reloaded = BertModel.from_pretrained(tmp_path).eval()
    assert not has_pals(reloaded)
    loaded = load_pals(reloaded, tmp_path)
    assert loaded is reloaded.pals and loaded.active_format is None and pals_formats(reloaded) == FORMATS
    for name in (None, *FORMATS):
        assert torch.equal(embed(reloaded, inputs, name), embed(model, inputs, name)), name
    # The package-level switch used by encode and the trainers drives PALs too.
    assert model_formats(reloaded) == FORMATS and activate_format(reloaded, "proximity") == {}
    assert reloaded.pals.active_format == "proximity"


def test_base_state_dict_saves_a_clean_base(tmp_path):
    model = add_pals_to(tiny_bert())
    model.save_pretrained(tmp_path, state_dict=base_state_dict(model))
    with safe_open(str(tmp_path / "model.safetensors"), framework="pt") as weights:
        assert not any(key.startswith("pals.") for key in weights.keys())
    reloaded, info = AutoModel.from_pretrained(tmp_path, output_loading_info=True)
    assert type(reloaded) is BertModel and not has_pals(reloaded)
    assert not info["unexpected_keys"] and not info["missing_keys"]  # lists on transformers 4.57, sets on 5
    inputs = batch()
    assert torch.equal(reloaded.eval()(**inputs).last_hidden_state, embed(model, inputs, None))


def test_deepcopy_uses_its_own_pals():
    model, inputs = add_pals_to(tiny_bert()), batch()
    base = embed(model, inputs, None)
    twin = copy.deepcopy(model)
    assert twin.pals is not model.pals
    set_active_format(twin, "adhoc_query")
    with torch.no_grad():
        assert not torch.equal(twin(**inputs).last_hidden_state, base)
        assert torch.equal(model(**inputs).last_hidden_state, base)


def test_sciembed_families_take_pals():
    from sciembed.modeling.control_code import ControlCodeConfig, ControlCodeModel
    from sciembed.modeling.moe_bert import MoEBertConfig, MoEBertModel
    from sciembed.modeling.multi2spe import Multi2SPEConfig, Multi2SPEModel

    codes = {name: 5 + i for i, name in enumerate(FORMATS)}
    inputs = batch()
    for model, options in [
        (ControlCodeModel(ControlCodeConfig(**TINY, control_code_token_ids=codes)), {"task_format": "proximity"}),
        (Multi2SPEModel(Multi2SPEConfig(**TINY, extra_cls_token_ids=[5, 6])), {}),
        (MoEBertModel(MoEBertConfig(**TINY)), {"domain_ids": torch.tensor([0, 1, 2])}),
    ]:
        model.eval()
        with torch.no_grad():
            base = model(**inputs, **options).last_hidden_state
            add_pals(model, SMALL_PALS)
            assert torch.equal(model(**inputs, **options).last_hidden_state, base), type(model).__name__
            set_active_format(model, "classification")
            assert not torch.equal(model(**inputs, **options).last_hidden_state, base), type(model).__name__


def test_errors_name_what_is_wrong(tmp_path):
    model = tiny_bert()
    with pytest.raises(ValueError, match="has no PALs; add them"):
        set_active_format(model, "proximity")
    add_pals(model, PALsConfig(hidden_size=12, num_attention_heads=4, formats=("proximity", "adhoc_query")))
    with pytest.raises(ValueError, match="'classification'.*proximity, adhoc_query"):
        set_active_format(model, "classification")
    with pytest.raises(ValueError, match="already has PALs"):
        add_pals(model)
    with pytest.raises(TypeError, match="BERT-style encoder"):
        add_pals(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="chunk_size_feed_forward"):
        add_pals(tiny_bert(chunk_size_feed_forward=4))

    fresh = tiny_bert()
    with pytest.raises(FileNotFoundError, match=PALS_CONFIG_FILE):
        load_pals(fresh, tmp_path / "nowhere")
    save_pals(model, tmp_path / "ok")
    weights = tmp_path / "ok" / PALS_FOLDER / PALS_WEIGHTS_FILE
    with pytest.raises(ValueError, match="holds PALsConfig.*model's PALs are"):
        load_pals(add_pals_to(tiny_bert()), tmp_path / "ok")

    wide = tiny_bert(hidden_size=48, num_attention_heads=4)
    add_pals(wide, model.pals.config)
    save_pals(wide, tmp_path / "wide")
    mismatch = r"pals\.safetensors does not fit.*encoders\.proximity\.weight has shape \(12, 48\)"
    with pytest.raises(ValueError, match=mismatch):
        load_pals(fresh, tmp_path / "wide")
    assert not has_pals(fresh)

    (tmp_path / "ok" / PALS_FOLDER / PALS_CONFIG_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{PALS_CONFIG_FILE} is not a valid PALs config"):
        load_pals(fresh, tmp_path / "ok")
    save_pals(model, tmp_path / "ok")
    weights.write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match=f"{PALS_WEIGHTS_FILE} is not a readable safetensors file"):
        load_pals(fresh, tmp_path / "ok")
    weights.unlink()
    with pytest.raises(FileNotFoundError, match=PALS_WEIGHTS_FILE):
        load_pals(fresh, tmp_path / "ok")
    assert not has_pals(fresh)


def test_scirepeval_pals_in_unit_vectors_ranks_citations_and_averages_with_the_base():
    """From a base trained in unit vectors, PALs train proximity and search with multiple-negatives ranking at the
    citation recipes' rate, then keep WiSE-FT's fifth of the trained weights; the paper's settings stay without."""
    from sciembed.training.recipes import RECIPES

    recipe = RECIPES["scirepeval-pals"]
    in_unit_vectors = recipe.resolve(unit_vectors=True)
    assert in_unit_vectors["loss"]["proximity"] == "mnr"
    assert in_unit_vectors["training"]["learning_rate"] == 1e-4
    assert in_unit_vectors["model"]["weight_average"] == 0.2
    paper = recipe.resolve()
    assert paper["loss"].get("proximity", "triplet") == "triplet" and paper["loss"]["margin"] == 1.0
    assert paper["model"].get("weight_average", 1.0) == 1.0
    assert paper["training"]["learning_rate"] == RECIPES["scirepeval-adapters"].resolve()["training"]["learning_rate"]
