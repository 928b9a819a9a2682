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
    # So does every run of encode_speed.py (papers, or titles alone).
    speed = [path for path in results if json.loads(path.read_text()).get("benchmark") == "encode_speed"]
    assert {f"{path.stem}.png" for path in speed} <= {Path(src).name for src in images}
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


def encode_speed_report(**machine_limit) -> dict:
    """A small ``encode_speed.json``: two paths, two targets, one gate and the machine's limit."""
    paths = {
        "st_pytorch": {"median_docs_per_s": 50.0, "ratio_to_st_pytorch": 1.0, "min_cosine_to_st_pytorch": 1.0},
        "sciembed_onnx_int8": {
            "median_docs_per_s": 105.0,
            "ratio_to_st_pytorch": 2.1,
            "min_cosine_to_st_pytorch": 0.98,
        },
    }
    for path, share in zip(paths.values(), (0.5, 1.1)):
        path["share_of_matmul_peak"] = share
    gate = {"passed": True, "fp32_map": 78.81, "int8_map": 78.85, "tolerance": 0.5, "benchmark": "cacm"}
    return {
        "benchmark": "encode_speed",
        "papers": 1000,
        "paths": paths,
        "targets": {
            "int8_at_least_3.5x_st_pytorch": False,
            "int8_gate_passed": True,
            "openvino_int8_at_least_5.3x_st_pytorch_with_vnni": None,
        },
        "int8_gate": {**gate, "backend": "onnx", "quantization": "int8", "min_cosine": 0.98, "queries": 1749},
        "machine_limit": {"matmul_peak_gflop_per_s": 266.7, "matmul": "2048x2048 product", **machine_limit},
        "cpu": {"cpu": "Some Xeon", "cpus": 2, "flags": {"avx2": True, "amx_int8": False}},
        "load_average_1_5_15_min": {"start": [0.5, 1.0, 1.5], "end": [2.0, 2.5, 3.0]},
        "st_onnx": {"loaded": False, "error": "Optimum is not installed"},
    }


def test_the_encode_speed_results_read_as_paths_targets_and_gates():
    render_docs = render_docs_module()
    shapes = {"products": {"qkv": {"shape": [32, 121, 384, 384], "torch_gflop_per_s": 180.2}}, "note": "best of 5"}
    report = encode_speed_report(model_shape_torch_gflop_per_s=201.5, model_shapes=shapes)
    text, images = render_docs.encode_speed_section(report)
    assert "| sciembed ONNX int8 | 2.1 | 105 | 1.1 | 0.98 |" in text
    assert "| int8 at least 3.5x `SentenceTransformer.encode` | missed |" in text
    # A target for CPUs with VNNI is not judged, nor counted, on a CPU without it.
    assert "1 of 2 targets judged on this CPU hold" in text and "with VNNI | not for this CPU |" in text
    assert "| ONNX int8 | 78.81 | 78.85 | 0.5 | 0.98 |" in text
    # The machine's limit shows every rate it holds, those another script adds too.
    assert "| model shape torch gflop per s | 201.5 |" in text and "| matmul peak gflop per s | 266.7 |" in text
    assert "| qkv | 32, 121, 384, 384 | 180.2 |" in text and "Also: model shapes note best of 5." in text
    assert (
        "Some Xeon with 2 CPUs (flags: avx2)" in text and "0.5, 1, 1.5 at the start and 2, 2.5, 3 at the end" in text
    )
    assert "Optimum is not installed" in text and "paths." not in text and "| field | value |" not in text
    assert [name for name, _ in images] == ["encode_speed.png"]


def test_no_results_file_is_dumped_as_its_fields():
    render_docs = render_docs_module()
    page, _ = render_docs.render()
    dotted = re.findall(r"^\| [a-z_]+\.[a-z_.]+ \|", page, flags=re.MULTILINE)
    assert "| field | value |" not in page and not dotted, dotted[:5]
    assert "more columns in the JSON" not in page


def test_a_results_file_without_a_section_shows_its_settings_records_and_targets():
    render_docs = render_docs_module()
    report = {
        "settings": {"batch": 32, "seeds": [0, 1]},
        "machine": {"cpus": 2},
        "ratio_to_bert": {"multi2spe": 1.03, "moe": 1.21},
        "meets_target": {"multi2spe": True, "moe": False},
        "workers": {"torchrun": {"seconds": 303.4, "same_ids": True}, "ray": {"seconds": 352.2, "same_ids": True}},
    }
    text, _ = render_docs.generic(report)
    assert "The run: batch 32, seeds (0, 1)." in text and "Measured on: cpus 2." in text
    assert "1 of 2 targets hold. Missed: moe." in text
    assert "| multi2spe | 1.03 | yes |" in text and "| moe | 1.21 | no |" in text
    assert "| torchrun | 303.4 | yes |" in text


def test_every_results_file_without_a_section_opens_with_what_it_shows():
    render_docs = render_docs_module()
    for path in sorted((ROOT / "benchmarks" / "results").rglob("*.json")):
        report = json.loads(path.read_text())
        if path.name in render_docs.SECTIONS or report.get("benchmark") in render_docs.BENCHMARK_SECTIONS:
            continue
        headline = render_docs.HEADLINES.get(report.get("benchmark", path.stem))
        assert headline and headline(report), path.name
    ways = {"torchrun": {"speedup_over_one_process": 2.04, "same_ids": True, "max_abs_diff": 0}}
    ways["ray"] = {"speedup_over_one_process": 1.76, "same_ids": True, "max_abs_diff": 0.5}
    text = render_docs.embed_scale_headline({"two_workers": ways})
    assert text == (
        "Over two workers, torchrun is fastest at 2.04 times one process's rate, "
        "and not every way returns the same ids and vectors as one process."
    )
