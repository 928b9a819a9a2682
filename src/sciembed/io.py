"""Embedding files: SciDocs-style JSON lines, ``.npy`` + ids, and Parquet, always written atomically.

Every writer fills a temporary file next to the target and renames it into place only when it is
complete, so an interrupted run never leaves a file that looks finished.

- ``.jsonl``: one ``{"paper_id": ..., "embedding": [...]}`` object a line (the format SciDocs reads).
- ``.npy``: a float32 ``(n, dim)`` array, with the ids, in row order, in ``<stem>.ids.json``
  (``{"ids": [...], "rows": n, "npy_sha256": ...}``). The hash ties the ids to the vectors they were written with.
  A crash between the two renames, or a file copied over one of them, is then an error for a reader, not ids paired
  with someone else's vectors. A plain JSON list of ids is read as well.
- ``.parquet``: columns ``paper_id`` (string) and ``embedding`` (fixed-size list of float32).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import io
import json
import mmap
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

EMBEDDING_SUFFIXES = (".jsonl", ".npy", ".parquet")

Chunk = tuple[list[str], np.ndarray]


def default_cache_dir() -> Path:
    """The folder where sciembed caches what it computes once per encoder.

    It holds vectors by the encoder's fingerprint and ONNX exports under ``onnx/``. It is ``$SCIEMBED_CACHE``, else
    ``$HF_HOME/sciembed/embeddings`` (``~/.cache/huggingface/...``).
    """
    if os.environ.get("SCIEMBED_CACHE"):
        return Path(os.environ["SCIEMBED_CACHE"]).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "sciembed" / "embeddings"


class RepeatedKeyError(ValueError):
    """A JSON object that names one key twice.

    JSON keeps the last value, so the first would vanish unseen.
    """

    def __init__(self, key: str, first: Any, last: Any):
        self.key = key
        #: The line of the second occurrence, where the reader finds it (``None``: not found).
        self.line: int | None = None
        super().__init__(
            f"the key {key!r} appears twice in one object ({_shown(first)}, then {_shown(last)}); a reader keeps only "
            "the last value, so the first would vanish: remove or rename one"
        )


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise RepeatedKeyError(key, seen[key], value)
            seen[key] = value
    return record


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that refuses an object naming one key twice (:class:`RepeatedKeyError`, with its line)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RepeatedKeyError as error:
        if isinstance(text, bytes):
            text = text.decode(json.detect_encoding(text), errors="replace")
        error.line = _repeated_key_line(text.removeprefix("\ufeff"), error.key)
        raise


#: What a JSON text's structure turns on: a string's opening quote, brackets and commas.
_JSON_STRUCTURE = re.compile(r'["{}\[\],]')


def _repeated_key_line(text: str, key: str) -> int | None:
    """The line where an object of the JSON ``text`` repeats ``key``, or ``None``."""
    objects: list[set[str] | None] = []  # the keys seen in each open object; None for an open list
    expect_key = False
    found = _JSON_STRUCTURE.search(text)
    while found:
        start, char = found.start(), found.group()
        end = start + 1
        if char == '"':
            value, end = json.decoder.scanstring(text, end)
            if expect_key and objects and objects[-1] is not None:
                if value == key and value in objects[-1]:
                    return text.count("\n", 0, start) + 1
                objects[-1].add(value)
            expect_key = False
        elif char in "{[":
            objects.append(set() if char == "{" else None)
            expect_key = char == "{"
        elif char in "}]":
            if objects:
                objects.pop()
            expect_key = False
        else:
            expect_key = bool(objects) and objects[-1] is not None
        found = _JSON_STRUCTURE.search(text, end)
    return None


def loads_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses a mapping naming one key twice (:class:`RepeatedKeyError`)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        try:
            return _unique_keys(loader.construct_pairs(node, deep=True))
        except RepeatedKeyError as error:
            if error.line is None:
                marks = [key.start_mark.line + 1 for key, _ in node.value if loader.construct_object(key) == error.key]
                error.line = marks[1] if len(marks) > 1 else None
            raise

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506  (a SafeLoader)


def json_place(path: str | os.PathLike[str], error: json.JSONDecodeError | RepeatedKeyError) -> str:
    """``path`` and the line of a whole-file JSON or YAML ``error``, where known, for messages.

    Args:
        path: the file that was read.
        error: what the reader raised.
    """
    line = error.lineno if isinstance(error, json.JSONDecodeError) else error.line
    return f"{path}, line {line}" if line else str(path)


def unknown_key(record: dict[str, Any], known: Sequence[str]) -> str | None:
    """The first key of ``record`` not in ``known``, with the known key closest to it. ``None`` when all are known.

    Args:
        record: a JSON object read from a line.
        known: the keys a line of its file may hold.
    """
    import difflib

    key = next((key for key in record if key not in known), None)
    if key is None:
        return None
    close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    meant = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{meant}; a line holds {', '.join(known)}"


def json_error(error: json.JSONDecodeError | RepeatedKeyError) -> str:
    """What is wrong with a JSON text, for a message naming the file and line."""
    if isinstance(error, json.JSONDecodeError):
        return f"malformed JSON ({error.msg} at column {error.colno})"
    return str(error)


def load_json_file(path: str | os.PathLike[str]) -> Any:
    """The JSON document in ``path``. A malformed one or a repeated key raises ``ValueError`` naming the file."""
    try:
        return loads_json(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, RepeatedKeyError) as error:
        raise ValueError(f"{json_place(path, error)}: {json_error(error)}") from None


#: What helps when the embedding cache cannot be written (``sciembed evaluate``'s switches).
CACHE_REMEDY = (
    "pass --no-cache to keep vectors in memory, or --cache-dir DIR (or $SCIEMBED_CACHE) for a folder that can be "
    "written"
)


def check_cache_dir(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    kind: str = "embedding",
    subfolder: str = "",
    remedy: str = CACHE_REMEDY,
) -> Path:
    """The cache folder (``cache_dir``, else :func:`default_cache_dir`, then ``subfolder``), checked writable before
    any work.

    Args:
        cache_dir: the folder given (``--cache-dir``). ``None`` for the default.
        kind: what is cached there, for the error (``"embedding"``, ``"ONNX export"``).
        subfolder: the cache's folder inside the root (``"onnx"``).
        remedy: what the error says helps.

    Raises:
        OSError: naming the folder, where it came from (``--cache-dir``, ``$SCIEMBED_CACHE`` or ``$HF_HOME``), the
            cause and ``remedy``.
    """
    if cache_dir is not None:
        root, source = Path(cache_dir), "--cache-dir"
    else:
        root, source = default_cache_dir(), "$SCIEMBED_CACHE" if os.environ.get("SCIEMBED_CACHE") else "$HF_HOME"
    folder = root / subfolder if subfolder else root
    problem = _unwritable(folder.absolute() / ".sciembed-cache-check")
    if problem is not None:
        error, _, cause = problem
        raise error(f"the {kind} cache {folder} (from {source}) cannot be written: {cause}; {remedy}")
    return folder


class NonFiniteVectorsError(ValueError):
    """Vectors holding NaN or infinity: never written to a file or scored."""


def check_finite(vectors: np.ndarray, names: Callable[[np.ndarray], list[str]], source: str, remedy: str) -> None:
    """Raise :class:`NonFiniteVectorsError` when ``vectors`` hold a NaN or an infinity (one pass over them).

    The message names ``source`` (a model or a file), how many rows are affected, the first few of them
    (``names`` maps their row numbers to names, called only on failure) and ``remedy``.
    """
    if vectors.size == 0 or np.isfinite(vectors).all():
        return
    bad = np.flatnonzero(~np.isfinite(vectors.reshape(len(vectors), -1)).all(axis=1))
    shown = ", ".join(names(bad[:3]))
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    raise NonFiniteVectorsError(
        f"{source}: {len(bad)} of {len(vectors)} vector(s) hold NaN or infinity ({shown}{more}); {remedy}"
    )


def refuse_replacing(path: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """``path`` as a Path, refused when something is there and ``overwrite`` is false.

    A run never replaces earlier results without being asked. Called before any expensive work, so a run never ends
    on a refusal.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is false, or is a symbolic link that leads nowhere. The
            message names the remedy.
        ValueError: ``path`` is the current folder or one above it (``..``, ``new/..``), which a run cannot replace.
        OSError: ``path`` cannot be written (:func:`check_writable`).
    """
    path = check_output_place(path)
    if not overwrite and (path.exists() or path.is_symlink()):
        raise FileExistsError(
            f"{path} exists; pass --overwrite (overwrite=True) to replace it, or choose another output"
        )
    check_writable(path)
    return path


def refuse_replacing_file(path: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """``path`` as a Path for an output file, refused where a folder is.

    It is checked as :func:`refuse_replacing` checks it. ``overwrite`` does not replace a folder.

    Args:
        path: the output file.
        overwrite: whether an existing file there may be replaced.

    Raises:
        IsADirectoryError: ``path`` is a folder. The message names it and the remedy.
        FileExistsError, ValueError, OSError: as :func:`refuse_replacing` raises them.
    """
    if check_output_place(path).is_dir():
        example = " that no folder has" if Path(path).suffix else f", e.g. {path}.json"
        raise IsADirectoryError(f"{path} is a folder, and --output takes a file; give a file name{example}")
    return refuse_replacing(path, overwrite=overwrite)


def check_output_place(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, refused when it cannot be an output of its own.

    The current folder or one above it (``..``, ``new/..``), or a symbolic link that leads nowhere (a loop, a dangling
    link).

    Raises:
        ValueError: the current folder or one above it.
        FileExistsError: a link that leads nowhere, named as a loop or as a dangling link.
    """
    path = Path(path)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symbolic-link loop on the way, which check_writable names
        resolved = path.absolute()
    if path.name in ("", ".", "..") or resolved == Path.cwd().resolve() or resolved in Path.cwd().resolve().parents:
        raise ValueError(
            f"{path} is {resolved}, the current folder or one above it, not an output of its own (a run writes its "
            "output whole); give the output a new name, e.g. --output NAME"
        )
    if (link := broken_link(path)) is not None:
        raise FileExistsError(f"{path} is {link}; remove it, or choose another output")
    return path


