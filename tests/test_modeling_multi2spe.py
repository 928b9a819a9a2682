"""Multi2SPEModel (modeling/multi2spe): built from BERT, identity at initialisation where the paper says
so, and the K CLS tokens inserted by the model; the family contract (``family_contract.py``) at the end."""

from __future__ import annotations

import copy

import pytest
import torch
from family_contract import TEXTS, FamilyContract, FamilyTester, Start
from transformers import AutoTokenizer, BertConfig, BertModel

from sciembed.modeling.multi2spe import Multi2SPEConfig, Multi2SPEModel

K = 3  # the default number of CLS tokens


@pytest.fixture()
def tokenizer(tiny_bert):
    """A fresh tokenizer of the tiny BERT (from_bert adds tokens to it in place)."""
    return AutoTokenizer.from_pretrained(tiny_bert)


def random_bert(tiny_bert, layers: int = 4, attn_implementation: str = "sdpa") -> BertModel:
    """A random BERT with the tiny vocabulary and ``layers`` layers, so that intermediate linear layers exist."""
    config = BertConfig.from_pretrained(tiny_bert, num_hidden_layers=layers, attn_implementation=attn_implementation)
    torch.manual_seed(1)
    return BertModel(config).eval()


def batch(tokenizer, texts=("garbage collection of list structure", "query join")) -> dict[str, torch.Tensor]:
    return dict(tokenizer(list(texts), padding=True, return_tensors="pt"))


def with_vocabulary_of(bert: BertModel, model: Multi2SPEModel) -> BertModel:
    """``bert`` with the word embeddings of ``model`` (which holds rows for the added CLS tokens)."""
    bert.set_input_embeddings(copy.deepcopy(model.get_input_embeddings()))
    return bert


def extended(features: dict[str, torch.Tensor], extra_ids: list[int]) -> dict[str, torch.Tensor]:
    """What a tokenizer would produce with the extra CLS tokens written after [CLS] (for a plain BertModel)."""
    ids, mask = features["input_ids"], features["attention_mask"]
    extra = torch.tensor(extra_ids).expand(ids.shape[0], -1)
    return {
        "input_ids": torch.cat([ids[:, :1], extra, ids[:, 1:]], dim=1),
        "attention_mask": torch.cat([mask[:, :1], torch.ones_like(extra), mask[:, 1:]], dim=1),
    }


def test_from_tiny_bert_copies_weights_and_adds_cls_tokens(tiny_bert, tokenizer):
    tokenizer_size = len(tokenizer)
    model = Multi2SPEModel.from_bert(tiny_bert, tokenizer=tokenizer)
    bert = BertModel.from_pretrained(tiny_bert)

    assert isinstance(model.config, Multi2SPEConfig) and model.config.to_dict()["model_type"] == "multi2spe"
    # The tiny vocabulary has no [unused*] tokens: [CLS1], [CLS2] are added to the caller's tokenizer.
    added = model.config.extra_cls_token_ids
    assert (
        tokenizer.convert_ids_to_tokens(added) == ["[CLS1]", "[CLS2]"] and tokenizer.tokenize("[CLS1]x")[0] == "[CLS1]"
    )
    assert added == [tokenizer_size, tokenizer_size + 1] and len(tokenizer) == tokenizer_size + 2
    words, pretrained = model.embeddings.word_embeddings.weight, bert.embeddings.word_embeddings.weight
    assert model.config.vocab_size == words.shape[0] == max(pretrained.shape[0], max(added) + 1)
    kept = [i for i in range(pretrained.shape[0]) if i not in added]
    assert torch.equal(words[kept], pretrained[kept])
    assert torch.equal(words[added], pretrained[tokenizer.cls_token_id].expand(2, -1))

    ours, theirs = model.state_dict(), bert.state_dict()
    assert {k for k in ours if not k.startswith("encoder.cls_linear.")} == {
        k for k in theirs if not k.startswith("pooler.")
    }
    for key in (
        "embeddings.position_embeddings.weight",
        "encoder.layer.0.attention.self.query.weight",
        "encoder.layer.1.output.LayerNorm.bias",
    ):
        assert torch.equal(ours[key], theirs[key]), key
    assert model.config.get_linear_layers() == [1, 2] and sorted(model.encoder.cls_linear) == ["1", "2"]
    assert not model.training


