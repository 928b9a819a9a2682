"""Seconds per optimiser step: sciembed's ``specter`` trainer against sentence-transformers' own trainer, on the
same triplets, timed alternately in one run.

Both train the embedded all-MiniLM-L6-v2 on the ``specter`` recipe's CACM triplets (seed ``--seed``'s training
queries), ``BATCH`` triplets per step in one batch, texts cut to ``--max-length`` tokens, multiple-negatives ranking
with the hard negatives (cosine / 0.05), AdamW at 2e-5 with 10% warm-up: ``recipes.py``'s rows, built by its
``budget`` and ``peer_trainer``, so both see the same batches in the same order (one step of each gives the same loss
and gradients).

sciembed recomputes each layer's activations in the backward pass (activation checkpointing, its default in one
process); sentence-transformers' trainer keeps them. So sciembed is timed both ways: ``sciembed specter`` as it
trains by default and ``sciembed specter (activations kept)`` with ``activation_checkpointing=false``, the
like-for-like comparison, which the target applies to.

A further system, ``specter-anchored``'s settings (``recipes.py``: each step also embeds a batch of anchor papers),
shows what relational anchoring costs a step; it needs SciRepEval's samples beside the CACM folder.

Each round trains each system ``--steps`` steps from a fresh model, in a seeded random order (neither always runs
first). A step's time is the wall-clock (and process CPU) time between the ends of consecutive optimiser steps, so it
holds the collation, forward, backward and optimiser step; the first step of a run (warm-up) is left out. Per round,
sciembed's median step time is divided by the peer's (paired ratios, as ``timing.py``); the median over rounds is the
result. Timings drift on this shared machine: run it alone.

    python benchmarks/training_speed.py --data ../shared/data/cacm --rounds 3 --steps 12
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
from recipes import BATCH, PEER, SYSTEMS, budget, peer_trainer
from timing import medians, paired_ratios
from transformers import TrainerCallback

from sciembed.io import atomic_path
from sciembed.training.recipes import anchor_paths
from sciembed.training.run import prepare

SCIEMBED = "sciembed specter"
KEPT = "sciembed specter (activations kept)"
ANCHORED = "sciembed specter-anchored"


class StepClock(TrainerCallback):
    """Wall-clock and CPU seconds between the ends of consecutive optimiser steps."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._last: tuple[float, float] | None = None

    def on_step_end(self, args, state, control, **kwargs):
        now = (time.perf_counter(), time.process_time())
        if self._last is not None:
            self.wall.append(now[0] - self._last[0])
            self.cpu.append(now[1] - self._last[1])
        self._last = now


def sciembed_run(cacm: Path, seed: int, steps: int, max_length: int, overrides: dict | None = None) -> StepClock:
    clock = StepClock()
    with tempfile.TemporaryDirectory() as output:
        trainer = prepare(
            "specter", None, cacm, output, {**budget(seed, steps, max_length), **(overrides or {})}
        ).trainer
        trainer.add_callback(clock)
        trainer.train()
    return clock


def peer_run(triplets, seed: int, steps: int, max_length: int) -> StepClock:
    clock = StepClock()
    with tempfile.TemporaryDirectory() as output:
        peer_trainer(triplets, seed, steps, max_length, output, callbacks=[clock])[0].train()
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", type=Path, default=Path("../shared/data/cacm"), help="the CACM collection (../shared/data/cacm)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each trains both systems once")
    parser.add_argument(
        "--steps", type=int, default=12, help="optimiser steps per run (the first is warm-up, not timed)"
    )
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text")
    parser.add_argument("--seed", type=int, default=0, help="the split and sampling seed of the triplets")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "training_speed.json")
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"{args.data} is absent: this benchmark needs the CACM collection (../shared/data/README.md)")
    if args.steps < 3:
        raise SystemExit("--steps must be at least 3: the first step is warm-up and a run needs two timed steps")
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as output:
        triplets = prepare(
            "specter", None, args.data, output, budget(args.seed, args.steps, args.max_length)
        ).trainer.train_dataset
    runs = {
        SCIEMBED: lambda: sciembed_run(args.data, args.seed, args.steps, args.max_length),
        KEPT: lambda: sciembed_run(
            args.data, args.seed, args.steps, args.max_length, {"activation_checkpointing": False}
        ),
        PEER: lambda: peer_run(triplets, args.seed, args.steps, args.max_length),
    }
    anchors = anchor_paths(args.data.parent / "scirepeval-samples")
    if all(path.is_file() for path in anchors):
        system = SYSTEMS["specter[anchor_weight=50,wise=0.5,anchors=mesh_small+specter_small]"]
        anchored = {**system.overrides, "data.anchor_papers": [str(p) for p in anchors]}
        runs[ANCHORED] = lambda: sciembed_run(args.data, args.seed, args.steps, args.max_length, anchored)
    else:
        print(f"{anchors[0].parent} is absent: specter-anchored is not timed", flush=True)
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    order = random.Random(args.seed)
    for number in range(args.rounds):
        for name in order.sample(list(runs), len(runs)):
            clock = runs[name]()
            wall[name].append(statistics.median(clock.wall))
            cpu[name].append(statistics.median(clock.cpu))
            print(f"round {number + 1}: {name} {wall[name][-1]:.2f} s/step", flush=True)
    report = {
        "benchmark": "training_speed",
        "description": __doc__.strip().splitlines()[0],
        "settings": {
            "rounds": args.rounds,
            "steps": args.steps,
            "batch": BATCH,
            "max_length": args.max_length,
            "seed": args.seed,
        },
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "torch_threads": torch.get_num_threads(),
        },
        "seconds_per_step": {"wall": medians(wall), "cpu": medians(cpu)},
        "per_round": {"wall": wall, "cpu": cpu},
        "ratio_to_peer": {"wall": paired_ratios(wall, PEER)[KEPT], "cpu": paired_ratios(cpu, PEER)[KEPT]},
        "checkpointed_ratio_to_peer": {
            "wall": paired_ratios(wall, PEER)[SCIEMBED],
            "cpu": paired_ratios(cpu, PEER)[SCIEMBED],
        },
        **(
            {
                "anchored_ratio_to_peer": {
                    "wall": paired_ratios(wall, PEER)[ANCHORED],
                    "cpu": paired_ratios(cpu, PEER)[ANCHORED],
                }
            }
            if ANCHORED in runs
            else {}
        ),
        "target": "sciembed's seconds per step, activations kept as the peer keeps them, within 5% of the peer's "
        "(ratio <= 1.05)",
    }
    report["meets_target"] = report["ratio_to_peer"]["wall"] <= 1.05
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    shown = (
        "seconds_per_step",
        "ratio_to_peer",
        "checkpointed_ratio_to_peer",
        "anchored_ratio_to_peer",
        "meets_target",
    )
    print(json.dumps({k: report[k] for k in shown if k in report}, indent=1))


if __name__ == "__main__":
    main()
