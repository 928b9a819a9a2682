"""The main job of ``make demo``: the whole life of a model on the embedded default, as CLI commands.

1. ``sciembed train --recipe multi2spe``: split CACM's linked papers into training and held-out query
   papers, sample SPECTER triplets from the training part, and fine-tune a Multi2SPEModel built from
   the embedded all-MiniLM-L6-v2 for a short budget (the Trainer's progress bar), scoring the held-out
   cite task (SciDocs' protocol) before and after;
2. the held-out table, base against fine-tuned;
3. ``sciembed export``: a Hub-ready folder with the model card and the held-out results, checked by
   loading it in a fresh process without sciembed;
4. a fresh Python process without sciembed loads the exported folder with
   ``AutoModel.from_pretrained(..., trust_remote_code=True)``, embeds two papers and prints their similarity.

Every step prints the command it runs, so the README can show the same flow. Without ``DATA/cacm`` the
demo says so and runs on the small invented example set of :mod:`sciembed.data.example`, written as
S2ORC-style JSONL.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from .data.example import example_citation_links, example_papers

logger = logging.getLogger(__name__)

#: The budget that keeps the demo to a few minutes on two CPU cores: (optimiser steps, triplets per step).
CACM_BUDGET = {"max_steps": 20, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2, "data.held_out": 0.1}
EXAMPLE_BUDGET = {"max_steps": 6, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1, "data.held_out": 0.2}
SHARED = {"embedding.max_length": 128, "warmup_ratio": 0.0, "save_strategy": "no", "eval_strategy": "no", "logging_steps": 5,
          "per_device_eval_batch_size": 32}

_SIMILARITY = """
import json, sys
sys.modules["sciembed"] = None  # as on a machine without sciembed
import torch
from transformers import AutoModel, AutoTokenizer
folder, papers = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder)
texts = [p["title"] + tokenizer.sep_token + p["abstract"] for p in papers]
with torch.no_grad():
    vectors = model(**tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")).pooler_output
vectors = torch.nn.functional.normalize(vectors, dim=-1)
print(json.dumps({"class": type(model).__module__ + "." + type(model).__name__, "linked": float(vectors[0] @ vectors[1]),
                  "unlinked": float(vectors[0] @ vectors[2])}))
"""


def run_main_job(data_dir: str | os.PathLike[str], output: str | os.PathLike[str], *, steps: int | None = None) -> dict[str, Any]:
    """Run the four steps (see the module docstring); returns what they produced."""
    from .cli import main

    output = Path(output)
    data, papers, links, budget = _data(Path(data_dir), output)
    if steps is not None:
        budget = {**budget, "max_steps": steps}
    settings = [f"{key}={value}" for key, value in {**SHARED, **budget}.items()]
    train = ["train", "--recipe", "multi2spe", "--data", str(data), "--output", str(output / "run"), "--evaluate-before",
             *[arg for setting in settings for arg in ("--set", setting)]]
    _run(main, train, "1. fine-tune a Multi2SPEModel from the embedded MiniLM on the training queries")
    summary = json.loads((output / "run" / "train_results.json").read_text(encoding="utf-8"))
    print("\n2. held-out cite task (SciDocs protocol), before and after fine-tuning\n")
    print(format_table(summary))
    _run(main, ["export", "--model", str(output / "run" / "model"), "--out", str(output / "hub")],
         "3. export with the model card and the held-out results, checked without sciembed")
    card = output / "hub" / "README.md"
    print(f"\nmodel card: {card}")
    similarity = _similarity(output / "hub", papers, links)
    print("\n4. a fresh Python without sciembed: AutoModel.from_pretrained(..., trust_remote_code=True)")
    print(f"   loaded {similarity['class']}")
    print(f"   cosine({similarity['pair'][0]!r}, {similarity['pair'][1]!r}) = {similarity['linked']:.3f}  (linked by a citation)")
    print(f"   cosine({similarity['pair'][0]!r}, {similarity['pair'][2]!r}) = {similarity['unlinked']:.3f}  (not linked)")
    return {"summary": summary, "card": card, "similarity": similarity}


def format_table(summary: dict[str, Any]) -> str:
    """Base against fine-tuned held-out metrics of a ``train_results.json``."""
    before, after = summary.get("base_eval_metrics") or {}, summary["eval_metrics"]
    rows = [(name.removeprefix("eval_"), before.get(name), value) for name, value in after.items() if name != "epoch"]
    lines = [f"{'metric':<12} {'base':>8} {'fine-tuned':>11}", "-" * 33]
    lines += [f"{name:<12} {'' if b is None else f'{b:8.2f}':>8} {a:11.2f}" for name, b, a in rows]
    data, training = summary["data"], summary["settings"]["training"]
    per_step = training.get("per_device_train_batch_size", 0) * training.get("gradient_accumulation_steps", 1)
    lines.append(f"({data.get('held_out_queries')} held-out query papers; {summary['global_step']} optimiser steps of {per_step} "
                 f"triplets, sampled from {data.get('queries')} other query papers ({data.get('examples')} triplets available))")
    return "\n".join(lines)


def _data(data_dir: Path, output: Path) -> tuple[Path, list[dict[str, Any]], set[tuple[str, str]], dict[str, Any]]:
    """The citation data to train on, its papers and links, and the budget that suits its size."""
    cacm = data_dir / "cacm"
    if cacm.is_dir():
        from .data.smart import CACM_CITATION, read_smart_collection

        collection = read_smart_collection(cacm, skip_invalid=True)
        return cacm, collection.papers, collection.links.get(CACM_CITATION, set()), CACM_BUDGET
    logger.warning("real data not found at %s: running on sciembed's small invented example set instead", cacm)
    papers, links = example_papers(), example_citation_links()
    cites: dict[str, list[str]] = {p["paper_id"]: [] for p in papers}
    for a, b in sorted(links):
        cites[a].append(b)
    path = output / "example-data" / "papers.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**p, "outbound_citations": cites[p["paper_id"]], "inbound_citations": []}) + "\n" for p in papers),
                    encoding="utf-8")
    return path, papers, links, EXAMPLE_BUDGET


def _run(main, argv: list[str], title: str) -> None:
    print(f"\n{title}\n$ sciembed {shlex.join(argv)}\n", flush=True)
    code = main(argv)
    if code:
        raise RuntimeError(f"sciembed {argv[0]} failed (exit code {code}); see the messages above")


def _similarity(folder: Path, papers: list[dict[str, Any]], links: set[tuple[str, str]]) -> dict[str, Any]:
    """Embed a linked pair and an unlinked paper in a fresh process without sciembed."""
    by_id = {p["paper_id"]: p for p in papers if p.get("title") and p.get("abstract")}
    a, b = next((a, b) for a, b in sorted(links) if a in by_id and b in by_id)
    linked_to_a = {y for x, y in links if x == a} | {x for x, y in links if y == a}
    c = next(pid for pid in sorted(by_id) if pid != a and pid not in linked_to_a)
    chosen = [{"title": by_id[i]["title"], "abstract": by_id[i]["abstract"]} for i in (a, b, c)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _SIMILARITY, str(folder), json.dumps(chosen)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"loading {folder} without sciembed failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "pair": [by_id[i]["title"][:60] for i in (a, b, c)]}
