"""Public names sciembed removed: looking one up raises an error that names what replaces it."""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, NoReturn


class RemovedNameError(ImportError):
    """A removed public name was imported or looked up. The message names its replacement."""


def removed_message(owner: str, name: str, replacement: str) -> str:
    """What an error about the removed ``owner.name`` says.

    Args:
        owner: the module or class that held the name.
        name: the removed name.
        replacement: what to use instead, as the user would write it.
    """
    return f"{owner}.{name} was removed: use {replacement}"


def module_getattr(module: str, removed: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` whose error for each name of ``removed`` says what replaces it.

    ``from module import name`` raises :class:`RemovedNameError` (Python's import statement would replace an
    AttributeError's message with its own). ``module.name``, ``getattr`` and ``hasattr`` see an AttributeError.

    Args:
        module: the module's ``__name__``.
        removed: each removed name and what replaces it.
    """

    def __getattr__(name: str) -> NoReturn:
        if name not in removed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        message = removed_message(module, name, removed[name])
        if _importing(sys._getframe(1)):
            raise RemovedNameError(message, name=module)
        raise AttributeError(message)

    return __getattr__


def _importing(frame: FrameType | None) -> bool:
    """Whether the code that looked the name up (the first frame above the modules' ``__getattr__``) is running a
    ``from ... import`` statement."""
    while frame is not None and frame.f_code.co_name == "__getattr__":
        frame = frame.f_back
    return frame is not None and dis.opname[frame.f_code.co_code[frame.f_lasti]] == "IMPORT_FROM"
