"""Public functions take at most 12 named parameters: options that belong together are one dataclass.

``sciembed.encode`` is the one exception, as ``SentenceTransformer.encode`` is the convenience that takes them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = (ROOT / "src" / "sciembed", ROOT / "modeling")
MAX_PARAMETERS = 12
#: The functions allowed more, as ``module path: qualified name``.
EXEMPT = {"src/sciembed/encode.py: encode"}


def _public_functions(
    body: list[ast.stmt], prefix: str = "", in_class: bool = False
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Each public function or method of ``body`` and each public class's ``__init__``, named, and whether a method."""
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.", in_class=True)
        elif isinstance(node, ast.If | ast.Try):
            yield from _public_functions(node.body + node.orelse, prefix, in_class)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_") or (in_class and node.name == "__init__"):
                yield prefix + node.name, node, in_class


def _named_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The parameters a caller names: ``*args``, ``**kwargs`` and a method's ``self`` or ``cls`` aside."""
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    return names[1:] if method and not static and names else names


def _over_the_limit() -> dict[str, list[str]]:
    found = {}
    for tree in TREES:
        for path in sorted(tree.rglob("*.py")):
            module = ast.parse(path.read_text(encoding="utf-8"))
            for name, node, method in _public_functions(module.body):
                where = f"{path.relative_to(ROOT)}: {name}"
                parameters = _named_parameters(node, method)
                if len(parameters) > MAX_PARAMETERS and where not in EXEMPT:
                    found[f"{where} (line {node.lineno})"] = parameters
    return found


def test_no_public_function_takes_more_than_12_named_parameters():
    over = _over_the_limit()
    assert not over, "\n".join(f"{where}: {len(names)} {names}" for where, names in over.items())


def test_the_scan_sees_the_encode_convenience_and_the_trainer():
    """The scan reaches methods, ``__init__`` and keyword-only parameters: it would catch what it must."""
    module = ast.parse((ROOT / "src" / "sciembed" / "encode.py").read_text(encoding="utf-8"))
    named = {name: _named_parameters(node, method) for name, node, method in _public_functions(module.body)}
    assert len(named["encode"]) > MAX_PARAMETERS
    assert named["PaperEncoder.__init__"][:2] == ["model", "tokenizer"]
    trainers = ast.parse((ROOT / "src" / "sciembed" / "training" / "trainers.py").read_text(encoding="utf-8"))
    assert "EmbeddingTrainer.__init__" in {name for name, _, _ in _public_functions(trainers.body)}
