"""Packaging: every package folder is listed in pyproject.toml, and a built wheel holds sciembed.modeling and the card
templates."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from sciembed.families import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT / "src").parts) for p in (ROOT / "src").rglob("__init__.py")}
    for mapped in ("modeling", "hub_cards"):
        found |= {
            ".".join(("sciembed", *p.parent.relative_to(ROOT).parts)) for p in (ROOT / mapped).rglob("__init__.py")
        }
    assert listed == found


def test_modeling_is_importable_as_a_subpackage():
    import sciembed.modeling

    assert Path(sciembed.modeling.__file__).resolve().parent == ROOT / "modeling"


def test_wheel_contents(tmp_path):
    # Built from a copy so that the build leaves nothing in the working tree.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("sciembed-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in (
        "sciembed/__init__.py",
        "sciembed/encode.py",
        "sciembed/cli.py",
        "sciembed/commands/embed.py",
        "sciembed/jobs/embed.py",
        "sciembed/encoders/__init__.py",
        "sciembed/io.py",
        "sciembed/data/papers.py",
        "sciembed/modeling/__init__.py",
        "sciembed/hub_cards/model_card.md",
        "sciembed/hub_cards/model_families/multi2spe.md",
        "sciembed/hub_cards/citations.bib",
    ):
        assert module in names
    shipped = [
        f"sciembed/modeling/{family.name}/{file}" for family in REGISTRY.values() for file in family.remote_code
    ]
    assert [path for path in shipped if path not in names] == []
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "sciembed = sciembed.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_onnx_extra_is_declared_pinned_and_installed():
    """``pip install 'sciembed[onnx]'`` brings the ONNX backend's packages (and onnxscript for the dynamo exporter),
    in ranges that hold the verified versions; the Makefile installs the extra, so a fresh clone's environment
    imports them."""
    import importlib
    import importlib.metadata

    from packaging.requirements import Requirement

    declared = [Requirement(r) for r in importlib.metadata.requires("sciembed") or []]
    onnx = {
        r.name: r
        for r in declared
        if r.marker is not None and r.marker.evaluate({"extra": "onnx"}) and not r.marker.evaluate({"extra": ""})
    }
    assert set(onnx) == {"onnxruntime", "onnx", "onnxscript"}
    for name, requirement in onnx.items():
        installed = importlib.metadata.version(name)
        assert requirement.specifier and installed in requirement.specifier, (
            name,
            installed,
            str(requirement.specifier),
        )
    for name in onnx:
        importlib.import_module(name)


def test_the_openvino_extra_is_declared_pinned_and_installed():
    """``pip install 'sciembed[openvino]'`` brings openvino, nncf and the onnx extra (the export it converts), in
    ranges that hold the versions the constraints pin and the environment has; the Makefile installs the extra."""
    import importlib.metadata
    import re

    from packaging.requirements import Requirement

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    declared = {r.name: r for r in map(Requirement, extras["openvino"])}
    assert set(declared) == {"sciembed", "openvino", "nncf"} and declared["sciembed"].extras == {"onnx"}
    lines = (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
    pinned = dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    for name in ("openvino", "nncf"):
        installed = importlib.metadata.version(name)
        assert pinned[name] == installed and installed in declared[name].specifier, (name, installed)
    [installs] = re.findall(r'-e "\.\[([a-z,]+)\]"', (ROOT / "Makefile").read_text())
    assert "openvino" in installs.split(",")


def test_the_environment_is_consistent_and_past_the_security_floor():
    """sciembed installs beside sentence-transformers 6 and mteb 2.26 (the dev extra) with ``pip check`` clean,
    on a transformers at or above 5.5: the first release with the fixes for CVE-2026-4372 and CVE-2026-5241."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.version import Version

    checked = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert Version(importlib.metadata.version("transformers")) >= Version("5.5")
    assert Version(importlib.metadata.version("sentence-transformers")) >= Version("6.2")
    assert importlib.metadata.version("mteb")
    declared = {r.name: r for r in map(Requirement, importlib.metadata.requires("sciembed") or []) if r.marker is None}
    assert "adapters" not in declared and not declared["transformers"].specifier.contains("5.4.99")
