"""What a sentence-transformers user types by habit: encode's options and shapes, similarity, output quantization,
saving and pushing, and loading as transformers loads (revision, dtype, cache), recorded in every output."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import quantize_embeddings
from test_evaluate import scidocs_folder  # noqa: F401  (a fixture, shared with the evaluation tests)
from test_faults_publishing import UploadRecorder

import sciembed
from sciembed import PaperEncoder
from sciembed.cli import main

TEXTS = ["citation graphs", "protein folding with transformers", "graph neural networks", "a short title"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PAPERS_5 = [{"paper_id": str(i), "title": title} for i, title in enumerate([*TEXTS, "sparse retrieval"])]


@pytest.fixture
def hub_cache(tiny_bert, tmp_path):
    """A Hub cache holding the tiny BERT as the repository ``org/tiny`` at one commit, ``main`` pointing at it."""
    repository = tmp_path / "hub" / "models--org--tiny"
    shutil.copytree(tiny_bert, repository / "snapshots" / COMMIT)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(COMMIT)
    return tmp_path / "hub"


def test_shapes_are_those_of_sentence_transformers():
    model = sciembed.default_model_path()
    assert sciembed.encode(model, "q").shape == (384,)
    assert sciembed.encode(model, ["q"]).shape == (1, 384)
    assert sciembed.encode(model, {"title": "BERT", "abstract": "Pre-training."}).shape == (384,)


@pytest.mark.parametrize("name", ["cosine", "dot", "euclidean", "manhattan"])
def test_similarity_equals_sentence_transformers(tiny_st_base, name):
    encoder = PaperEncoder.from_pretrained(tiny_st_base, device="cpu")
    theirs = SentenceTransformer(str(tiny_st_base), device="cpu", similarity_fn_name=name)
    a, b = encoder.encode(TEXTS[:3]), encoder.encode(TEXTS[1:])
    encoder.similarity_fn_name = name
    assert torch.allclose(encoder.similarity(a, b), theirs.similarity(a, b), atol=1e-5)
    assert torch.allclose(encoder.similarity_pairwise(a, b), theirs.similarity_pairwise(a, b), atol=1e-5)
    if name == "cosine":
        assert torch.allclose(sciembed.similarity(a, b), theirs.similarity(a, b), atol=1e-5)


def test_similarity_follows_the_models_config_and_the_dimension_is_known(tiny_st_base, tmp_path):
    folder = tmp_path / "dot"
    shutil.copytree(tiny_st_base, folder)
    config = json.loads((folder / "config_sentence_transformers.json").read_text())
    (folder / "config_sentence_transformers.json").write_text(json.dumps({**config, "similarity_fn_name": "dot"}))
    encoder = PaperEncoder.from_pretrained(folder, device="cpu")
    assert encoder.similarity_fn_name == "dot" and encoder.get_embedding_dimension() == 32
    with pytest.raises(ValueError, match="similarity_fn_name must be one of cosine, dot, euclidean, manhattan"):
        encoder.similarity_fn_name = "maxsim"


@pytest.mark.parametrize("precision", ["binary", "ubinary", "int8", "uint8"])
def test_precision_equals_quantize_embeddings(tiny_encoder, precision):
    floats = tiny_encoder.encode(TEXTS, show_progress_bar=False)
    got = tiny_encoder.encode(TEXTS, precision=precision, show_progress_bar=False)
    assert got.dtype == quantize_embeddings(floats, precision).dtype
    assert np.array_equal(got, quantize_embeddings(floats, precision))
    calibrated = tiny_encoder.encode(TEXTS[:2], precision=precision, calibration_embeddings=floats)
    assert np.array_equal(calibrated, quantize_embeddings(floats[:2], precision, calibration_embeddings=floats))


def test_tensors_lists_and_unit_vectors_as_asked(tiny_encoder):
    tensor = sciembed.encode(tiny_encoder, TEXTS, convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (4, 32)
    rows = tiny_encoder.encode(TEXTS, convert_to_numpy=False)
    assert isinstance(rows, list) and all(isinstance(row, torch.Tensor) and row.shape == (32,) for row in rows)
    unit = tiny_encoder.encode_query("graph", normalize_embeddings=True)
    assert unit.shape == (32,) and np.linalg.norm(unit) == pytest.approx(1, abs=1e-6)


def test_calibrated_ranges_are_saved_with_the_model_and_reused(tiny_encoder, tmp_path):
    encoder = PaperEncoder.from_pretrained(tiny_encoder.name_or_path, device="cpu", pooling="mean")
    ranges = encoder.calibrate(TEXTS)
    folder = encoder.save_pretrained(tmp_path / "saved")
    loaded = PaperEncoder.from_pretrained(folder, device="cpu")
    floats = encoder.encode(TEXTS[:1])
    assert np.array_equal(loaded.encode(TEXTS[:1]), floats)  # the pooling was saved with it
    assert np.array_equal(loaded.encode(TEXTS[0], precision="int8"), quantize_embeddings(floats, "int8", ranges)[0])
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        encoder.save_pretrained(folder)


def test_push_to_hub_goes_through_the_export_and_its_checks(tiny_encoder, monkeypatch):
    from huggingface_hub import constants

    from sciembed.hub.push import HubOfflineError, push_to_hub

    with pytest.raises(HubOfflineError, match="HF_HUB_OFFLINE is set"):
        push_to_hub(tiny_encoder, "org/tiny", api=UploadRecorder(), validate=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    api = UploadRecorder()
    assert push_to_hub(tiny_encoder, "org/tiny", api=api, validate=False) == "https://huggingface.co/commit"
    assert {"README.md", "config.json", "model.safetensors", "modules.json"} <= set(api.allowed)
    from sciembed.encoders import EnsembleEncoder

    with pytest.raises(ValueError, match="an ensemble is published member by member"):
        push_to_hub(EnsembleEncoder([tiny_encoder, tiny_encoder]), "org/pair", api=api, validate=False)


def test_a_revision_is_resolved_to_its_commit_and_recorded(hub_cache, scidocs_folder, tmp_path):  # noqa: F811
    from sciembed.evaluation import Reading, evaluate
    from sciembed.hub.export import export_model
    from sciembed.jobs.embed import embed_to_file

    encoder = PaperEncoder.from_pretrained("org/tiny", revision="main", cache_dir=hub_cache, device="cpu")
    assert encoder.revision == COMMIT and encoder.name_or_path == "org/tiny"
    embedded = embed_to_file(encoder, [{"paper_id": "1", "title": "graphs"}], tmp_path / "v.npy")
    assert (embedded.model, embedded.revision) == ("org/tiny", COMMIT)
    snapshot = PaperEncoder.from_pretrained(hub_cache / "models--org--tiny" / "snapshots" / COMMIT, device="cpu")
    assert snapshot.revision == COMMIT
    pinned = sciembed.Encoder.from_pretrained("org/tiny", revision=COMMIT, cache_dir=hub_cache, local_files_only=True)
    report = evaluate(pinned, "scidocs", scidocs_folder, use_cache=False, reading=Reading(tasks=["cite"]))
    assert report.to_dict()["settings"]["revision"] == COMMIT
    saved = snapshot.save_pretrained(tmp_path / "saved")
    card = export_model(saved, tmp_path / "out", evaluations=[report.to_dict()], validate=False)
    assert f"model revision `{COMMIT}`" in (card.folder / "README.md").read_text()
    with pytest.raises(
        FileNotFoundError, match=f"no copy of a Hub model of that id at revision v2 in the Hub cache {hub_cache}"
    ):
        PaperEncoder.from_pretrained("org/tiny", revision="v2", cache_dir=hub_cache)


def test_neighbours_record_the_revision_they_were_embedded_at(hub_cache, tmp_path, monkeypatch):
    from huggingface_hub import constants

    encoder = sciembed.Encoder.from_pretrained("org/tiny", revision="main", cache_dir=hub_cache, device="cpu")
    result = sciembed.neighbours(encoder, PAPERS_5, top_k=1, show_progress_bar=False)
    assert result.revision == COMMIT and f"Model: org/tiny (revision {COMMIT})" in result.format()
    assert [(r["model"], r["revision"]) for r in result.records()] == [("org/tiny", COMMIT)] * 5
    assert result.write(tmp_path / "n.csv").read_text().splitlines()[1].endswith(f",org/tiny,{COMMIT}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS_5))
    output = tmp_path / "n.jsonl"
    command = ["neighbours", "--model", "org/tiny", "--revision", "main", "--papers", str(papers), "--output"]
    assert main([*command, str(output), "--device", "cpu", "--no-progress"]) == 0
    assert {json.loads(line)["revision"] for line in output.read_text().splitlines()} == {COMMIT}


def test_a_revision_for_a_local_folder_is_refused(tiny_bert, tmp_path, caplog):
    with pytest.raises(ValueError, match="is a local folder, which has no revisions"):
        PaperEncoder.from_pretrained(tiny_bert, revision="main")
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"paper_id": "1", "title": "citation graphs"}) + "\n")
    embed = ["embed", "--model", str(tiny_bert), "--input", str(papers), "--output", str(tmp_path / "v.npy")]
    assert main([*embed, "--revision", "main"]) == 2 and "leave revision (--revision) unset" in caplog.text
    assert main([*embed, "--dtype", "bfloat16", "--no-progress"]) == 0
    assert np.load(tmp_path / "v.npy").dtype == np.float32


def test_a_bfloat16_model_gives_float32_vectors_close_to_float32(tiny_bert):
    half = PaperEncoder.from_pretrained(tiny_bert, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})
    full = PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    assert half.transformer.dtype == torch.bfloat16 and half.fingerprint() != full.fingerprint()
    vectors, reference = half.encode(TEXTS), full.encode(TEXTS)
    assert vectors.dtype == np.float32
    cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.99


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_half_precision_model_gives_float32_unit_vectors_in_every_output_path(tiny_st_base, dtype):
    """The dtype reaches the weights; numpy, tensor, one text, ensemble and windows give float32, a normalising
    model's vectors are unit length in float32, and the quantized precisions are those of the float32 vectors."""
    from sciembed.encoders import EnsembleEncoder, WindowedEncoder, WindowSettings

    half = sciembed.Encoder.from_pretrained(tiny_st_base, device="cpu", model_kwargs={"torch_dtype": dtype})
    assert half.transformer.dtype == getattr(torch, dtype)
    long_paper = {"paper_id": "p", "title": "graphs", "abstract": " ".join(TEXTS * 12)}
    outputs = {
        "numpy": half.encode(TEXTS),
        "one text": half.encode(TEXTS[0]),
        "tensor": half.encode(TEXTS, convert_to_tensor=True).numpy(),
        "ensemble": EnsembleEncoder([half, half]).encode(TEXTS),
        "windows": WindowedEncoder(half, WindowSettings(window=16, overlap=4)).encode([long_paper]),
    }
    for name, vectors in outputs.items():
        assert vectors.dtype == np.float32, name
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1, atol=1e-5, err_msg=name)
    for precision in ("binary", "ubinary"):
        expected = quantize_embeddings(outputs["numpy"], precision=precision)
        np.testing.assert_array_equal(half.encode(TEXTS, precision=precision), expected)


