"""Build Multi-SciDocs as a Hugging Face dataset: the SciDocs builder run on a folder in SciDocs' layout.

``sciembed.data.multi_scidocs`` writes Multi-SciDocs (multi-domain cite / co-cite from S2ORC-format
data, MAG classification reused from SciDocs) in SciDocs' release layout, so this builder is
``build_scidocs.py --benchmark multi_scidocs``; it does not import the Multi-SciDocs module itself.

    python datasets_scripts/build_multi_scidocs.py --source MULTI_SCIDOCS_DIR --out OUT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import build_scidocs


def main(argv: Sequence[str] | None = None) -> Path:
    return build_scidocs.main(argv, benchmark="multi_scidocs", script=__file__, description=__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
