"""The ONNX Runtime backend: the same vectors as PyTorch (1e-4) for plain encoders, sentence-transformers
models and the format modules (each family's parity is its contract's, ``family_contract.py``); the export made
once and cached; int8 refused until its gate passes; ``--backend onnx`` through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip(
    "onnxruntime", reason="the onnx extra is not installed: pip install -e '.[onnx]' (the Makefile does)"
)

from helpers import PAPERS, shared_data  # noqa: E402

import sciembed  # noqa: E402
from sciembed import onnx_backend  # noqa: E402
from sciembed.cli import main  # noqa: E402
from sciembed.evaluation import Reading  # noqa: E402
from sciembed.families import from_bert, save_pretrained  # noqa: E402
from sciembed.io import read_embeddings  # noqa: E402

#: The papers of helpers plus texts of other lengths, so that batches pad differently from the export's.
TEXTS = [
    *PAPERS,
    "a",
    "citation graph " * 20,
    {"paper_id": "p9", "title": "Matrix algorithm", "abstract": "list memory " * 7},
]


def both(folder_or_model, cache, **options):
    """The PyTorch and ONNX encoders of one model with the same settings."""
    load = sciembed.PaperEncoder.from_pretrained if not hasattr(folder_or_model, "forward") else sciembed.PaperEncoder
    pytorch = load(folder_or_model, device="cpu", **options)
    return pytorch, load(folder_or_model, device="cpu", backend="onnx", engine_cache=cache, **options)


def assert_same_vectors(pytorch, onnx, texts=TEXTS):
    for batch_size in (1, 3):
        expected = pytorch.encode(texts, batch_size=batch_size, show_progress_bar=False)
        got = onnx.encode(texts, batch_size=batch_size, show_progress_bar=False)
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def fused_operators(folder):
    """The count of each of ONNX Runtime's fused transformer operators in the export in ``folder``."""
    import onnx

    graph = onnx.load(str(folder / onnx_backend.FP32_FILE)).graph
    fused = ("Attention", "SkipLayerNormalization", "EmbedLayerNormalization", "BiasGelu", "Gelu", "FastGelu")
    return {name: sum(node.op_type == name for node in graph.node) for name in fused}


def assert_fused(encoder, cache):
    """Every export in ``cache`` runs attention, LayerNorm and GELU as fused operators in every layer, and the
    encoder keeps its own attention implementation in PyTorch."""
    layers = encoder.transformer.config.num_hidden_layers
    for folder in cache.iterdir():
        counts = fused_operators(folder)
        assert counts["Attention"] == layers and counts["SkipLayerNormalization"] >= layers
        assert counts["BiasGelu"] + counts["Gelu"] + counts["FastGelu"] == layers, counts
        assert (
            json.loads((folder / "export.json").read_text())["fused_operators"].get("Attention", 0)
            == counts["Attention"]
        )
    assert encoder.transformer.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("options", [{}, {"pooling": "mean", "normalize": True}, {"max_length": 12}])
def test_a_plain_encoder_gives_pytorch_s_vectors_and_exports_once(tiny_bert, tmp_path, monkeypatch, options):
    pytorch, onnx = both(tiny_bert, tmp_path, **options)
    assert_same_vectors(pytorch, onnx)
    exports = list((tmp_path / "onnx").iterdir())
    assert (
        len(exports) == 1
        and json.loads((exports[0] / "export.json").read_text())["max_abs_difference_to_pytorch"] <= 1e-4
    )
    assert onnx.fingerprint() != pytorch.fingerprint() and onnx.model_fingerprint() == pytorch.fingerprint()
    assert_fused(onnx, tmp_path / "onnx")

    def no_second_export(*args, **kwargs):
        raise AssertionError("exported again although the cache holds the export")

    monkeypatch.setattr(onnx_backend, "export_encoder", no_second_export)
    again = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="onnx", engine_cache=tmp_path, **options
    )
    np.testing.assert_array_equal(
        again.encode(TEXTS, show_progress_bar=False), onnx.encode(TEXTS, show_progress_bar=False)
    )


