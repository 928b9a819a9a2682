"""Your own relevance judgements: a qrels file over a papers file.

The queries are texts or papers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import BenchmarkInfo, Candidates, PaperFileBenchmark, Reading, Similarity, option

if TYPE_CHECKING:
    from ...data.papers import PaperProblem
    from ..tasks import Task


@dataclass(frozen=True)
class RetrievalOptions:
    """The options of a qrels file.

    Attributes:
        papers: the papers file the judgements name.
        queries: a file of text queries (default: the query ids are papers of ``papers``).
        candidates: what a query ranks: ``all`` papers, or only the ``judged`` ones.
        id_field: the papers file's id field (default: the first of paper_id, corpus_id, id, doc_id).
        qrels_columns: the order of the qrels file's query and document columns, when stated.
        proximity_similarity: the score of paper queries ranking their judged candidates.
        smart_links: how a SMART collection given as the papers file reads its ``.X`` lines.
    """

    papers: str | os.PathLike[str] | None = option(None, recorded=True)
    queries: str | os.PathLike[str] | None = option(None, recorded=True)
    candidates: Candidates = option(Candidates.ALL, recorded=True)
    qrels_columns: str | None = option(None, recorded=True)
    id_field: str | None = option(None)
    proximity_similarity: Similarity = option(Similarity.L2)
    smart_links: str = option("cacm")


class Retrieval(PaperFileBenchmark):
    """A qrels file over a papers file: one ranking task."""

    info = BenchmarkInfo(
        name="retrieval",
        title="retrieval",
        reads="a qrels file with --papers FILE [--queries FILE]; without --queries a query id is a paper of --papers",
        example="==> qrels.txt <==  (TREC qid 0 docid rel, or qid docid rel; spaces, tabs or commas; integer "
        "relevance; a header line naming the columns allowed)\n"
        "p1 0 p2 1\n"
        "==> queries.jsonl <==  (optional text queries, {_id|query_id|id, text[, paper_id, facet]}; "
        "or .tsv: id<TAB>text)\n"
        '{"_id": "q1", "text": "memory reclamation"}',
        main_metric="map",
    )
    Options = RetrievalOptions
    input_options = ("papers", "queries")

    def file_tasks(
        self, data: str, reading: Reading, options: RetrievalOptions, papers: dict[str, Any]
    ) -> tuple[list[Task], list[PaperProblem]]:
        """Build the ranking task of a qrels file.

        Args:
            data: the qrels file.
            reading: what every benchmark takes.
            options: the retrieval options.
            papers: how the papers file is read.
        """
        from ..custom import retrieval_tasks

        return retrieval_tasks(
            self.name,
            data,
            queries=None if options.queries is None else str(options.queries),
            candidates=options.candidates,
            similarity=options.proximity_similarity,
            qrels_columns=options.qrels_columns,
            **papers,
        )
