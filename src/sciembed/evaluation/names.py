"""The benchmarks ``sciembed evaluate`` runs, by the names the command line and :func:`~sciembed.evaluation.evaluate`
take, each with what its ``--data`` is and a tiny example of its layout.

One list, shown by ``sciembed evaluate --help`` and docs/evaluation.md (a test keeps that copy equal and reads every
file example with the loaders). A light module: the CLI builds its help from it without importing an evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchmarkLayout:
    """One benchmark and the data it reads.

    Attributes:
        name: the ``--benchmark`` value.
        reads: what ``--data`` (and the options that go with it) is, in one line.
        example: the first lines of its files, each headed ``==> name <==`` (as ``head`` prints several files).
    """

    name: str
    reads: str
    example: str


BENCHMARK_LAYOUTS: tuple[BenchmarkLayout, ...] = (
    BenchmarkLayout(
        "scidocs",
        "a folder in SciDocs' release layout (any subset of its tasks)",
        "==> paper_metadata_view_cite_read.json <==  (also paper_metadata_mag_mesh.json for mag/ and mesh/)\n"
        '{"p1": {"paper_id": "p1", "title": "Garbage collection", "abstract": "We reclaim memory."}}\n'
        "==> cite/test.qrel <==  (also val.qrel; cocite/, coview/, coread/: qid 0 pid relevance)\n"
        "p1 0 p2 1\n"
        "==> mag/train.csv <==  (also test.csv, val.csv; mesh/; recomm/ holds SciDocs' click logs)\n"
        "pid,class_label\n"
        "p1,4",
    ),
    BenchmarkLayout(
        "scirepeval",
        "allenai/scirepeval with --test-data allenai/scirepeval_test (Hub ids or local copies), "
        "or a folder built by datasets_scripts/build_scirepeval.py",
        "==> allenai/scirepeval, config fos, split evaluation <==  (the papers of a task)\n"
        '{"doc_id": "11", "title": "A", "abstract": "..."}\n'
        "==> allenai/scirepeval_test, config fos, splits train / test <==  (labels; "
        "ranking tasks: query_id, cand_id, score)\n"
        '{"paper_id": "11", "label": [3]}',
    ),
    BenchmarkLayout(
        "multi-scidocs",
        "a folder in SciDocs' layout built from S2ORC data by datasets_scripts/build_multi_scidocs.py "
        "(cite/, cocite/; mag/ copied from SciDocs)",
        "==> cite/test.qrel <==  (and paper_metadata_view_cite_read.json, as scidocs; up to 5 positives, "
        "500 negatives)\n"
        "p1 0 p2 1\n"
        "==> query_fields.json <==  (task -> query id -> field of study, for per-field scores)\n"
        '{"cite": {"p1": "Biology"}}',
    ),
    BenchmarkLayout(
        "beir",
        "a BEIR dataset folder (SciFact, TREC-COVID, NFCorpus, SCIDOCS)",
        "==> corpus.jsonl <==\n"
        '{"_id": "d1", "title": "Garbage collection", "text": "We reclaim memory."}\n'
        "==> queries.jsonl <==\n"
        '{"_id": "q1", "text": "memory reclamation"}\n'
        "==> qrels/test.tsv <==\n"
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t1",
    ),
    BenchmarkLayout(
        "cocitation",
        "GleghornLab/abstract_domain_cvd (or cvd, copd, cancer, parasitic, autoimmune), or a "
        "local folder in that Hub layout",
        "==> splits valid / test, columns a, b, label <==  (two abstracts; 1: cited together)\n"
        '{"a": "Garbage collection ...", "b": "Reference counting ...", "label": 1}',
    ),
    BenchmarkLayout(
        "cacm",
        "a SMART collection folder (cacm.all; query.text and qrels.text for the search task)",
        "==> cacm.all <==  (.X: id<TAB>5<TAB>id citation links; .C: CR categories)\n"
        ".I 1\n"
        ".T\n"
        "Preliminary Report-International Algebraic Language\n"
        ".C\n"
        "4.22 5.24",
    ),
    BenchmarkLayout(
        "classification",
        "a labels CSV (paper_id,label[,split]) with --papers FILE; without a split column, a "
        "stratified split (--test-size, --seed)",
        "==> labels.csv <==  (header paper_id,label[,split]; tabs for TSV; other columns ignored)\n"
        "paper_id,label\n"
        "p1,cs\n"
        "==> papers.jsonl <==  (or .json / .csv / .parquet: paper_id, title, abstract)\n"
        '{"paper_id": "p1", "title": "Garbage collection", "abstract": "We reclaim memory."}',
    ),
    BenchmarkLayout(
        "retrieval",
        "a qrels file with --papers FILE [--queries FILE]; without --queries a query id is a paper of --papers",
        "==> qrels.txt <==  (TREC qid 0 docid rel, or qid docid rel; spaces, tabs or commas; integer relevance; "
        "a header line naming the columns allowed)\n"
        "p1 0 p2 1\n"
        "==> queries.jsonl <==  (optional text queries, {_id|query_id|id, text[, paper_id, facet]}; "
        "or .tsv: id<TAB>text)\n"
        '{"_id": "q1", "text": "memory reclamation"}',
    ),
    BenchmarkLayout(
        "mteb",
        "a BEIR folder (as beir's) run offline as an MTEB retrieval task; or none, with --tasks naming MTEB's tasks "
        "(SCIDOCS, SciFact, ...; mteb downloads them from the Hub)",
        "==> corpus.jsonl <==  (a BEIR folder; or no --data and --tasks SCIDOCS SciFact)\n"
        '{"_id": "d1", "title": "Garbage collection", "text": "We reclaim memory."}\n'
        "==> queries.jsonl <==\n"
        '{"_id": "q1", "text": "memory reclamation"}\n'
        "==> qrels/test.tsv <==\n"
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t1",
    ),
)

BENCHMARK_NAMES = tuple(layout.name for layout in BENCHMARK_LAYOUTS)


def layouts_text(indent: str = "") -> str:
    """Every benchmark as ``[name]  --data: what it is`` followed by its example, blocks separated by a blank line: the
    docs/evaluation.md's list (no ``indent``) and ``sciembed evaluate --help``'s epilog (examples indented further)."""
    inner = indent + "  " if indent else ""
    blocks = [
        f"{indent}[{layout.name}]  --data: {layout.reads}\n"
        + "\n".join(inner + line for line in layout.example.splitlines())
        for layout in BENCHMARK_LAYOUTS
    ]
    return "\n\n".join(blocks)
