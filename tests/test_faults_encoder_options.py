"""One encoder path (issue 52): one loader, ``sciembed.Encoder.from_pretrained``, and entry points that take an encoder
or a name but no encoder options of their own.

A name given to ``neighbours``, ``evaluate``, the embed job or the MTEB bridge is loaded through the one loader with
its defaults; an encoder option given to one of them is a TypeError that names the loader, raised before anything
loads.
"""

from __future__ import annotations

import pytest
from helpers import PAPERS

import sciembed
from sciembed.encoders import EnsembleEncoder, WindowedEncoder, save_ensemble
from sciembed.evaluation import evaluate
from sciembed.evaluation.mteb_bridge import MtebEncoder
from sciembed.jobs.embed import embed_to_file


def _entry_points(tmp_path):
    """Each entry point that takes a model, called with a name and the papers it needs."""
    return {
        "neighbours": lambda model, **kw: sciembed.neighbours(model, PAPERS, show_progress_bar=False, **kw),
        "evaluate": lambda model, **kw: evaluate(model, "scidocs", tmp_path / "no-data", **kw),
        "embed_to_file": lambda model, **kw: embed_to_file(model, PAPERS, tmp_path / "v.npy", **kw),
        "MtebEncoder": lambda model, **kw: MtebEncoder(model, **kw),
    }


@pytest.mark.parametrize("function", ["neighbours", "evaluate", "embed_to_file", "MtebEncoder"])
@pytest.mark.parametrize(
    "option, value",
    [("device", "cpu"), ("pooling", "mean"), ("max_length", 64), ("backend", "onnx"), ("quantization", "int8"),
     ("trust_remote_code", True), ("domain", "cs"), ("loading", {"revision": "main"})],
)  # fmt: skip
def test_an_encoder_option_on_an_entry_point_names_the_one_loader(function, option, value, tmp_path, monkeypatch):
    monkeypatch.setattr(sciembed.Encoder, "from_pretrained", lambda *a, **k: pytest.fail("a model was loaded"))
    call = _entry_points(tmp_path)[function]
    with pytest.raises(TypeError, match=rf"^{function}\(\) no longer takes {option}=; load the model with "):
        call("some/model", **{option: value})
    with pytest.raises(TypeError, match=r"Encoder\.from_pretrained\(name, .*\) and pass it"):
        call("some/model", **{option: value})
    with pytest.raises(TypeError, match=rf"{function}\(\) got an unexpected keyword argument 'colour'"):
        call("some/model", colour="blue")


def test_a_name_given_to_an_entry_point_is_loaded_once_by_the_one_loader(tiny_bert, tmp_path, monkeypatch):
    loaded, load = [], sciembed.Encoder.from_pretrained

    def counting(name_or_path=None, **options):
        loaded.append((name_or_path, options))
        return load(name_or_path, device="cpu")

    monkeypatch.setattr(sciembed.Encoder, "from_pretrained", counting)
    result = sciembed.neighbours(str(tiny_bert), PAPERS, top_k=2, show_progress_bar=False)
    report = embed_to_file(str(tiny_bert), PAPERS, tmp_path / "v.npy", use_cache=False, show_progress_bar=False)
    assert result.indices.shape == (len(PAPERS), 2) and report.papers == len(PAPERS)
    assert MtebEncoder(str(tiny_bert)).encoder.name_or_path == str(tiny_bert)
    assert loaded == [(str(tiny_bert), {}), (str(tiny_bert), {}), (str(tiny_bert), {"revision": None})]


def test_the_one_loader_loads_a_model_or_an_ensemble_folder(tiny_bert, tmp_path):
    encoder = sciembed.Encoder.from_pretrained(tiny_bert, device="cpu", max_length=16)
    assert type(encoder) is sciembed.PaperEncoder and encoder.max_length == 16
    save_ensemble(tmp_path / "ensemble", [tiny_bert, tiny_bert])
    ensemble = sciembed.Encoder.from_pretrained(tmp_path / "ensemble", device="cpu", max_length=16)
    assert isinstance(ensemble, EnsembleEncoder) and [m.max_length for m in ensemble.members] == [16, 16]
    result = sciembed.neighbours(str(tmp_path / "ensemble"), PAPERS, top_k=1, show_progress_bar=False)
    assert result.model.startswith("ensemble(")
    with pytest.raises(ValueError, match=r"is an ensemble .* not one model: load it with sciembed\.Encoder\.from_pre"):
        sciembed.PaperEncoder.from_pretrained(tmp_path / "ensemble")
    with pytest.raises(TypeError, match=r"WindowedEncoder\(sciembed\.Encoder\.from_pretrained\(name\), \.\.\.\)"):
        WindowedEncoder.from_pretrained(tiny_bert)


def test_an_encoder_given_to_the_mteb_bridge_keeps_its_own_revision(tiny_encoder):
    with pytest.raises(ValueError, match=r"revision 'v2': .* was loaded at no revision; load the model at that rev"):
        MtebEncoder(tiny_encoder, "v2")
