"""SPECTROID's MLP classification heads (Capuano et al.) on a plain BERT encoder and on every family:
head shapes, BertForSequenceClassification's losses, pretrained weights kept, one saved model that loads
as remote code without sciembed (and whose encoder AutoModel loads alone), and training that learns; SPECTROID's
family contract (``family_contract.py``) at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from family_contract import TEXTS as CONTRACT_TEXTS
from family_contract import FamilyContract, FamilyTester, Start
from torch import nn
from torch.nn import functional as F
from transformers import AutoModel, AutoModelForSequenceClassification, BertModel

from sciembed import default_model_path
from sciembed.families import FAMILIES, REGISTRY, classifier_from_bert, family_of
from sciembed.modeling.multi2spe import Multi2SPEForSequenceClassification, Multi2SPEModel
from sciembed.modeling.spectroid import SPECTROID_HEADS, SpectroidForSequenceClassification, SpectroidModel

TEXTS = ["garbage collection of list structure", "query join index", "compiler syntax translation", "matrix"]

# Case -> (options for classifier_from_bert, forward keyword arguments for a batch of len(TEXTS)).
CASES = {
    "spectroid": ({}, {}),
    "multi2spe": ({}, {}),
    "control_code": ({}, {"task_format": "classification"}),
    "moe_bert": ({"routing": "enforced", "domains": ["cs", "bio"]}, {"domain_ids": [0, 1, 1, 0]}),
}

# The Linear layers (in, out) of each head on the tiny BERT (hidden 32) with 3 labels.
LAYERS = {
    "CH1": [(32, 3)],
    "CH2": [(32, 64), (64, 3)],
    "CH3": [(32, 64)] + [(64, 64)] * 5 + [(64, 3)],
}


def test_every_family_has_a_classifier():
    assert set(CASES) == set(REGISTRY) == {"spectroid", *FAMILIES}


def build(base, family: str, head="CH2", num_labels: int = 3, **options):
    torch.manual_seed(0)
    options = {**CASES[family][0], **options}
    model, tokenizer = classifier_from_bert(family, base, head=head, num_labels=num_labels, **options)
    return model.eval(), tokenizer


def inputs(tokenizer, family: str, texts=TEXTS) -> dict:
    features = dict(tokenizer(list(texts), padding=True, return_tensors="pt"))
    extra = {k: torch.tensor(v) if k == "domain_ids" else v for k, v in CASES[family][1].items()}
    return {**features, **extra}


@pytest.mark.parametrize("family", list(CASES))
@pytest.mark.parametrize("head", list(SPECTROID_HEADS))
def test_head_layers_and_relu_mlp(tiny_bert, family, head):
    model, tokenizer = build(tiny_bert, family, head=head)
    linears = [m for m in model.classifier.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == LAYERS[head]
    assert model.config.classifier_hidden_sizes == list(SPECTROID_HEADS[head])

    batch = inputs(tokenizer, family)
    with torch.no_grad():
        output = model(**batch)
        # By hand: the encoder's paper embedding through Linear + ReLU layers and a final Linear.
        hidden = model.base_model(**batch).pooler_output
        for layer in linears[:-1]:
            hidden = torch.relu(layer(hidden))
        expected = linears[-1](hidden)
    assert output.logits.shape == (len(TEXTS), 3)
    torch.testing.assert_close(output.logits, expected, rtol=0, atol=1e-6)


def test_head_initialisation(tiny_bert):
    """He init for the hidden layers (so CH3's signal does not vanish), BERT's N(0, 0.02) for the output layer."""
    model, _ = build(tiny_bert, "spectroid", head=[256, 256])
    first, second = model.classifier.hidden
    assert abs(first.weight.std().item() - (2 / 32) ** 0.5) < 0.03
    assert abs(second.weight.std().item() - (2 / 256) ** 0.5) < 0.01
    assert abs(model.classifier.out_proj.weight.std().item() - 0.02) < 0.005
    assert not any(layer.bias.any() for layer in (first, second, model.classifier.out_proj))


def test_head_names_and_options_are_checked(tiny_bert):
    with pytest.raises(ValueError, match=r"unknown classification head 'CH4'; valid names: CH1, CH2, CH3"):
        SpectroidForSequenceClassification.from_bert(tiny_bert, head="CH4")
    with pytest.raises(TypeError, match="give the head as head="):
        Multi2SPEForSequenceClassification.from_bert(tiny_bert, classifier_hidden_sizes=[64])
    with pytest.raises(ValueError, match="classifier_hidden_sizes must be positive"):
        SpectroidForSequenceClassification.from_bert(tiny_bert, head=[64, 0])
    with pytest.raises(
        ValueError,
        match="unknown classifier family 'specter'; choose one of multi2spe, control_code, moe_bert, spectroid",
    ):
        classifier_from_bert("specter", tiny_bert)
    with pytest.raises(ValueError, match="unknown spectroid option"):
        classifier_from_bert("spectroid", tiny_bert, num_lables=3)


@pytest.mark.parametrize("family", list(CASES))
def test_loss_is_cross_entropy(tiny_bert, family):
    model, tokenizer = build(tiny_bert, family)
    labels = torch.tensor([0, 2, 1, 2])
    output = model(**inputs(tokenizer, family), labels=labels)
    assert model.config.problem_type == "single_label_classification"
    torch.testing.assert_close(output.loss, F.cross_entropy(output.logits, labels), rtol=0, atol=1e-7)
    loss, logits = model(**inputs(tokenizer, family), labels=labels, return_dict=False)[:2]
    torch.testing.assert_close((loss, logits), (output.loss, output.logits), rtol=0, atol=0)


def test_multi_label_and_regression_losses(tiny_bert):
    model, tokenizer = build(tiny_bert, "spectroid", problem_type="multi_label_classification")
    multi_hot = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    output = model(**inputs(tokenizer, "spectroid"), labels=multi_hot)
    torch.testing.assert_close(output.loss, F.binary_cross_entropy_with_logits(output.logits, multi_hot))

    model, tokenizer = build(tiny_bert, "moe_bert", num_labels=1)  # one label: regression, as BERT infers it
    targets = torch.tensor([0.5, -1.0, 2.0, 0.0])
    output = model(**inputs(tokenizer, "moe_bert"), labels=targets)
    assert model.config.problem_type == "regression"
    torch.testing.assert_close(output.loss, F.mse_loss(output.logits.squeeze(-1), targets))


@pytest.mark.parametrize("family", list(CASES))
def test_encoder_keeps_the_pretrained_weights(tiny_bert, family):
    model, _ = build(tiny_bert, family)
    base = BertModel.from_pretrained(tiny_bert, add_pooling_layer=False).state_dict()
    encoder = model.base_model.state_dict()
    if family == "spectroid":
        assert isinstance(model.base_model, SpectroidModel) and encoder.keys() == base.keys()
    # Families may add word-embedding rows (compare the pretrained ones) and MoE moves the MLPs into experts.
    shared = [key for key in base if key in encoder]
    assert len(shared) >= len(base) // 2
    for key in shared:
        assert torch.equal(encoder[key][: base[key].shape[0]], base[key]), key


def test_spectroid_is_embedded_as_a_plain_bert(tiny_bert):
    """Its encoder embeds as the base's [CLS] (the family contract); sciembed sees a plain BERT."""
    model, _ = build(tiny_bert, "spectroid")
    assert family_of(model) is None  # a plain BERT encoder: sciembed embeds it with [CLS] pooling


REMOTE_CHECK = """
import json, sys
sys.modules["sciembed"] = None  # sciembed must not be importable here
import numpy as np, torch
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer
texts, cases = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for folder, kwargs, out in cases:
    model = AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True).eval()
    assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
    batch = AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="pt")
    extra = {k: torch.tensor(v) if k == "domain_ids" else v for k, v in kwargs.items()}
    with torch.no_grad():
        logits = model(**batch, **extra).logits
    np.save(out, logits.numpy())
    encoder = AutoModel.from_pretrained(folder, trust_remote_code=True)
    expected = model.base_model.state_dict()
    assert type(encoder).__name__ == type(model.base_model).__name__, type(encoder)
    assert encoder.state_dict().keys() == expected.keys()
    assert all(torch.equal(value, expected[key]) for key, value in encoder.state_dict().items()), folder
"""


@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory):
    """Every classifier (CH2, 3 labels) saved with its tokenizer: family -> (model, tokenizer, folder)."""
    result = {}
    for family in CASES:
        model, tokenizer = build(tiny_bert, family)
        folder = tmp_path_factory.mktemp(f"{family}-classifier")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        result[family] = (model, tokenizer, folder)
    return result


