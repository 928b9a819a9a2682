"""The OpenVINO backend: PyTorch's vectors (1e-4) for every model the ONNX backend exports (each family's in its
contract, ``family_contract.py``), the model converted once and cached, int8 (post-training and weight-only) refused
until its gate passes, nncf's usage reports off, and ``--backend openvino`` through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("openvino", reason="the openvino extra is not installed: pip install -e '.[openvino]'")
pytest.importorskip("nncf", reason="the openvino extra is not installed: pip install -e '.[openvino]'")

from helpers import shared_data  # noqa: E402
from test_onnx_backend import TEXTS, assert_same_vectors  # noqa: E402

import sciembed  # noqa: E402
from sciembed import onnx_backend, openvino_backend  # noqa: E402
from sciembed.cli import main  # noqa: E402
from sciembed.io import read_embeddings  # noqa: E402


def both(folder, cache, **options):
    """The PyTorch and OpenVINO encoders of one model folder with the same settings."""
    load = sciembed.PaperEncoder.from_pretrained
    return load(folder, device="cpu", **options), load(
        folder, device="cpu", backend="openvino", engine_cache=cache, **options
    )


@pytest.mark.parametrize("options", [{}, {"pooling": "mean", "normalize": True}, {"max_length": 12}])
def test_a_plain_encoder_gives_pytorch_s_vectors_and_converts_once(tiny_bert, tmp_path, monkeypatch, options):
    pytorch, openvino = both(tiny_bert, tmp_path, **options)
    assert_same_vectors(pytorch, openvino)
    [folder] = (tmp_path / "openvino").iterdir()
    assert json.loads((folder / "convert.json").read_text())["max_abs_difference_to_pytorch"] <= 1e-4
    assert not list(folder.glob("*.onnx"))  # the export is read once, then only the IR is kept
    assert openvino.fingerprint() not in (pytorch.fingerprint(), openvino.with_quantization("int8").fingerprint())

    def again(*args, **kwargs):
        raise AssertionError("converted again although the cache holds the model")

    monkeypatch.setattr(onnx_backend, "export_encoder", again)
    monkeypatch.setattr(openvino_backend, "convert_encoder", again)
    second = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", engine_cache=tmp_path, **options
    )
    np.testing.assert_array_equal(
        second.encode(TEXTS, show_progress_bar=False), openvino.encode(TEXTS, show_progress_bar=False)
    )


def test_fp32_runs_float32_products_where_the_cpu_has_bf16(tiny_bert, tmp_path):
    _, openvino = both(tiny_bert, tmp_path)
    openvino.encode(TEXTS, show_progress_bar=False)
    [model] = openvino._engine._sessions.values()
    assert str(model.compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    layers = [op.get_rt_info() for op in model.compiled.get_runtime_model().get_ordered_ops()]
    products = [
        info["runtimePrecision"].astype(str) for info in layers if info["layerType"].astype(str) == "FullyConnected"
    ]
    assert products and set(products) == {"f32"}


def test_fp32_runs_each_batch_as_parts_on_one_stream_per_thread(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("SCIEMBED_ONNX_THREADS", "3")
    pytorch, openvino = both(tiny_bert, tmp_path)
    widths, cut = [], onnx_backend.batch_parts
    monkeypatch.setattr(
        onnx_backend,
        "batch_parts",
        lambda *args: [p for p in cut(*args) if widths.append(p["input_ids"].shape)] or cut(*args),
    )
    for batch_size in (2, 5, len(TEXTS)):
        expected = pytorch.encode(TEXTS, batch_size=batch_size, show_progress_bar=False)
        got = openvino.encode(TEXTS, batch_size=batch_size, show_progress_bar=False)
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    [model] = openvino._engine._sessions.values()
    settings = model.settings()
    # One thread per stream (OpenVINO keeps to the cores the machine has).
    assert settings["parallelism"] == "batch" and settings["num_streams"] == settings["inference_num_threads"]
    assert settings["shape_bucket"] is None  # each part runs at its own width
    assert sum(rows for rows, _ in widths[-3:]) == len(TEXTS)  # the last batch, all texts, in three parts
    assert len({width for _, width in widths[-3:]}) > 1  # a part of shorter texts drops the columns only padding fills


@pytest.mark.parametrize("threads", ["1", "2"])
def test_inputs_are_padded_to_few_widths_within_max_length(tiny_bert, tmp_path, monkeypatch, threads):
    import openvino as ov

    monkeypatch.setenv("SCIEMBED_ONNX_THREADS", threads)
    monkeypatch.setattr(openvino_backend, "SHAPE_BUCKET", 8)
    monkeypatch.setattr(openvino_backend, "BUCKETED", ("fp32",))  # fp32 too: its vectors are PyTorch's
    pytorch, openvino = both(tiny_bert, tmp_path, max_length=20)
    openvino.encode(TEXTS[:1], show_progress_bar=False)  # converted (and checked) before the widths are read
    widths = set()

    def spy(run):
        def recorded(self, feed, *args):
            widths.add(feed["input_ids"].shape[1])
            return run(self, feed, *args)

        return recorded

    monkeypatch.setattr(ov.InferRequest, "infer", spy(ov.InferRequest.infer))
    monkeypatch.setattr(ov.AsyncInferQueue, "start_async", spy(ov.AsyncInferQueue.start_async))
    texts = [*TEXTS, "x", "graph", " ".join(["paper"] * 40)]
    for batch_size in (1, 3, len(texts)):
        expected = pytorch.encode(texts, batch_size=batch_size, show_progress_bar=False)
        got = openvino.encode(texts, batch_size=batch_size, show_progress_bar=False)
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    # Multiples of the bucket, and the encoder's max_length (20) where the next multiple (24) would pass it.
    assert widths == {8, 16, 20}


def test_int8_runs_batch_parts_with_the_performance_preset(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("SCIEMBED_ONNX_THREADS", "2")
    fp32 = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="openvino", engine_cache=tmp_path)
    folder = openvino_backend.model_folder(fp32, tmp_path / "openvino")
    model = openvino_backend.quantize(folder, "int8", fp32, fp32.texts(TEXTS))
    assert json.loads(model.with_suffix(".json").read_text())["recipe"]["preset"] == "performance"
    int8 = fp32.with_quantization("int8", gated=False)
    vectors = int8.encode(TEXTS, batch_size=len(TEXTS), show_progress_bar=False)
    [session] = int8._engine._sessions.values()
    assert session.settings()["parallelism"] == "batch"
    assert session.settings()["shape_bucket"] == openvino_backend.SHAPE_BUCKET
    assert session.settings()["max_width"] == int8.max_length
    # Its activation ranges are fixed: parts give the vectors of the whole batch.
    whole = openvino_backend.OpenVinoModel(model, parallelism=onnx_backend.Parallelism.OPERATORS)
    np.testing.assert_allclose(vectors, whole(fp32.features(fp32.texts(TEXTS))), atol=1e-5, rtol=0)
    assert {openvino_backend.parallelism(kind) for kind in ("bf16", "int8_weights")} == {"operators"}


def test_a_recipe_that_keeps_layers_the_model_lacks_in_float_is_refused(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setattr(openvino_backend, "ATTENTION_PRODUCTS", r".*/no_such_layer/MatMul$")
    fp32 = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="openvino", engine_cache=tmp_path)
    folder = openvino_backend.model_folder(fp32, tmp_path / "openvino")
    recipe = openvino_backend.Int8Recipe(float_attention=True)
    with pytest.raises(openvino_backend.OpenVinoError, match="does not fit this model.*float_attention=False"):
        openvino_backend.quantize(folder, "int8", fp32, fp32.texts(TEXTS), recipe=recipe)
    assert not (folder / "model_int8.xml").exists()


def test_a_sentence_transformers_model_gives_its_own_vectors(tiny_st_base, tmp_path):
    assert_same_vectors(*both(tiny_st_base, tmp_path))


def test_format_adapters_and_pals_convert_the_active_format(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from sciembed.formats.adapters import add_format_adapters
    from sciembed.formats.pals import PALsConfig, add_pals

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    adapters = add_format_adapters(AutoModel.from_pretrained(tiny_bert))
    pals = AutoModel.from_pretrained(tiny_bert)
    add_pals(pals, PALsConfig(hidden_size=12, num_attention_heads=4))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in adapters.named_parameters():
            if ".adapters." in name:  # adapters start as the identity: random weights make formats differ
                parameter.normal_(0, 0.2)
    for kind, model in (("adapters", adapters.eval()), ("pals", pals.eval())):
        pytorch = sciembed.PaperEncoder(model, tokenizer, device="cpu")
        openvino = sciembed.PaperEncoder(
            model, tokenizer, device="cpu", backend="openvino", engine_cache=tmp_path / kind
        )
        for task_format in ("proximity", "adhoc_query"):
            assert_same_vectors(pytorch.with_format(task_format), openvino.with_format(task_format))
        assert not np.allclose(
            openvino.with_format("proximity").encode(TEXTS, show_progress_bar=False),
            openvino.with_format("adhoc_query").encode(TEXTS, show_progress_bar=False),
        )


def test_what_cannot_be_exported_is_named_and_nothing_is_cached(tiny_bert, tmp_path, monkeypatch):
    _, openvino = both(tiny_bert, tmp_path)

    def untraceable(*args, **kwargs):
        raise RuntimeError("an operator the exporter does not know")

    monkeypatch.setattr("torch.onnx.export", untraceable)
    with pytest.raises(openvino_backend.OpenVinoError, match=r"BertModel \(.*\) does not export to ONNX: Runtime"):
        openvino.encode(TEXTS, show_progress_bar=False)
    assert not list(tmp_path.glob("*/*"))


def test_backend_options_that_do_not_go_together_are_refused_before_loading(tmp_path):
    missing = tmp_path / "no-model"  # loading it would fail: each refusal comes first
    for options, message in (
        ({"backend": "openvino", "device": "cuda"}, "the OpenVINO backend runs on CPU"),
        ({"backend": "onnx", "quantization": "int8_weights"}, "quantization 'int8_weights' needs backend='openvino'"),
        ({"quantization": "int8"}, "quantization 'int8' needs backend='onnx' or backend='openvino'"),
        ({"backend": "openvino", "quantization": "int4"}, r"one of \('fp32', 'int8', 'int8_weights', 'bf16'\)"),
        ({"backend": "onnx", "quantization": "bf16"}, "quantization 'bf16' needs backend='openvino'"),
    ):
        with pytest.raises(ValueError, match=message):
            sciembed.PaperEncoder.from_pretrained(missing, **options)


@pytest.mark.parametrize("kind", ["int8", "int8_weights"])
def test_int8_is_refused_until_its_gate_passes(kind, tiny_bert, tmp_path):
    from sciembed.evaluation.int8_gate import check_int8

    cacm = shared_data("cacm")
    int8 = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", quantization=kind, engine_cache=tmp_path
    )
    with pytest.raises(ValueError, match=f"OpenVINO {kind} for .* is refused: it has not been checked"):
        int8.encode(TEXTS, show_progress_bar=False)
    unquantized = int8.fingerprint()

    # Asked to gain a point over fp32, which int8 cannot: the gate fails, and int8 stays refused with the reason.
    failed = check_int8(int8, cacm, tolerance=-1.0, show_progress_bar=False)
    assert not failed.passed and failed.backend == "openvino" and failed.quantization == kind
    assert 0.9 < failed.min_cosine < 1 and failed.calibration_papers == (300 if kind == "int8" else 0)
    refused = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", quantization=kind, engine_cache=tmp_path
    )
    with pytest.raises(ValueError, match=r"it failed its quality gate \(cite MAP .* more than -1.0 points\)"):
        refused.encode(TEXTS, show_progress_bar=False)

    passed = check_int8(int8, cacm, tolerance=abs(failed.map_drop) + 0.5, show_progress_bar=False)
    assert passed.passed and passed.int8_map == failed.int8_map  # the same calibration gives the same model
    gated = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", quantization=kind, engine_cache=tmp_path
    )
    fp32 = gated.with_quantization("fp32")
    # Cached vectors of int8 name what it was calibrated on; weight-only int8 has no calibration.
    assert (gated.fingerprint() != unquantized) == (kind == "int8")
    vectors, reference = gated.encode(TEXTS, show_progress_bar=False), fp32.encode(TEXTS, show_progress_bar=False)
    assert not np.array_equal(vectors, reference)
    cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.9
    other = "int8_weights" if kind == "int8" else "int8"  # each kind has its own verdict
    with pytest.raises(ValueError, match="it has not been checked"):
        gated.with_quantization(other).encode(TEXTS, show_progress_bar=False)


def runtime_precisions(encoder, layer_type="FullyConnected"):
    """The precisions OpenVINO runs ``layer_type`` layers of ``encoder``'s compiled model in."""
    [model] = encoder._engine._sessions.values()
    layers = [op.get_rt_info() for op in model.compiled.get_runtime_model().get_ordered_ops()]
    return {info["runtimePrecision"].astype(str) for info in layers if info["layerType"].astype(str) == layer_type}


