"""Your own labelled papers: a labels CSV over a papers file.

The labels are scored with SciDocs' classification protocol.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import BenchmarkInfo, PaperFileBenchmark, Reading, option

if TYPE_CHECKING:
    from ...data.papers import PaperProblem
    from ..tasks import Task


@dataclass(frozen=True)
class ClassificationOptions:
    """The options of a labels file.

    Attributes:
        papers: the papers file the labels name.
        test_size: without a split column, the share of each label held out for testing.
        id_field: the papers file's id field (default: the first of paper_id, corpus_id, id, doc_id).
        smart_links: how a SMART collection given as the papers file reads its ``.X`` lines.
    """

    papers: str | os.PathLike[str] | None = option(None, recorded=True)
    test_size: float = option(0.5, recorded=True)
    id_field: str | None = option(None)
    smart_links: str = option("cacm")


class Classification(PaperFileBenchmark):
    """A labels file over a papers file: one classification task."""

    info = BenchmarkInfo(
        name="classification",
        title="classification",
        reads="a labels CSV (paper_id,label[,split]) with --papers FILE; without a split column, a "
        "stratified split (--test-size, --seed)",
        example="==> labels.csv <==  (header paper_id,label[,split]; tabs for TSV; other columns ignored)\n"
        "paper_id,label\n"
        "p1,cs\n"
        "==> papers.jsonl <==  (or .json / .csv / .parquet: paper_id, title, abstract)\n"
        '{"paper_id": "p1", "title": "Garbage collection", "abstract": "We reclaim memory."}',
        main_metric="f1_macro",
    )
    Options = ClassificationOptions

    def file_tasks(
        self, data: str, reading: Reading, options: ClassificationOptions, papers: dict[str, Any]
    ) -> tuple[list[Task], list[PaperProblem]]:
        """Build the classification task of a labels file.

        Args:
            data: the labels file.
            reading: what every benchmark takes.
            options: the classification options.
            papers: how the papers file is read.
        """
        from ..custom import classification_tasks

        return classification_tasks(
            self.name, data, split=reading.split, test_size=options.test_size, seed=reading.seed, **papers
        )
