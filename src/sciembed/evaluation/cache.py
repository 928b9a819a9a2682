"""Vectors of texts, cached on disk per encoder so that every task and every later run reuses them.

An encoder's :meth:`~sciembed.encode.Encoder.fingerprint` (weights, config, pooling, maximum
length, format, ...) names a folder; inside it each cached vector is keyed by the SHA-1 of the exact
text the model read (title + separator + abstract, a query, ...), so the same paper under two ids, or
two benchmarks sharing papers, embed once, and a changed text never returns a stale vector. Vectors are
stored and returned as float32, never at lower precision. New vectors are appended as a shard (``.npy``
plus a ``.json`` of its text keys and the ``.npy``'s SHA-256, written last, atomically), so an interrupted
run leaves either a whole shard or none. A shard whose vectors no longer match their hash, whose width is
not the encoder's, or whose key file does not parse is dropped with a warning naming it, and its texts are
embedded again: a damaged cache costs time, never scores.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..encode import Encoder
from ..io import atomic_path, file_sha256

logger = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$SCIEMBED_CACHE`` or ``$HF_HOME/sciembed/embeddings`` (``~/.cache/huggingface/...``)."""
    if os.environ.get("SCIEMBED_CACHE"):
        return Path(os.environ["SCIEMBED_CACHE"]).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "sciembed" / "embeddings"


def text_key(text: str) -> str:
    """The cache key of one model input text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors of one encoder, in memory and (unless ``folder`` is ``None``) on disk.

    Args:
        encoder: the encoder whose vectors are cached; its fingerprint names the sub-folder.
        folder: the cache root (see :func:`default_cache_dir`); ``None`` keeps vectors in memory only.
    """

    def __init__(self, encoder: Encoder, folder: str | os.PathLike[str] | None):
        self.encoder = encoder
        self.fingerprint = encoder.fingerprint()
        self.folder = Path(folder) / self.fingerprint[:32] if folder is not None else None
        self._vectors: dict[str, np.ndarray] = {}
        self.hits = 0
        self.encoded = 0
        if self.folder is not None and self.folder.is_dir():
            self._load()

    def _load(self) -> None:
        shards = sorted(self.folder.glob("shard-*.json"))
        # The width the encoder gives, from one short text, to check every shard against.
        shape = self.encoder.encode(["width"], show_progress_bar=False).shape[1:] if shards else None
        for keys_path in shards:
            problem = self._load_shard(keys_path, shape)
            if problem:
                logger.warning("embedding cache: dropping %s (%s); its texts will be embedded again", keys_path.with_suffix(".npy"), problem)
                keys_path.unlink(missing_ok=True)
                keys_path.with_suffix(".npy").unlink(missing_ok=True)
        logger.info("embedding cache %s: %d vectors", self.folder, len(self._vectors))

    def _load_shard(self, keys_path: Path, shape: tuple[int, ...]) -> str | None:
        """Load one shard; returns what is wrong with it instead, if anything."""
        vectors_path = keys_path.with_suffix(".npy")
        try:
            stored = json.loads(keys_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return f"its key file {keys_path.name} does not parse: {error}"
        keys = stored.get("keys") if isinstance(stored, dict) else stored
        if not isinstance(keys, list):
            return f"its key file {keys_path.name} holds no key list"
        if isinstance(stored, dict) and stored.get("npy_sha256") != file_sha256(vectors_path):
            return "its vectors do not match the hash written with them"
        try:
            vectors = np.load(vectors_path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:
            return f"unreadable: {error}"
        if vectors.dtype != np.float32 or vectors.shape != (len(keys), *shape):
            return f"{vectors.dtype} vectors of shape {vectors.shape}, expected ({len(keys)}, {', '.join(map(str, shape))}) float32"
        self._vectors.update(zip(keys, vectors))
        return None

    def embed(self, texts: Sequence[str], *, batch_size: int = 32, show_progress_bar: bool = True, desc: str = "Encoding") -> np.ndarray:
        """Vectors of ``texts`` in order, encoding (and caching) only those not cached yet."""
        keys = [text_key(t) for t in texts]
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._vectors:
                todo.setdefault(key, text)
        self.hits += len(set(keys)) - len(todo)
        if todo:
            vectors = self.encoder.encode(list(todo.values()), batch_size=batch_size, show_progress_bar=show_progress_bar, progress_desc=desc)
            self._store(list(todo), vectors)
            self.encoded += len(todo)
        return self.lookup(texts)

    def lookup(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` already embedded (KeyError naming the first text that is not)."""
        if not texts:
            return np.zeros((0,), np.float32)
        try:
            return np.stack([self._vectors[text_key(t)] for t in texts])
        except KeyError:
            missing = next(t for t in texts if text_key(t) not in self._vectors)
            raise KeyError(f"not embedded yet: {missing[:80]!r}") from None

    def _store(self, keys: list[str], vectors: np.ndarray) -> None:
        self._vectors.update(zip(keys, vectors))
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        manifest = self.folder / "manifest.json"
        if not manifest.exists():
            with atomic_path(manifest) as temporary:
                temporary.write_text(json.dumps({"model": self.encoder.name_or_path, "fingerprint": self.fingerprint}, indent=1), encoding="utf-8")
        stem = self.folder / f"shard-{uuid.uuid4().hex}"
        with atomic_path(stem.with_suffix(".npy")) as temporary:
            with open(temporary, "wb") as handle:
                np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32))
        # The key list is written last: a shard without it is ignored, so a crash never half-loads.
        with atomic_path(stem.with_suffix(".json")) as temporary:
            temporary.write_text(json.dumps({"keys": keys, "npy_sha256": file_sha256(stem.with_suffix(".npy"))}), encoding="utf-8")

