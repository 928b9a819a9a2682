"""Where does Multi2SPE start? Held-out CACM cite scores at step 0 for each initialisation, from the embedded MiniLM.

The same split and held-out cite task as ``recipes`` (seeded 80 / 20 split by query paper, texts cut
to 128 tokens): the Multi2SPEModel built by the ``multi2spe`` recipe is scored before any training with
``model.initialization`` ``base`` (sciembed's default) and ``paper`` (random linear layers after the last
layer, tanh, extra CLS tokens at their own positions), each with and without L2 normalisation.

    python benchmarks/multi2spe_init.py --data ../shared/data --seeds 0
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path

from sciembed.io import atomic_path
from sciembed.training.run import prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="folder holding cacm/")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "multi2spe_init.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rows = []
    for seed in args.seeds:
        for initialization in ("base", "paper"):
            for normalize in (True, False):
                with tempfile.TemporaryDirectory() as output:
                    run = prepare(
                        "multi2spe",
                        None,
                        args.data / "cacm",
                        output,
                        {
                            "data.held_out": 0.2,
                            "data.seed": seed,
                            "seed": seed,
                            "embedding.max_length": args.max_length,
                            "model.initialization": initialization,
                            "embedding.normalize": normalize,
                            "save_strategy": "no",
                            "eval_strategy": "no",
                        },
                    )
                    metrics = run.trainer.evaluate()
                rows.append(
                    {
                        "seed": seed,
                        "initialization": initialization,
                        "normalize": normalize,
                        "map": round(metrics["eval_cite_map"], 2),
                        "ndcg": round(metrics["eval_cite_ndcg"], 2),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    with atomic_path(args.output) as temporary:
        temporary.write_text(
            json.dumps(
                {
                    "benchmark": "multi2spe_init",
                    "description": __doc__.strip().splitlines()[0],
                    "settings": {"max_length": args.max_length, "held_out": 0.2},
                    "rows": rows,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
