"""Each recipe's tiny run gives the numbers and weights it gave before training became typed composition."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers import shared_data
from test_training import TINY_RUN

#: name -> (recipe, base fixture, data under ../shared/data, extra overrides).
RUNS = {
    "specter": ("specter", "tiny_bert", ("cacm",), {"data.held_out": 0.05}),
    "specter-unit": ("specter", "tiny_st_base", ("cacm",), {"data.held_out": 0.05}),
    "specter-anchored": (
        "specter",
        "tiny_st_base",
        ("cacm",),
        {"data.anchor_papers": "@scirepeval-samples/mesh_small.json", "loss.anchor_weight": 50.0},
    ),
    "scincl": ("scincl", "tiny_bert", ("cacm",), {"data.held_out": 0.05}),
    "multi2spe": ("multi2spe", "tiny_bert", ("scirepeval-samples", "specter_small.json"), {}),
    "multi2spe-unit": ("multi2spe", "tiny_st_base", ("cacm",), {"data.held_out": 0.05}),
    "ctrl": ("scirepeval-ctrl", "tiny_bert", ("scirepeval-samples",), {}),
    "ctrl-unit": ("scirepeval-ctrl", "tiny_st_base", ("scirepeval-samples",), {}),
    "adapters": ("scirepeval-adapters", "tiny_bert", ("scirepeval-samples",), {}),
    "pals-unit": ("scirepeval-pals", "tiny_st_base", ("scirepeval-samples",), {}),
    "spectroid": ("spectroid-heads", "tiny_bert", ("cacm",), {"model.head_only_steps": 1}),
    "spectroid-unit": ("spectroid-heads", "tiny_st_base", ("cacm",), {"model.head_only_steps": 1}),
    "moe": ("moe-cocitation", "tiny_bert", ("cacm",), {"data.held_out": 0.05}),
    "moe-dense-unit": ("moe-cocitation", "tiny_st_base", ("cacm",), {"data.held_out": 0.05, "model.family": "none"}),
}

_TIMINGS = ("runtime", "per_second")


def _weights_hash(folder: Path) -> str:
    """A hash of every tensor the saved model holds, by name."""
    from safetensors.torch import load_file

    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.safetensors")):
        tensors = load_file(path)
        for name in sorted(tensors):
            digest.update(f"{path.relative_to(folder)}:{name}".encode())
            digest.update(tensors[name].float().numpy().tobytes())
    return digest.hexdigest()


def _numbers(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not any(t in k for t in _TIMINGS)}


def _run(name: str, request, tmp_path: Path) -> dict:
    from sciembed.training.run import MODEL_FOLDER, train

    recipe, base, data, extra = RUNS[name]
    overrides = {**TINY_RUN, **extra}
    for key, value in overrides.items():
        if isinstance(value, str) and value.startswith("@"):
            overrides[key] = str(shared_data(*value[1:].split("/")))
    summary = train(recipe, request.getfixturevalue(base), shared_data(*data), tmp_path / name, overrides)
    return {
        "train": _numbers(summary["train_metrics"]),
        "eval": _numbers(summary["eval_metrics"]),
        "step": summary["global_step"],
        "data": {k: v for k, v in summary["data"].items() if k != "source"},
        "settings": json.loads(json.dumps(summary["settings"], default=str).replace(str(shared_data()), "DATA")),
        "weights": _weights_hash(tmp_path / name / MODEL_FOLDER),
    }


#: Each run's weights hash, training loss and held-out MAP, computed on 8d65b7f (before the objectives were classes).
PINNED = {
    "adapters": (
        "3cc68cb90563d1e628cf991a6fc0f1021c5c4df3998affc9c0b2d29e0392c1f2",
        7.796694278717041,
        {},
    ),
    "ctrl-unit": (
        "3e1e88ade84651bc0c8cf21aa3fd317fe067a672ba0936257e823ce9bce558c0",
        5.45241117477417,
        {},
    ),
    "ctrl": (
        "5c9f76e5cae80a6bdf18812f77a832ce47bb8226ab82e849a200662d447baea5",
        7.3639655113220215,
        {},
    ),
    "moe-dense-unit": (
        "4e748b2a2ee663481b47e57eb11dad1c3eb5ff2a9ce49f5de4d4135c305f2c11",
        1.3647405505180359,
        {"eval_cite_map": 34.84361627674573},
    ),
    "moe": (
        "b98ff1dda9ebbe13bf59f8b2c675483e972a3b3fa7932ed9a522fb1234dfc4b5",
        1.3711913228034973,
        {"eval_cite_map": 34.61331340733032},
    ),
    "multi2spe-unit": (
        "400c1300386cdf8cf45d2cd2a181896c952e86795b3f689f818bfa530214b5af",
        2.0098981261253357,
        {"eval_cite_map": 35.25968478680408},
    ),
    "multi2spe": (
        "b08188e18279201f9a27a537be2fef869a66f437ccb70c3bd208f89a8caab128",
        2.156878173351288,
        {},
    ),
    "pals-unit": (
        "bf1c3b717e1b95d94a1d19c3b221ab6aafeb51bf5ea3b63f6cf7fcf9e37b5815",
        5.610391616821289,
        {},
    ),
    "scincl": (
        "e5695180a4ef124d50a35783ef47fb6618d6c066aa9fc315f09edc4ad16f7158",
        0.44755350053310394,
        {"eval_cite_map": 31.75920491523036},
    ),
    "specter-anchored": (
        "5ab1f0f9a65ee452969fd4137e8055734e9a34f8de149f3e5611eb7b67659b42",
        1.982106328010559,
        {},
    ),
    "specter-unit": (
        "dbc1ebe3afba2997e140928e77ed14c8cf1a5646f241961e61b7c2ba425c9df1",
        2.0283806920051575,
        {"eval_cite_map": 34.98251328333947},
    ),
    "specter": (
        "51d96b3dc5e15961d3354a9119e9940a956b572f798cf35999cd9556644d502d",
        0.44876840710639954,
        {"eval_cite_map": 31.50685425557435},
    ),
    "spectroid-unit": (
        "1ad9dca7d035611332c983d7df66eea4c710d6102f88e10317d0f8ae39d299f8",
        1.7461814880371094,
        {},
    ),
    "spectroid": (
        "4d5191a14d778d4e2352a71c52305706f4f1e57eba368cf7db7b5b86183c2157",
        1.6763213276863098,
        {},
    ),
}


@pytest.fixture
def one_thread():
    """One intra-op thread, as the pinned runs had, so that the sums come out in the same order."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_recipe_s_tiny_run_gives_the_weights_and_numbers_it_gave_before(name, request, tmp_path, one_thread):
    result = _run(name, request, tmp_path)
    record = os.environ.get("SCIEMBED_RECORD")  # the whole result, for a comparison by hand
    if record:
        Path(record).mkdir(parents=True, exist_ok=True)
        (Path(record) / f"{name}.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    weights, train_loss, held_out = PINNED[name]
    assert result["train"]["train_loss"] == pytest.approx(train_loss, rel=1e-6)
    assert {k: v for k, v in result["eval"].items() if k.endswith("_map")} == pytest.approx(held_out, rel=1e-6)
    assert result["weights"] == weights
