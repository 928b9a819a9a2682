"""The package's imports follow ../shared/DESIGN.md: no import cycles, and arrows only downwards
(``cli`` -> ``commands`` -> ``training`` / ``evaluation`` / ``hub`` / ``jobs`` / ``search`` -> ``index`` ->
``encoders`` -> ``encode`` -> ``formats`` / ``data`` -> ``families`` / ``io`` -> ``modeling``; ``evaluation`` never
imports ``training``; ``io`` imports nothing of sciembed). Imports under ``if TYPE_CHECKING:`` are annotations
only and do not count."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"

#: Top to bottom: a module may import its own layer and the layers below it.
LAYERS = (
    ("cli", ("sciembed.cli",)),
    ("commands", ("sciembed.commands",)),
    (
        "training / evaluation / hub / jobs / search",
        ("sciembed.training", "sciembed.evaluation", "sciembed.hub", "sciembed.jobs", "sciembed.search"),
    ),
    ("index", ("sciembed.index",)),
    ("encoders", ("sciembed.encoders",)),
    ("encode", ("sciembed.encode", "sciembed.backends", "sciembed.onnx_backend", "sciembed.openvino_backend")),
    (
        "formats / data",
        (
            "sciembed.formats",
            "sciembed.data",
            "sciembed.checkpoints",
            "sciembed.checkpoint_files",
            "sciembed.checkpoint_hub",
            "sciembed.saving",
        ),
    ),
    (
        "families / io",
        (
            "sciembed.families",
            "sciembed.checkpoint_weights",
            "sciembed.io",
            "sciembed.truncation",
            "sciembed.tokens",
            "sciembed.default_model",
            "sciembed.distributed",
            "sciembed.logs",
            "sciembed.quantization",
            "sciembed.removed",
            "sciembed.similarity",
        ),
    ),
    ("choices", ("sciembed.choices",)),
    ("modeling", ("sciembed.modeling",)),
)


#: Imports that go up on purpose, made inside the one function that needs them (none today).
UPWARD_ON_USE: set[tuple[str, str]] = set()


@functools.cache
def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((SOURCE / "sciembed").rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _runtime_nodes(tree: ast.AST):
    """Every node outside ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The sciembed modules ``name`` imports (at any depth of its code)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import submodule` imports the submodule; `from module import name` the module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "sciembed.modeling" or target.startswith("sciembed.modeling."):
                found.add("sciembed.modeling")  # the remote-code folder, mapped into the package at install
                continue
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("sciembed") and target != name:
                found.add(target)
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    for source, target in UPWARD_ON_USE:
        graph[source].discard(target)
    return graph


def _layer(module: str) -> int | None:
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return index
    return None


def test_every_module_has_a_layer():
    assert [name for name in _modules() if name != "sciembed" and _layer(name) is None] == []


def test_no_import_cycles():
    graph = _graph()
    cycles, state = [], {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                cycles.append(
                    " -> ".join(trail[trail.index(target) :] + [module, target])
                    if target in trail
                    else f"{module} -> {target}"
                )
            elif target not in state:
                visit(target, [*trail, module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert cycles == []


@pytest.mark.parametrize("module", sorted(_modules()))
def test_imports_point_down_the_layers(module):
    source = _layer(module)
    if source is None:
        return  # the package's public face, sciembed/__init__.py
    upward = [target for target in sorted(_graph()[module]) if _layer(target) is not None and _layer(target) < source]
    assert upward == [], f"{module} ({LAYERS[source][0]}) imports a layer above it"
    if module.startswith("sciembed.evaluation"):
        assert not any(target.startswith("sciembed.training") for target in _graph()[module])
    if module == "sciembed.io":
        assert _graph()[module] == set()
