"""Build co-citation pair sets (the MoE paper's format: a, b, label) as a Hugging Face dataset.

Each source is read with :func:`sciembed.data.cocitation.load_cocitation_pairs`: a domain name of the
MoE paper (``cvd``, ``copd``...), a Hub id, or a local folder of CSV / JSON / Parquet split files
(``train``, ``valid``, ``test``) with columns ``a``, ``b`` (the two abstracts) and ``label`` (1 =
co-cited by a third paper, 0 = a negative pair). Each source becomes one config.

    python datasets_scripts/build_cocitation.py --source cvd=RAW_DIR --out OUT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hub_layout import UNKNOWN_LICENSE, CardInfo, build_parser, check_out, configure_logging, logger, write_hub_folder


def parse_source(text: str) -> tuple[str | None, str]:
    """``name=path`` -> (name, path); a bare path or id -> (None, it)."""
    name, sep, location = text.partition("=")
    return (name, location) if sep and name and "/" not in name else (None, text)


def main(argv: Sequence[str] | None = None) -> Path:
    parser = build_parser(
        __file__,
        __doc__.split("\n\n")[0],
        epilog=(
            "Configs written: one per source (columns a, b, label; the source's splits).\n"
            "A source is [CONFIG=]LOCATION; CONFIG defaults to the MoE domain name when LOCATION is one, else to\n"
            "'default' (only one unnamed source is allowed). Rows with an empty abstract or a label other than\n"
            "0 / 1 stop the build unless --skip-invalid, which drops and counts them."
        ),
    )
    parser.add_argument(
        "--source",
        required=True,
        nargs="+",
        help="one or more [CONFIG=]LOCATION (domain name, Hub id or local folder)",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="datasets cache folder used while reading the sources"
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    check_out(args.out, args.overwrite)

    from sciembed.data.cocitation import DOMAIN_DATASETS, load_cocitation_pairs

    configs, counts, sources = {}, {}, []
    for text in args.source:
        name, location = parse_source(text)
        name = name or (location if location in DOMAIN_DATASETS else "default")
        if name in configs:
            parser.error(f"config {name!r} given twice; name the sources CONFIG=LOCATION")
        pairs = load_cocitation_pairs(location, skip_invalid=args.skip_invalid, cache_dir=args.cache_dir)
        configs[name] = dict(pairs.pairs)
        counts.update({f"{name}.{key}": value for key, value in sorted(pairs.stats.items())})
        sources.append(f"`{name}`: {Path(location).name if Path(location).exists() else location}")
    card = CardInfo(
        benchmark="cocitation",
        pretty_name="Co-citation pairs",
        summary=(
            "Pairs of paper abstracts labelled 1 when a third paper cites both (co-citation) and 0 otherwise, as in "
            "the MoE paper (Hallee, Kapur et al. 2024, arXiv:2401.15713): training pairs are repeated by co-citation "
            "frequency; evaluation negatives are pairs never co-cited; scored by F1max."
        ),
        source="Read by `sciembed.data.cocitation.load_cocitation_pairs` from " + "; ".join(sources) + ".",
        license=args.license or UNKNOWN_LICENSE,
        license_note=""
        if args.license
        else "The pairs hold PubMed abstracts; the GleghornLab Hub sets' licence was not verified here: "
        "check and pass --license.",
        how_built=(
            "Columns a, b, label are kept as they are; labels must be 0 or 1 and both abstracts non-empty "
            f"(bad rows {'dropped and counted below' if args.skip_invalid else 'refused'}). Splits keep their names."
        ),
        counts=counts,
        citation="Hallee, Kapur et al. 2024, arXiv:2401.15713 (the MoE paper; code: "
        "Gleghorn-Lab/Mixture-of-Experts-Sentence-Similarity).",
    )
    if not args.license:
        logger.warning("no licence given: the card says 'other'; pass --license when you know it")
    return write_hub_folder(args.out, configs, card, overwrite=args.overwrite)


if __name__ == "__main__":
    main(sys.argv[1:])