def cpu_has_bf16() -> bool:
    """Whether OpenVINO can compute in bfloat16 on this CPU."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@pytest.mark.skipif(
    not cpu_has_bf16(),
    reason="this CPU has no bfloat16 arithmetic (AVX-512 BF16 or AMX), which quantization='bf16' needs",
)
def test_bf16_runs_bfloat16_products_behind_the_gate_under_its_own_key(tiny_bert, tmp_path):
    from sciembed.evaluation.int8_gate import check_int8

    cacm = shared_data("cacm")
    bf16 = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", quantization="bf16", engine_cache=tmp_path
    )
    with pytest.raises(ValueError, match="OpenVINO bf16 for .* is refused: it has not been checked"):
        bf16.encode(TEXTS, show_progress_bar=False)
    failed = check_int8(bf16, cacm, tolerance=-1.0, show_progress_bar=False)
    assert not failed.passed and failed.quantization == "bf16" and failed.calibration_papers == 0
    with pytest.raises(ValueError, match=r"it failed its quality gate \(cite MAP .* more than -1.0 points\)"):
        bf16.encode(TEXTS, show_progress_bar=False)
    assert check_int8(bf16, cacm, tolerance=abs(failed.map_drop) + 0.5, show_progress_bar=False).passed

    [folder] = (tmp_path / "openvino").iterdir()
    assert sorted(path.name for path in folder.glob("*.xml")) == ["model.xml"]  # it runs the fp32 model
    fp32 = bf16.with_quantization("fp32")
    vectors, reference = bf16.encode(TEXTS, show_progress_bar=False), fp32.encode(TEXTS, show_progress_bar=False)
    assert runtime_precisions(bf16) == {"bf16"} and runtime_precisions(fp32) == {"f32"}
    assert not np.array_equal(vectors, reference)
    cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.999
    keys = {bf16.fingerprint(), fp32.fingerprint(), bf16.with_quantization("int8").fingerprint()}
    assert len(keys) == 3  # cached vectors of bf16 are its own
    with pytest.raises(ValueError, match="OpenVINO int8 for .* it has not been checked"):
        bf16.with_quantization("int8").encode(TEXTS, show_progress_bar=False)  # each kind has its own verdict


@pytest.mark.parametrize("capabilities", [("FP32", "BF16", "INT8"), ("FP32", "INT8")])
def test_int8_runs_its_float_operations_in_float32_on_every_cpu(tiny_bert, tmp_path, monkeypatch, capabilities):
    monkeypatch.setattr(openvino_backend, "cpu_capabilities", lambda: capabilities, raising=False)
    fp32 = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="openvino", engine_cache=tmp_path)
    folder = openvino_backend.model_folder(fp32, tmp_path / "openvino")
    openvino_backend.quantize(folder, "int8", fp32, fp32.texts(TEXTS))
    int8 = fp32.with_quantization("int8", gated=False)
    vectors = int8.encode(TEXTS, show_progress_bar=False)
    [model] = int8._engine._sessions.values()
    assert str(model.compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    assert "bf16" not in runtime_precisions(int8, "Eltwise")
    # A verdict holds for the arithmetic it was checked in: one given in bfloat16 does not admit int8.
    (folder / "int8_gate.json").write_text(json.dumps({"passed": True, "inference_precision": "bf16"}))
    with pytest.raises(ValueError, match="OpenVINO int8 for .* is refused: it has not been checked"):
        fp32.with_quantization("int8").encode(TEXTS, show_progress_bar=False)
    (folder / "int8_gate.json").write_text(json.dumps({"passed": True, "inference_precision": "f32"}))
    np.testing.assert_array_equal(fp32.with_quantization("int8").encode(TEXTS, show_progress_bar=False), vectors)


def test_bf16_is_refused_before_loading_where_the_cpu_lacks_it(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(openvino_backend, "cpu_capabilities", lambda: ("FP32", "INT8"))
    missing = tmp_path / "no-model"  # loading it would fail: the refusal comes first
    with pytest.raises(ValueError, match=r"'bf16' needs a CPU with bfloat16 arithmetic .* finds FP32, INT8 here"):
        sciembed.PaperEncoder.from_pretrained(missing, backend="openvino", quantization="bf16")
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"paper_id": "1", "title": "A paper"}) + "\n")
    embed = ["-q", "embed", "--model", str(missing), "--input", str(papers), "--output", str(tmp_path / "v.npy")]
    assert main([*embed, "--backend", "openvino", "--onnx-quantization", "bf16"]) == 2
    assert "--backend openvino --onnx-quantization bf16: quantization 'bf16' needs a CPU with bfloat16" in caplog.text
    assert "Use quantization 'fp32'" in caplog.text and not (tmp_path / "v.npy").exists()


def test_int8_is_calibrated_on_papers_its_gate_does_not_score(tiny_bert, tmp_path, monkeypatch):
    from sciembed.evaluation import int8_gate

    cacm = shared_data("cacm")
    calibrated, scored = [], []
    quantize, encode = openvino_backend.quantize, sciembed.PaperEncoder.encode

    def spy_quantize(folder, quantization, encoder, texts=(), **options):
        calibrated.extend(texts)
        return quantize(folder, quantization, encoder, texts, **options)

    def spy_encode(self, texts, **options):
        scored.extend(texts)
        return encode(self, texts, **options)

    monkeypatch.setattr(openvino_backend, "quantize", spy_quantize)
    monkeypatch.setattr(sciembed.PaperEncoder, "encode", spy_encode)
    int8 = sciembed.PaperEncoder.from_pretrained(
        tiny_bert, device="cpu", backend="openvino", quantization="int8", engine_cache=tmp_path
    )
    verdict = int8_gate.check_int8(int8, cacm, tolerance=100, show_progress_bar=False)
    assert len(calibrated) == verdict.calibration_papers == openvino_backend.CALIBRATION_SIZE
    assert scored and not set(calibrated) & set(scored)
    assert verdict.papers == len(scored) // 2 and verdict.papers_digest and verdict.calibration_digest
    # Papers given to calibrate on are used less those the check set holds; none left is an error.
    papers = [*scored[:5], "A paper outside the check set"]
    calibrated.clear()
    int8_gate.check_int8(int8, cacm, tolerance=100, show_progress_bar=False, calibration=papers)
    assert calibrated == ["A paper outside the check set"]
    with pytest.raises(ValueError, match="every one of the 5 calibration papers is also in the check set"):
        int8_gate.check_int8(int8, cacm, show_progress_bar=False, calibration=papers[:5])


def test_the_gate_s_seeded_draw_is_the_same_in_every_process(tmp_path):
    folder = tmp_path / "cacm"
    folder.mkdir()
    (folder / "cacm.all").write_text(
        "".join(f".I {i}\n.T\nPaper {i} on lists\n.X\n{i % 40 + 1}\t5\t{i}\n" for i in range(1, 41))
    )
    script = (
        "import sys; from sciembed.evaluation import load_tasks; "
        "print(list(load_tasks('cacm', sys.argv[1], tasks=['cite']).tasks[0].documents))"
    )
    orders = {
        subprocess.run(
            [sys.executable, "-c", script, str(folder)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(orders) == 1  # the order a seeded calibration draw picks from does not move with string hashing


def test_nncf_is_imported_with_its_usage_reports_off(tmp_path):
    """nncf (through openvino_telemetry) writes a client id under ``~/intel`` and reports usage unless told not to;
    run outside pytest, which nncf itself recognises and stays quiet in."""
    script = (
        "import os\n"
        "from sciembed.openvino_backend import _import_nncf\n"
        "nncf = _import_nncf()\n"
        "print(type(nncf.telemetry.wrapper.telemetry).__name__, 'CI' in os.environ, 'NNCF_CI' in os.environ)\n"
    )
    environment = {key: value for key, value in os.environ.items() if key not in ("CI", "NNCF_CI")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**environment, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["MagicMock", "False", "False"]  # a stub, and the environment as it was
    assert not (tmp_path / "intel").exists()


def test_cli_embeds_with_openvino_and_refuses_mismatched_options(tiny_bert, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SCIEMBED_CACHE", str(tmp_path / "cache"))
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in TEXTS if isinstance(p, dict)))
    embed = ["-q", "embed", "--model", str(tiny_bert), "--input", str(papers), "--no-progress"]
    for backend in ("pytorch", "openvino"):
        assert main([*embed, "--output", str(tmp_path / f"{backend}.npy"), "--backend", backend]) == 0
    (ids, expected), (openvino_ids, got) = (
        read_embeddings(tmp_path / "pytorch.npy"),
        read_embeddings(tmp_path / "openvino.npy"),
    )
    assert ids == openvino_ids and (tmp_path / "cache" / "openvino").is_dir()
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)

    output = ["--output", str(tmp_path / "refused.npy")]
    assert main([*embed, *output, "--backend", "onnx", "--onnx-quantization", "int8_weights"]) == 2
    assert "--backend onnx --onnx-quantization int8_weights: quantization 'int8_weights' needs" in caplog.text
    assert main([*embed, *output, "--backend", "openvino", "--onnx-quantization", "int8_weights"]) == 2
    assert "OpenVINO int8_weights for" in caplog.text and "is refused: it has not been checked" in caplog.text
    monkeypatch.setattr(openvino_backend, "openvino_available", lambda: False)
    assert main([*embed, *output, "--backend", "openvino"]) == 2
    assert "the OpenVINO backend needs the openvino extra: pip install 'sciembed[openvino]'" in caplog.text
    assert not (tmp_path / "refused.npy").exists()


def fake_quantizers(path) -> int:
    """How many FakeQuantize layers the IR model at ``path`` holds."""
    import openvino as ov

    return sum(op.get_type_name() == "FakeQuantize" for op in ov.Core().read_model(str(path)).get_ordered_ops())


def test_int8_vectors_are_cached_apart_by_the_recipe_that_made_the_model(tiny_bert, tmp_path):
    fp32 = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu", backend="openvino", engine_cache=tmp_path)
    folder = openvino_backend.model_folder(fp32, tmp_path / "openvino")
    int8 = fp32.with_quantization("int8", gated=False)
    keys, quantizers = [], []
    for recipe in (openvino_backend.INT8_RECIPE, openvino_backend.Int8Recipe(float_attention=True)):
        model = openvino_backend.quantize(folder, "int8", fp32, fp32.texts(TEXTS), recipe=recipe)
        assert json.loads(model.with_suffix(".json").read_text())["recipe"] == recipe.describe()
        keys.append(int8.fingerprint())
        quantizers.append(fake_quantizers(model))
    assert keys[0] != keys[1]  # the same papers through another recipe: other vectors, another key
    assert quantizers[1] < quantizers[0]  # the attention products stay in float
