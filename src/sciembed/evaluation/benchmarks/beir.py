"""BEIR-layout ad-hoc search (Thakur et al. 2021): a corpus, queries and judgements, scored by cosine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...data.layouts import PAPER_COLUMNS, QREL_COLUMNS, DatasetLayout
from .base import Benchmark, BenchmarkInfo, Reading, option

if TYPE_CHECKING:
    from ..tasks import TaskSuite

#: The measures a BEIR search reports first.
BEIR_MEASURES = ("ndcg_cut_10", "recall_100")
#: The example BEIR folder after its first header line, shared by the benchmarks that read one.
BEIR_FILES = (
    '{"_id": "d1", "title": "Garbage collection", "text": "We reclaim memory."}\n'
    "==> queries.jsonl <==\n"
    '{"_id": "q1", "text": "memory reclamation"}\n'
    "==> qrels/test.tsv <==\n"
    "query-id\tcorpus-id\tscore\n"
    "q1\td1\t1"
)


@dataclass(frozen=True)
class BeirOptions:
    """The options of a BEIR folder.

    Attributes:
        qrels_columns: the order of the qrels files' query and document columns, when stated.
    """

    qrels_columns: str | None = option(None)


class Beir(Benchmark):
    """A BEIR folder as one full-corpus search task."""

    info = BenchmarkInfo(
        name="beir",
        title="BEIR",
        reads="a BEIR dataset folder (SciFact, TREC-COVID, NFCorpus, SCIDOCS)",
        example="==> corpus.jsonl <==\n" + BEIR_FILES,
        main_metric="ndcg_cut_10",
    )
    #: ``qrels`` holds one split per ``qrels/<split>.tsv``.
    layout = DatasetLayout(
        "beir",
        "BEIR-layout ad-hoc search (corpus, queries, qrels)",
        (("corpus", PAPER_COLUMNS), ("queries", ("query_id", "text")), ("qrels", QREL_COLUMNS)),
        ("corpus", "queries", "qrels"),
    )
    Options = BeirOptions

    def load(self, data: str, reading: Reading, options: BeirOptions) -> TaskSuite:
        """Build the search task of a BEIR folder.

        Args:
            data: the folder.
            reading: what every benchmark takes.
            options: the BEIR options.
        """
        from ...data.beir import read_beir
        from ..tasks import SearchTask, TaskSuite
        from .base import qrels_of

        beir = read_beir(data, skip_invalid=reading.skip_invalid, qrels_columns=options.qrels_columns)
        if reading.split not in beir.qrels:
            raise ValueError(f"{data}: no qrels/{reading.split}.tsv; splits here: {', '.join(beir.qrels)}")
        qrels = qrels_of(beir.qrels[reading.split])
        documents = {row["paper_id"]: row for row in beir.corpus}
        queries = {q: text for q, text in zip(beir.queries["query_id"], beir.queries["text"]) if q in qrels}
        task = SearchTask(
            self.name,
            Path(data).name,
            documents,
            queries=queries,
            qrels=qrels,
            measures=BEIR_MEASURES,
            similarity="cosine",
            full_corpus=True,
            task_id="search",
        )
        wanted = reading.wanted
        return TaskSuite(self.name, data, [task] if wanted is None or "search" in wanted else [], [], beir.skipped)
