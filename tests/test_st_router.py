"""Multi-format models as sentence-transformers models (SciRepEval / SPECTER2 ad-hoc search): queries in
the adhoc_query format, candidates in proximity, with sciembed.PaperEncoder's vectors; saved once, and
reloaded in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import PAPERS
from test_formats import perturbed_adapters

import sciembed
from sciembed.encoders.router import MultiFormatTransformer, TaskFormatInput, to_sentence_transformer
from sciembed.formats import activate_format

QUERIES = [
    "garbage collection",
    "a matrix algorithm for linear systems",
    "citation graph embedding of scientific documents",
]
KINDS = ("control_code", "adapters", "pals")
MODULE_PATH = "sciembed.encoders.router"


def multi_format_model(kind: str, tiny_bert):
    """A tiny random model of each multi-format kind, with its tokenizer; its formats embed visibly apart."""
    from transformers import AutoModel, AutoTokenizer

    from sciembed.families import from_bert
    from sciembed.formats.pals import PALsConfig, add_pals

    if kind == "control_code":
        model, tokenizer = from_bert("control_code", tiny_bert)
        return model.eval(), tokenizer
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    if kind == "adapters":
        return perturbed_adapters(tiny_bert), tokenizer
    model = AutoModel.from_pretrained(tiny_bert).eval()
    torch.manual_seed(1)
    with torch.no_grad():  # PALs start near the base output; larger weights keep the formats apart
        for parameter in add_pals(model, PALsConfig(hidden_size=12, num_attention_heads=4)).parameters():
            parameter.normal_(0, 0.2)
    return model, tokenizer


@pytest.fixture(scope="module")
def built(tiny_bert):
    """kind -> (model, tokenizer, SentenceTransformer sharing the model)."""
    models = {kind: multi_format_model(kind, tiny_bert) for kind in KINDS}
    return {
        kind: (model, tokenizer, to_sentence_transformer(model, tokenizer, device="cpu"))
        for kind, (model, tokenizer) in models.items()
    }


def documents(tokenizer) -> list[str]:
    return [sciembed.paper_text(paper, tokenizer.sep_token) for paper in PAPERS]


@pytest.mark.parametrize("kind", KINDS)
def test_query_and_document_routes_give_the_paper_encoders_vectors(built, kind):
    model, tokenizer, st = built[kind]
    encoder = sciembed.PaperEncoder(model, tokenizer, device="cpu")
    texts = documents(tokenizer)
    queries, papers = st.encode_query(QUERIES), st.encode_document(texts)
    np.testing.assert_allclose(queries, encoder.encode_query(QUERIES, show_progress_bar=False), atol=1e-5)
    np.testing.assert_allclose(papers, encoder.encode_document(texts, show_progress_bar=False), atol=1e-5)
    np.testing.assert_allclose(st.encode(texts), papers, atol=1e-5)  # no task: the document route (proximity)
    assert not np.allclose(queries, st.encode_document(QUERIES), atol=1e-3)  # the routes embed differently
    assert st.get_embedding_dimension() == 32
    short = sciembed.PaperEncoder(model, tokenizer, device="cpu", max_length=8).encode_query(
        QUERIES, show_progress_bar=False
    )
    np.testing.assert_allclose(
        st.encode_query(QUERIES, processing_kwargs={"text": {"max_length": 8}}), short, atol=1e-5
    )


@pytest.mark.parametrize("kind", ["adapters", "pals"])
def test_every_call_activates_its_routes_format(built, kind):
    """Format adapters and PALs keep the active format on the model: neither the other route nor another
    user of the shared model decides the format of the next call."""
    model, tokenizer, st = built[kind]
    query, document = st.encode_query(QUERIES), st.encode_document(QUERIES)
    other = sciembed.PaperEncoder(model, tokenizer, device="cpu", task_format="classification").encode(
        QUERIES, show_progress_bar=False
    )
    assert not np.allclose(other, query, atol=1e-3) and not np.allclose(other, document, atol=1e-3)
    for _ in range(2):
        activate_format(model, "classification")
        np.testing.assert_array_equal(st.encode_document(QUERIES), document)
        np.testing.assert_array_equal(st.encode_query(QUERIES), query)


FRESH_PROCESS = """
import json, sys
from pathlib import Path
import numpy as np
from sentence_transformers import SentenceTransformer
queries, documents, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
vectors = {}
for folder in sys.argv[4:]:
    st = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
    vectors[Path(folder).name + "|query"] = st.encode_query(queries)
    vectors[Path(folder).name + "|document"] = st.encode_document(documents)
