"""MoEBertModel (modeling/moe_bert): built from BERT, and the three routing modes dispatching each expert only on
what is routed to it; the family contract (``family_contract.py``) at the end."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from family_contract import TEXTS as CONTRACT_TEXTS
from family_contract import FamilyContract, FamilyTester, Start, Variant
from helpers import PAPERS
from transformers import AutoTokenizer, BertConfig, BertModel, BertTokenizerFast

import sciembed
from sciembed.modeling.moe_bert import MoEBertConfig, MoEBertModel, MoEBertModelOutput

ROUTINGS = ("enforced", "sentence", "token")
DOMAIN_TOKENS = ["[CVD]", "[COPD]", "[CANCER]", "[AUTOIMMUNE]", "[PARASITIC]"]
TINY_SHAPE = dict(hidden_size=32, num_attention_heads=2, intermediate_size=37)
TINY = dict(vocab_size=50, num_hidden_layers=2, **TINY_SHAPE)
TEXTS = ("garbage collection of list structure in a time sharing system", "query join", "the compiler syntax")


@pytest.fixture(scope="module")
def tiny_base(tiny_bert, tmp_path_factory) -> Path:
    """A random 3-layer BERT ("middle" is layer 1) with the tiny BERT's tokenizer, saved to disk."""
    folder = tmp_path_factory.mktemp("moe-base")
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(1)
    config = BertConfig(vocab_size=len(tokenizer), num_hidden_layers=3, max_position_embeddings=64, **TINY_SHAPE)
    BertModel(config).save_pretrained(folder)
    return folder


@pytest.fixture()
def tokenizer(tiny_base):
    """A fresh tokenizer of the tiny BERT (from_bert adds the domain tokens to it in place)."""
    return AutoTokenizer.from_pretrained(tiny_base)


def random_bert(tiny_base, attn_implementation: str = "sdpa") -> BertModel:
    return BertModel.from_pretrained(tiny_base, attn_implementation=attn_implementation).eval()


def inputs(tokenizer, domains: list[int] | None = None, texts=TEXTS) -> dict[str, torch.Tensor]:
    """Padded features; with ``domains``, the domain tokens of those domain indices replace [CLS]."""
    features = dict(tokenizer(list(texts), padding=True, return_tensors="pt"))
    if domains is not None:
        tokens = [DOMAIN_TOKENS[d] for d in domains]
        features["input_ids"][:, 0] = torch.tensor(tokenizer.convert_tokens_to_ids(tokens))
    return features


