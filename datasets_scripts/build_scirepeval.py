"""Build SciRepEval (Singh et al. 2023) tasks as one Hugging Face dataset: Parquet + dataset card.

For each task, :func:`sciembed.data.scirepeval.load_scirepeval_task` reads the metadata config of
``allenai/scirepeval`` and the labels / qrels config of ``allenai/scirepeval_test`` (Hub ids, or local
folders in the same layout) and checks that every labelled id has metadata. Optionally the training
samples (``fos``, ``mesh``, ``specter``, ``search`` formats) are added as ``train_<format>`` configs.

    python datasets_scripts/build_scirepeval.py --meta-source META_DIR --test-source TEST_DIR \\
        --tasks fos scidocs_mag --out OUT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hub_layout import UNKNOWN_LICENSE, CardInfo, build_parser, check_out, configure_logging, logger, write_hub_folder


def main(argv: Sequence[str] | None = None) -> Path:
    parser = build_parser(
        __file__,
        __doc__.split("\n\n")[0],
        epilog=(
            "Configs written: meta_<metadata config> (split 'evaluation', as allenai/scirepeval ships it; tasks\n"
            "sharing one metadata config share it), <task> (the test config's splits, ids as strings) and, with\n"
            "--samples, train_<format> (split 'train'). Label rows naming papers without metadata stop the build\n"
            "unless --skip-invalid, which drops and counts them."
        ),
    )
    parser.add_argument(
        "--meta-source",
        default="allenai/scirepeval",
        help="Hub id or local folder of the metadata configs (default allenai/scirepeval)",
    )
    parser.add_argument(
        "--test-source",
        default="allenai/scirepeval_test",
        help="Hub id or local folder of the label configs (default allenai/scirepeval_test)",
    )
    parser.add_argument(
        "--tasks", nargs="+", required=True, help="test configs to include (e.g. fos scidocs_mag search)"
    )
    parser.add_argument(
        "--samples",
        nargs="*",
        type=Path,
        default=[],
        help="training-sample files (fos_small.json, search_small.jsonl...) to add as train_<format>",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="datasets cache folder used while reading the sources"
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    check_out(args.out, args.overwrite)

    from sciembed.data.layouts import EVALUATION_SPLIT
    from sciembed.data.scirepeval import META_CONFIG, load_scirepeval_task, read_scirepeval_sample

    configs, counts, meta_of = {}, {}, {}
    for task in args.tasks:
        loaded = load_scirepeval_task(
            task,
            meta_source=args.meta_source,
            test_source=args.test_source,
            skip_invalid=args.skip_invalid,
            cache_dir=args.cache_dir,
        )
        meta_name = f"meta_{META_CONFIG.get(task, task)}"
        meta_of[task] = meta_name
        configs.setdefault(meta_name, {EVALUATION_SPLIT: loaded.meta})
        configs[task] = dict(loaded.labels)
        counts.update({f"{task}.{key}": value for key, value in sorted(loaded.stats.items())})
        counts[f"{task}.rows skipped"] = len(loaded.skipped)
    for path in args.samples:
        sample = read_scirepeval_sample(path, skip_invalid=args.skip_invalid)
        name = f"train_{sample.kind}"
        if name in configs:
            parser.error(f"two sample files of format {sample.kind!r}")
        configs[name] = {"train": sample.data}
        counts[f"{name}.records"] = len(sample.data)
        counts[f"{name}.skipped"] = len(sample.skipped)
    card = CardInfo(
        benchmark="scirepeval",
        pretty_name="SciRepEval (selected tasks)",
        summary=(
            "Tasks of SciRepEval (Singh, D'Arcy, Cohan, Downey, Feldman 2023, \"SciRepEval: A Multi-Format Benchmark "
            'for Scientific Document Representations", EMNLP): classification, regression, proximity and ad-hoc '
            "search. Tasks here: " + ", ".join(f"`{t}` (papers in `{meta_of[t]}`)" for t in args.tasks) + "."
        ),
        source=(
            "Metadata from "
            f"`{Path(args.meta_source).name if Path(args.meta_source).exists() else args.meta_source}`, labels from "
            f"`{Path(args.test_source).name if Path(args.test_source).exists() else args.test_source}`"
            + (", training samples from " + ", ".join(f"`{p.name}`" for p in args.samples) if args.samples else "")
            + "."
        ),
        license=args.license or UNKNOWN_LICENSE,
        license_note=""
        if args.license
        else "Check the licence on the allenai/scirepeval and allenai/scirepeval_test cards and pass --license.",
        how_built=(
            "Metadata rows keep SciRepEval's columns with `doc_id` renamed `paper_id`; every id column is a string "
            "(the Hub files mix integer and string ids). Label and qrel rows naming papers absent from the task's "
            f"metadata are {'dropped and counted below' if args.skip_invalid else 'refused'}."
        ),
        counts=counts,
        citation="Singh, D'Arcy, Cohan, Downey, Feldman. SciRepEval: A Multi-Format Benchmark for Scientific Document "
        "Representations. EMNLP 2023.",
    )
    if not args.license:
        logger.warning("no licence given: the card says 'other'; pass --license when you know it")
    return write_hub_folder(args.out, configs, card, overwrite=args.overwrite)


if __name__ == "__main__":
    main(sys.argv[1:])
