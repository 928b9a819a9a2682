"""Engine settings of the ONNX and OpenVINO backends, each timed against ``SentenceTransformer.encode``.

Every variant embeds the same distinct real papers through :meth:`sciembed.PaperEncoder.encode`, its engine
swapped for the variant's session. Each timed run of a variant follows a run of the reference, so each ratio is
read from neighbouring runs. The int8 models are built as the backends build them. OpenVINO's int8 and ONNX
Runtime's static int8 are calibrated on real papers outside the timed set. The JSON records each variant's ratio
per round (of wall time and of this process's CPU time), the smallest cosine of its vectors to the reference's,
the CPU flags and the load average. A variant with a bucket pads each batch (by batch: each part) to a multiple of
that length, so fewer shapes are compiled. A variant with a recipe runs an OpenVINO int8 model made by that
post-training quantization recipe (``openvino_int8`` runs the backend's own recipe). A variant by batch runs the
backend's OpenVINO model on parts of each batch, one single-thread stream per core. The default run times
:data:`DEFAULT_VARIANTS`; ``--variants all`` times all. ``--paired`` times variants (:data:`PAIRED_VARIANTS`
unless told) against the first of them instead, in shuffled order over slices of the papers, without the
reference: that separates settings a few percent apart on a noisy machine. It records each session's first pass over
the papers too, every input shape new to it, as a user's first collection is.

    python benchmarks/int8_variants.py --data ../shared/data --output benchmarks/results/int8_variants.json
    python benchmarks/int8_variants.py --data ../shared/data --papers 1000 --rounds 5 --paired
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from embed_scale import machine
from encode_speed import min_cosine
from real_papers import distinct_papers, real_papers

import sciembed
from sciembed import PaperEncoder, onnx_backend, openvino_backend
from sciembed.io import atomic_path
from sciembed.onnx_backend import cpu_flags, cpu_threads

Engine = Literal["onnx", "openvino"]
#: ONNX Runtime's static int8 (QDQ, per-channel weights, uint8 activations) of the fused export.
STATIC_INT8_FILE = "model_int8_static_qdq.onnx"


@dataclass(frozen=True)
class Variant:
    """One engine setting: the backend, the model file and the session options."""

    engine: Engine
    model: str
    options: Mapping[str, Any] = field(default_factory=dict)
    #: Pad each batch's length to a multiple of this (0: no padding), so that fewer shapes are compiled.
    bucket: int = 0
    #: Papers per batch (0: ``--batch-size``).
    batch_size: int = 0
    #: OpenVINO int8 only: the key in :data:`RECIPES` of the post-training quantization that makes the model.
    recipe: str = ""
    #: How a session spreads a batch over the threads (ONNX fp32's default is by batch).
    parallelism: onnx_backend.Parallelism = onnx_backend.Parallelism.OPERATORS
    #: The most rows of one part of a batch, by batch (0: the backend's own).
    part_rows: int = 0


#: Post-training quantization recipes of the OpenVINO int8 variants, each made in a folder of its name.
RECIPES = {
    "float_attention": openvino_backend.Int8Recipe(float_attention=True),
    "mixed": openvino_backend.Int8Recipe(preset=openvino_backend.Int8Preset.MIXED),
    "no_smooth_quant": openvino_backend.Int8Recipe(smooth_quant_alpha=-1),
    "performance": openvino_backend.Int8Recipe(preset=openvino_backend.Int8Preset.PERFORMANCE),
    "performance_no_smooth_quant": openvino_backend.Int8Recipe(
        preset=openvino_backend.Int8Preset.PERFORMANCE, smooth_quant_alpha=-1
    ),
}
BF16 = {"INFERENCE_PRECISION_HINT": "bf16"}
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
BY_BATCH = onnx_backend.Parallelism.BATCH


VARIANTS = {
    "onnx_fp32": Variant("onnx", onnx_backend.FP32_FILE, parallelism=onnx_backend.Parallelism.BATCH),
    "onnx_int8": Variant("onnx", onnx_backend.INT8_FILE),
    "openvino_fp32": Variant("openvino", "model.xml", {"INFERENCE_PRECISION_HINT": "f32"}),
    "openvino_bf16": Variant("openvino", "model.xml", {"INFERENCE_PRECISION_HINT": "bf16"}),
    "openvino_int8": Variant("openvino", "model_int8.xml", {"INFERENCE_PRECISION_HINT": "f32"}),
    "openvino_int8_bf16": Variant("openvino", "model_int8.xml", {"INFERENCE_PRECISION_HINT": "bf16"}),
    "openvino_int8_bf16_bucket16": Variant("openvino", "model_int8.xml", {"INFERENCE_PRECISION_HINT": "bf16"}, 16),
    "openvino_bf16_bucket16": Variant("openvino", "model.xml", {"INFERENCE_PRECISION_HINT": "bf16"}, 16),
    "openvino_int8_throughput": Variant(
        "openvino", "model_int8.xml", {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "THROUGHPUT"}
    ),
    # OpenVINO int8: compile options, shapes, weight-only int8 and post-training quantization recipes.
    "openvino_int8_bf16_denormals": Variant(
        "openvino", "model_int8.xml", {**BF16, "CPU_DENORMALS_OPTIMIZATION": True}
    ),
    "openvino_int8_f32_denormals": Variant("openvino", "model_int8.xml", {**F32, "CPU_DENORMALS_OPTIMIZATION": True}),
    "openvino_bf16_denormals": Variant("openvino", "model.xml", {**BF16, "CPU_DENORMALS_OPTIMIZATION": True}),
    "openvino_int8_bf16_unpinned": Variant("openvino", "model_int8.xml", {**BF16, "ENABLE_CPU_PINNING": False}),
    "openvino_int8_bf16_bucket32": Variant("openvino", "model_int8.xml", BF16, bucket=32),
    "openvino_int8_bf16_batch64": Variant("openvino", "model_int8.xml", BF16, batch_size=64),
    "openvino_int8_weights_bf16": Variant("openvino", "model_int8_weights.xml", BF16),
    "openvino_int8_weights_f32": Variant("openvino", "model_int8_weights.xml", F32),
    "openvino_int8_weights_f32_no_dynamic_quantization": Variant(
        "openvino", "model_int8_weights.xml", {**F32, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
    ),
    **{
        f"openvino_int8_{name}_{hint}": Variant("openvino", f"{name}/model_int8.xml", options, recipe=name)
        for name in RECIPES
        for hint, options in (("bf16", BF16), ("f32", F32))
    },
    # OpenVINO by batch: parts of a batch, each trimmed to its own texts, on one single-thread stream per core.
    **{
        f"openvino_{name}_parts{rows}": Variant("openvino", model, options, parallelism=BY_BATCH, part_rows=rows)
        for name, model, options in (
            ("fp32", "model.xml", F32),
            ("bf16", "model.xml", BF16),
            ("int8", "model_int8.xml", F32),
            ("int8_bf16", "model_int8.xml", BF16),
        )
        for rows in (4, 8, 16)
    },
    # Parts of 4, each padded to a multiple of 16 tokens: the backend's int8 setting, and fp32 so for comparison.
    **{
        f"openvino_{name}_parts4_bucket16": Variant(
            "openvino", model, F32, parallelism=BY_BATCH, part_rows=4, bucket=16
        )
        for name, model in (("fp32", "model.xml"), ("int8", "model_int8.xml"))
    },
    **{
        f"openvino_int8_performance_f32_parts{rows}": Variant(
            "openvino", "performance/model_int8.xml", F32, recipe="performance", parallelism=BY_BATCH, part_rows=rows
        )
        for rows in (4, 8, 16)
    },
    # ONNX Runtime: another fused attention operator, attention left unfused, static QDQ int8, threads that spin.
    "onnx_fp32_mha": Variant("onnx", f"mha/{onnx_backend.FP32_FILE}"),
    "onnx_int8_mha": Variant("onnx", f"mha/{onnx_backend.INT8_FILE}"),
    "onnx_fp32_unfused_attention": Variant("onnx", f"unfused_attention/{onnx_backend.FP32_FILE}"),
    "onnx_int8_unfused_attention": Variant("onnx", f"unfused_attention/{onnx_backend.INT8_FILE}"),
    "onnx_int8_static_qdq": Variant("onnx", STATIC_INT8_FILE),
    "onnx_fp32_spinning": Variant("onnx", onnx_backend.FP32_FILE, {onnx_backend.ALLOW_SPINNING: "1"}),
    "onnx_int8_spinning": Variant("onnx", onnx_backend.INT8_FILE, {onnx_backend.ALLOW_SPINNING: "1"}),
}
#: The variants a run times unless told otherwise: the backends' settings and those that came near them.
DEFAULT_VARIANTS = (
    "onnx_fp32",
    "onnx_int8",
    "openvino_fp32",
    "openvino_fp32_parts4",
    "openvino_bf16",
    "openvino_int8",
    "openvino_int8_parts8",
    "openvino_int8_mixed_f32",
)
#: The variants ``--paired`` times unless told otherwise: OpenVINO's settings against the backend's int8.
PAIRED_VARIANTS = (
    "openvino_int8",
    "openvino_int8_mixed_f32",
    "openvino_int8_parts8",
    "openvino_bf16",
    "openvino_fp32_parts4",
    "openvino_fp32",
)
#: The fusion settings of the ONNX variants' graphs, each in a folder of its name beside the backend's export.
ONNX_FUSIONS = {"mha": {"use_multi_head_attention": True}, "unfused_attention": {"enable_attention": False}}


def session(variant: Variant, folder: Path, max_length: int) -> Callable[[Mapping[str, Any]], np.ndarray]:
    """A session running ``variant``'s model in ``folder``: batch inputs to float32 vectors.

    Args:
        variant: the engine setting.
        folder: the model folder of the variant's engine.
        max_length: the encoder's ``max_length``, which no bucket pads past.
    """
    if variant.engine == "onnx":
        onnx_session = onnx_backend.OnnxSession(folder / variant.model, parallelism=variant.parallelism)
        if variant.options:  # the backend's session options, with the variant's config entries added
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = cpu_threads(), 1
            for key, value in variant.options.items():
                options.add_session_config_entry(key, value)
            onnx_session.session = ort.InferenceSession(
                str(folder / variant.model), options, providers=["CPUExecutionProvider"]
            )
        return onnx_session
    if variant.parallelism is BY_BATCH:  # the backend's own model, with its hint, part size and bucket
        model = openvino_backend.OpenVinoModel(
            folder / variant.model,
            precision=openvino_backend.InferencePrecision(variant.options["INFERENCE_PRECISION_HINT"]),
            parallelism=BY_BATCH,
            max_width=max_length if variant.bucket else None,
            bucket=variant.bucket or None,
        )
        model.part_rows = variant.part_rows or model.part_rows
        return model
    import openvino as ov

    config = {"INFERENCE_NUM_THREADS": cpu_threads(), "PERFORMANCE_HINT": "LATENCY", **variant.options}
    compiled = ov.Core().compile_model(str(folder / variant.model), "CPU", config)
    request = compiled.create_infer_request()
    names = [port.get_any_name() for port in compiled.inputs]

    def run(features: Mapping[str, Any]) -> np.ndarray:
        feed = {name: features[name].numpy() for name in names}
        padding = -feed["input_ids"].shape[1] % variant.bucket if variant.bucket else 0
        if padding:  # padded positions are masked out, as the tokenizer's own padding is
            feed = {name: np.pad(value, ((0, 0), (0, padding))) for name, value in feed.items()}
        return np.array(request.infer(feed)[compiled.output(0)], dtype=np.float32)

    return run


def build(
    path: str, work: Path, calibration: list[dict], max_length: int, variants: list[Variant]
) -> dict[Engine, PaperEncoder]:
    """The encoders of ``path`` that ``variants`` run, with the models they need built in ``work``."""
    encoders: dict[Engine, PaperEncoder] = {
        engine: PaperEncoder.from_pretrained(
            path, device="cpu", max_length=max_length, backend=engine, engine_cache=work
        )
        for engine in sorted({variant.engine for variant in variants})
    }
    if "onnx" in encoders:
        onnx_folder = onnx_backend.export_folder(encoders["onnx"], work / "onnx")
        onnx_backend.quantize(onnx_folder)
        if any(v.engine == "onnx" and ("/" in v.model or v.model == STATIC_INT8_FILE) for v in variants):
            onnx_variant_models(encoders["onnx"], onnx_folder, encoders["onnx"].texts(calibration))
    if "openvino" in encoders:
        openvino_models(encoders["openvino"], work / "openvino", calibration, variants)
    for encoder in encoders.values():
        encoder.encode(["warm up"], show_progress_bar=False)
    return encoders


def openvino_models(encoder: PaperEncoder, cache: Path, calibration: list[dict], variants: list[Variant]) -> None:
    """Make the OpenVINO int8 models that ``variants`` run, each recipe's in a subfolder of its name.

    Args:
        encoder: the OpenVINO encoder.
        cache: the OpenVINO model cache in the work folder.
        calibration: papers the int8 models are calibrated on.
        variants: the variants to time.
    """
    folder = openvino_backend.model_folder(encoder, cache)
    texts = encoder.texts(calibration)
    models = {variant.model for variant in variants if variant.engine == "openvino"}
    if "model_int8.xml" in models:
        openvino_backend.quantize(folder, "int8", encoder, texts, subset_size=len(texts))
    if "model_int8_weights.xml" in models:
        openvino_backend.quantize(folder, "int8_weights", encoder)
    for name in sorted({variant.recipe for variant in variants if variant.recipe}):
        (folder / name).mkdir(exist_ok=True)
        for path in folder.glob("model.*"):
            shutil.copy(path, folder / name / path.name)
        openvino_backend.quantize(folder / name, "int8", encoder, texts, subset_size=len(texts), recipe=RECIPES[name])


def onnx_variant_models(encoder: PaperEncoder, folder: Path, calibration: list[str]) -> None:
    """Write the ONNX variants' models into ``folder``, the backend's export folder of ``encoder``.

    Args:
        encoder: the ONNX encoder whose export ``folder`` holds.
        folder: the export folder. Each fusion of :data:`ONNX_FUSIONS` gets a subfolder.
        calibration: paper texts the static int8 model is calibrated on.
    """
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    plain = folder / "model_plain.onnx"
    onnx_backend.export_encoder(encoder, plain, optimize=False)
    config = encoder.transformer.config
    for name, settings in ONNX_FUSIONS.items():
        fusion = FusionOptions("bert")
        for key, value in settings.items():
            setattr(fusion, key, value)
        fused = optimize_model(
            str(plain),
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            optimization_options=fusion,
        )
        (folder / name).mkdir(exist_ok=True)
        fused.save_model_to_file(str(folder / name / onnx_backend.FP32_FILE))
        onnx_backend.quantize(folder / name)

    class Papers(CalibrationDataReader):
        """Length-sorted batches of the calibration papers, as the encoder makes them."""

        def __init__(self, names: list[str]) -> None:
            ordered = sorted(calibration, key=len)
            self.batches = iter(
                {name: encoder.features(ordered[i : i + 16])[name].numpy() for name in names}
                for i in range(0, len(ordered), 16)
            )

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    # The fused operators are outside ONNX's shape inference: without their types the quantiser skips their outputs.
    typed = folder / "model_typed.onnx"
    onnx.save(
        SymbolicShapeInference.infer_shapes(onnx.load(str(folder / onnx_backend.FP32_FILE)), auto_merge=True), typed
    )
    quantize_static(
        typed,
        folder / STATIC_INT8_FILE,
        Papers(onnx_backend.OnnxSession(typed).input_names),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": TensorProto.FLOAT, "MatMulConstBOnly": True},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--papers", type=int, default=300, help="distinct papers timed")
    parser.add_argument("--calibration", type=int, default=300, help="papers OpenVINO int8 is calibrated on")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each variant")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument(
        "--variants",
        help="comma-separated names of VARIANTS, or all (default: DEFAULT_VARIANTS, or PAIRED_VARIANTS with --paired)",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="time the variants against the first, in shuffled order over slices of the papers, without the "
        "reference: steadier on a noisy machine",
    )
    parser.add_argument("--slices", type=int, default=4, help="--paired: slices of the papers per round")
    parser.add_argument(
        "--output",
        type=Path,
        help="the JSON file (default: results/int8_variants.json, or results/int8_variants_paired.json with --paired)",
    )
    args = parser.parse_args()
    results = Path(__file__).parent / "results"
    args.output = args.output or results / ("int8_variants_paired.json" if args.paired else "int8_variants.json")
    args.variants = args.variants or ",".join(PAIRED_VARIANTS if args.paired else DEFAULT_VARIANTS)
    names = list(VARIANTS) if args.variants == "all" else args.variants.split(",")
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {sorted(VARIANTS)}")

    from sentence_transformers import SentenceTransformer

    load_start = [round(x, 2) for x in os.getloadavg()]
    papers, source = distinct_papers(args.data, args.papers)
    timed = {paper["paper_id"] for paper in papers}
    others = [paper for paper in real_papers(args.data) if paper["paper_id"] not in timed]
    rng = np.random.default_rng(1)
    calibration_papers = [others[i] for i in rng.choice(len(others), args.calibration, replace=False)]
    path = sciembed.default_model_path()
    reference = SentenceTransformer(path, device="cpu")
    reference.max_seq_length = args.max_length
    with tempfile.TemporaryDirectory(prefix="int8-variants-") as work:
        encoders = build(path, Path(work), calibration_papers, args.max_length, [VARIANTS[name] for name in names])
        texts = next(iter(encoders.values())).texts(papers)

        def encode_with(name: str) -> Callable[[], np.ndarray]:
            variant = VARIANTS[name]
            encoder = encoders[variant.engine]
            folder = Path(work) / variant.engine / encoder.model_fingerprint()[:32]
            chosen = session(variant, folder, args.max_length)

            def run(chosen_papers: list[dict] = papers) -> np.ndarray:
                # The variant's session replaces the backend's own (one per format; this encoder has one).
                cache = encoder._engine._sessions
                for key in cache:
                    cache[key] = chosen
                return encoder.encode(
                    chosen_papers, batch_size=variant.batch_size or args.batch_size, show_progress_bar=False
                )

            return run

        runs = {name: encode_with(name) for name in names}
        # Each session's first pass over the papers, every input shape new to it, warms it up.
        first_pass: dict[str, float] = {}
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            first_pass[name] = time.perf_counter() - start
        if args.paired:
            reference_vectors = reference.encode(texts, batch_size=args.batch_size)
            paired = paired_rounds(runs, papers, args.rounds, args.slices)
            for name in names:
                paired[name]["min_cosine_to_st_pytorch"] = round(min_cosine(runs[name](), reference_vectors), 6)
                paired[name]["first_pass_seconds"] = round(first_pass[name], 3)
                paired[name][f"first_pass_speedup_over_{names[0]}"] = round(first_pass[names[0]] / first_pass[name], 3)
            write(
                args.output,
                {
                    "benchmark": "int8_variants_paired",
                    "data": source,
                    "papers": len(papers),
                    "calibration_papers": args.calibration,
                    "batch_size": args.batch_size,
                    "rounds": args.rounds,
                    "slices": args.slices,
                    "baseline": names[0],
                    "variants": paired,
                    "load_average_1_5_15_min": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
                    "threads": cpu_threads(),
                    "cpu": {**machine(), "flags": cpu_flags()},
                },
            )
            return
        times: dict[str, list[float]] = {name: [] for name in ["st_pytorch", *names]}
        cpu_times: dict[str, list[float]] = {name: [] for name in ["st_pytorch", *names]}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for name in names:
                for label, run in (
                    ("st_pytorch", lambda: reference.encode(texts, batch_size=args.batch_size)),
                    (name, runs[name]),
                ):
                    start, cpu_start = time.perf_counter(), time.process_time()
                    vectors[label] = np.asarray(run())
                    times[label].append(time.perf_counter() - start)
                    cpu_times[label].append(time.process_time() - cpu_start)
                print(name, round(times["st_pytorch"][-1] / times[name][-1], 2), flush=True)
    result = {
        "benchmark": "int8_variants",
        "data": source,
        "papers": len(papers),
        "calibration_papers": args.calibration,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "st_pytorch_median_docs_per_s": round(len(papers) / statistics.median(times["st_pytorch"]), 2),
        "variants": {
            name: {
                **VARIANTS[name].__dict__,
                "ratio_to_st_pytorch_by_round": [
                    round(reference_time / own, 3)
                    for reference_time, own in zip(times["st_pytorch"][i :: len(names)], times[name])
                ],
                # Under load, the ratio of the CPU time this process spent is steadier than that of the wall time.
                "cpu_time_ratio_to_st_pytorch_by_round": [
                    round(reference_time / own, 3)
                    for reference_time, own in zip(cpu_times["st_pytorch"][i :: len(names)], cpu_times[name])
                ],
                "median_docs_per_s": round(len(papers) / statistics.median(times[name]), 2),
                "min_cosine_to_st_pytorch": round(min_cosine(vectors[name], vectors["st_pytorch"]), 6),
            }
            for i, name in enumerate(names)
        },
        "load_average_1_5_15_min": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "threads": cpu_threads(),
        "cpu": {**machine(), "flags": cpu_flags()},
    }
    write(args.output, result)


def paired_rounds(
    runs: Mapping[str, Callable[[list[dict]], np.ndarray]], papers: list[dict], rounds: int, slices: int
) -> dict[str, dict[str, Any]]:
    """Time the variants against the first in shuffled order, slice by slice, without the reference.

    Each round embeds each slice of the papers (every ``slices``-th paper, so every slice holds every length)
    with every variant, in a seeded random order. A variant's speedup over the first is read pair by pair.

    Args:
        runs: each variant's encode of a list of papers. The first is the baseline.
        papers: the timed papers.
        rounds: rounds over all slices.
        slices: slices of the papers per round.
    """
    import random

    parts = [papers[i::slices] for i in range(slices)]
    times: dict[str, list[float]] = {name: [] for name in runs}
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        for part in parts:
            names = list(runs)
            shuffle(names)
            for name in names:
                start = time.perf_counter()
                runs[name](part)
                times[name].append(time.perf_counter() - start)
    baseline = next(iter(runs))
    results = {}
    for name, own in times.items():
        speedups = [base / mine for base, mine in zip(times[baseline], own)]
        results[name] = {
            "pairs": len(own),
            "seconds_per_slice_median": round(statistics.median(own), 4),
            f"speedup_over_{baseline}_median": round(statistics.median(speedups), 3),
            f"faster_than_{baseline}_share": round(sum(value > 1 for value in speedups) / len(speedups), 3),
        }
    return results


def write(path: Path, result: dict[str, Any]) -> None:
    """Write ``result`` as JSON to ``path`` (whole or not at all) and print it."""
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