np.savez(out, **vectors)
"""


def test_saved_once_and_reloaded_in_a_fresh_process_with_the_same_vectors(built, tmp_path):
    texts = documents(built["pals"][1])
    folders = []
    for kind, (_, _, st) in built.items():
        folder = tmp_path / kind
        st.save(str(folder))
        modules = json.loads((folder / "modules.json").read_text())
        assert [m["type"] for m in modules] == [
            "sentence_transformers.base.modules.router.Router",
            f"{MODULE_PATH}.MultiFormatTransformer",
        ]
        routes = json.loads((folder / "router_config.json").read_text())
        assert set(routes["types"].values()) == {f"{MODULE_PATH}.TaskFormatInput"}
        assert [p.relative_to(folder).as_posix() for p in folder.rglob("model.safetensors")] == [
            "1_MultiFormatTransformer/model.safetensors"
        ]
        folders.append(str(folder))

    out = tmp_path / "vectors.npz"
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, json.dumps(QUERIES), json.dumps(texts), str(out), *folders],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    vectors = np.load(out)
    for kind, (_, _, st) in built.items():
        np.testing.assert_allclose(vectors[f"{kind}|query"], st.encode_query(QUERIES), atol=1e-5)
        np.testing.assert_allclose(vectors[f"{kind}|document"], st.encode_document(texts), atol=1e-5)


def test_errors_name_what_is_wrong(built, tiny_bert):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Router
    from transformers import AutoModel

    from sciembed.formats.adapters import add_format_adapters

    _, tokenizer, pals_st = built["pals"]
    with pytest.raises(
        ValueError, match=r"BertModel has no adhoc_query and no proximity format \(its formats: none\)"
    ):
        to_sentence_transformer(AutoModel.from_pretrained(tiny_bert), tokenizer)
    partial = add_format_adapters(AutoModel.from_pretrained(tiny_bert), ["classification", "proximity"])
    with pytest.raises(ValueError, match=r"has no adhoc_query format \(its formats: classification, proximity\)"):
        to_sentence_transformer(partial, tokenizer)
    with pytest.raises(
        ValueError,
        match="unknown task format 'summary'; the formats are classification, regression, proximity, adhoc_query",
    ):
        TaskFormatInput(tokenizer, "summary", 32)
    with pytest.raises(ValueError, match="BertModel has no task formats"):
        MultiFormatTransformer(AutoModel.from_pretrained(tiny_bert))

    # A route in a format the model lacks fails when it runs, naming the model's formats.
    router = Router.for_query_document(
        [TaskFormatInput(tokenizer, "regression", 32)], [TaskFormatInput(tokenizer, "proximity", 32)]
    )
    st = SentenceTransformer(modules=[router, MultiFormatTransformer(partial)], device="cpu")
    with pytest.raises(ValueError, match="no task format 'regression'; its formats: classification, proximity"):
        st.encode_query(QUERIES)
    with pytest.raises(ValueError, match="behind a Router whose routes start with TaskFormatInput"):
        pals_st[1](dict(tokenizer(QUERIES, padding=True, return_tensors="pt")))
    with pytest.raises(TypeError, match="embeds texts, got a tuple"):
        pals_st.encode_document([("a title", "an abstract")])


def test_paper_encoder_follows_the_routes_of_a_saved_router_model(tiny_bert, tmp_path):
    """sciembed.encode on a saved query/document model: encode_query takes the query route."""
    from transformers import AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    to_sentence_transformer(model, tokenizer).save(str(tmp_path / "st"))
    direct = sciembed.PaperEncoder(model, tokenizer, device="cpu")
    loaded = sciembed.PaperEncoder.from_pretrained(tmp_path / "st", device="cpu")
    assert loaded.task_formats == ("adhoc_query", "proximity")
    queries = ["garbage collection", "matrix algorithm"]
    np.testing.assert_allclose(
        loaded.encode_query(queries, show_progress_bar=False),
        direct.encode_query(queries, show_progress_bar=False),
        atol=1e-5,
    )
    np.testing.assert_allclose(
        loaded.encode(PAPERS, show_progress_bar=False),
        direct.encode_document(PAPERS, show_progress_bar=False),
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="no task format 'classification'"):
        loaded.with_format("classification")
