"""Public names sciembed removed: looking one up raises an error that names what replaces it."""

from __future__ import annotations

import dis
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FrameType, ModuleType
from typing import Any, NoReturn, TypeVar

Function = TypeVar("Function", bound=Callable[..., Any])


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


#: Each module path sciembed moved and the module that replaces it.
MOVED_MODULES: dict[str, str] = {
    "sciembed.demo": "sciembed.commands.demo",
    "sciembed.embed_job": "sciembed.jobs.embed (the command: sciembed.commands.embed)",
    "sciembed.embeddings_io": "sciembed.io",
    "sciembed.ensemble": "sciembed.encoders.ensemble",
    "sciembed.evaluation.neighbours": "sciembed.neighbours (sciembed.search.neighbours)",
    "sciembed.neighbours": "sciembed.search.neighbours (the command: sciembed.commands.neighbours)",
    "sciembed.st_router": "sciembed.encoders.router",
    "sciembed.training.data": "sciembed.training.examples",
    "sciembed.training.sampling": "sciembed.training.task_batches",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Fails the import of each moved module path with an error naming the new module.

    Args:
        moved: each old module path and what replaces it.
    """

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = moved

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec whose loading raises for a moved module path, else None."""
        return importlib.util.spec_from_loader(fullname, self) if fullname in self.moved else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        """Leaves module creation to Python's default."""
        return None

    def exec_module(self, module: ModuleType) -> NoReturn:
        """Raises :class:`RemovedNameError` naming the module that replaces ``module``."""
        owner, _, name = module.__name__.rpartition(".")
        raise RemovedNameError(removed_message(owner, name, self.moved[module.__name__]), name=module.__name__)


def install_moved_modules() -> None:
    """Puts the finder for :data:`MOVED_MODULES` first on ``sys.meta_path``, once."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder(MOVED_MODULES))


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
    """Whether the code that looked the name up runs a ``from ... import`` statement.

    That code is the first frame above the modules' ``__getattr__``.
    """
    while frame is not None and frame.f_code.co_name == "__getattr__":
        frame = frame.f_back
    return frame is not None and dis.opname[frame.f_code.co_code[frame.f_lasti]] == "IMPORT_FROM"


def refuse_removed_keywords(owner: str, given: Iterable[str], removed: Mapping[str, str]) -> None:
    """Refuse a removed keyword argument with an error naming what replaces it.

    Args:
        owner: the function or class that took the keyword, as the user would write it.
        given: the keyword arguments given.
        removed: each removed keyword and what replaces it.

    Raises:
        TypeError: for the first removed keyword in ``given``.
    """
    for name in given:
        if name in removed:
            raise TypeError(removed_message(owner, name, removed[name]))


def removed_keywords(owner: str, removed: Mapping[str, str]) -> Callable[[Function], Function]:
    """A decorator that refuses each keyword of ``removed``, keeping the function's own signature.

    Args:
        owner: the function or class that took the keywords, as the user would write it.
        removed: each removed keyword and what replaces it.
    """

    def decorate(function: Function) -> Function:
        @functools.wraps(function)
        def refusing(*args: Any, **kwargs: Any) -> Any:
            refuse_removed_keywords(owner, kwargs, removed)
            return function(*args, **kwargs)

        return typing.cast(Function, refusing)

    return decorate


class RemovedAttribute:
    """A class attribute that was removed: reading it raises an error naming what replaces it.

    Args:
        owner: the class, as the user would write it (``sciembed.PaperEncoder``).
        replacement: what to use instead, as the user would write it.
    """

    def __init__(self, owner: str, replacement: str) -> None:
        self.owner, self.replacement, self.name = owner, replacement, ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> NoReturn:
        raise AttributeError(removed_message(self.owner, self.name, self.replacement))
