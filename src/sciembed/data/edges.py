"""Citation edge lists: one citation a line, the citing paper's id, then the cited paper's.

Two layouts are read, the ones citation data is usually shared in:

- **CSV / TSV with a header** naming the two columns ``citing`` and ``cited`` (or ``from`` / ``to``, or
  ``source`` / ``target``, any case). Other columns are ignored, so hep-th's ``,from,to,date_x,...`` reads as
  it is. A tab in the header line makes the file TSV, else it is CSV (quoted fields allowed).
- **SNAP edge lists** (``Cit-HepTh.txt``): ``#`` comment lines, then ``citing<TAB>cited`` lines, no header.

Ids are the strings written, blanks around them removed (``0001001`` and ``1001`` are different ids). Blank
lines and ``#`` lines are not citations and are skipped. Nothing else is dropped here: self-citations,
repeats and ids without a paper are counted by the citation graph built from the edges
(:meth:`~sciembed.data.graph.CitationGraph.from_edges`), which logs them in one line.

The file is parsed by pyarrow's CSV reader into Arrow string arrays (so millions of edges cost Arrow
memory, not Python objects). A file that is not an edge list stops at once with a :class:`ValueError` naming
the file, the line and what is wrong: an empty file, a header that is not recognised, a line whose number
of fields differs from the header's (a line with one column), an empty id, bytes that are not UTF-8.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..choices import StrChoice

#: Header names of the (citing, cited) columns, compared without case.
HEADER_NAMES = (("citing", "cited"), ("from", "to"), ("source", "target"))
LAYOUTS = ("csv", "tsv", "snap")

_EXPECTED = (
    "a header naming the citing and cited columns (citing,cited; from,to; source,target) separated by "
    "commas or tabs, or SNAP's layout (# comment lines, then citing<TAB>cited lines)"
)


class EdgeLayout(StrChoice):
    """The layout of a citation edge list."""

    CSV = "csv"
    TSV = "tsv"
    SNAP = "snap"


#: The delimiter of each layout.
_DELIMITERS = {EdgeLayout.CSV: ",", EdgeLayout.TSV: "\t", EdgeLayout.SNAP: "\t"}


@dataclass(frozen=True)
class EdgeList:
    """The citations of one file, ``citing[k]`` cites ``cited[k]``, as Arrow ``large_string`` arrays in file order.

    Attributes:
        path: the file.
        citing, cited: the ids, one entry per citation line.
        layout: ``csv``, ``tsv`` or ``snap``.
        columns: the header's names of the citing and cited columns (``None`` for SNAP).
        comment_lines: ``#`` lines skipped.
    """

    path: str
    citing: Any
    cited: Any
    layout: EdgeLayout
    columns: tuple[str, str] | None
    comment_lines: int

    def __len__(self) -> int:
        return len(self.citing)


def read_edge_list(path: str | os.PathLike[str]) -> EdgeList:
    """Read a citation edge list (see the module docstring for the layouts).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds no citation, its first line is neither a recognised header nor (after ``#``
            comments) a SNAP line, or a line does not fit: the file, the line and the reason are named, with the
            number of such lines.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    start, first, comments = _first_line(path)
    if first is None:
        raise ValueError(
            f"{path}: no citations ({'only # comment lines' if comments else 'an empty file'}); expected {_EXPECTED}"
        )
    layout = EdgeLayout.TSV if "\t" in first else EdgeLayout.CSV
    delimiter = _DELIMITERS[layout]
    names = next(csv.reader([first], delimiter=delimiter))
    columns = _header_columns(names)
    if columns is not None:
        skip = start
    elif comments and layout is EdgeLayout.TSV and len(names) == 2:
        layout, skip, columns = EdgeLayout.SNAP, start - 1, (0, 1)
    elif len(names) == 1:
        raise ValueError(f"{path}, line {start}: one column ({first!r}); expected {_EXPECTED}")
    else:
        raise ValueError(f"{path}, line {start}: header not recognised ({first!r}); expected {_EXPECTED}")

    width = len(names)
    skipped: list[int] = []  # pyarrow's numbers of the rows it left out: `#` lines and misfits
    misfits: dict[str, Any] = {
        "first": None,
        "count": 0,
    }  # the first kept, the rest counted: a file of misfits stays small

    def invalid(row: Any) -> str:
        skipped.append(row.number)
        if not row.text.strip().startswith("#"):
            misfits["first"] = misfits["first"] or row
            misfits["count"] += 1
        return "skip"

    fields = [f"f{i}" for i in range(width)]
    wanted = [fields[columns[0]], fields[columns[1]]]
    read = list(dict.fromkeys([fields[0], *wanted]))  # the first field too: it tells a `#` line
    try:
        table = pacsv.read_csv(
            path,
            # One thread: pyarrow numbers the rows it hands to `invalid` only when it parses them in order.
            read_options=pacsv.ReadOptions(skip_rows=skip, column_names=fields, use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, quote_char='"' if layout is EdgeLayout.CSV else False, invalid_row_handler=invalid
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=read,
                column_types={name: pa.large_string() for name in read},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as error:
        line = _first_non_utf8_line(path)
        where = f", line {line}: not UTF-8 text" if line else ""
        raise ValueError(f"{path}{where} ({error})") from None
    if misfits["count"]:
        row, count = misfits["first"], misfits["count"]
        [line] = _physical_lines(path, skip, [row.number])
        what = "one column" if row.actual_columns == 1 else f"{row.actual_columns} fields"
        expected = "SNAP lines have" if layout is EdgeLayout.SNAP else "the header names"
        raise ValueError(
            f"{path}, line {line}: {what} ({row.text.strip()!r}) where {expected} {width}; {count} line(s) in all "
            f"without {width} fields"
        )
    # A `#` line that holds the delimiter (SNAP's "# FromNodeId<TAB>ToNodeId" repeated mid-file) parses as a row.
    comment = pc.starts_with(pc.utf8_ltrim_whitespace(table.column(fields[0])), "#").to_numpy(zero_copy_only=False)
    citing, cited = (pc.utf8_trim_whitespace(table.column(name).combine_chunks()) for name in wanted)
    for role, ids in (("citing", citing), ("cited", cited)):
        empty = pc.equal(ids, "").to_numpy(zero_copy_only=False) & ~comment
        if empty.any():
            [line] = _physical_lines(path, skip, [_row_number(int(empty.argmax()), skip, skipped)])
            raise ValueError(f"{path}, line {line}: empty {role} id; {int(empty.sum())} such line(s) in all")
    if comment.any():
        keep = pa.array(~comment)
        citing, cited = citing.filter(keep), cited.filter(keep)
    if not len(citing):
        raise ValueError(
            f"{path}: no citations after {'line' if layout is EdgeLayout.SNAP else 'the header at line'} {start}"
        )
    header = None if layout is EdgeLayout.SNAP else (names[columns[0]].strip(), names[columns[1]].strip())
    return EdgeList(str(path), citing, cited, layout, header, comments + len(skipped) + int(comment.sum()))


def _first_line(path: Path) -> tuple[int, str | None, int]:
    """The number and text of the first line that holds data.

    The number and text of the first line that is neither blank nor a ``#`` comment (``None`` if there is none), and
    the number of ``#`` lines before it.
    """
    comments = 0
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.rstrip("\r\n")
            if text.lstrip().startswith("#"):
                comments += 1
            elif text.strip():
                return number, text, comments
    return 0, None, comments


def _header_columns(names: list[str]) -> tuple[int, int] | None:
    """Positions of the citing and cited columns when ``names`` is a recognised header."""
    folded = [name.strip().lower() for name in names]
    for citing, cited in HEADER_NAMES:
        if citing in folded and cited in folded:
            return folded.index(citing), folded.index(cited)
    return None


def _row_number(index: int, skip: int, skipped: list[int]) -> int:
    """pyarrow's number of the table's row ``index``.

    Rows are numbered after the ``skip`` skipped lines, including the rows the invalid-row handler left out
    (``skipped``, in order).
    """
    number = skip + index + 1
    for left_out in skipped:
        if left_out <= number:
            number += 1
    return number


def _physical_lines(path: Path, skip: int, numbers: list[int]) -> list[int]:
    """The file's line numbers of pyarrow's row ``numbers``.

    Pyarrow counts the ``skip`` skipped lines, then only the lines that are not blank (read again only on the way to an
    error message).
    """
    wanted = {number - skip: number for number in numbers}
    found: dict[int, int] = {}
    counted = 0
    with path.open("rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line_number <= skip or not line.strip(b"\r\n"):
                continue
            counted += 1
            if counted in wanted:
                found[wanted[counted]] = line_number
                if len(found) == len(wanted):
                    break
    return [found.get(number, number) for number in numbers]


def _first_non_utf8_line(path: Path) -> int | None:
    with path.open("rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return line_number
    return None
