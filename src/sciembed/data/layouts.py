"""The layouts of training data ``sciembed train`` reads, each with an example of about five lines.

One list, shown by ``sciembed train --help`` and docs/training.md (a test keeps that copy equal), so a
user can tell from the help alone which files to give and how they must look. A light module: the CLI
builds its help from it without importing a reader.
"""

from __future__ import annotations

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
