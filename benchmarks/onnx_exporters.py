"""The TorchScript and dynamo ONNX exporters on the embedded MiniLM, side by side in one run.

Each exporter exports :meth:`sciembed.PaperEncoder.forward`, ONNX Runtime's transformer optimizer fuses the
graph (:func:`sciembed.onnx_backend.export_encoder`), and ONNX Runtime's dynamic quantisation makes its int8
copy (:func:`sciembed.onnx_backend.quantize`). Reported per exporter: export time, the fused operators, the
largest difference and the smallest cosine to PyTorch's vectors, and docs/s of fp32 and int8 on the same
distinct real papers (``real_papers.distinct_papers``), the runs alternating so that load hits both alike.

    python benchmarks/onnx_exporters.py --data ../shared/data --output benchmarks/results/onnx_exporters.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
from embed_scale import machine
from encode_speed import min_cosine
from real_papers import distinct_papers

from sciembed import PaperEncoder
from sciembed.io import atomic_path
from sciembed.onnx_backend import EXPORTERS, INT8_FILE, OnnxSession, cpu_flags, cpu_threads, export_encoder, quantize


def batches(encoder: PaperEncoder, texts: list[str], batch_size: int) -> list[dict]:
    """The model inputs of ``texts`` in length-sorted batches, as the encoder makes them."""
    ordered = sorted(texts, key=len)
    return [encoder.features(ordered[i : i + batch_size]) for i in range(0, len(ordered), batch_size)]


def run(session, inputs: list[dict]) -> tuple[float, np.ndarray]:
    """Seconds to embed every batch of ``inputs``, and the vectors."""
    start = time.perf_counter()
    vectors = np.concatenate([session(features) for features in inputs])
    return time.perf_counter() - start, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--papers", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/onnx_exporters.json"))
    args = parser.parse_args()

    load_start = os.getloadavg()
    encoder = PaperEncoder.from_pretrained(device="cpu")
    papers, source = distinct_papers(args.data, args.papers)
    inputs = batches(encoder, encoder.texts(papers), args.batch_size)
    with torch.inference_mode():
        expected = np.concatenate([encoder.forward(features).float().numpy() for features in inputs])
    threads = cpu_threads()
    folder = Path(tempfile.mkdtemp(prefix="sciembed-exporters-"))
    exporters: dict[str, dict] = {}
    sessions = {}
    for exporter in EXPORTERS:
        target = folder / exporter
        target.mkdir()
        start = time.perf_counter()
        report = export_encoder(encoder, target / "model.onnx", exporter=exporter)
        seconds = time.perf_counter() - start
        quantize(target)
        exporters[exporter] = {
            "export_seconds": round(seconds, 1),
            "graph": report["graph"],
            "fused_operators": report["fused_operators"],
            "opset": report["opset"],
        }
        for kind, name in (("fp32", "model.onnx"), ("int8", INT8_FILE)):
            sessions[exporter, kind] = OnnxSession(target / name, threads=threads)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in sessions}
    vectors = {}
    for _ in range(args.repeats):  # alternating, so that drift in the load hits every path alike
        for key, session in sessions.items():
            seconds, vectors[key] = run(session, inputs)
            times[key].append(seconds)
    for (exporter, kind), seconds in times.items():
        best = min(seconds)
        exporters[exporter][kind] = {
            "docs_per_s": round(len(papers) / best, 1),
            "seconds": [round(s, 3) for s in seconds],
            "max_abs_difference_to_pytorch": float(np.abs(vectors[exporter, kind] - expected).max()),
            "min_cosine_to_pytorch": min_cosine(vectors[exporter, kind], expected),
        }
    for kind in ("fp32", "int8"):
        exporters["dynamo"][kind]["speed_vs_torchscript"] = round(
            exporters["dynamo"][kind]["docs_per_s"] / exporters["torchscript"][kind]["docs_per_s"], 3
        )
    result = {
        "model": encoder.name_or_path,
        "papers": len(papers),
        "source": source,
        "batch_size": args.batch_size,
        "threads": threads,
        "exporters": exporters,
        "machine": {**machine(), "cpu_flags": cpu_flags()},
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "versions": {name: version(name) for name in ("torch", "onnxruntime", "onnx", "onnxscript")},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(exporters, indent=2))


if __name__ == "__main__":
    main()