@pytest.mark.slow
def test_from_embedded_minilm_uses_unused_tokens():
    import sciembed

    path = sciembed.default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    vocab_size = len(tokenizer)
    model = Multi2SPEModel.from_bert(path, tokenizer=tokenizer)
    bert = BertModel.from_pretrained(path)

    assert model.config.extra_cls_token_ids == tokenizer.convert_tokens_to_ids(["[unused1]", "[unused2]"])
    assert len(tokenizer) == vocab_size and model.config.vocab_size == bert.config.vocab_size == 30522
    assert model.config.get_linear_layers() == [2, 4, 6]  # 4, 8, 12 of a 12-layer model, scaled to 6 layers
    ours, theirs = model.state_dict(), bert.state_dict()
    for key in ("encoder.layer.0.attention.self.key.weight", "encoder.layer.5.output.dense.weight"):
        assert torch.equal(ours[key], theirs[key]), key
    # initialization="base" seeds the [unused*] rows it takes with [CLS]; every other row is BERT's.
    words, extra = ours["embeddings.word_embeddings.weight"], model.config.extra_cls_token_ids
    kept = [i for i in range(len(words)) if i not in extra]
    assert torch.equal(words[kept], theirs["embeddings.word_embeddings.weight"][kept])
    assert torch.equal(words[extra], words[tokenizer.cls_token_id].expand(K - 1, -1))


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("options", [{}, {"reparameterize": False}])
def test_intermediate_linear_layers_are_the_identity_at_init(tiny_bert, tokenizer, attn_implementation, options):
    """The default (and the unre-parameterised variant) leave the pretrained encoder's hidden states
    unchanged up to the last layer; only the randomly initialised linear layers after the last layer move the
    CLS outputs."""
    bert = random_bert(tiny_bert, attn_implementation=attn_implementation)
    model = Multi2SPEModel.from_bert(bert, tokenizer=tokenizer, initialization="paper", **options)
    assert model.config.get_linear_layers() == [1, 3, 4] and model.config._attn_implementation == attn_implementation
    for layer in ("1", "3"):
        assert torch.equal(model.encoder.cls_linear[layer].effective_weight(), torch.eye(32).expand(K, -1, -1))

    features = batch(tokenizer)
    with torch.no_grad():
        ours = model(**features, output_hidden_states=True)
        reference = with_vocabulary_of(bert, model)
        theirs = reference(**extended(features, model.config.extra_cls_token_ids), output_hidden_states=True)
    for layer in range(4):  # embeddings and the outputs of layers 1..3, linear layers included
        torch.testing.assert_close(ours.hidden_states[layer], theirs.hidden_states[layer], atol=1e-6, rtol=0)
    torch.testing.assert_close(ours.last_hidden_state[:, K:], theirs.last_hidden_state[:, K:], atol=1e-6, rtol=0)
    assert not torch.allclose(ours.last_hidden_state[:, :K], theirs.last_hidden_state[:, :K], atol=1e-3)


def test_literal_reparameterization_gives_zero_weights_at_init(tiny_bert, tokenizer):
    """Equation (1) as printed (and as the authors' code computes it): identical identity inits cancel."""
    bert = random_bert(tiny_bert)
    model = Multi2SPEModel.from_bert(
        bert, tokenizer=tokenizer, initialization="paper", reparameterization_init="literal"
    )
    for layer in ("1", "3"):
        assert torch.equal(model.encoder.cls_linear[layer].weight, torch.eye(32).expand(K, -1, -1))
        assert not model.encoder.cls_linear[layer].effective_weight().any()

    features = batch(tokenizer)
    with torch.no_grad():
        ours = model(**features, output_hidden_states=True)
        reference = with_vocabulary_of(bert, model)
        theirs = reference(**extended(features, model.config.extra_cls_token_ids), output_hidden_states=True)
    assert not ours.hidden_states[1][:, :K].any()  # the CLS states after layer 1 are the zero biases
    torch.testing.assert_close(ours.hidden_states[1][:, K:], theirs.hidden_states[1][:, K:], atol=1e-6, rtol=0)


