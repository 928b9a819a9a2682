"""Build the SciDocs benchmark (Cohan et al. 2020) as a Hugging Face dataset: Parquet + dataset card.

Reads a SciDocs release folder with :func:`sciembed.data.scidocs.read_scidocs` (``paper_metadata_*.json``,
``<task>/{val,test}.qrel``, ``mag|mesh/{train,val,test}.csv``) and writes the configs of
``sciembed.evaluation.benchmarks.SciDocs.layout``. Multi-SciDocs is written in the same layout
(``sciembed.data.multi_scidocs``), so ``--benchmark multi_scidocs`` (or ``build_multi_scidocs.py``)
runs this builder on that folder.

    python datasets_scripts/build_scidocs.py --source RAW_DIR --out OUT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hub_layout import UNKNOWN_LICENSE, CardInfo, build_parser, check_out, configure_logging, logger, write_hub_folder

CARDS = {
    "scidocs": dict(
        pretty_name="SciDocs",
        summary=(
            'SciDocs, the evaluation suite of SPECTER (Cohan et al. 2020, "SPECTER: Document-level Representation '
            'Learning using Citation-informed Transformers", ACL): MAG and MeSH classification, co-view, co-read, '
            "cite and co-cite proximity tasks (the recommendation click log is not included)."
        ),
        default_license=UNKNOWN_LICENSE,
        license_note=(
            "The release (allenai/scidocs, s3://ai2-s2-research-public/specter/scidocs/) states no data licence that "
            "this builder could verify; check upstream and pass --license when you publish."
        ),
        citation="Cohan, Feldman, Beltagy, Downey, Weld. SPECTER: Document-level Representation Learning using "
        "Citation-informed Transformers. ACL 2020.",
    ),
    "multi_scidocs": dict(
        pretty_name="Multi-SciDocs",
        summary=(
            "Multi-SciDocs: multi-domain cite and co-cite tasks (at most 5 positives and 500 random negatives per "
            "query, query papers sampled so that no MAG field dominates) built from S2ORC-format data, plus MAG "
            "classification, written in SciDocs' layout by sciembed.data.multi_scidocs."
        ),
        default_license="odc-by",
        license_note="Built from S2ORC metadata, released by allenai/s2orc under ODC-By 1.0; keep the attribution.",
        citation="Lo, Wang, Neumann, Kinney, Weld. S2ORC: The Semantic Scholar Open Research Corpus. ACL 2020.",
    ),
}


def main(
    argv: Sequence[str] | None = None,
    *,
    benchmark: str = "scidocs",
    script: str = __file__,
    description: str = __doc__,
) -> Path:
    """Run the builder; ``benchmark`` / ``script`` / ``description`` let build_multi_scidocs.py reuse it."""
    parser = build_parser(
        script,
        description.split("\n\n")[0],
        epilog=(
            "Configs written: papers_<collection> (split 'evaluation'), cite/cocite/coview/coread (val, test:\n"
            "query_id, cand_id, score), mag/mesh (train, val, test: paper_id, label). Tasks missing from\n"
            "SOURCE are listed in the log and the card; rows naming papers without metadata stop the build\n"
            "unless --skip-invalid, which drops and counts them.\n\n"
            "Multi-SciDocs: build the folder with sciembed.data.multi_scidocs (SciDocs layout), then run\n"
            "this script with --benchmark multi_scidocs (or build_multi_scidocs.py) on it."
        ),
    )
    parser.add_argument(
        "--source",
        required=True,
        type=Path,
        help="SciDocs release folder (data/ of allenai/scidocs) or a Multi-SciDocs folder in that layout",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        help="only these tasks (cite cocite coview coread mag mesh); default: every task found",
    )
    parser.add_argument(
        "--benchmark",
        choices=sorted(CARDS),
        default=benchmark,
        help=f"which benchmark the folder holds (default {benchmark})",
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    check_out(args.out, args.overwrite)

    from sciembed.data.layouts import EVALUATION_SPLIT
    from sciembed.data.scidocs import read_scidocs

    release = read_scidocs(
        args.source, tasks=tuple(args.tasks) if args.tasks else None, skip_invalid=args.skip_invalid
    )
    configs = {f"papers_{name}": {EVALUATION_SPLIT: papers} for name, papers in release.papers.items()}
    configs.update(release.qrels)
    configs.update(release.labels)
    counts = {f"{task}.{key}": value for task, stats in release.stats.items() for key, value in sorted(stats.items())}
    counts["records skipped"] = len(release.skipped)
    text = CARDS[args.benchmark]
    card = CardInfo(
        benchmark=args.benchmark,
        pretty_name=text["pretty_name"],
        summary=text["summary"],
        source=f"Release folder `{args.source.name}` read by `sciembed.data.scidocs.read_scidocs`.",
        license=args.license or text["default_license"],
        license_note=text["license_note"],
        how_built=(
            "Papers come from the release's `paper_metadata_*.json` (records without title and abstract are "
            f"{'skipped and counted' if args.skip_invalid else 'refused'}); qrels keep SciDocs' `qid 0 pid rel` "
            "lines as `query_id, cand_id, score` (score 1 relevant, 0 a listed negative); class labels keep "
            "`pid,class_label` as `paper_id, label`. Rows naming papers absent from the task's metadata file "
            f"are {'dropped and counted below' if args.skip_invalid else 'refused'} (SciDocs' own evaluation "
            "silently scores them as zero vectors). Not in this folder: "
            + (", ".join(release.missing) or "nothing")
            + "."
        ),
        counts=counts,
        citation=text["citation"],
    )
    if args.license is None and card.license == UNKNOWN_LICENSE:
        logger.warning("no licence given: the card says 'other'; pass --license when you know it")
    return write_hub_folder(args.out, configs, card, overwrite=args.overwrite)


if __name__ == "__main__":
    main(sys.argv[1:])
