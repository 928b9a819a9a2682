"""The benchmarks ``sciembed evaluate`` runs, by the names the command line and :func:`~sciembed.evaluation.evaluate` take."""

BENCHMARK_NAMES = ("scidocs", "scirepeval", "multi-scidocs", "beir", "cocitation", "cacm")
