"""The families inside sciembed: built from BERT, saved with sentence-transformers files, and embedded by
sciembed.encode, sentence-transformers and the CLI alike."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from helpers import PAPERS

import sciembed
from sciembed.cli import main
from sciembed.families import FAMILIES, REGISTRY, family_of, from_bert, save_pretrained
from sciembed.io import read_embeddings

# Case -> (family, options for from_bert, keyword arguments that select a format / domain at encode time).
CASES = {
    "multi2spe": ("multi2spe", {}, {}),
    "control_code": ("control_code", {}, {"task_format": "classification"}),
    "moe_enforced": ("moe_bert", {"routing": "enforced", "domains": ["cs", "bio"]}, {"domain": "bio"}),
    "moe_token": ("moe_bert", {"routing": "token", "moe_layers": "middle", "domains": ["cs", "bio"]}, {}),
}


def test_every_family_has_a_case():
    assert {family for family, _, _ in CASES.values()} == set(FAMILIES)


def test_every_family_has_a_contract():
    """Each registry family runs the shared contract (``family_contract.py``) through a test class of its own."""
    import importlib
    from pathlib import Path

    from family_contract import FamilyContract

    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if "(FamilyContract)" in path.read_text(encoding="utf-8"):
            importlib.import_module(path.stem)
    assert sorted(contract.tester.family for contract in FamilyContract.__subclasses__()) == sorted(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_registry_agrees_with_the_modeling_package_and_the_cards(name):
    """What the registry says of a family is what modeling/ registers with the Auto classes and ships, and
    what the cards can render and cite."""
    import re
    from pathlib import Path

    from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

    import sciembed.modeling

    family = REGISTRY[name]
    module = getattr(sciembed.modeling, name)
    config_class = AutoConfig.for_model(name).__class__
    assert config_class.model_type == name and module.__name__ == f"sciembed.modeling.{name}"
    assert AutoModelForSequenceClassification._model_mapping[config_class].__name__ == family.classifier_class
    if family.model_class is not None:
        assert AutoModel._model_mapping[config_class].__name__ == family.model_class
    folder = Path(sciembed.modeling.__file__).parent / name
    assert all((folder / file).is_file() for file in family.remote_code)
    cards = Path(__file__).resolve().parents[1] / "hub_cards"
    assert (cards / "model_families" / f"{name}.md").is_file()
    keys = set(re.findall(r"@\w+\{([^,]+),", (cards / "citations.bib").read_text(encoding="utf-8")))
    assert set(family.citations) <= keys


@pytest.fixture(scope="module", params=list(CASES))
def saved_family(request, tiny_bert, tmp_path_factory):
    family, options, encode_options = CASES[request.param]
    torch.manual_seed(0)
    model, tokenizer = from_bert(family, tiny_bert, **options)
    folder = save_pretrained(model, tokenizer, tmp_path_factory.mktemp(request.param))
    return family, model.eval(), tokenizer, folder, encode_options


def _single_forward(model, tokenizer, papers, encode_options):
    """Each paper alone through the model's forward, no padding: the reference embedding."""
    kwargs = {k: v for k, v in encode_options.items() if k == "task_format"}
    rows = []
    with torch.no_grad():
        for paper in papers:
            features = tokenizer(sciembed.paper_text(paper, tokenizer.sep_token), return_tensors="pt")
            if "domain" in encode_options:
                # The MoE paper's input: the domain token in place of [CLS].
                domain = model.config.domains.index(encode_options["domain"])
                features["input_ids"][0, 0] = model.config.domain_token_ids[domain]
            rows.append(model(**features, **kwargs).pooler_output[0])
    return torch.stack(rows).numpy()


def test_folder_has_transformers_and_sentence_transformers_files(saved_family):
    family, _, _, folder, _ = saved_family
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == family and "AutoModel" in config["auto_map"]
    assert (folder / f"modeling_{family}.py").is_file() and (folder / f"configuration_{family}.py").is_file()
    assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.bin"))
    assert (
        json.loads((folder / "sentence_bert_config.json").read_text())["modality_config"]["text"]["method_output_name"]
        == "pooler_output"
    )


def test_sentence_transformers_gives_the_same_vectors(saved_family):
    """Padding must not leak into the embedding even though some families return more positions than
    they were given (ENV.md: sentence-transformers' Pooling would pool padding)."""
    from sentence_transformers import SentenceTransformer

    family, model, tokenizer, folder, encode_options = saved_family
    if "domain" in encode_options:
        pytest.skip(
            "enforced MoE routing needs a domain, which SentenceTransformer.encode cannot pass; "
            "covered through sciembed.encode"
        )
    st = SentenceTransformer(str(folder), trust_remote_code=True, device="cpu")
    texts = [sciembed.paper_text(p, tokenizer.sep_token) for p in PAPERS]
    expected = sciembed.encode(folder, PAPERS, show_progress_bar=False)  # a control-code model's default format
    np.testing.assert_allclose(st.encode(texts, batch_size=2), expected, atol=1e-5, rtol=0)


def test_auto_model_loads_without_remote_code_once_registered(saved_family):
    from transformers import AutoModel

    family, model, _, folder, _ = saved_family
    loaded = AutoModel.from_pretrained(folder)  # no trust_remote_code: the local classes are registered
    assert family_of(loaded) == family and type(loaded).__module__.startswith("sciembed.modeling")


