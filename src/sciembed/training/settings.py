"""Typed training settings: the sections every recipe shares, and checks on dotted keys.

A run's settings are five sections (``model``, ``embedding``, ``data``, ``loss``, ``training``) of dotted keys.
Each section has a schema, a name and a type hint per key, from the dataclasses here and the objective's own.
A key outside its schema, or a value its hint does not take, is refused before any data is read.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

SECTIONS = ("model", "embedding", "data", "loss", "training")

#: A section's schema: each key with its type hint.
Schema = dict[str, Any]


class DataKind(enum.Enum):
    """What ``--data`` must hold for a recipe."""

    CITATIONS = "citations"
    SCIREPEVAL = "scirepeval"
    LABELLED = "labelled"


@dataclass(frozen=True)
class EmbeddingSettings:
    """How the trained model embeds a paper.

    Attributes:
        pooling: ``cls`` or ``mean`` (unset: the base's, or the family's own).
        normalize: whether embeddings are unit vectors (unset: as the base).
        max_length: the tokens each paper is cut to (unset: the base's).
    """

    pooling: Literal["cls", "mean"] | None = None
    normalize: bool | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class DataSettings:
    """How examples are made from ``--data``.

    Attributes:
        held_out: the share of citation queries held out for evaluation.
        validation: the share of citation queries kept for validation.
        seed: the seed of splits and samples.
        max_examples: the most training rows (``None``: all).
        max_length: the tokens each training text is cut to (unset: ``embedding.max_length``).
        exclude: papers never trained on, a list of ids or a file of them.
        anchor_papers: papers whose pairwise cosines training keeps, a paper file or a list of them.
    """

    held_out: float = 0.0
    validation: float = 0.0
    seed: int = 0
    max_examples: int | None = None
    max_length: int | None = None
    exclude: str | os.PathLike[str] | list[str | int] | None = None
    anchor_papers: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None


def schema_of(settings_class: type) -> Schema:
    """The fields of a settings dataclass with their type hints.

    Args:
        settings_class: a dataclass.
    """
    hints = typing.get_type_hints(settings_class)
    return {f.name: hints[f.name] for f in dataclasses.fields(settings_class)}


def typed(settings_class: type, values: Mapping[str, Any]) -> Any:
    """An instance of ``settings_class`` from the values that name its fields.

    Args:
        settings_class: a dataclass.
        values: a section's settings (keys of other schemas are left out).
    """
    names = {f.name for f in dataclasses.fields(settings_class)}
    return settings_class(**{key: value for key, value in values.items() if key in names})


def check_section(section: str, values: Mapping[str, Any], schema: Schema, owner: str) -> None:
    """Refuse a key outside ``schema`` or a value its hint does not take.

    Args:
        section: the section's name.
        values: the section's settings.
        schema: the keys the section takes, with their hints.
        owner: what defines the schema, for messages (``recipe specter``).
    """
    unknown = sorted(set(values) - set(schema))
    if unknown:
        keys = ", ".join(f"{section}.{key}" for key in unknown)
        raise ValueError(
            f"unknown setting(s) {keys} for {owner}; its {section} settings: {', '.join(sorted(schema)) or 'none'}"
        )
    for key, value in values.items():
        check_value(f"{section}.{key}", value, schema[key])


def check_value(key: str, value: Any, hint: Any) -> None:
    """Refuse ``value`` when the type hint ``hint`` does not take it.

    Args:
        key: the dotted key, for the message.
        value: the value given.
        hint: the key's type hint.
    """
    if not fits(value, hint):
        raise ValueError(f"setting {key}={value!r}: expected {hint_name(hint)}, got {type(value).__name__}")


def fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` names (hints sciembed does not check take anything).

    Args:
        value: the value.
        hint: a type hint.
    """
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if hint is type(None) or hint is None:
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, option) for option in typing.get_args(hint))
    if origin is Literal:
        return any(value == option and type(value) is type(option) for option in typing.get_args(hint))
    if origin in (list, tuple):
        (item, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, (list, tuple)) and all(fits(v, item) for v in value)
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float)
    if hint is str:
        return isinstance(value, str)
    if origin is os.PathLike or hint is os.PathLike:
        return isinstance(value, os.PathLike)
    return True


def hint_name(hint: Any) -> str:
    """A type hint as a message names it (``int or null``, ``one of 'cls', 'mean'``).

    Args:
        hint: a type hint.
    """
    origin = typing.get_origin(hint)
    if hint is type(None) or hint is None:
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(hint_name(option) for option in typing.get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(repr(option) for option in typing.get_args(hint))
    if origin in (list, tuple):
        return f"a list of {hint_name((typing.get_args(hint) or (Any,))[0])}"
    if origin is os.PathLike or hint is os.PathLike:
        return "a path"
    return getattr(hint, "__name__", str(hint))


def signature_schema(function: Any, leave_out: tuple[str, ...] = ()) -> Schema:
    """The keyword parameters of ``function`` with their type hints.

    Args:
        function: a function or class (its ``__init__``).
        leave_out: parameters that are not settings.
    """
    import inspect

    target = function.__init__ if isinstance(function, type) else function
    try:
        hints = typing.get_type_hints(target)
    except (NameError, TypeError):
        hints = {}
    parameters = inspect.signature(target).parameters
    return {
        name: hints.get(name, Any)
        for name, parameter in parameters.items()
        if name not in ("self", *leave_out) and parameter.kind is not parameter.VAR_KEYWORD
    }


@functools.cache
def training_schema() -> Schema:
    """The ``TrainingArguments`` fields a setting may name, typed where their hints are plain types."""
    from transformers import TrainingArguments

    hints = typing.get_type_hints(TrainingArguments)
    fields = {f.name for f in dataclasses.fields(TrainingArguments) if f.init} - {"output_dir"}
    return {name: _plain(hints[name]) for name in sorted(fields)}


def _plain(hint: Any) -> Any:
    """``hint`` when it is made of plain types only, else ``Any`` (left to ``TrainingArguments``)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return hint if set(options) <= {bool, int, float, str, type(None)} else Any
