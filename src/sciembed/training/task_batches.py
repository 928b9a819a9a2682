"""Task-heterogeneous batches for multi-task training (SciRepEval, sec. 5)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
from torch.utils.data import Sampler


class TaskBalancedSampler(Sampler[int]):
    """Row indices in batches of ``batch_size`` that each hold a fixed share of every task.

    SciRepEval trains on task-heterogeneous batches: every batch mixes all tasks in equal parts, so no
    task's gradient dominates a step. Each batch takes ``batch_size // tasks`` rows of every task (the
    remainder goes to the first tasks in name order, one row each). ``weights`` give some tasks more of every batch
    instead (rows in proportion to the weights, the rows left over by rounding down going to the largest
    remainders, ties in name order). An epoch lasts until the task slowest to go through its rows has been seen
    once, and the others start a new shuffled pass whenever they run out. The order depends on ``seed`` and the
    epoch (:meth:`set_epoch`), so every process of a distributed run draws the same sequence and a resumed run
    continues it.

    Args:
        tasks: the task name of every row of the dataset.
        batch_size: rows per batch (at least one per task).
        seed: the shuffling seed.
        weights: a positive weight per task name (default: equal shares).
    """

    def __init__(
        self, tasks: Sequence[str], batch_size: int, seed: int = 0, weights: Mapping[str, float] | None = None
    ):
        names = sorted(set(tasks))
        if batch_size < len(names):
            raise ValueError(
                f"a batch of {batch_size} cannot hold every one of the {len(names)} tasks ({', '.join(names)})"
            )
        column = np.asarray(tasks)
        self.rows = {name: np.flatnonzero(column == name) for name in names}
        self.shares = _shares(names, batch_size, weights or dict.fromkeys(names, 1.0))
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


def _shares(names: list[str], batch_size: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Rows of each task in a batch, in proportion to ``weights``.

    Rows left over go to the largest remainders first, ties in name order.
    """
    if sorted(weights) != names or not all(weight > 0 for weight in weights.values()):
        raise ValueError(
            f"task weights must give each of the tasks {', '.join(names)} a positive weight, got {weights}"
        )
    total = sum(weights.values())
    exact = {name: batch_size * weights[name] / total for name in names}
    shares = {name: int(exact[name]) for name in names}
    by_remainder = sorted(names, key=lambda name: -(exact[name] - shares[name]))
    for name in by_remainder[: batch_size - sum(shares.values())]:
        shares[name] += 1
    empty = [name for name in names if shares[name] == 0]
    if empty:
        raise ValueError(
            f"a batch of {batch_size} gives task(s) {', '.join(empty)} no row at these weights: {weights}"
        )
    return shares
