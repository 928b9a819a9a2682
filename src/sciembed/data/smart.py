"""SMART test collections (CACM, CISI style): ``.I`` records with ``.T .W .B .A .K .C .N .X`` fields.

Queries (``query.text``: ``.I`` records whose ``.W`` is the query) and relevance judgements
(``qrels.text``: ``qid docid 0 0`` lines) are read by :func:`read_smart_queries` and
:func:`read_smart_qrels`. Numeric ids are normalised (``01`` -> ``1``) so they match the documents.

In CACM the ``.X`` lines of record R read ``other<TAB>type<TAB>R``. Type 5 means a citation link
(R cites other, other cites R, or other == R), 6 co-citation, 4 bibliographic coupling. Each link is
listed from both ends and pairs repeat, so the reader keeps each undirected pair once and counts what
it dropped (repeats, self pairs, links to ids without a record) in :attr:`SmartCollection.link_stats`,
and logs these counts for every link type in one line.

Other SMART collections share the layout but not the meaning: CISI's ``.X`` lines read
``other<TAB>weight<TAB>R``, the middle column a count (mostly 1), not a link type. The ``links`` option of
:func:`read_smart_collection` says how to read the middle column: ``cacm`` (the default) as CACM's link
types, refusing a file whose middle column holds anything else (with the counts of each value and an
example line) rather than reading weights as types. ``all`` as no type at all: every ``.X`` pair is a
citation link, stored under :data:`CACM_CITATION`. File names are matched without case (``CISI.ALL``).
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..choices import StrChoice, choices
from .problems import InvalidPaperError, PaperProblem, paper_id_order

if TYPE_CHECKING:
    from datasets import Dataset

logger = logging.getLogger(__name__)

CACM_COUPLING = 4
CACM_CITATION = 5
CACM_COCITATION = 6
CACM_LINK_TYPES = {CACM_COUPLING: "coupling", CACM_CITATION: "citation", CACM_COCITATION: "co-citation"}


#: How ``.X`` lines are read (the ``links`` option of :func:`read_smart_collection`, ``--smart-links`` of the CLI):
#: ``cacm``: the middle column is CACM's link type (4, 5, 6), any other value is refused; ``all``: every pair is
#: a citation link, whatever its middle column.
class LinkReading(StrChoice):
    """How a SMART collection's ``.X`` lines are read."""

    CACM = "cacm"
    ALL = "all"


LINK_READINGS = choices(LinkReading)

_FIELDS = {
    "T": "title",
    "W": "abstract",
    "B": "date",
    "A": "authors",
    "N": "entry",
    "X": "links",
    "K": "keywords",
    "C": "categories",
}
_RECORD = re.compile(r"^\.I\s+(\S+)\s*$")
_FIELD = re.compile(r"^\.([A-Z])\s*$")
#: A line that starts like a record line but is not one (``.I4``, ``.i 4``, `` .I 4``, ``.I``, ``.I 4 x``).
_BROKEN_RECORD = re.compile(r"^\s*\.[Ii](\s|\d|$)")
#: Words in a line of ``.X`` links: text, not links.
_WORD = re.compile(r"[^\W\d_]{2,}")
_MONTH = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
#: The shapes of the lines of CACM's formal fields. A line of one field with the shape of another is the other's
#: text after a lost marker; a shape counts in a file only when most of that field's lines there have it.
_SHAPES = {
    "B": re.compile(rf"(?:[A-Z][\w.&]*\s+)*{_MONTH},?\s*(?:\d{{1,2}},\s*)?\d{{4}}"),  # CACM December, 1958
    "N": re.compile(
        rf"\S+.*\b{_MONTH}\s*\d{{1,2}},\s*\d{{4}}\s*\d{{1,2}}:\d{{2}}\s*[AP]M"
    ),  # CA581203 JB March 22, ...
    "C": re.compile(r"(?=.*\d\.\d)\d+(?:\.\d+)*\.?(?:[\s,;]+\d+(?:\.\d+)*\.?)*[,;]?"),  # ``1.3 2.4``
    "A": re.compile(r"[A-Z][\w'`.\-]*(?: [A-Za-z][\w'`.\-]*)*,\s*(?:[A-Z][a-z]?\.\s*)+"),  # Perlis, A. J.
}
#: A phrase of keywords ends in a lower-case word. Among the lines of a field with a shape, a line of such phrases
#: between commas is the keywords' text after a lost ``.K`` marker; in a title or an abstract such a line is prose.
_KEYWORD_ITEM = re.compile(r"(?:.*\s)?[a-z][a-z\-]+")
#: A title is taken for one holding its abstract (a lost ``.W``) when it has more than this many times the words
#: of the longest ordinary title of the file (one of at most three times the median).
_LONG_TITLE = 2


