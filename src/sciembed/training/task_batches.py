"""Task-heterogeneous batches for multi-task training (SciRepEval, sec. 5)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler


class TaskBalancedSampler(Sampler[int]):
    """Row indices in batches of ``batch_size`` that each hold an equal share of every task.

    SciRepEval trains on task-heterogeneous batches: every batch mixes all tasks in equal parts, so no
    task's gradient dominates a step. Each batch takes ``batch_size // tasks`` rows of every task (the
    remainder goes to the first tasks in name order, one row each); an epoch lasts until the largest
    task has been seen once, and smaller tasks start a new shuffled pass whenever they run out. The
    order depends on ``seed`` and the epoch (:meth:`set_epoch`), so every process of a distributed run
    draws the same sequence and a resumed run continues it.

    Args:
        tasks: the task name of every row of the dataset.
        batch_size: rows per batch (at least one per task).
        seed: the shuffling seed.
    """

    def __init__(self, tasks: Sequence[str], batch_size: int, seed: int = 0):
        names = sorted(set(tasks))
        if batch_size < len(names):
            raise ValueError(
                f"a batch of {batch_size} cannot hold every one of the {len(names)} tasks ({', '.join(names)})"
            )
        column = np.asarray(tasks)
        self.rows = {name: np.flatnonzero(column == name) for name in names}
        self.shares = {name: batch_size // len(names) + (i < batch_size % len(names)) for i, name in enumerate(names)}
        self.batch_size, self.seed, self.epoch = batch_size, seed, 0
        self.batches = max(-(-len(self.rows[name]) // self.shares[name]) for name in names)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.batches * self.batch_size

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng([self.seed, self.epoch])
        streams = {}
        for name, rows in self.rows.items():
            need = self.batches * self.shares[name]
            passes = -(-need // len(rows))
            streams[name] = np.concatenate([rng.permutation(rows) for _ in range(passes)])[:need]
        for batch in range(self.batches):
            for name, share in self.shares.items():
                yield from streams[name][batch * share : (batch + 1) * share].tolist()
