"""sciembed's format adapters and AdapterFusion against the reference, the adapters library (1.3.0), which runs in
the transformers 4.57.6 side venv (``$SCIEMBED_TF457_PYTHON``; skipped when it is not built).

Both sides use the same tiny random BERT (saved from this venv) and the same token ids (sciembed's texts and
tokenization of ``PAPERS``, padded, saved to ``.npz``); the library's [CLS] vectors are compared with
``sciembed.encode`` (whose pooling for a plain BERT folder is [CLS]) to 1e-5, per format, for each adapter alone
and through its ``Fuse(own, *others)``, in both directions: files the library writes load in sciembed, and
files sciembed writes load in the library.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import PAPERS, run_side_python, side_python

import sciembed
from sciembed.formats import FORMATS, model_formats, save_with_format_modules
from sciembed.formats.adapters import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_WEIGHTS_FILE,
    FUSION_CONFIG_FILE,
    BottleneckConfig,
    FusionConfig,
    add_format_adapters,
    add_format_fusion,
    fusion_of,
)

ATOL = 1e-5
#: SPECTER2's adapter repositories (allenai/specter2, allenai/specter2_<format>), by format.
SPECTER2_REPOSITORIES = {
    "proximity": "specter2",
    "adhoc_query": "specter2_adhoc_query",
    "classification": "specter2_classification",
    "regression": "specter2_regression",
}
FUSIONS = {f: list(fusion_of(f, FORMATS).adapter_names) for f in FORMATS}

# What every side script starts with: the job (paths and names) and the token ids, and the [CLS] vectors.
SIDE_PREAMBLE = """
import json, shutil
from pathlib import Path
import numpy as np
import torch
import adapters
from adapters import Fuse
from transformers import BertModel
job = json.loads(Path("job.json").read_text())
features = {key: torch.from_numpy(value) for key, value in np.load(job["features"]).items()}
def cls(model):
    with torch.no_grad():
        return model.eval()(**features).last_hidden_state[:, 0].numpy()