def broken_link(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with ``path`` when it is a symbolic link that leads nowhere.

    That is ``"a symbolic-link loop"`` or ``"a symbolic link to TARGET, which does not exist"``. ``None`` for anything
    else.
    """
    path = Path(path)
    if not path.is_symlink():
        return None
    try:
        path.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic-link loop"
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    return None


class InputKind(StrEnum):
    """What an input path must be."""

    FILE = "file"
    FOLDER = "folder"
    ANY = "any"


def check_input(path: str | os.PathLike[str], option: str, kind: InputKind | str = InputKind.FILE) -> Path:
    """``path`` as a Path, checked before any work.

    It exists (a link loop or a dangling link is named as one), is a ``kind`` (``"file"``, ``"folder"`` or ``"any"``)
    and can be read.

    Args:
        path: the input as given.
        option: the option that gave it (``--input``), for the error.
        kind: what the input must be.

    Raises:
        OSError: a FileNotFoundError, IsADirectoryError, NotADirectoryError or PermissionError whose message names
            ``path``, ``option`` and the cause.
    """
    path, kind = Path(path), InputKind(kind)
    where = f"{path} ({option})"
    if (link := broken_link(path)) is not None:
        raise FileNotFoundError(f"{where} is {link}; point {option} at the file itself")
    if not path.exists():
        raise FileNotFoundError(f"{where}: no such {'folder' if kind is InputKind.FOLDER else 'file'}")
    if kind is InputKind.FILE and path.is_dir():
        raise IsADirectoryError(f"{where} is a folder; {option} takes a file")
    if kind is InputKind.FOLDER and not path.is_dir():
        raise NotADirectoryError(f"{where} is a file; {option} takes a folder")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise PermissionError(f"{where} cannot be read: permission denied")
    return path


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise an OSError naming ``path`` when it could not be written.

    A folder on its way is a symbolic link that leads nowhere (a loop, a dangling link), its nearest existing folder is
    not a folder, or a file cannot be created in it (read-only, no permission). Tried by creating and removing a file
    there, so what the operating system allows is what is checked.
    """
    problem = _unwritable(Path(path).absolute())
    if problem is not None:
        kind, _, cause = problem
        raise kind(f"{path} cannot be written: {cause}")


def _unwritable(path: Path) -> tuple[type[OSError], int, str] | None:
    """Why nothing can be written at the absolute ``path``, or None.

    The reason is the error's type, its errno and the cause.
    """
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        if (link := broken_link(ancestor)) is not None:
            return NotADirectoryError, errno.ENOTDIR, f"{ancestor} is {link}"
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return NotADirectoryError, errno.ENOTDIR, f"{ancestor} is a file, not a folder"
    try:
        handle, probe = tempfile.mkstemp(dir=ancestor, prefix=".sciembed-write-check.")
    except OSError as error:
        kind = type(error) if type(error).__module__ == "builtins" else OSError
        return kind, error.errno, f"{error.strerror} in {ancestor}"
    os.close(handle)
    os.unlink(probe)
    return None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``. Rename it to ``path`` if the block succeeds, delete it if not
    (an operating-system error is raised again naming ``path``).

    The file is synced before the rename and the folder after it, so the rename survives a power cut, and it
    gets the permissions the umask gives a new file (``mkstemp`` alone would leave it readable by its owner only).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    temporary = Path(temporary)
    try:
        yield temporary
        with temporary.open("rb") as written:
            os.fsync(written.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
        sync_folder(path.parent)
    except OSError as error:
        # A full disk says "[Errno 28] Error writing bytes to file" without saying which: name the output.
        if str(path) in str(error):
            raise
        kind = type(error) if type(error).__module__ == "builtins" else OSError
        raise kind(
            error.errno, f"{path} was not written ({error.strerror or error}); nothing was left in its place"
        ) from error
    finally:
        temporary.unlink(missing_ok=True)


def replace_folder(staging: str | os.PathLike[str], destination: str | os.PathLike[str]) -> Path:
    """Put the complete folder ``staging`` in the place of ``destination`` atomically.

    Put the complete folder ``staging`` in the place of ``destination`` with no moment at which neither exists: on
    Linux the two are exchanged in one step (``renameat2`` with ``RENAME_EXCHANGE``) and the old folder removed after.
    Elsewhere the old folder is first renamed aside (``.<name>.old``, removed after), so a crash can leave it there but
    never lose it.
    """
    staging, destination = Path(staging), Path(destination)
    if not destination.exists():
        os.replace(staging, destination)
    elif _exchange(staging, destination):
        shutil.rmtree(staging)
    else:
        aside = destination.with_name(f".{destination.name}.old")
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(destination, aside)
        os.replace(staging, destination)
        shutil.rmtree(aside)
    sync_folder(destination.parent)
    return destination


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``). False where that is unavailable."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """fsync a folder, so that renames into it are on disk.

    It does nothing where folders cannot be opened.
    """
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself has happened
    finally:
        os.close(descriptor)


def _umask() -> int:
    # os.umask can only be read by setting it; set it straight back.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def ids_path(npy_path: str | os.PathLike[str]) -> Path:
    """The ids file that accompanies an ``.npy`` embedding file: ``out.npy`` -> ``out.ids.json``."""
    return Path(npy_path).with_suffix(".ids.json")


def check_embedding_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, refused with a ValueError if its suffix names no supported format."""
    path = Path(path)
    if path.suffix.lower() not in EMBEDDING_SUFFIXES:
        raise ValueError(f"{path}: unsupported embedding file type; use one of {', '.join(EMBEDDING_SUFFIXES)}")
    return path


def write_embeddings(path: str | os.PathLike[str], chunks: Iterable[Chunk], *, total: int, dim: int) -> None:
    """Write ``total`` embeddings of size ``dim``, given as ``(ids, vectors)`` chunks in order, atomically.

    Chunks are streamed, so the whole matrix never needs to be in memory.
    """
    path = check_embedding_path(path)
    writer = {".jsonl": _write_jsonl, ".npy": _write_npy, ".parquet": _write_parquet}[path.suffix.lower()]
    writer(path, _checked(chunks, total, dim), total, dim)


def read_embeddings(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """Read an embedding file, or a folder of Parquet parts.

    Read an embedding file written by :func:`write_embeddings` (or by SciDocs tooling, for ``.jsonl``), or a folder of
    Parquet parts (``sciembed embed`` to a name without a suffix), its parts in name order.

    Raises:
        ValueError: a malformed file, vectors holding NaN or infinity, parts of a folder whose vectors differ in size,
            or a paper id given two vectors (each named).
    """
    if Path(path).is_dir():
        parts = sorted(Path(path).glob("*.parquet"))
        if not parts:
            raise ValueError(f"{path}: a folder without Parquet parts")
        read = [_read_checked(part) for part in parts]
        for part, (_, vectors) in zip(parts, read):
            if vectors.shape[1] != read[0][1].shape[1]:
                raise ValueError(
                    f"{part}: vectors of size {vectors.shape[1]}, {parts[0].name} holds size {read[0][1].shape[1]}: "
                    "parts of two embedding runs (another model?); embed the papers again into a new folder"
                )
        ids, vectors = [i for ids, _ in read for i in ids], np.concatenate([vectors for _, vectors in read])
    else:
        ids, vectors = _read_checked(check_embedding_path(path))
    _refuse_repeated_ids(path, ids)
    return ids, vectors


def _read_checked(path: Path) -> tuple[list[str], np.ndarray]:
    ids, vectors = _read_embedding_file(path)
    check_finite(
        vectors,
        lambda rows, ids=ids: [repr(ids[i]) for i in rows],
        str(path),
        "embed these papers again with a model whose outputs are finite",
    )
    return ids, vectors


def _refuse_repeated_ids(path: str | os.PathLike[str], ids: Sequence[str]) -> None:
    """Refuse an embedding file that gives one paper two vectors.

    Which of them is the paper's is unknown.
    """
    if len(set(ids)) == len(ids):
        return
    first: dict[str, int] = {}
    for row, paper_id in enumerate(ids):
        if paper_id in first:
            raise ValueError(
                f"{path}: paper_id {paper_id!r} has two vectors (rows {first[paper_id]} and {row}, counted from 0), "
                "so which is its own is unknown; write each paper once (sciembed embed does)"
            )
        first[paper_id] = row


def vectors_of(
    ids: Sequence[str],
    path: str | os.PathLike[str],
    *,
    source: str,
    remedy: str,
    allow_missing: bool = False,
) -> tuple[np.ndarray, list[str], int]:
    """The vectors an embedding file (:func:`read_embeddings`) holds for ``ids``, as float32 rows in their order.

    Args:
        ids: the paper ids whose vectors are wanted.
        path: the embedding file or folder of Parquet parts.
        source: what the ids come from, for the error.
        remedy: what the error says helps.
        allow_missing: return the ids without a vector instead of raising.

    Returns:
        The vectors of the ids the file holds (in the order of ``ids``), the ids it lacks, and how many of its
        vectors were not asked for.

    Raises:
        ValueError: ids without a vector (unless ``allow_missing``), counted and named, with ``remedy``. A vector of
            zeros, named. And the errors of :func:`read_embeddings`.
    """
    stored_ids, stored = read_embeddings(path)
    row_of = {paper_id: row for row, paper_id in enumerate(stored_ids)}
    absent = [paper_id for paper_id in ids if paper_id not in row_of]
    if absent and not allow_missing:
        shown = ", ".join(repr(i) for i in absent[:10]) + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
        raise ValueError(
            f"{path} has no vector for {len(absent)} of the {len(ids)} papers of {source}: {shown}; {remedy}"
        )
    rows = [row_of[paper_id] for paper_id in ids if paper_id in row_of]
    vectors = stored[rows].astype(np.float32, copy=False)
    zero = np.flatnonzero(~vectors.any(axis=1))
    if len(zero):
        named = [stored_ids[rows[i]] for i in zero[:10]]
        raise ValueError(
            f"{path}: {len(zero)} vector(s) are all zeros ({', '.join(map(repr, named))}"
            f"{' and more' if len(zero) > 10 else ''}): a zero vector has no direction, so every similarity to it "
            "is 0; no model writes one: embed these papers again"
        )
    return vectors, absent, len(stored_ids) - len(rows)


def _read_embedding_file(path: Path) -> tuple[list[str], np.ndarray]:
    readers = {".jsonl": _read_jsonl, ".npy": _read_npy}
    return readers.get(path.suffix.lower(), _read_parquet)(path)


def _read_jsonl(path: Path) -> tuple[list[str], np.ndarray]:
    ids, rows, lines = [], [], []
    for line_number, paper_id, vector in jsonl_embedding_records(path):
        ids.append(paper_id)
        rows.append(vector)
        lines.append(line_number)
    try:
        return ids, np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as error:
        # Looked for only on failure, so that a good file costs one conversion.
        row = next((i for i, vector in enumerate(rows) if not all(type(x) in (int, float) for x in vector)), None)
        if row is None:
            raise ValueError(f"{path}: the embeddings do not convert to float32 ({error})") from None
        raise ValueError(
            f"{path}, line {lines[row]} (paper_id {ids[row]!r}): its embedding holds something other than numbers"
        ) from None


def jsonl_embedding_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, str, list[Any]]]:
    """The ``(line, paper_id, embedding)`` of each record of a ``.jsonl`` embedding file, streamed.

    Args:
        path: the file.

    Raises:
        ValueError: a line that is not an embedding record, or whose embedding is not a list of as many numbers
            as the lines before, naming the file, line and paper id.
    """
    dim = None
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = loads_json(line)
                paper_id, vector = str(record["paper_id"]), record["embedding"]
            except (json.JSONDecodeError, RepeatedKeyError, KeyError, TypeError) as error:
                raise ValueError(f"{path}, line {line_number}: not an embedding record ({error})") from error
            if not isinstance(vector, list) or not vector or (dim is not None and len(vector) != dim):
                expected = f"a list of {dim} numbers like the lines before" if dim else "a non-empty list of numbers"
                raise ValueError(
                    f"{path}, line {line_number} (paper_id {paper_id!r}): its embedding is not {expected}"
                )
            dim = len(vector)
            yield line_number, paper_id, vector


