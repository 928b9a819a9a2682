"""Nothing sciembed ships leans on what a transformers release may remove: the ``adapters`` library or private
transformers names. That every family's export loads without sciembed on both transformers lines is the family
contract's (``family_contract.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every import in ``path``; name is "" for ``import module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_nothing_shipped_imports_adapters_or_private_transformers_names():
    """The adapters library pins transformers ~=4.57.6; transformers' ``_``-names (and private modules such as
    ``modeling_attn_mask_utils``' ``_prepare_4d_*``) vanish between releases, as 5.0 showed."""
    offending = []
    for path in sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "modeling").rglob("*.py")]):
        for module, name in _imports(path):
            top = module.split(".")[0]
            if top == "adapters":
                offending.append(f"{path.relative_to(ROOT)}: imports {module}")
            if top == "transformers" and (
                name.startswith("_") or any(part.startswith("_") for part in module.split("."))
            ):
                offending.append(f"{path.relative_to(ROOT)}: imports {name or module} from {module}")
    assert offending == []
