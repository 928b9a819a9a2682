"""``sciembed demo``, the main job of ``make demo``.

It runs the whole life of a model on the embedded default, as CLI commands.

1. ``sciembed train --recipe specter`` (the recipe ``benchmarks/recipes.py`` recommends, anchored on SciRepEval's
   samples when ``DATA/scirepeval-samples`` holds them): split CACM's linked papers
   into training and held-out query papers, sample SPECTER triplets from the training part, and fine-tune the
   embedded all-MiniLM-L6-v2 in its own embedding (mean pooling + L2 normalisation) with the recipe's unit-vector
   settings (multiple-negatives ranking with each triplet's hard negative, then WiSE-FT's average with MiniLM) for a
   short budget on texts cut to 128 tokens, scoring the held-out cite task (SciDocs' protocol) before and after in
   the model's own window.
2. the held-out table: MiniLM as published, the recipe's step 0 when it differs, and the fine-tuned model.
3. ``sciembed export``: a Hub-ready folder with the model card and the held-out results, checked by
   loading it in a fresh process without sciembed.
4. a fresh Python process without sciembed loads MiniLM as published and the exported folder with
   sentence-transformers and measures, on held-out cited pairs, how often the cited paper is closer to
   its query than a random paper is, before and after.

Every step prints the command it runs, so the README can show the same flow. Without ``DATA/cacm`` the
demo says so and runs on the small invented example set of :mod:`sciembed.data.example`, written as
S2ORC-style JSONL. It ends with how long it took, and says that its timings and the fine-tuned model's
numbers vary with the machine and its load, and where earlier runs are recorded (:data:`SEEN_ON_CACM`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.example import example_citation_links, example_papers
from ..default_model import default_model_path
from .options import DEFAULT_DATA, HelpFormatter

logger = logging.getLogger(__name__)

RECIPE = "specter"
#: The budget that keeps the demo to a few minutes on two CPU cores: optimiser steps of 32 triplets on CACM.
CACM_BUDGET = {
    "max_steps": 20,
    "per_device_train_batch_size": 32,
    "gradient_accumulation_steps": 1,
    "data.held_out": 0.2,
}
EXAMPLE_BUDGET = {
    "max_steps": 6,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "data.held_out": 0.2,
}
#: Training texts cut to 128 tokens (cheaper steps); the model keeps MiniLM's window, as its users embed with it. Each
#: batch is embedded whole, in one forward pass (``loss.micro_batch_size``).
SHARED = {
    "data.max_length": 128,
    "loss.micro_batch_size": "null",
    "save_strategy": "no",
    "eval_strategy": "no",
    "logging_steps": 5,
    "per_device_eval_batch_size": 32,
}
#: Held-out (query, cited paper, random paper) triples scored in step 4.
PAIRS = 300
#: Where runs on CACM at the default budget are recorded, since timings and the fine-tuned numbers vary with the
#: machine and its load.
SEEN_ON_CACM = "the held-out numbers of earlier runs are on the Benchmarks page of the documentation"

_RANKED_ABOVE = """
import json, sys
sys.modules["sciembed"] = None  # as on a machine without sciembed
from sentence_transformers import SentenceTransformer
folders, triples = json.loads(sys.argv[1]), json.load(sys.stdin)
result = {}
for name, folder in folders.items():
    model = SentenceTransformer(folder, device="cpu", trust_remote_code=True)
    texts = sorted({text for triple in triples for text in triple})
    vectors = dict(zip(texts, model.encode(texts, batch_size=32, normalize_embeddings=True)))
    wins = [float(vectors[q] @ vectors[c] > vectors[q] @ vectors[r]) for q, c, r in triples]
    result[name] = {"share": sum(wins) / len(wins), "class": type(model[0].auto_model).__name__}
