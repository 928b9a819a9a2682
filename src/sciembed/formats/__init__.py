"""Multi-format embeddings: one embedding per task format (SciRepEval).

SciRepEval (Singh et al. 2023) embeds a paper differently for each task format: classification,
regression, proximity and ad-hoc search queries (``adhoc_query``, search candidates take the
proximity format). A model does this in one of three ways, and this package is the one place that
knows how to ask each for a format:

- control codes (:class:`ControlCodeModel`): the format is an argument of the forward pass.
- format adapters and AdapterFusion (:mod:`.adapters`, in AdapterHub's files): the format's adapter
  (or its fusion) is made the active adapter setup.
- PALs (:mod:`.pals`): the format's projected attention layers are made active.

:func:`model_formats` lists the formats a model has. :func:`activate_format` switches a model to one
and returns the forward arguments that go with it. :mod:`sciembed.encode` and the trainers call it
before every forward pass, so a shared model can serve several formats in turn. (The package sits
below ``encode`` rather than in ``training`` because inference needs it as much as training does.)
"""

from __future__ import annotations

from pathlib import Path

from .embedding import (  # noqa: F401  (the package's API)
    activate_format,
    base_state_dict,
    format_parameter_counts,
    load_format_modules,
    model_formats,
    save_with_format_modules,
)
from .names import DEFAULT_FORMAT, FORMATS, ROUTE_CODE_FILES  # noqa: F401  (the package's names for them)


def route_code_paths() -> list[Path]:
    """sciembed's own copies of the remote-code files an exported multi-format folder ships.

    The files are :data:`~.names.ROUTE_CODE_FILES`, for :func:`sciembed.families.foreign_code` to recognise.
    """
    return [Path(__file__).parent / name for name in ROUTE_CODE_FILES]
