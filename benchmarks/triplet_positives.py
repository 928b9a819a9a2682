"""What the citation recipes train on: how often a training example's positive is cited by its query paper.

On CACM's training queries (the seeded 80 / 20 split of ``recipes``), the ``specter`` sampler's
positives are the query's citations by construction; SciNCL's are its nearest neighbours in a citation-graph
embedding: the recipe's ranks for a graph smaller than the paper's (``rank_overflow="nearest"``: the top ranks) and
the paper's ranges [20, 25) / [3998, 4000) shrunk to the graph (``"scale"``). This counts, per sampler, the share of
triplets whose positive is directly linked to the query, linked at two hops only, and whose negative is linked; and
for the ``moe-cocitation`` recipe's co-citation pairs, the share whose two papers are also directly linked. The
held-out task scores direct citations, so this says how much each recipe's examples point at what is scored.

    python benchmarks/triplet_positives.py --data ../shared/data --seed 0
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from sciembed.io import atomic_path
from sciembed.training import examples as training_examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "triplet_positives.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    source = training_examples.read_citation_source(args.data / "cacm")
    queries, held = training_examples.split_queries(source.linked_queries(), 0.2, args.seed)
    linked = source.neighbours()
    result = {}
    # The scincl recipe's small-graph ranks (nearest) and the paper's ranges shrunk to the graph (scale).
    for name, sampler, options in (
        ("specter", "specter", {"triplets_per_query": 5}),
        ("scincl", "scincl", {"rank_overflow": "nearest"}),
        ("scincl-scale", "scincl", {"rank_overflow": "scale"}),
    ):
        triplets = training_examples.triplet_dataset(
            source, sampler=sampler, queries=queries, exclude=held, seed=args.seed, **options
        )
        direct = two_hops = negative = 0
        for query, positive, negative_id in zip(
            triplets["query_id"], triplets["positive_id"], triplets["negative_id"]
        ):
            first = linked.get(query, set())
            second = set().union(*(linked.get(p, set()) for p in first)) if first else set()
            direct += positive in first
            two_hops += positive in second and positive not in first
            negative += negative_id in first
        n = len(triplets)
        result[name] = {
            "triplets": n,
            "positive_cited": round(direct / n, 3),
            "positive_two_hops_only": round(two_hops / n, 3),
            "negative_cited": round(negative / n, 3),
        }
        print(name, json.dumps(result[name]), flush=True)
    pairs = training_examples.pair_dataset(source, exclude=held)
    linked_pairs = sum(b in linked.get(a, set()) for a, b in zip(pairs["a_id"], pairs["b_id"]))
    result["cocitation_pairs"] = {"pairs": len(pairs), "pair_cited": round(linked_pairs / len(pairs), 3)}
    print("cocitation", json.dumps(result["cocitation_pairs"]), flush=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(
            json.dumps(
                {
                    "benchmark": "triplet_positives",
                    "description": __doc__.strip().splitlines()[0],
                    "seed": args.seed,
                    "samplers": result,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
