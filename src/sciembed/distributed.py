"""Which share of a job this process runs, and the collective steps the jobs need.

Which share of a job this process runs: rank and world size from `torchrun` / `accelerate launch` (a
``torch.distributed`` process group), or given by the caller (SLURM arrays, Ray or Spark tasks: no group, no barrier),
and the few collective steps the jobs need.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Share:
    """Process ``rank`` of ``world_size``. ``group`` when a process group connects them (barriers work)."""

    rank: int = 0
    world_size: int = 1
    group: bool = False

    def __post_init__(self) -> None:
        world_size, rank = self.world_size, self.rank
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world_size must be a positive integer, got {world_size!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ValueError(f"rank must be an integer in [0, {world_size}), got {rank!r}")

    def barrier(self) -> None:
        """Wait for every rank of the group (nothing to wait for without one)."""
        if self.group:
            import torch.distributed as dist

            dist.barrier()

    @contextlib.contextmanager
    def main_process_first(self) -> Iterator[None]:
        """Rank 0 runs the block first, the other ranks after it.

        Rank 0 may write a cache the others then read.
        """
        if self.rank != 0:
            self.barrier()
        yield
        if self.rank == 0:
            self.barrier()


def process_share(rank: int | None = None, world_size: int | None = None) -> Share:
    """The share of this process.

    It is ``rank`` / ``world_size`` as given, else the initialised process group's, else the whole job (rank 0 of 1).
    """
    if rank is None and world_size is None:
        if "torch" in sys.modules:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                return Share(dist.get_rank(), dist.get_world_size(), True)
        return Share()
    if rank is None or world_size is None:
        raise ValueError("give both rank and world_size, or neither")
    return Share(rank, world_size, False)


def init_from_environment() -> str | None:
    """Joins the process group that `torchrun` / `accelerate launch` describe in the environment.

    The group is joined when ``WORLD_SIZE`` is above 1: gloo on CPUs, NCCL on GPUs. Returns this process's own GPU
    (``cuda:LOCAL_RANK``) on a GPU machine, None otherwise (and without a group).
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    import torch.distributed as dist

    device = None
    if torch.cuda.is_available():
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device else "gloo")
    return device


def end_distributed_run() -> None:
    """Under `torchrun` / `accelerate launch`, end a finished run here, once every file is written. Left to
    interpreter shutdown, the process group (still held by a DDP-wrapped model) is torn down while Python
    finalises, which gloo sometimes turns into an abort (SIGABRT) of a run that succeeded. Every rank meets
    the others, leaves the group, flushes and exits 0."""
    if "torch" not in sys.modules:
        return
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    dist.destroy_process_group()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
