"""Does each recipe earn its place? The recipes table: every recipe from the embedded MiniLM, judged held out.

Each system (``systems.py``) is a recipe plus the settings that differ from its defaults, named by them:
``specter[lr=2e-5,wise=1]``. Per seed, CACM's linked papers are split by query paper; every row trains with the same
budget and is scored on held-out CACM cite, hep-th cite, CACM categories, arXiv archives and SciRepEval's fields of
study and search (``tasks.py``), next to MiniLM as published and sentence-transformers' own trainer. ``stats.py`` draws
the paired 95% bootstrap intervals with ``sciembed.evaluation.compare``; ``report.py`` writes the table and the plot.

    python benchmarks/recipes run --data ../shared/data --seeds 0 1 2 --steps 60
    python benchmarks/recipes table
"""

from .report import COLUMNS, figure, plot, table
from .stats import BOOTSTRAP, paired_interval, summarise
from .systems import BATCH, PEER, REFERENCE, SHARE, SYSTEMS, System, budget
from .tasks import (
    FixedTasks,
    arxiv_archive_files,
    fields_task,
    hepth_test_sample,
    out_of_domain_suite,
    write_domains,
    write_mixture,
)
from .training import but_share, head_predictions, peer_trainer, resolved_defaults, reweigh

__all__ = [
    "BATCH",
    "BOOTSTRAP",
    "COLUMNS",
    "PEER",
    "REFERENCE",
    "SHARE",
    "SYSTEMS",
    "FixedTasks",
    "System",
    "arxiv_archive_files",
    "budget",
    "but_share",
    "fields_task",
    "figure",
    "head_predictions",
    "hepth_test_sample",
    "out_of_domain_suite",
    "paired_interval",
    "peer_trainer",
    "plot",
    "resolved_defaults",
    "reweigh",
    "summarise",
    "table",
    "write_domains",
    "write_mixture",
]
