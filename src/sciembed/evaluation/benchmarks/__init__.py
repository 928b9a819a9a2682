"""The benchmarks ``sciembed evaluate`` runs, one module and one class each.

One table of them, :data:`BENCHMARKS`, feeds the command line's choices, help and layouts, the model cards, the
tables and docs/evaluation.md (a test keeps that page equal to :func:`layouts_text`). A light package: the CLI builds
its help from it without importing an evaluator.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TypeAlias

from .base import Benchmark, BenchmarkInfo, Candidates, NoOptions, Reading, Scored, Scoring, Similarity, option_flag
from .beir import Beir, BeirOptions
from .cacm import Cacm, CacmOptions
from .classification import Classification, ClassificationOptions
from .cocitation import Cocitation
from .mteb import Mteb, MtebOptions
from .multi_scidocs import MultiSciDocs
from .retrieval import Retrieval, RetrievalOptions
from .scidocs import SciDocs, SciDocsOptions
from .scirepeval import SciRepEval, SciRepEvalOptions

#: Every benchmark by its ``--benchmark`` name, in the order the help lists them.
BENCHMARKS: dict[str, Benchmark] = {
    benchmark.name: benchmark
    for benchmark in (
        SciDocs(),
        SciRepEval(),
        MultiSciDocs(),
        Beir(),
        Cocitation(),
        Cacm(),
        Classification(),
        Retrieval(),
        Mteb(),
    )
}
BENCHMARK_NAMES = tuple(BENCHMARKS)
#: Any benchmark's own options dataclass, as ``evaluate(..., options=...)`` takes it.
BenchmarkOptions: TypeAlias = (
    BeirOptions
    | CacmOptions
    | ClassificationOptions
    | MtebOptions
    | NoOptions
    | RetrievalOptions
    | SciDocsOptions
    | SciRepEvalOptions
)


def benchmark_named(name: str) -> Benchmark:
    """The benchmark called ``name`` (``multi_scidocs`` reads as ``multi-scidocs``).

    Args:
        name: a ``--benchmark`` value.

    Raises:
        ValueError: an unknown name, naming the supported ones.
    """
    found = BENCHMARKS.get(name.replace("_", "-"))
    if found is None:
        raise ValueError(f"unknown benchmark {name!r}; supported: {', '.join(BENCHMARK_NAMES)}")
    return found


def option_flags() -> dict[str, str]:
    """Every benchmark option's name and its command-line flag."""
    return {f.name: option_flag(f.name, f.metadata) for b in BENCHMARKS.values() for f in fields(b.Options)}


def layouts_text(indent: str = "") -> str:
    """Every benchmark's name, what ``--data`` is and its example, blocks separated by a blank line.

    Args:
        indent: the indent of each block (its example indented two spaces further). None for docs/evaluation.md.
    """
    inner = indent + "  " if indent else ""
    blocks = [
        f"{indent}[{b.name}]  --data: {b.info.reads}\n"
        + "\n".join(inner + line for line in b.info.example.splitlines())
        for b in BENCHMARKS.values()
    ]
    return "\n\n".join(blocks)


__all__ = [
    "BENCHMARKS",
    "BENCHMARK_NAMES",
    "Beir",
    "BeirOptions",
    "Benchmark",
    "BenchmarkInfo",
    "BenchmarkOptions",
    "Cacm",
    "CacmOptions",
    "Candidates",
    "Classification",
    "ClassificationOptions",
    "Cocitation",
    "Mteb",
    "MtebOptions",
    "MultiSciDocs",
    "NoOptions",
    "Reading",
    "Retrieval",
    "RetrievalOptions",
    "SciDocs",
    "SciDocsOptions",
    "SciRepEval",
    "SciRepEvalOptions",
    "Scored",
    "Scoring",
    "Similarity",
    "benchmark_named",
    "layouts_text",
    "option_flags",
]
