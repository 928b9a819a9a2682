"""Paired timing of forward passes, shared by the overhead benchmarks.

Each round runs every model once, in a fresh (seeded) random order, so no model always follows the same
one; each model is then compared with the reference *within the same round* (paired ratios) and the
median of those ratios is reported, on the wall clock and on the process's CPU time (which leaves out
time the process spent descheduled). Timings on this shared 2-core machine drift by +-20% within minutes,
which the pairing cancels.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping

import torch

#: name -> a function running one forward pass of that model on the benchmark batch.
Runs = Mapping[str, Callable[[], object]]


def time_forward_passes(
    runs: Runs, rounds: int, seed: int = 0
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall-clock and CPU seconds of every run in every round (after one warm-up pass each)."""
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    with torch.inference_mode():
        for run in runs.values():
            run()
        order = random.Random(seed)
        for _ in range(rounds):
            for name in order.sample(list(runs), len(runs)):
                start, start_cpu = time.perf_counter(), time.process_time()
                runs[name]()
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


def paired_ratios(times: Mapping[str, list[float]], reference: str) -> dict[str, float]:
    """Median over rounds of each run's time divided by the reference's time in the same round."""
    return {
        name: round(statistics.median(t / b for t, b in zip(values, times[reference])), 3)
        for name, values in times.items()
        if name != reference
    }


def medians(times: Mapping[str, list[float]]) -> dict[str, float]:
    return {name: round(statistics.median(values), 4) for name, values in times.items()}
