"""Docstrings and comments say what in short sentences, and carry no measured numbers.

Measured numbers live in ``benchmarks/results/*.json`` and the generated benchmarks page. The README stays short.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import statistics
import tokenize
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
TREES = (ROOT / "src" / "sciembed", ROOT / "modeling")

#: The median words per docstring sentence, as in sentence-transformers.
MAX_MEDIAN_WORDS = 15
#: Semicolons per 100 docstring words (sentence-transformers has about none).
MAX_SEMICOLONS_PER_100_WORDS = 0.2
MAX_README_LINES = 100
#: A docstring opens with one sentence of at most this many words.
MAX_SUMMARY_WORDS = 15

#: Section headers of Google-style docstrings, and the sections that hold code rather than prose.
SECTIONS = re.compile(r"^(Args|Arguments|Parameters|Returns|Yields|Raises|Attributes|Examples?|Notes?|See Also):\s*$")
CODE_SECTIONS = ("Example", "Examples")
#: An argument line: ``name: what it is`` or ``name (type): what it is``.
ARGUMENT = re.compile(r"^\*{0,2}[A-Za-z_][\w.]*(\s*\([^)]*\))?:\s+")
#: Words that end in a full stop without ending a sentence.
ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|vs|cf|approx|al|No|Fig)\.$")
INLINE_CODE = re.compile(r"``[^`]*``|`[^`]*`")

_NUMBER = r"(?<![\w.\-])\d+(?:[.,]\d+)*"
#: A measured number: a decimal, or a number with a unit of time, size, speed, ratio or score.
MEASURED = re.compile(
    rf"{_NUMBER}(?:\s*%|x\b|\s*×(?!\s*\d)|\s*(?:ms|s|seconds?|minutes?|min|h|hours?|days?)\b"
    r"|(?:[KMGT]i?B|bytes?)\b|(?:papers|docs|tokens|it|examples)/s\b"
    r"|(?:MAP|nDCG|MRR|F1|accuracy|points?|pp)\b)"
    rf"|(?<![\w.\-])\d+\.\d+(?![\w.])"
)
#: Numbers that look measured but are not, each with its reason:
#: - versions (``transformers 4.57``, ``Python 3.11``, ``v1.3``) name software;
#: - references (``arXiv:2401.15713``, ``sec. 3.2``, ``Table 2``) point into a paper;
#: - a confidence level (``95% interval``) is a setting;
#: - a decimal written in the same module's code is a default or a constant that the prose names;
#: - ``0.5`` and ``1.0`` are the halves and wholes of probabilities and weights.
NOT_MEASURED_BEFORE = re.compile(
    r"(?:transformers|torch|python|pytorch|onnx|onnxruntime|openvino|nncf|adapters|mteb|faiss|numpy|pyarrow|"
    r"sentence-transformers|ray|opset|version|v|>=|<=|==|<|>|arXiv:|sec\.|section|§|table|figure|fig\.|eq\.)\s*$",
    re.IGNORECASE,
)
NOT_MEASURED_AFTER = re.compile(r"^(?:\.\d|%?\s*(?:confidence|interval|percentile))")
CONSTANTS = {"0.5", "1.0"}


class Sentence(NamedTuple):
    where: str
    text: str

    @property
    def words(self) -> int:
        return sum(1 for token in self.text.split() if re.search(r"[A-Za-z0-9]", token))


def _python_files() -> list[Path]:
    return sorted(path for tree in TREES for path in tree.rglob("*.py") if "__pycache__" not in path.parts)


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """The docstrings of a module, its classes and its functions, each with its first line number."""
    tree = ast.parse(path.read_text())
    found = []
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    found.append((body[0].lineno, ast.get_docstring(node) or ""))
    return sorted(set(found))


def _prose_units(docstring: str) -> list[tuple[int, str]]:
    """The prose of a docstring without code, as units that each start a sentence, with line offsets."""
    units: list[tuple[int, list[str]]] = []
    section, fenced, doctest = None, False, False
    for offset, raw in enumerate(docstring.splitlines()):
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith((">>>", "...")) or (doctest and line):
            doctest = doctest or line.startswith(">>>")
            continue
        doctest = False
        header = SECTIONS.match(line)
        if header:
            section = header.group(1)
            units.append((offset, []))
            continue
        if not line:
            units.append((offset, []))
            continue
        if section in CODE_SECTIONS:
            continue
        if section and ARGUMENT.match(line) and len(raw) - len(raw.lstrip()) <= 4:
            units.append((offset, [ARGUMENT.sub("", line)]))
            continue
        if line.startswith(("- ", "* ")):
            units.append((offset, [line[2:]]))
            continue
        if not units:
            units.append((offset, []))
        units[-1][1].append(line)
    return [(offset, " ".join(lines)) for offset, lines in units if lines]


def _split(text: str) -> list[str]:
    """Sentences of a paragraph, split after ``.``, ``!`` or ``?`` before a space."""
    sentences, current = [], []
    for token in text.split():
        current.append(token)
        end = token.rstrip(")\"'*`")
        if end.endswith((".", "!", "?")) and not ABBREVIATIONS.search(end):
            sentences.append(" ".join(current))
            current = []
    if current:
        sentences.append(" ".join(current))
    return sentences


@functools.cache
def docstring_sentences(description_only: bool = False) -> tuple[Sentence, ...]:
    """Sentences of every docstring, or of its description only: the text before its first section.

    Args:
        description_only: leave out the sections (``Args:``, ``Returns:``, ...), whose entries are short fragments.
    """
    sentences = []
    for path in _python_files():
        for line, docstring in _docstrings(path):
            if description_only:
                lines = docstring.splitlines()
                ends = [i for i, text in enumerate(lines) if SECTIONS.match(text.strip())]
                docstring = "\n".join(lines[: ends[0]] if ends else lines)
            for offset, unit in _prose_units(docstring):
                prose = INLINE_CODE.sub("code", unit)
                sentences += [Sentence(_where(path, line + offset), s) for s in _split(prose)]
    return tuple(sentences)


@functools.cache
def summary_sentences() -> tuple[Sentence, ...]:
    """The first sentence of every docstring."""
    found = []
    for path in _python_files():
        for line, docstring in _docstrings(path):
            units = _prose_units(docstring)
            if units:
                found.append(Sentence(_where(path, line), _split(INLINE_CODE.sub("code", units[0][1]))[0]))
    return tuple(found)


def _comments(path: Path) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(token.start[0], token.string) for token in tokens if token.type == tokenize.COMMENT]


def _code_numbers(path: Path) -> set[str]:
    """Number literals written in a module's code: its defaults and constants."""
    tree = ast.parse(path.read_text())
    return {
        str(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    }


def measured_numbers(path: Path) -> list[tuple[str, str]]:
    """Measured numbers in a module's docstrings and comments, each with file:line and its line."""
    constants = CONSTANTS | _code_numbers(path)
    texts = [(line + offset, text) for line, doc in _docstrings(path) for offset, text in enumerate(doc.splitlines())]
    found = []
    for line, text in sorted(texts + _comments(path)):
        prose = INLINE_CODE.sub("code", text)
        for match in MEASURED.finditer(prose):
            number = re.match(r"\d+(?:[.,]\d+)*", match.group()).group()
            before, after = prose[: match.start()], prose[match.start() + len(number) :]
            if number in constants or NOT_MEASURED_BEFORE.search(before) or NOT_MEASURED_AFTER.match(after):
                continue
            found.append((_where(path, line), text.strip()))
            break
    return found


def test_docstring_sentences_are_short():
    sentences = docstring_sentences(description_only=True)
    median = statistics.median(s.words for s in sentences)
    longest = sorted(sentences, key=lambda s: -s.words)[:20]
    listing = "\n".join(f"{s.where}: ({s.words} words) {s.text}" for s in longest)
    assert median <= MAX_MEDIAN_WORDS, f"median {median} words per docstring sentence; the longest:\n{listing}"


def test_docstrings_open_with_a_short_sentence():
    summaries = summary_sentences()
    median = statistics.median(s.words for s in summaries)
    long = [s for s in summaries if s.words > MAX_SUMMARY_WORDS]
    listing = "\n".join(f"{s.where}: ({s.words} words) {s.text}" for s in long)
    assert median <= MAX_MEDIAN_WORDS, f"docstrings open with sentences of {median} words (median)"
    assert not long, f"docstrings that open with more than {MAX_SUMMARY_WORDS} words:\n{listing}"


def test_docstrings_chain_no_clauses_with_semicolons():
    sentences = docstring_sentences()
    words = sum(s.words for s in sentences)
    chained = [s for s in sentences if ";" in s.text]
    rate = 100 * sum(s.text.count(";") for s in chained) / words
    listing = "\n".join(f"{s.where}: {s.text}" for s in chained)
    assert rate <= MAX_SEMICOLONS_PER_100_WORDS, f"{rate:.2f} semicolons per 100 words, in:\n{listing}"


def test_no_measured_numbers_in_code_prose():
    found = [hit for path in _python_files() for hit in measured_numbers(path)]
    listing = "\n".join(f"{where}: {text}" for where, text in found)
    assert not found, f"measured numbers belong in benchmarks/results/ and the benchmarks page:\n{listing}"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines, at most {MAX_README_LINES}"