print(json.dumps(result))
"""


def run_main_job(
    data_dir: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    steps: int | None = None,
    overwrite: bool = False,
    output_options: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the four steps (see the module docstring). Returns what they produced. An ``output`` that exists (an
    earlier demo) is refused before anything runs unless ``overwrite``. ``output_options`` (``-v``, ``-q``) go to
    each command the demo runs."""
    from ..io import refuse_replacing

    started = time.perf_counter()
    output = refuse_replacing(output, overwrite=overwrite)
    replacing = ["--overwrite"] if overwrite else []
    data, papers, links, budget = _data(Path(data_dir), output)
    if steps is not None:
        budget = {**budget, "max_steps": steps}
    settings = [f"{key}={value}" for key, value in {**SHARED, **budget}.items()]
    train = [
        *output_options,
        "train",
        "--recipe",
        RECIPE,
        "--data",
        str(data),
        "--output",
        str(output / "run"),
        "--evaluate-before",
        *replacing,
        *[arg for setting in settings for arg in ("--set", setting)],
    ]
    _run(train, "1. fine-tune the embedded MiniLM (SPECTER recipe, in MiniLM's own embedding) on the training queries")
    summary = json.loads((output / "run" / "train_results.json").read_text(encoding="utf-8"))
    print("\n2. held-out cite task (SciDocs protocol): the base as published, and fine-tuned\n")
    print(format_table(summary))
    _run(
        [
            *output_options,
            "export",
            "--model",
            str(output / "run" / "model"),
            "--out",
            str(output / "hub"),
            *replacing,
            "--model-name",
            f"all-MiniLM-L6-v2-{RECIPE}-{Path(data).name}",
        ],
        "3. export with the model card and the held-out results, checked without sciembed",
    )
    card = output / "hub" / "README.md"
    print(f"\nmodel card: {card}")
    ranked = _ranked_above(output / "hub", papers, links, summary["data"]["held_out_ids"])
    print(
        "\n4. a fresh Python without sciembed: SentenceTransformer(...) on the exported folder "
        "and on MiniLM as published"
    )
    print(f"   {ranked['pairs']} held-out cited pairs (query, cited paper), each against a random paper:")
    for name, label in (
        ("published", "MiniLM as published"),
        ("fine-tuned", f"fine-tuned ({ranked['fine-tuned']['class']})"),
    ):
        print(f"   {label:<32} the cited paper is the closer one in {100 * ranked[name]['share']:.1f}% of them")
    print(
        f"\n{closing_note(time.perf_counter() - started, on_cacm=data.name == 'cacm', default_budget=steps is None)}"
    )
    return {"summary": summary, "card": card, "ranked_above": ranked}


def closing_note(seconds: float, *, on_cacm: bool, default_budget: bool) -> str:
    """How long the demo took, and that timings and numbers vary with machine and load.

    For a run on CACM at the default budget, the note adds the recorded runs (:data:`SEEN_ON_CACM`).
    """
    minutes, rest = divmod(round(seconds), 60)
    note = (
        f"The demo took {minutes} min {rest} s on this machine. Timings and the fine-tuned model's held-out numbers "
        "vary with the machine (its CPU and threads) and its load"
    )
    if on_cacm and default_budget:
        return f"{note}. On this project's two-core machines, {SEEN_ON_CACM}."
    return f"{note}."


def format_table(summary: dict[str, Any]) -> str:
    """The held-out metrics of a ``train_results.json`` as a table.

    The rows are the base as published, the recipe's step 0 when it differs from it, and the fine-tuned model.
    """
    after = {name.removeprefix("eval_"): value for name, value in summary["eval_metrics"].items() if name != "epoch"}
    published = {
        name.removeprefix("eval_"): value for name, value in (summary.get("published_base_eval_metrics") or {}).items()
    }
    step0 = {name.removeprefix("eval_"): value for name, value in (summary.get("base_eval_metrics") or {}).items()}
    columns = [("base as published", published)]
    if step0 and any(abs(step0.get(m, 0) - published.get(m, 0)) > 0.005 for m in after):
        columns.append(("recipe step 0", step0))
    columns.append(("fine-tuned", after))
    width = max([12, *map(len, after)])
    lines = [
        f"{'metric':<{width}}" + "".join(f" {title:>18}" for title, _ in columns),
        "-" * (width + 19 * len(columns)),
    ]
    for metric in after:
        lines.append(
            f"{metric:<{width}}"
            + "".join(f" {values[metric]:18.2f}" if metric in values else f" {'':>18}" for _, values in columns)
        )
    data, training, embedding = summary["data"], summary["settings"]["training"], summary["settings"]["embedding"]
    per_step = training.get("per_device_train_batch_size", 0) * training.get("gradient_accumulation_steps", 1)
    lines.append(
        f"({data.get('held_out_queries')} held-out query papers; {summary['global_step']} optimiser steps of "
        f"{per_step} triplets, sampled from {data.get('queries')} other query papers ({data.get('examples')} triplets "
        f"available); trained in {embedding['pooling']} pooling"
        f"{' + L2 normalisation' if embedding['normalize'] else ''} with loss "
        f"{summary['settings']['loss'].get('name')})"
    )
    if published and "cite_map" in after and "cite_map" in published:
        change = after["cite_map"] - published["cite_map"]
        lines.append(
            f"fine-tuned vs base as published: {change:+.2f} MAP"
            + ("" if change > 0 else "  (no better than the base)")
        )
    return "\n".join(lines)