@dataclass
class SmartCollection:
    """Papers with text, undirected ``.X`` links by CACM link type, and the records skipped.

    ``link_reading`` is how the ``.X`` lines were read (:data:`LINK_READINGS`): with ``all`` every link is
    under :data:`CACM_CITATION`.
    """

    path: str
    papers: list[dict[str, Any]]
    links: dict[int, set[tuple[str, str]]]
    link_stats: dict[int, Counter] = field(default_factory=dict)
    skipped: list[PaperProblem] = field(default_factory=list)
    link_reading: str = "cacm"

    def neighbours(self, link_type: int = CACM_CITATION) -> dict[str, set[str]]:
        """Each paper id's linked ids for one link type (both directions)."""
        result: dict[str, set[str]] = defaultdict(set)
        for a, b in self.links.get(link_type, ()):
            result[a].add(b)
            result[b].add(a)
        return dict(result)


def is_smart_collection(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a SMART document file (``*.all``, any case) or a folder holding one."""
    path = Path(path)
    return bool(_document_files(path)) if path.is_dir() else path.suffix.lower() == ".all"


def read_smart_collection(
    path: str | os.PathLike[str], *, skip_invalid: bool = False, links: str = "cacm"
) -> SmartCollection:
    """Read a SMART document file such as CACM's ``cacm.all`` (or a folder holding ``cacm.all``).

    Args:
        path: the document file, or a folder with exactly one ``*.all`` file (any case: ``CISI.ALL``).
        skip_invalid: skip records with a repeated id or with neither title nor abstract (listing them
            in ``skipped``) instead of raising :class:`~sciembed.data.papers.InvalidPaperError`. Links
            stay in ``links`` either way, so papers without text remain part of the graph.
        links: how to read the ``.X`` lines' middle column (:data:`LINK_READINGS`): ``cacm``, CACM's link
            types. ``all``, every pair a citation link whatever the middle column (CISI's weights).

    Raises:
        InvalidPaperError: a bad record and ``skip_invalid`` is false. A record whose field holds a line with
            the shape of another field (a date, an entry stamp, category codes, an author, keywords) names the
            line and the marker it probably lost. A title far longer than the file's others (a lost ``.W``) and
            a second line in a field of one line elsewhere are warnings naming the records.
        ValueError: a line outside any record, an unknown field marker, a malformed ``.X`` line, link lines in a
            text field (a lost ``.X`` line), or (with
            ``links="cacm"``) ``.X`` lines whose middle column is not a CACM link type: their count per value
            and the first of them are named, with the option that reads them.
    """
    if links not in LINK_READINGS:
        raise ValueError(f"unknown .X link reading {links!r}; one of {', '.join(LINK_READINGS)}")
    links = LinkReading(links)
    path = _document_file(Path(path))
    records = list(_parse(path))
    if links is LinkReading.CACM:
        _check_cacm_link_types(path, records)
    lost = _lost_markers(path, [record for _, record in records])
    _warn_long_titles(path, records)
    papers: list[dict[str, Any]] = []
    skipped: list[PaperProblem] = []
    first_line: dict[str, int] = {}
    raw_links: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for index, (line_number, record) in enumerate(records):
        paper_id = record["paper_id"]
        foreign = [link for link in record["links"] if _normal_id(link[4]) != _normal_id(paper_id)]
        reasons = []
        if record["stray"]:
            reasons.append(
                f"text between .I and the first field ({record['stray'][:40]!r}; "
                "a broken id line, or a lost field marker?)"
            )
        if paper_id in first_line:
            reasons.append(f"duplicate id (first at line {first_line[paper_id]})")
        if record["merged"]:
            reasons.append(f"{record['merged'][1]}: a missing .I line?")
        elif index in lost:
            reasons.append(lost[index])
        if foreign:
            owners = ", ".join(sorted({link[4] for link in foreign}, key=paper_id_order))
            reasons.append(
                f"its .X lines from line {foreign[0][0]} name the record {owners}"
                + ("" if record["stray"] or record["merged"] else ": a missing .I line?")
            )
        problem = None
        if reasons:
            problem = PaperProblem(str(path), f"line {line_number}", "; ".join(reasons), paper_id)
        else:
            first_line[paper_id] = line_number
            for _, _, other, link_type, owner in record["links"]:
                raw_links[link_type if links is LinkReading.CACM else CACM_CITATION].append((other, owner))
            if not record["title"] and not record["abstract"]:
                problem = PaperProblem(str(path), f"line {line_number}", "neither title nor abstract", paper_id)
        if problem is None:
            papers.append(
                {key: value for key, value in record.items() if key not in ("links", "stray", "merged", "fields")}
            )
            continue
        if not skip_invalid:
            raise InvalidPaperError([problem])
        skipped.append(problem)

    kept, stats = {}, {}
    for link_type, pairs in raw_links.items():
        kept[link_type], stats[link_type] = _undirected(pairs, set(first_line))
    _log_counts(path, len(papers), len(skipped), stats, links)
    if skipped:
        logger.warning("%s: skipped %d record(s): %s", path, len(skipped), "; ".join(map(str, skipped)))
    return SmartCollection(str(path), papers, kept, stats, skipped, links)


def _check_cacm_link_types(path: Path, records: list[tuple[int, dict[str, Any]]]) -> None:
    """Refuse ``.X`` lines whose middle column is not one of CACM's link types.

    Another collection's (CISI's weights) read as types would turn a few pairs into citations and drop the rest without
    a word.
    """
    foreign: Counter = Counter()
    first: tuple[int, str] | None = None
    total = 0
    for _, record in records:
        for line_number, text, _, link_type, _ in record["links"]:
            total += 1
            if link_type not in CACM_LINK_TYPES:
                foreign[link_type] += 1
                first = first or (line_number, text)
    if foreign:
        values = ", ".join(f"{value} on {count} line(s)" for value, count in foreign.most_common(5))
        more = f" and {len(foreign) - 5} other value(s)" if len(foreign) > 5 else ""
        raise ValueError(
            f"{path}: {sum(foreign.values())} of {total} .X lines have a middle column that is not a CACM link type "
            f"(4 coupling, 5 citation, 6 co-citation): {values}{more}; the first, line {first[0]}: {first[1]!r}. "
            "Such lines come from another SMART collection (CISI's middle column is a weight). To read every .X pair "
            "as a citation link whatever its middle column, pass links='all' (on the command line: --smart-links all)"
        )


def _is_keyword_line(line: str) -> bool:
    """Whether a line reads as keywords.

    Keywords are phrases between commas that end in a lower-case word: two or more of them, or nothing else.
    """
    items = [item.strip() for item in line.split(",") if item.strip()]
    lower = sum(bool(_KEYWORD_ITEM.fullmatch(item)) for item in items)
    return lower >= 2 or lower == len(items) > 0


def _lost_markers(path: Path, records: list[dict[str, Any]]) -> dict[int, str]:
    """The records whose fields hold another field's lines after a lost marker.

    They are keyed by index, each with the reason.

    Args:
        path: the document file, named in the warning.
        records: the parsed records, in file order.

    Only what the file itself shows counts: a shape of :data:`_SHAPES` when most of its field's lines in the file
    have it, keywords when most ``.K`` lines read as keywords. A line of one field with another's shape is an
    error. A second line, of no known shape, in a field that holds one line in every other record is a warning.
    """

    def lines_of(marker: str) -> list[str]:
        return [line.strip() for record in records for _, line in record["fields"].get(marker, ()) if line.strip()]

    def mostly(lines: list[str], test) -> bool:
        return len(lines) >= 2 and sum(map(bool, map(test, lines))) * 5 >= len(lines) * 4

    shapes = {marker: shape for marker, shape in _SHAPES.items() if mostly(lines_of(marker), shape.fullmatch)}
    keywords = mostly(lines_of("K"), _is_keyword_line)
    sizes: dict[str, Counter] = defaultdict(Counter)
    for record in records:
        for marker, held in record["fields"].items():
            sizes[marker][sum(1 for _, line in held if line.strip()) > 1] += 1
    one_line = {
        marker for marker, size in sizes.items() if size[False] >= 2 and size[True] <= max(1, size[False] // 100)
    }
    found: dict[int, str] = {}
    odd: list[str] = []
    for index, record in enumerate(records):
        for marker, held in record["fields"].items():
            own = shapes.get(marker)
            for position, (line_number, line) in enumerate((n, t.strip()) for n, t in held if t.strip()):
                if own is not None and own.fullmatch(line):
                    continue
                other = next((m for m, shape in shapes.items() if m != marker and shape.fullmatch(line)), None)
                if other is None and keywords and marker in _SHAPES and _is_keyword_line(line):
                    other = "K"
                if other is not None:
                    found[index] = (
                        f"line {line_number} ({line[:60]!r}), in its .{marker} field, has the shape of a .{other} "
                        f"line: a lost .{other} marker? Put '.{other}' on the line before it"
                    )
                    break
                if position and marker in one_line:
                    odd.append(f"{record['paper_id']} (line {line_number}: {line[:40]!r} in its .{marker} field)")
                    break
            if index in found:
                break
    if odd:
        logger.warning(
            "%s: %d record(s) hold a second line in a field that is one line in every other record (a lost field "
            "marker before it?): %s",
            path,
            len(odd),
            "; ".join(odd[:10]) + (f"; and {len(odd) - 10} more" if len(odd) > 10 else ""),
        )
    return found


def _warn_long_titles(path: Path, records: list[tuple[int, dict[str, Any]]]) -> None:
    """Warns of titles far longer than the file's ordinary ones.

    A lost ``.W`` marker puts the abstract in the title.
    """
    words = sorted(len(record["title"].split()) for _, record in records if record["title"])
    if len(words) < 5:
        return
    ordinary = max(size for size in words if size <= 3 * max(words[len(words) // 2], 1))
    long = [
        f"{record['paper_id']} (line {line_number}, {len(record['title'].split())} words)"
        for line_number, record in records
        if len(record["title"].split()) > _LONG_TITLE * ordinary
    ]
    if long:
        logger.warning(
            "%s: %d record(s) have a title far longer than the file's others (at most %d words): %s; "
            "a lost .W line before the abstract?",
            path,
            len(long),
            ordinary,
            "; ".join(long[:10]) + (f"; and {len(long) - 10} more" if len(long) > 10 else ""),
        )


def _log_counts(path: Path, papers: int, skipped: int, stats: dict[int, Counter], reading: str) -> None:
    """The reader's counts in one line.

    Papers, then per link type the .X lines read and the undirected links kept (each link is listed from both of its
    records, so about half the lines are repeats).
    """

    def kind(link_type: int) -> str:
        return (
            "citation links (every .X line, links='all')"
            if reading == LinkReading.ALL
            else f"type {link_type} ({CACM_LINK_TYPES[link_type]})"
        )

    parts = [
        f"{kind(t)}: {s['lines']} lines -> {s['pairs']} undirected links ({s['repeats']} repeats, {s['self_pairs']} "
        f"self pairs, {s['dangling']} naming no record)"
        for t, s in sorted(stats.items(), key=lambda item: item[0] != CACM_CITATION)
    ]
    logger.info(
        "%s: %d papers with text, %d record(s) skipped; .X %s", path, papers, skipped, "; ".join(parts) or "no lines"
    )


def read_smart_queries(path: str | os.PathLike[str]) -> Dataset:
    """Read SMART queries (CACM's ``query.text``) as a Dataset with ``query_id``, ``text`` and ``authors``.

    Raises:
        ValueError: a malformed file (see :func:`read_smart_collection`), a repeated query id, a query
            holding another field's lines (a lost marker), or a query without text, naming the file and line.
    """
    from datasets import Dataset

    path = Path(path)
    rows: dict[str, list] = {"query_id": [], "text": [], "authors": []}
    first_line: dict[str, int] = {}
    records = list(_parse(path))
    lost = _lost_markers(path, [record for _, record in records])
    for index, (line_number, record) in enumerate(records):
        query_id = _normal_id(record["paper_id"])
        if query_id in first_line:
            raise ValueError(
                f"{path}, line {line_number}: duplicate query id {query_id!r} (first at line {first_line[query_id]})"
            )
        if record["merged"]:
            at, what = record["merged"]
            raise ValueError(
                f"{path}, line {at}: {what}, in query {query_id!r} (line {line_number}): a missing .I line?"
            )
        if index in lost:
            raise ValueError(f"{path}, line {line_number}: query {query_id!r}: {lost[index]}")
        if not record["abstract"]:
            raise ValueError(f"{path}, line {line_number}: query {query_id!r} has no .W text")
        first_line[query_id] = line_number
        rows["query_id"].append(query_id)
        rows["text"].append(record["abstract"])
        rows["authors"].append(record["authors"])
    if not rows["query_id"]:
        raise ValueError(f"{path}: no queries")
    return Dataset.from_dict(rows)


def read_smart_qrels(
    path: str | os.PathLike[str],
    *,
    query_ids: set[str] | None = None,
    paper_ids: set[str] | None = None,
    skip_invalid: bool = False,
    qrels_columns: str | None = None,
) -> Dataset:
    """Read SMART relevance judgements as a Dataset of qrels.

    Read SMART relevance judgements (``qid docid 0 0`` lines) as a Dataset with ``query_id``, ``cand_id`` and ``score``
    (1: SMART judgements are binary), the columns of the other qrel readers.

    Args:
        query_ids, paper_ids: the known queries and documents. Judgements naming others are errors
            (or, with ``skip_invalid``, skipped and counted in the log).
        qrels_columns: the order of the query and document columns, when stated
            (:func:`~sciembed.data.judgements.check_qrels_columns`). Unstated, a file whose ids or shape say they
            are swapped is refused.

    Raises:
        ValueError: a line without four fields, a repeated judgement, columns that look swapped, or (unless
            ``skip_invalid``) unknown ids, naming the file and line.
    """
    from datasets import Dataset

    from .judgements import check_qrels_columns

    path = Path(path)
    read: dict[str, list] = {"query_id": [], "cand_id": [], "line": []}
    seen: dict[tuple[str, str], int] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise ValueError(f"{path}, line {line_number}: expected 'qid docid 0 0', got {line.strip()!r}")
            pair = (_normal_id(fields[0]), _normal_id(fields[1]))
            if pair in seen:
                raise ValueError(f"{path}, line {line_number}: judgement {pair} repeats line {seen[pair]}")
            seen[pair] = line_number
            read["query_id"].append(pair[0])
            read["cand_id"].append(pair[1])
            read["line"].append(line_number)
    read = check_qrels_columns(
        path,
        read,
        qrels_columns=qrels_columns,
        known_queries=query_ids,
        known_documents=paper_ids,
        layout="'qid docid 0 0'",
    )
    rows: dict[str, list] = {"query_id": [], "cand_id": [], "score": []}
    unknown: list[str] = []
    for query, paper, line_number in zip(read["query_id"], read["cand_id"], read["line"]):
        if (query_ids is not None and query not in query_ids) or (paper_ids is not None and paper not in paper_ids):
            unknown.append(f"line {line_number} {(query, paper)}")
            continue
        rows["query_id"].append(query)
        rows["cand_id"].append(paper)
        rows["score"].append(1)
    if unknown:
        message = f"{path}: {len(unknown)} judgement(s) name unknown queries or papers: {', '.join(unknown[:5])}"
        if not skip_invalid:
            raise ValueError(message + " (pass skip_invalid=True to skip them)")
        logger.warning("%s; skipped", message)
    return Dataset.from_dict(rows)


def _normal_id(value: str) -> str:
    return str(int(value)) if value.isdigit() else value


def _document_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".all" and p.is_file())


def _document_file(path: Path) -> Path:
    if path.is_dir():
        candidates = _document_files(path)
        if len(candidates) != 1:
            raise ValueError(f"{path}: expected one SMART document file (*.all, any case), found {len(candidates)}")
        return candidates[0]
    return path


def _parse(path: Path):
    record: dict[str, Any] | None = None
    start = 0
    current: str | None = None
    lines: dict[str, list] = {}
    markers: dict[str, int] = {}  # the record's field markers -> the line of each
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line_number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            if match := _RECORD.match(line):
                if record is not None:
                    yield start, _finish(record, lines, path)
                record, start, current, lines = {"paper_id": match.group(1)}, line_number, None, defaultdict(list)
                markers = {}
            elif _BROKEN_RECORD.match(line):
                raise ValueError(
                    f"{path}, line {line_number}: {line[:40]!r} is not a record line '.I <id>' (a broken .I line?)"
                )
            elif match := _FIELD.match(line):
                if match.group(1) not in _FIELDS:
                    raise ValueError(f"{path}, line {line_number}: unknown field marker {line!r}")
                if record is None:
                    raise ValueError(
                        f"{path}, line {line_number}: field marker {line!r} before the first .I record "
                        "(a missing .I line?)"
                    )
                marker = match.group(1)
                if marker in markers and "merged" not in record:
                    record["merged"] = (
                        line_number,
                        f"a second .{marker} field at line {line_number} (the first at line {markers[marker]})",
                    )
                elif "X" in markers and marker != "X" and "merged" not in record:
                    # .X, the links, ends a record: a field after it starts another record.
                    record["merged"] = (
                        line_number,
                        f"a .{marker} field at line {line_number} after the record's .X lines (line {markers['X']})",
                    )
                markers[marker] = line_number
                current = _FIELDS[match.group(1)]
            elif current is not None:
                lines[current].append((line_number, line))
            elif record is not None:
                lines["stray"].append((line_number, line))
            elif line.strip():
                raise ValueError(
                    f"{path}, line {line_number}: text before the first .I record: {line[:60]!r} (a missing .I line?)"
                )
    if record is not None:
        yield start, _finish(record, lines, path)


def _finish(record: dict[str, Any], lines: dict[str, list], path: Path) -> dict[str, Any]:
    def text(name: str) -> str:
        return " ".join(" ".join(line for _, line in lines.get(name, [])).split())

    _check_lost_links(record, lines, path)
    links = []
    for line_number, line in lines.get("links", []):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit():
            raise ValueError(
                f"{path}, line {line_number}: .X line must be 'id<TAB>type<TAB>id', got {line!r}, in record "
                f"{record['paper_id']!r}"
                + (": another record's text after its .X lines, a missing .I line?" if _WORD.search(line) else "")
            )
        links.append((line_number, line, parts[0], int(parts[1]), parts[2]))
    return {
        "merged": None,
        **record,
        "title": text("title"),
        "abstract": text("abstract"),
        "date": text("date"),
        "authors": [author.strip() for _, author in lines.get("authors", []) if author.strip()],
        "keywords": text("keywords"),
        "categories": text("categories"),
        "links": links,
        "stray": text("stray"),
        "fields": {marker: lines[name] for marker, name in _FIELDS.items() if name in lines and marker != "X"},
    }


def _is_link_line(line: str, owner: str) -> bool:
    """Whether a line of the record ``owner`` reads as an ``.X`` link triple.

    A triple is three whole numbers, tab-separated or ending in the record's own id (``other n owner``).
    """
    parts = line.split()
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return False
    return "\t" in line or _normal_id(parts[2]) == _normal_id(owner)


def _check_lost_links(record: dict[str, Any], lines: dict[str, list], path: Path) -> None:
    """Refuse a text field holding link triples: the ``.X`` line before them was lost."""
    names = {name: marker for marker, name in _FIELDS.items()}
    for name, held in lines.items():
        if name == "links":
            continue
        first = next((number for number, line in held if _is_link_line(line, record["paper_id"])), None)
        if first is not None:
            place = "before the first field" if name == "stray" else f"in its .{names[name]} field"
            raise ValueError(
                f"{path}, line {first}: the record {record['paper_id']!r} holds link lines ('id<TAB>n<TAB>id') "
                f"{place}: a lost .X line? Put '.X' on the line before them"
            )


def _undirected(pairs: list[tuple[str, str]], known: set[str]) -> tuple[set[tuple[str, str]], Counter]:
    stats: Counter = Counter(lines=len(pairs))
    result: set[tuple[str, str]] = set()
    for a, b in pairs:
        if a == b:
            stats["self_pairs"] += 1
            continue
        if a not in known or b not in known:
            stats["dangling"] += 1
            continue
        pair = (a, b) if paper_id_order(a) <= paper_id_order(b) else (b, a)
        if pair in result:
            stats["repeats"] += 1
        result.add(pair)
    stats["pairs"] = len(result)
    return result, stats
