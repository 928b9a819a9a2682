"""Does each recipe earn its place? The recipes from the embedded MiniLM, judged on held-out and out-of-domain data.

Per seed, CACM's linked papers are split by query paper (80 / 20); training examples come from the training
queries only. Every trained row starts from the embedded all-MiniLM-L6-v2 with the recipe's default settings
(``--set`` changes them for every row, recorded in the JSON) and the same budget: ``--steps`` optimiser steps of
32 examples, training texts cut to ``--max-length`` tokens (``data.max_length``). Every model is evaluated in its own
window (all-MiniLM-L6-v2's 256 tokens, which training on shorter texts leaves alone), as its users embed. Next to them:

- MiniLM as published (its own modules: mean pooling + normalisation), not trained;
- the peer a user would pick instead: sentence-transformers' own ``SentenceTransformerTrainer`` with
  ``MultipleNegativesRankingLoss`` on the ``specter`` recipe's triplets (same queries, positives and hard
  negatives), same steps, batch, learning rate and schedule;
- each paper's counterpart (``SYSTEMS``' ``counterpart``): SciNCL against SPECTER's citation triplets, Multi2SPE's
  K = 3 CLS tokens against K = 1;
- ``specter-2e-5``: the specter recipe without its unit-vector departure (SPECTER's learning rate 2e-5, no WiSE-FT
  average), the counterpart that shows what the departure (chosen on a validation split of seed 0's training queries,
  ``data.validation``) does on held-out ones. (Its rows were trained as ``specter`` and ``specter-wise`` the
  default and a variant, before the variant's two settings became the default.)
- ``NAME-wise-0.5`` (``scirepeval-ctrl-random-codes-wise-1``): the rows of the recipes whose WiSE-FT share was
  chosen on out-of-domain validation data too, at their earlier share (:data:`EARLIER_SHARE`), against their
  counterparts' at it;
- the multi-task rows (``scirepeval-ctrl``, ``-adapters``, ``-fusion``, ``-pals``): SciRepEval's recipes on the seed's
  task mixture (``write_mixture``: CACM's citations split as the specter row's, CACM's categories and the fields of
  study without the test papers of their evaluation, the MeSH sample), against ``specter`` (one embedding).
  ``scirepeval-fusion`` is SciRepEval's stage 2: it starts from the seed's ``scirepeval-adapters`` model (train that
  row first, with ``--keep-models``) and trains ``--steps`` more. ``scirepeval-pals-anchored`` is PALs with the
  settings chosen on validation data (``System.cite_weight``, ``System.anchors``), against the recipe's defaults
  (``-anchored-0.35``: the same keeping 0.35 of the trained weights, against it). For these rows the fields of study
  are not out of domain.
- the SPECTROID rows (``spectroid-heads`` with its defaults, CH1; ``spectroid-ch2``, ``spectroid-ch3``; and
  ``spectroid-heads-paper``, the paper's training without the recipe's departures): a classification head trained
  on CACM's categories without the seed's category test papers (``data.exclude``), judged by
  its head's own predictions on those papers against MiniLM's linear probe (the ``cacm_categories`` score of MiniLM
  as published: LinearSVC on its frozen embeddings, trained on the same half), and like every row by its embeddings.

Columns (the same tasks for every row of a seed):

- ``cacm_cite``: held-out CACM cite (SciDocs' protocol: up to 5 linked papers against 25 random ones, -L2,
  pytrec_eval MAP / nDCG), per query kept for the paired intervals;
- ``hepth_cite``: the same protocol on hep-th physics papers (arXiv abstracts, SNAP / KDD Cup citations), a
  seeded sample of ``--hepth-queries`` query papers: a second domain no row was trained on;
- ``cacm_categories``: CACM's CR categories, SciDocs' classification protocol (LinearSVC, macro-F1);
- ``arxiv_archive``: arXiv metadata (random 2007-2008 sample) labelled with its primary category's archive
  (``math.DG`` -> ``math``, ``hep-th`` -> ``hep-th``; archives with fewer than ``MIN_ARCHIVE_PAPERS`` papers
  left out, counted in the JSON), a seeded stratified half for training, the same protocol;
- ``fos`` and ``search``: SciRepEval's training samples (fields of study macro-F1 over the fields with at
  least ``MIN_FIELD_PAPERS`` papers, the papers split in halves by the seed; search nDCG).

Statistics: per system, the mean over seeds, and for every task the paired difference to MiniLM as published and to
the counterpart with a 95% bootstrap interval (``BOOTSTRAP`` resamples): over queries pooled over seeds for the
ranking tasks (cite MAP, search nDCG), over test papers for classification (both rows' macro-F1 scored on the same
resamples of a seed's test papers, drawn once per set of test papers, the differences averaged over seeds). Each
trained row records its seconds per optimiser step, but rows train minutes apart, so the speed comparison with the
peer is ``training_speed.py``'s (paired, alternating rounds).

Rows are written to the JSON as they finish; a run adds to an existing file (rows already there for a seed
and system are kept, not rerun), so ``--seeds`` and ``--systems`` split a long benchmark over sessions, or over
processes running side by side (each writes only its own rows, under a lock). ``--keep-models`` keeps the trained
models, so that ``--rescore`` can score them again when the tasks gain a statistic, without training again, and
``--reuse-training`` can give a row another WiSE-FT share: WiSE-FT's average acts only when training ends, so a kept
model trained with share ``s0`` is ``s0 * trained + (1 - s0) * start``, and the model the same training ends with at
share ``s`` is ``start + s / s0 * (kept - start)`` (:func:`reweigh`; the row records whose training it reused).

    python benchmarks/recipes.py --data ../shared/data --seeds 0 1 2 --steps 60
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import gc
import json
import logging
import platform
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

import sciembed
from sciembed.data.papers import paper_text
from sciembed.evaluation import evaluate_suite
from sciembed.evaluation.compare import PaperResamples, percentile_interval, resampled_means
from sciembed.evaluation.loaders import TaskSuite
from sciembed.io import atomic_path
from sciembed.training.recipes import ANCHOR_FILES, ANCHORED
from sciembed.training.run import prepare, save_trained


@dataclass(frozen=True)
class System:
    """A trained row: a recipe with its defaults, or with the ``overrides`` that make it a counterpart."""

    recipe: str
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)
    counterpart: str | None = None
    #: Trains on the seed's task mixture (:func:`write_mixture`) instead of CACM's citations alone.
    mixture: bool = False
    #: A second stage: starts from this system's model of the same seed (kept by ``--keep-models``), not from MiniLM.
    after: str | None = None
    #: Trains a classification head on CACM's categories without the test papers of their evaluation, and is judged by
    #: its head's predictions against MiniLM's linear probe on the same test papers.
    labelled: bool = False
    #: Trains on two domains, CACM (``cs``) and hep-th (``physics``) without the seed's hep-th queries
    #: (:func:`write_domains`): Multi2SPE's and MoE BERT's multi-domain setting.
    domains: bool = False
    #: Keeps the pairwise cosines of these files' papers in SciRepEval's samples folder (``data.anchor_papers``;
    #: weight: an override).
    anchors: tuple[str, ...] = ()
    #: The citations' weight in the task mixture's batches against the other tasks' 1 (:func:`write_mixture`).
    cite_weight: float = 1.0


#: WiSE-FT's share of the trained weights, the one override in which ``--reuse-training`` lets two systems differ.
SHARE = "model.weight_average"

SYSTEMS = {
    "specter": System(
        "specter",
        "SPECTER recipe (citation triplets) on MiniLM: in unit vectors multiple-negatives ranking at "
        "lr 1e-4, then WiSE-FT's average with MiniLM",
        counterpart="specter-2e-5",
    ),
    "specter-2e-5": System(
        "specter",
        "SPECTER recipe on MiniLM at SPECTER's learning rate 2e-5, no weight averaging",
        {"learning_rate": 2e-5, "model.weight_average": 1.0},
    ),
    "specter-anchored": System(
        "specter",
        "SPECTER recipe on MiniLM keeping the pairwise cosines of other fields' papers (relational anchoring, weight "
        "50, on SciRepEval's MeSH sample and its triplets' papers), WiSE-FT's share of the trained weights 0.5: both "
        "chosen on validation data",
        ANCHORED,
        counterpart="specter-wise-0.5",
        anchors=ANCHOR_FILES,
    ),
    "scincl": System("scincl", "SciNCL recipe (graph-neighbour triplets) on MiniLM", counterpart="specter"),
    "multi2spe": System(
        "multi2spe", "Multi2SPEModel (K = 3) from MiniLM, multi2spe recipe", counterpart="multi2spe-k1"
    ),
    "multi2spe-k1": System(
        "multi2spe", "Multi2SPEModel with one CLS token (K = 1), multi2spe recipe", {"model.num_cls_tokens": 1}
    ),
    "moe-cocitation": System(
        "moe-cocitation", "MoEBertModel from MiniLM (enforced routing, domain cs), citation pairs"
    ),
    "multi2spe-domains": System(
        "multi2spe",
        "Multi2SPEModel (K = 3) from MiniLM, multi2spe recipe on CACM + hep-th",
        counterpart="multi2spe-k1-domains",
        domains=True,
    ),
    "multi2spe-k1-domains": System(
        "multi2spe",
        "Multi2SPEModel with one CLS token (K = 1), multi2spe recipe on CACM + hep-th",
        {"model.num_cls_tokens": 1},
        domains=True,
    ),
    "moe-domains": System(
        "moe-cocitation",
        "MoEBertModel from MiniLM, one expert per domain (cs, physics), citation pairs of CACM + hep-th",
        counterpart="moe-dense-domains",
        domains=True,
    ),
    "moe-dense-domains": System(
        "moe-cocitation",
        "MiniLM as it is (no experts), the moe-cocitation recipe on CACM + hep-th",
        {"model.family": "none"},
        domains=True,
    ),
    "scirepeval-ctrl": System(
        "scirepeval-ctrl",
        "ControlCodeModel from MiniLM, multi-task on the seed's task mixture",
        counterpart="specter",
        mixture=True,
    ),
    "scirepeval-ctrl-random-codes": System(
        "scirepeval-ctrl",
        "ControlCodeModel from MiniLM, multi-task on the seed's task mixture, the control codes' rows drawn at random "
        "as the paper's",
        {"model.control_code_init": "normal"},
        counterpart="scirepeval-ctrl",
        mixture=True,
    ),
    "scirepeval-ctrl-triplet": System(
        "scirepeval-ctrl",
        "ControlCodeModel from MiniLM, multi-task on the seed's task mixture, the paper's triplet loss for citations "
        "and random control codes",
        {"loss.proximity": "triplet", "model.control_code_init": "normal"},
        mixture=True,
    ),
    "scirepeval-adapters": System(
        "scirepeval-adapters",
        "MiniLM with a bottleneck adapter per format, multi-task on the seed's task mixture",
        counterpart="specter",
        mixture=True,
    ),
    "scirepeval-fusion": System(
        "scirepeval-fusion",
        "AdapterFusion over the seed's scirepeval-adapters model, the same task mixture",
        counterpart="specter",
        mixture=True,
        after="scirepeval-adapters",
    ),
    "scirepeval-fusion-paper": System(
        "scirepeval-fusion",
        "AdapterFusion over the seed's scirepeval-adapters model, the same task mixture, as the paper trains it: the "
        "triplet loss for citations, its learning rate",
        {"loss.proximity": "triplet", "learning_rate": 5e-5},
        counterpart="scirepeval-fusion",
        mixture=True,
        after="scirepeval-adapters",
    ),
    "scirepeval-pals": System(
        "scirepeval-pals",
        "MiniLM with PALs per format, multi-task on the seed's task mixture",
        counterpart="specter",
        mixture=True,
    ),
    "scirepeval-pals-triplet": System(
        "scirepeval-pals",
        "MiniLM with PALs per format, multi-task on the seed's task mixture, as the paper trains them: the triplet "
        "loss for citations, its learning rate, no weight averaging",
        {"loss.proximity": "triplet", "learning_rate": 5e-5, "model.weight_average": 1.0},
        counterpart="scirepeval-pals",
        mixture=True,
    ),
    "scirepeval-pals-anchored": System(
        "scirepeval-pals",
        "MiniLM with PALs per format, multi-task on the seed's task mixture with the citations weighing 4 against the "
        "other tasks' 1, batches of 32 without accumulation, keeping the pairwise cosines of SciRepEval's SPECTER "
        "sample's papers (relational anchoring, weight 50), no weight averaging: chosen on validation data",
        {
            "training.per_device_train_batch_size": 32,
            "training.gradient_accumulation_steps": 1,
            "loss.anchor_weight": 50.0,
            "model.weight_average": 1.0,
        },
        counterpart="scirepeval-pals",
        mixture=True,
        anchors=("specter_small.json",),
        cite_weight=4.0,
    ),
    "spectroid-heads": System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM, the recipe's defaults (CH1 linear head fitted alone first, "
        "the text's mean, WiSE-FT 0.5), CACM categories",
        labelled=True,
    ),
    "spectroid-heads-paper": System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM as the paper trains it: CH2 from random, end to end, on [CLS]",
        {
            "model.head": "CH2",
            "model.head_only_steps": 0,
            "model.text_pooling": None,
            "model.weight_average": 1.0,
        },
        labelled=True,
    ),
    "spectroid-ch2": System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM, the recipe's defaults with CH2 (one hidden layer of 64)",
        {"model.head": "CH2"},
        labelled=True,
    ),
    "spectroid-ch3": System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM, the recipe's defaults with CH3 (five hidden layers)",
        {"model.head": "CH3"},
        labelled=True,
    ),
}
#: The systems whose recipe kept another share of the trained weights in WiSE-FT's average until the share was chosen
#: on out-of-domain validation data too (``validation_search.py --weight-averages``), and that share: their earlier
#: rows stay as ``NAME-wise-SHARE`` (against their counterparts' at that share), and ``--reuse-training`` rebuilds the
#: defaults' from their kept models.
EARLIER_SHARE = {
    **dict.fromkeys(
        (
            "specter",
            "scincl",
            "multi2spe",
            "multi2spe-k1",
            "multi2spe-domains",
            "multi2spe-k1-domains",
            "moe-cocitation",
            "moe-domains",
            "moe-dense-domains",
        ),
        0.5,
    ),
    "scirepeval-ctrl-random-codes": 1.0,
}


def _at_earlier_share(name: str) -> System:
    system, share = SYSTEMS[name], EARLIER_SHARE[name]
    return replace(
        system,
        description=f"{system.description}; WiSE-FT's share of the trained weights {share:g}, the earlier default",
        overrides={**system.overrides, SHARE: share},
        counterpart=_earlier(system.counterpart) if system.counterpart in EARLIER_SHARE else None,
    )


def _earlier(name: str) -> str:
    return f"{name}-wise-{EARLIER_SHARE[name]:g}"


SYSTEMS.update({_earlier(name): _at_earlier_share(name) for name in EARLIER_SHARE})
# Validation's other candidate for the anchored PALs: keeping a third of the trained weights held hep-th at MiniLM's
# level there, which the anchored run without averaging loses held out (``--reuse-training`` rebuilds it from its
# kept models).
SYSTEMS["scirepeval-pals-anchored-0.35"] = replace(
    SYSTEMS["scirepeval-pals-anchored"],
    description=f"{SYSTEMS['scirepeval-pals-anchored'].description}; WiSE-FT's share of the trained weights 0.35",
    overrides={**SYSTEMS["scirepeval-pals-anchored"].overrides, SHARE: 0.35},
    counterpart="scirepeval-pals-anchored",
)
PEER = "sentence-transformers"
REFERENCE = "MiniLM as published"
BATCH = 32
MIN_FIELD_PAPERS = 8
MIN_ARCHIVE_PAPERS = 20
BOOTSTRAP = 10_000
CITE_TASKS = ("cacm_cite", "hepth_cite")
#: Ranking tasks and the measure whose per-query values the paired intervals resample (queries pooled over seeds).
PER_QUERY = {"cacm_cite": "map", "hepth_cite": "map", "search": "ndcg"}
#: Classification tasks: macro-F1 of the test papers resampled per seed, the differences averaged over seeds.
PER_PAPER = ("cacm_categories", "arxiv_archive", "fos")
#: Examples per domain in a two-domain run (CACM's and hep-th's, sampled), so both domains weigh the same.
DOMAIN_EXAMPLES = 3000
#: The expert a mixture-of-experts model with one expert per domain embeds each task in (other tasks: the first, cs).
TASK_DOMAINS = {"cacm_cite": "cs", "cacm_categories": "cs", "hepth_cite": "physics", "arxiv_archive": "physics"}
#: A SPECTROID row's own head on CACM's category test papers (the claim: it beats MiniLM's linear probe,
#: ``cacm_categories``).
HEAD = "cacm_categories_head"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/data"),
        help="folder holding cacm/, hepth/, arxiv-metadata/ and scirepeval-samples/",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="one split, sample and training run per seed"
    )
    parser.add_argument("--steps", type=int, default=60, help=f"optimiser steps per model ({BATCH} examples each)")
    parser.add_argument(
        "--max-length", type=int, default=128, help="tokens per training text; evaluation uses each model's own window"
    )
    parser.add_argument(
        "--held-out", type=float, default=0.2, help="share of CACM query papers held out for evaluation"
    )
    parser.add_argument("--hepth-queries", type=int, default=300, help="hep-th query papers sampled per seed")
    parser.add_argument(
        "--systems", nargs="+", choices=(*SYSTEMS, PEER), default=[*SYSTEMS, PEER], help="what to train"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a recipe override for every sciembed system (e.g. loss.name=triplet); recorded in the JSON",
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "recipes.json")
    parser.add_argument(
        "--keep-models",
        type=Path,
        metavar="FOLDER",
        help="also save each trained model as FOLDER/seed-N/SYSTEM, to score it again without retraining",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="score again, with this script's tasks, the rows of --seeds and --systems whose models --keep-models "
        "kept, and MiniLM as published, replacing their scores (their training records stay); trains nothing",
    )
    parser.add_argument(
        "--reuse-training",
        action="store_true",
        help="a row whose training differs from a kept row's of the seed only in WiSE-FT's share "
        "(model.weight_average) is not trained again: its model is rebuilt from the kept one (reweigh), and its "
        "training records are the kept row's",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        metavar="TASK",
        help="with --rescore: score only these tasks (e.g. fos), keeping the rows' other scores",
    )
    parser.add_argument(
        "--summarise",
        action="store_true",
        help="compute the summary of --output's rows again with this script's statistics, write it to --output and "
        "stop (trains nothing): after the statistics change, before --table and --plot",
    )
    parser.add_argument(
        "--table", action="store_true", help="print the table of --output's rows as Markdown and stop (trains nothing)"
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="PNG",
        help="draw --output's changes against MiniLM as published, with their intervals, to PNG and stop "
        "(trains nothing; needs matplotlib: pip install sciembed[plots])",
    )
    args = parser.parse_args()
    if args.tasks and not args.rescore:
        parser.error("--tasks chooses what --rescore scores; a training run scores every task")
    if args.summarise or args.table or args.plot:
        if not args.output.is_file():
            raise SystemExit(f"{args.output} does not exist: run the benchmark first")
        with _locked(args.output):
            report = json.loads(args.output.read_text(encoding="utf-8"))
            if args.summarise:
                report["summary"] = summarise(report["rows"])
                _write(args.output, report)
        summary = report["summary"]
        if args.table:
            print(table(summary))
        if args.plot:
            plot(summary, args.plot)
        return
    logging.basicConfig(level=logging.WARNING)
    folders = {name: args.data / name for name in ("cacm", "hepth", "arxiv-metadata", "scirepeval-samples")}
    for folder in folders.values():
        if not folder.is_dir():
            raise SystemExit(f"{folder} is absent: this benchmark needs the real data (../shared/data/README.md)")
    from sciembed.training.recipes import parse_assignments

    extra = parse_assignments(args.set)
    settings = {
        "steps": args.steps,
        "batch": BATCH,
        "training_max_length": args.max_length,
        "held_out": args.held_out,
        "hepth_queries": args.hepth_queries,
        "base": "all-MiniLM-L6-v2 (embedded)",
        "overrides": extra,
    }
    results = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {}
    if results and {k: results["settings"].get(k) for k in settings} != settings:
        raise SystemExit(
            f"{args.output} holds a run with other settings ({results['settings']}); choose another --output"
        )
    rows: list[dict[str, Any]] = results.get("rows", [])
    done = {(r["seed"], r["system"]) for r in rows}
    fixed = FixedTasks.read(folders)

    #: The rows this run added or rescored: the only ones it writes; the file's others are kept as they are now.
    changed: set[tuple[int, str]] = set()

    def save() -> None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        # Runs of other seeds or systems may add or rescore rows meanwhile: under a lock, take the file's rows and
        # replace only this run's.
        with _locked(args.output):
            if args.output.is_file():
                ours = {(r["seed"], r["system"]): r for r in rows if (r["seed"], r["system"]) in changed}
                theirs = json.loads(args.output.read_text(encoding="utf-8"))["rows"]
                rows[:] = [ours.pop((r["seed"], r["system"]), r) for r in theirs] + list(ours.values())
            report = {
                "benchmark": "recipes",
                "description": __doc__.strip().splitlines()[0],
                "settings": {**settings, "seeds": sorted({r["seed"] for r in rows})},
                "data": fixed.counts,
                "machine": {"platform": platform.platform(), "torch_threads": torch.get_num_threads()},
                "rows": rows,
                "summary": summarise(rows),
            }
            _write(args.output, report)

    def add(row: dict[str, Any]) -> None:
        rows.append(row)
        changed.add((row["seed"], row["system"]))
        print(json.dumps({k: v for k, v in row.items() if k not in ("per_query", "per_paper")}), flush=True)
        save()

    for seed in args.seeds:
        overrides = {**budget(seed, args.steps, args.max_length, args.held_out), **extra}
        with tempfile.TemporaryDirectory() as output:
            # The specter run's split and triplets are the reference's and the peer's.
            specter = prepare("specter", None, folders["cacm"], output, overrides)
            suite = fixed.suite(specter.trainer.eval_dataset, seed, args.hepth_queries)
            held_out_queries, held_out_ids = specter.data["held_out_queries"], specter.data["held_out_ids"]
            if args.rescore:
                if args.tasks:
                    unknown = sorted(set(args.tasks) - {task.task_id for task in suite.tasks})
                    if unknown:
                        raise SystemExit(
                            f"--tasks: no task {', '.join(unknown)}; "
                            f"the tasks are {', '.join(t.task_id for t in suite.tasks)}"
                        )
                    suite = replace(suite, tasks=[task for task in suite.tasks if task.task_id in args.tasks])
                changed.update(rescore(rows, seed, [REFERENCE, *args.systems], suite, args))
                save()
                continue
            if (seed, REFERENCE) not in done:
                encoder = sciembed.PaperEncoder.from_pretrained(device="cpu")
                add(
                    {
                        "seed": seed,
                        "system": REFERENCE,
                        "model": "all-MiniLM-L6-v2, its own modules (mean pooling + normalise), not trained",
                        "held_out_queries": held_out_queries,
                        **scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results),
                    }
                )
            if PEER in args.systems and (seed, PEER) not in done:
                add(peer_row(seed, specter.trainer.train_dataset, suite, args, kept(args, seed, PEER)))
            del specter
        for name in args.systems:
            if name == PEER or (seed, name) in done:
                continue
            system = SYSTEMS[name]
            base = kept(args, seed, system.after) if system.after else None
            if system.after and (base is None or not base.is_dir()):
                print(
                    f"seed {seed}, {name}: starts from the seed's {system.after} model, "
                    "which --keep-models did not keep; not trained",
                    flush=True,
                )
                continue
            row_settings = {**overrides, **system.overrides}
            if system.anchors:
                samples = folders["scirepeval-samples"]
                row_settings["data.anchor_papers"] = [str(samples / name) for name in system.anchors]
            if (
                system.labelled
            ):  # no held-out queries: the test papers of the categories' evaluation are what it never sees
                row_settings.update(
                    {"data.held_out": 0.0, "data.exclude": list(_task(suite, "cacm_categories").test[0])}
                )
            with tempfile.TemporaryDirectory() as output, tempfile.TemporaryDirectory() as mixture:
                data = (
                    write_mixture(folders, suite, Path(mixture), system.cite_weight)
                    if system.mixture
                    else write_domains(folders, fixed, suite, Path(mixture))
                    if system.domains
                    else folders["cacm"]
                )
                add(
                    recipe_row(
                        name,
                        seed,
                        data,
                        output,
                        row_settings,
                        suite,
                        kept(args, seed, name),
                        base=base,
                        held_out_ids=None if system.labelled else held_out_ids,
                        earlier=same_training(rows, seed, name, args) if args.reuse_training else (),
                    )
                )
            gc.collect()
    if rows:
        save()  # a run with nothing left to train still rewrites the summary with this script's statistics
    print(json.dumps(summarise(rows), indent=1))


@contextlib.contextmanager
def _locked(output: Path) -> Iterator[None]:
    """Holds the results file's lock: runs of other seeds or systems side by side write the same file."""
    with open(output.with_name(f"{output.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _write(output: Path, report: dict[str, Any]) -> None:
    with atomic_path(output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def rescore(rows: list[dict[str, Any]], seed: int, systems: list[str], suite: TaskSuite, args) -> set[tuple[int, str]]:
    """Replace the scores of ``seed``'s rows of ``systems`` on ``suite``'s tasks with new ones (other tasks' scores
    stay), embedding MiniLM as published and the models ``--keep-models`` kept (a row without a kept model is left as
    it is, and said so). Returns the rows rescored."""
    rescored = set()
    for row in rows:
        if row["seed"] != seed or row["system"] not in systems:
            continue
        folder = kept(args, seed, row["system"])
        if row["system"] != REFERENCE and (folder is None or not folder.is_dir()):
            print(f"seed {seed}, {row['system']}: no kept model in {folder}; its scores stay", flush=True)
            continue
        encoder = sciembed.PaperEncoder.from_pretrained(
            None if row["system"] == REFERENCE else str(folder), device="cpu"
        )
        for part, values in scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results).items():
            row.setdefault(part, {}).update(values)
        row["rescored"] = True
        rescored.add((seed, row["system"]))
        print(json.dumps({"seed": seed, "system": row["system"], "rescored": row["metrics"]}), flush=True)
    return rescored


def kept(args, seed: int, system: str) -> Path | None:
    """Where ``--keep-models`` saves ``system``'s model of ``seed`` (None without it)."""
    return args.keep_models / f"seed-{seed}" / system if args.keep_models else None


@dataclass
class FixedTasks:
    """The tasks read once per run: CACM's collection, hep-th's citation source, the arXiv archive labels and
    SciRepEval's samples; :meth:`suite` cuts a seed's tasks from them."""

    cacm: Any
    hepth: Any
    arxiv: tuple[Path, Path]
    samples: Path
    counts: dict[str, Any]
    #: hep-th's papers (JSON lines) and citations (CSV), for the two-domain rows' training data.
    hepth_files: tuple[Path, Path]
    #: Holds the hep-th and arXiv files written once; kept open because each seed's tasks read the arXiv files again.
    workdir: tempfile.TemporaryDirectory

    @classmethod
    def read(cls, folders: dict[str, Path]) -> FixedTasks:
        from sciembed.data.arxiv import read_arxiv_abstracts
        from sciembed.data.edges import read_edge_list
        from sciembed.data.smart import read_smart_collection
        from sciembed.training.examples import CitationFiles, read_citation_source

        workdir = tempfile.TemporaryDirectory()
        root = Path(workdir.name)
        # hep-th: every abstract, and both citation sets as one edge list (the same ids: leading zeros dropped).
        listing = read_arxiv_abstracts(folders["hepth"] / "abstracts", skip_invalid=True)
        papers = root / "hepth.jsonl"
        papers.write_text(
            "".join(json.dumps({k: p[k] for k in ("paper_id", "title", "abstract")}) + "\n" for p in listing.papers)
        )
        edges = [
            read_edge_list(folders["hepth"] / "citations-2000-2002" / "df_formatted.csv"),
            read_edge_list(folders["hepth"] / "citations-1992-2001-prefix" / "Cit-HepTh.txt"),
        ]
        citations = root / "hepth-citations.csv"
        citations.write_text(
            "citing,cited\n"
            + "".join(f"{a},{b}\n" for e in edges for a, b in zip(e.citing.to_pylist(), e.cited.to_pylist()))
        )
        hepth = read_citation_source(CitationFiles(papers, citations))
        arxiv, arxiv_counts = arxiv_archive_files(
            folders["arxiv-metadata"] / "random-2007-2008" / "arxiv_sample.csv", root
        )
        counts = {
            "hepth": {
                "papers_with_text": len(hepth.papers),
                "linked_queries": len(hepth.linked_queries()),
                "abstract_files_skipped": len(listing.skipped),
            },
            "arxiv_archive": arxiv_counts,
        }
        return cls(
            read_smart_collection(folders["cacm"], skip_invalid=True),
            hepth,
            arxiv,
            folders["scirepeval-samples"],
            counts,
            (papers, citations),
            workdir,
        )

    def suite(self, cacm_cite: TaskSuite, seed: int, hepth_queries: int) -> TaskSuite:
        """Seed ``seed``'s tasks: CACM's held-out cite task (from the specter run), a sample of hep-th queries, CACM's
        categories and the arXiv archives split by ``seed``, SciRepEval's samples."""
        from sciembed.evaluation.custom import classification_tasks
        from sciembed.evaluation.loaders import cacm_category_task

        linked = self.hepth.linked_queries()
        chosen = hepth_test_sample(len(linked), seed, hepth_queries)
        tasks = [
            replace(cacm_cite.tasks[0], task_id="cacm_cite", keep_per_query=True),
            replace(
                self.hepth.cite_task([linked[i] for i in sorted(chosen)], seed=seed),
                task_id="hepth_cite",
                keep_per_query=True,
            ),
            replace(cacm_category_task(self.cacm, seed=seed), task_id="cacm_categories", keep_predictions=True),
        ]
        (archive,), _ = classification_tasks("arxiv", str(self.arxiv[0]), papers=str(self.arxiv[1]), seed=seed)
        tasks.append(replace(archive, task_id="arxiv_archive", keep_predictions=True))
        tasks = [
            replace(task, domain=TASK_DOMAINS.get(task.task_id))
            for task in tasks + list(out_of_domain_suite(self.samples, seed).tasks)
        ]
        return TaskSuite("recipes", "cacm + hepth + arxiv + scirepeval-samples", tasks)


def hepth_test_sample(linked: int, seed: int, hepth_queries: int) -> np.ndarray:
    """Which of hep-th's ``linked`` query papers (by position) seed ``seed``'s test task scores."""
    return np.random.default_rng(seed).choice(linked, size=min(hepth_queries, linked), replace=False)


def fields_task(
    benchmark: str, what: str, papers: list[tuple[str, list[str], dict[str, Any]]], seed: int, **options: Any
):
    """A multi-label fields-of-study task over ``papers`` (``(paper_id, fields, record)``): the fields with at least
    MIN_FIELD_PAPERS papers (rarer ones leave CV folds with one class only), papers without one of them left out,
    halves by ``seed`` for training and testing, SciRepEval's multi-label probe scored by macro-F1."""
    from sciembed.evaluation.supervised import SCIREPEVAL_MULTILABEL
    from sciembed.evaluation.tasks import ClassificationTask

    counts = Counter(field for _, fields, _ in papers for field in fields)
    kept = sorted(field for field, n in counts.items() if n >= MIN_FIELD_PAPERS)
    rows = [(paper_id, [kept.index(f) for f in fields if f in kept], record) for paper_id, fields, record in papers]
    rows = [row for row in rows if row[1]]
    order = np.random.default_rng(seed).permutation(len(rows))
    half = len(order) // 2
    split = [([rows[i][0] for i in part], [rows[i][1] for i in part]) for part in (order[:half], order[half:])]
    return ClassificationTask(
        benchmark,
        f"{what} ({len(kept)} with >= {MIN_FIELD_PAPERS} papers)",
        {paper_id: record for paper_id, _, record in rows},
        train=split[0],
        test=split[1],
        protocol=replace(SCIREPEVAL_MULTILABEL, metrics=("f1_macro",)),
        **options,
    )


def arxiv_archive_files(path: Path, root: Path) -> tuple[tuple[Path, Path], dict[str, Any]]:
    """The arXiv sample as a papers file and a labels file (``paper_id,label``: the primary category's archive),
    archives with fewer than MIN_ARCHIVE_PAPERS papers left out."""
    with path.open(encoding="utf-8", newline="") as handle:
        records = [row for row in csv.DictReader(handle) if row["abstract"].strip() and row["categories"].strip()]
    archive = {row["id"]: row["categories"].split()[0].split(".")[0] for row in records}
    sizes = Counter(archive.values())
    kept = {pid: label for pid, label in archive.items() if sizes[label] >= MIN_ARCHIVE_PAPERS}
    papers, labels = root / "arxiv.jsonl", root / "arxiv-archive.csv"
    papers.write_text(
        "".join(
            json.dumps({"paper_id": r["id"], "title": r["title"], "abstract": r["abstract"]}) + "\n"
            for r in records
            if r["id"] in kept
        )
    )
    labels.write_text("paper_id,label\n" + "".join(f"{pid},{label}\n" for pid, label in kept.items()))
    counts = {
        "papers": len(kept),
        "archives": dict(Counter(kept.values()).most_common()),
        "left_out": {
            "papers": len(archive) - len(kept),
            "archives": sorted(a for a, n in sizes.items() if n < MIN_ARCHIVE_PAPERS),
        },
    }
    return (labels, papers), counts


def recipe_row(
    name: str,
    seed: int,
    data: Path,
    output: str,
    overrides: dict[str, Any],
    suite: TaskSuite,
    keep: Path | None = None,
    *,
    base: Path | None = None,
    held_out_ids: list[str] | None = None,
    earlier: tuple[tuple[dict[str, Any], Path], ...] = (),
) -> dict[str, Any]:
    """Train one system with the shared budget from MiniLM (or ``base``) on ``data`` (CACM, or the seed's task
    mixture); CACM held-out cite at step 0, every task after training (the model saved in ``keep`` when given). A run
    whose held-out queries are not ``held_out_ids`` (the specter row's) stops: its rows would not be comparable.
    When one of the ``earlier`` rows (with its kept model) resolved to the same settings but WiSE-FT's share, the
    model is rebuilt from that one (:func:`reweigh`) instead of trained, and the row takes its training records."""
    system = SYSTEMS[name]
    run = prepare(system.recipe, None if base is None else str(base), data, output, overrides)
    held = run.data["domains"]["cs"] if system.domains else run.data
    if held_out_ids is not None and held["held_out_ids"] != held_out_ids:
        raise SystemExit(
            f"seed {seed}, {name}: its held-out queries differ from the specter row's; its scores would not be paired"
        )
    trainer = run.trainer
    resolved = resolved_defaults(run.settings)
    source = None
    for row, folder in earlier:
        differing = _settings_differing(row, run.settings, resolved)
        if not differing:
            source = row, folder
            break
        print(f"seed {seed}, {name}: {row['system']}'s training differs in {differing}; not reused", flush=True)
    if source is not None:
        row, folder = source
        reweigh(trainer.model, folder, row["resolved"]["weight_average"], resolved["weight_average"])
        _keep(trainer, run, keep)
        trainer.evaluate(eval_dataset=suite)
        return {
            **_trained_row(name, seed, run, resolved, trainer, data, suite, base),
            **{k: row[k] for k in (*_TRAINING_RECORDS, *(("before_hepth",) if system.domains else ()))},
            "reused_training": {"system": row["system"], "weight_average": row["resolved"]["weight_average"]},
        }
    before = None if system.labelled else step_zero(trainer, suite, CITE_TASKS if system.domains else ("cacm_cite",))
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    _keep(trainer, run, keep)
    trainer.evaluate(eval_dataset=suite)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {
        **_trained_row(name, seed, run, resolved, trainer, data, suite, base),
        **(
            {}
            if system.labelled
            else {"before": before["cacm_cite"], **({"before_hepth": before["hepth_cite"]} if system.domains else {})}
        ),
        "steps": result.global_step,
        "examples_seen": result.global_step * BATCH,
        "train_seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / max(result.global_step, 1), 2),
        "first_logged_loss": losses[0] if losses else None,
        "last_logged_loss": losses[-1] if losses else None,
    }


def _keep(trainer: Any, run: Any, keep: Path | None) -> None:
    """Save the trained model in ``keep`` (when given) before it is scored: a run stopped while scoring, which takes
    longer than training on a slow machine, leaves its model for a second stage (``System.after``)."""
    if keep is not None:
        save_trained(trainer, run.tokenizer, keep)


#: The embedding settings a row records.
_EMBEDDING = ("pooling", "normalize", "max_length")

#: What a row reusing another's training (``--reuse-training``) takes from it.
_TRAINING_RECORDS = (
    "before",
    "steps",
    "examples_seen",
    "train_seconds",
    "seconds_per_step",
    "first_logged_loss",
    "last_logged_loss",
)


def _trained_row(
    name: str,
    seed: int,
    run: Any,
    resolved: dict[str, Any],
    trainer: Any,
    data: Path,
    suite: TaskSuite,
    base: Path | None,
) -> dict[str, Any]:
    """A trained row's scores (from the trainer's last evaluation) and description."""
    system = SYSTEMS[name]
    scored = scores(trainer.last_evaluation.results)
    if system.labelled:
        scored["metrics"][HEAD], scored["per_paper"][HEAD] = head_predictions(
            trainer, data, _task(suite, "cacm_categories").test[0]
        )
    return {
        "seed": seed,
        "system": name,
        "recipe": system.recipe,
        "model": system.description,
        "overrides": system.overrides,
        "resolved": resolved,
        "embedding": {k: run.settings["embedding"][k] for k in _EMBEDDING},
        "loss": run.settings["loss"],
        "held_out_queries": run.data.get("held_out_queries"),
        "training_queries": run.data.get("queries"),
        "examples_available": run.data["examples"],
        **({"excluded_papers": run.data["excluded_papers"]} if system.labelled else {}),
        **scored,
        **({"tasks": run.data["tasks"]} if system.mixture else {}),
        **({"base": str(base)} if base else {}),
        **(
            {
                "domains": {
                    d: {k: v for k, v in c.items() if not k.endswith("_ids")} for d, c in run.data["domains"].items()
                }
            }
            if system.domains
            else {}
        ),
    }


def same_training(rows: list[dict[str, Any]], seed: int, name: str, args) -> tuple[tuple[dict[str, Any], Path], ...]:
    """The rows of ``seed`` (with the model ``--keep-models`` kept) whose system trains as ``name``'s does but for
    WiSE-FT's share: the same recipe, data and overrides; :func:`recipe_row` also compares what their settings
    resolved to. A classifier's starting weights include the head it fits first, so it never reuses a training."""
    system = SYSTEMS[name]
    if system.labelled:
        return ()
    found = []
    for row in rows:
        other = SYSTEMS.get(row["system"])
        folder = kept(args, seed, row["system"])
        if (
            row["seed"] == seed
            and other is not None
            and row["system"] != name
            and replace(other, description="", overrides={}, counterpart=None)
            == replace(system, description="", overrides={}, counterpart=None)
            and but_share(other.overrides, SHARE) == but_share(system.overrides, SHARE)
            and row["resolved"]["weight_average"] > 0
            and folder is not None
            and folder.is_dir()
        ):
            found.append((row, folder))
    return tuple(found)


def _settings_differing(row: dict[str, Any], settings: dict[str, Any], resolved: dict[str, Any]) -> list[str]:
    """What a run's settings change from those an earlier ``row`` recorded, but WiSE-FT's share: its loss, its
    embedding and what its settings resolved to (rows written before :func:`resolved_defaults` named a setting
    record its loss in ``loss``)."""
    embedding = {k: settings["embedding"][k] for k in _EMBEDDING}
    return [
        *(["loss"] if row["loss"] != settings["loss"] else []),
        *(["embedding"] if row["embedding"] != embedding else []),
        *(
            k
            for k in sorted(but_share(row["resolved"]).keys() | but_share(resolved).keys())
            if row["resolved"].get(k) != resolved.get(k)
        ),
    ]


def but_share(settings: dict[str, Any], key: str = "weight_average") -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k != key}


def reweigh(model: torch.nn.Module, folder: Path, kept_share: float, share: float) -> None:
    """Give ``model`` (as it starts training) the weights that training with WiSE-FT's share ``share`` ends with,
    from the model saved in ``folder`` by the same training with share ``kept_share``. The average acts only when
    training ends, so ``kept = kept_share * trained + (1 - kept_share) * start``: the wanted weights,
    ``start + share * (trained - start)``, are ``start + share / kept_share * (kept - start)``."""
    from safetensors.torch import load_file

    from sciembed.formats import base_state_dict, load_format_modules
    from sciembed.training.trainers import average_weights

    current = model.state_dict()
    start = {k: v.detach().clone() for k, v in current.items()}
    missing, unexpected = model.load_state_dict(load_file(folder / "model.safetensors"), strict=False)
    # Format modules (PALs, adapters and fusions) are saved beside the base, in their own files.
    modules = current.keys() - base_state_dict(model).keys()
    try:
        if load_format_modules(model, folder):
            missing = [k for k in missing if k not in modules]
    except ValueError as error:
        raise SystemExit(f"{folder}: not this model's format modules ({error})") from None
    added = model.state_dict().keys() - current.keys()
    # Tied weights are saved once, under one of their names.
    shared = Counter(v.data_ptr() for v in current.values())
    untied = [k for k in missing if shared[current[k].data_ptr()] < 2]
    if unexpected or untied or added:
        raise SystemExit(
            f"{folder}: not this model's weights (missing {untied}, unexpected {[*unexpected, *sorted(added)]})"
        )
    average_weights(model, start, share / kept_share)


def resolved_defaults(settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a run's learning rate, weight average, example kind, text pooling, control codes' start, loss and anchoring
    weight resolved to: recipe defaults change over time, and a row's ``overrides`` name only its own settings."""
    return {
        "learning_rate": settings["training"]["learning_rate"],
        "weight_average": settings["model"].get("weight_average", 1.0),
        **{k: settings["data"][k] for k in ("sampler", "pairs", "rank_overflow") if k in settings["data"]},
        **{k: settings["model"][k] for k in ("text_pooling", "control_code_init") if k in settings["model"]},
        "loss": settings["loss"].get("name"),
        **{k: settings["loss"][k] for k in ("proximity", "anchor_weight") if k in settings["loss"]},
    }


def step_zero(trainer, suite: TaskSuite, tasks: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The model before training on the suite's cite tasks ``tasks`` (MAP and nDCG of each)."""
    metrics = trainer.evaluate(eval_dataset=replace(suite, tasks=[_task(suite, t) for t in tasks]))
    return {t: {m: round(metrics[f"eval_{t}_{m}"], 2) for m in ("map", "ndcg")} for t in tasks}


def _task(suite: TaskSuite, task_id: str):
    return next(task for task in suite.tasks if task.task_id == task_id)


def head_predictions(trainer, cacm: Path, test_ids: list[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """A trained classifier's own predictions (its head's most likely category) for CACM's category test papers: the
    macro-F1, and each paper's category and prediction for the paired intervals."""
    from sklearn.metrics import f1_score

    from sciembed.training.examples import labelled_papers

    data, labels = labelled_papers(cacm)
    wanted = set(test_ids)
    data = data.filter(lambda row: row["paper_id"] in wanted)
    logits = trainer.predict(data).predictions
    logits = logits[0] if isinstance(logits, tuple) else logits
    names = trainer.model.config.id2label
    predicted = [names[int(i)] for i in np.asarray(logits).argmax(-1)]
    gold = [labels[i] for i in data["label"]]
    f1 = f1_score(gold, predicted, average="macro", zero_division=0) * 100
    return {"f1_macro": round(float(f1), 2)}, {
        "label_columns": None,
        "papers": dict(zip(data["paper_id"], zip(gold, predicted))),
    }


def write_mixture(folders: dict[str, Path], suite: TaskSuite, folder: Path, cite_weight: float = 1.0) -> Path:
    """The seed's task mixture for the multi-task rows (SciRepEval trains on several tasks at once): CACM's citations
    (split by the seed as the specter row's), CACM's categories and the fields of study without the test papers of
    their evaluation, and the MeSH sample (biomedical, not evaluated). The search sessions stay out, so that search is
    data no row was trained on. ``cite_weight``: the citations' share of every batch against the other tasks' 1."""
    tests = {task_id: _task(suite, task_id).test[0] for task_id in ("cacm_categories", "fos")}
    samples = folders["scirepeval-samples"]
    tasks = [
        {
            "name": "cite",
            "type": "proximity",
            "data": str(folders["cacm"].resolve()),
            **({"weight": cite_weight} if cite_weight != 1.0 else {}),
        },
        {
            "name": "cacm_categories",
            "type": "classification",
            "data": str(folders["cacm"].resolve()),
            "exclude": list(tests["cacm_categories"]),
        },
        {
            "name": "fos",
            "type": "classification",
            "data": str((samples / "fos_small.json").resolve()),
            "exclude": list(tests["fos"]),
        },
        {"name": "mesh", "type": "classification", "data": str((samples / "mesh_small.json").resolve())},
    ]
    path = folder / "mixture.json"
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    return path


def write_domains(folders: dict[str, Path], fixed: FixedTasks, suite: TaskSuite, folder: Path) -> Path:
    """The seed's two-domain mixture (one citation graph per domain, the citation recipes' multi-domain data): CACM as
    ``cs`` (split by the seed as the specter row's) and hep-th as ``physics`` without the seed's ``hepth_cite``
    queries, ``DOMAIN_EXAMPLES`` examples sampled from each so that both domains weigh the same."""
    hepth_queries = sorted(_task(suite, "hepth_cite").qrels)
    papers, citations = fixed.hepth_files
    tasks = [
        {"name": "cs", "type": "proximity", "data": str(folders["cacm"].resolve()), "sample_size": DOMAIN_EXAMPLES},
        {
            "name": "physics",
            "type": "proximity",
            "data": {"papers": str(papers), "citations": str(citations)},
            "exclude": hepth_queries,
            "sample_size": DOMAIN_EXAMPLES,
        },
    ]
    path = folder / "domains.json"
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    return path


def budget(seed: int, steps: int, max_length: int, held_out: float = 0.2) -> dict[str, Any]:
    """The recipe overrides every sciembed row of a seed trains with: its split and sampling, ``steps`` steps of BATCH
    examples in one batch, training texts cut to ``max_length`` tokens, no checkpoints."""
    return {
        "data.held_out": held_out,
        "data.seed": seed,
        "seed": seed,
        "max_steps": steps,
        "data.max_length": max_length,
        "per_device_train_batch_size": BATCH,
        "gradient_accumulation_steps": 1,
        "save_strategy": "no",
        "eval_strategy": "no",
        "logging_steps": 5,
        "per_device_eval_batch_size": 32,
    }


def peer_trainer(triplets, seed: int, steps: int, max_length: int, output: str, callbacks=()):
    """sentence-transformers' own trainer and MNR loss on ``triplets`` (a recipe's ``{query, positive, negative}``
    rows), the embedded MiniLM cut to ``max_length`` tokens, the specter rows' budget and schedule; returns the
    trainer and the window the model is published with."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(sciembed.default_model_path(), device="cpu")
    window, model.max_seq_length = model.max_seq_length, max_length
    sep = model.tokenizer.sep_token
    texts = {
        column: [paper_text(row[role], sep) for row in triplets]
        for column, role in (("anchor", "query"), ("positive", "positive"), ("negative", "negative"))
    }
    training = SentenceTransformerTrainingArguments(
        output_dir=output,
        max_steps=steps,
        per_device_train_batch_size=BATCH,
        learning_rate=2e-5,
        warmup_steps=0.1,
        lr_scheduler_type="linear",
        weight_decay=0.0,
        seed=seed,
        save_strategy="no",
        report_to="none",
        logging_steps=5,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training,
        train_dataset=Dataset.from_dict(texts),
        loss=MultipleNegativesRankingLoss(model),
        callbacks=list(callbacks),
    )
    return trainer, window


def peer_row(seed: int, triplets, suite: TaskSuite, args, keep: Path | None = None) -> dict[str, Any]:
    """The peer (:func:`peer_trainer`) trained and scored like the recipes (the model saved in ``keep`` when given)."""
    with tempfile.TemporaryDirectory() as output:
        trainer, window = peer_trainer(triplets, seed, args.steps, args.max_length, output)
        started = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - started
    model = trainer.model
    # Trained on short texts, the model keeps its published window (as sciembed's recipes do with data.max_length).
    model.max_seq_length = window
    if keep is not None:
        model.save(str(keep))
    encoder = sciembed.PaperEncoder(model, device="cpu")
    return {
        "seed": seed,
        "system": PEER,
        "model": "SentenceTransformerTrainer + MultipleNegativesRankingLoss (scale 20) on the specter "
        "recipe's triplets, lr 2e-5, 10% warm-up, linear decay",
        "held_out_queries": len(suite.tasks[0].qrels),
        **scores(evaluate_suite(encoder, suite, n_jobs=1, show_progress_bar=False).results),
        "steps": result.global_step,
        "examples_seen": result.global_step * BATCH,
        "train_seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / max(result.global_step, 1), 2),
    }


def out_of_domain_suite(folder: Path, seed: int) -> TaskSuite:
    """SciRepEval's fields-of-study and search samples as evaluation tasks, the fields' papers split in halves by
    ``seed`` (as CACM's categories and the arXiv archives are: a seed's interval then covers other test papers than
    another's)."""
    from sciembed.data.scirepeval import read_scirepeval_sample
    from sciembed.evaluation.tasks import SearchTask

    fos = read_scirepeval_sample(folder / "fos_small.json", skip_invalid=True).data
    classification = fields_task(
        "scirepeval-samples",
        "Fields of study",
        [(str(row["paper_id"]), row["labels"], row) for row in fos],
        seed,
        task_id="fos",
        keep_predictions=True,
    )
    search = read_scirepeval_sample(folder / "search_small.jsonl", skip_invalid=True).data
    queries, documents, qrels = {}, {}, {}
    for number, row in enumerate(search):
        qid = f"q{number}"
        queries[qid] = row["query"]
        qrels[qid] = {c["paper_id"]: int(c["score"]) for c in row["candidates"]}
        documents.update({c["paper_id"]: c for c in row["candidates"]})
    ranking = SearchTask(
        "scirepeval-samples",
        "Search",
        documents,
        queries=queries,
        qrels=qrels,
        measures=("ndcg",),
        similarity="l2",
        task_id="search",
        keep_per_query=True,
    )
    return TaskSuite("scirepeval-samples", str(folder), [classification, ranking])


def scores(results) -> dict[str, Any]:
    """A row's metrics by task (rounded), and for the paired intervals the ranking tasks' per-query measure and the
    classification tasks' test labels and predictions (with the label columns of a multi-label task)."""
    metrics = {r.task_id: {name: round(value, 2) for name, value in r.metrics.items()} for r in results}
    per_query = {
        r.task_id: {q: round(v[PER_QUERY[r.task_id]], 4) for q, v in r.details["per_query"].items()}
        for r in results
        if r.task_id in PER_QUERY
    }
    per_paper = {
        r.task_id: {
            "label_columns": r.counts["num_labels"]
            if r.details["per_paper"] and isinstance(next(iter(r.details["per_paper"].values()))[0], list)
            else None,
            "papers": r.details["per_paper"],
        }
        for r in results
        if r.task_id in PER_PAPER
    }
    return {"metrics": metrics, "per_query": per_query, "per_paper": per_paper}


def paired_interval(
    rows: list[dict[str, Any]], others: dict[int, dict[str, Any]], task: str, resamples: PaperResamples
) -> dict[str, Any] | None:
    """The mean difference of ``rows`` to ``others`` (by seed) on ``task`` with its 95% percentile bootstrap interval;
    ``beats`` when the interval's lower end is above 0. Ranking tasks: per-query differences, queries pooled over
    seeds. Classification: per seed, the test papers resampled (``resamples``) and both rows' macro-F1 scored on each
    resample; the differences averaged over seeds. Seeds whose rows lack the per-query or per-paper values are left
    out (None if all are)."""
    pairs = [(row, others[row["seed"]]) for row in rows if row["seed"] in others]
    if task in PER_PAPER:
        return _paired_macro_f1(pairs, task, resamples)
    pairs = [
        (row, other) for row, other in pairs if task in row.get("per_query", {}) and task in other.get("per_query", {})
    ]
    differences = [
        row["per_query"][task][query] - other["per_query"][task][query]
        for row, other in pairs
        for query in row["per_query"][task]
    ]
    if not differences:
        return None
    values = np.array(differences)
    means = resampled_means(values, BOOTSTRAP, seed=0)
    return _interval(float(values.mean()), means, [row["seed"] for row, _ in pairs], queries=len(values))


def _paired_macro_f1(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    task: str,
    resamples: PaperResamples,
    their_task: str | None = None,
) -> dict[str, Any] | None:
    """The classification interval of :func:`paired_interval`; ``their_task``: the other rows' task scored on the same
    test papers (a head's predictions against a probe's), by default ``task``."""
    their_task = their_task or task
    points, resampled, papers, seeds = [], [], 0, []
    for row, other in pairs:
        if task not in row.get("per_paper", {}) or their_task not in other.get("per_paper", {}):
            continue
        ours, theirs = row["per_paper"][task], other["per_paper"][their_task]
        if (
            ours["papers"].keys() != theirs["papers"].keys()
        ):  # scored on other test papers (a split changed since): no pair
            continue
        seeds.append(row["seed"])
        ids = tuple(sorted(ours["papers"]))
        (our_point, our_resampled), (their_point, their_resampled) = (
            resamples.macro_f1(kept, ids) for kept in (ours, theirs)
        )
        points.append(our_point - their_point)
        resampled.append(our_resampled - their_resampled)
        papers += len(ids)
    if not points:
        return None
    return _interval(statistics.mean(points), np.mean(resampled, axis=0), seeds, papers=papers)


def _same_test_papers(row: dict[str, Any], other: dict[str, Any], task: str) -> bool:
    """Whether two rows scored a classification task on the same test papers (rows without per-paper values are
    taken to: they predate the splits' changes)."""
    ours, theirs = (r.get("per_paper", {}).get(task) for r in (row, other))
    return ours is None or theirs is None or ours["papers"].keys() == theirs["papers"].keys()


def _interval(difference: float, resampled: np.ndarray, seeds: list[int], **counts: int) -> dict[str, Any]:
    low, high = percentile_interval(resampled)
    return {
        "difference": round(difference, 2),
        "interval_95": [round(float(low), 2), round(float(high), 2)],
        "seeds": seeds,
        **counts,
        "beats": bool(low > 0),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per system: mean metrics over seeds, paired cite differences to MiniLM as published and to the counterpart,
    per-seed changes of the other tasks, and the issue's targets."""
    by_system: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_system.setdefault(row["system"], {})[row["seed"]] = row
    reference = by_system.get(REFERENCE, {})
    # Each seed's test papers are drawn once (seeded by the papers): every pair of rows scored on them is compared on
    # the same resamples (MiniLM's rows with every system's, each system's with MiniLM, the peer and its counterpart).
    resamples = PaperResamples(BOOTSTRAP)
    summary: dict[str, Any] = {}
    for name, seeds in by_system.items():
        chosen = [seeds[s] for s in sorted(seeds) if s in reference]
        if not chosen:
            continue
        tasks = chosen[0]["metrics"]
        entry: dict[str, Any] = {
            "seeds": [r["seed"] for r in chosen],
            "mean": {
                t: {m: round(statistics.mean(r["metrics"][t][m] for r in chosen), 2) for m in tasks[t]} for t in tasks
            },
        }
        if name != REFERENCE:
            entry["against_published"] = {
                t: paired_interval(chosen, reference, t, resamples) for t in (*PER_QUERY, *PER_PAPER)
            }
            entry["change_per_seed"] = {
                t: {
                    m: [
                        round(r["metrics"][t][m] - reference[r["seed"]]["metrics"][t][m], 2)
                        if _same_test_papers(r, reference[r["seed"]], t)
                        else None
                        for r in chosen
                    ]
                    for m in tasks[t]
                }
                for t in tasks
                # A row's own task (a SPECTROID head's predictions) has no counterpart in MiniLM's row.
                if t not in CITE_TASKS and t in reference[chosen[0]["seed"]]["metrics"]
            }
            if name != PEER and PEER in by_system:
                entry["against_peer"] = {
                    t: paired_interval(chosen, by_system[PEER], t, resamples) for t in (*PER_QUERY, *PER_PAPER)
                }
            counterpart = SYSTEMS[name].counterpart if name in SYSTEMS else None
            if counterpart in by_system:
                entry["against_counterpart"] = {
                    "system": counterpart,
                    **{
                        t: paired_interval(chosen, by_system[counterpart], t, resamples)
                        for t in (*PER_QUERY, *PER_PAPER)
                    },
                }
            if all("before" in r for r in chosen):
                entry["above_step_0_on_every_seed"] = all(
                    r["metrics"]["cacm_cite"]["map"] > r["before"]["map"] for r in chosen
                )
            if all(HEAD in r["metrics"] for r in chosen):
                # SPECTROID's claim: its trained head against MiniLM's linear probe, on the same test papers.
                entry["head_against_probe"] = _paired_macro_f1(
                    [(r, reference[r["seed"]]) for r in chosen], HEAD, resamples, "cacm_categories"
                )
                entry["head_above_probe_on_every_seed"] = all(
                    r["metrics"][HEAD]["f1_macro"] > reference[r["seed"]]["metrics"]["cacm_categories"]["f1_macro"]
                    for r in chosen
                )
        summary[name] = entry
    return summary


def _mean_change(entry: dict[str, Any], task: str, metric: str) -> float | None:
    """The mean per-seed change of a system on a task, over the seeds scored on the reference's test papers."""
    changes = [c for c in entry.get("change_per_seed", {}).get(task, {}).get(metric, []) if c is not None]
    return statistics.mean(changes) if changes else None


COLUMNS = (
    ("cacm_cite", "map", "CACM cite MAP"),
    ("hepth_cite", "map", "hep-th cite MAP"),
    ("cacm_categories", "f1_macro", "CACM categories F1"),
    ("arxiv_archive", "f1_macro", "arXiv archive F1"),
    ("fos", "f1_macro", "FoS F1"),
    ("search", "ndcg", "search nDCG"),
)


def table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table: per system its mean over seeds on every task and, after it, the change against
    MiniLM as published (paired difference [95% interval] where the rows keep what the interval resamples, else the
    mean of the per-seed changes); then CACM cite against the peer and against the counterpart, and whether the row
    ended above its own start on every seed (CACM cite MAP against its step 0; a head: its categories F1 against
    MiniLM's probe)."""

    def cell(entry: dict[str, Any], task: str, metric: str) -> str:
        value = f"{entry['mean'][task][metric]:.2f}"
        if entry.get("against_published", {}).get(task):
            paired = entry["against_published"][task]
            low, high = paired["interval_95"]
            fewer = f", seed {', '.join(map(str, paired['seeds']))}" if paired["seeds"] != entry["seeds"] else ""
            return f"{value} ({paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]{fewer})"
        change = _mean_change(entry, task, metric)
        if change is not None:
            return f"{value} ({change:+.2f})"
        return value

    header = [
        "system",
        "seeds",
        *(title for _, _, title in COLUMNS),
        "vs peer (CACM cite)",
        "vs counterpart (CACM cite; a head: its categories F1 vs MiniLM's probe)",
        "above its start on every seed",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in summary.items():

        def versus(key: str, entry: dict[str, Any] = entry) -> str:
            if key == "against_counterpart" and entry.get("head_against_probe"):
                paired = entry["head_against_probe"]
                low, high = paired["interval_95"]
                return f"{entry['mean'][HEAD]['f1_macro']:.2f}: {paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"
            paired = (entry.get(key) or {}).get("cacm_cite")
            if not paired:
                return ""
            low, high = paired["interval_95"]
            named = f"{entry[key]['system']}: " if "system" in entry[key] else ""
            return f"{named}{paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"

        cells = [
            name,
            ", ".join(map(str, entry["seeds"])),
            *(cell(entry, task, metric) for task, metric, _ in COLUMNS),
            versus("against_peer"),
            versus("against_counterpart"),
            _yes_no(entry.get("head_above_probe_on_every_seed", entry.get("above_step_0_on_every_seed"))),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _yes_no(value: bool | None) -> str:
    return "" if value is None else "yes" if value else "no"


def figure(summary: dict[str, Any]):
    """One panel per task: per trained system, its paired difference to MiniLM as published as a bar with its 95%
    interval (green when the interval is above 0, red when below, grey when it holds 0; without whiskers, the mean
    per-seed change, where the rows lack what the interval resamples); a matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [name for name in summary if name != REFERENCE]
    # Constrained layout leaves room for the title above the panels' own (tight_layout drew it over them).
    drawn, axes = plt.subplots(2, 3, figsize=(13, 2.5 + 0.45 * len(systems)), sharey=True, layout="constrained")
    for axis, (task, metric, title) in zip(axes.flat, COLUMNS):
        for y, name in enumerate(systems):
            entry = summary[name]
            paired = entry.get("against_published", {}).get(task)
            if paired:
                difference, (low, high) = paired["difference"], paired["interval_95"]
                colour = "tab:green" if low > 0 else "tab:red" if high < 0 else "tab:gray"
                axis.barh(y, difference, color=colour, xerr=[[difference - low], [high - difference]], capsize=3)
            elif (change := _mean_change(entry, task, metric)) is not None:
                axis.barh(y, change, color="lightgray", hatch="//")
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title(title, fontsize=10)
        axis.set_yticks(range(len(systems)), systems)
        axis.invert_yaxis()
        axis.grid(axis="x", alpha=0.3)
    seeds = sorted({seed for entry in summary.values() for seed in entry["seeds"]})
    drawn.suptitle(
        f"Change against all-MiniLM-L6-v2 as published, paired 95% interval "
        f"({'seed' if len(seeds) == 1 else 'seeds'} {', '.join(map(str, seeds))}; "
        "a row's own seeds are in the table)"
    )
    return drawn


def plot(summary: dict[str, Any], path: Path) -> None:
    """:func:`figure` saved to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    drawn = figure(summary)
    with atomic_path(path) as temporary:
        drawn.savefig(temporary, format="png", dpi=110)
    plt.close(drawn)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
