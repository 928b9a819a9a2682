"""Co-citation pairs (Hallee et al. 2024): two abstracts cited together or not, scored by F1max."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...data.layouts import PAIR_COLUMNS, DatasetLayout
from .base import Benchmark, BenchmarkInfo, NoOptions, Reading

if TYPE_CHECKING:
    from ..tasks import Task, TaskSuite

#: The splits a co-citation set is scored on.
COCITATION_SPLITS = ("valid", "test")
#: The range the MoE paper searches the test threshold in.
TEST_THRESHOLDS = (0.5, 1.0)


class Cocitation(Benchmark):
    """A co-citation pair set: one pairs task per split."""

    info = BenchmarkInfo(
        name="cocitation",
        title="co-citation pairs",
        reads="GleghornLab/abstract_domain_cvd (or cvd, copd, cancer, parasitic, autoimmune), or a "
        "local folder in that Hub layout",
        example="==> splits valid / test, columns a, b, label <==  (two abstracts; 1: cited together)\n"
        '{"a": "Garbage collection ...", "b": "Reference counting ...", "label": 1}',
        citations=("hallee-etal-2024-moe",),
        main_metric="f1max",
    )
    #: One config per domain (``default`` for one set), its splits ``train`` (what training reads), ``valid`` and
    #: ``test``.
    layout = DatasetLayout(
        "cocitation", "co-citation pair sets (MoE paper, Hallee, Kapur et al. 2024)", (("*", PAIR_COLUMNS),)
    )

    def load(self, data: str, reading: Reading, options: NoOptions) -> TaskSuite:
        """Build one pairs task per split of a co-citation set.

        Args:
            data: the Hub id or folder.
            reading: what every benchmark takes.
            options: none.
        """
        from ...data.cocitation import load_cocitation_pairs
        from ..tasks import PairsTask, TaskSuite

        loaded = load_cocitation_pairs(data, skip_invalid=reading.skip_invalid)
        tasks: list[Task] = []
        missing = [s for s in COCITATION_SPLITS if s not in loaded.pairs]
        for split in COCITATION_SPLITS:
            if split not in loaded.pairs or (reading.wanted is not None and split not in reading.wanted):
                continue
            rows = loaded.pairs[split]
            texts: dict[str, str] = {}
            pairs = []
            for a, b, label in zip(rows["a"], rows["b"], rows["label"]):
                # Texts are the ids: a text repeated across pairs is embedded once.
                for text in (a.strip(), b.strip()):
                    texts.setdefault(text, f"t{len(texts)}")
                pairs.append((texts[a.strip()], texts[b.strip()], int(float(label))))
            documents = {pid: text for text, pid in texts.items()}
            tasks.append(
                PairsTask(
                    self.name,
                    f"co-citation {split}",
                    documents,
                    pairs=pairs,
                    threshold_range=TEST_THRESHOLDS if split == COCITATION_SPLITS[-1] else None,
                    task_id=split,
                )
            )
        return TaskSuite(self.name, data, tasks, missing, loaded.skipped)
