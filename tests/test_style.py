"""Closed sets of choices are typed: few comparisons against string literals in the code.

Counted with ``ast`` over ``src/sciembed`` and ``modeling/``, as issue 55 counts them.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "sciembed"
#: Folders of the package that link to trees counted on their own (the remote code) or hold no code.
LINKED = ("modeling", "hub_cards")
#: ``==`` and ``!=`` against a string constant, per 1,000 lines (sentence-transformers has 4.7).
MAX_STRING_COMPARISONS_PER_1000_LINES = 3.6
#: Membership tests against literal collections of strings, and ``match`` cases on string literals.
MAX_STRING_MEMBERSHIPS = 19


def _is_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_string_collection(node: ast.AST) -> bool:
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts) and all(map(_is_string, node.elts))


@functools.cache
def _sources() -> dict[str, str]:
    """Every module of the package and of the remote code, by its path from the repository root."""
    paths = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in LINKED]
    paths += (ROOT / "modeling").rglob("*.py")
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in paths if "__pycache__" not in p.parts}


def _hits(source: str) -> tuple[int, int]:
    """The string comparisons and string memberships of one module."""
    comparisons = memberships = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                if isinstance(op, (ast.Eq, ast.NotEq)) and (_is_string(left) or _is_string(right)):
                    comparisons += 1
                elif isinstance(op, (ast.In, ast.NotIn)) and _is_string_collection(right):
                    memberships += 1
        elif isinstance(node, ast.MatchValue) and _is_string(node.value):
            memberships += 1
    return comparisons, memberships


def _counts() -> tuple[Counter, Counter, int]:
    comparisons, memberships, lines = Counter(), Counter(), 0
    for path, source in _sources().items():
        lines += len(source.splitlines())
        comparisons[path], memberships[path] = _hits(source)
    return comparisons, memberships, lines


def _worst(counts: Counter) -> str:
    return ", ".join(f"{path} {count}" for path, count in counts.most_common(8) if count)


def test_comparisons_against_string_literals_stay_few():
    comparisons, _, lines = _counts()
    rate = 1000 * sum(comparisons.values()) / lines
    assert rate <= MAX_STRING_COMPARISONS_PER_1000_LINES, (
        f"{sum(comparisons.values())} comparisons against string literals in {lines} lines ({rate:.2f} per 1,000): "
        f"type the closed sets (sciembed.choices.StrChoice, a dict from a member to a function). "
        f"Most in: {_worst(comparisons)}"
    )


def test_string_comparisons_do_not_move_into_memberships_or_match_cases():
    _, memberships, _ = _counts()
    assert sum(memberships.values()) <= MAX_STRING_MEMBERSHIPS, (
        f"{sum(memberships.values())} membership tests against literal strings or match cases on them: type the "
        f"choices rather than move the comparisons. Most in: {_worst(memberships)}"
    )


def test_the_count_sees_each_kind_of_comparison():
    source = 'a == "x"\n"y" != b\nc in ("p", "q")\nmatch d:\n    case "r":\n        pass\ne is E.X\nf in names\n'
    assert _hits(source) == (2, 2)