def test_the_top_level_functions_load_a_model_once(tiny_bert, monkeypatch):
    loads = []
    original = PaperEncoder.from_pretrained.__func__

    def counting(cls, *args, **kwargs):
        loads.append(args)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(PaperEncoder, "from_pretrained", classmethod(counting))
    sciembed.clear_model_cache()
    for text in TEXTS:
        sciembed.encode(tiny_bert, text, device="cpu")
    sciembed.encode_query(tiny_bert, "graph", device="cpu")
    assert len(loads) == 1
    sciembed.encode(tiny_bert, "graph", device="cpu", pooling="mean")  # other options: another model
    sciembed.clear_model_cache()
    sciembed.encode(tiny_bert, "graph", device="cpu", pooling="mean")
    assert len(loads) == 3


def test_the_old_precision_spelling_names_the_new_one(tiny_bert, tiny_encoder, tmp_path):
    with pytest.raises(
        TypeError, match=r"quantization= for the ONNX or OpenVINO weights \(--onnx-quantization fp32 or"
    ):
        PaperEncoder.from_pretrained(tiny_bert, precision="int8")
    with pytest.raises(ValueError, match="quantization= \\(--onnx-quantization\\)"):
        sciembed.encode(tiny_encoder, "graph", precision="fp32")
    with pytest.raises(ValueError, match="Give quantization .* with backend='onnx' to say which"):
        sciembed.encode(tiny_bert, "graph", backend="onnx", precision="int8")
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"paper_id": "1", "title": "citation graphs"}) + "\n")
    with pytest.raises(SystemExit) as stopped:
        main(["embed", "--input", str(papers), "--output", str(tmp_path / "v.npy"), "--precision", "int8"])
    assert stopped.value.code == 2


def test_ensembles_and_windows_offer_the_same_api(tiny_encoder):
    from sciembed.encoders import EnsembleEncoder, WindowedEncoder

    for encoder in (EnsembleEncoder([tiny_encoder, tiny_encoder]), WindowedEncoder(tiny_encoder)):
        floats = encoder.encode(TEXTS)
        assert np.array_equal(encoder.encode(TEXTS, precision="ubinary"), quantize_embeddings(floats, "ubinary"))
        assert encoder.similarity(floats, floats).shape == (4, 4) and encoder.get_embedding_dimension() == 32


def test_similarity_refuses_texts_and_vectors_of_two_sizes():
    with pytest.raises(TypeError, match="takes embeddings, not texts; embed them first"):
        sciembed.similarity("a query", "a paper")
    with pytest.raises(ValueError, match="a has 384 dimensions, b 100"):
        sciembed.similarity(np.ones((2, 384)), np.ones((2, 100)))
    with pytest.raises(ValueError, match=r"expected one vector or a matrix of them, got shape \(1, 2, 3\)"):
        sciembed.similarity_pairwise(np.ones((1, 2, 3)), np.ones((1, 2, 3)))
