"""arXiv listing abstracts, one ``.abs`` file a paper (KDD Cup 2003 / SNAP hep-th: ``abstracts/<year>/<id>.abs``).

A file reads::

    ------------------------------------------------------------------------------
    \\\\
    Paper: hep-th/9201001
    From: ... (the submitter's e-mail address: not kept)
    Date: Tue Dec 31 23:54:17 MET 1991 +0100   (37kb)

    Title: Combinatorics of the Modular Group II: the Kontsevich integrals
    Authors: C. Itzykson and J.-B. Zuber
    Comments: 46 pages
    \\\\
      We study algebraic aspects of Kontsevich integrals ...
    \\\\

Header fields may continue on indented lines. A paper's ``paper_id`` is its number as SNAP's and hep-th's
citation files write it, leading zeros dropped (``hep-th/0001001`` -> ``1001``), so the papers join those edge
lists as they are. ``arxiv_id`` keeps the full identifier. Also kept: ``title``, ``abstract``, ``authors``,
``date`` (the first submission's), ``journal_ref``, ``comments``. Not ``From:``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .papers import InvalidPaperError, PaperFile, PaperProblem

_SEPARATOR = "\\\\"
_FIELD = re.compile(r"^([A-Za-z][A-Za-z -]*?(?: \([^)]*\))?):\s?(.*)$")
#: Header field -> record key; the authors are under ``Authors`` or, on some one-author papers, ``Author``.
_KEPT = {"Paper": "arxiv_id", "Title": "title", "Date": "date", "Journal-ref": "journal_ref", "Comments": "comments"}


def read_arxiv_abstracts(folder: str | os.PathLike[str], *, skip_invalid: bool = False) -> PaperFile:
    """Read every ``*.abs`` file under ``folder`` (its year folders included), in path order.

    Args:
        skip_invalid: skip files that are not a listing (fewer than two ``\\\\`` lines, no ``Paper:`` line, an
            identifier that is not the file's name) or have neither title nor abstract, listing them in
            ``PaperFile.skipped``, instead of raising at the first.

    Raises:
        InvalidPaperError: a bad file (and ``skip_invalid`` is false), or no ``.abs`` file at all. The file is named.
    """
    folder = Path(folder)
    files = sorted(folder.rglob("*.abs"))
    if not files:
        raise InvalidPaperError(
            [], whole=PaperProblem(str(folder), "whole folder", "no .abs files (arXiv listing abstracts)")
        )
    papers: list[dict[str, Any]] = []
    skipped: list[PaperProblem] = []
    for path in files:
        paper, reason = _listing(path)
        if reason is None:
            papers.append(paper)
            continue
        problem = PaperProblem(str(path), "whole file", reason, paper.get("paper_id"))
        if not skip_invalid:
            raise InvalidPaperError([problem])
        skipped.append(problem)
    return PaperFile(str(folder), papers, skipped)


def _listing(path: Path) -> tuple[dict[str, Any], str | None]:
    """The paper of one ``.abs`` file, and why it cannot be used.

    The reason is ``None`` when the paper can be used.
    """
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    separators = [i for i, line in enumerate(lines) if line.strip() == _SEPARATOR]
    if len(separators) < 2:
        return {}, f"not an arXiv listing: {len(separators)} '\\\\' line(s), expected header and abstract between them"
    fields: dict[str, str] = {}
    last = None
    for line in lines[separators[0] + 1 : separators[1]]:
        if line[:1].isspace() and last is not None:  # a field continued on an indented line
            fields[last] += " " + line.strip()
        elif match := _FIELD.match(line):
            last = match.group(1)
            fields.setdefault(last, match.group(2).strip())  # the first "Date:" is the submission's
    end = separators[2] if len(separators) > 2 else len(lines)
    abstract = " ".join(" ".join(lines[separators[1] + 1 : end]).split())
    arxiv_id = fields.get("Paper", "")
    number = arxiv_id.rsplit("/", 1)[-1]
    paper = {
        "paper_id": str(int(number)) if number.isdigit() else number,
        **{key: fields.get(name, "") for name, key in _KEPT.items()},
        "authors": fields.get("Authors") or fields.get("Author", ""),
        "abstract": abstract,
    }
    if not arxiv_id:
        return paper, "no 'Paper:' line"
    if number != path.stem:
        return paper, f"Paper: {arxiv_id} is not the file's name"
    if not paper["title"] and not abstract:
        return paper, "neither title nor abstract"
    return paper, None
