"""A public name sciembed removed is not a bare ImportError: importing or looking it up names what replaces it."""

from __future__ import annotations

import importlib
import inspect

import pytest

import sciembed

REMOVED = [
    ("sciembed.encoders", "load_encoder", "sciembed.Encoder.from_pretrained"),
    ("sciembed.encoders", "load_ensemble", "sciembed.Encoder.from_pretrained"),
    ("sciembed.encoders.ensemble", "load_encoder", "sciembed.Encoder.from_pretrained"),
    ("sciembed.encoders.ensemble", "load_ensemble", "sciembed.Encoder.from_pretrained"),
    ("sciembed.evaluation", "TaskResult", "sciembed.evaluation.TaskScores"),
    ("sciembed.evaluation.tasks", "TaskResult", "sciembed.evaluation.TaskScores"),
    ("sciembed.evaluation", "neighbours", "sciembed.neighbours"),
    ("sciembed.hub.push", "push_encoder", "sciembed.hub.push.push_to_hub"),
]


@pytest.mark.parametrize(("module", "name", "replacement"), REMOVED)
def test_a_removed_name_names_its_replacement(module, name, replacement):
    with pytest.raises(ImportError, match=rf"{module}\.{name} was removed: use {replacement}"):
        exec(f"from {module} import {name}", {})
    with pytest.raises(AttributeError, match=rf"{module}\.{name} was removed: use {replacement}"):
        getattr(importlib.import_module(module), name)
    assert not hasattr(importlib.import_module(module), name)


def test_a_moved_module_and_a_removed_method_name_their_replacements(tiny_encoder):
    with pytest.raises(ImportError, match=r"sciembed.evaluation.neighbours was removed: use sciembed.neighbours"):
        importlib.import_module("sciembed.evaluation.neighbours")
    with pytest.raises(AttributeError, match=r"push_to_hub was removed: use sciembed.hub.push.push_to_hub\(encoder"):
        tiny_encoder.push_to_hub("org/name")
    with pytest.raises(ImportError, match="cannot import name 'never_there'"):
        exec("from sciembed.encoders import never_there", {})
    assert sciembed.Encoder.from_pretrained  # the replacement is there


MOVED = [
    ("sciembed.embeddings_io", "sciembed.io"),
    ("sciembed.ensemble", "sciembed.encoders.ensemble"),
    ("sciembed.st_router", "sciembed.encoders.router"),
    ("sciembed.demo", "sciembed.commands.demo"),
    ("sciembed.embed_job", "sciembed.jobs.embed"),
    ("sciembed.neighbours", "sciembed.search.neighbours"),
    ("sciembed.training.data", "sciembed.training.examples"),
    ("sciembed.training.sampling", "sciembed.training.task_batches"),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_a_moved_module_names_its_new_module(old, new):
    for statement in (f"import {old}", f"from {old} import name"):
        with pytest.raises(ImportError, match=rf"{old} was removed: use {new}"):
            exec(statement, {})
    assert importlib.import_module(new)  # the new module is there


def test_a_moved_module_imported_from_its_package_names_its_new_module():
    with pytest.raises(ImportError, match=r"sciembed.training.data was removed: use sciembed.training.examples"):
        exec("from sciembed.training import data", {})
    assert callable(sciembed.neighbours)  # the name now holds the function


@pytest.mark.parametrize("old", ["onnx_cache", "openvino_cache"])
def test_an_engine_s_cache_folder_names_the_one_engine_cache(tiny_bert, tmp_path, old):
    message = rf"^sciembed.PaperEncoder.{old} was removed: use engine_cache=, the one folder holding onnx/ and"
    with pytest.raises(TypeError, match=message):  # before the (missing) model is looked for
        sciembed.Encoder.from_pretrained(tmp_path / "no-model", backend="onnx", **{old: tmp_path})
    encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    with pytest.raises(TypeError, match=message):
        sciembed.PaperEncoder(encoder.model, encoder.tokenizer, **{old: tmp_path})
    with pytest.raises(AttributeError, match=message):
        getattr(encoder, old)
    onnx = sciembed.PaperEncoder(encoder.model, encoder.tokenizer, backend="onnx", engine_cache=tmp_path)
    assert onnx.engine_cache == tmp_path and encoder.engine_cache is None


def test_the_encoder_takes_at_most_12_parameters_and_names_where_precision_went(tiny_bert):
    parameters = inspect.signature(sciembed.PaperEncoder).parameters
    assert "engine_cache" in parameters and "precision" not in parameters
    assert len(parameters) <= 12, list(parameters)
    message = r"^sciembed.PaperEncoder.precision was removed: use quantization= for the ONNX or OpenVINO weights"
    with pytest.raises(TypeError, match=message):  # before the (missing) model is looked for
        sciembed.PaperEncoder.from_pretrained("no-such-model", precision="int8")
    encoder = sciembed.PaperEncoder.from_pretrained(tiny_bert, device="cpu")
    with pytest.raises(TypeError, match=message + r".*encode\(precision=\) for the vectors"):
        sciembed.PaperEncoder(encoder.model, encoder.tokenizer, precision="int8")


@pytest.mark.parametrize(
    ("old", "replacement"),
    [
        ("pooling", r"embedding=sciembed\.training\.trainers\.PaperEmbedding\(pooling=\.\.\.\)"),
        ("task_format", r"embedding=sciembed\.training\.trainers\.PaperEmbedding\(task_format=\.\.\.\)"),
        ("anchor_papers", r"anchoring=sciembed\.training\.trainers\.Anchoring\(papers=\.\.\.\)"),
        ("anchor_batch_size", r"anchoring=sciembed\.training\.trainers\.Anchoring\(batch_size=\.\.\.\)"),
    ],
)
def test_a_trainer_keyword_moved_into_a_dataclass_names_it(tiny_bert, tmp_path, old, replacement):
    from transformers import AutoModel, TrainingArguments

    from sciembed.training.trainers import PaperEmbedding, TripletTrainer

    model = AutoModel.from_pretrained(tiny_bert)
    arguments = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, save_strategy="no")
    with pytest.raises(TypeError, match=rf"^sciembed\.training\.trainers\.TripletTrainer\.{old} was removed: use "):
        TripletTrainer(model, arguments, **{old: None})
    with pytest.raises(TypeError, match=replacement):
        TripletTrainer(model, arguments, **{old: None})
    trainer = TripletTrainer(model, arguments, embedding=PaperEmbedding(pooling="mean"))
    assert (trainer.pooling, trainer.task_format) == ("mean", "proximity")  # the triplets' format stays the default