def _read_parquet(path: Path) -> tuple[list[str], np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None
    for name in ("paper_id", "embedding"):
        if name not in table.column_names:
            raise ValueError(f"{path}: no {name!r} column (columns: {', '.join(table.column_names)})")
    kind = table.schema.field("embedding").type
    if not (pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind) or pa.types.is_large_list(kind)) or not (
        pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type)
    ):
        raise ValueError(f"{path}: column 'embedding' holds {kind}, expected a list of numbers per row")
    column = table.column("embedding").combine_chunks()
    if column.null_count:
        raise ValueError(f"{path}: column 'embedding' is empty on {column.null_count} row(s)")
    row_lengths = pc.list_value_length(column).to_pylist() if not pa.types.is_fixed_size_list(kind) else None
    lengths = set(row_lengths) if row_lengths is not None else {kind.list_size}
    if len(lengths) != 1:
        first = row_lengths[0]
        row = next(i for i, length in enumerate(row_lengths) if length != first)
        paper_id = table.column("paper_id")[row].as_py() if "paper_id" in table.column_names else None
        raise ValueError(
            f"{path}: column 'embedding' holds lists of {len(lengths)} different lengths ({sorted(lengths)[:5]}): "
            f"row {row} (paper_id {paper_id!r}) has {row_lengths[row]} numbers where row 0 has {first}; every vector "
            "of one file comes from one model: embed these papers again"
        )
    vectors = column.flatten().to_numpy(zero_copy_only=False).reshape(table.num_rows, -1)
    return [str(i) for i in table.column("paper_id").to_pylist()], vectors.astype(np.float32, copy=False)


