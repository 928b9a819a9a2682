"""``PaperIndex``: a saved, memory-mapped index of paper embeddings, searched by vectors, text, papers or ids.

Example::

    >>> from sciembed import PaperIndex
    >>> index = PaperIndex.build("vectors.npy", "papers.index", kind="binary")   # sciembed embed's output
    >>> index = PaperIndex.load("papers.index")
    >>> index.search("graph neural networks for citation recommendation", top_k=5).ids
    >>> index.search(ids=["p1", "p7"]).to_records()       # papers of the index: each left out of its own results
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.knn import unit_rows
from ..io import NpyRowWriter, ReleasedRows, replace_folder
from .blocks import EmbeddingSource, open_embeddings
from .build import (
    INDEX_FILE,
    MEAN_FILE,
    RANGES_FILE,
    STORE_FILE,
    add_codes,
    build_index,
    check_added_model,
    link_files,
    needs_store,
    staging_folder,
    write_index_file,
)
from .codes import IndexCodes, clipped_share
from .ids import FILES as ID_FILES
from .ids import IdTable, IdTableWriter
from .manifest import MANIFEST_FILE, Manifest
from .model import ModelStamp, stamped_encoder
from .settings import IndexKind, IndexSettings

if TYPE_CHECKING:
    from ..encode import Encoder

logger = logging.getLogger(__name__)

#: Ids named in full in an error before the list is cut short.
_SHOWN = 10


def _named(values: Sequence[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:_SHOWN])
    return shown + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")


@dataclass
class SearchResult:
    """Each query's nearest papers of an index, as arrays.

    Attributes:
        queries: what each query was (its paper id, its text, or ``vector N``).
        rows: ``(queries, top_k)`` index rows, best first. -1 where fewer papers were found.
        scores: their cosine similarities (float64), ``-inf`` where no paper was found.
        table: the index's id table.
    """

    queries: list[str]
    rows: np.ndarray
    scores: np.ndarray
    table: IdTable

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def ids(self) -> list[list[str]]:
        """The paper ids found for each query, best first."""
        return [self.table.ids_of(row[row >= 0]) for row in self.rows]

    def to_records(self) -> list[dict[str, Any]]:
        """One record per query: ``{"query", "neighbours": [{"rank", "paper_id", "score"}, ...]}``."""
        records = []
        for query, rows, scores in zip(self.queries, self.rows, self.scores, strict=True):
            found = rows >= 0
            neighbours = [
                {"rank": rank, "paper_id": paper_id, "score": float(score)}
                for rank, (paper_id, score) in enumerate(
                    zip(self.table.ids_of(rows[found]), scores[found].tolist(), strict=True), start=1
                )
            ]
            records.append({"query": query, "neighbours": neighbours})
        return records

    def format(self, width: int = 80) -> str:
        """The results as text: each query, then ``rank. score [paper id]`` lines."""
        lines = []
        for record in self.to_records():
            query = " ".join(record["query"].split())
            lines.append(query if len(query) <= width else query[: width - 1] + "…")
            lines += [f"  {n['rank']:>2}. {n['score']:.4f} [{n['paper_id']}]" for n in record["neighbours"]]
        return "\n".join(lines)


@dataclass(frozen=True)
class AddReport:
    """What :meth:`PaperIndex.add` did.

    Attributes:
        added: papers appended.
        papers: papers in the index now.
        clipped_share: the share of the added vectors' components outside the calibrated int8 ranges (``None`` for
            an exact index, which has none).
    """

    added: int
    papers: int
    clipped_share: float | None


class PaperIndex:
    """A paper index folder, opened for search (:meth:`load`) or written (:meth:`build`).

    Args:
        folder: the index folder (the first part's, for shards).
        manifest: its checked manifest.
        codes: its searchable codes.
        table: its id table.
        parts: the opened parts, when the index is several parts served as shards.
    """

    def __init__(
        self, folder: Path, manifest: Manifest, codes: IndexCodes, table: IdTable, parts: Sequence[PaperIndex] = ()
    ):
        self.folder = folder
        self.manifest = manifest
        self.codes = codes
        self.table = table
        self.parts = list(parts)
        self._encoder: Encoder | None = None

    # Building and opening -------------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        embeddings: str | os.PathLike[str],
        output: str | os.PathLike[str],
        *,
        kind: IndexKind | str | None = None,
        seed: int | None = None,
        target_recall: float | None = None,
        settings: IndexSettings | None = None,
        model: str | Encoder | None = None,
        overwrite: bool = False,
        trained_like: PaperIndex | str | os.PathLike[str] | None = None,
        rows: tuple[int, int] | None = None,
    ) -> PaperIndex:
        """Build, tune, write and open the index of a ``sciembed embed`` output, block by block.

        Args:
            embeddings: ``.npy`` (+ its ids file), ``.jsonl``, ``.parquet``, or a folder of Parquet parts.
            output: the index folder, written atomically.
            kind: ``exact``, ``int8``, ``binary``, ``pq``, or ``auto`` (the most exact that fits the memory budget).
                Given, it replaces the kind of ``settings``.
            seed: seeds the samples, k-means and tuning queries. Given, it replaces the seed of ``settings``.
            target_recall: recall@10 against exact search that the probes and multiplier are tuned to reach. Given,
                it replaces that of ``settings``.
            settings: the memory budget, sizes and other build settings (default :class:`IndexSettings`).
            model: the model that embedded the vectors, when the output carries no stamp: a name or an encoder.
            overwrite: replace an index at ``output``.
            trained_like: an index (or its folder) whose kind, ranges, mean and quantizers are reused, so that parts
                of one collection share their codes. ``kind`` and the training settings are then unused.
            rows: index only the rows ``start .. stop`` (counted from 0) of ``embeddings``, a part of a collection.
        """
        given = {"kind": kind, "seed": seed, "target_recall": target_recall}
        settings = dataclasses.replace(
            settings or IndexSettings(), **{name: value for name, value in given.items() if value is not None}
        )
        like = trained_like.folder if isinstance(trained_like, PaperIndex) else trained_like
        built = build_index(
            embeddings, output, settings, model=model, overwrite=overwrite, trained_like=like, rows=rows
        )
        return cls.load(built)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, mmap: bool = True) -> PaperIndex:
        """Open an index folder: the manifest checked (version, files, sizes), the codes and stores memory-mapped.

        Args:
            folder: the index folder.
            mmap: map the faiss codes and the numpy stores rather than read them into memory (the int8 store's
                rows are then read with plain file reads).

        Raises:
            FileNotFoundError: no index there, or a file missing.
            ValueError: another format version, or a file of another size than the manifest's.
        """
        import faiss

        folder = Path(folder)
        manifest = Manifest.read(folder)
        ivf = manifest.ivf
        path = str(folder / INDEX_FILE)
        if manifest.kind == IndexKind.BINARY:
            index = faiss.read_index_binary(path, faiss.IO_FLAG_MMAP_IFC if mmap else 0)
        else:
            flag = (faiss.IO_FLAG_MMAP if ivf else faiss.IO_FLAG_MMAP_IFC) if mmap else 0
            index = faiss.read_index(path, flag)
        mode = "r" if mmap else None

        def optional(name: str) -> np.ndarray | None:
            return np.load(folder / name, mmap_mode=mode) if (folder / name).is_file() else None

        store = optional(STORE_FILE)
        codes = IndexCodes(
            manifest.kind,
            index,
            store=ReleasedRows(store) if mmap and store is not None else store,
            ranges=np.load(folder / RANGES_FILE) if (folder / RANGES_FILE).is_file() else None,
            mean=np.load(folder / MEAN_FILE) if (folder / MEAN_FILE).is_file() else None,
            ivf=ivf,
        )
        return cls(folder, manifest, codes, IdTable(folder, mmap=mmap))

    @classmethod
    def load_shards(cls, folders: Sequence[str | os.PathLike[str]], *, mmap: bool = True) -> PaperIndex:
        """Open index parts built with one training (``trained_like``) as one index, without merging them.

        Each part gives its candidates. The nearest over all parts are rescored together, so the results are those
        of the merged index (:meth:`merge`). The first part's multiplier and probes are used.

        Args:
            folders: the part folders, in the order of their papers.
            mmap: map the parts' codes and stores rather than read them into memory.

        Raises:
            ValueError: fewer than two parts, parts of another kind, dimension, model or training, or a paper in
                two parts (named).
        """
        from .shards import check_parts, stack_parts

        folders = [Path(folder) for folder in folders]
        manifests = [Manifest.read(folder) for folder in folders]
        check_parts(folders, manifests)
        parts = [cls.load(folder, mmap=mmap) for folder in folders]
        codes, table, manifest = stack_parts(parts, manifests)
        return cls(folders[0], manifest, codes, table, parts)

    @classmethod
    def merge(
        cls, parts: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, overwrite: bool = False
    ) -> PaperIndex:
        """Merge index parts built with one training (``trained_like``) into one index, and open it.

        The merged index keeps the first part's tuned multiplier and probes.

        Args:
            parts: the part folders, in the order of their papers.
            output: the merged index folder, written atomically.
            overwrite: replace an index at ``output``.
        """
        from .merge import merge_indexes

        return cls.load(merge_indexes(parts, output, overwrite=overwrite))

    def check(self) -> None:
        """Verify the sha256 of every file of the folder against its manifest.

        A sharded index checks every part.

        Raises:
            ValueError: naming the first file whose bytes changed.
        """
        for part in self.parts or [self]:
            part.manifest.verify(part.folder)

    # What it is -----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.manifest.papers

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        return self.manifest.dim

    @property
    def kind(self) -> IndexKind:
        """``exact``, ``int8``, ``binary`` or ``pq``."""
        return self.manifest.kind

    @property
    def model(self) -> ModelStamp | None:
        """The model that embedded the papers, when known."""
        return ModelStamp.from_dict(self.manifest.model) if self.manifest.model else None

    def info(self) -> dict[str, Any]:
        """What the index is and how it was tuned, as a dict.

        It gives the kind, papers, dimension, bytes per paper, the tuned settings, recall and its bound, the model and
        the parts.
        """
        m = self.manifest
        model = self.model
        return {
            "folder": str(self.folder),
            "kind": m.kind,
            "factory": m.factory,
            "papers": m.papers,
            "dim": m.dim,
            "ram_bytes_per_paper": m.bytes_per_paper()[0],
            "disk_bytes_per_paper": m.bytes_per_paper()[1],
            "multiplier": m.multiplier,
            "nprobe": m.nprobe,
            "recall_at_10": m.recall,
            "recall_at_10_lower_bound": m.recall_lower_bound,
            "confidence": m.confidence,
            "tuning_queries": m.tuning_queries,
            "target_recall": m.target_recall,
            "recall_bounded": m.recall_bounded,
            "tuned_papers": m.tuned_papers,
            "model": model.name if model else None,
            "revision": model.revision if model else None,
            "fingerprinted": bool(model and model.probe is not None),
            "disk_bytes": sum(
                entry["bytes"] for part in self.parts or [self] for entry in part.manifest.files.values()
            ),
            "parts": [str(part.folder) for part in self.parts] or None,
        }

    # Search ---------------------------------------------------------------------------------------------------

    def search(
        self,
        queries: Any = None,
        top_k: int = 10,
        *,
        ids: Sequence[str] | None = None,
        encoder: Encoder | None = None,
        multiplier: int | None = None,
        nprobe: int | None = None,
    ) -> SearchResult:
        """The ``top_k`` papers nearest each query, by cosine, scores rescored in float64, best first.

        Args:
            queries: query vectors (an array ``(q, dim)`` or one ``(dim,)``), free text (a string or a list of
                strings, embedded with the index's model as queries), or new papers (a record or a list of records,
                embedded as the indexed papers were). Leave unset with ``ids``.
            top_k: results per query.
            ids: paper ids of indexed papers to search by. Each is left out of its own results.
            encoder: the model for text and papers (default: the index's own, loaded by name and revision). Its
                fingerprint must match the index's.
            multiplier, nprobe: override the tuned rescore multiplier and IVF probes.

        Raises:
            ValueError: no query, both ``queries`` and ``ids``, ids not in the index (named), vectors of another
                dimension, text for an index without a model, or an encoder that is not the index's model.
            TypeError: queries of a kind not taken.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be positive, got {top_k}")
        for name, value in (("multiplier", multiplier), ("nprobe", nprobe)):
            if value is not None and value < 1:
                raise ValueError(f"{name} (--{name}) must be positive, got {value}; leave it out for the tuned one")
        vectors, labels, exclude = self._queries(queries, ids, encoder)
        top_k = min(top_k, len(self) - int((exclude >= 0).any()))
        rows, scores = self.codes.search(
            vectors,
            top_k,
            exclude,
            multiplier=multiplier or self.manifest.multiplier,
            nprobe=nprobe or self.manifest.nprobe,
        )
        return SearchResult(labels, rows, scores, self.table)

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The unit vectors the index holds for indexed papers (decoded from their codes).

        Raises:
            ValueError: ids not in the index, named.
        """
        rows = self._rows(ids)
        return unit_rows(self.codes.vectors(rows)).astype(np.float32)

    def _rows(self, ids: Sequence[str]) -> np.ndarray:
        if isinstance(ids, str):
            ids = [ids]
        rows = self.table.rows_of(list(ids))
        unknown = [paper_id for paper_id, row in zip(ids, rows, strict=True) if row < 0]
        if unknown:
            raise ValueError(
                f"{len(unknown)} id(s) not among the {len(self)} papers of {self.folder}: {_named(unknown)}"
            )
        return rows

    def _queries(self, queries: Any, ids: Sequence[str] | None, encoder: Encoder | None):
        """The unit query vectors, a label per query and the row each leaves out.

        The row is -1 for a query that leaves none out.
        """
        if (queries is None) == (ids is None):
            raise ValueError(
                "give the queries (vectors, text or paper records) or ids= (papers of the index), one of the two"
            )
        if ids is not None:
            ids = [ids] if isinstance(ids, str) else [str(i) for i in ids]
            rows = self._rows(ids)
            return unit_rows(self.codes.vectors(rows)).astype(np.float32), ids, rows
        if isinstance(queries, str) or (
            isinstance(queries, (list, tuple)) and queries and all(isinstance(q, str) for q in queries)
        ):
            texts = [queries] if isinstance(queries, str) else list(queries)
            vectors = self._query_encoder(encoder).encode_query(texts, show_progress_bar=False)
            return self._checked(vectors, "the model's"), texts, np.full(len(texts), -1, dtype=np.int64)
        if isinstance(queries, Mapping) or (
            isinstance(queries, (list, tuple)) and queries and all(isinstance(q, Mapping) for q in queries)
        ):
            records = [queries] if isinstance(queries, Mapping) else list(queries)
            vectors = self._query_encoder(encoder).encode(records, show_progress_bar=False)
            labels = [str(r.get("paper_id") or r.get("title") or f"paper {i}") for i, r in enumerate(records)]
            own = self.table.rows_of([str(r["paper_id"]) if "paper_id" in r else "" for r in records])
            return self._checked(vectors, "the model's"), labels, own
        if isinstance(queries, (list, tuple)) and queries and any(isinstance(q, (str, Mapping)) for q in queries):
            raise TypeError("queries mix texts, paper records and numbers; give one kind per search")
        try:
            array = np.asarray(queries, dtype=np.float32)
        except (TypeError, ValueError):
            raise TypeError(
                f"queries must be vectors, text or paper records (ids go in ids=), got {type(queries).__name__}"
            ) from None
        array = array[None, :] if array.ndim == 1 else array
        return self._checked(array, "query"), [f"vector {i}" for i in range(len(array))], np.full(len(array), -1)

    def _checked(self, vectors: Any, what: str) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or not len(vectors):
            raise ValueError(
                f"{what} vectors have shape {vectors.shape}; {self.folder} holds vectors of size {self.dim}"
            )
        if not np.isfinite(vectors).all() or not vectors.any(axis=1).all():
            raise ValueError(f"{what} vectors hold NaN, infinity or all zeros; a query needs a direction")
        return unit_rows(vectors)

    def _query_encoder(self, encoder: Encoder | None) -> Encoder:
        """The encoder for text and paper queries, checked against the index's model fingerprint."""
        stamp = self.model
        if stamp is None:
            raise ValueError(
                f"{self.folder} does not know the model that embedded its papers, so it takes query vectors and ids "
                "(ids=), not text or papers; build it again with --model NAME (model=), or embed the queries yourself"
            )
        if encoder is not None:
            return stamped_encoder(stamp, encoder, str(self.folder))
        if self._encoder is None:
            self._encoder = stamped_encoder(stamp, None, str(self.folder))
        return self._encoder

    # Adding ---------------------------------------------------------------------------------------------------

    def add(self, embeddings: str | os.PathLike[str]) -> AddReport:
        """Append the papers of another embedding output. The folder is replaced atomically.

        Flat kinds append codes as a rebuild would. IVF kinds assign them to the trained cells. The tuned
        multiplier and probes are kept (:attr:`Manifest.tuned_papers` says at what size they were tuned). The new
        version of the folder is written beside it: the files that change are written there, the others linked, and
        the two folders are swapped in one step, so a failure leaves the old index as it was.

        Args:
            embeddings: a ``sciembed embed`` output of the new papers.

        Raises:
            ValueError: ids already indexed or given twice (named), vectors of another dimension or model, or bad
                vectors (named). All before any code is added.
        """
        if self.parts:
            raise ValueError(
                f"{self.folder} and the other parts are open as shards: add the papers to one part "
                "(PaperIndex.load(part).add(...)), then open the shards again"
            )
        source = open_embeddings(embeddings)
        if source.dim != self.dim:
            raise ValueError(
                f"{source.path}: vectors of size {source.dim}, {self.folder} holds size {self.dim}: add vectors of "
                "the model that embedded the index"
            )
        check_added_model(source, self.model, self.folder)
        old = self.manifest.papers
        staging = staging_folder(self.folder)
        try:
            self._write_added_ids(source, staging)
            share = self._write_added_codes(source, staging)
            link_files(self.folder, staging, skip={INDEX_FILE, STORE_FILE, MANIFEST_FILE, *ID_FILES})
            dataclasses.replace(self.manifest, papers=old + source.count).write(staging)
            replace_folder(staging, self.folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        reopened = PaperIndex.load(self.folder)
        self.manifest, self.codes, self.table = reopened.manifest, reopened.codes, reopened.table
        if share:
            logger.warning(
                "%.4f of the added vectors' components lie outside the calibrated int8 ranges and were clipped", share
            )
        return AddReport(source.count, len(self), share)

    def _write_added_ids(self, source: EmbeddingSource, staging: Path) -> None:
        """Write the id table of the index and the new papers into ``staging``.

        Ids already indexed are refused.
        """
        table = IdTableWriter(staging, len(self.table) + source.count)
        table.extend(self.table)
        present: list[str] = []
        for ids, _ in source.blocks():  # the vectors are checked here, before any code is added
            present += [paper_id for paper_id, row in zip(ids, self.table.rows_of(ids), strict=True) if row >= 0]
            table.append(ids)
        if present:
            raise ValueError(
                f"{source.path}: {len(present)} paper(s) are already in {self.folder}: {_named(present)}; leave them "
                "out of the papers to add (an index holds each paper once)"
            )
        table.finish(str(source.path))

    def _write_added_codes(self, source: EmbeddingSource, staging: Path) -> float | None:
        """Write the faiss index and the store with the new papers' codes into ``staging``. The share clipped."""
        import faiss

        old = self.manifest.papers
        read = faiss.read_index_binary if self.kind == IndexKind.BINARY else faiss.read_index
        codes = IndexCodes(
            self.kind,
            read(str(self.folder / INDEX_FILE)),
            ranges=self.codes.ranges,
            mean=self.codes.mean,
            ivf=self.codes.ivf,
        )
        store = None
        if needs_store(codes):
            store = NpyRowWriter(staging / STORE_FILE, np.int8, (old + source.count, self.manifest.dim))
            store.copy_from(self.folder / STORE_FILE)
        outside = components = 0
        with store or contextlib.nullcontext():
            for _, vectors in source.blocks():
                add_codes(codes, vectors, store)
                if codes.ranges is not None:
                    outside += clipped_share(vectors, codes.ranges) * vectors.size
                    components += vectors.size
        write_index_file(staging, codes)
        return outside / components if components else None
