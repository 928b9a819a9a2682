"""The ``sciembed`` command: parses the command line and dispatches to :mod:`sciembed.commands`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from . import __version__
from .commands import COMMANDS

logger = logging.getLogger("sciembed")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args)
    except (ValueError, OSError) as error:  # bad input, missing files, unreachable Hub: one line, no traceback
        logger.error("%s", error)
        return 2


def parser() -> argparse.ArgumentParser:
    """``sciembed`` and its subcommands."""
    root = argparse.ArgumentParser(
        prog="sciembed",
        description="Scientific-document embeddings: embed papers, build model families and evaluate them on the field's benchmarks.",
    )
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    root.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    subcommands = root.add_subparsers(title="commands", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subcommands)
    return root


if __name__ == "__main__":
    sys.exit(main())
