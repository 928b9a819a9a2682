"""The paper index built on a Ray cluster: trained once, parts added by Ray tasks.

It needs ``pip install "sciembed[ray]"``. :func:`index_with_ray` trains the index once on a seeded sample of the
collection, then each of ``parts`` Ray tasks indexes its slice of the rows ``trained_like`` that training: part ``p``
holds shard ``p`` of the embed job's split with one shard per part (rows ``p * n / parts`` up to the next part's).
The parts are merged on disk into one index, or kept to be served together
(:meth:`~sciembed.index.PaperIndex.load_shards`). Either way a search gives what a one-process build ``trained_like``
the same training gives at the same multiplier and probes. The embeddings and the output must lie on a file system
every node sees. Connect to a cluster (``ray.init(address=...)``) before calling.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from ..index import IndexSettings, PaperIndex
from ..index.blocks import open_embeddings
from ..io import refuse_replacing, write_embeddings

#: The folder beside the output that holds the training and the parts.
PARTS_SUFFIX = ".parts"


def index_with_ray(
    embeddings: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    parts: int = 4,
    kind: str = "binary",
    seed: int = 0,
    sample_size: int = 100_000,
    target_recall: float = 0.95,
    model: str | None = None,
    merge: bool = True,
    num_cpus: float = 1,
    overwrite: bool = False,
) -> list[Path]:
    """Build the index of ``embeddings`` as ``parts`` Ray tasks over one training. Return the index folder(s).

    Args:
        embeddings: a ``sciembed embed`` output on a file system the cluster sees.
        output: the merged index folder. The training and the parts are written to ``<output>.parts``.
        parts: Ray tasks, each indexing one contiguous slice of the rows.
        kind: ``exact``, ``int8``, ``binary`` or ``pq``.
        seed: seeds the training sample, the k-means and the tuning queries.
        sample_size: vectors the training sample holds.
        target_recall: recall@10 the training index and each part are tuned to.
        model: the model that embedded the vectors, when the output carries no stamp.
        merge: merge the parts into ``output`` (and delete them). Else keep them for ``PaperIndex.load_shards``.
        num_cpus: CPUs reserved per task.
        overwrite: replace an index at ``output`` and its parts.

    Returns:
        ``[output]`` when merged, else the part folders in row order.

    Raises:
        FileExistsError: ``output`` or its parts folder exists and ``overwrite`` is false (before any work).
        ValueError: fewer parts than one, or more than the papers.
    """
    import ray

    output = refuse_replacing(output, overwrite=overwrite)
    folder = refuse_replacing(output.with_name(output.name + PARTS_SUFFIX), overwrite=overwrite)
    source = open_embeddings(embeddings)
    if not 1 <= parts <= source.count:
        raise ValueError(f"parts must lie in 1 .. {source.count} (the papers), got {parts}")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    trained = _training(source, folder, kind=kind, seed=seed, sample_size=sample_size, target=target_recall)
    bounds = np.linspace(0, source.count, parts + 1).round().astype(int).tolist()
    task = ray.remote(num_cpus=num_cpus)(_build_part)
    folders = ray.get(
        [
            task.remote(
                str(embeddings), str(folder / f"part-{p:04d}"), (lo, hi), str(trained), seed, target_recall, model
            )
            for p, (lo, hi) in enumerate(zip(bounds, bounds[1:]))
        ]
    )
    folders = [Path(f) for f in folders]
    if not merge:
        return folders
    if parts > 1:
        PaperIndex.merge(folders, output, overwrite=overwrite)
    else:
        shutil.rmtree(output, ignore_errors=True)
        shutil.copytree(folders[0], output)
    shutil.rmtree(folder)
    return [output]


def _training(source, folder: Path, *, kind: str, seed: int, sample_size: int, target: float) -> Path:
    """An index of a seeded sample of ``source``.

    Every part reuses its ranges, mean and quantizers.
    """
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(source.count, min(sample_size, source.count), replace=False))
    sample = folder / "sample.npy"
    ids = [f"sample-{row}" for row in rows]
    write_embeddings(sample, [(ids, source.rows(rows))], total=len(ids), dim=source.dim)
    trained = folder / "trained"
    settings = IndexSettings(kind=kind, seed=seed, sample_size=sample_size, target_recall=target)
    PaperIndex.build(sample, trained, settings=settings)
    return trained


def _build_part(
    embeddings: str, output: str, rows: tuple[int, int], trained: str, seed: int, target: float, model: str | None
) -> str:
    """One Ray task: index the rows ``rows`` of ``embeddings`` into ``output``, trained like ``trained``."""
    PaperIndex.build(embeddings, output, rows=rows, trained_like=trained, seed=seed, target_recall=target, model=model)
    return output
