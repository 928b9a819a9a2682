"""ControlCodeModel: SciRepEval's control codes on a BERT encoder, built from BERT; the family contract
(``family_contract.py``) at the end."""

from __future__ import annotations

import copy
import json
import logging
import string
from pathlib import Path

import pytest
import torch
from family_contract import TEXTS as CONTRACT_TEXTS
from family_contract import FamilyContract, FamilyTester, Start, Variant
from transformers import AutoTokenizer, BertModel, BertTokenizerFast

from sciembed.modeling.control_code import ControlCodeConfig, ControlCodeModel, ControlCodeModelOutput

CODES = {"classification": "[CLF]", "regression": "[RGN]", "proximity": "[PRX]", "adhoc_query": "[QRY]"}
TEXTS = [
    "garbage collection of list structure [SEP] we reclaim memory in a time sharing system",
    "query join index",
    "a linear system algorithm for the matrix of a graph",
]


WORDS = "the a of and in for we query join index graph citation garbage collection list structure memory time".split()
# A vocabulary without repeats, to which a test adds a word twice, for a code that would take that word's id.
VOCAB = list(
    dict.fromkeys(
        [
            "[PAD]",
            "[UNK]",
            "[CLS]",
            "[SEP]",
            "[MASK]",
            *WORDS,
            *[f"##{c}" for c in string.ascii_lowercase],
            *string.ascii_lowercase,
            *".,;:",
        ]
    )
)


def build(tiny_bert: Path, **options) -> tuple[ControlCodeModel, object]:
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = ControlCodeModel.from_bert(tiny_bert, tokenizer=tokenizer, **options).eval()
    return model, tokenizer


def bert_twin(model: ControlCodeModel, source: Path | str, attn_implementation: str = "sdpa") -> BertModel:
    """A plain BertModel holding the control-code model's weights (loaded strictly, so the keys match)."""
    bert = BertModel.from_pretrained(source, add_pooling_layer=False, attn_implementation=attn_implementation)
    bert.resize_token_embeddings(model.config.vocab_size, mean_resizing=False)
    bert.load_state_dict(model.state_dict())
    return bert.eval()


@pytest.fixture(scope="module")
def tiny(tiny_bert):
    return build(tiny_bert)


@pytest.fixture(scope="module")
def batch(tiny):
    _, tokenizer = tiny
    return tokenizer(TEXTS, padding=True, return_tensors="pt")


@pytest.fixture(scope="module")
def saved(tiny, tmp_path_factory) -> Path:
    model, tokenizer = tiny
    folder = tmp_path_factory.mktemp("control-code")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_from_bert_copies_weights_and_adds_the_four_codes(tiny_bert):
    source = BertModel.from_pretrained(tiny_bert).state_dict()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    old_vocab = len(tokenizer)
    model = ControlCodeModel.from_bert(tiny_bert, tokenizer=tokenizer)
    state = model.state_dict()

    assert isinstance(model.config, ControlCodeConfig) and model.config.model_type == "control_code"
    assert not any(key.startswith("pooler.") for key in state)
    assert set(state) == {key for key in source if not key.startswith("pooler.")}
    for key in (
        "embeddings.position_embeddings.weight",
        "encoder.layer.0.attention.self.query.weight",
        "encoder.layer.1.output.LayerNorm.weight",
        "encoder.layer.1.intermediate.dense.bias",
    ):
        assert torch.equal(state[key], source[key]), key
    words = state["embeddings.word_embeddings.weight"]
    assert torch.equal(words[:old_vocab], source["embeddings.word_embeddings.weight"])

    # Added to the caller's tokenizer in place, in SciRepEval's (sorted) order, one new row each.
    assert len(tokenizer) == old_vocab + 4 == model.config.vocab_size
    ids = model.config.control_code_token_ids
    assert ids == {name: tokenizer.convert_tokens_to_ids(code) for name, code in CODES.items()}
    assert [ids[name] for name in ("classification", "proximity", "adhoc_query", "regression")] == list(
        range(old_vocab, old_vocab + 4)
    )
    # Special tokens: never split, and dropped by decode(skip_special_tokens=True).
    assert [tokenizer.tokenize(f"{code}x")[0] for code in CODES.values()] == list(CODES.values())
    assert tokenizer.decode([ids["proximity"]], skip_special_tokens=True) == ""
    new_rows = words[old_vocab:]
    assert 0.01 < new_rows.std().item() < 0.03  # N(0, initializer_range = 0.02), not zeros or mean-resized
    assert new_rows.mean().abs().item() < 0.01