def open_npy_embeddings(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """The ids and the memory-mapped vectors of an ``.npy`` embedding file, checked.

    The checks are :func:`read_embeddings`' own, but for finite values, which a reader checks block by block.

    Args:
        path: the ``.npy`` file. Its ids file is :func:`ids_path`.
    """
    return _read_npy(Path(path), mmap_mode="r")


def _read_npy(path: Path, mmap_mode: str | None = None) -> tuple[list[str], np.ndarray]:
    ids_file = ids_path(path)
    try:
        stored = loads_json(ids_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: its ids file {ids_file} is missing") from None
    except (json.JSONDecodeError, RepeatedKeyError) as error:
        raise ValueError(f"{json_place(ids_file, error)}: {json_error(error)}") from None
    if isinstance(stored, dict):
        check_npy_checksum(path, stored)
        stored = stored.get("ids")
    if not isinstance(stored, list):
        raise ValueError(f"{ids_file}: expected a list of ids")
    vectors = npy_vectors(path, mmap_mode)
    if len(stored) != len(vectors):
        raise ValueError(f"{path}: {len(vectors)} vectors but {len(stored)} ids in {ids_file}")
    return [str(i) for i in stored], vectors


def check_npy_checksum(path: str | os.PathLike[str], stored: dict[str, Any]) -> None:
    """Refuse an ids file that does not name the vectors of ``path`` by their sha256.

    Args:
        path: the ``.npy`` file.
        stored: its ids file's top-level keys (the ids may be left out).
    """
    path = Path(path)
    if "npy_sha256" not in stored:
        raise ValueError(
            f"{ids_path(path)}: no npy_sha256, the checksum of {path.name} that ties the ids to the vectors; write "
            "the embeddings with sciembed embed (or sciembed.io.write_embeddings), or give the ids as a plain list"
        )
    if stored.get("npy_sha256") != file_sha256(path):
        raise ValueError(
            f"{ids_path(path)} was written with other vectors than {path} holds (an interrupted or mixed write); "
            "write the embeddings again"
        )


def npy_vectors(path: str | os.PathLike[str], mmap_mode: str | None = None) -> np.ndarray:
    """The ``(papers, dimensions)`` array of an ``.npy`` embedding file, checked to hold numbers.

    Args:
        path: the ``.npy`` file.
        mmap_mode: ``"r"`` to memory-map it.
    """
    try:
        vectors = np.load(path, allow_pickle=False, mmap_mode=mmap_mode)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path}: not a readable .npy array ({error})") from None
    if vectors.ndim != 2 or not (
        np.issubdtype(vectors.dtype, np.floating) or np.issubdtype(vectors.dtype, np.integer)
    ):
        raise ValueError(
            f"{path}: holds a {vectors.dtype} array of shape {vectors.shape}, expected (papers, dimensions) numbers"
        )
    return vectors


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Bytes copied at a time where the kernel cannot copy a file's range itself.
_COPY_BYTES = 1 << 24


class NpyRowWriter:
    """An ``.npy`` file of ``shape`` written block by block with plain writes, never memory-mapped.

    The file is byte for byte the one ``np.save`` writes for the same rows. No page of it counts in the process's
    resident memory, as the dirty pages of a memory map would.

    Args:
        path: the file to write.
        dtype: its element type.
        shape: its shape (the rows first).
        hashed: keep the SHA-256 of the bytes written (:meth:`sha256`), so the file need not be read back.
    """

    def __init__(
        self, path: str | os.PathLike[str], dtype: np.dtype | type, shape: tuple[int, ...], *, hashed: bool = False
    ):
        self.path, self.dtype, self.shape = Path(path), np.dtype(dtype), tuple(int(n) for n in shape)
        self.rows = 0
        self.digest = hashlib.sha256() if hashed else None
        self.handle = self.path.open("wb", buffering=0)
        header = io.BytesIO()
        fields = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": self.shape}
        np.lib.format.write_array_header_1_0(header, fields)
        self._put(memoryview(header.getvalue()))

    def _put(self, view: memoryview) -> None:
        """Write every byte of ``view`` at the file's position (and hash them when hashed)."""
        if self.digest is not None:
            self.digest.update(view)
        while view:
            view = view[self.handle.write(view) :]

    def write(self, rows: np.ndarray) -> None:
        """Append ``rows`` (their shape after the first axis is the file's)."""
        data = np.ascontiguousarray(rows, dtype=self.dtype)
        if data.shape[1:] != self.shape[1:] or self.rows + len(data) > self.shape[0]:
            raise ValueError(f"{self.path}: rows of shape {data.shape} do not fit after row {self.rows}")
        self._put(memoryview(data.reshape(-1).view(np.uint8)))
        self.rows += len(data)

    def copy_from(self, path: str | os.PathLike[str]) -> None:
        """Append every row of the ``.npy`` file ``path``.

        The kernel copies the rows where it can (``copy_file_range``).
        """
        previous = np.load(path, mmap_mode="r")
        if previous.dtype != self.dtype or previous.shape[1:] != self.shape[1:] or not previous.flags.c_contiguous:
            raise ValueError(f"{path}: rows of {previous.dtype} {previous.shape}, expected {self.dtype} {self.shape}")
        self.copy_raw(path, previous.offset, len(previous))

    def copy_raw(self, path: str | os.PathLike[str], offset: int, rows: int) -> None:
        """Append ``rows`` rows stored raw in the file ``path`` from byte ``offset``.

        Args:
            path: a file holding rows of this file's type and width.
            offset: where the first row starts.
            rows: the rows appended.
        """
        if self.rows + rows > self.shape[0]:
            raise ValueError(f"{path}: {rows} rows do not fit after row {self.rows} of {self.path}")
        size = rows * int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        at = self.handle.tell()
        with open(path, "rb") as source:
            copied = 0 if self.digest is not None else _kernel_copy(source, self.handle, offset, at, size)
            source.seek(offset + copied)
            self.handle.seek(at + copied)
            while copied < size:
                chunk = source.read(min(_COPY_BYTES, size - copied))
                if not chunk:
                    raise ValueError(f"{path}: shorter than {size} bytes from byte {offset}")
                self._put(memoryview(chunk))
                copied += len(chunk)
        self.handle.seek(at + size)
        self.rows += rows

    def sha256(self) -> str:
        """The SHA-256 of the bytes written so far (a writer opened with ``hashed=True``)."""
        if self.digest is None:
            raise ValueError(f"{self.path}: opened without hashed=True, so its bytes were not hashed")
        return self.digest.hexdigest()

    def __enter__(self) -> NpyRowWriter:
        return self

    def __exit__(self, error: type[BaseException] | None, *_: object) -> None:
        if error is None:
            self.close()
        else:
            self.handle.close()

    def close(self) -> None:
        """Close the file, which must hold every row its header announces."""
        self.handle.close()
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.path}: {self.rows} rows written where {self.shape[0]} were announced")


