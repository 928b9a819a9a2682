"""Multi-SciDocs (Seoh et al. 2023): multi-domain cite and co-cite tasks written in SciDocs' layout."""

from __future__ import annotations

from pathlib import Path

from ...data.layouts import DatasetLayout
from .base import BenchmarkInfo
from .scidocs import SCIDOCS_CONFIGS, SciDocs


class MultiSciDocs(SciDocs):
    """Multi-SciDocs: read and averaged as SciDocs, with each query's field of study."""

    info = BenchmarkInfo(
        name="multi-scidocs",
        title="Multi-SciDocs",
        reads="a folder in SciDocs' layout built from S2ORC data by datasets_scripts/build_multi_scidocs.py "
        "(cite/, cocite/; mag/ copied from SciDocs)",
        example="==> cite/test.qrel <==  (and paper_metadata_view_cite_read.json, as scidocs; up to 5 positives, "
        "500 negatives)\n"
        "p1 0 p2 1\n"
        "==> query_fields.json <==  (task -> query id -> field of study, for per-field scores)\n"
        '{"cite": {"p1": "Biology"}}',
        citations=("seoh-etal-2023-multi2spe",),
        main_metric="average over its metrics",
    )
    layout = DatasetLayout(
        "multi_scidocs",
        "Multi-SciDocs: multi-domain cite / co-cite in SciDocs' layout",
        SCIDOCS_CONFIGS,
        ("papers_*",),
    )

    def is_release_folder(self, folder: Path) -> bool:
        """Never: Multi-SciDocs has no release of its own, so its tasks keep their ids.

        Args:
            folder: a local folder results were read from.
        """
        return False