def perturb(model: MoEBertModel, seed: int = 0) -> MoEBertModel:
    """Moves the new parameters (gates W3, b3 and routers) away from their initialisation, as training would."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".w3." in name or ".router." in name:
                parameter.normal_(1.0 if name.endswith("w3.bias") else 0.0, 0.5)
    return model


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1)


def test_config_defaults_and_validation():
    config = MoEBertConfig(num_hidden_layers=6)
    assert config.model_type == "moe_bert" and config.to_dict()["model_type"] == "moe_bert"
    assert config.domains == ["cvd", "copd", "cancer", "autoimmune", "parasitic"]
    assert config.domain_tokens == DOMAIN_TOKENS and config.num_experts == 5 and config.routing == "enforced"
    assert config.num_experts_per_tok == 2 and config.domain_token_ids is None
    assert config.moe_layer_indices() == [0, 1, 2, 3, 4, 5]
    assert MoEBertConfig(num_hidden_layers=6, moe_layers="middle").moe_layer_indices() == [3]
    assert MoEBertConfig(num_hidden_layers=6, moe_layers=[4, 1]).moe_layer_indices() == [1, 4]
    assert MoEBertConfig(domains=["cs", "bio"], domain_tokens=["[C]", "[B]"]).num_experts == 2
    assert MoEBertConfig(routing="token", domains=[], num_experts=8).num_experts == 8
    with pytest.raises(ValueError, match="routing"):
        MoEBertConfig(routing="random")
    with pytest.raises(ValueError, match="must equal the number of domains"):
        MoEBertConfig(num_experts=4)
    with pytest.raises(ValueError, match="num_experts_per_tok"):
        MoEBertConfig(routing="token", domains=["a", "b"], num_experts_per_tok=3)
    with pytest.raises(ValueError, match="moe_layers"):
        MoEBertConfig(num_hidden_layers=6, moe_layers=[6])
    with pytest.raises(ValueError, match="moe_layers"):
        MoEBertConfig(moe_layers="first")
    with pytest.raises(ValueError, match="at least 1"):
        MoEBertConfig(routing="sentence", domains=[])

    custom = MoEBertConfig(routing="token", num_experts_per_tok=1, moe_layers=[0], domain_token_ids=[5, 6, 7, 8, 9])
    # A config saved before the rename (with Mixtral's name for it now) reads its top_k as num_experts_per_tok.
    legacy = {key: value for key, value in custom.to_dict().items() if key != "num_experts_per_tok"}
    assert MoEBertConfig.from_dict({**legacy, "top_k": 1}).num_experts_per_tok == 1


def test_fresh_model_has_identity_gates_and_bert_keys():
    model = MoEBertModel(MoEBertConfig(routing="token", **TINY))
    config = model.config
    expert = model.encoder.layer[0].moe.experts[3]
    assert torch.equal(expert.w3.weight, torch.zeros_like(expert.w3.weight))
    assert torch.equal(expert.w3.bias, torch.ones_like(expert.w3.bias))
    assert 0 < expert.w1.weight.std() < 2 * config.initializer_range and torch.all(expert.w1.bias == 0)

    # A BertModel state dict (minus its pooler) loads under the same keys: only the MoE layers' MLP keys are
    # unexpected (they live in the experts) and only the experts and routers are missing.
    state = {k: v for k, v in BertModel(BertConfig(**TINY)).state_dict().items() if "pooler" not in k}
    missing, unexpected = model.load_state_dict(state, strict=False)
    moved = {
        f"encoder.layer.{i}.{block}.dense.{name}"
        for i in (0, 1)
        for block in ("intermediate", "output")
        for name in ("weight", "bias")
    }
    assert len(unexpected) == 8 and set(unexpected) == moved
    assert missing and all(".moe.experts." in k or ".moe.router." in k for k in missing)
    assert "encoder.layer.0.output.LayerNorm.weight" in model.state_dict()
    assert not any(k.startswith("pooler") for k in model.state_dict())


@pytest.mark.parametrize("moe_layers", ["all", "middle"])
def test_from_tiny_bert_copies_weights_and_adds_domain_tokens(tiny_base, tokenizer, moe_layers):
    size = len(tokenizer)
    model = MoEBertModel.from_bert(tiny_base, tokenizer=tokenizer, moe_layers=moe_layers, hidden_dropout_prob=0.05)
    bert = BertModel.from_pretrained(tiny_base)

    assert isinstance(model.config, MoEBertConfig) and model.config.hidden_dropout_prob == 0.05
    assert model.config.num_experts_per_tok == 2
    assert tokenizer.convert_ids_to_tokens(model.config.domain_token_ids) == DOMAIN_TOKENS
    assert model.config.domain_token_ids == list(range(size, size + 5)) and len(tokenizer) == size + 5
    assert (
        tokenizer.tokenize("[CVD]query")[0] == "[CVD]"
        and tokenizer.decode(tokenizer.convert_tokens_to_ids(["[CVD]"]), skip_special_tokens=True) == ""
    )
    words, pretrained = model.embeddings.word_embeddings.weight, bert.embeddings.word_embeddings.weight
    assert model.config.vocab_size == words.shape[0] == size + 5
    assert torch.equal(words[:size], pretrained)  # the base vocabulary had `size` rows
    assert torch.equal(words[size:], pretrained[tokenizer.cls_token_id].expand(5, -1))  # seeded from [CLS]

    moe_indices = [0, 1, 2] if moe_layers == "all" else [1]
    for i, (layer, base) in enumerate(zip(model.encoder.layer, bert.encoder.layer)):
        assert torch.equal(layer.attention.self.query.weight, base.attention.self.query.weight)
        assert torch.equal(layer.output.LayerNorm.weight, base.output.LayerNorm.weight)
        if i not in moe_indices:
            assert not hasattr(layer, "moe")
            assert torch.equal(layer.intermediate.dense.weight, base.intermediate.dense.weight)
            continue
        assert len(layer.moe.experts) == 5 and layer.moe.router is None  # enforced routing learns no router
        for expert in layer.moe.experts:
            assert torch.equal(expert.w1.weight, base.intermediate.dense.weight)
            assert torch.equal(expert.w1.bias, base.intermediate.dense.bias)
            assert torch.equal(expert.w2.weight, base.output.dense.weight)
            assert torch.equal(expert.w2.bias, base.output.dense.bias)
            assert torch.all(expert.w3.weight == 0) and torch.all(expert.w3.bias == 1)


def test_from_bert_instance_loads_tokenizer_and_keeps_known_token_rows(tiny_base):
    # Without a tokenizer, it is loaded from the model's name_or_path.
    model = MoEBertModel.from_bert(BertModel.from_pretrained(tiny_base), domains=["cs", "bio"])
    size = len(AutoTokenizer.from_pretrained(tiny_base))
    assert model.config.domain_token_ids == [size, size + 1] and model.config.domain_tokens == ["[CS]", "[BIO]"]
    assert model.config.num_experts == 2 and len(model.encoder.layer[0].moe.experts) == 2

    # A base that already has a trained row for a domain token keeps it; only new tokens are seeded.
    tokenizer = AutoTokenizer.from_pretrained(tiny_base)
    tokenizer.add_special_tokens({"additional_special_tokens": ["[CVD]"]})
    bert = BertModel.from_pretrained(tiny_base)
    bert.resize_token_embeddings(len(tokenizer))
    cvd = tokenizer.convert_tokens_to_ids("[CVD]")
    with torch.no_grad():
        bert.embeddings.word_embeddings.weight[cvd] = 3.0
    model = MoEBertModel.from_bert(bert, tokenizer=tokenizer)
    words = model.embeddings.word_embeddings.weight
    assert model.config.domain_token_ids[0] == cvd and torch.all(words[cvd] == 3.0)
    assert torch.equal(words[model.config.domain_token_ids[1]], words[tokenizer.cls_token_id])


def test_from_bert_rejects_other_models():
    with pytest.raises(TypeError, match="BertModel"):
        MoEBertModel.from_bert(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("moe_layers", ["all", "middle"])
@pytest.mark.parametrize("routing", ROUTINGS)
def test_output_fields_by_routing(tiny_base, tokenizer, routing, moe_layers):
    """The output's fields; what they equal at step 0 is the family contract's."""
    model = MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer, routing=routing, moe_layers=moe_layers)
    with torch.no_grad():
        output = model.eval()(**inputs(tokenizer, domains=[0, 3, 3]), output_hidden_states=True)

    assert isinstance(output, MoEBertModelOutput)
    assert output.pooler_output.shape == (3, 32)
    assert len(output.hidden_states) == 4 and torch.equal(output.hidden_states[-1], output.last_hidden_state)
    assert output.domain_ids.tolist() == [0, 3, 3]
    moe_count = 3 if moe_layers == "all" else 1
    if routing == "enforced":
        assert output.router_logits is None
    else:
        shape = (3, 5) if routing == "sentence" else (3, output.last_hidden_state.shape[1], 5)
        assert [tuple(logits.shape) for logits in output.router_logits] == [shape] * moe_count


def test_enforced_routing_by_domain_token_or_id(tiny_base, tokenizer):
    model = perturb(MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer)).eval()
    mixed = inputs(tokenizer, domains=[1, 4, 1])
    with torch.no_grad():
        by_token = model(**mixed)
        by_id = model(**inputs(tokenizer), domain_ids=torch.tensor([1, 4, 1]))
        other = model(**inputs(tokenizer), domain_ids=torch.tensor([2, 2, 2]))
        rows = [model(**{k: v[i : i + 1] for k, v in mixed.items()}) for i in range(3)]

    assert by_token.domain_ids.tolist() == [1, 4, 1] and by_id.domain_ids.tolist() == [1, 4, 1]
    # The domain token's row is still a copy of [CLS]: token and explicit id give the same routing.
    torch.testing.assert_close(by_token.pooler_output, by_id.pooler_output, atol=1e-6, rtol=0)
    # A mixed batch equals each input alone (rows dispatched to their own experts and put back in place).
    for i, row in enumerate(rows):
        torch.testing.assert_close(by_token.pooler_output[i : i + 1], row.pooler_output, atol=1e-5, rtol=0)
    # Experts differ once trained, so the domain matters.
    assert (other.pooler_output - by_id.pooler_output).abs().max() > 1e-3

    with pytest.raises(ValueError, match=r"\[CVD\].*\[PARASITIC\]"):
        model(**inputs(tokenizer))  # [CLS] and no domain_ids
    partly = inputs(tokenizer, domains=[0, 1, 2])
    partly["input_ids"][1, 0] = tokenizer.cls_token_id
    with pytest.raises(ValueError, match="domain token"):
        model(**partly)  # every input needs its domain
    with pytest.raises(ValueError, match="indices into config.domains"):
        model(**inputs(tokenizer), domain_ids=torch.tensor([0, 5, 1]))
    with pytest.raises(ValueError, match="shape"):
        model(**inputs(tokenizer), domain_ids=torch.tensor([0, 1]))


def dense_reference(moe, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Every expert on everything, combined with the renormalised top-k softmax weights (the routing by definition)."""
    expert_outputs = torch.stack([expert(hidden) for expert in moe.experts], dim=-2)  # (B, n, E, H)
    logits = moe.router(masked_mean(hidden, mask)).unsqueeze(1) if moe.routing == "sentence" else moe.router(hidden)
    probabilities = torch.softmax(logits, dim=-1)
    top = probabilities.topk(moe.top_k, dim=-1)
    weights = torch.zeros_like(probabilities).scatter(-1, top.indices, top.values / top.values.sum(-1, keepdim=True))
    return (weights.unsqueeze(-1) * expert_outputs).sum(dim=-2)