def test_sessions_let_idle_threads_sleep(tiny_bert, tmp_path):
    _, onnx = both(tiny_bert, tmp_path)
    onnx.encode(TEXTS, show_progress_bar=False)
    (session,) = onnx._engine._sessions.values()
    assert session.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_fp32_runs_each_batch_as_parts_cut_to_their_own_texts(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("SCIEMBED_ONNX_THREADS", "3")
    pytorch, onnx = both(tiny_bert, tmp_path)
    for batch_size in (2, 5, len(TEXTS)):
        expected = pytorch.encode(TEXTS, batch_size=batch_size, show_progress_bar=False)
        got = onnx.encode(TEXTS, batch_size=batch_size, show_progress_bar=False)
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
        cosines = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
        assert cosines.min() >= 0.9999
    (session,) = onnx._engine._sessions.values()
    assert session.settings() == {"parallelism": "batch", "threads": 3, "intra_op_threads": 1, "allow_spinning": "0"}
    shapes, run = [], session.session.run
    monkeypatch.setattr(
        session.session, "run", lambda names, feed: shapes.append(feed["input_ids"].shape) or run(names, feed)
    )
    onnx.encode(TEXTS, batch_size=len(TEXTS), show_progress_bar=False)
    assert len(shapes) >= 3 and sum(rows for rows, _ in shapes) == len(TEXTS)
    assert len({width for _, width in shapes}) > 1  # a part of shorter texts drops the columns only padding fills


def test_a_sentence_transformers_model_gives_its_own_vectors(tiny_st_base, tmp_path):
    pytorch, onnx = both(tiny_st_base, tmp_path)
    assert_same_vectors(pytorch, onnx)
    assert_fused(onnx, tmp_path / "onnx")
    np.testing.assert_allclose(np.linalg.norm(onnx.encode(TEXTS, show_progress_bar=False), axis=1), 1, atol=1e-5)


def assert_dynamo_export(encoder, path):
    """The dynamo exporter's graph of ``encoder`` gives its PyTorch vectors on texts and a batch size it was not
    traced with, and says which exporter made it."""
    report = onnx_backend.export_encoder(encoder, path, exporter="dynamo")
    assert report["exporter"] == "dynamo" and report["opset"] == onnx_backend.DYNAMO_OPSET
    with torch.no_grad():
        features = encoder.features(encoder.texts(TEXTS))
        expected = encoder.forward(features).float().numpy()
    got = onnx_backend.OnnxSession(path, threads=1)(features)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=onnx_backend.EXPORT_TOLERANCE, rtol=0)


