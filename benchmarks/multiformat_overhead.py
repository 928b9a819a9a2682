"""Inference cost of each multi-format method, per format, against the plain encoder, in one run.

Built from the embedded all-MiniLM-L6-v2 and run on the same batch of real papers (``real_papers.distinct_papers``:
CACM, SciRepEval and S2ORC samples): control codes
(ControlCodeModel, the format a forward argument), one seq_bn adapter per format, AdapterFusion over the
four adapters (the format's Fuse layer active) and PALs (hidden 204, 6 heads). Each method is timed in each
of the four formats; every round runs every (method, format) once in random order and each is compared
with the plain BertModel within the same round (``timing.py``). SciRepEval (Table 5) reports 1x / 1.05x /
1.29x / 1.69x for control codes / adapters / PALs / fusion on BERT-base.

    python benchmarks/multiformat_overhead.py --data ../shared/data \\
        --output benchmarks/results/multiformat_overhead.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

import torch
from real_papers import distinct_papers
from timing import medians, paired_ratios, time_forward_passes
from transformers import AutoTokenizer, BertModel

import sciembed
from sciembed.families import from_bert
from sciembed.formats import FORMATS, activate_format, format_parameter_counts
from sciembed.formats.adapters import add_format_adapters, add_format_fusion
from sciembed.formats.pals import PALsConfig, add_pals
from sciembed.io import atomic_path

PAPER_RATIOS = {"control_code": 1.0, "adapters": 1.05, "pals": 1.29, "fusion": 1.69}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", type=Path, default=Path("../shared/data"), help="folder holding the samples (cacm/, ...)"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=20, help="timed forward passes of each (method, format)")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "multiformat_overhead.json")
    args = parser.parse_args()

    base = sciembed.default_model_path()
    papers, source = distinct_papers(args.data, args.batch_size)
    tokenizer = AutoTokenizer.from_pretrained(base)
    batch = tokenizer(
        [sciembed.paper_text(p, tokenizer.sep_token) for p in papers],
        padding=True,
        truncation=True,
        max_length=args.max_length,
        return_tensors="pt",
    )

    torch.manual_seed(0)
    plain = BertModel.from_pretrained(base, add_pooling_layer=False)
    models = {
        "control_code": from_bert("control_code", base)[0],
        "adapters": add_format_adapters(BertModel.from_pretrained(base, add_pooling_layer=False)),
        "fusion": add_format_fusion(add_format_adapters(BertModel.from_pretrained(base, add_pooling_layer=False))),
        "pals": BertModel.from_pretrained(base, add_pooling_layer=False),
    }
    add_pals(models["pals"], PALsConfig())
    for model in (plain, *models.values()):
        model.eval()

    def run(model, task_format):
        def forward():
            # Switching format is part of the cost: adapters and PALs switch by state, control codes by argument.
            return model(**batch, **activate_format(model, task_format))

        return forward

    runs = {"bert": lambda: plain(**batch)}
    runs.update(
        {
            f"{method}/{task_format}": run(model, task_format)
            for method, model in models.items()
            for task_format in FORMATS
        }
    )
    wall, cpu = time_forward_passes(runs, args.rounds)
    ratios = paired_ratios(cpu, "bert")
    by_method = {method: round(statistics.median(ratios[f"{method}/{f}"] for f in FORMATS), 3) for method in models}
    result = {
        "benchmark": "multiformat_overhead",
        "base_model": "all-MiniLM-L6-v2 (embedded)",
        "data": source,
        "batch_size": len(papers),
        "tokens_per_row": int(batch["input_ids"].shape[1]),
        "rounds": args.rounds,
        "ratio_to_bert_cpu": ratios,
        "ratio_to_bert_wall": paired_ratios(wall, "bert"),
        "median_ratio_over_formats_cpu": by_method,
        "scirepeval_table5_bert_base": PAPER_RATIOS,
        "parameters_per_format": {
            method: format_parameter_counts(model)["proximity"] for method, model in models.items()
        },
        "median_cpu_seconds_per_forward": medians(cpu),
        "torch": torch.__version__,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps(
            {
                k: result[k]
                for k in ("median_ratio_over_formats_cpu", "scirepeval_table5_bert_base", "parameters_per_format")
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
