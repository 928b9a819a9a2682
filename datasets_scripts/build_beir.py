"""Build a BEIR-layout search set (SciFact, TREC-COVID, NFCorpus, SCIDOCS...) as a Hugging Face dataset.

Reads ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (Thakur et al. 2021) with
:func:`sciembed.data.beir.read_beir` and writes three configs, as MTEB's BEIR copies on the Hub do:
``corpus`` (paper_id, title, abstract = BEIR's text), ``queries`` (query_id, text) and ``qrels``
(one split per qrels file: query_id, cand_id, score).

    python datasets_scripts/build_beir.py --source RAW_DIR --out OUT_DIR --name scifact
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
            "Configs written: corpus (split 'corpus'), queries (split 'queries'), qrels (one split per qrels file).\n"
            "Corpus documents become papers so the SPECTER text rule (title [SEP] abstract) applies; qrels use\n"
            "SciRepEval's column names so one evaluator serves both. Each BEIR set has its own licence\n"
            "(SciFact, TREC-COVID, NFCorpus differ): pass it with --license."
        ),
    )
    parser.add_argument(
        "--source", required=True, type=Path, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)"
    )
    parser.add_argument("--name", default=None, help="the set's name for the card (default: the source folder's name)")
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    check_out(args.out, args.overwrite)

    from sciembed.data.beir import read_beir

    beir = read_beir(args.source, skip_invalid=args.skip_invalid)
    name = args.name or args.source.name
    counts = {**dict(beir.stats), "records skipped": len(beir.skipped)}
    card = CardInfo(
        benchmark="beir",
        pretty_name=f"{name} (BEIR layout)",
        summary=f"The ad-hoc scientific search set `{name}` in the BEIR layout (Thakur et al. 2021): queries, a "
        "corpus of papers and relevance judgements.",
        source=f"BEIR folder `{args.source.name}` read by `sciembed.data.beir.read_beir`.",
        license=args.license or UNKNOWN_LICENSE,
        license_note=""
        if args.license
        else "BEIR sets carry their upstream licences, which differ per set; "
        "check the set's own page and pass --license.",
        how_built=(
            "`corpus.jsonl` records become papers (`_id` -> paper_id, `text` -> abstract); `queries.jsonl` keeps "
            "`_id` -> query_id and `text`; every `qrels/<split>.tsv` becomes a split of `qrels` (`query-id, "
            "corpus-id, score` -> query_id, cand_id, score). Bad records and qrels naming unknown ids are "
            f"{'dropped and counted below' if args.skip_invalid else 'refused'}."
        ),
        counts=counts,
        citation="Thakur, Reimers, Rücklé, Srivastava, Gurevych. BEIR: A Heterogeneous Benchmark for Zero-shot "
        "Evaluation of Information Retrieval Models. NeurIPS 2021 Datasets and Benchmarks.",
    )
    if not args.license:
        logger.warning("no licence given: the card says 'other'; pass --license when you know it")
    configs = {"corpus": {"corpus": beir.corpus}, "queries": {"queries": beir.queries}, "qrels": dict(beir.qrels)}
    return write_hub_folder(args.out, configs, card, overwrite=args.overwrite)


if __name__ == "__main__":
    main(sys.argv[1:])