def test_the_dynamo_exporter_gives_pytorch_s_vectors(tiny_bert, tmp_path):
    pytest.importorskip("onnxscript", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
    for options in ({}, {"pooling": "mean", "normalize": True}):
        encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", **options)
        assert_dynamo_export(encoder, tmp_path / f"{len(options)}.onnx")
    with pytest.raises(ValueError, match=r"exporter must be one of \('torchscript', 'dynamo'\), got 'jit'"):
        onnx_backend.export_encoder(encoder, tmp_path / "x.onnx", exporter="jit")


def test_format_adapters_fusion_and_pals_export_the_active_format(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from sciembed.formats import FORMATS
    from sciembed.formats.adapters import add_format_adapters, add_format_fusion
    from sciembed.formats.pals import PALsConfig, add_pals

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    adapters = add_format_adapters(AutoModel.from_pretrained(tiny_bert))
    fusion = add_format_fusion(add_format_adapters(AutoModel.from_pretrained(tiny_bert)))
    pals = AutoModel.from_pretrained(tiny_bert)
    add_pals(pals, PALsConfig(hidden_size=12, num_attention_heads=4))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in [*adapters.named_parameters(), *fusion.named_parameters()]:
            if (
                ".adapters." in name or "fusion" in name
            ):  # adapters start as the identity: random weights make formats differ
                parameter.normal_(0, 0.2)
    for kind, model in (("adapters", adapters.eval()), ("fusion", fusion.eval()), ("pals", pals.eval())):
        base_pt = sciembed.PaperEncoder(model, tokenizer, device="cpu")
        base_onnx = sciembed.PaperEncoder(model, tokenizer, device="cpu", backend="onnx", engine_cache=tmp_path / kind)
        by_format = {}
        for task_format in FORMATS:
            pytorch, onnx = base_pt.with_format(task_format), base_onnx.with_format(task_format)
            assert_same_vectors(pytorch, onnx)
            by_format[task_format] = onnx.encode(TEXTS, show_progress_bar=False)
        assert not np.allclose(by_format["proximity"], by_format["adhoc_query"])


def test_what_cannot_be_exported_is_named(tiny_bert, tmp_path, monkeypatch):
    _, onnx = both(tiny_bert, tmp_path)

    def untraceable(*args, **kwargs):
        raise RuntimeError("an operator the exporter does not know")

    monkeypatch.setattr("torch.onnx.export", untraceable)
    with pytest.raises(
        onnx_backend.OnnxExportError, match=r"BertModel \(.*\) does not export to ONNX: RuntimeError: an operator"
    ):
        onnx.encode(TEXTS, show_progress_bar=False)
    assert not list(tmp_path.glob("*/*"))  # no half-made export is left to be found as finished


def test_onnx_runs_on_cpu_only(tiny_bert):
    with pytest.raises(ValueError, match="the ONNX backend runs on CPU"):
        sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cuda", backend="onnx")
    with pytest.raises(ValueError, match="quantization 'int8' needs backend='onnx'"):
        sciembed.PaperEncoder.from_pretrained(tiny_bert, quantization="int8")


def test_int8_is_refused_until_its_gate_passes(tiny_bert, tmp_path):
    from sciembed.evaluation.int8_gate import check_int8

    cacm = shared_data("cacm")
    unchecked = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="onnx", quantization="int8", engine_cache=tmp_path / "unchecked"
    )
    with pytest.raises(ValueError, match="int8 for .* is refused: it has not been checked"):
        unchecked.encode(TEXTS, show_progress_bar=False)

    # Asked to gain a point over fp32, which int8 cannot: the gate fails, and int8 stays refused with the reason.
    # (The gate is the first use of this cache: it exports, outside encode's inference mode.)
    cache = tmp_path / "gated"
    int8 = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="onnx", quantization="int8", engine_cache=cache
    )
    failed = check_int8(int8, cacm, tolerance=-1.0, show_progress_bar=False)
    assert (
        not failed.passed and failed.map_drop > -1.0 and failed.queries > 0 and 0.9 < failed.min_cosine < 1
    )  # int8 is not fp32
    assert failed.skipped_records == 1  # CACM's broken record, counted
    refused = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="onnx", quantization="int8", engine_cache=cache
    )
    with pytest.raises(ValueError, match="it failed its quality gate \\(cite MAP .* more than -1.0 points\\)"):
        refused.encode(TEXTS, show_progress_bar=False)

    # The gate's fp32 MAP is the cite MAP that evaluate reports for the fp32 export.
    fp32 = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="onnx", engine_cache=cache)
    report = sciembed.evaluation.evaluate(
        fp32,
        "cacm",
        cacm,
        reading=Reading(tasks=("cite",), skip_invalid=True),
        use_cache=False,
        show_progress_bar=False,
    )
    assert report.results[0].metrics["map"] == pytest.approx(failed.fp32_map, abs=1e-3)

    passed = check_int8(int8, cacm, tolerance=abs(failed.map_drop) + 0.5, show_progress_bar=False)
    assert passed.passed and passed.int8_map == failed.int8_map
    # Once passed, int8 loads, and scores as the gate found, within the gate's own tolerance: int8 activations are
    # quantised per batch, and evaluate batches the (deduplicated) texts differently from the gate.
    gated = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="onnx", quantization="int8", engine_cache=cache
    )
    report = sciembed.evaluation.evaluate(
        gated,
        "cacm",
        cacm,
        reading=Reading(tasks=("cite",), skip_invalid=True),
        use_cache=False,
        show_progress_bar=False,
    )
    assert report.results[0].metrics["map"] == pytest.approx(passed.int8_map, abs=0.5)
    vectors = gated.encode(TEXTS, show_progress_bar=False)
    reference = fp32.encode(TEXTS, show_progress_bar=False)
    assert not np.array_equal(vectors, reference)  # int8 is its own model, close to fp32 but not equal
    (session,) = gated._engine._sessions.values()
    assert session.settings()["parallelism"] == "operators"  # int8 scales a whole batch's activations at once
    cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.9


