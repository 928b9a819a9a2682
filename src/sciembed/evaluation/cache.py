"""Vectors of texts, cached on disk per encoder.

Every task and every later run reuses them.

An encoder's :meth:`~sciembed.encode.Encoder.fingerprint` (weights, config, pooling, maximum
length, format, ...) names a folder. Inside it each cached vector is keyed by the SHA-1 of the exact
text the model read (title + separator + abstract, a query, ...), so the same paper under two ids, or
two benchmarks sharing papers, embed once, and a changed text never returns a stale vector. Vectors are
stored and returned as float32, never at lower precision. New vectors are appended as a shard (``.npy``
plus a ``.json`` of its text keys and the ``.npy``'s SHA-256, written last, atomically), so an interrupted
run leaves either a whole shard or none. The cache streams: opening it reads the key files only, vectors
are read from the memory-mapped shards by key when asked for, and many small shards are compacted into
one. A shard whose vectors no longer match their hash, whose width is not the encoder's, or whose key file
does not parse is dropped with a warning naming it, and its texts are embedded again: a damaged cache
costs time, never scores. ``sciembed embed`` (:func:`~sciembed.jobs.embed.embed_to_file`) fills and reads the same
cache, so a collection embedded once is not embedded again to be evaluated, nor the other way round.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..encode import Encoder
from ..io import NpyRowWriter, atomic_path, file_sha256

logger = logging.getLogger(__name__)


def text_key(text: str) -> str:
    """The cache key of one model input text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


#: More shards than this in a cache folder are compacted into one when the cache is opened.
COMPACT_AT = 32


