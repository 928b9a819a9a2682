"""The embed job on a Ray cluster (``pip install "sciembed[ray]"``): two routes, both giving sciembed's vectors.

- **Ray Data batch inference** (:func:`embed_parquet_with_ray`): ``ray.data.read_parquet`` the papers,
  ``map_batches`` with :class:`PaperEmbedder` (one encoder per actor, a pool of ``concurrency`` actors),
  ``write_parquet`` the ``paper_id`` and ``embedding`` columns. Ray schedules and streams the batches. The output
  folder reads back with :func:`sciembed.io.read_embeddings`, its rows in Ray's order (not the input's). Each batch
  is checked as it arrives (an id, a title or abstract, no id twice). A repeated id across batches is not caught in
  a stream.
- **The rank-sharded job as Ray tasks** (:func:`embed_with_ray_tasks`): :func:`~sciembed.jobs.embed.embed_to_file`
  with ``rank`` / ``world_size`` as ``world_size`` Ray tasks that share ``<output>.partial``. The task that finishes
  the last shard assembles the output, in input order, and a failed run resumes with any number of tasks.

Both take the encoder as a function that loads it (``lambda: Encoder.from_pretrained("my-model", max_length=512)``, a
:class:`~sciembed.encoders.WindowedEncoder`, ...), called once in each actor or task, so any family, format or backend
runs the same way as in one process. Ray is imported only here: sciembed runs without it. Connect to a cluster
(``ray.init(address=...)``) before calling. Without one Ray starts a local cluster on this machine (start it with
``include_dashboard=False`` where the machine is reachable: Ray's dashboard accepts jobs, CVE-2023-48022).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..data.papers import paper_records
from ..distributed import Share
from ..encode import Encoder
from ..io import embedding_table
from .embed import EmbedReport, check_output, embed_to_file

EncoderLoader = Callable[[], Encoder]


class PaperEmbedder:
    """The callable class that Ray Data's ``map_batches`` runs in each actor.

    The callable class Ray Data's ``map_batches`` runs in each actor: loads the encoder once, then embeds each batch of
    paper rows (``paper_id`` and the text columns) into the Arrow table of ``sciembed embed``'s Parquet output
    (:func:`sciembed.io.embedding_table`).

    Args:
        load: a function returning the encoder (default: the embedded all-MiniLM-L6-v2).
        batch_size: texts per forward pass (default: the encoder's).
    """

    def __init__(self, load: EncoderLoader = Encoder.from_pretrained, batch_size: int | None = None) -> None:
        self.encoder = load()
        self.batch_size = batch_size

    def __call__(self, batch: Mapping[str, np.ndarray]) -> Any:
        rows = len(batch["paper_id"])
        # A stream has no whole input to check first (embed_with_ray_tasks does, as `sciembed embed`): each batch is
        # checked as records given in Python are, before it is embedded.
        records = paper_records(
            [{name: _plain(values[row]) for name, values in batch.items()} for row in range(rows)],
            id_field="paper_id",
            source="a Ray Data batch",
        ).papers
        vectors = self.encoder.encode(records, batch_size=self.batch_size, show_progress_bar=False)
        return embedding_table([str(r["paper_id"]) for r in records], vectors)


def embed_parquet_with_ray(
    papers: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    encoder: EncoderLoader = Encoder.from_pretrained,
    concurrency: int = 2,
    batch_size: int = 256,
    encode_batch_size: int | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    num_blocks: int | None = None,
) -> str:
    """Embed Parquet papers with Ray Data into a new Parquet folder.

    Args:
        papers: Parquet with ``paper_id`` and the text columns (``title``, ``abstract``, any the encoder reads): a
            file or a folder of files, as a path or a URL Ray reads (``s3://...``).
        output: a folder (or URL) that must not exist yet. Ray writes its part files there.
        encoder: a function that loads the encoder, called once per actor.
        concurrency: actors, each holding one encoder.
        batch_size: papers per ``map_batches`` call.
        encode_batch_size: texts per forward pass (default: the encoder's).
        num_cpus: CPUs reserved per actor. The actors must leave CPUs free for reading and writing.
        num_gpus: GPUs reserved per actor (give 1 with ``device="cuda"``: Ray hides the GPUs from actors that reserve
            none).
        num_blocks: blocks the papers are split into before embedding (``Dataset.repartition``, default: as read,
            one per file or a few small files in one, each embedded by one actor). At least ``concurrency`` for every
            actor to get batches.

    Raises:
        FileExistsError: a local ``output`` exists (no run replaces earlier results unasked), checked before Ray
            starts.
        ValueError: the actors would hold every CPU of the cluster. The papers have no ``paper_id`` column, or
            neither ``title`` nor ``abstract``.
    """
    import ray

    output = os.fspath(output)
    if "://" not in output and Path(output).exists():
        raise FileExistsError(f"{output} exists; choose a new folder for the embeddings")
    cluster_cpus = ray.cluster_resources().get("CPU", 0.0)
    if concurrency * num_cpus >= cluster_cpus:
        # Ray Data's read and write tasks need CPUs too: with every CPU held by an actor it waits forever.
        raise ValueError(
            f"{concurrency} actors of {num_cpus} CPU each would hold all {cluster_cpus:g} CPUs of the Ray cluster, "
            "leaving none to read and write Parquet (Ray Data would wait forever): lower concurrency or num_cpus"
        )
    dataset = ray.data.read_parquet(os.fspath(papers))
    columns = set(dataset.schema().names)
    if "paper_id" not in columns or not columns & {"title", "abstract"}:
        raise ValueError(f"{papers}: needs a paper_id column and a title or abstract column (has {sorted(columns)})")
    if num_blocks:
        dataset = dataset.repartition(num_blocks)
    dataset.map_batches(
        PaperEmbedder,
        fn_constructor_kwargs={"load": encoder, "batch_size": encode_batch_size},
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=concurrency),
        num_cpus=num_cpus,
        num_gpus=num_gpus,
    ).write_parquet(output)
    return output


def embed_with_ray_tasks(
    papers: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    encoder: EncoderLoader = Encoder.from_pretrained,
    world_size: int = 2,
    num_cpus: float = 1,
    num_gpus: float = 0,
    shard_size: int = 10_000,
    batch_size: int | None = None,
    resume: bool = False,
) -> list[EmbedReport]:
    """:func:`~sciembed.jobs.embed.embed_to_file` as ``world_size`` Ray tasks (ranks ``0 .. world_size - 1``) over
    one output. Returns each task's report.

    Args:
        papers: a paper file (any format :func:`~sciembed.data.papers.read_papers` reads) on a file system
            every node of the cluster sees.
        output: as for :func:`~sciembed.jobs.embed.embed_to_file`, on that shared file system too: the tasks
            meet in ``<output>.partial``.
        encoder: a function that loads the encoder, called once per task.
        world_size: tasks sharing the job.
        num_cpus: CPUs reserved per task.
        num_gpus: GPUs reserved per task (as for :func:`embed_parquet_with_ray`).
        shard_size: papers per shard (the unit of the split and of resuming).
        batch_size: texts per forward pass (default: the encoder's).
        resume: keep the finished shards of an unfinished run of ``output``.

    Raises:
        FileExistsError: ``output`` exists, checked once before any task starts.
    """
    import ray

    if not resume:
        check_output(output)
    task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(embed_to_file)
    return ray.get(
        [
            task.remote(
                encoder,
                str(papers),
                str(output),
                share=Share(rank, world_size),
                shard_size=shard_size,
                batch_size=batch_size,
                resume=resume,
                show_progress_bar=False,
            )
            for rank in range(world_size)
        ]
    )


def _plain(value: Any) -> Any:
    """A Parquet cell as a paper record's Python value: numpy scalars become ``str`` or numbers."""
    return value.item() if isinstance(value, np.generic) else value