@pytest.mark.parametrize("routing", ["sentence", "token"])
def test_learned_routing_matches_dense_reference_and_runs_experts_sparsely(tiny_base, tokenizer, routing):
    options = dict(routing=routing, num_experts=4, domains=[])
    model = perturb(MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer, **options))
    moe = model.encoder.layer[0].moe
    torch.manual_seed(2)
    hidden = torch.randn(3, 7, 32)
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    rows_seen = []
    hooks = [e.register_forward_hook(lambda _m, args, _o: rows_seen.append(len(args[0]))) for e in moe.experts]
    with torch.no_grad():
        output, logits = moe(hidden, mask, None)
    for hook in hooks:
        hook.remove()
    with torch.no_grad():
        reference = dense_reference(moe, hidden, mask)

    torch.testing.assert_close(output, reference, atol=1e-5, rtol=0)
    # Each expert sees only what is routed to it: top_k (= 2) experts per sequence / per token in all.
    assert sum(rows_seen) == 2 * (3 if routing == "sentence" else 21) and 2 <= len(rows_seen) <= 4
    assert logits.shape == ((3, 4) if routing == "sentence" else (3, 7, 4))


def test_sentence_routing_ignores_padding(tiny_base, tokenizer):
    model = perturb(MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer, routing="sentence")).eval()
    with torch.no_grad():
        alone = model(**inputs(tokenizer, texts=["query join"]))
        padded = model(**inputs(tokenizer, texts=["query join", TEXTS[0]]))
    assert padded.router_logits[0].shape == (2, 5)
    torch.testing.assert_close(padded.router_logits[0][:1], alone.router_logits[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(padded.pooler_output[:1], alone.pooler_output, atol=1e-5, rtol=0)


def test_enforced_routing_runs_one_expert_per_input(tiny_base, tokenizer):
    model = MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer, moe_layers="middle").eval()
    rows_seen: dict[int, int] = {}
    for e, expert in enumerate(model.encoder.layer[1].moe.experts):
        expert.register_forward_hook(lambda _m, args, _o, e=e: rows_seen.__setitem__(e, args[0].shape[0]))
    with torch.no_grad():
        model(**inputs(tokenizer, domains=[2, 0, 2]))
    assert rows_seen == {0: 1, 2: 2}


def test_return_tuple_gradients_and_checkpointing(tiny_base, tokenizer):
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = MoEBertModel.from_bert(random_bert(tiny_base), tokenizer=tokenizer, routing="token", **no_dropout)
    features = inputs(tokenizer)
    model.eval()
    as_tuple = model(**features, return_dict=False)
    as_output = model(**features)
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 3  # last_hidden_state, pooler_output, router_logits
    assert torch.equal(as_tuple[0], as_output.last_hidden_state) and torch.equal(as_tuple[1], as_output.pooler_output)

    def gradients() -> dict[str, torch.Tensor]:
        model.zero_grad()
        output = model(**features)
        router_term = sum(logits.square().mean() for logits in output.router_logits)
        (output.pooler_output.square().sum() + router_term).backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    model.train()
    plain = gradients()
    assert plain["encoder.layer.1.moe.router.weight"].abs().sum() > 0
    assert plain["encoder.layer.0.moe.experts.0.w3.weight"].abs().sum() > 0
    model.gradient_checkpointing_enable()
    checkpointed = gradients()
    assert plain.keys() == checkpointed.keys()
    for name in plain:
        torch.testing.assert_close(checkpointed[name], plain[name], atol=1e-6, rtol=1e-5)


def test_duplicate_vocabulary_entries_are_reported(tiny_base, tmp_path, caplog):
    vocab = AutoTokenizer.from_pretrained(tiny_base).get_vocab()
    words = sorted(vocab, key=vocab.get)
    (tmp_path / "vocab.txt").write_text("\n".join([*words, words[-1]]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(tmp_path)
    MoEBertModel.from_bert(tiny_base, tokenizer=tokenizer)
    assert f"new token [CVD] the id {len(words)}, which it already uses for {words[-1]!r}" in caplog.text


@pytest.fixture(scope="module")
def minilm():
    """The embedded all-MiniLM-L6-v2 as a BertModel, its tokenizer, and its outputs on the PAPERS texts."""
    path = sciembed.default_model_path()
    bert = BertModel.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    texts = [sciembed.paper_text(paper, tokenizer.sep_token) for paper in PAPERS]
    features = dict(tokenizer(texts, padding=True, return_tensors="pt"))
    with torch.no_grad():
        reference = bert(**features).last_hidden_state
    return path, bert, features, reference


def assert_minilm_unchanged(model: MoEBertModel, features: dict[str, torch.Tensor], reference: torch.Tensor) -> None:
    """One paper per domain, its domain token in place of [CLS]: outputs equal the base model's."""
    ids = features["input_ids"].clone()
    ids[:, 0] = torch.tensor(model.config.domain_token_ids)
    with torch.no_grad():
        output = model(input_ids=ids, attention_mask=features["attention_mask"])
    mask = features["attention_mask"].bool()
    assert output.domain_ids.tolist() == [0, 1, 2, 3, 4]
    torch.testing.assert_close(output.last_hidden_state[mask], reference[mask], atol=1e-5, rtol=0)
    expected_pooled = masked_mean(reference, features["attention_mask"])
    torch.testing.assert_close(output.pooler_output, expected_pooled, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_from_embedded_minilm_path_copies_weights_and_keeps_outputs(minilm):
    """The default conversion (enforced routing, every layer) from the folder, sentence-transformers files and all."""
    path, bert, features, reference = minilm
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = MoEBertModel.from_bert(path, tokenizer=tokenizer)
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert model.config.domain_token_ids == list(range(30522, 30527)) and model.config.vocab_size == 30527
    assert tokenizer.convert_ids_to_tokens(1) == "[unused0]"  # the vocabulary is kept; the tokens are appended
    state, pretrained = model.state_dict(), bert.state_dict()
    words = "embeddings.word_embeddings.weight"
    assert torch.equal(state[words][:30522], pretrained[words])
    for key in ("encoder.layer.5.attention.self.value.weight", "encoder.layer.2.output.LayerNorm.bias"):
        assert torch.equal(state[key], pretrained[key])
    expert, dense = "encoder.layer.3.moe.experts.4.w2.weight", "encoder.layer.3.output.dense.weight"
    assert torch.equal(state[expert], pretrained[dense])
    assert_minilm_unchanged(model, features, reference)


@pytest.mark.slow
@pytest.mark.parametrize(
    "routing, moe_layers",
    [("enforced", "middle"), ("sentence", "all"), ("sentence", "middle"), ("token", "all"), ("token", "middle")],
)
def test_embedded_minilm_outputs_unchanged_at_initialisation(minilm, routing, moe_layers):
    path, bert, features, reference = minilm
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = MoEBertModel.from_bert(bert, tokenizer=tokenizer, routing=routing, moe_layers=moe_layers)
    assert_minilm_unchanged(model, features, reference)


def _variant(routing: str, moe_layers: str) -> Variant:
    """A two-domain MoE variant; enforced routing embeds once per domain."""
    selections = ({"domain": "cs"}, {"domain": "bio"}) if routing == "enforced" else ({},)
    options = {"routing": routing, "moe_layers": moe_layers, "domains": ["cs", "bio"]}
    return Variant(f"{routing}-{moe_layers}", options, selections)


class MoEBertTester(FamilyTester):
    """MoE BERT on a 3-layer base ("middle" is layer 1), in each routing."""

    family = "moe_bert"
    base_layers = 3
    variants = (_variant("enforced", "all"), _variant("sentence", "middle"), _variant("token", "middle"))
    start_variants = tuple(_variant(routing, layers) for routing in ROUTINGS for layers in ("all", "middle"))
    config_example = dict(routing="token", num_experts_per_tok=1, moe_layers=[0], domain_token_ids=[5, 6, 7, 8, 9])
    dynamo_exports = False  # the routing branches on the data, which torch.export cannot trace

    def inputs(self, model, tokenizer, selection):
        """The MoE paper's input under enforced routing: the domain token in place of [CLS]."""
        features = dict(tokenizer(CONTRACT_TEXTS, padding=True, return_tensors="pt"))
        if "domain" in selection:
            features["input_ids"][:, 0] = model.config.domain_token_ids[
                model.config.domains.index(selection["domain"])
            ]
        return features, {}

    def start(self, bert, tokenizer, model, selection) -> Start:
        """Every expert starts as the base's MLP and every domain token as [CLS]: the base's outputs, mean-pooled."""
        features = dict(tokenizer(CONTRACT_TEXTS, padding=True, return_tensors="pt"))
        states = bert(**features).last_hidden_state
        return Start(states, features["attention_mask"].bool(), masked_mean(states, features["attention_mask"]))


class TestMoEBertContract(FamilyContract):
    tester = MoEBertTester()