class EmbeddingCache:
    """Vectors of one encoder, on disk or in memory, read by key when asked for.

    Opening a cache reads only its key files, into one sorted index (40 bytes of key, a shard and a row per
    vector). The vectors stay in their ``.npy`` shards, memory-mapped and read by row when looked up. A
    shard's hash is checked the first time one of its vectors is needed. A folder with more than
    :data:`COMPACT_AT` shards is compacted into one shard when it is opened.

    Args:
        encoder: the encoder whose vectors are cached. Its fingerprint names the sub-folder.
        folder: the cache root (see :func:`sciembed.io.default_cache_dir`). ``None`` keeps vectors in memory only.
        compact: compact many shards into one when opened. Off for processes that open one cache at the same time
            with nothing to order them (tasks of an embed job without a process group).
    """

    def __init__(self, encoder: Encoder, folder: str | os.PathLike[str] | None, *, compact: bool = True):
        self.encoder = encoder
        self.fingerprint = encoder.fingerprint()
        self.folder = Path(folder) / self.fingerprint[:32] if folder is not None else None
        self.hits = 0
        self.encoded = 0
        # Shard i: its vectors (a memory-mapped or in-memory array, None until first read), its .npy path
        # (None in memory), the hash its key file recorded (None for a legacy key file), whether it was checked.
        self._arrays: list[np.ndarray | None] = []
        self._paths: list[Path | None] = []
        self._hashes: list[str | None] = []
        self._checked: list[bool] = []
        self._keys = np.zeros(0, dtype="S40")  # sorted; _shard[i], _row[i] locate _keys[i]
        self._shard = np.zeros(0, dtype=np.int32)
        self._row = np.zeros(0, dtype=np.int64)
        self._shape: tuple[int, ...] | None = None
        if self.folder is not None and self.folder.is_dir():
            self._open(compact)

    def __len__(self) -> int:
        return len(self._keys)

    def _open(self, compact: bool) -> None:
        key_files = sorted(self.folder.glob("shard-*.json"))
        if key_files:
            self._shape = (self.encoder.get_embedding_dimension(),)
        found: list[tuple[int, list[str]]] = []
        for keys_path in key_files:
            keys, sha256, problem = self._read_shard(keys_path)
            if problem:
                self._drop(keys_path.with_suffix(".npy"), problem)
                continue
            found.append((self._add_shard(keys_path.with_suffix(".npy"), None, sha256, checked=False), keys))
        self._index(found)
        if compact and len(self._paths) > COMPACT_AT:
            self._compact()
        logger.info("embedding cache %s: %d vectors in %d shard(s)", self.folder, len(self._keys), len(self._paths))

    def _read_shard(self, keys_path: Path) -> tuple[list[str], str | None, str | None]:
        """A shard's keys and its vectors' recorded hash, or what is wrong with it.

        The hash is None in a legacy key file. Only the checks that need no pass over the vectors are made."""
        try:
            stored = json.loads(keys_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return [], None, f"its key file {keys_path.name} does not parse: {error}"
        keys = stored.get("keys") if isinstance(stored, dict) else stored
        if not isinstance(keys, list):
            return [], None, f"its key file {keys_path.name} holds no key list"
        try:
            vectors = np.load(keys_path.with_suffix(".npy"), mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:
            return [], None, f"unreadable: {error}"
        if vectors.dtype != np.float32 or vectors.shape != (len(keys), *self._shape):
            expected = f"({len(keys)}, {', '.join(map(str, self._shape))}) float32"
            return [], None, f"{vectors.dtype} vectors of shape {vectors.shape}, expected {expected}"
        return keys, stored.get("npy_sha256") if isinstance(stored, dict) else None, None

    def _add_shard(self, path: Path | None, array: np.ndarray | None, sha256: str | None, *, checked: bool) -> int:
        # Vectors this cache stores come from the encoder, which checks them; shards found on disk are checked once.
        self._paths.append(path)
        self._arrays.append(array)
        self._hashes.append(sha256)
        self._checked.append(checked)
        return len(self._paths) - 1

    def _index(self, shards: list[tuple[int, list[str]]]) -> None:
        """Add the keys of ``shards`` (shard number, keys in row order) to the sorted index."""
        if not shards:
            return
        keys = np.concatenate([self._keys, *(np.array(k, dtype="S40") for _, k in shards)])
        shard = np.concatenate([self._shard, *(np.full(len(k), i, dtype=np.int32) for i, k in shards)])
        row = np.concatenate([self._row, *(np.arange(len(k), dtype=np.int64) for _, k in shards)])
        order = np.argsort(keys, kind="stable")
        self._keys, self._shard, self._row = keys[order], shard[order], row[order]

    def _locate(self, keys: np.ndarray) -> np.ndarray:
        """Index position of each key, -1 where it is not cached."""
        position = np.searchsorted(self._keys, keys)
        position[position == len(self._keys)] = 0
        found = self._keys[position] == keys if len(self._keys) else np.zeros(len(keys), dtype=bool)
        return np.where(found, position, -1)

    def _check_shards(self, keys: np.ndarray) -> None:
        """Check every unchecked shard holding one of ``keys``, and drop those that fail.

        A check compares the shard's hash, where recorded, and that its vectors are finite. A cache written before
        sciembed checked them may hold NaN."""
        position = self._locate(keys)
        for shard in np.unique(self._shard[position[position >= 0]]).tolist():
            if self._checked[shard]:
                continue
            self._checked[shard] = True
            path, expected = self._paths[shard], self._hashes[shard]
            if expected is not None and file_sha256(path) != expected:
                problem = "its vectors do not match the hash written with them"
            elif not np.isfinite(self._array(shard)).all():
                problem = "it holds NaN or infinity"
            else:
                continue
            self._arrays[shard] = None
            self._drop(path, problem)
            keep = self._shard != shard
            self._keys, self._shard, self._row = self._keys[keep], self._shard[keep], self._row[keep]

    def _drop(self, vectors_path: Path, problem: str) -> None:
        logger.warning("embedding cache: dropping %s (%s); its texts will be embedded again", vectors_path, problem)
        vectors_path.with_suffix(".json").unlink(missing_ok=True)
        vectors_path.unlink(missing_ok=True)

    def add(
        self,
        texts: Sequence[str],
        *,
        inputs: Sequence[Any] | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool = True,
        desc: str = "Encoding",
    ) -> None:
        """Encode (and cache) those of ``texts`` not cached yet. ``inputs``, when given, are what the encoder reads in
        place of each text (the paper records whose model texts they are)."""
        keys = np.array([text_key(t) for t in texts], dtype="S40")
        self._check_shards(keys)
        missing = self._locate(keys) < 0
        todo: dict[str, Any] = {}
        for index, (text, absent) in enumerate(zip(texts, missing)):
            if absent and text not in todo:
                todo[text] = text if inputs is None else inputs[index]
        self.hits += len(np.unique(keys[~missing]))
        if todo:
            vectors = self.encoder.encode(
                list(todo.values()), batch_size=batch_size, show_progress_bar=show_progress_bar, progress_desc=desc
            )
            self._store([text_key(t) for t in todo], vectors)
            self.encoded += len(todo)

    def embed(
        self,
        texts: Sequence[str],
        *,
        inputs: Sequence[Any] | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool = True,
        desc: str = "Encoding",
    ) -> np.ndarray:
        """Vectors of ``texts`` in order, encoding and caching only those not cached yet.

        ``inputs`` is as for :meth:`add`.
        """
        self.add(texts, inputs=inputs, batch_size=batch_size, show_progress_bar=show_progress_bar, desc=desc)
        return self.lookup(texts)

    def lookup(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` already embedded (KeyError naming the first text that is not)."""
        if not texts:
            return np.zeros((0,), np.float32)
        keys = np.array([text_key(t) for t in texts], dtype="S40")
        self._check_shards(keys)
        position = self._locate(keys)
        if (position < 0).any():
            raise KeyError(f"not embedded yet: {texts[int(np.argmax(position < 0))][:80]!r}")
        shard, row = self._shard[position], self._row[position]
        result = np.empty((len(texts), *self._shape), dtype=np.float32)
        for number in np.unique(shard).tolist():
            at = np.flatnonzero(shard == number)
            result[at] = self._array(number)[row[at]]
        return result

    def _array(self, shard: int) -> np.ndarray:
        if self._arrays[shard] is None:
            self._arrays[shard] = np.load(self._paths[shard], mmap_mode="r", allow_pickle=False)
        return self._arrays[shard]

    def _store(self, keys: list[str], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._shape = vectors.shape[1:]
        if self.folder is None:
            self._index([(self._add_shard(None, vectors, None, checked=True), keys)])
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        manifest = self.folder / "manifest.json"
        if not manifest.exists():
            with atomic_path(manifest) as temporary:
                temporary.write_text(
                    json.dumps({"model": self.encoder.name_or_path, "fingerprint": self.fingerprint}, indent=1),
                    encoding="utf-8",
                )
        path = self._write_shard(keys, [vectors])
        self._index([(self._add_shard(path, None, None, checked=True), keys)])

    def _write_shard(self, keys: list[str], parts: Sequence[np.ndarray]) -> Path:
        """A new shard of ``keys`` with the rows of ``parts`` in order. The key list is written last, so a
        shard without it is ignored and a crash never half-loads."""
        stem = self.folder / f"shard-{uuid.uuid4().hex}"
        with (
            atomic_path(stem.with_suffix(".npy")) as temporary,
            NpyRowWriter(temporary, np.float32, (len(keys), *self._shape), hashed=True) as array,
        ):
            for part in parts:
                array.write(part)
        with atomic_path(stem.with_suffix(".json")) as temporary:
            temporary.write_text(json.dumps({"keys": keys, "npy_sha256": array.sha256()}), encoding="utf-8")
        return stem.with_suffix(".npy")

    def _compact(self) -> None:
        """Rewrite every shard as one, then remove the old ones.

        Each shard's hash is checked on the way.
        """
        self._check_shards(self._keys)
        old = [path for path in self._paths if path is not None and path.exists()]
        order = np.lexsort((self._row, self._shard))  # each shard's rows in order, shard after shard
        keys = [key.decode() for key in self._keys[order]]
        shard, row = self._shard[order], self._row[order]
        parts = (self._array(i)[row[shard == i]] for i in np.unique(shard).tolist())
        path = self._write_shard(keys, parts)
        for stale in old:
            stale.with_suffix(".json").unlink(missing_ok=True)
            stale.unlink(missing_ok=True)
        logger.info("embedding cache %s: compacted %d shards into %s", self.folder, len(old), path.name)
        self._arrays, self._paths, self._hashes, self._checked = [], [], [], []
        self._keys, self._shard, self._row = (
            np.zeros(0, dtype="S40"),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.int64),
        )
        self._index([(self._add_shard(path, None, None, checked=True), keys)])


def caches_by_text(encoder: Encoder) -> bool:
    """Whether ``encoder`` embeds a paper record as it embeds the record's model text.

    Then its vectors of papers may be cached under their texts. This holds for all encoders but one that reads long
    papers window by window, whose windows start with the title."""
    from ..encoders import WindowedEncoder

    return not (isinstance(encoder, WindowedEncoder) and encoder.settings.windows)
