"""What sciembed shows while it works: progress bars follow the ``sciembed`` logger's level.

The library configures no logging. An application (or the ``sciembed`` command) sets the level, and a progress
bar left to the library (``show_progress_bar=None``) is shown when the ``sciembed`` logger would show INFO records,
as sentence-transformers does with its own logger.
"""

from __future__ import annotations

import logging

#: The logger every sciembed module's logger is a child of.
LOGGER_NAME = "sciembed"


def progress_enabled(show_progress_bar: bool | None) -> bool:
    """Whether to show a progress bar.

    That is the caller's choice, or for ``None`` whether ``sciembed`` logs INFO.

    Args:
        show_progress_bar: ``True`` or ``False`` to decide, ``None`` to follow the ``sciembed`` logger's level.
    """
    if show_progress_bar is not None:
        return bool(show_progress_bar)
    return logging.getLogger(LOGGER_NAME).getEffectiveLevel() <= logging.INFO
