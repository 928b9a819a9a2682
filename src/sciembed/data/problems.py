"""What paper readers report about unusable records, and the order paper ids sort in.

A leaf of ``sciembed.data``: the readers of every layout (:mod:`.papers`, :mod:`.smart`, :mod:`.judgements`) import
it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass


def paper_id_order(paper_id: str) -> tuple[int, int, str]:
    """Sort key for paper ids: numeric ids in numeric order, then the others.

    So "9" sorts before "10".
    """
    return (0, int(paper_id), "") if paper_id.isdigit() else (1, 0, paper_id)


@dataclass(frozen=True)
class PaperProblem:
    """One record a reader could not accept. ``hint`` says what fixes it when skipping the record would not (a
    misnamed id field). ``id_name`` names the id in messages: ``paper_id``, or ``query id`` / ``document id`` for
    a judgement row."""

    source: str
    location: str
    reason: str
    paper_id: str | None = None
    hint: str | None = None
    id_name: str = "paper_id"

    def __str__(self) -> str:
        paper = f" ({self.id_name} {self.paper_id!r})" if self.paper_id is not None else ""
        return f"{self.source}, {self.location}{paper}: {self.reason}"


class InvalidPaperError(ValueError):
    """Raised when a paper file holds a record that cannot be used. The message names file, line and id.

    Args:
        problems: the invalid records. The message counts and lists them.
        skipping: the reader was already skipping invalid records (``skip_invalid``), so no hint suggests it.
        whole: a problem with the file as a whole (no papers at all), stated first and not counted as a record.
        what: what the problems are, after their count (rows of a labels or qrels file are not paper records).

    The message ends with the hint that fits the records: their own hints (``--id-field`` for records without
    an id field), else, unless ``skipping``, ``--skip-invalid``.
    """

    def __init__(
        self,
        problems: list[PaperProblem],
        *,
        skipping: bool = False,
        whole: PaperProblem | None = None,
        what: str = "invalid paper record(s)",
    ):
        self.problems, self.whole = problems, whole
        lines = [str(whole)] if whole is not None else []
        if problems:
            shown = "\n  ".join(str(p) for p in problems[:10])
            more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
            lines.append(f"{len(problems)} {what}:\n  {shown}{more}")
        hints = list(dict.fromkeys(p.hint for p in problems if p.hint))
        if not hints and problems and not skipping:
            hints = ["pass skip_invalid=True / --skip-invalid to skip such records and report them"]
        super().__init__("\n".join(lines) + "".join(f"\n({hint})" for hint in hints))
