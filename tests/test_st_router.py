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
from sciembed.formats import activate_format, model_formats
from sciembed.formats.names import route_of

QUERIES = [
    "garbage collection",
    "a matrix algorithm for linear systems",
    "citation graph embedding of scientific documents",
]
KINDS = ("control_code", "adapters", "pals")
FORMATS_ALL = ("classification", "regression", "proximity", "adhoc_query")
MODULE_PATH = "sciembed.formats.format_routes"


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
    for task_format in model_formats(model):  # every format has its route, named after it but for search's two
        np.testing.assert_allclose(
            st.encode(texts, task=route_of(task_format)),
            encoder.with_format(task_format).encode(texts, show_progress_bar=False),
            atol=1e-5,
        )
    assert sorted(st[0].sub_modules) == ["classification", "document", "query", "regression"]
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
        MultiFormatTransformer(AutoModel.from_pretrained(tiny_bert), "cls")

    # A route in a format the model lacks fails when it runs, naming the model's formats.
    router = Router.for_query_document(
        [TaskFormatInput(tokenizer, "regression", 32)], [TaskFormatInput(tokenizer, "proximity", 32)]
    )
    st = SentenceTransformer(modules=[router, MultiFormatTransformer(partial, "cls")], device="cpu")
    with pytest.raises(ValueError, match="no task format 'regression'; its formats: classification, proximity"):
        st.encode_query(QUERIES)
    with pytest.raises(ValueError, match="behind a Router whose routes start with TaskFormatInput"):
        pals_st[1](dict(tokenizer(QUERIES, padding=True, return_tensors="pt")))
    with pytest.raises(TypeError, match="embeds texts, got a tuple"):
        pals_st.encode_document([("a title", "an abstract")])


def test_paper_encoder_follows_the_routes_of_a_saved_router_model(tiny_bert, tmp_path):
    """sciembed.encode on a saved model with format routes: encode_query takes the query route, a format its own."""
    from transformers import AutoTokenizer

    model = perturbed_adapters(tiny_bert)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    to_sentence_transformer(model, tokenizer).save(str(tmp_path / "st"))
    direct = sciembed.PaperEncoder(model, tokenizer, device="cpu")
    loaded = sciembed.PaperEncoder.from_pretrained(tmp_path / "st", device="cpu")
    assert loaded.task_formats == ("classification", "regression", "proximity", "adhoc_query")
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
    np.testing.assert_allclose(
        loaded.with_format("classification").encode(PAPERS, show_progress_bar=False),
        direct.with_format("classification").encode(PAPERS, show_progress_bar=False),
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="no task format 'summary'"):
        loaded.with_format("summary")


def saved_model_folder(kind: str, tiny_bert, folder):
    """A multi-format model of ``kind`` saved as sciembed saves it (a family with its sentence-transformers files;
    format adapters or PALs beside a clean base), with its tokenizer."""
    from sciembed.families import save_pretrained
    from sciembed.formats import save_with_format_modules

    model, tokenizer = multi_format_model(kind, tiny_bert)
    if kind == "control_code":
        save_pretrained(model, tokenizer, folder)
    else:
        assert save_with_format_modules(model, folder)
        tokenizer.save_pretrained(folder)
    return model, tokenizer


WITHOUT_SCIEMBED = """
import json, sys
sys.modules["sciembed"] = None  # as on a machine without sciembed
import numpy as np
from sentence_transformers import SentenceTransformer
texts, out = json.loads(sys.argv[1]), sys.argv[2]
vectors = {}
for folder in sys.argv[3:]:
    st = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
    for route in ("query", "document", "classification", "regression"):
        vectors[f"{folder}|{route}"] = st.encode(texts, task=route)
    vectors[f"{folder}|encode_query"] = st.encode_query(texts)
    vectors[f"{folder}|encode_document"] = st.encode_document(texts)
np.savez(out, **vectors)
"""


