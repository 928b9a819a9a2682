"""The ``sciembed`` command: parses the command line and dispatches to :mod:`sciembed.commands`."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence

from . import __version__
from .commands import COMMANDS

logger = logging.getLogger("sciembed")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        with _library_progress_bars(shown=not getattr(args, "no_progress", False)):
            return args.run(args)
    except (ValueError, OSError) as error:  # bad input, missing files, unreachable Hub: one line, no traceback
        logger.error("%s", error)
        return 2


@contextlib.contextmanager
def _library_progress_bars(*, shown: bool) -> Iterator[None]:
    """``--no-progress`` hides the bars the libraries draw too (loading and saving weights, preparing datasets),
    not only sciembed's own; they are shown again afterwards (``main`` may run in a longer-lived process)."""
    if shown:
        yield
        return
    import datasets
    import huggingface_hub.utils
    from transformers.utils import logging as transformers_logging

    libraries = [
        (transformers_logging.disable_progress_bar, transformers_logging.enable_progress_bar),
        (huggingface_hub.utils.disable_progress_bars, huggingface_hub.utils.enable_progress_bars),
        (datasets.disable_progress_bars, datasets.enable_progress_bars),
    ]
    for disable, _ in libraries:
        disable()
    try:
        yield
    finally:
        for _, enable in libraries:
            enable()


def parser() -> argparse.ArgumentParser:
    """``sciembed`` and its subcommands."""
    root = argparse.ArgumentParser(
        prog="sciembed",
        description="Scientific-document embeddings: embed papers, build model families and evaluate them on the "
        "field's benchmarks.",
    )
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    root.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    subcommands = root.add_subparsers(title="commands", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subcommands)
    return root


if __name__ == "__main__":
    sys.exit(main())