def _kernel_copy(source: BinaryIO, target: BinaryIO, offset: int, at: int, size: int) -> int:
    """Copy ``size`` bytes of ``source`` from ``offset`` to ``target`` at ``at`` in the kernel.

    Returns the bytes copied: fewer than ``size`` where ``copy_file_range`` is missing or refuses these files.

    Args:
        source: the open file read.
        target: the open file written.
        offset: where the bytes start in ``source``.
        at: where they go in ``target``.
        size: how many.
    """
    copied = 0
    try:
        while copied < size:
            step = os.copy_file_range(source.fileno(), target.fileno(), size - copied, offset + copied, at + copied)
            if step <= 0:
                break
            copied += step
    except (AttributeError, OSError):  # no copy_file_range here, or not between these files
        pass
    return copied


def npy_blocks(matrix: np.memmap, first: int, rows: int) -> Iterator[np.ndarray]:
    """Blocks of rows of a memory-mapped ``.npy`` matrix, read with plain file reads.

    Args:
        matrix: a 2-D array that ``np.load(..., mmap_mode="r")`` opened.
        first: the first row read.
        rows: rows per block.
    """
    if not matrix.flags.c_contiguous:  # rows of a Fortran-order file are not contiguous: mapped, then released
        for start in range(first, len(matrix), rows):
            block = np.array(matrix[start : start + rows])
            release_pages(matrix)
            yield block
        return
    width = matrix.shape[1] * matrix.dtype.itemsize
    with open(matrix.filename, "rb", buffering=0) as handle:
        handle.seek(matrix.offset + first * width)
        for start in range(first, len(matrix), rows):
            block = np.empty((min(rows, len(matrix) - start), matrix.shape[1]), dtype=matrix.dtype)
            view = memoryview(block.reshape(-1).view(np.uint8))
            while view:
                read = handle.readinto(view)
                if not read:
                    raise ValueError(f"{matrix.filename}: shorter than its header says (row {start} on)")
                view = view[read:]
            yield block


