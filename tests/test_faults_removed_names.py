"""A public name sciembed removed is not a bare ImportError: importing or looking it up names what replaces it."""

from __future__ import annotations

import importlib

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
