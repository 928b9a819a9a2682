"""Code copied on purpose between remote-code files stays equal to its source (the idea of transformers'
``utils/check_copies.py``).

Each family folder under ``modeling/`` ships alone next to its weights, so shared pieces are repeated,
each copy marked ``# Copied from sciembed.modeling.<family>.<file>.<name>`` (optionally ``with A->B``, a
name replaced throughout). The copy is the top-level definition right after the marker.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

MODELING = Path(__file__).resolve().parents[1] / "modeling"
MARKER = re.compile(r"# Copied from sciembed\.modeling\.(\w+)\.(\w+)\.(\w+)(?: with (\w+)->(\w+))?")


def _definitions(path: Path) -> dict[str, ast.stmt]:
    definitions = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            definitions[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    definitions[target.id] = node
    return definitions


def _source(path: Path, node: ast.stmt) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[start - 1 : node.end_lineno])


def _copies() -> list[tuple[Path, int, re.Match]]:
    found = []
    for path in sorted(MODELING.glob("*/*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if match := MARKER.search(line):
                found.append((path, number, match))
    return found


def test_the_families_mark_their_copies():
    assert len(_copies()) >= 12  # heads, hidden sizes, loss and the head table in each of the three families


@pytest.mark.parametrize("path, line, match", _copies(), ids=lambda value: getattr(value, "name", str(value)))
def test_copy_equals_its_source(path, line, match):
    family, module, name, old, new = match.groups()
    source_path = MODELING / family / f"{module}.py"
    assert source_path.is_file(), f"{path.name}:{line} names {source_path}, which does not exist"
    source_node = _definitions(source_path).get(name)
    assert source_node is not None, f"{path.name}:{line}: {module} has no top-level {name}"
    expected = _source(source_path, source_node)
    if old:
        expected = expected.replace(old, new)
    copy_node = min((node for node in _definitions(path).values() if node.lineno > line), key=lambda node: node.lineno)
    assert _source(path, copy_node) == expected, (
        f"{path.name}:{line}: the copy of {family}.{module}.{name} has drifted"
    )