def release_pages(array: np.ndarray) -> None:
    """Release the pages of the memory-mapped ``array`` from the process.

    The kernel's page cache keeps them.
    """
    mapped = getattr(array, "_mmap", None)
    if mapped is not None and hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_DONTNEED)


class ReleasedRows:
    """Rows of an ``.npy`` file read by index through plain reads, leaving no page resident.

    A page read through a memory map counts in the process's memory, and one fault can map a large folio around it:
    rows read at random through a map soon hold the whole file. A Fortran-order file is read through its map, whose
    pages are released after each read.

    Args:
        rows: the file's memory-mapped array (``np.load(..., mmap_mode="r")``), for its shape, type and offset.
    """

    def __init__(self, rows: np.memmap):
        self.rows = rows
        self.shape, self.dtype = rows.shape, rows.dtype
        self.row_bytes = int(np.prod(rows.shape[1:], dtype=np.int64)) * rows.dtype.itemsize

    def __len__(self) -> int:
        return len(self.rows)

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self[:], dtype=dtype)

    def __getitem__(self, wanted: np.ndarray | slice) -> np.ndarray:
        if not self.rows.flags.c_contiguous:
            out = np.array(self.rows[wanted])
            release_pages(self.rows)
            return out
        index = np.arange(*wanted.indices(len(self))) if isinstance(wanted, slice) else np.asarray(wanted)
        index = np.flatnonzero(index) if index.dtype == bool else index.astype(np.int64)
        index = np.where(index < 0, index + len(self), index)
        if index.size and not (0 <= index.min() and index.max() < len(self)):
            raise IndexError(f"{self.rows.filename}: rows {wanted} out of 0 .. {len(self) - 1}")
        out = np.empty((index.size, *self.shape[1:]), dtype=self.dtype)
        view, size = memoryview(out.reshape(-1).view(np.uint8)), self.row_bytes
        with open(self.rows.filename, "rb", buffering=0) as handle:
            for number, row in enumerate(index.reshape(-1).tolist()):
                at = self.rows.offset + row * size
                if os.preadv(handle.fileno(), [view[number * size : (number + 1) * size]], at) != size:
                    raise ValueError(f"{self.rows.filename}: shorter than its header says (row {row})")
        return out.reshape(*index.shape, *self.shape[1:])


