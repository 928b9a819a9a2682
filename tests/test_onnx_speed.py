"""The speed benchmark's ceiling: the model's own products, FLOP for FLOP the model that ``encode_speed.py`` counts."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import encode_speed  # noqa: E402

CONFIG = SimpleNamespace(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2)


def test_the_products_are_the_flops_of_the_model():
    products = encode_speed.model_products(CONFIG, batch_size=3, length=10)
    per_layer = sum(product.flops for product in products.values())
    assert per_layer * CONFIG.num_hidden_layers == pytest.approx(3 * encode_speed.flops_per_text(CONFIG, 10))


def test_the_ceiling_reports_both_engines_against_the_peak():
    ceiling = encode_speed.product_ceiling(CONFIG, batch_size=2, length=8, peak=1.0, threads=1)
    assert sum(row["flop_share"] for row in ceiling["products"].values()) == pytest.approx(1, abs=0.01)
    for engine in ("torch", "onnxruntime"):
        rates = [row[f"{engine}_gflop_per_s"] for row in ceiling["products"].values()]
        assert min(rates) - 0.1 <= ceiling[f"{engine}_ceiling_gflop_per_s"] <= max(rates) + 0.1
        assert ceiling[f"{engine}_ceiling_share_of_matmul_peak"] == pytest.approx(
            ceiling[f"{engine}_ceiling_gflop_per_s"], abs=0.1
        )