def test_from_bert_accepts_a_bert_model_and_loads_its_tokenizer(tiny_bert):
    bert = BertModel.from_pretrained(tiny_bert)
    model = ControlCodeModel.from_bert(bert, default_task_format="classification")
    assert model.config.default_task_format == "classification"
    layer = model.encoder.layer[1].attention.output.dense
    assert torch.equal(layer.weight, bert.encoder.layer[1].attention.output.dense.weight)
    assert model.config.control_code_token_ids["proximity"] == bert.config.vocab_size + 1


def test_from_bert_keeps_codes_the_tokenizer_already_knows(saved, tiny):
    model, _ = tiny
    tokenizer = AutoTokenizer.from_pretrained(saved)
    rebuilt = ControlCodeModel.from_bert(saved, tokenizer=tokenizer)
    assert len(tokenizer) == model.config.vocab_size
    assert rebuilt.config.control_code_token_ids == model.config.control_code_token_ids
    assert torch.equal(rebuilt.get_input_embeddings().weight, model.get_input_embeddings().weight)


def test_from_bert_refuses_token_ids(tiny_bert):
    with pytest.raises(TypeError, match="control_code_token_ids"):
        ControlCodeModel.from_bert(tiny_bert, control_code_token_ids={"proximity": 3})


def test_from_bert_refuses_codes_that_share_an_id_with_a_word(tiny_bert, tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join([*VOCAB, "the"]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"\[CLF\] and 'the'"):
        ControlCodeModel.from_bert(tiny_bert, tokenizer=tokenizer)


def test_output_fields_and_tuple(tiny, batch):
    model, _ = tiny
    batch_size, length = batch["input_ids"].shape
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
        as_tuple = model(**batch, return_dict=False)
    assert isinstance(output, ControlCodeModelOutput)
    assert output.last_hidden_state.shape == (batch_size, length + 1, 32)
    assert output.pooler_output.shape == (batch_size, 32)
    assert torch.equal(output.pooler_output, output.last_hidden_state[:, 1])
    assert len(output.hidden_states) == 3 and output.hidden_states[-1].shape == (batch_size, length + 1, 32)
    assert torch.equal(output.attention_mask[:, 1], torch.ones(batch_size, dtype=torch.long))
    assert torch.equal(output.attention_mask[:, 2:], batch["attention_mask"][:, 1:])
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 3
    torch.testing.assert_close(as_tuple[1], output.pooler_output, rtol=0, atol=1e-6)
    assert torch.equal(as_tuple[2], output.attention_mask)


def test_default_format_is_proximity(tiny, batch):
    model, _ = tiny
    with torch.no_grad():
        default = model(**batch).pooler_output
        proximity = model(**batch, task_format="proximity").pooler_output
    assert torch.equal(default, proximity)


def test_unknown_format_error_lists_the_valid_names(tiny, batch):
    model, _ = tiny
    with pytest.raises(ValueError, match="search") as error:
        model(**batch, task_format="search")
    for name in CODES:
        assert name in str(error.value)
    with pytest.raises(ValueError, match="bogus"):
        model(**batch, task_format=["proximity", "bogus", "proximity"])


def test_formats_give_different_embeddings(tiny, batch):
    model, _ = tiny
    with torch.no_grad():
        embeddings = [model(**batch, task_format=name).pooler_output for name in CODES]
    for i in range(len(embeddings)):
        for j in range(i + 1, len(embeddings)):
            assert (embeddings[i] - embeddings[j]).abs().max() > 1e-3


def test_per_row_formats_equal_per_call_formats(tiny, batch):
    model, _ = tiny
    formats = ["regression", "adhoc_query", "classification"]
    with torch.no_grad():
        mixed = model(**batch, task_format=formats).last_hidden_state
        for row, name in enumerate(formats):
            single = model(**batch, task_format=name).last_hidden_state
            torch.testing.assert_close(mixed[row], single[row], rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="2 entries for a batch of 3"):
        model(**batch, task_format=formats[:2])


def test_gradients_reach_only_the_codes_used(tiny_bert, batch):
    model, _ = build(tiny_bert)
    model.train()
    model.gradient_checkpointing_enable()
    model(**batch, task_format=["regression", "adhoc_query", "regression"]).pooler_output.pow(2).sum().backward()
    grad = model.get_input_embeddings().weight.grad
    ids = model.config.control_code_token_ids
    assert grad[ids["regression"]].abs().sum() > 0 and grad[ids["adhoc_query"]].abs().sum() > 0
    assert grad[ids["classification"]].abs().sum() == 0 == grad[ids["proximity"]].abs().sum()


def test_input_that_already_has_a_code_is_refused(tiny):
    model, tokenizer = tiny
    coded = tokenizer(["[PRX] query join index"], return_tensors="pt")
    with pytest.raises(ValueError, match="already hold a control code"):
        model(**coded)


def test_inputs_embeds_and_position_ids_agree_with_input_ids(tiny, batch):
    model, _ = tiny
    positions = torch.arange(batch["input_ids"].shape[1]).expand_as(batch["input_ids"])
    with torch.no_grad():
        expected = model(**batch, task_format="regression").last_hidden_state
        embeds = model.get_input_embeddings()(batch["input_ids"])
        from_embeds = model(
            inputs_embeds=embeds,
            attention_mask=batch["attention_mask"],
            token_type_ids=batch["token_type_ids"],
            task_format="regression",
        ).last_hidden_state
        with_positions = model(**batch, position_ids=positions, task_format="regression").last_hidden_state
    torch.testing.assert_close(from_embeds, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(with_positions, expected, rtol=0, atol=1e-6)


def test_overlong_input_is_truncated_as_scirepeval_tokenizes(tiny, tiny_bert):
    model, tokenizer = tiny
    limit = model.config.max_position_embeddings
    texts = [" ".join(["citation graph"] * limit), "query join index"]
    batch = tokenizer(texts, padding=True, truncation=True, max_length=limit, return_tensors="pt")
    reference = tokenizer(
        [f"[QRY] {text}" for text in texts], padding=True, truncation=True, max_length=limit, return_tensors="pt"
    )
    assert batch["input_ids"].shape[1] == limit and reference["input_ids"][0, -1] == tokenizer.sep_token_id

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    module_logger = logging.getLogger(type(model).__module__)
    module_logger.addHandler(handler)
    try:
        with torch.no_grad():
            output = model(**batch, task_format="adhoc_query")
    finally:
        module_logger.removeHandler(handler)
    assert any("positions" in record.getMessage() for record in records)
    with torch.no_grad():
        expected = bert_twin(model, tiny_bert)(**reference).last_hidden_state
    assert output.last_hidden_state.shape[1] == limit
    assert torch.equal(output.attention_mask, reference["attention_mask"])
    torch.testing.assert_close(output.last_hidden_state, expected, rtol=0, atol=1e-6)


def test_config_validates_formats():
    with pytest.raises(ValueError, match="classification, regression, proximity, adhoc_query"):
        ControlCodeConfig(default_task_format="search")
    with pytest.raises(ValueError, match="unknown formats"):
        ControlCodeConfig(control_code_token_ids={"search": 5})


def test_model_without_token_ids_explains_how_to_build_one(tiny_bert):
    config = ControlCodeConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37
    )
    model = ControlCodeModel(config)
    assert torch.equal(model.encoder.layer[0].output.LayerNorm.weight, torch.ones(32))
    assert torch.equal(model.get_input_embeddings().weight[config.pad_token_id], torch.zeros(32))
    assert 0.015 < model.encoder.layer[0].attention.self.key.weight.std().item() < 0.025
    with pytest.raises(ValueError, match="from_bert"):
        model(input_ids=torch.tensor([[2, 7, 3]]))


def test_saved_tokenizer_knows_the_codes(saved):
    tokenizer = AutoTokenizer.from_pretrained(saved)
    ids = json.loads((saved / "config.json").read_text())["control_code_token_ids"]
    for name, code in CODES.items():
        assert tokenizer.tokenize(f"{code} query join") == [code, "query", "join"]
        assert tokenizer.convert_tokens_to_ids(code) == ids[name]


@pytest.mark.slow
def test_from_bert_on_the_embedded_minilm():
    import sciembed

    path = sciembed.default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = ControlCodeModel.from_bert(path, tokenizer=tokenizer).eval()
    source = BertModel.from_pretrained(path, add_pooling_layer=False).eval()
    assert model.config.control_code_token_ids == {
        "classification": 30522,
        "proximity": 30523,
        "adhoc_query": 30524,
        "regression": 30525,
    }
    assert model.config.vocab_size == len(tokenizer) == 30526
    for name in ("encoder.layer.5.output.LayerNorm.weight", "encoder.layer.3.attention.self.value.bias"):
        assert torch.equal(model.state_dict()[name], source.state_dict()[name]), name
    assert torch.equal(model.get_input_embeddings().weight[:30522], source.get_input_embeddings().weight)

    batch = tokenizer(["Garbage collection of list structure", "Query join index"], padding=True, return_tensors="pt")
    reference = tokenizer(
        ["[CLF] Garbage collection of list structure", "[CLF] Query join index"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        output = model(**batch, task_format="classification")
        expected = bert_twin(model, path)(**reference).last_hidden_state
    assert output.pooler_output.shape == (2, 384)
    torch.testing.assert_close(output.last_hidden_state, expected, rtol=0, atol=1e-5)


def test_mean_text_pooling_averages_the_text_that_the_code_conditions(tiny_bert, batch):
    """text_pooling="mean" (the unit-vector recipe's, for a mean-pooling base): the embedding is the mean of the
    final states of [CLS] and the text, padding and the code excluded; the formats still embed apart, through
    attention to their codes."""
    model, _ = build(tiny_bert, text_pooling="mean")
    with torch.no_grad():
        outputs = {name: model(**batch, task_format=name) for name in CODES}
    for output in outputs.values():
        text = output.attention_mask.clone().float()
        text[:, 1] = 0
        expected = (output.last_hidden_state * text[..., None]).sum(1) / text.sum(1, keepdim=True)
        torch.testing.assert_close(output.pooler_output, expected, atol=1e-6, rtol=0)
        assert not torch.allclose(output.pooler_output, output.last_hidden_state[:, 1], atol=1e-3)
    assert (outputs["proximity"].pooler_output - outputs["adhoc_query"].pooler_output).abs().max() > 1e-4
    with pytest.raises(ValueError, match="text_pooling must be one of"):
        ControlCodeConfig(text_pooling="max")


def test_sep_init_starts_every_code_as_the_sep_row(tiny_bert, batch):
    """control_code_init="sep": each new code's row is a copy of [SEP]'s, so at the start every format embeds alike;
    the configuration's round trip is the family contract's."""
    model, tokenizer = build(tiny_bert, text_pooling="mean", control_code_init="sep")
    words = model.get_input_embeddings().weight
    source = BertModel.from_pretrained(tiny_bert).get_input_embeddings().weight
    for token_id in model.config.control_code_token_ids.values():
        assert torch.equal(words[token_id], source[tokenizer.sep_token_id])
    with torch.no_grad():
        embeddings = [model(**batch, task_format=name).pooler_output for name in CODES]
    for other in embeddings[1:]:
        torch.testing.assert_close(other, embeddings[0], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="control_code_init must be one of"):
        ControlCodeConfig(control_code_init="mean")


@pytest.mark.slow
def test_sep_init_starts_close_to_a_mean_pooling_base():
    """On the embedded MiniLM read by its mean, codes that start as [SEP] leave the embedding nearer the base's own
    than SciRepEval's random rows do: the unit-vector recipe's start."""
    import sciembed

    path = sciembed.default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    texts = [
        "Garbage collection of list structure in a paging environment",
        "An algorithm for the join of relations using an index",
        "Numerical solution of stiff ordinary differential equations",
    ]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = BertModel.from_pretrained(path, add_pooling_layer=False).eval()(**batch).last_hidden_state
        mask = batch["attention_mask"][..., None].float()
        base = (states * mask).sum(1) / mask.sum(1)
        cosines = {}
        for init in ("normal", "sep"):
            torch.manual_seed(0)
            model = ControlCodeModel.from_bert(
                path, tokenizer=AutoTokenizer.from_pretrained(path), text_pooling="mean", control_code_init=init
            ).eval()
            cosines[init] = torch.cosine_similarity(model(**batch).pooler_output, base).min().item()
    assert cosines["sep"] > 0.99 > cosines["normal"], cosines


def test_scirepeval_ctrl_reads_a_mean_pooling_base_by_its_mean():
    from sciembed.training.recipes import RECIPES

    recipe = RECIPES["scirepeval-ctrl"]
    in_unit_vectors = recipe.resolve(unit_vectors=True)
    assert in_unit_vectors["model"]["text_pooling"] == "mean"
    assert in_unit_vectors["loss"]["proximity"] == "mnr"  # chosen on validation queries over the paper's triplets
    assert in_unit_vectors["model"]["control_code_init"] == "sep"
    paper = recipe.resolve()
    assert "text_pooling" not in paper["model"]  # the paper's code embedding from a [CLS]-read base
    assert "control_code_init" not in paper["model"]  # the paper's random code rows
    assert paper["loss"].get("proximity", "triplet") == "triplet" and paper["loss"]["margin"] == 1.0


class ControlCodeTester(FamilyTester):
    """The control-code model, one selection per format."""

    family = "control_code"
    variants = (Variant("default", selections=tuple({"task_format": name} for name in CODES)),)
    config_example = dict(
        default_task_format="classification",
        control_code_token_ids={"proximity": 7},
        text_pooling="mean",
        control_code_init="sep",
    )
    dynamo_exports = False  # the forward branches on the data, which torch.export cannot trace

    def start(self, bert, tokenizer, model, selection) -> Start:
        """Inserting the code equals SciRepEval's input, f"{code} {text}" through the tokenizer, in a BertModel."""
        code = CODES[selection["task_format"]]
        reference = tokenizer([f"{code} {text}" for text in CONTRACT_TEXTS], padding=True, return_tensors="pt")
        twin = copy.deepcopy(bert)
        twin.resize_token_embeddings(model.config.vocab_size, mean_resizing=False)
        missing, unexpected = twin.load_state_dict(model.state_dict(), strict=False)
        assert not unexpected and all(key.startswith("pooler.") for key in missing)
        expected = twin(**reference).last_hidden_state
        return Start(expected, reference["attention_mask"].bool(), expected[:, 1])


class TestControlCodeContract(FamilyContract):
    tester = ControlCodeTester()
