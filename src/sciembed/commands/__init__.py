"""The ``sciembed`` subcommands, one module each.

Every module has ``add_parser(subcommands)``, which declares the subcommand and its options (shared
options come from :mod:`.options`, choices from the library), and ``run(args) -> int``, which does the
work. Heavy libraries (torch, transformers, scikit-learn) are imported inside ``run``, so ``sciembed
--help`` answers at once.
"""

from . import compare, demo, embed, evaluate, export, from_bert, index, neighbours, push, train

#: In the order ``sciembed --help`` lists them.
COMMANDS = (embed, from_bert, evaluate, compare, train, export, push, demo, neighbours, index)

__all__ = ["COMMANDS"]
