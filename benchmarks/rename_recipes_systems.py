"""Rename the systems of the recipes results files to the names ``recipes/systems.py`` generates (run once).

Each old system of ``benchmarks/recipes.py`` at 8630ebe (given as a file) is matched to the new system with the same
recipe, settings and data; the two rows of ``recipes_eval128.json`` are named by the settings their recipe had then.
Only names change: rows' ``system`` and ``reused_training.system``, the summary's keys and its counterparts' names.

    python benchmarks/rename_recipes_systems.py OLD_RECIPES_PY
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recipes import PEER, REFERENCE, SYSTEMS  # noqa: E402

RESULTS = Path(__file__).parent / "results"
#: ``recipes_eval128.json``'s rows were trained when the specter recipe's defaults were lr 2e-5 without WiSE-FT.
EVAL128 = {"specter": "specter[lr=2e-5,wise=1]", "specter-wise": "specter[wise=0.5]"}


def mapping(old_file: Path) -> dict[str, str]:
    """Old system name to new, by equal recipe, settings and data."""
    spec = importlib.util.spec_from_file_location("old_recipes", old_file)
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)

    def key(system, names) -> str:
        fields = asdict(system)
        fields.pop("description")
        fields.pop("counterpart")
        fields["after"] = names.get(fields["after"], fields["after"])
        return json.dumps(fields, sort_keys=True)

    new = {key(system, {}): name for name, system in SYSTEMS.items()}
    renamed = {name: new[key(system, {})] for name, system in old.SYSTEMS.items() if system.after is None}
    renamed.update({name: new[key(system, renamed)] for name, system in old.SYSTEMS.items() if system.after})
    for name, system in old.SYSTEMS.items():  # the counterparts match too
        assert SYSTEMS[renamed[name]].counterpart == renamed.get(system.counterpart), name
    assert len(set(renamed.values())) == len(renamed) == len(SYSTEMS)
    return {**renamed, REFERENCE: REFERENCE, PEER: PEER}


def rename(path: Path, names: dict[str, str]) -> None:
    """Rewrite ``path`` with its systems renamed by ``names``."""
    report = json.loads(path.read_text(encoding="utf-8"))
    for row in report["rows"]:
        row["system"] = names[row["system"]]
        if "reused_training" in row:
            row["reused_training"]["system"] = names[row["reused_training"]["system"]]
    summary = {}
    for name, entry in report["summary"].items():
        if "against_counterpart" in entry:
            entry["against_counterpart"]["system"] = names[entry["against_counterpart"]["system"]]
        summary[names[name]] = entry
    report["summary"] = summary
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    names = mapping(Path(sys.argv[1]))
    print(json.dumps(names, indent=1))
    rename(RESULTS / "recipes.json", names)
    rename(RESULTS / "recipes_steps180.json", names)
    rename(RESULTS / "recipes_eval128.json", {**EVAL128, REFERENCE: REFERENCE, PEER: PEER})


if __name__ == "__main__":
    main()