@pytest.mark.parametrize("reparameterize", [True, False])
def test_reparameterization_removes_the_shared_gradient(tiny_bert, tokenizer, reparameterize):
    """With equation (1) the gradients of W_{l,1..K} sum to zero: no update moves all K layers alike."""
    model = Multi2SPEModel.from_bert(
        random_bert(tiny_bert), tokenizer=tokenizer, initialization="paper", reparameterize=reparameterize
    )
    model(**batch(tokenizer)).pooler_output.pow(2).sum().backward()
    for layer in ("1", "3", "4"):
        grad = model.encoder.cls_linear[layer].weight.grad
        assert grad.abs().max() > 1e-6
        assert (grad.sum(dim=0).abs().max() < 1e-6) == reparameterize, layer


def test_outputs_sum_the_cls_embeddings_and_ignore_padding(tiny_bert, tokenizer):
    model = Multi2SPEModel.from_bert(tiny_bert, tokenizer=tokenizer, initialization="paper")
    texts = ("garbage collection of list structure", "query join")
    features = batch(tokenizer, texts)
    with torch.no_grad():
        output = model(**features)
        alone = [model(**batch(tokenizer, [text])) for text in texts]
        as_tuple = model(**features, return_dict=False)

    n = features["input_ids"].shape[1]
    assert output.last_hidden_state.shape == (2, n + K - 1, 32) and output.cls_embeddings.shape == (2, K, 32)
    torch.testing.assert_close(output.cls_embeddings, torch.tanh(output.last_hidden_state[:, :K]))
    torch.testing.assert_close(output.pooler_output, output.cls_embeddings.sum(dim=1))
    mask = features["attention_mask"]
    inserted = torch.ones(2, K - 1, dtype=mask.dtype)
    assert torch.equal(output.attention_mask, torch.cat([mask[:, :1], inserted, mask[:, 1:]], dim=1))
    for row, single in enumerate(alone):
        length = single.last_hidden_state.shape[1]
        torch.testing.assert_close(output.pooler_output[row], single.pooler_output[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(
            output.last_hidden_state[row, :length], single.last_hidden_state[0], atol=1e-5, rtol=0
        )
    assert len(as_tuple) == 4 and all(torch.equal(a, b) for a, b in zip(as_tuple, output.values()))


def test_inputs_embeds_position_and_token_type_ids_match_the_plain_call(tiny_bert, tokenizer):
    model = Multi2SPEModel.from_bert(tiny_bert, tokenizer=tokenizer)
    features = batch(tokenizer)
    ids, mask = features["input_ids"], features["attention_mask"]
    with torch.no_grad():
        plain = model(input_ids=ids, attention_mask=mask).last_hidden_state
        from_embeds = model(inputs_embeds=model.embeddings.word_embeddings(ids), attention_mask=mask).last_hidden_state
        explicit = model(
            input_ids=ids,
            attention_mask=mask,
            token_type_ids=torch.zeros_like(ids),
            position_ids=torch.arange(ids.shape[1]).expand_as(ids),
        ).last_hidden_state
        shifted = model(
            input_ids=ids, attention_mask=mask, position_ids=torch.arange(ids.shape[1]).expand_as(ids) + 1
        ).last_hidden_state
    torch.testing.assert_close(from_embeds, plain, atol=1e-6, rtol=0)
    torch.testing.assert_close(explicit, plain, atol=1e-6, rtol=0)
    assert not torch.allclose(shifted, plain, atol=1e-3)
    with pytest.raises(ValueError, match="exactly one"):
        model(input_ids=ids, inputs_embeds=model.embeddings.word_embeddings(ids))


def test_overlong_input_is_truncated_keeping_its_final_token(tiny_bert, tokenizer):
    """64 positions (the tiny model's limit) + 2 inserted tokens: the two tokens before [SEP] are dropped."""
    model = Multi2SPEModel.from_bert(tiny_bert, tokenizer=tokenizer, initialization="paper")
    limit = model.config.max_position_embeddings
    words = torch.tensor(tokenizer.convert_tokens_to_ids(["graph", "citation"] * 31))
    cls, sep = torch.tensor([tokenizer.cls_token_id]), torch.tensor([tokenizer.sep_token_id])
    long_row = torch.cat([cls, words, sep])  # exactly `limit` tokens
    short = batch(tokenizer, ["query join"])
    padded_short = torch.nn.functional.pad(short["input_ids"][0], (0, limit - short["input_ids"].shape[1]))
    ids = torch.stack([long_row, padded_short])
    mask = (ids != tokenizer.pad_token_id).long()
    with torch.no_grad():
        output = model(input_ids=ids, attention_mask=mask)
        kept = model(input_ids=torch.cat([cls, words[: limit - K - 1], sep])[None])
        short_alone = model(**short)
    assert output.last_hidden_state.shape[1] == output.attention_mask.shape[1] == limit
    torch.testing.assert_close(output.last_hidden_state[0], kept.last_hidden_state[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(output.pooler_output[1], short_alone.pooler_output[0], atol=1e-5, rtol=0)


def test_ablations_no_linear_layer_injection_and_a_single_cls(tiny_bert, tokenizer):
    bert = BertModel.from_pretrained(tiny_bert)
    features = batch(tokenizer)
    none = Multi2SPEModel.from_bert(tiny_bert, tokenizer=tokenizer, initialization="paper", linear_layers=[])
    single = Multi2SPEModel.from_bert(
        tiny_bert, tokenizer=tokenizer, initialization="paper", num_cls_tokens=1, linear_layers=[]
    )
    assert len(none.encoder.cls_linear) == 0 and single.config.extra_cls_token_ids == []
    with torch.no_grad():
        theirs = with_vocabulary_of(bert, none)(**extended(features, none.config.extra_cls_token_ids))
        plain = bert(**features)
        ours = none(**features)
        one = single(**features)
    torch.testing.assert_close(ours.last_hidden_state, theirs.last_hidden_state, atol=1e-6, rtol=0)
    torch.testing.assert_close(ours.pooler_output, theirs.last_hidden_state[:, :K].sum(dim=1), atol=1e-6, rtol=0)
    torch.testing.assert_close(one.pooler_output, plain.last_hidden_state[:, 0], atol=1e-6, rtol=0)  # SPECTER's [CLS]


def test_config_defaults_and_validation():
    for depth, layers in ((12, [4, 8, 12]), (6, [2, 4, 6]), (4, [1, 3, 4]), (2, [1, 2]), (1, [1])):
        assert Multi2SPEConfig(num_hidden_layers=depth).get_linear_layers() == layers
    with pytest.raises(ValueError, match="reparameterization_init"):
        Multi2SPEConfig(reparameterization_init="zero")
    with pytest.raises(ValueError, match="linear_layers"):
        Multi2SPEConfig(num_hidden_layers=2, linear_layers=[3])
    with pytest.raises(ValueError, match="extra_cls_token_ids"):
        Multi2SPEConfig(num_cls_tokens=3, extra_cls_token_ids=[5])
    with pytest.raises(ValueError, match="from_bert"):
        Multi2SPEModel(Multi2SPEConfig(num_hidden_layers=1, hidden_size=8, num_attention_heads=2, intermediate_size=8))


def test_the_paper_s_initialization_does_not_start_at_the_base(tiny_bert, tokenizer):
    """initialization="base" is the default and starts at the base (the family contract); the paper's does not."""
    bert = random_bert(tiny_bert)
    model = Multi2SPEModel.from_bert(bert, tokenizer=tokenizer)
    assert (
        model.config.initialization == "base"
        and model.config.cls_activation is None
        and model.num_inserted_tokens == 0
    )
    features = batch(tokenizer)
    with torch.no_grad():
        base = bert(**features).last_hidden_state
        paper = Multi2SPEModel.from_bert(
            random_bert(tiny_bert), tokenizer=AutoTokenizer.from_pretrained(tiny_bert), initialization="paper"
        )(**features)
    assert not torch.allclose(paper.pooler_output / K, base[:, 0], atol=1e-2)


@pytest.mark.parametrize("k", [K, 1])
def test_mean_text_pooling_starts_at_the_mean_pooling_base_and_trains_the_cls_tokens(tiny_bert, tokenizer, k):
    """text_pooling="mean" with initialization="base": at step 0 each c_k is 1/K of the base's mean over [CLS] and
    the text (sentence-transformers' mean pooling, padding excluded), so Σ_k c_k is that embedding; the last
    linear layers start at zero and take gradient, so the CLS tokens add to it once trained."""
    bert = random_bert(tiny_bert)
    model = Multi2SPEModel.from_bert(bert, tokenizer=tokenizer, num_cls_tokens=k, text_pooling="mean")
    features = batch(tokenizer)
    with torch.no_grad():
        base = with_vocabulary_of(bert, model)(**features).last_hidden_state
        output = model(**features)
    mask = features["attention_mask"][..., None].float()
    mean_pooled = (base * mask).sum(1) / mask.sum(1)
    torch.testing.assert_close(output.pooler_output, mean_pooled, atol=1e-5, rtol=0)
    torch.testing.assert_close(output.cls_embeddings, (mean_pooled / k)[:, None].expand(-1, k, -1), atol=1e-5, rtol=0)

    model.train()
    model(**features).pooler_output.pow(2).sum().backward()
    last = model.encoder.cls_linear[str(model.config.num_hidden_layers)]
    assert last.weight.grad.abs().sum() > 0 and last.bias.grad.abs().sum() > 0


def test_mean_text_pooling_needs_a_last_linear_layer_to_start_at_the_base():
    with pytest.raises(ValueError, match="linear_layers must include it"):
        Multi2SPEConfig(num_hidden_layers=4, linear_layers=[2], text_pooling="mean")
    with pytest.raises(ValueError, match="text_pooling must be one of"):
        Multi2SPEConfig(text_pooling="max")


class Multi2SPETester(FamilyTester):
    """Multi²SPE on a 4-layer base, so that intermediate linear layers exist."""

    family = "multi2spe"
    base_layers = 4
    config_example = dict(
        num_hidden_layers=2,
        extra_cls_token_ids=[5, 6],
        linear_layers=[2],
        reparameterize=False,
        reparameterization_init="literal",
        text_pooling="mean",
    )

    def start(self, bert, tokenizer, model, selection) -> Start:
        """initialization="base": every CLS output is the base's [CLS] output, the text's states are the base's,
        so the paper embedding is K times the base's (the same ranking, the same unit vector)."""
        features = dict(tokenizer(TEXTS, padding=True, return_tensors="pt"))
        base = bert(**features).last_hidden_state
        mask = features["attention_mask"].bool()
        states = torch.cat([base[:, :1].expand(-1, K, -1), base[:, 1:]], dim=1)
        return Start(states, torch.cat([mask[:, :1].expand(-1, K), mask[:, 1:]], dim=1), K * base[:, 0])


class TestMulti2SPEContract(FamilyContract):
    tester = Multi2SPETester()

    def test_facets_give_pytorch_s_vectors_on_onnx_and_openvino(self, built, tmp_path):
        """The K per-CLS embeddings (facets=True) export too, one (K, hidden) array per paper."""
        pytest.importorskip("onnxruntime", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
        pytest.importorskip("openvino", reason="the openvino extra is not installed: pip install -e '.[openvino]'")
        import test_onnx_backend
        import test_openvino_backend

        for backend in (test_onnx_backend, test_openvino_backend):
            pytorch, exported = backend.both(built[0].folder, tmp_path / backend.__name__, facets=True)
            assert exported.encode(test_onnx_backend.TEXTS, show_progress_bar=False).ndim == 3
            test_onnx_backend.assert_same_vectors(pytorch, exported)
