"""The benchmarks' names and layouts, as :mod:`.benchmarks` states them (kept for the names it exported)."""

from __future__ import annotations

from .benchmarks import BENCHMARK_NAMES, BENCHMARKS, BenchmarkInfo, layouts_text

#: What each benchmark reads: its name, what ``--data`` is and an example (:class:`~.benchmarks.BenchmarkInfo`).
BenchmarkLayout = BenchmarkInfo
BENCHMARK_LAYOUTS: tuple[BenchmarkInfo, ...] = tuple(benchmark.info for benchmark in BENCHMARKS.values())

__all__ = ["BENCHMARK_LAYOUTS", "BENCHMARK_NAMES", "BenchmarkLayout", "layouts_text"]