def test_saved_folder_maps_the_auto_classes(saved):
    for family, (_, _, folder) in saved.items():
        auto_map = json.loads((folder / "config.json").read_text())["auto_map"]
        assert set(auto_map) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}
        assert auto_map["AutoModelForSequenceClassification"].startswith(f"modeling_{family}.")
        assert (folder / f"modeling_{family}.py").is_file() and (folder / f"configuration_{family}.py").is_file()


def test_reload_gives_the_same_logits_and_auto_model_the_encoder(saved):
    for family, (model, tokenizer, folder) in saved.items():
        batch = inputs(tokenizer, family)
        loaded = AutoModelForSequenceClassification.from_pretrained(folder).eval()  # registered: no remote code
        assert type(loaded) is type(model)
        with torch.no_grad():
            torch.testing.assert_close(loaded(**batch).logits, model(**batch).logits, rtol=0, atol=0)
        encoder = AutoModel.from_pretrained(folder)
        assert type(encoder) is type(model.base_model)
        expected = model.base_model.state_dict()
        assert encoder.state_dict().keys() == expected.keys()
        assert all(torch.equal(value, expected[key]) for key, value in encoder.state_dict().items()), family


def test_reload_as_remote_code_without_sciembed(saved, tmp_path):
    cases, expected = [], {}
    for family, (model, tokenizer, folder) in saved.items():
        with torch.no_grad():
            expected[family] = model(**inputs(tokenizer, family)).logits.numpy()
        cases.append([str(folder), CASES[family][1], str(tmp_path / f"{family}.npy")])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    result = subprocess.run(
        [sys.executable, "-c", REMOTE_CHECK, json.dumps(TEXTS), json.dumps(cases)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for family, logits in expected.items():
        np.testing.assert_array_equal(np.load(tmp_path / f"{family}.npy"), logits)


def test_from_pretrained_of_a_saved_family_encoder(tiny_bert, tmp_path):
    """The documented way from a saved family encoder: its weights under the base-model prefix, a new head."""
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    encoder = Multi2SPEModel.from_bert(tiny_bert, tokenizer=AutoTokenizer.from_pretrained(tiny_bert))
    encoder.save_pretrained(tmp_path)
    model = Multi2SPEForSequenceClassification.from_pretrained(tmp_path, num_labels=4, classifier_hidden_sizes=[64])
    linears = [m for m in model.classifier.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(32, 64), (64, 4)]
    assert abs(model.classifier.hidden[0].weight.std().item() - (2 / 32) ** 0.5) < 0.03  # the head's own init ran
    expected = encoder.state_dict()
    assert all(torch.equal(value, expected[key]) for key, value in model.multi2spe.state_dict().items())


@pytest.mark.parametrize("family", list(CASES))
def test_the_loss_trains_encoder_and_head(tiny_bert, family):
    """End-to-end: the classification loss reaches the encoder's first weights as well as the head."""
    model, tokenizer = build(tiny_bert, family)
    model(**inputs(tokenizer, family), labels=torch.tensor([0, 2, 1, 2])).loss.backward()
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0
    assert all(parameter.grad.abs().sum() > 0 for parameter in model.classifier.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("head", ["CH1", "CH3"])
def test_sgd_steps_reduce_the_loss(head):
    """SPECTROID's fine-tuning of a pretrained encoder (the embedded MiniLM; a random tiny BERT's [CLS] states
    hardly depend on the input) on a separable toy problem: storage papers (0) versus query papers (1)."""
    model, tokenizer = build(default_model_path(), "spectroid", head=head, num_labels=2)
    texts = [
        "garbage collection memory",
        "storage list structure",
        "memory storage",
        "list garbage",
        "query database join",
        "index query",
        "database index join",
        "join query",
    ]
    labels = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    batch = inputs(tokenizer, "spectroid", texts)
    with torch.no_grad():
        before = model(**batch, labels=labels).loss.item()
    # lr 0.05 diverges within 10 steps for the six-layer CH3 from some initialisations (transformers 5 draws
    # them in another order than 4.57 did); 0.02 over 20 steps took CH3 to 4% of its starting loss.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    model.train()
    for _ in range(20):
        optimizer.zero_grad()
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        after = model(**batch, labels=labels).loss.item()
    assert after < 0.5 * before, (before, after)


def test_spectroid_mean_text_pooling_embeds_and_classifies_the_text_s_mean(tiny_bert, tmp_path):
    """text_pooling="mean" (the spectroid-heads recipe's for a mean-pooling base): the encoder's pooler_output and
    the head's input are the mean of the real tokens' final states; the default stays SPECTER's [CLS]; the setting
    survives a save and an AutoModel load of the encoder alone."""
    model, tokenizer = build(tiny_bert, "spectroid", text_pooling="mean")
    batch = inputs(tokenizer, "spectroid")
    mask = batch["attention_mask"].float()
    with torch.no_grad():
        encoded = model.bert(**batch)
        expected = (encoded.last_hidden_state * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        torch.testing.assert_close(encoded.pooler_output, expected, atol=1e-6, rtol=0)
        torch.testing.assert_close(model(**batch).logits, model.classifier(expected), atol=1e-6, rtol=0)
        as_tuple = model.bert(**batch, return_dict=False)
        torch.testing.assert_close(as_tuple[1], expected, atol=1e-6, rtol=0)
        paper, _ = build(tiny_bert, "spectroid")
        cls = paper.bert(**batch)
        torch.testing.assert_close(cls.pooler_output, cls.last_hidden_state[:, 0], atol=0, rtol=0)
    model.save_pretrained(tmp_path)
    encoder = AutoModel.from_pretrained(tmp_path, trust_remote_code=True).eval()
    with torch.no_grad():
        torch.testing.assert_close(encoder(**batch).pooler_output, expected, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="text_pooling must be one of"):
        build(tiny_bert, "spectroid", text_pooling="max")


def test_spectroid_heads_text_pooling_is_a_setting_and_the_run_embeds_as_its_head_reads():
    from sciembed.training.recipes import RECIPES
    from sciembed.training.run import _settings

    recipe = RECIPES["spectroid-heads"]
    assert "text_pooling" not in recipe.resolve()["model"]  # the paper's [CLS]
    # On MiniLM (mean pooling, unit vectors) the head reads the text's mean and the trained encoder embeds by it.
    settings, _ = _settings(recipe, default_model_path(), None)
    assert (settings["model"]["text_pooling"], settings["embedding"]["pooling"]) == ("mean", "mean")
    assert settings["embedding"]["normalize"] is True


class SpectroidTester(FamilyTester):
    """SPECTROID: a plain BERT encoder with [CLS] pooling under a CH2 head, saved as transformers models are."""

    family = "spectroid"
    config_example = dict(classifier_hidden_sizes=[64], text_pooling="mean", num_labels=3)
    auto_class = "AutoModelForSequenceClassification"
    output_names = ("logits",)

    def build(self, base, tokenizer, variant):
        return SpectroidForSequenceClassification.from_bert(base, head="CH2", num_labels=3, **variant.options)

    def save(self, model, tokenizer, folder):
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    def encoder(self, model):
        return model.bert

    def start(self, bert, tokenizer, model, selection) -> Start:
        """The encoder is the base itself: SPECTER's embedding is the final state of [CLS]."""
        features = dict(tokenizer(CONTRACT_TEXTS, padding=True, return_tensors="pt"))
        states = bert(**features).last_hidden_state
        return Start(states, features["attention_mask"].bool(), states[:, 0])


class TestSpectroidContract(FamilyContract):
    tester = SpectroidTester()