def _data(data_dir: Path, output: Path) -> tuple[Path, list[dict[str, Any]], set[tuple[str, str]], dict[str, Any]]:
    """The citation data to train on, its papers and links, and the budget for it.

    The budget suits the data's size.
    """
    cacm = data_dir / "cacm"
    if cacm.is_dir():
        from ..data.smart import CACM_CITATION, read_smart_collection

        collection = read_smart_collection(cacm, skip_invalid=True)
        return (
            cacm,
            collection.papers,
            collection.links.get(CACM_CITATION, set()),
            {**CACM_BUDGET, **_anchoring(data_dir)},
        )
    logger.warning("real data not found at %s: running on sciembed's small invented example set instead", cacm)
    papers, links = example_papers(), example_citation_links()
    cites: dict[str, list[str]] = {p["paper_id"]: [] for p in papers}
    for a, b in sorted(links):
        cites[a].append(b)
    path = output / "example-data" / "papers.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({**p, "outbound_citations": cites[p["paper_id"]], "inbound_citations": []}) + "\n"
            for p in papers
        ),
        encoding="utf-8",
    )
    return path, papers, links, EXAMPLE_BUDGET


def _anchoring(data_dir: Path) -> dict[str, Any]:
    """The recommended recipe's anchoring (:data:`~sciembed.training.recipes.ANCHORED`) when SciRepEval's samples are
    there. Without them the recipe's defaults."""
    from ..training.recipes import ANCHORED, anchor_paths

    anchors = anchor_paths(data_dir / "scirepeval-samples")
    if not all(path.is_file() for path in anchors):
        logger.warning("%s not found: training without anchor papers", anchors[0].parent)
        return {}
    return {"data.anchor_papers": json.dumps([str(path) for path in anchors]), **ANCHORED}


def _run(argv: list[str], title: str) -> None:
    """Run one ``sciembed`` command as its own process, as a user would type it.

    The demo is a command of the same CLI, so it does not import the CLI to call it.
    """
    print(f"\n{title}\n$ sciembed {shlex.join(argv)}\n", flush=True)
    code = subprocess.run([sys.executable, "-m", "sciembed.cli", *argv]).returncode
    if code:
        raise RuntimeError(f"sciembed {argv[0]} failed (exit code {code}); see the messages above")


def _ranked_above(
    folder: Path, papers: list[dict[str, Any]], links: set[tuple[str, str]], queries: list[str]
) -> dict[str, Any]:
    """Held-out (query, cited, random) triples scored by MiniLM as published and by the exported model.

    Both are loaded with sentence-transformers in a fresh process without sciembed.
    """
    from transformers import AutoTokenizer

    from ..data.papers import paper_text

    sep = AutoTokenizer.from_pretrained(folder).sep_token  # the exported model's, which is MiniLM's
    by_id = {p["paper_id"]: p for p in papers if p.get("title")}
    neighbours: dict[str, set[str]] = {}
    for a, b in links:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    rng = random.Random(0)
    candidates = sorted(by_id)
    pairs = [(q, c) for q in sorted(queries) if q in by_id for c in sorted(neighbours.get(q, ())) if c in by_id]
    rng.shuffle(pairs)
    triples = []
    for q, c in pairs[:PAIRS]:
        r = rng.choice(candidates)
        while r == q or r in neighbours.get(q, ()):
            r = rng.choice(candidates)
        triples.append([paper_text(by_id[i], sep) for i in (q, c, r)])
    folders = {"published": default_model_path(), "fine-tuned": str(folder)}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _RANKED_ABOVE, json.dumps(folders)],
        input=json.dumps(triples),
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"loading {folder} without sciembed failed:\n{done.stderr[-2000:]}")
    return {"pairs": len(triples), **json.loads(done.stdout.strip().splitlines()[-1])}


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "demo",
        help="the main job of `make demo`: train, evaluate, export and reload a model on the embedded default",
        description=(
            "The whole life of a model in a few minutes on a CPU: fine-tune the embedded all-MiniLM-L6-v2 with the "
            "SPECTER recipe in its own embedding on triplets from CACM's training query papers (sciembed train), "
            "print the held-out cite task for MiniLM as published and fine-tuned, export the model with its card "
            "(sciembed export), and load the export and MiniLM in a fresh Python without sciembed to count how often "
            "a held-out cited paper is closer to its query than a random paper. Each step prints its command. Without "
            "DATA/cacm it runs on a small invented example set."
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--data", default=DEFAULT_DATA, help="folder holding cacm/ (the shared data folder)")
    parser.add_argument(
        "--output",
        default="demo-output",
        help="folder for the run, the exported model and its card (an existing one is refused unless --overwrite)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the --output of an earlier demo")
    parser.add_argument(
        "--steps",
        type=int,
        help=f"optimiser steps (default: {CACM_BUDGET['max_steps']} on CACM, "
        f"{EXAMPLE_BUDGET['max_steps']} on the example set)",
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    output_options = ["-v"] * args.verbose + ["-q"] * args.quiet
    run_main_job(args.data, args.output, steps=args.steps, overwrite=args.overwrite, output_options=output_options)
    return 0
