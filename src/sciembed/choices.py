"""Closed sets of named choices (string enums), parsed once where a value comes in."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar


class StrChoice(StrEnum):
    """A string enum whose repr is its value's, so that messages show ``'onnx'``, not ``<Backend.ONNX: 'onnx'>``."""

    def __repr__(self) -> str:
        return repr(self.value)


Choice = TypeVar("Choice", bound=StrEnum)


def choices(kind: type[StrEnum]) -> tuple[str, ...]:
    """The values of ``kind``, in order, as plain strings (for argparse choices and messages).

    Args:
        kind: the enum of choices.
    """
    return tuple(member.value for member in kind)


def parse_choice(kind: type[Choice], value: Any, what: str) -> Choice:
    """``value`` as a member of ``kind``, or an error naming ``what`` and the choices.

    Args:
        kind: the enum of choices.
        value: a member or its string value.
        what: the setting as messages name it (``"quantization"``).

    Raises:
        ValueError: ``value`` is none of the choices.
    """
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{what} must be one of {choices(kind)}, got {value!r}") from None