def randomize(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".adapters." in name or ".adapter_fusion_layer." in name:
                parameter.normal_(0, 0.2)
"""


@pytest.fixture(scope="module")
def features(tiny_bert, tmp_path_factory) -> Path:
    """sciembed's token ids of ``PAPERS`` (texts of different lengths, one padded batch), for the side venv."""
    side_python()
    encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    batch = encoder.features(encoder.texts(PAPERS))
    assert not bool(batch["attention_mask"].all())  # some rows are padded
    path = tmp_path_factory.mktemp("features") / "features.npz"
    np.savez(path, **{key: value.numpy() for key, value in batch.items()})
    return path


def run_job(script: str, workdir: Path, **job) -> dict[str, np.ndarray]:
    """Run ``script`` in the side venv in ``workdir`` with ``job.json``; returns the vectors it saved."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "job.json").write_text(json.dumps({**job, "vectors": str(workdir / "vectors.npz")}))
    run_side_python(SIDE_PREAMBLE + script, workdir)
    return dict(np.load(workdir / "vectors.npz"))


def encode(folder: Path, task_format: str) -> np.ndarray:
    return sciembed.encode(folder, PAPERS, task_format=task_format, device="cpu", show_progress_bar=False)


def assert_same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=0, err_msg=what)


SPECTER2_BY_THE_LIBRARY = """
model = BertModel.from_pretrained(job["base"])
adapters.init(model)
for name in job["formats"]:
    model.add_adapter(name, config="seq_bn")
for names in job["fusions"].values():
    model.add_adapter_fusion(Fuse(*names))
randomize(model, 0)  # adapters start near the identity and fusions evenly: random weights make formats differ
adapters_only, fused = Path(job["adapters_only"]), Path(job["fused"])
shutil.copytree(job["base"], adapters_only)
for name, repository in job["repositories"].items():
    model.save_adapter(str(adapters_only / repository), name)
shutil.copytree(adapters_only, fused)
for own, names in job["fusions"].items():
    model.save_adapter_fusion(str(fused / f"fusion_{own}"), Fuse(*names))
vectors = {}
for own, names in job["fusions"].items():
    model.set_active_adapters(own)
    vectors[f"adapter|{own}"] = cls(model)
    model.set_active_adapters(Fuse(*names))
    vectors[f"fusion|{own}"] = cls(model)
np.savez(job["vectors"], **vectors)
"""


def test_specter2_layout_written_by_the_library_gives_its_vectors(tiny_bert, features, tmp_path):
    """Four seq_bn adapters (random weights) in SPECTER2's repositories next to the base, and per format
    Fuse(own, *others) in sciembed's fusion_<format>/ folders: sciembed's vectors are the library's."""
    adapters_only, fused = tmp_path / "specter2", tmp_path / "specter2-fused"
    vectors = run_job(
        SPECTER2_BY_THE_LIBRARY,
        tmp_path / "side",
        base=str(tiny_bert),
        features=str(features),
        formats=list(FORMATS),
        fusions=FUSIONS,
        repositories=SPECTER2_REPOSITORIES,
        adapters_only=str(adapters_only),
        fused=str(fused),
    )
    # The library's JSON is what sciembed writes for the same settings.
    assert (
        json.loads((adapters_only / "specter2" / ADAPTER_CONFIG_FILE).read_text())["config"]
        == BottleneckConfig().to_dict()
    )
    assert (
        json.loads((fused / "fusion_proximity" / FUSION_CONFIG_FILE).read_text())["config"] == FusionConfig().to_dict()
    )
    for task_format in FORMATS:
        assert_same(encode(adapters_only, task_format), vectors[f"adapter|{task_format}"], f"adapter {task_format}")
        assert_same(encode(fused, task_format), vectors[f"fusion|{task_format}"], f"fusion {task_format}")
    # The formats differ, and fusion is not the adapter alone: the comparison is not vacuous.
    assert not np.allclose(vectors["adapter|proximity"], vectors["adapter|classification"], atol=1e-3)
    assert not np.allclose(vectors["adapter|proximity"], vectors["fusion|proximity"], atol=1e-3)


FROM_A_MODEL_WITH_A_HEAD = """
from adapters import BertAdapterModel
from safetensors.torch import load_file
with_head = BertAdapterModel.from_pretrained(job["base"])
with_head.add_adapter("[PRX]", config="seq_bn")
randomize(with_head, 3)
root = Path(job["root"])
shutil.copytree(job["base"], root)
with_head.save_adapter(str(root / "specter2"), "[PRX]", use_safetensors=True)
keys = list(load_file(str(root / "specter2" / "adapter.safetensors")))
assert keys and all(key.startswith("bert.encoder.layer.") and ".adapters.[PRX]." in key for key in keys), keys
# As SPECTER2's model card loads it.
model = BertModel.from_pretrained(job["base"])
adapters.init(model)
model.load_adapter(str(root / "specter2"), load_as="proximity", set_active=True, use_safetensors=True)
np.savez(job["vectors"], proximity=cls(model))
"""


def test_an_adapter_saved_from_a_model_with_a_head_under_another_name_loads(tiny_bert, features, tmp_path):
    """SPECTER2's adapters come from a BertAdapterModel (keys under ``bert.``) and are named ``[PRX]`` in their
    files; sciembed loads one as its format, with the library's vectors (here from safetensors)."""
    root = tmp_path / "specter2"
    vectors = run_job(
        FROM_A_MODEL_WITH_A_HEAD, tmp_path / "side", base=str(tiny_bert), features=str(features), root=str(root)
    )
    assert json.loads((root / "specter2" / ADAPTER_CONFIG_FILE).read_text())["name"] == "[PRX]"
    encoder = sciembed.PaperEncoder.from_pretrained(root, device="cpu")
    assert model_formats(encoder.transformer) == ("proximity",)
    assert_same(
        encoder.with_format("proximity").encode(PAPERS, show_progress_bar=False), vectors["proximity"], "[PRX]"
    )


SCIEMBEDS_FILES_IN_THE_LIBRARY = """
model = BertModel.from_pretrained(job["folder"])
adapters.init(model)
folder = Path(job["folder"])
for name in job["formats"]:
    model.load_adapter(str(folder / name), load_as=name)
for own in job["formats"]:
    model.load_adapter_fusion(str(folder / f"fusion_{own}"), set_active=False)
vectors = {}
for own, names in job["fusions"].items():
    model.set_active_adapters(own)
    vectors[f"adapter|{own}"] = cls(model)
    model.set_active_adapters(Fuse(*names))
    vectors[f"fusion|{own}"] = cls(model)
# An old file (adapter-transformers' module names, no version, a model-with-head prefix, another name) reads alike.
legacy = BertModel.from_pretrained(job["folder"])
adapters.init(legacy)
legacy.load_adapter(job["legacy"], load_as="proximity", set_active=True)
vectors["legacy|proximity"] = cls(legacy)
np.savez(job["vectors"], **vectors)
"""


def test_adapters_and_fusions_saved_by_sciembed_load_in_the_library(tiny_bert, features, tmp_path):
    """The reverse direction, with options away from the defaults (a per-layer reduction factor with a default,
    a layer left out, the adapter's own LayerNorm, gelu, a scaling): the library reads sciembed's files and
    computes sciembed's vectors, for each adapter alone and through each fusion; and an old-style copy of the
    proximity adapter reads the same in both."""
    from transformers import AutoModel, AutoTokenizer

    config = BottleneckConfig(
        reduction_factor={"1": 4, "default": 8}, leave_out=[0], ln_before=True, non_linearity="gelu", scaling=0.5
    )
    model = add_format_adapters(AutoModel.from_pretrained(tiny_bert), config=config).eval()
    torch.manual_seed(5)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".adapters." in name:
                parameter.normal_(0, 0.2)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)

    def vectors(task_format):
        return sciembed.encode(
            model, PAPERS, tokenizer=tokenizer, task_format=task_format, device="cpu", show_progress_bar=False
        )

    alone = {f: vectors(f) for f in FORMATS}
    add_format_fusion(model)
    torch.manual_seed(6)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".adapter_fusion_layer." in name:
                parameter.normal_(0, 0.2)
    fused = {f: vectors(f) for f in FORMATS}
    folder = tmp_path / "model"
    save_with_format_modules(model, folder)
    tokenizer.save_pretrained(folder)
    legacy = tmp_path / "legacy" / "specter2"
    _old_style_copy(folder / "proximity", legacy)
    assert sciembed.PaperEncoder.from_pretrained(folder, device="cpu").task_formats == FORMATS

    side = run_job(
        SCIEMBEDS_FILES_IN_THE_LIBRARY,
        tmp_path / "side",
        folder=str(folder),
        features=str(features),
        formats=list(FORMATS),
        fusions=FUSIONS,
        legacy=str(legacy),
    )
    for task_format in FORMATS:
        assert_same(side[f"adapter|{task_format}"], alone[task_format], f"adapter {task_format}")
        assert_same(side[f"fusion|{task_format}"], fused[task_format], f"fusion {task_format}")
    assert_same(side["legacy|proximity"], alone["proximity"], "old-style file in the library")
    shutil.copytree(tiny_bert, tmp_path / "legacy", dirs_exist_ok=True)
    assert_same(encode(tmp_path / "legacy", "proximity"), alone["proximity"], "old-style file in sciembed")


def _old_style_copy(source: Path, target: Path) -> None:
    """``source`` as adapter-transformers 2 wrote it from a BertModelWithHeads: no ``version`` (so its ``gelu_orig``
    is today's ``gelu``), ``layer_text_task_adapters`` for the module dict, keys under ``bert.``, named ``[PRX]``."""
    header = json.loads((source / ADAPTER_CONFIG_FILE).read_text())
    del header["version"]
    assert header["config"]["non_linearity"] == "gelu"
    header["config"]["non_linearity"] = "gelu_orig"
    header["name"] = "[PRX]"
    weights = torch.load(source / ADAPTER_WEIGHTS_FILE, weights_only=True)
    target.mkdir(parents=True)
    (target / ADAPTER_CONFIG_FILE).write_text(json.dumps(header))
    torch.save(
        {
            "bert." + key.replace(".adapters.proximity.", ".layer_text_task_adapters.[PRX]."): value
            for key, value in weights.items()
        },
        target / ADAPTER_WEIGHTS_FILE,
    )
