"""Build SPECTER (or SPECTROID) training triplets from a SPECTER release as a Hugging Face dataset.

Reads ``data.json`` + ``metadata.json`` + ``train/val/test.txt`` with
:func:`sciembed.data.specter.read_specter_release`, builds a :class:`~sciembed.data.graph.CitationGraph`
from the direct citations (``count == 5``) and samples triplets per split with
:func:`sciembed.data.samplers.sample_specter_triplets` (Cohan et al. 2020, sec. 3.2: 5 per query,
positives = direct citations, 2 hard negatives = cited by a cited paper but not by the query, 3 easy
negatives = random papers the query does not cite) or ``sample_spectroid_triplets`` (positive drawn
by in-citation count, eq. 2 of SPECTROID). Only papers with text (title or abstract in
``metadata.json``) are ever emitted.

    python datasets_scripts/build_specter_triplets.py --source SPECTER_DIR --out OUT_DIR --seed 0
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hub_layout import CardInfo, build_parser, check_out, configure_logging, logger, write_hub_folder


def main(argv: Sequence[str] | None = None) -> Path:
    parser = build_parser(
        __file__,
        __doc__.split("\n\n")[0],
        epilog=(
            "Configs written: triplets (one split per id list found: query_id, positive_id, negative_id, hard)\n"
            "and papers (split 'train': paper_id, title, abstract), joined on the ids at training time.\n"
            "Without split files every query of data.json goes to 'train'. The same --seed gives the same folder."
        ),
    )
    parser.add_argument(
        "--source",
        required=True,
        type=Path,
        help="SPECTER release folder (data.json, metadata.json, train/val/test.txt)",
    )
    parser.add_argument(
        "--sampler",
        choices=("specter", "spectroid"),
        default="specter",
        help="positive rule: uniform over citations (specter) or by in-citation count (spectroid)",
    )
    parser.add_argument("--triplets-per-query", type=int, default=5, help="triplets per query (5 in the paper)")
    parser.add_argument(
        "--hard-ratio",
        type=float,
        default=0.4,
        help="share of hard negatives, rounded up (0.4 -> 2 of 5, the paper's setting)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed (one generator, splits drawn in train, val, test order)"
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    check_out(args.out, args.overwrite)

    import numpy as np

    from sciembed.data.graph import CitationGraph
    from sciembed.data.samplers import sample_specter_triplets, sample_spectroid_triplets
    from sciembed.data.specter import read_specter_release

    release = read_specter_release(args.source, skip_invalid=args.skip_invalid)
    graph = CitationGraph.from_edges(release.citing, release.cited, papers_with_text=release.papers["paper_id"])
    sampler = sample_spectroid_triplets if args.sampler == "spectroid" else sample_specter_triplets
    rng = np.random.default_rng(args.seed)
    splits = {name: np.array(ids["paper_id"], dtype=str) for name, ids in release.queries.items()}
    if not splits:
        splits = {"train": np.unique(np.concatenate([release.citing, release.hop_query]))}
    counts = {f"release.{key}": value for key, value in sorted(release.stats.items())}
    counts.update({f"graph.{key}": value for key, value in graph.stats.as_dict().items()})
    triplets = {}
    for name, queries in splits.items():
        in_graph = np.isin(queries, graph.ids)
        counts[f"{name}.queries_not_in_graph"] = int(np.count_nonzero(~in_graph))
        sampled = sampler(
            graph, queries[in_graph], triplets_per_query=args.triplets_per_query, hard_ratio=args.hard_ratio, seed=rng
        )
        counts.update({f"{name}.{key}": value for key, value in sampled.stats.as_dict().items()})
        if len(sampled) == 0:
            logger.warning("split %s: no triplets (%s); left out", name, sampled.stats.as_dict())
            continue
        triplets[name] = sampled.to_dataset()
    if not triplets:
        asked = sum(counts[f"{name}.queries"] for name in splits)
        no_positive = sum(counts[f"{name}.queries_without_positive"] for name in splits)
        raise ValueError(
            f"{args.source}: no triplet in any split: of {asked} queries, {no_positive} cite no paper with text "
            f"({graph.stats.papers_with_text} of {graph.stats.papers} papers in the graph have text in "
            "metadata.json); papers without text are never emitted, so add their metadata"
        )
    card = CardInfo(
        benchmark="specter_triplets",
        pretty_name=f"{'SPECTROID' if args.sampler == 'spectroid' else 'SPECTER'} training triplets",
        summary=(
            "Citation triplets (query, positive, negative) for training scientific-document embeddings with a "
            "triplet margin loss, sampled from a citation graph by the rules of SPECTER (Cohan et al. 2020)"
            + (
                " with SPECTROID's in-citation-weighted positives (Capuano et al.)."
                if args.sampler == "spectroid"
                else "."
            )
        ),
        source=f"SPECTER release folder `{args.source.name}` (allenai/specter training-data format).",
        license=args.license or "apache-2.0",
        license_note=""
        if args.license
        else "The SPECTER training data is distributed with allenai/specter under Apache-2.0; keep the provenance.",
        how_built=(
            f"Graph: the `count == 5` (direct citation) pairs of `data.json`; papers with text are those of "
            f"`metadata.json`. Sampler `{args.sampler}`, {args.triplets_per_query} triplets per query, hard ratio "
            f"{args.hard_ratio}, seed {args.seed}. Positives are cited by the query; hard negatives are cited by a "
            "paper the query cites but not by the query (a query without such a paper gets easy negatives in those "
            "slots, counted as hard_slots_filled_easy); easy negatives are random papers with text the query does not "
            "cite. Queries without text or citing no paper with text give no triplet and are counted below."
        ),
        counts=counts,
        citation="Cohan, Feldman, Beltagy, Downey, Weld. SPECTER: Document-level Representation Learning using "
        "Citation-informed Transformers. ACL 2020.",
    )
    configs = {"triplets": triplets, "papers": {"train": release.papers}}
    return write_hub_folder(args.out, configs, card, overwrite=args.overwrite)


if __name__ == "__main__":
    main(sys.argv[1:])
