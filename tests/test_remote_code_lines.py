"""Every family's export loads without sciembed on both transformers lines users have: the current 5.x (this
venv) and 4.57.6 (the side venv), with the vectors ``sciembed.encode`` gives (1e-5); and nothing sciembed ships
leans on what a transformers release may remove: the ``adapters`` library or private transformers names."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import PAPERS, side_python

import sciembed
from sciembed.families import classifier_from_bert, from_bert, save_pretrained
from sciembed.hub.export import export_model

ROOT = Path(__file__).resolve().parents[1]

# family -> (registry name, from_bert options, forward keyword arguments = sciembed.encode's selection)
CASES = {
    "multi2spe": ("multi2spe", {}, {}),
    "control_code": ("control_code", {}, {"task_format": "classification"}),
    "moe_enforced": ("moe_bert", {"routing": "enforced", "domains": ["cs", "bio"]}, {"domain": "bio"}),
    "moe_token": ("moe_bert", {"routing": "token", "moe_layers": "middle", "domains": ["cs", "bio"]}, {}),
    "spectroid": ("spectroid", {"head": "CH2", "num_labels": 3}, {}),
}

LOAD = """
import json, sys
import numpy as np, torch, transformers
from transformers import AutoModel, AutoTokenizer
folder, texts, kwargs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
domain = model.config.domains.index(kwargs.pop("domain")) if "domain" in kwargs else None
rows = []
for text in texts:
    inputs = tokenizer(text, return_tensors="pt")
    if domain is not None:  # enforced routing, as the card shows: the domain token takes [CLS]'s place
        inputs["input_ids"][:, 0] = model.config.domain_token_ids[domain]
        inputs["domain_ids"] = torch.full((1,), domain)
    with torch.no_grad():
        rows.append(model(**inputs, **kwargs).pooler_output[0].numpy())
np.save("vectors.npy", np.stack(rows))
print(transformers.__version__)
"""


def _python(line: str) -> str:
    return sys.executable if line == "current" else side_python()


@pytest.fixture(scope="module")
def exported(tiny_bert, tmp_path_factory) -> dict[str, tuple[Path, np.ndarray, dict]]:
    """Each family built from the tiny BERT, exported with ``export_model``, and sciembed's vectors of it."""
    folders = {}
    for case, (family, options, selection) in CASES.items():
        torch.manual_seed(0)
        root = tmp_path_factory.mktemp(case)
        build = classifier_from_bert if family == "spectroid" else from_bert
        model, tokenizer = build(family, str(tiny_bert), **options)
        # Random weights where a family starts as its base (gates, per-CLS layers), so a loader that skipped
        # them would not pass by accident.
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.01)
        if family == "spectroid":  # a classifier saves as transformers models do (see classifier_from_bert)
            model.save_pretrained(root / "model")
            tokenizer.save_pretrained(root / "model")
        else:
            save_pretrained(model, tokenizer, root / "model")
        export_model(root / "model", root / "hub")
        vectors = sciembed.encode(root / "hub", PAPERS, show_progress_bar=False, **selection)
        folders[case] = (root / "hub", vectors, selection)
    return folders


@pytest.mark.parametrize("line", ["current", "4.57.6"])
@pytest.mark.parametrize("case", list(CASES))
def test_an_export_loads_without_sciembed_on_both_transformers_lines(exported, case, line, tmp_path):
    folder, expected, selection = exported[case]
    from transformers import AutoTokenizer

    texts = [sciembed.paper_text(paper, AutoTokenizer.from_pretrained(folder).sep_token) for paper in PAPERS]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"), "PYTHONPATH": ""}
    guarded = 'import sys; sys.modules["sciembed"] = None\n' + LOAD
    result = subprocess.run(
        [_python(line), "-c", guarded, str(folder), json.dumps(texts), json.dumps(selection)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    version = result.stdout.split()[-1]
    assert version.startswith("5.") if line == "current" else version == "4.57.6"
    np.testing.assert_allclose(np.load(tmp_path / "vectors.npy"), expected, atol=1e-5, rtol=0)


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
