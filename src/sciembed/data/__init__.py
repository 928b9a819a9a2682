"""Paper records, the collections and benchmark releases they come in, citation graphs and samplers.

One module per format (papers, smart, specter, s2orc, scidocs, scirepeval, beir, cocitation). ``graph``
(CitationGraph). Samplers (``samplers``: SPECTER / SPECTROID triplets, ``scincl``: SciNCL triplets,
``cocitation_sampling``: the MoE paper's co-citation pairs). ``multi_scidocs`` (the Multi-SciDocs
builder). ``benchmarks`` (``load_benchmark``, also reachable as ``sciembed.data.load_benchmark``).
"""


def __getattr__(name: str):
    # Lazy, so that `import sciembed` (and the CLI's start-up) does not import datasets.
    if name == "load_benchmark":
        from .benchmarks import load_benchmark

        return load_benchmark
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
