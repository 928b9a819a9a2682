"""GPU check: sciembed against ``SentenceTransformer.encode`` in bf16 and fp16, and bf16 training, on one CUDA GPU.

One run of at most five minutes measures:

- encode throughput (papers/s) of sciembed's PyTorch path and of ``SentenceTransformer.encode``: the same model,
  dtype, batch size, max length and texts (1,000 distinct real papers), in fp32, bf16 and fp16;
- the cosine of each half-precision path's vectors to the fp32 vectors of the same library (min and mean);
- 20 training steps of the ``specter`` recipe on CACM with ``bf16=True``: the loss of each step and the step time.

It writes ``benchmarks/results/gpu_check.json`` with the GPU's name and the torch, CUDA, transformers and
sentence-transformers versions. Without a CUDA GPU it refuses to run (exit 2); ``--dry-run`` runs the same steps on
the CPU with tiny sizes (the test does).

The device machine has no network, no ``../shared/data`` and none of sciembed's dependencies beyond its image's
(torch, transformers, sentence-transformers, accelerate, ...): ``pip install -e .`` cannot run there. Prepare the
inputs here, carry them, and run the script from the repository with ``PYTHONPATH=src``:

    python benchmarks/gpu_check.py --prepare .gpu_check   # papers, CACM and the embedded model (in fp16, to travel)
    echo /.gpu_check/ >> .git/info/exclude
    # there, with .gpu_check carried (about 48 MB; the working tree and what is carried travel within 64 MiB) and
    # the wheels of what the image lacks, `datasets` with `dill` and `multiprocess` (device README, Notes):
    PYTHONPATH=src python3 benchmarks/gpu_check.py --inputs .gpu_check --output $OUT/gpu_check.json

The fp32 reference is computed from the carried weights as stored (fp16 values, upcast): the cosines measure what
the dtype of the computation costs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: What the check imports beside sciembed: the device image must hold each (``datasets`` travels as wheels).
NEEDED = ("torch", "transformers", "sentence_transformers", "accelerate", "datasets", "pyarrow", "sklearn", "psutil")
DTYPES = ("float32", "bfloat16", "float16")
#: Full and dry-run sizes: papers, batch size, training steps, timed repeats.
SIZES = {False: (1000, 64, 20, 3), True: (16, 8, 2, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepare", type=Path, help="write the inputs (papers, CACM, the model) to this folder; exit")
    parser.add_argument("--inputs", type=Path, help="a folder written by --prepare")
    parser.add_argument("--model", help="a sentence-transformers model folder (default: the inputs' or the embedded)")
    parser.add_argument("--papers", type=Path, help="a .jsonl of papers to embed (default: the inputs')")
    parser.add_argument("--train-data", type=Path, help="specter's training data (default: the inputs' cacm/)")
    parser.add_argument("--dry-run", action="store_true", help="the same steps on the CPU with tiny sizes")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_check.json")
    args = parser.parse_args(argv)
    if args.prepare is not None:
        prepare_inputs(args.prepare)
        return 0
    try:
        inputs = _inputs(args)
    except (ValueError, ImportError) as error:
        print(f"gpu_check: {error}", file=sys.stderr)
        return 2
    result = run_check(**inputs, dry_run=args.dry_run)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({name: result[name] for name in ("gpu", "encode_ratio", "min_cosine", "training")}, indent=1))
    return 0


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The checked inputs of a run: the device, the model, the papers and the training data."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"missing Python packages: {', '.join(missing)}; carry their wheels (device README, Notes) or install them"
        )
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        raise ValueError("no CUDA GPU here: this check measures one; --dry-run runs the same steps on the CPU")
    inputs = args.inputs
    model = args.model or (str(inputs / "model") if inputs else None)
    papers = args.papers or (inputs / "papers.jsonl" if inputs else None)
    train_data = args.train_data or (inputs / "cacm" if inputs else DATA / "cacm")
    for name, path in (("--papers", papers), ("--train-data", train_data), ("--model", model)):
        if path is not None and not Path(path).exists():
            raise ValueError(f"{name} {path}: not found (write the inputs with --prepare DIR, then pass --inputs DIR)")
    if papers is None:
        raise ValueError("give --inputs (a folder written by --prepare) or --papers")
    return {"model": model, "papers": papers, "train_data": train_data}


def prepare_inputs(folder: Path, count: int = 1000) -> None:
    """Write ``count`` distinct real papers, CACM and the embedded model (fp16 weights) to ``folder``.

    Args:
        folder: the folder to write (carried to the device machine).
        count: papers to embed.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from real_papers import distinct_papers
    from safetensors.torch import load_file, save_file

    import sciembed

    folder.mkdir(parents=True, exist_ok=True)
    papers, description = distinct_papers(DATA, count)
    with open(folder / "papers.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(paper) + "\n" for paper in papers)
    shutil.copytree(DATA / "cacm", folder / "cacm", dirs_exist_ok=True)
    model = folder / "model"
    shutil.copytree(sciembed.default_model_path(), model, dirs_exist_ok=True)
    weights = load_file(model / "model.safetensors")
    save_file({name: tensor.half() for name, tensor in weights.items()}, model / "model.safetensors")
    (folder / "README.txt").write_text(f"papers: {description}\nmodel: the embedded all-MiniLM-L6-v2, fp16 weights\n")
    print(f"wrote {folder}: {len(papers)} papers ({description}), cacm/, model/")


def run_check(model: str | None, papers: Path, train_data: Path, *, dry_run: bool) -> dict[str, Any]:
    """Measure encoding in each dtype against sentence-transformers, then bf16 training; return the results.

    Args:
        model: a sentence-transformers model folder (``None``: the embedded default).
        papers: a .jsonl of papers.
        train_data: the specter recipe's training data.
        dry_run: run on the CPU with tiny sizes.
    """
    import sentence_transformers
    import torch
    import transformers

    import sciembed

    started = time.perf_counter()
    count, batch_size, steps, repeats = SIZES[dry_run]
    device = "cpu" if dry_run else "cuda"
    records = [json.loads(line) for line in papers.read_text(encoding="utf-8").splitlines() if line.strip()][:count]
    model = model or sciembed.default_model_path()
    encode = {dtype: _encode(model, records, dtype, device, batch_size, repeats) for dtype in DTYPES}
    for dtype in DTYPES:
        for library in ("sciembed", "sentence_transformers"):
            reference, vectors = (np.asarray(encode[d][library]["vectors"], np.float64) for d in ("float32", dtype))
            cosines = np.sum(reference * vectors, axis=1) / (
                np.linalg.norm(reference, axis=1) * np.linalg.norm(vectors, axis=1)
            )
            encode[dtype][library]["cosine_to_fp32"] = {
                "min": round(float(cosines.min()), 6),
                "mean": round(float(cosines.mean()), 6),
            }
    for dtype in DTYPES:
        for library in ("sciembed", "sentence_transformers"):
            del encode[dtype][library]["vectors"]
    training = _train(model, train_data, steps, dry_run)
    return {
        "dry_run": dry_run,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() and not dry_run else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "sciembed": sciembed.__version__,
        "model": str(model),
        "papers": {"file": str(papers), "count": len(records)},
        "batch_size": batch_size,
        "encode": encode,
        "encode_ratio": {dtype: encode[dtype]["sciembed_over_sentence_transformers"] for dtype in DTYPES},
        "min_cosine": {
            dtype: encode[dtype]["sciembed"]["cosine_to_fp32"]["min"] for dtype in DTYPES if dtype != "float32"
        },
        "training": training,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _encode(model: str, records: list[dict], dtype: str, device: str, batch_size: int, repeats: int) -> dict:
    """Both libraries' throughput on the same texts in ``dtype``, each the median of ``repeats`` timed runs."""
    import torch
    from sentence_transformers import SentenceTransformer

    import sciembed

    encoder = sciembed.Encoder.from_pretrained(model, device=device, model_kwargs={"torch_dtype": dtype})
    texts = encoder.texts(records)
    st = SentenceTransformer(model, device=device, model_kwargs={"torch_dtype": dtype})
    st.max_seq_length = encoder.max_length
    runs = {
        "sciembed": lambda: encoder.encode(texts, batch_size=batch_size, show_progress_bar=False),
        "sentence_transformers": lambda: st.encode(texts, batch_size=batch_size, show_progress_bar=False),
    }
    result: dict[str, Any] = {}
    for library, run in runs.items():
        run()  # warm-up: kernels chosen, memory allocated
        seconds = []
        for _ in range(repeats):
            if device == "cuda":
                torch.cuda.synchronize()
            begun = time.perf_counter()
            vectors = run()
            seconds.append(time.perf_counter() - begun)
        median = statistics.median(seconds)
        result[library] = {
            "papers_per_s": round(len(texts) / median, 1),
            "seconds": round(median, 4),
            "output_dtype": str(vectors.dtype),
            "vectors": vectors,
        }
    result["sciembed_over_sentence_transformers"] = round(
        result["sciembed"]["papers_per_s"] / result["sentence_transformers"]["papers_per_s"], 3
    )
    result["max_length"] = encoder.max_length
    return result


def _train(model: str, data: Path, steps: int, dry_run: bool) -> dict[str, Any]:
    """``steps`` steps of the specter recipe with ``bf16=True``: each step's loss and time."""
    import torch
    from transformers import TrainerCallback

    from sciembed.training.run import prepare

    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if torch.cuda.is_available() and not dry_run:
                torch.cuda.synchronize()
            self.begun = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available() and not dry_run:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - self.begun)

    overrides = {"max_steps": steps, "bf16": True, "save_strategy": "no", "logging_steps": 1}
    if dry_run:
        overrides.update({"use_cpu": True, "per_device_train_batch_size": 4, "data.max_examples": 16})
    with tempfile.TemporaryDirectory() as output:
        run = prepare("specter", model, data, output, overrides)
        run.trainer.add_callback(StepTimer())
        outcome = run.trainer.train()
        losses = [entry["loss"] for entry in run.trainer.state.log_history if "loss" in entry]
    return {
        "recipe": "specter",
        "bf16": True,
        "steps": outcome.global_step,
        "batch_size": run.trainer.args.per_device_train_batch_size,
        "losses": [round(float(loss), 5) for loss in losses],
        "loss_finite": bool(np.isfinite(losses).all()) if losses else False,
        "step_seconds_median": round(statistics.median(times), 4) if times else None,
        "step_seconds_first": round(times[0], 4) if times else None,
    }


if __name__ == "__main__":
    sys.exit(main())
