"""The documentation: the site builds with --strict, its pages carry what they promise (the recipes as the code defines
them, the benchmark tables and plots from the results JSON), and every relative link of the README resolves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    folder = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def test_the_index_and_every_system_page_are_built(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "Embed papers in five lines" in index and "one row per paper" in index
    for system in ("specter", "scincl", "multi2spe", "scirepeval", "spectroid", "moe"):
        assert (site / "systems" / system / "index.html").is_file(), system


def test_a_system_page_shows_its_recipe_as_the_code_defines_it(site):
    from sciembed.training.recipes import RECIPES

    page = (site / "systems" / "multi2spe" / "index.html").read_text(encoding="utf-8")
    # The first phrase of the recipe's notes, as the hook wrote it from the code.
    assert RECIPES["multi2spe"].notes.split(",")[0] in page
    assert "sciembed train --recipe multi2spe" in page


def test_the_benchmark_page_renders_every_results_file_with_its_plots(site):
    page = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    results = sorted((ROOT / "benchmarks" / "results").rglob("*.json"))
    for path in results:
        assert path.relative_to(ROOT / "benchmarks" / "results").as_posix() in page, path.name
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', page)
    assert {Path(src).name for src in images} >= {"recipes.png", "validation_search.png", "encode_speed.png"}
    # Every run of recipes.py (another budget or window too) shows as its table and plot, not as flattened fields.
    runs = [path for path in results if json.loads(path.read_text()).get("benchmark") == "recipes"]
    assert {f"{path.stem}.png" for path in runs} <= {Path(src).name for src in images}
    assert page.count("above its start on every seed</th>") == len(runs)
    for src in images:
        png = (site / "benchmarks" / src).resolve()
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", src
    # A number of the recipes table is the number in the JSON.
    summary = json.loads((ROOT / "benchmarks" / "results" / "recipes.json").read_text())["summary"]
    published = summary["MiniLM as published"]["mean"]["cacm_cite"]["map"]
    assert f"{published:.2f}" in page


def test_every_relative_link_of_the_readme_resolves():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [link for link in MARKDOWN_LINK.findall(readme) if "://" not in link]
    assert links, "the README links into the docs"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"
    assert len(readme.splitlines()) <= 150


def render_docs_module():
    """``benchmarks/render_docs.py`` (not a package); its ``pyplot()`` draws off screen."""
    import importlib.util

    pytest.importorskip("matplotlib", reason="the docs extra is not installed (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_plot_with_its_own_layout_keeps_it_on_the_site():
    import warnings

    render_docs = render_docs_module()
    figure = render_docs.pyplot().figure(layout="constrained")
    figure.suptitle("title")
    figure.add_subplot().set_title("panel")
    with warnings.catch_warnings():
        # matplotlib warns when tight_layout replaces a figure's own layout engine
        warnings.simplefilter("error")
        png = render_docs.figure_png(figure)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_long_variant_s_label_wraps_and_fits_its_plot():
    import warnings

    render_docs = render_docs_module()
    overrides = {
        "loss.proximity": "mnr",
        "learning_rate": 0.0003,
        "training.per_device_train_batch_size": 32,
        "training.gradient_accumulation_steps": 1,
        "data.anchor_papers": "/somewhere/far/down/scirepeval-samples/specter_small.json",
        "loss.anchor_weight": 50,
    }
    long = {
        "recipe": "scirepeval-adapters",
        "variant": overrides,
        "resolved": {
            "learning_rate": 0.0003,
            "weight_average": 1.0,
            "loss": None,
            "proximity": "mnr",
            "anchor_weight": 50,
        },
        "seed": 0,
        "steps": 60,
        "validation_queries": 100,
        "change_vs_published": {"map": -0.1, "ndcg": 0.2},
    }
    short = {**long, "recipe": "specter", "variant": {}, "resolved": {"learning_rate": 0.0001}}
    label = render_docs.variant_label(long)
    # What the resolved settings name is not repeated from the overrides, and a data file shows by its name.
    assert label.count("proximity=") == label.count("anchor_weight=") == 1
    assert "anchor_papers=specter_small.json" in label and "/somewhere" not in label and "None" not in label
    with warnings.catch_warnings():
        # matplotlib warns "Tight layout not applied" when the labels are wider than the figure leaves them
        warnings.simplefilter("error")
        _, images = render_docs.validation_section({"rows": [short, long, short]})
    assert images[0][1][:8] == b"\x89PNG\r\n\x1a\n"


def test_the_memory_results_show_each_job_against_its_target():
    render_docs = render_docs_module()
    job = {
        "command": "sciembed train --recipe specter",
        "peak_rss_mb": 1400,
        "target_mb": 1500,
        "holds": True,
        "seconds": 60,
        "load_average": {"mean": 2.5, "max": 3.0},
        "machine": {"cpus": 2},
    }
    text, _ = render_docs.memory_section(
        {"jobs": {"train": job, "evaluate": {**job, "target_mb": None, "holds": None}}}
    )
    assert "| train | 1400 | 1500 | yes | 60 | 2.5 | 2 | sciembed train --recipe specter |" in text
    assert "| evaluate | 1400 |  |  | 60 |" in text
