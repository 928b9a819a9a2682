"""Paper records: reading them from the files users have, and turning one into model text.

A paper is a dict with at least ``paper_id`` (a string), ``title`` and ``abstract`` (strings, possibly
empty). Every other field of the source record is kept. Readers validate each record and either stop
at the first bad one with an :class:`InvalidPaperError` naming the file, line and id, or (with
``skip_invalid=True``) skip, count and report every bad record in :attr:`PaperFile.skipped`.
:func:`read_papers` returns the papers as a list. :func:`paper_dataset` streams them into an Arrow file
and returns it as a memory-mapped ``datasets.Dataset``, for files larger than memory.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import numbers
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..io import RepeatedKeyError, json_error, json_place, loads_json
from .problems import InvalidPaperError, PaperProblem
from .problems import paper_id_order as paper_id_order

logger = logging.getLogger(__name__)

#: Fields tried, in order, for a record's id when the caller names none. SciDocs and SPECTER use
#: ``paper_id``; SciRepEval's samples use ``corpus_id``.
ID_FIELDS = ("paper_id", "corpus_id", "id", "doc_id")
#: What a record without any of those fields needs: skipping cannot help when the file names its ids otherwise.
_ID_FIELD_HINT = "name the field that holds the paper ids with id_field=... / --id-field"
#: The fields a paper's text is made of (SPECTER: title [SEP] abstract).
TEXT_FIELDS = ("title", "abstract")

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
#: Rows per record batch of a :func:`paper_dataset` Arrow file.
_ARROW_BATCH = 10_000


def paper_text(
    paper: Mapping[str, Any], sep_token: str, fields: Sequence[str] = TEXT_FIELDS, *, index: int | None = None
) -> str:
    """Return the model text of ``paper``: its non-empty ``fields`` joined by ``sep_token``. By default
    ``title + sep_token + abstract`` (the SPECTER convention), and SciRepEval's search task adds venue and
    year the same way.

    A paper with only a title (or only an abstract) gives that text alone. Surrounding whitespace is
    stripped. ``None`` counts as absent. A number (a year) is written as text.

    Args:
        paper: the paper record.
        sep_token: what joins the fields.
        fields: the fields the text is made of, in order (one string is one field).
        index: the paper's position among those given, named in messages (:func:`paper_name`).

    Raises:
        TypeError: ``paper`` is not a record (a mapping), or ``fields`` is not field names.
        ValueError: no field has text, or a field holds something other than text or a number (the
            paper's id or position and the field are named).
    """
    if not isinstance(paper, Mapping):
        raise TypeError(f"a paper is a record (a dict with title / abstract), got {type(paper).__name__}")
    fields = text_field_names(fields)
    try:
        parts = [part for name in fields if (part := _text_field(paper, name))]
    except TypeError as error:
        raise ValueError(f"{paper_name(paper, index)}: {error}") from error
    if parts:
        return sep_token.join(parts)
    if tuple(fields) == TEXT_FIELDS:
        hint = ""
        if not set(TEXT_FIELDS) & set(paper):
            fields = ", ".join(map(str, list(paper)[:8]))
            hint = (
                f" (its fields: {fields}); a paper record is a dict with title / abstract; give texts as a str or a "
                "list of str"
            )
        raise ValueError(f"{paper_name(paper, index)} has neither a title nor an abstract{hint}")
    raise ValueError(f"{paper_name(paper, index)} has no text in {', '.join(fields)}")


def text_field_names(text_fields: str | Iterable[str]) -> tuple[str, ...]:
    """The paper fields a text is made of, as given in Python.

    One string is one field.

    Args:
        text_fields: a field name, or an ordered iterable of field names.

    Raises:
        TypeError: ``text_fields`` is not a field name or an ordered iterable of them (a set, bytes, a number), or an
            item is not a string. A list of field names is what is taken.
        ValueError: a field named twice.
    """
    if isinstance(text_fields, str):
        return (text_fields,)
    if isinstance(text_fields, (bytes, bytearray, set, frozenset, Mapping)) or not isinstance(text_fields, Iterable):
        raise TypeError(
            f"text_fields must be a field name or a list of them, e.g. ['title', 'abstract']; got "
            f"{type(text_fields).__name__}"
        )
    names = tuple(text_fields)
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(
                f"text_fields: item #{index} is {type(name).__name__}; a field name is a str, e.g. ['title', "
                "'abstract']"
            )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"text fields (--text-fields, text_fields=) {list(names)} name {', '.join(map(repr, repeated))} more than "
            "once; name each field once"
        )
    return names


def paper_name(paper: Mapping[str, Any], index: int | None = None) -> str:
    """How messages name ``paper``.

    The name is ``record #index`` when its position is known, and ``paper 'id'`` when it has a ``paper_id``
    (``a paper without paper_id`` when it has neither).
    """
    paper_id = paper.get("paper_id")
    named = [f"record #{index}"] if index is not None else []
    if paper_id not in (None, ""):
        named.append(f"paper {str(paper_id)!r}")
    return ", ".join(named) or "a paper without paper_id"


def clean_text(value: Any, name: str) -> str:
    """A text field as readers keep it: stripped, ``None`` as ``""``. TypeError naming ``name`` otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    return value.strip()


def _text_field(paper: Mapping[str, Any], name: str) -> str:
    value = paper.get(name)
    if isinstance(value, float) and value != value:
        return ""  # NaN: pandas' missing value (a DataFrame's records), no text rather than "nan"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return clean_text(value, name)


@dataclass
class PaperFile:
    """The papers read from one source, the records skipped, and the source's citation links.

    The papers read from one source, in its order, the records that were skipped, and the citation links the source
    brings (a SMART collection's ``.X`` citations, ``None`` for a papers file).
    """

    path: str
    papers: list[dict[str, Any]]
    skipped: list[PaperProblem] = field(default_factory=list)
    links: set[tuple[str, str]] | None = None

    def __len__(self) -> int:
        return len(self.papers)


@dataclass(frozen=True)
class PaperReading:
    """How a job reads its papers, as :func:`read_papers` takes it.

    Args:
        id_field: the column holding the paper id (default: the first of :data:`ID_FIELDS` a record has).
        skip_invalid: skip bad records and report them, instead of refusing the first.
        text_fields: the fields a paper's text is made of (default: :data:`TEXT_FIELDS`).
        smart_links: how a SMART collection's ``.X`` lines are read (``cacm`` or ``all``).
    """

    id_field: str | None = None
    skip_invalid: bool = False
    text_fields: Sequence[str] | None = None
    smart_links: str = "cacm"

    @property
    def fields(self) -> Sequence[str]:
        """The text fields, :data:`TEXT_FIELDS` unless others were given."""
        return TEXT_FIELDS if self.text_fields is None else self.text_fields

    def options(self) -> dict[str, Any]:
        """The settings as keyword arguments of :func:`read_papers` and :func:`paper_dataset`."""
        return {
            "id_field": self.id_field,
            "skip_invalid": self.skip_invalid,
            "text_fields": self.fields,
            "smart_links": self.smart_links,
        }


#: Where a job takes the options it no longer takes one by one.
MOVED_JOB_OPTIONS = {
    **{name: f"reading=sciembed.data.papers.PaperReading({name}=...)" for name in PaperReading.__dataclass_fields__},
    "rank": "share=sciembed.distributed.Share(rank, world_size)",
    "world_size": "share=sciembed.distributed.Share(rank, world_size)",
}


def read_papers(
    path: str | os.PathLike[str],
    *,
    id_field: str | None = None,
    skip_invalid: bool = False,
    text_fields: Sequence[str] = TEXT_FIELDS,
    smart_links: str = "cacm",
) -> PaperFile:
    """Read papers from any file layout or folder that sciembed's commands take.

    Read papers from any layout sciembed's commands take: ``.jsonl`` (one record a line), ``.json`` (a list of records,
    or a dict keyed by paper id), ``.csv`` (a header row naming the columns), ``.parquet`` (one record a row), a folder
    of Parquet parts (``*.parquet``, read in name order), or a SMART collection (a ``*.all`` file such as CACM's, or a
    folder holding one, its ``.X`` citations in ``PaperFile.links``).

    Args:
        path: the file or folder.
        id_field: the column holding the paper id. By default the first of :data:`ID_FIELDS` that a
            record has. In an id-keyed ``.json`` dict the key is the id. A SMART collection's ids are its ``.I`` lines.
        skip_invalid: skip records that are malformed, lack an id, have no text in ``text_fields``, or
            repeat an earlier id (the first is kept), and list them in ``PaperFile.skipped``. When
            false, the first such record raises :class:`InvalidPaperError`.
        text_fields: the fields a paper's text is made of. A paper lacking text in some of them beyond title and
            abstract is counted and reported, and a field that no paper has text in is refused.
        smart_links: how a SMART collection's ``.X`` lines are read (``cacm`` or ``all``,
            :func:`~sciembed.data.smart.read_smart_collection`).

    Raises:
        InvalidPaperError: a bad record (and ``skip_invalid`` is false), or a source that holds no papers.
        ValueError: the layout is not supported (the ones read are named), the whole file is not valid JSON, or no
            paper has text in one of ``text_fields``.
    """
    skipped: list[PaperProblem] = []
    smart: dict[str, Any] = {}
    fields = text_field_names(text_fields)
    papers = list(
        _valid_papers(Path(path), id_field, skip_invalid, skipped, fields, smart_links=smart_links, smart=smart)
    )
    return PaperFile(smart.get("path", str(path)), papers, skipped, smart.get("links"))


#: What :func:`paper_inputs` takes, for its messages.
_ACCEPTED = (
    "a text (str), a paper record (a dict with title / abstract), or a list, tuple, generator or pandas DataFrame "
    "of them"
)
#: How :func:`paper_records` names the papers given in Python in its messages.
GIVEN_IN_PYTHON = "papers given in Python"


def paper_inputs(papers: Any, *, what: str = "papers") -> tuple[list[Mapping[str, Any] | str], bool]:
    """Papers or queries given in Python as a list of texts and records.

    Also returns whether they were a single input.

    Args:
        papers: one text (``str``) or one paper record (a mapping), each a single input. A list, tuple, generator
            or other ordered iterable of texts and records (a generator is consumed once). A pandas DataFrame, its
            rows as records (missing values as ``None``). Or a mapping of records keyed by paper id, its records.
        what: what the inputs are called in messages (``papers``, ``queries``).

    Raises:
        TypeError: anything else (bytes, a number, ``None``, a set, an item that is neither a text nor a record),
            naming what was given and, for an item, its position.
    """
    items, _, single = _inputs(papers, what)
    return items, single


def paper_records(
    papers: Any,
    *,
    id_field: str | None = None,
    skip_invalid: bool = False,
    source: str = GIVEN_IN_PYTHON,
    text_fields: str | Sequence[str] = TEXT_FIELDS,
) -> PaperFile:
    """Paper records given in Python, checked as :func:`read_papers` checks a file's.

    Each needs an id (a string or integer, stripped, ``1`` and ``"1"`` are one id) that no earlier record has, and text
    in ``text_fields``. Messages name a record by its position, ``record #i`` (counted from 0).

    Args:
        papers: as :func:`paper_inputs` takes them, every item a record (a mapping of records keyed by paper id has
            its keys as ids, like an id-keyed ``.json`` file).
        id_field: the field holding the paper id. By default the first of :data:`ID_FIELDS` that a record has.
        skip_invalid: skip bad records and list them in ``PaperFile.skipped`` instead of raising.
        source: what the records are called in messages.
        text_fields: the fields a paper's text is made of (one string is one field), checked as
            :func:`read_papers` checks a file's.

    Raises:
        TypeError: ``papers`` is not records (a text among them, bytes, a number, a set, ...), or ``text_fields`` is
            not field names.
        InvalidPaperError: a bad record (and ``skip_invalid`` is false), or no papers.
        ValueError: no paper has text in one of ``text_fields``.
    """
    fields = text_field_names(text_fields)
    items, keys, _ = _inputs(papers, "papers")
    for index, item in enumerate(items):
        if isinstance(item, str):
            raise TypeError(
                f"papers: item #{index} is a text; papers with ids are records (a dict with paper_id, title and "
                "abstract), not texts"
            )
    records = (
        (f"record #{index}", dict(item), None if keys is None else keys[index]) for index, item in enumerate(items)
    )
    skipped: list[PaperProblem] = []
    found = list(
        _checked_papers(records, source, id_field, skip_invalid, skipped, whole="all records", text_fields=fields)
    )
    return PaperFile(source, found, skipped)


def paper_id_list(ids: str | int | Iterable[str | int], *, what: str = "ids") -> list[str]:
    """Paper ids given in Python as a list of distinct ids in the order given.

    One string or integer is one id.

    Args:
        ids: one id (a string or an integer), or an ordered iterable of them.
        what: what the ids are called in messages (the argument's name).

    Raises:
        TypeError: ``ids`` is not an id or an ordered iterable of ids (bytes, a set, a mapping, ...).
    """
    if isinstance(ids, (str, numbers.Integral)) and not isinstance(ids, bool):
        ids = [ids]
    elif isinstance(ids, (bytes, bytearray, set, frozenset, Mapping)) or not isinstance(ids, Iterable):
        raise TypeError(f"{what} must be a paper id (str or int) or a list of them, got {type(ids).__name__}")
    wanted = []
    for index, paper_id in enumerate(ids):
        if isinstance(paper_id, bool) or not isinstance(paper_id, (str, numbers.Integral)):
            raise TypeError(f"{what}: item #{index} is {type(paper_id).__name__}; a paper id is a str or an int")
        wanted.append(str(int(paper_id)) if isinstance(paper_id, numbers.Integral) else str(paper_id).strip())
    return list(dict.fromkeys(wanted))


def usable_as_is(
    dataset: Any,
    *,
    id_field: str | None = None,
    skip_invalid: bool = False,
    text_fields: str | Sequence[str] = TEXT_FIELDS,
) -> bool:
    """Checks a ``datasets.Dataset`` of papers as :func:`paper_records` checks records.

    One batch is in memory at a time.

    Returns whether the dataset can be used as it is: every record valid, its ``paper_id`` already the checked id.

    Args:
        dataset: the papers.
        id_field: as for :func:`paper_records`.
        skip_invalid: return ``False`` at a bad record (for :func:`paper_records` to skip it) instead of raising.
        text_fields: as for :func:`paper_records`.

    Raises:
        InvalidPaperError: a bad record, and ``skip_invalid`` is false.
        ValueError: no paper has text in one of ``text_fields``.
    """
    if "paper_id" not in dataset.column_names or id_field not in (None, "paper_id"):
        return False
    raw: list[Any] = [None]  # the id of the record last read, as the dataset holds it

    def records() -> _Records:
        rows = (dict(zip(batch, values)) for batch in dataset.iter(_ARROW_BATCH) for values in zip(*batch.values()))
        for index, row in enumerate(rows):
            raw[0] = row["paper_id"]
            yield f"record #{index}", row, None

    skipped: list[PaperProblem] = []
    checked = _checked_papers(
        records(), GIVEN_IN_PYTHON, id_field, skip_invalid, skipped, "all records", text_field_names(text_fields)
    )
    for paper in checked:
        if skipped or paper["paper_id"] != raw[0]:
            return False
    return not skipped


def _inputs(papers: Any, what: str) -> tuple[list[Mapping[str, Any] | str], list[str] | None, bool]:
    """:func:`paper_inputs`' items, the keys of a mapping of records, and whether ``papers`` was one input.

    The keys are ``None`` unless ``papers`` is a mapping of records.
    """
    if isinstance(papers, str):
        return [papers], None, True
    if isinstance(papers, Mapping):
        if papers and all(isinstance(value, Mapping) for value in papers.values()):
            return list(papers.values()), [str(key) for key in papers], False
        return [papers], None, True
    if hasattr(papers, "columns") and hasattr(papers, "iterrows") and hasattr(papers, "to_dict"):
        # A pandas DataFrame (duck-typed, so that pandas is never imported here): its rows, as records.
        return [{key: _present(value) for key, value in row.items()} for row in papers.to_dict("records")], None, False
    if (
        hasattr(papers, "index")
        and hasattr(papers, "to_dict")
        and hasattr(papers, "dtype")
        and all(isinstance(label, str) for label in papers.index)
    ):
        # A pandas Series labelled by field names (a DataFrame's row, duck-typed): one record. A Series labelled
        # otherwise (a column of texts) is read below as its items.
        return [{key: _present(value) for key, value in papers.to_dict().items()}], None, True
    given = type(papers).__name__
    if isinstance(papers, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be {_ACCEPTED}; got {given}: decode it to text first")
    if isinstance(papers, (set, frozenset)):
        raise TypeError(f"{what} must be {_ACCEPTED}; got a {given}, which has no order: give a list")
    if not isinstance(papers, Iterable) or getattr(papers, "ndim", None) == 0:
        raise TypeError(f"{what} must be {_ACCEPTED}; got {given}")
    dtype = getattr(papers, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "O") not in "UO":
        raise TypeError(f"{what} must be {_ACCEPTED}; got an array of {dtype}")
    items: list[Mapping[str, Any] | str] = []
    for index, item in enumerate(papers):
        if not isinstance(item, (str, Mapping)):
            raise TypeError(
                f"{what}: item #{index} is {type(item).__name__}; each item must be a text (str) or a paper record "
                "(a dict with title / abstract)"
            )
        items.append(item)
    return items, None, False


def _present(value: Any) -> Any:
    """A DataFrame cell as a record's field.

    A missing value (NaN, ``pd.NA``, ``NaT``) as ``None``, and a whole float as an integer (pandas makes a column of
    integer ids with a missing one floats).
    """
    if (isinstance(value, float) and value != value) or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass
class PaperDataset:
    """The papers of one file as a memory-mapped ``datasets.Dataset``, and the records skipped.

    The dataset has the columns ``paper_id``, ``title`` and ``abstract``, in file order.
    """

    path: str
    dataset: Any
    skipped: list[PaperProblem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.dataset)


def paper_dataset(
    path: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str],
    *,
    id_field: str | None = None,
    skip_invalid: bool = False,
    text_fields: Sequence[str] = TEXT_FIELDS,
    smart_links: str = "cacm",
) -> PaperDataset:
    """The papers of ``path`` as an Arrow-backed ``datasets.Dataset``, for corpora larger than memory.

    ``path`` may be in any layout of :func:`read_papers`, and is validated the same way.

    The records are streamed into ``cache_dir/papers-<key>.arrow`` in batches of 10,000 and the file is
    memory-mapped, so memory holds one batch and the ids seen (for the duplicate check), not the papers.
    ``<key>`` names the path, the size and modification time of its files and the reading options. A later call
    for the unchanged source opens the Arrow file written before (its skipped records kept beside it),
    without reading the input again. Only the fields a paper's text is made of are kept: title, abstract and
    ``text_fields`` (e.g. ``body`` for full texts), each as text (absent as ``""``), checked as
    :func:`read_papers` checks them.

    Raises:
        as :func:`read_papers`.
    """
    import datasets
    import pyarrow as pa

    from ..io import atomic_path

    path, cache_dir, text_fields = Path(path), Path(cache_dir), text_field_names(text_fields)
    extra = [name for name in dict.fromkeys(text_fields) if name not in ("paper_id", *TEXT_FIELDS)]
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    stats = [(file.name, file.stat().st_size, file.stat().st_mtime_ns) for file in files if file.is_file()]
    key = hashlib.sha256(
        json.dumps([str(path.resolve()), stats, id_field, skip_invalid, smart_links, *text_fields]).encode()
    ).hexdigest()[:16]
    arrow_file, skipped_file = cache_dir / f"papers-{key}.arrow", cache_dir / f"papers-{key}.skipped.json"
    cached = _cached_papers(path, arrow_file, skipped_file)
    if cached is None:
        columns = ["paper_id", *TEXT_FIELDS, *extra]
        schema = pa.schema([(name, pa.string()) for name in columns])
        skipped: list[PaperProblem] = []
        count = 0
        with (
            atomic_path(arrow_file) as temporary,
            pa.OSFile(str(temporary), "wb") as sink,
            pa.ipc.new_stream(sink, schema) as writer,
        ):
            batch: list[dict[str, Any]] = []
            for paper in _valid_papers(path, id_field, skip_invalid, skipped, text_fields, smart_links=smart_links):
                for name in extra:
                    try:
                        paper[name] = _text_field(paper, name)
                    except TypeError as error:
                        raise ValueError(f"{path}: paper {paper['paper_id']!r}: {error}") from None
                batch.append(paper)
                count += 1
                if len(batch) == _ARROW_BATCH:
                    writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
                    batch = []
            if batch:
                writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
        with atomic_path(skipped_file) as temporary:
            temporary.write_text(
                json.dumps({"papers": count, "skipped": [vars(problem) for problem in skipped]}), encoding="utf-8"
            )
        cached = PaperDataset(str(path), datasets.Dataset.from_file(str(arrow_file)), skipped)
    return cached


def _cached_papers(path: Path, arrow_file: Path, skipped_file: Path) -> PaperDataset | None:
    """The papers :func:`paper_dataset` wrote before, or ``None``.

    ``None`` when there are none or they are damaged (a file cut short, a count that differs). Damaged files are
    removed with a warning, to be read again from ``path``.
    """
    import datasets

    for file in (arrow_file, skipped_file):
        if file.exists() and not file.is_file():
            raise ValueError(
                f"{file}: a folder where sciembed keeps the papers of {path} as a file; delete it to read them again"
            )
    if not (arrow_file.is_file() and skipped_file.is_file()):
        return None
    try:
        held = json.loads(skipped_file.read_text(encoding="utf-8"))
        dataset = datasets.Dataset.from_file(str(arrow_file))
        if len(dataset) != held["papers"]:
            raise ValueError(f"{len(dataset)} papers where {held['papers']} were written")
        return PaperDataset(str(path), dataset, [PaperProblem(**problem) for problem in held["skipped"]])
    except Exception as error:  # a damaged file: JSON, Arrow and key errors have no common base
        logger.warning("%s: damaged (%s); reading the papers of %s again", arrow_file, error, path)
        arrow_file.unlink()
        skipped_file.unlink()
        return None


def check_paper_source(path: str | os.PathLike[str], option: str | None = None) -> None:
    """Refuses a folder that holds no layout :func:`read_papers` reads, before any work.

    A file is checked as it is read.

    Args:
        path: the papers as given.
        option: the option that gave them (``--input``), for the error.

    Raises:
        ValueError: a folder holding neither a SMART collection nor Parquet parts, naming the layouts read.
    """
    from .smart import is_smart_collection

    path = Path(path)
    if path.is_dir() and not is_smart_collection(path) and not any(path.glob("*.parquet")):
        where = f"{path} ({option})" if option else str(path)
        raise ValueError(
            f"{where} is a folder holding neither a SMART collection (a *.all file) nor Parquet parts (*.parquet); "
            f"give a papers file ({', '.join(SUPPORTED_SUFFIXES)}), one of those folders, or a SMART *.all file"
        )


def _valid_papers(
    path: Path,
    id_field: str | None,
    skip_invalid: bool,
    skipped: list[PaperProblem],
    text_fields: Sequence[str] = TEXT_FIELDS,
    *,
    smart_links: str = "cacm",
    smart: dict[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """The valid papers of ``path`` (any layout of :func:`read_papers`) in its order. Bad records raise, or
    (``skip_invalid``) go to ``skipped``. A SMART collection's document file and citation links are put in ``smart``
    (``path``, ``links``)."""
    from .smart import CACM_CITATION, is_smart_collection, read_smart_collection

    if is_smart_collection(path):
        if id_field not in (None, "paper_id"):
            raise ValueError(
                f"{path} is a SMART collection, whose ids are its .I lines; --id-field (id_field) names a column of a "
                "papers file: leave it out"
            )
        collection = read_smart_collection(path, skip_invalid=skip_invalid, links=smart_links)
        skipped.extend(collection.skipped)
        if smart is not None:
            smart.update(path=collection.path, links=collection.links.get(CACM_CITATION, set()))
        yield from collection.papers
        return
    source = str(path)
    if path.is_dir():
        check_paper_source(path)
        parts = sorted(path.glob("*.parquet"))
        records = (
            (f"{part.name}, {location}", record, key)
            for part in parts
            for location, record, key in _parquet_records(part)
        )
        yield from _checked_papers(
            records, source, id_field, skip_invalid, skipped, whole="whole folder", text_fields=text_fields
        )
        return
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise ValueError(
            f"{path}: unsupported paper file type {suffix!r}; use one of {', '.join(SUPPORTED_SUFFIXES)}, a folder of "
            "Parquet parts or a SMART collection (*.all)"
        )
    records = {".jsonl": _jsonl_records, ".json": _json_records, ".csv": _csv_records, ".parquet": _parquet_records}[
        suffix
    ](path)

    yield from _checked_papers(records, source, id_field, skip_invalid, skipped, text_fields=text_fields)


def _checked_papers(
    records: _Records,
    source: str,
    id_field: str | None,
    skip_invalid: bool,
    skipped: list[PaperProblem],
    whole: str = "whole file",
    text_fields: Sequence[str] = TEXT_FIELDS,
) -> Iterator[dict[str, Any]]:
    """The valid papers of ``records`` in order, with checked unique ids and text in ``text_fields``.

    The records are a reader's, or :func:`paper_records`'. Bad records raise, or (``skip_invalid``) go to
    ``skipped``. ``whole`` names the input as a whole when it holds no valid paper.

    A paper lacking text in some of ``text_fields`` other than title and abstract (no such key, or an empty value,
    as a paper without an abstract) is embedded from those it has, and counted and reported. A field no paper has
    text in is a ``ValueError`` naming the input, the field and the first paper's fields. Records without text are
    held back until a paper with text is found: when none is, the input as a whole is refused (a ``ValueError``
    naming the fields asked for and the fields the records have), not each record."""
    text_fields = text_field_names(text_fields)
    found = 0
    textless: list[PaperProblem] = []  # records without text, while no paper has any
    their_fields: dict[str, None] = {}
    first_location: dict[str, str] = {}
    fields: list[str] | None = None  # the first valid record's, while none of them has an abstract field
    lacking = _LackingText(source, tuple(text_fields))
    for location, record, key in records:
        if isinstance(record, PaperProblem):
            problem = record
        else:
            paper, problem = _validate(record, key, id_field, source, location, lacking.fields)
            if problem is not None and not found and _lacks_text(problem, text_fields):
                textless.append(problem)
                their_fields.update((str(name), None) for name, value in record.items() if value not in (None, ""))
                continue
            if problem is None and textless:  # a paper has text: the records before it lack it alone
                if not skip_invalid:
                    raise InvalidPaperError([textless[0]])
                skipped.extend(textless)
                textless = []
            if problem is None:
                earlier = first_location.get(paper["paper_id"])
                if earlier is not None:
                    problem = PaperProblem(
                        source, location, f"duplicate paper_id (first at {earlier})", paper["paper_id"]
                    )
                else:
                    first_location[paper["paper_id"]] = location
                    found += 1
                    if found == 1 or fields is not None:
                        fields = None if "abstract" in record else (fields or list(record))
                    lacking.add(location, paper)
                    yield paper
                    continue
        if not skip_invalid:
            raise InvalidPaperError([problem])
        skipped.append(problem)

    if fields is not None:
        # A misnamed column (summary, Abstract, text) would otherwise leave every paper as its title alone, unnoticed.
        logger.warning(
            "%s: no record has an abstract field (the first record's fields: %s): the papers are their titles alone; "
            "if a field holds the abstracts, rename it to abstract",
            source,
            ", ".join(map(str, fields)),
        )
    if textless:
        shown = ", ".join(list(their_fields)[:12]) + (
            f", ... ({len(their_fields)} in all)" if len(their_fields) > 12 else ""
        )
        hint = "name the fields that hold the papers' text with --text-fields (text_fields=[...]), or rename them"
        problems = skipped + [replace(problem, hint=hint) for problem in textless]
        reason = (
            f"no valid papers (all {len(problems)} record(s) invalid): none has text in {', '.join(text_fields)}, the "
            f"text fields asked for (--text-fields {' '.join(text_fields)}); the records' fields: {shown or 'none'}"
        )
        raise InvalidPaperError(problems, skipping=True, whole=PaperProblem(source, whole, reason))
    if not found:
        reason = f"no valid papers (all {len(skipped)} record(s) invalid)" if skipped else "no papers"
        raise InvalidPaperError(skipped, skipping=skip_invalid, whole=PaperProblem(source, whole, reason))
    lacking.report()


def _lacks_text(problem: PaperProblem, text_fields: tuple[str, ...]) -> bool:
    """Whether ``problem`` is :func:`_validate`'s for a record without text in ``text_fields``."""
    return problem.reason == "neither title nor abstract" or problem.reason.startswith(
        f"no text in {', '.join(text_fields)};"
    )


class _LackingText:
    """The papers that lack text in some of the text fields a caller names.

    Only the fields beyond title and abstract count.
    """

    def __init__(self, source: str, fields: tuple[str, ...]):
        self.source, self.fields = source, fields
        self.named = [name for name in fields if name not in TEXT_FIELDS]
        self.papers = 0
        self.first = ""  # the first paper's fields with text
        self.has: Counter[str] = Counter()
        self.lines: list[str] = []

    def add(self, location: str, paper: dict[str, Any]) -> None:
        if not self.named:
            return
        self.papers += 1
        shown = ", ".join(str(name) for name, value in paper.items() if value not in (None, ""))
        self.first = self.first or shown
        text = [name for name in self.named if _text_field(paper, name)]
        self.has.update(text)
        missing = [name for name in self.named if name not in text]
        if missing:
            self.lines.append(f"{location} (paper_id {paper['paper_id']!r}): no {', '.join(missing)}; it has {shown}")

    def report(self) -> None:
        absent = [name for name in self.named if self.papers and not self.has[name]]
        if absent:
            raise ValueError(
                f"{self.source}: no paper has text in {', '.join(absent)}, named as a text field (--text-fields "
                f"{' '.join(self.fields)}); the first paper's fields: {self.first}. Name fields the papers have"
            )
        if self.lines:
            more = f"\n  ... and {len(self.lines) - 10} more" if len(self.lines) > 10 else ""
            logger.warning(
                "%s: %d of %d papers lack text in some of the text fields (%s), and are embedded from the others:"
                "\n  %s%s",
                self.source,
                len(self.lines),
                self.papers,
                " ".join(self.fields),
                "\n  ".join(self.lines[:10]),
                more,
            )


# Each record source yields (location, record or PaperProblem, key-as-id or None).
_Records = Iterator[tuple[str, Any, "str | None"]]


# Text files are read as UTF-8, a leading byte-order mark allowed; bytes that are not UTF-8 are kept as
# surrogates by "surrogateescape" so the reader can name the line that holds them instead of failing the file.
_TEXT = {"encoding": "utf-8-sig", "errors": "surrogateescape"}


def _not_utf8(text: str) -> bool:
    return any("\udc80" <= character <= "\udcff" for character in text)


def _jsonl_records(path: Path) -> _Records:
    with path.open(**_TEXT) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            location = f"line {line_number}"
            if _not_utf8(line):
                yield location, PaperProblem(str(path), location, "not UTF-8 text"), None
                continue
            try:
                yield location, loads_json(line), None
            except (json.JSONDecodeError, RepeatedKeyError) as error:
                yield location, PaperProblem(str(path), location, json_error(error)), None


def _json_records(path: Path) -> _Records:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: not UTF-8 text (byte {error.start})") from None
    try:
        data = loads_json(text)
    except (json.JSONDecodeError, RepeatedKeyError) as error:
        raise ValueError(f"{json_place(path, error)}: {json_error(error)}") from None
    if isinstance(data, list):
        for index, record in enumerate(data):
            yield f"record {index}", record, None
    elif isinstance(data, dict):
        for key, record in data.items():
            yield f"key {key!r}", record, key
    else:
        raise ValueError(
            f"{path}: expected a JSON list of papers or a dict keyed by paper id, got {type(data).__name__}"
        )


def _csv_records(path: Path) -> _Records:
    with path.open(newline="", **_TEXT) as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None:
            return
        _refuse_repeated_columns(path, "line 1", reader.fieldnames)
        width = len(reader.fieldnames)
        for record in reader:
            # line_num is the physical line where the record ends (records may span lines).
            location = f"line {reader.line_num}"
            # DictReader files surplus fields under None and fills missing ones with None: either way the
            # row does not fit the header (an unquoted comma in a title would otherwise lose the abstract).
            fields = (
                width + len(record.get(None) or [])
                if None in record
                else sum(value is not None for value in record.values())
            )
            if fields != width:
                yield (
                    location,
                    PaperProblem(
                        str(path),
                        location,
                        f"{fields} fields where the header names {width} (an unquoted comma or quote?)",
                        _csv_id(record),
                    ),
                    None,
                )
            elif any(_not_utf8(value) for value in record.values()):
                yield location, PaperProblem(str(path), location, "not UTF-8 text", _csv_id(record)), None
            else:
                yield location, record, None


def _parquet_records(path: Path) -> _Records:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises ArrowInvalid and OSError variants for a damaged file
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None
    _refuse_repeated_columns(path, "schema", parquet.schema_arrow.names)
    row = 0
    for batch in parquet.iter_batches(batch_size=_ARROW_BATCH):
        for record in batch.to_pylist():
            row += 1
            yield f"row {row}", record, None


def _refuse_repeated_columns(path: Path, where: str, names: Sequence[str]) -> None:
    """Refuse a header that names a column twice.

    Spaces around a name count as the same name (``title, title``). A record would keep only the last of the two
    values, or one of them under a name no reader looks for.
    """
    repeated = [name for name, count in Counter(str(name).strip() for name in names).items() if count > 1]
    if repeated:
        spelt = sorted({repr(name) for name in names if str(name).strip() == repeated[0]})
        shown = f" ({' and '.join(spelt)})" if len(spelt) > 1 else ""
        raise ValueError(
            f"{path}, {where}: the column {repeated[0]!r} is named twice{shown}; a record would keep only one of its "
            "values: rename or remove one"
        )


def _csv_id(record: dict[Any, Any]) -> str | None:
    value = next((record.get(name) for name in ID_FIELDS if record.get(name)), None)
    return None if value is None or _not_utf8(str(value)) else str(value)


def _validate(
    record: Any,
    key: str | None,
    id_field: str | None,
    source: str,
    location: str,
    text_fields: Sequence[str] = TEXT_FIELDS,
) -> tuple[dict[str, Any], PaperProblem | None]:
    if not isinstance(record, dict):
        return {}, PaperProblem(source, location, f"expected a JSON object, got {type(record).__name__}")
    paper_id, reason = _paper_id(record, key, id_field)
    if reason is not None:
        hint = _ID_FIELD_HINT if reason.startswith("no paper id") else None
        return {}, PaperProblem(source, location, reason, paper_id, hint)
    paper = {**record, "paper_id": paper_id}
    try:
        paper["title"] = _text_field(paper, "title")
        paper["abstract"] = _text_field(paper, "abstract")
        text = [name for name in text_fields if _text_field(paper, name)]
    except TypeError as error:
        return {}, PaperProblem(source, location, str(error), paper_id)
    if not text and tuple(text_fields) == TEXT_FIELDS:
        return {}, PaperProblem(source, location, "neither title nor abstract", paper_id)
    if not text:
        shown = ", ".join(str(name) for name, value in paper.items() if value not in (None, ""))
        return {}, PaperProblem(source, location, f"no text in {', '.join(text_fields)}; it has {shown}", paper_id)
    return paper, None


def _paper_id(record: dict[str, Any], key: str | None, id_field: str | None) -> tuple[str | None, str | None]:
    names = (id_field,) if id_field else ID_FIELDS
    value = next((record[name] for name in names if record.get(name) not in (None, "")), None)
    if key is not None:
        # A key is an id as a record's field is: stripped, so that " 1" and "1" are one id.
        key = key.strip()
        if not key:
            return None, "empty paper id (its key)"
        if value is not None and str(value).strip() != key:
            return key, f"record id {value!r} differs from its key"
        return key, None
    if value is None:
        fields = [str(name) for name in record if name is not None]
        shown = ", ".join(fields[:8]) + (f", ... ({len(fields)} in all)" if len(fields) > 8 else "")
        return None, f"no paper id (looked for {' / '.join(names)}; the record's fields: {shown or 'none'})"
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
        return None, f"paper id must be a string or integer, got {type(value).__name__}"
    paper_id = str(int(value)) if isinstance(value, numbers.Integral) else str(value).strip()
    if not paper_id:
        return None, "empty paper id"
    return paper_id, None