def test_cli_embeds_a_saved_family(saved_family, tmp_path):
    family, model, tokenizer, folder, encode_options = saved_family
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    output = tmp_path / "out.jsonl"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in encode_options.items()]
    assert (
        main(
            [
                "-q",
                "embed",
                "--model",
                str(folder),
                "--input",
                str(papers),
                "--output",
                str(output),
                "--no-progress",
                *flags,
            ]
        )
        == 0
    )
    ids, vectors = read_embeddings(output)
    assert ids == [p["paper_id"] for p in PAPERS]
    np.testing.assert_allclose(vectors, _single_forward(model, tokenizer, PAPERS, encode_options), atol=1e-5, rtol=0)


def test_options_are_checked(tiny_bert):
    with pytest.raises(ValueError, match="unknown multi2spe option"):
        from_bert("multi2spe", tiny_bert, num_cls_tokenz=4)
    with pytest.raises(ValueError, match="unknown model family 'specter'"):
        from_bert("specter", tiny_bert)


def test_format_and_domain_are_checked(saved_family):
    family, model, tokenizer, _, _ = saved_family
    if family != "control_code":
        with pytest.raises(ValueError, match="task_format is for control-code, format-adapter and PALs models"):
            sciembed.PaperEncoder(model, tokenizer, task_format="proximity")
    if family != "moe_bert":
        with pytest.raises(ValueError, match="domain is for mixture-of-experts models"):
            sciembed.PaperEncoder(model, tokenizer, domain="cs")
    else:
        with pytest.raises(ValueError, match="unknown domain 'physics'; this model knows cs, bio"):
            sciembed.PaperEncoder(model, tokenizer, domain="physics")


def test_default_length_leaves_room_for_inserted_tokens(saved_family):
    family, model, tokenizer, folder, _ = saved_family
    # Multi2SPE's default (initialization="base") puts its extra CLS tokens at [CLS]'s position.
    inserted = {"multi2spe": 0, "control_code": 1, "moe_bert": 0}[family]
    options = {"domain": model.config.domains[0]} if getattr(model.config, "routing", None) == "enforced" else {}
    assert sciembed.PaperEncoder(model, tokenizer, **options).max_length == 64 - inserted  # tiny_bert: 64 positions
    assert (
        sciembed.PaperEncoder.from_pretrained(folder, **options).max_length == 64 - inserted
    )  # through sentence-transformers


def test_cli_from_bert(tiny_bert, tmp_path, caplog):
    folder = tmp_path / "m2s"
    code = main(
        [
            "-q",
            "from-bert",
            "--family",
            "multi2spe",
            "--base",
            str(tiny_bert),
            "--output",
            str(folder),
            "--set",
            "num_cls_tokens=2",
            "--set",
            "linear_layers=[1]",
        ]
    )
    assert code == 0
    config = json.loads((folder / "config.json").read_text())
    assert (config["model_type"], config["num_cls_tokens"], config["linear_layers"]) == ("multi2spe", 2, [1])
    assert sciembed.encode(folder, PAPERS, show_progress_bar=False).shape == (len(PAPERS), 32)
    assert (
        main(
            [
                "from-bert",
                "--family",
                "multi2spe",
                "--base",
                str(tiny_bert),
                "--output",
                str(folder),
                "--set",
                "num_cls",
            ]
        )
        == 2
    )
    assert "--set expects KEY=VALUE" in caplog.text


REMOTE_CHECK = """
import sys, json
sys.modules["sciembed"] = None  # sciembed must not be importable here
import numpy as np, torch
from transformers import AutoModel, AutoTokenizer
from sentence_transformers import SentenceTransformer
folder, texts, kwargs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder)
assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
with torch.no_grad():
    rows = [model(**tokenizer(t, return_tensors="pt"), **kwargs).pooler_output[0].numpy() for t in texts]
np.save("auto_model.npy", np.stack(rows))
if not kwargs:
    np.save("sentence_transformers.npy", \
SentenceTransformer(folder, trust_remote_code=True, device="cpu").encode(texts, batch_size=2))
"""


@pytest.mark.slow
@pytest.mark.parametrize("family", ["multi2spe", "control_code", "moe_token"])
def test_built_from_minilm_loads_without_sciembed(family, tmp_path):
    """Built from the embedded MiniLM, saved, then loaded as remote code where sciembed cannot be imported:
    transformers and sentence-transformers both reproduce sciembed.encode's vectors."""
    import os
    import subprocess
    import sys

    name, options, _ = CASES[family]
    torch.manual_seed(0)
    model, tokenizer = from_bert(name, sciembed.default_model_path(), **options)
    folder = save_pretrained(model, tokenizer, tmp_path / "model")
    texts = [sciembed.paper_text(p, tokenizer.sep_token) for p in PAPERS]
    expected = sciembed.encode(folder, PAPERS, batch_size=2, show_progress_bar=False)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    result = subprocess.run(
        [sys.executable, "-c", REMOTE_CHECK, str(folder), json.dumps(texts), "{}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "auto_model.npy"), expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.load(tmp_path / "sentence_transformers.npy"), expected, atol=1e-5, rtol=0)