def test_exported_multi_format_models_load_in_sentence_transformers_without_sciembed(tiny_bert, tmp_path):
    """sciembed export writes a control-code, a format-adapter and a PALs model with one sentence-transformers route
    per format and the routes' code beside the weights: where sciembed cannot be imported,
    SentenceTransformer(folder, trust_remote_code=True) gives sciembed's vectors in every format."""
    import os

    from sciembed.checkpoints import remote_code
    from sciembed.families import foreign_code
    from sciembed.formats import route_code_paths
    from sciembed.hub.export import export_model
    from sciembed.hub.files import hub_files

    expected, exported = {}, []
    for kind in KINDS:
        model, tokenizer = saved_model_folder(kind, tiny_bert, tmp_path / f"{kind}-model")
        texts = documents(tokenizer) + QUERIES
        encoder = sciembed.PaperEncoder(model, tokenizer, device="cpu")
        expected[kind] = {f: encoder.with_format(f).encode(texts, show_progress_bar=False) for f in FORMATS_ALL}
        # The export's own fresh-process checks run in the next test; here one process checks all three folders.
        export_model(tmp_path / f"{kind}-model", tmp_path / kind, validate=False)
        assert foreign_code(tmp_path / kind, route_code_paths()) == []  # the routes' code is sciembed's own
        assert remote_code(tmp_path / kind) == []  # and so is every class its configs name
        assert hub_files(tmp_path / kind)[1] == {}  # every file of the routes belongs on the Hub (push uploads them)
        modules = json.loads((tmp_path / kind / "modules.json").read_text())
        assert [(m["path"], m["type"]) for m in modules] == [
            ("", "sentence_transformers.base.modules.router.Router"),
            ("", "format_routes.MultiFormatTransformer"),
        ]
        assert not (tmp_path / kind / "sentence_bert_config.json").exists()
        exported.append(str(tmp_path / kind))

    out = tmp_path / "vectors.npz"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SCIEMBED, json.dumps(texts), str(out), *exported],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    vectors = np.load(out)
    for kind, folder in zip(KINDS, exported):
        want = expected[kind]
        for task_format in FORMATS_ALL:
            np.testing.assert_allclose(vectors[f"{folder}|{route_of(task_format)}"], want[task_format], atol=1e-5)
        np.testing.assert_allclose(vectors[f"{folder}|encode_query"], want["adhoc_query"], atol=1e-5)
        np.testing.assert_allclose(vectors[f"{folder}|encode_document"], want["proximity"], atol=1e-5)
        for first, second in [("adhoc_query", "proximity"), ("classification", "regression")]:
            assert not np.allclose(want[first], want[second], atol=1e-3)  # the formats embed apart
        # sciembed reads its own export the same way, trusting only its own code.
        loaded = sciembed.PaperEncoder.from_pretrained(folder, device="cpu")
        np.testing.assert_allclose(
            loaded.with_format("classification").encode(texts, show_progress_bar=False),
            want["classification"],
            atol=1e-5,
        )


def test_export_checks_the_routes_refuses_changed_route_code_and_catches_wrong_vectors(tiny_bert, tmp_path):
    """sciembed export's validation embeds every route in a fresh process without sciembed and compares the vectors
    with sciembed's; a folder whose route code differs from sciembed's is refused."""
    from sciembed.hub.export import export_model, validate_export

    saved_model_folder("adapters", tiny_bert, tmp_path / "model")
    report = export_model(tmp_path / "model", tmp_path / "exported")
    assert any(
        "routes classification, document, query, regression give sciembed's vectors" in c for c in report.checks
    )
    with (tmp_path / "exported" / "names.py").open("a") as handle:
        handle.write("\nimport os  # changed after export\n")
    with pytest.raises(ValueError, match=r"names\.py is not sciembed's own code"):
        export_model(tmp_path / "exported", tmp_path / "again")

    (tmp_path / "exported" / "names.py").unlink()
    export_model(tmp_path / "model", tmp_path / "exported", overwrite=True, validate=False)
    texts = ["a query", "a paper"]
    wrong = {
        "texts": texts,
        "vectors": {r: [[0.0] * 32] * 2 for r in ("query", "document", "classification", "regression")},
    }
    with pytest.raises(
        ValueError, match=r"sentence-transformers' vectors differ from sciembed's beyond 1e-05 \(query"
    ):
        validate_export(tmp_path / "exported", route_vectors=wrong)