#: The files opened in a :func:`files_read` context of this thread (``None``: no context is open).
_OPENED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("sciembed_opened", default=None)
_HOOKED: list[bool] = []


def _note_open(event: str, args: tuple[Any, ...]) -> None:
    """Python's audit hook: note the path of a file opened inside a :func:`files_read` context."""
    if event == "open" and (opened := _OPENED.get()) is not None and isinstance(args[0], (str, os.PathLike)):
        opened.add(os.path.abspath(args[0]))


@contextlib.contextmanager
def files_read() -> Iterator[set[str]]:
    """Collect the absolute paths of the files Python opens in this context.

    Python's ``open`` audit event names them.

    Files read by native code (pyarrow's Parquet reader) are not seen: :func:`input_digests` adds those by name.
    """
    if not _HOOKED:
        sys.addaudithook(_note_open)
        _HOOKED.append(True)
    opened: set[str] = set()
    token = _OPENED.set(opened)
    try:
        yield opened
    finally:
        _OPENED.reset(token)


#: Files native readers open without Python seeing them: in a folder input, each is hashed.
_NATIVE_SUFFIXES = (".parquet", ".arrow")
#: Files Python opens to import code, never data.
_CODE_SUFFIXES = (".py", ".pyc", ".so")


def input_digests(
    inputs: dict[str, str | os.PathLike[str] | None], opened: Iterable[str] = ()
) -> dict[str, dict[str, str]]:
    """The SHA-256 of each data file an evaluation read, by input: ``{input: {file name: sha256}}``.

    Args:
        inputs: each input's name (``data``, ``papers``, ``queries``, ...) and path. One that is not a local file or
            folder (a Hub id, ``None``) is left out.
        opened: the files opened while the inputs were read (:func:`files_read`). Of a folder, only these and its
            Parquet and Arrow files are hashed, by their path inside it.
    """
    digests: dict[str, dict[str, str]] = {}
    for name, given in inputs.items():
        if given is None or not os.path.exists(given):
            continue
        path = Path(given)
        if path.is_file():
            files = {path.name: path}
        else:
            root = path.resolve()
            found = [Path(file) for file in opened if Path(file).suffix not in _CODE_SUFFIXES]
            found += [file for file in root.rglob("*") if file.suffix.lower() in _NATIVE_SUFFIXES]
            inside = {file.resolve().relative_to(root) for file in found if file.resolve().is_relative_to(root)}
            files = {
                relative.as_posix(): root / relative
                for relative in inside
                if (root / relative).is_file() and not any(part.startswith(".") for part in relative.parts)
            }
        digests[name] = {key: file_sha256(files[key]) for key in sorted(files)}
    return digests


