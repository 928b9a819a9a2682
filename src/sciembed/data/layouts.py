"""The layouts of training data ``sciembed train`` reads, each with an example of about five lines.

One list, shown by ``sciembed train --help`` and docs/training.md (a test keeps that copy equal), so a
user can tell from the help alone which files to give and how they must look. A light module: the CLI
builds its help from it without importing a reader.

:class:`DatasetLayout` states the configs and columns of a folder that ``datasets_scripts/`` builds. Each
evaluation benchmark's layout is on its class (``sciembed.evaluation.benchmarks``). The training sets' layout
(:data:`SPECTER_TRIPLETS`) is here. Both register in :data:`DATASET_LAYOUTS`, which
:func:`sciembed.data.benchmarks.load_benchmark` reads names from.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class DataLayout:
    """One layout of training data.

    Attributes:
        name: what it is.
        given_as: the command-line options that give it.
        kinds: the recipe data kinds it serves (:attr:`sciembed.training.recipes.Recipe.data`: ``citations``,
            ``scirepeval``, ``labelled``, ``triplets``: the citation recipes that train on triplets, not pairs).
        example: its first lines, each file headed ``==> name <==`` (as ``head`` prints several files).
    """

    name: str
    given_as: str
    kinds: tuple[str, ...]
    example: str


TRAINING_LAYOUTS: tuple[DataLayout, ...] = (
    DataLayout(
        "papers + citation pairs (CSV / TSV)",
        "--papers papers.jsonl --citations cites.csv",
        ("citations",),
        "==> papers.jsonl <==  (or .csv / .parquet: paper_id, title, abstract)\n"
        '{"paper_id": "p1", "title": "Garbage collection", "abstract": "We reclaim memory."}\n'
        "==> cites.csv <==  (header citing,cited or from,to or source,target; tabs for TSV; other columns ignored)\n"
        "citing,cited\n"
        "p1,p2",
    ),
    DataLayout(
        "papers + SNAP edge list",
        "--papers papers.jsonl --citations Cit-HepTh.txt",
        ("citations",),
        "==> Cit-HepTh.txt <==  (# comment lines, then citing<TAB>cited; no header)\n"
        "# Paper citation network of Arxiv High Energy Physics Theory category\n"
        "# FromNodeId\tToNodeId\n"
        "1001\t9304045\n"
        "1001\t9308122",
    ),
    DataLayout(
        "SMART collection (CACM)",
        "--data cacm/ (a folder with one *.all file, any case, or the file)",
        ("citations", "labelled"),
        "==> cacm.all <==  (.X: id<TAB>type<TAB>id, 5 citation, 6 co-citation, 4 coupling; CISI's weights: "
        "--smart-links all)\n"
        ".I 1\n"
        ".T\n"
        "Preliminary Report-International Algebraic Language\n"
        ".X\n"
        "100\t5\t1",
    ),
    DataLayout(
        "SPECTER release",
        "--data training/ (data.json + metadata.json)",
        ("citations",),
        "==> data.json <==  (count 5: cited by the query; 1: cited by a paper it cites)\n"
        '{"q1": {"p1": {"count": 5}, "p2": {"count": 1}}}\n'
        "==> metadata.json <==\n"
        '{"q1": {"paper_id": "q1", "title": "Query paper", "abstract": "..."},\n'
        ' "p1": {"paper_id": "p1", "title": "Cited paper", "abstract": "..."}}',
    ),
    DataLayout(
        "S2ORC metadata",
        "--data metadata.jsonl (or a folder of *.jsonl)",
        ("citations",),
        "==> metadata.jsonl <==\n"
        '{"paper_id": "1", "title": "A", "abstract": "...", "outbound_citations": ["2"], "inbound_citations": []}\n'
        '{"paper_id": "2", "title": "B", "abstract": null, "outbound_citations": [], "inbound_citations": ["1"]}',
    ),
    DataLayout(
        "SciRepEval citation triplets",
        "--data specter_small.json",
        ("triplets",),
        "==> specter_small.json <==\n"
        '[{"query": {"corpus_id": 1, "title": "Query paper", "abstract": "..."},\n'
        '  "pos": {"corpus_id": 2, "title": "Cited paper", "abstract": "..."},\n'
        '  "neg": {"corpus_id": 3, "title": "Unrelated paper", "abstract": "..."}}]',
    ),
    DataLayout(
        "SciRepEval training samples",
        "--data scirepeval-samples/ (any of fos_small.json, mesh_small.json, specter_small.json, search_small.jsonl)",
        ("scirepeval",),
        "==> fos_small.json <==\n"
        '[{"corpus_id": 1, "title": "A", "abstract": "...", "labels": [3], "labels_text": ["Physics"]}]\n'
        "==> search_small.jsonl <==\n"
        '{"query": "graph embedding", "candidates": [{"corpus_id": 1, "title": "A", "abstract": "...", "score": 1}]}',
    ),
    DataLayout(
        "task mixture",
        "--data mixture.json (or .yaml: a multi-task recipe's tasks, or one citation graph per domain)",
        ("scirepeval", "citations"),
        "==> mixture.json <==  (SciRepEval's task list; data relative to this file; exclude: ids never trained on)\n"
        '[{"name": "cite", "type": "proximity", "data": "cacm"},\n'
        ' {"name": "categories", "type": "classification", "data": "cacm", "exclude": ["1", "7"]},\n'
        ' {"name": "fos", "type": "classification", "data": "fos_small.json", "sample_size": 2000},\n'
        ' {"name": "search", "type": "search", "data": "search_small.jsonl"}]',
    ),
    DataLayout(
        "labelled papers",
        "--data cacm/ (CR categories) or --data mesh_small.json (MeSH descriptors)",
        ("labelled",),
        "==> mesh_small.json <==\n"
        '[{"mag_id": 1, "corpus_id": 11, "title": "A", "abstract": "...", "descriptor": "Neoplasms"}]\n'
        "==> cacm.all <==  (a record's label: the top class of its first .C category, here 4)\n"
        ".I 1\n"
        ".T\n"
        "Preliminary Report-International Algebraic Language\n"
        ".C\n"
        "4.22 5.24",
    ),
)


PAPER_COLUMNS = ("paper_id", "title", "abstract")
QREL_COLUMNS = ("query_id", "cand_id", "score")
TRIPLET_COLUMNS = ("query_id", "positive_id", "negative_id", "hard")
PAIR_COLUMNS = ("a", "b", "label")
#: Split name for the papers (or queries and candidates) to embed, as allenai/scirepeval names it.
EVALUATION_SPLIT = "evaluation"


@dataclass(frozen=True)
class DatasetLayout:
    """The configs a built dataset folder may hold, and their columns.

    Configs are matched by fnmatch patterns, and the first match wins.

    Attributes:
        name: the name :func:`sciembed.data.benchmarks.load_benchmark` and the dataset card know it by.
        description: one line for error messages and cards.
        configs: ``(pattern, required columns)`` pairs. A config matching no pattern is refused.
        required: patterns of which at least one config each must be present.
    """

    name: str
    description: str
    configs: tuple[tuple[str, tuple[str, ...]], ...]
    required: tuple[str, ...] = ()

    def columns_for(self, config: str) -> tuple[str, ...] | None:
        """The columns a config must hold, or ``None`` when the layout has no such config.

        Args:
            config: the config's name.
        """
        return next((columns for pattern, columns in self.configs if fnmatch.fnmatchcase(config, pattern)), None)


#: Every registered dataset layout by name, filled by :func:`register_layout`.
DATASET_LAYOUTS: dict[str, DatasetLayout] = {}


def register_layout(layout: DatasetLayout) -> DatasetLayout:
    """Make ``layout`` loadable by its name, and return it.

    Args:
        layout: the layout (its name must be new, or name this same layout).
    """
    known = DATASET_LAYOUTS.setdefault(layout.name, layout)
    if known != layout:
        raise ValueError(f"two dataset layouts are named {layout.name!r}: {known.description}; {layout.description}")
    return layout


def layout_named(name: str) -> DatasetLayout:
    """The registered dataset layout called ``name``.

    Args:
        name: a layout's name, such as ``scidocs`` or ``specter_triplets``.

    Raises:
        ValueError: an unknown name, naming the registered ones.
    """
    found = DATASET_LAYOUTS.get(name)
    if found is None:
        raise ValueError(
            f"unknown benchmark {name!r}; supported: {', '.join(DATASET_LAYOUTS)} (the evaluation benchmarks' "
            "layouts register when sciembed.evaluation is imported: from sciembed.evaluation import load_benchmark)"
        )
    return found


#: SPECTER / SPECTROID training triplets, as ``datasets_scripts/build_specter_triplets.py`` writes them.
SPECTER_TRIPLETS = register_layout(
    DatasetLayout(
        "specter_triplets",
        "SPECTER / SPECTROID training triplets from a citation graph",
        (("triplets", TRIPLET_COLUMNS), ("papers", PAPER_COLUMNS)),
        ("triplets", "papers"),
    )
)
