"""The ``sciembed`` command: parses the command line and dispatches to :mod:`sciembed.commands`."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import platform
import sys
from collections.abc import Iterator, Sequence

from . import __version__
from .commands import COMMANDS

logger = logging.getLogger("sciembed")

#: glibc's ``mallopt`` parameter for the size from which an allocation gets pages of its own (``M_MMAP_THRESHOLD``).
_M_MMAP_THRESHOLD = -3
#: glibc's default threshold, which ``mallopt`` keeps fixed (see :func:`return_freed_memory`).
MMAP_THRESHOLD = 128 * 1024


def main(argv: Sequence[str] | None = None) -> int:
    root = parser()
    args = root.parse_args(argv)
    return_freed_memory()
    verbose, quiet = args.verbose, args.quiet
    if verbose and quiet:
        root.error("give -v (more output) or -q (less), not both")
    level = logging.ERROR if quiet else {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if quiet and hasattr(args, "no_progress"):
        args.no_progress = True
    try:
        with _library_progress_bars(shown=bool(verbose) and not getattr(args, "no_progress", False)):
            return args.run(args)
    except (ValueError, OSError) as error:  # bad input, missing files, unreachable Hub: one line, no traceback
        logger.error("%s", error)
        return 2


def return_freed_memory() -> bool:
    """Has glibc give the pages of large freed blocks back to the system at once.

    Such blocks hold tensors. Returns whether it did.

    glibc raises its mmap threshold each time such a block is freed, after which the next ones come from its heap,
    whose freed pages a process keeps: a training step's activations then stay resident for the rest of the run.
    Fixing the threshold at glibc's default keeps it from rising. A ``MALLOC_MMAP_THRESHOLD_`` set in the environment
    is left as it is, and so is any C library other than glibc.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or platform.libc_ver()[0] != "glibc":
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def _library_progress_bars(*, shown: bool) -> Iterator[None]:
    """The bars the libraries draw (loading and saving weights, downloads, preparing datasets), hidden unless
    ``shown``. Those that were on are turned on again afterwards (``main`` may run in a longer-lived process)."""
    if shown:
        yield
        return
    import datasets
    import huggingface_hub.utils
    from transformers.utils import logging as transformers_logging

    libraries = [
        (
            transformers_logging.is_progress_bar_enabled,
            transformers_logging.disable_progress_bar,
            transformers_logging.enable_progress_bar,
        ),
        (
            lambda: not huggingface_hub.utils.are_progress_bars_disabled(),
            huggingface_hub.utils.disable_progress_bars,
            huggingface_hub.utils.enable_progress_bars,
        ),
        (datasets.is_progress_bar_enabled, datasets.disable_progress_bars, datasets.enable_progress_bars),
    ]
    hidden = [enable for enabled, disable, enable in libraries if enabled()]
    for _, disable, _ in libraries:
        disable()
    try:
        yield
    finally:
        for enable in hidden:
            enable()


def parser() -> argparse.ArgumentParser:
    """``sciembed`` and its subcommands."""
    root = argparse.ArgumentParser(
        prog="sciembed",
        description="Scientific-document embeddings: embed papers, build model families and evaluate them on the "
        "field's benchmarks.",
    )
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_output_options(root, defaults=True)
    subcommands = root.add_subparsers(title="commands", required=True, metavar="COMMAND")
    for command in COMMANDS:
        parser = command.add_parser(subcommands)
        # A command with actions of its own (``sciembed index build``) takes -v and -q after its action too.
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for each in [parser, *(sub for action in nested for sub in action.choices.values())]:
            _add_output_options(each, defaults=False)
    return root


def _add_output_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Adds ``-v`` and ``-q``, taken before or after the subcommand.

    The subcommand's copy sets no default over the root's.

    Args:
        parser: the root parser or a subcommand's.
        defaults: give the options their defaults (the root parser only).
    """
    output = parser.add_argument_group("output")
    output.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0 if defaults else argparse.SUPPRESS,
        help="also log INFO (each step, its counts and timings) and show the libraries' own bars and messages "
        "(loading weights, downloads); -vv: DEBUG. By default sciembed shows one progress bar per long step, "
        "warnings and errors",
    )
    output.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if defaults else argparse.SUPPRESS,
        help="log errors only, and show no progress bars",
    )


if __name__ == "__main__":
    sys.exit(main())