def _checked(chunks: Iterable[Chunk], total: int, dim: int) -> Iterator[Chunk]:
    # Raised inside the writer's atomic block, so a short or ragged input leaves no output behind.
    count = 0
    for ids, vectors in chunks:
        if vectors.shape != (len(ids), dim):
            raise ValueError(
                f"chunk of {len(ids)} ids has vectors of shape {vectors.shape}, expected ({len(ids)}, {dim})"
            )
        vectors = np.asarray(vectors, dtype=np.float32)
        check_finite(
            vectors,
            lambda rows, ids=ids: [repr(ids[i]) for i in rows],
            "embeddings to write",
            "nothing was written; check the model that made them",
        )
        count += len(ids)
        if count > total:
            raise ValueError(f"expected {total} embeddings, got {count} or more")
        yield ids, vectors
    if count != total:
        raise ValueError(f"expected {total} embeddings, got {count}")


def _write_jsonl(path: Path, chunks: Iterable[Chunk], total: int, dim: int) -> None:
    with atomic_path(path) as temporary, temporary.open("w", encoding="utf-8") as handle:
        for ids, vectors in chunks:
            for paper_id, vector in zip(ids, vectors.tolist()):
                handle.write(json.dumps({"paper_id": paper_id, "embedding": vector}) + "\n")


def _write_npy(path: Path, chunks: Iterable[Chunk], total: int, dim: int) -> None:
    # The ids land first and name the vectors by their hash: whichever of the two renames a crash
    # interrupts, a reader finds either the old pair or a mismatch it reports, never new ids on old vectors.
    # They are written as they come, so no list of every id is held. The vectors are hashed as they are written.
    with atomic_path(path) as temporary, atomic_path(ids_path(path)) as ids_temporary:
        written = 0
        with (
            NpyRowWriter(temporary, np.float32, (total, dim), hashed=True) as array,
            ids_temporary.open("w", encoding="utf-8") as handle,
        ):
            handle.write('{"ids": [')
            for ids, vectors in chunks:
                array.write(vectors)
                if len(ids):
                    handle.write((", " if written else "") + json.dumps(list(ids))[1:-1])
                written += len(ids)
            handle.write(f'], "rows": {json.dumps(total)}, "npy_sha256": {json.dumps(array.sha256())}}}')


def embedding_table(ids: Sequence[str], vectors: np.ndarray):
    """``ids`` and their ``(n, dim)`` vectors as the Arrow table of sciembed's Parquet outputs.

    Its columns are ``paper_id`` (string) and ``embedding`` (a fixed-size list of float32).
    """
    import pyarrow as pa

    dim = vectors.shape[1]
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dim)
    return pa.Table.from_arrays([pa.array(list(ids), pa.string()), embedding], schema=_embedding_schema(dim))


def _embedding_schema(dim: int):
    import pyarrow as pa

    return pa.schema([("paper_id", pa.string()), ("embedding", pa.list_(pa.float32(), dim))])


def _write_parquet(path: Path, chunks: Iterable[Chunk], total: int, dim: int) -> None:
    import pyarrow.parquet as pq

    with atomic_path(path) as temporary, pq.ParquetWriter(temporary, _embedding_schema(dim)) as writer:
        for ids, vectors in chunks:
            writer.write_table(embedding_table(ids, vectors))