def test_cli_embeds_and_evaluates_with_onnx(tiny_bert, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SCIEMBED_CACHE", str(tmp_path / "cache"))
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in TEXTS if isinstance(p, dict)))
    for backend in ("pytorch", "onnx"):
        assert (
            main(
                [
                    "-q",
                    "embed",
                    "--model",
                    str(tiny_bert),
                    "--input",
                    str(papers),
                    "--output",
                    str(tmp_path / f"{backend}.npy"),
                    "--backend",
                    backend,
                    "--no-progress",
                ]
            )
            == 0
        )
    (ids, expected), (onnx_ids, got) = (
        read_embeddings(tmp_path / "pytorch.npy"),
        read_embeddings(tmp_path / "onnx.npy"),
    )
    assert ids == onnx_ids and (tmp_path / "cache" / "onnx").is_dir()
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)

    cacm = shared_data("cacm")
    results = {}
    for backend in ("pytorch", "onnx"):
        output = tmp_path / f"{backend}.json"
        assert (
            main(
                [
                    "-q",
                    "evaluate",
                    "--model",
                    str(tiny_bert),
                    "--benchmark",
                    "cacm",
                    "--data",
                    str(cacm),
                    "--tasks",
                    "cite",
                    "--skip-invalid",
                    "--backend",
                    backend,
                    "--no-progress",
                    "--output",
                    str(output),
                ]
            )
            == 0
        )
        results[backend] = json.loads(output.read_text())["results"]
    assert [r["metric"] for r in results["onnx"]] == [r["metric"] for r in results["pytorch"]]
    for ours, theirs in zip(results["onnx"], results["pytorch"]):
        assert ours["value"] == pytest.approx(theirs["value"], abs=0.05)

    embed = [
        "embed",
        "--model",
        str(tiny_bert),
        "--input",
        str(papers),
        "--output",
        str(tmp_path / "int8.npy"),
        "--no-progress",
        "--backend",
        "onnx",
    ]
    assert main([*embed, "--int8-check-set", str(cacm)]) == 2 and "--int8-check-set checks int8" in caplog.text
    assert main([*embed, "--onnx-quantization", "int8"]) == 2 and "is refused: it has not been checked" in caplog.text
    # With the gate run first, int8 embeds exactly when its verdict (kept with the export) is a pass.
    code = main([*embed, "--onnx-quantization", "int8", "--int8-check-set", str(cacm)])
    verdict = json.loads(next((tmp_path / "cache" / "onnx").glob("*/int8_gate.json")).read_text())
    assert verdict["tolerance"] == 0.5 and verdict["passed"] == (verdict["map_drop"] <= 0.5)
    assert code == (0 if verdict["passed"] else 2) and (tmp_path / "int8.npy").exists() == verdict["passed"]
    if not verdict["passed"]:
        assert "int8 refused for" in caplog.text and "use --onnx-quantization fp32" in caplog.text


def test_export_adds_the_onnx_model_sentence_transformers_loads(tiny_st_base, tiny_bert, tmp_path, caplog):
    """``onnx/model.onnx`` is what sentence-transformers' ONNX backend runs: token states from ``input_ids``,
    ``attention_mask`` and ``token_type_ids``, then the folder's own modules. That backend needs optimum-onnx,
    which accepts only transformers < 4.58, so the file is run here with onnxruntime and the folder's modules."""
    import onnxruntime
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "hub"
    assert main(["-q", "export", "--model", str(tiny_st_base), "--out", str(out), "--onnx", "--no-validate"]) == 0
    assert (out / "onnx" / "model.onnx").is_file()
    texts = [sciembed.paper_text(p, "[SEP]") if isinstance(p, dict) else p for p in TEXTS]
    reference = SentenceTransformer(str(tiny_st_base), device="cpu")
    session = onnxruntime.InferenceSession(str(out / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [node.name for node in session.get_outputs()] == ["last_hidden_state"]
    features = reference.tokenizer(texts, padding=True, truncation=True, return_tensors="np")
    states = session.run(None, {node.name: features[node.name] for node in session.get_inputs()})[0]
    pooled = {
        "token_embeddings": torch.from_numpy(states),
        "attention_mask": torch.from_numpy(features["attention_mask"]),
    }
    for module in list(reference)[1:]:  # the folder's Pooling and Normalize, as the ONNX backend applies them
        pooled = module(pooled)
    np.testing.assert_allclose(
        pooled["sentence_embedding"].numpy(), reference.encode(texts, batch_size=len(texts)), atol=1e-4, rtol=0
    )

    model, tokenizer = from_bert("multi2spe", tiny_bert)
    family = save_pretrained(model, tokenizer, tmp_path / "family")
    assert (
        main(
            ["-q", "export", "--model", str(family), "--out", str(tmp_path / "family-hub"), "--onnx", "--no-validate"]
        )
        == 2
    )
    assert "a multi2spe model embeds with its own forward" in caplog.text
    assert not (tmp_path / "family-hub").exists() and not (tmp_path / ".family-hub.partial").exists()


def test_an_ensemble_loads_every_member_on_onnx(tiny_bert, tmp_path):
    from sciembed import Encoder
    from sciembed.encoders import EnsembleEncoder, save_ensemble

    torch.manual_seed(0)
    control, tokenizer = from_bert("control_code", tiny_bert)
    save_pretrained(control, tokenizer, tmp_path / "control")
    save_ensemble(tmp_path / "ensemble", [tiny_bert, tmp_path / "control"])
    pytorch = Encoder.from_pretrained(tmp_path / "ensemble", device="cpu", task_format="classification")
    onnx = Encoder.from_pretrained(
        tmp_path / "ensemble",
        device="cpu",
        task_format="classification",
        backend="onnx",
        engine_cache=tmp_path / "onnx",
    )
    assert isinstance(onnx, EnsembleEncoder) and all(member.backend == "onnx" for member in onnx.members)
    assert_same_vectors(pytorch, onnx)
    assert onnx.fingerprint() != pytorch.fingerprint()
