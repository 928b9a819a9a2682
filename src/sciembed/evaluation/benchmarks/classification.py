"""Your own labelled papers: a labels CSV over a papers file, scored with SciDocs' classification protocol."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Benchmark, BenchmarkInfo, Reading, option

if TYPE_CHECKING:
    from ..tasks import TaskSuite


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


class Classification(Benchmark):
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

    def load(self, data: str, reading: Reading, options: ClassificationOptions) -> TaskSuite:
        """Build the classification task of a labels file.

        Args:
            data: the labels file.
            reading: what every benchmark takes.
            options: the classification options.
        """
        from ...io import check_input
        from ..custom import classification_tasks
        from ..tasks import TaskSuite

        check_input(data, "--data")  # a folder, a link loop or a missing file, named as such
        tasks, skipped = classification_tasks(
            self.name,
            data,
            papers=None if options.papers is None else str(options.papers),
            split=reading.split,
            test_size=options.test_size,
            seed=reading.seed,
            skip_invalid=reading.skip_invalid,
            id_field=options.id_field,
            wanted=reading.wanted,
            text_fields=reading.checked_fields,
            smart_links=options.smart_links,
        )
        return TaskSuite(self.name, data, tasks, [], skipped)

    def inputs(self, data: str, options: Any) -> dict[str, Any]:
        """The labels file and the papers file.

        Args:
            data: the labels file.
            options: the options.
        """
        return {"data": data, "papers": options.papers}
