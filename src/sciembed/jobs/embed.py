"""The embed job: papers to embeddings, in shards that survive interruptions and spread over processes.

Papers are encoded ``shard_size`` at a time. Each finished shard is saved atomically as a Parquet part in
``<output>.partial/parts/`` next to a manifest of the run's settings. Shard k belongs to rank ``k mod
world_size``, so under `torchrun` / `accelerate launch` (or SLURM array tasks given ``--rank`` /
``--world-size``) every process encodes its own shards. When every shard is done the output is assembled:
a folder of Parquet parts (``datasets.load_dataset("parquet", data_dir=...)`` reads it) renamed into place
in one step, or one ``.jsonl`` / ``.npy`` / ``.parquet`` file written atomically. The ``.partial`` folder is
removed. A run that was interrupted is continued with ``resume=True``, by any number of processes: finished
shards are kept, and only the rest is encoded. Vectors go through the embedding cache ``sciembed evaluate`` reads
(:class:`~sciembed.evaluation.cache.EmbeddingCache`, keyed by the encoder's fingerprint and each paper's text), so
papers embedded once, by either command, are not embedded again. A paper file given by path is read into a
memory-mapped Arrow file in the ``.partial`` folder (:func:`~sciembed.data.papers.paper_dataset`), so no process holds
the corpus in memory. :func:`embed_to_file` is the job. ``sciembed embed`` (:mod:`sciembed.commands.embed`) parses
its options and calls it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..data.papers import (
    GIVEN_IN_PYTHON,
    MOVED_JOB_OPTIONS,
    PaperProblem,
    PaperReading,
    paper_records,
    usable_as_is,
)
from ..distributed import Share, process_share
from ..encode import Encoder, ModelArgument, refuse_encoder_options, resolve_encoder
from ..evaluation.cache import EmbeddingCache, caches_by_text
from ..io import (
    EMBEDDING_SUFFIXES,
    Chunk,
    atomic_path,
    check_cache_dir,
    ids_path,
    read_embeddings,
    refuse_replacing,
    refuse_replacing_file,
    replace_folder,
    write_embeddings,
)
from ..logs import progress_enabled

logger = logging.getLogger(__name__)

_MANIFEST = "manifest.json"
_PARTS = "parts"
# Taken by the rank that assembles the output when no process group can elect one (SLURM arrays).
_ASSEMBLING = "assembling"

Papers = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class EmbedReport:
    """What an :func:`embed_to_file` run did (in this process).

    Attributes:
        output: the output file or folder.
        papers, dim: papers in the whole job and the embedding size.
        shards: shards in the whole job.
        resumed_shards: shards of this process that an earlier run had finished.
        encoded_shards: shards this process encoded.
        rank, world_size: this process's share of the job.
        assembled: whether the output is complete (this process, or rank 0 of its group, assembled it).
        skipped: the records of the input file that were skipped (``skip_invalid``).
        encoded_papers: papers this process encoded (those of its shards that an earlier run had not finished).
        cached_papers: of those, the papers whose vectors the embedding cache held.
        seconds: wall-clock time of the run in this process, reading the input and writing the output included.
        model: the encoder's name (:attr:`~sciembed.Encoder.name_or_path`).
        revision: the Hub commit of the model (:attr:`~sciembed.Encoder.revision`, ``None`` for a local folder).
    """

    output: Path
    papers: int
    dim: int | None
    shards: int
    resumed_shards: int
    encoded_shards: int = 0
    rank: int = 0
    world_size: int = 1
    assembled: bool = True
    skipped: list[PaperProblem] = field(default_factory=list)
    encoded_papers: int = 0
    seconds: float = 0.0
    model: str | None = None
    revision: str | list[str | None] | None = None
    cached_papers: int = 0

    def summary(self) -> str:
        """One line on what this process did.

        It names the papers embedded, the seconds, the papers per second and the output.
        """
        share = (
            f"rank {self.rank} of {self.world_size}: encoded {self.encoded_shards} shard(s), "
            if self.world_size > 1
            else ""
        )
        rate = (
            f" ({self.encoded_papers / self.seconds:.1f} papers/s)" if self.encoded_papers and self.seconds > 0 else ""
        )
        cached = f" ({self.cached_papers} from the embedding cache)" if self.cached_papers else ""
        line = f"{share}embedded {self.encoded_papers} papers{cached} in {self.seconds:.1f} s{rate}"
        if self.resumed_shards:
            line += f"; {self.resumed_shards} shard(s) were done by an earlier run"
        if self.skipped:
            line += f"; {len(self.skipped)} invalid record(s) skipped"
        if self.dim is not None:
            return f"{line}; wrote {self.papers} x {self.dim} embeddings to {self.output}"
        if self.assembled:
            return f"{line}; rank 0 wrote the {self.papers} embeddings to {self.output}"
        return f"{line}; {self.output} is written by the task that finishes the last shard"


def partial_dir(output: str | os.PathLike[str]) -> Path:
    """The folder holding the finished shards of an unfinished run writing ``output``."""
    output = Path(output)
    return output.with_name(output.name + ".partial")


def check_output(
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    source: str | os.PathLike[str] | None = None,
    option: str = "output",
) -> Path:
    """``output`` as a Path: a ``.jsonl``, ``.npy`` or ``.parquet`` file, or a Parquet folder.

    Args:
        output: the output's path (a name without a suffix is a folder of Parquet parts).
        overwrite: replace an output already there.
        source: the papers' path, which the output may neither be nor hold.
        option: the output's name in messages (``--output`` on the command line).

    Raises:
        ValueError: another suffix. An output that is or holds ``source``.
        FileExistsError: an output (or a ``.npy``'s ids file) already there, unless ``overwrite``.
    """
    output = Path(output)
    if output.suffix and output.suffix.lower() not in EMBEDDING_SUFFIXES:
        raise ValueError(
            f"{output}: unsupported embedding output; use a {', '.join(EMBEDDING_SUFFIXES)} file, "
            "or a name without a suffix for a folder of Parquet parts"
        )
    if source is not None and Path(source).exists():
        _refuse_holding(output, Path(source), option)
    for written in written_files(output):
        # A file output is never a folder, which overwrite does not replace.
        (refuse_replacing_file if written.suffix else refuse_replacing)(written, overwrite=overwrite)
    return output


def _refuse_holding(output: Path, source: Path, option: str) -> None:
    """Refuse an output that is the papers' file or a folder holding it.

    Replacing it would delete the papers.
    """
    resolved = source.resolve()
    for path in written_files(output):
        if path.exists() and (path.resolve() == resolved or path.resolve() in resolved.parents):
            held = "" if path.resolve() == resolved else f" (the folder {path} holds it)"
            raise ValueError(f"{option} {output} would overwrite the input {source}{held}; choose another output")


def written_files(output: Path) -> list[Path]:
    """The files an embedding output consists of: the output, and a ``.npy``'s ids file."""
    return [output] + ([ids_path(output)] if output.suffix.lower() == ".npy" else [])


def embed_to_file(
    model: ModelArgument,
    papers: Papers | Any | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    shard_size: int = 10_000,
    batch_size: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    share: Share | None = None,
    reading: PaperReading | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    show_progress_bar: bool | None = None,
    **removed: Any,
) -> EmbedReport:
    """Embed ``papers`` into an embeddings file or a folder of Parquet parts.

    ``output`` is a ``.jsonl``, ``.npy`` or ``.parquet`` file, or a folder of Parquet parts (``part-00000.parquet``,
    ... with columns ``paper_id`` and ``embedding``).

    Args:
        model: a ready :class:`~sciembed.Encoder`, a Hub id or local folder (loaded with
            :meth:`sciembed.Encoder.from_pretrained`'s defaults, ``None``: the embedded all-MiniLM-L6-v2), or a
            function that returns an encoder. A name or function is loaded once the papers have been read and
            checked, so that a bad input fails before a long model load. A model with options (device, max_length,
            revision, ...) is loaded first with :meth:`sciembed.Encoder.from_pretrained` and passed (or a function
            that loads it so).
        papers: records with ``paper_id`` (a list, generator, pandas DataFrame or ``datasets.Dataset``, checked as a
            file's records are: :func:`~sciembed.data.papers.paper_records`, a valid ``Dataset`` stays memory-mapped,
            others are held in memory), or the path of papers in any layout
            :func:`~sciembed.data.papers.read_papers` reads (a papers file, a folder of Parquet parts, a SMART
            collection), read with :func:`~sciembed.data.papers.paper_dataset`, so that it need not fit in memory.
        reading: how the papers are read (:class:`~sciembed.data.papers.PaperReading`). ``id_field`` and
            ``skip_invalid`` apply to records and files. ``text_fields`` are the fields a file's papers keep beside
            title and abstract, e.g. ``body``, for an encoder that reads them
            (:class:`~sciembed.encoders.WindowedEncoder`). ``smart_links`` reads a SMART collection's ``.X`` lines,
            which are not embedded.
        cache_dir, use_cache: the embedding cache ``sciembed evaluate`` shares (default
            :func:`sciembed.io.default_cache_dir`): vectors found there are not encoded again, and those encoded are
            added. ``use_cache=False`` encodes every paper and caches nothing. An encoder that reads long papers
            window by window is not cached.
        shard_size: papers per shard (the unit of resuming and of the split over processes).
        resume: keep the finished shards of an unfinished run of ``output`` (with the same papers, model
            and settings, the number of processes may differ).
        overwrite: replace an ``output`` that exists (an earlier run's). Refused otherwise, before any work.
        share: this process's share, ``Share(rank, world_size)``: shards ``rank, rank + world_size, ...``. By default
            the initialised ``torch.distributed`` group's (`torchrun`, `accelerate launch`), else the whole
            job. Given explicitly (SLURM arrays, or Ray or Spark mapping ``rank`` over tasks), the tasks share
            ``<output>.partial`` with no process group: a task joins the unfinished run it finds there when
            it has the same manifest, and the task that finishes the last shard assembles the output.
        show_progress_bar: show one bar over this process's papers (``None``: when the ``sciembed`` logger shows
            INFO).

    Writes ``<output>.meta.json`` beside the output (:func:`write_model_stamp`), which ``sciembed index build``
    reads. Logs the records skipped (``skip_invalid``) once read, and ends with one line, :meth:`EmbedReport.summary`.

    Raises:
        FileExistsError: ``output`` exists and ``overwrite`` is false. An unfinished run of ``output`` exists and
            ``resume`` is false (one process).
        ValueError: ``resume`` is true but the unfinished run used other papers or settings. Damaged state.
        InvalidPaperError: a bad record (and ``skip_invalid`` is false): one without an id, or with the id of an
            earlier one, or without text. Named by file and line, or for records by position.
        TypeError: ``papers`` is not records (texts, bytes, a number, ...). An encoder option (``device=``, ...),
            naming :meth:`sciembed.Encoder.from_pretrained`.
    """
    refuse_encoder_options("embed_to_file", removed, moved=MOVED_JOB_OPTIONS)
    started = time.perf_counter()
    source = papers if isinstance(papers, (str, os.PathLike)) else None
    output = check_output(output, overwrite=overwrite, source=source)
    cache_folder = check_cache_dir(cache_dir) if use_cache else None  # before any work
    if shard_size < 1:
        raise ValueError(f"shard_size must be positive, got {shard_size}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    share = share if share is not None else process_share()
    reading = reading if reading is not None else PaperReading()
    id_field, skip_invalid, text_fields = reading.id_field, reading.skip_invalid, reading.fields
    folder = partial_dir(output)
    _check_partial(folder)
    try:
        if isinstance(papers, (str, os.PathLike)):
            from ..data.papers import paper_dataset

            with share.main_process_first():  # rank 0 writes the Arrow file, the others open it
                read = paper_dataset(papers, folder, **reading.options())
            papers, skipped, source = read.dataset, read.skipped, read.path
        elif hasattr(papers, "column_names") and usable_as_is(
            papers, id_field=id_field, skip_invalid=skip_invalid, text_fields=text_fields
        ):
            skipped, source = [], GIVEN_IN_PYTHON  # a valid datasets.Dataset stays memory-mapped
        else:
            given = paper_records(papers, id_field=id_field, skip_invalid=skip_invalid, text_fields=text_fields)
            papers, skipped, source = given.papers, given.skipped, given.path
        if skipped and share.rank == 0:
            logger.warning(
                "skipped %d invalid record(s) of %s:\n  %s",
                len(skipped),
                source,
                "\n  ".join(map(str, skipped)),
            )
        if not len(papers):
            raise ValueError("no papers to embed")
        encoder = resolve_encoder(model)
        count = math.ceil(len(papers) / shard_size)
        with share.main_process_first():  # rank 0 starts or checks the run, the others join it
            joining = share.rank > 0 if share.group else share.world_size > 1
            _start(folder, _manifest(encoder, papers, shard_size), resume=resume, joining=joining)
        cache = _open_cache(encoder, cache_folder, share) if cache_folder is not None else None
        resumed, encoded, encoded_papers = _encode_shards(
            encoder,
            papers,
            folder / _PARTS,
            shard_size,
            count,
            share,
            batch_size,
            progress_enabled(show_progress_bar),
            cache,
        )
    except BaseException:
        # A run that finished no shard leaves nothing worth resuming, and must not block the next.
        if share.world_size == 1 and not any((folder / _PARTS).glob("part-*.parquet")):
            shutil.rmtree(folder, ignore_errors=True)
        raise

    share.barrier()
    assembled = share.rank == 0 if share.group else _all_done(folder / _PARTS, count) and _claim(folder, share)
    dim = None
    if assembled:
        write_model_stamp(output, encoder, text_fields)
        dim = _assemble(folder, output, papers, shard_size, count)
    share.barrier()
    report = EmbedReport(
        output,
        len(papers),
        dim,
        count,
        resumed,
        encoded,
        share.rank,
        share.world_size,
        assembled or share.group,
        skipped,
        encoded_papers,
        time.perf_counter() - started,
        model=encoder.name_or_path,
        revision=encoder.revision,
        cached_papers=cache.hits if cache is not None else 0,
    )
    logger.info("%s", report.summary())
    return report


def write_model_stamp(output: Path, encoder: Encoder, text_fields: Sequence[str]) -> Path:
    """Write ``<output>.meta.json``: the model's name, revision and fingerprint, which ``sciembed index build`` reads.

    Args:
        output: the embedding output.
        encoder: the model that embeds it.
        text_fields: the paper fields its texts are made of.
    """
    from ..index.model import stamp_of, write_sidecar

    return write_sidecar(output, stamp_of(encoder, text_fields))


def _records(papers: Papers | Any, start: int, stop: int) -> list[Mapping[str, Any]]:
    """Papers ``start .. stop - 1`` as records (a ``datasets.Dataset`` slice is read from its Arrow file)."""
    if hasattr(papers, "select"):
        return papers.select(range(start, stop)).to_list()
    return list(papers[start:stop])


def _ids(papers: Papers | Any, start: int, stop: int) -> list[str]:
    """The ids of papers ``start .. stop - 1`` (of a ``datasets.Dataset``, read from its id column alone)."""
    if hasattr(papers, "select_columns"):
        return [str(i) for i in papers.select_columns(["paper_id"])[start:stop]["paper_id"]]
    return [str(paper["paper_id"]) for paper in papers[start:stop]]


def _part(parts: Path, index: int) -> Path:
    return parts / f"part-{index:05d}.parquet"


def _open_cache(encoder: Encoder, folder: Path, share: Share) -> EmbeddingCache | None:
    """The embedding cache of ``encoder`` in ``folder``, opened by rank 0 first.

    It is ``None`` for an encoder not cached by text. Tasks without a process group open it without compacting it,
    which they cannot do in turn.
    """
    if not caches_by_text(encoder):
        logger.info("%s reads long papers window by window: its vectors are not cached", encoder.name_or_path)
        return None
    with share.main_process_first():
        return EmbeddingCache(encoder, folder, compact=share.group or share.world_size == 1)


def _encode_shards(
    encoder: Encoder,
    papers: Papers | Any,
    parts: Path,
    shard_size: int,
    count: int,
    share: Share,
    batch_size: int,
    show_progress_bar: bool,
    cache: EmbeddingCache | None = None,
) -> tuple[int, int, int]:
    """Encode this process's unfinished shards into ``parts`` (through ``cache`` when given). Returns (shards already
    done, shards encoded, papers encoded). One bar covers them all: a shard's own bar only when it is the only one."""
    resumed = encoded = encoded_papers = 0
    dim = None
    indices = range(share.rank, count, share.world_size)
    total = sum(min((index + 1) * shard_size, len(papers)) - index * shard_size for index in indices)
    progress = tqdm(total=total, desc="Encoding", unit="paper", disable=not show_progress_bar or len(indices) == 1)
    for index in indices:
        part = _part(parts, index)
        start, stop = index * shard_size, min((index + 1) * shard_size, len(papers))
        if part.exists():
            dim = dim or encoder.get_embedding_dimension()
            _check_part(part, _ids(papers, start, stop), dim)
            resumed += 1
            progress.update(stop - start)
            continue
        records = _records(papers, start, stop)
        ids = [str(paper["paper_id"]) for paper in records]
        options = {"batch_size": batch_size, "show_progress_bar": show_progress_bar and len(indices) == 1}
        desc = f"Shard {index + 1}/{count}" if count > 1 else "Encoding"
        if cache is None:
            vectors = encoder.encode(records, progress_desc=desc, **options)
        else:
            vectors = cache.embed(encoder.texts(records), inputs=records, desc=desc, **options)
        write_embeddings(part, [(ids, vectors)], total=len(ids), dim=vectors.shape[1])
        encoded += 1
        encoded_papers += len(ids)
        progress.update(len(ids))
    progress.close()
    return resumed, encoded, encoded_papers


def _check_part(part: Path, ids: list[str], dim: int | None = None) -> Chunk:
    """The ids and vectors of a finished part, refused unless they fit the shard.

    The part must hold the shard's ids, in order, with float vectors (of size ``dim``, when given). Anything else is
    named.
    """
    try:
        found, vectors = read_embeddings(part)
    except Exception as error:  # pyarrow's errors for a damaged file have no common base below Exception
        raise ValueError(f"{part}: not a readable part ({error}); delete it and --resume re-embeds it") from None
    if found != ids or vectors.ndim != 2:
        raise ValueError(
            f"{part}: holds {len(found)} vectors of shape {vectors.shape} for other papers than the "
            f"{len(ids)} of its shard; delete it and --resume re-embeds it"
        )
    if dim is not None and vectors.shape[1] != dim:
        raise ValueError(
            f"{part}: vectors of size {vectors.shape[1]} where the model's are {dim}; delete it and --resume "
            "re-embeds it"
        )
    return found, vectors


def _all_done(parts: Path, count: int) -> bool:
    return all(_part(parts, index).exists() for index in range(count))


def _claim(folder: Path, share: Share) -> bool:
    """Whether this process assembles the output: always alone. Among group-less tasks, the one that
    creates the ``assembling`` marker first."""
    marker = folder / _ASSEMBLING
    if share.world_size == 1:
        marker.unlink(missing_ok=True)  # left by a task killed while assembling: one process takes over
        return True
    try:
        marker.touch(exist_ok=False)
    except FileExistsError:
        return False
    return True


def _assemble(folder: Path, output: Path, papers: Papers | Any, shard_size: int, count: int) -> int:
    """Check every part (each read once) and put the output in place. Returns the embedding size."""
    parts = folder / _PARTS

    def checked() -> Iterator[Chunk]:
        dim = None
        for index in range(count):
            ids, vectors = _check_part(
                _part(parts, index), _ids(papers, index * shard_size, min((index + 1) * shard_size, len(papers)))
            )
            if dim is not None and vectors.shape[1] != dim:
                raise ValueError(
                    f"{_part(parts, index)}: vectors of size {vectors.shape[1]}, the parts before it {dim}; "
                    f"delete {folder} to start over"
                )
            dim = vectors.shape[1]
            yield ids, vectors

    chunks = checked()
    first = next(chunks)
    dim = first[1].shape[1]
    if output.suffix:
        write_embeddings(
            output, itertools.chain([first], chunks), total=len(papers), dim=dim
        )  # a wrong part leaves no output
    else:
        for _ in chunks:
            pass
        for leftover in parts.glob(".*"):  # temporary files of parts whose writer was killed
            leftover.unlink()
        replace_folder(parts, output)
    shutil.rmtree(folder)
    return dim


#: Manifest entries that describe a run without deciding its vectors (not compared on resume).
_INFORMATIONAL = ("model", "revision")


def _manifest(encoder: Encoder, papers: Papers | Any, shard_size: int) -> dict[str, Any]:
    digest = hashlib.sha256()
    for start in range(0, len(papers), shard_size):
        records = _records(papers, start, min(start + shard_size, len(papers)))
        for paper, text in zip(records, encoder.texts(records)):
            digest.update(str(paper["paper_id"]).encode() + b"\0" + text.encode() + b"\0")
    return {
        "model": encoder.name_or_path,
        "revision": encoder.revision,
        # What the vectors depend on (weights, config, pooling, length, format), not where the model was read
        # from: the same model given as model/ or model resumes, changed weights at the same path do not.
        "encoder_fingerprint": encoder.fingerprint(),
        "pooling": encoder.pooling,
        "normalize": encoder.normalize,
        "max_length": encoder.max_length,
        "forward_options": encoder.forward_options,
        "shard_size": shard_size,
        "papers": len(papers),
        "papers_sha256": digest.hexdigest(),
    }


def _check_partial(folder: Path) -> None:
    """Refuse an unfinished run's folder with a damaged layout, naming the fault and the fix.

    A damaged layout has a file where a folder belongs, or the reverse.
    """
    for path, folder_expected in ((folder, True), (folder / _PARTS, True), (folder / _MANIFEST, False)):
        if (path.exists() or path.is_symlink()) and path.is_dir() != folder_expected:
            kind = "not a folder" if folder_expected else "not a file"
            raise ValueError(
                f"{path}: {kind}, so the unfinished run in {folder} is damaged; delete {folder} to start over"
            )


def _check_parts(parts: Path, count: int) -> None:
    """Refuse a stray file among the finished parts, naming it.

    A stray file is no part of a run of ``count`` shards. It would join a folder output.
    """
    expected = {_part(parts, index).name for index in range(count)}
    for entry in sorted(parts.iterdir()):
        if entry.name not in expected and not entry.name.startswith("."):  # .name: a part being written
            raise ValueError(
                f"{entry}: not one of the {count} parts of the unfinished run in {parts.parent} "
                f"(part-00000.parquet to {_part(parts, count - 1).name}); delete it, or delete {parts.parent} "
                "to start over"
            )


def _start(folder: Path, manifest: dict[str, Any], *, resume: bool, joining: bool) -> None:
    """Start the run in ``folder``, or continue the unfinished one there.

    A run continues when its manifest matches and ``resume`` or ``joining`` is set (``joining``: another process of
    this job may have started it).
    """
    manifest_file = folder / _MANIFEST
    parts = folder / _PARTS
    if manifest_file.exists():
        if not (resume or joining):
            done = len(list(parts.glob("part-*.parquet")))
            raise FileExistsError(
                f"{folder} holds an unfinished run ({done} shard(s) done): pass --resume (resume=True) "
                "to continue it, or delete the folder to start over"
            )
        try:
            earlier = json.loads(manifest_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{manifest_file}: not valid JSON (line {error.lineno}: {error.msg}); delete {folder} to start over"
            ) from None
        if not isinstance(earlier, dict):
            raise ValueError(f"{manifest_file}: not a sciembed manifest; delete {folder} to start over")
        differing = sorted(key for key in manifest if key not in _INFORMATIONAL and earlier.get(key) != manifest[key])
        if differing:
            models = ""
            if "encoder_fingerprint" in differing:
                models = (
                    f"; it was embedding with {earlier.get('model')} (revision {earlier.get('revision')}), this run "
                    f"with {manifest['model']} (revision {manifest['revision']})"
                )
            raise ValueError(
                f"cannot resume {folder}: the unfinished run differs in {', '.join(differing)} "
                f"(other papers, model weights or settings){models}; resume with the model it was started with, or "
                "delete the folder to start over"
            )
        if parts.is_dir():
            _check_parts(parts, math.ceil(manifest["papers"] / manifest["shard_size"]))
        return
    if parts.exists() and any(parts.iterdir()):
        raise ValueError(f"{folder} has no {_MANIFEST}; it was not written by sciembed embed: delete it to start over")
    if resume:
        logger.info("nothing to resume at %s; starting from the first shard", folder)
    parts.mkdir(parents=True, exist_ok=True)
    with atomic_path(manifest_file) as temporary:
        temporary.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
