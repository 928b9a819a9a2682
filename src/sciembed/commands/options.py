"""Options that several subcommands take, declared once, with their choices read from the library."""

from __future__ import annotations

import argparse
from typing import Any

from ..encode import POOLINGS
from ..formats.names import FORMATS

#: The shared data folder of this project's machines: where `make demo` and `sciembed neighbours` look first.
DEFAULT_DATA = "../shared/data"

_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "model": ("--model", {"help": "Hub id or local folder (default: the embedded all-MiniLM-L6-v2)"}),
    "pooling": ("--pooling", {"choices": POOLINGS, "help": "pooling of a plain transformers model (default: the model's own; CLS "
                              "for BERT as SPECTER); a sentence-transformers folder is then read as a plain transformer at its "
                              "own max_seq_length"}),
    "task_format": ("--task-format", {"choices": FORMATS, "help": "format of a multi-format model (default: the model's own)"}),
    "domain": ("--domain", {"help": "domain of a mixture-of-experts model with domain routing (one of its config's domains)"}),
    "max_length": ("--max-length", {"type": int, "help": "tokens per text (default: the model's limit, at most 512)"}),
    "batch_size": ("--batch-size", {"type": int, "default": 32, "help": "texts per forward pass"}),
    "device": ("--device", {"help": "cpu, cuda, cuda:1, ... (default: cuda when available, else cpu)"}),
    "trust_remote_code": ("--trust-remote-code", {"action": "store_true", "help": "allow a Hub model to run its own modeling code"}),
    "no_progress": ("--no-progress", {"action": "store_true", "help": "hide the progress bar"}),
}


def add_options(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add the shared options ``names`` (keys of the table above, e.g. ``"model"``, ``"batch_size"``) to ``parser``."""
    for name in names:
        flag, settings = _OPTIONS[name]
        parser.add_argument(flag, **settings)

