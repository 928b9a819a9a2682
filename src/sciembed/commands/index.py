"""``sciembed index``: build, add to, search, describe and check a paper index (:class:`sciembed.PaperIndex`)."""

from __future__ import annotations

import argparse
import json
import logging

from .options import HelpFormatter

logger = logging.getLogger(__name__)

SHARDS_HELP = (
    "the index folder, or the parts of one index (built --trained-like) served as shards: several folders, or one "
    "folder of part-* folders (index_with_ray's <output>.parts)"
)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from ..index.settings import KIND_CHOICES

    parser = subcommands.add_parser(
        "index",
        help="a saved paper index: build it from sciembed embed's output, add papers, search it by text, papers, ids",
        description=(
            "A paper index is a folder: faiss codes (exact, int8, binary with an int8 rescore store, or IVF-PQ), the "
            "row -> paper id table and a manifest. The rescore multiplier and IVF probes are tuned at build time "
            "until held-out papers show, with --confidence, that recall@10 against an exact search reaches "
            "--target-recall."
        ),
        epilog=(
            "examples:\n"
            "  sciembed embed --input papers.jsonl --output vectors.npy\n"
            "  sciembed index build vectors.npy --output papers.index --kind binary\n"
            '  sciembed index search papers.index --query "graph neural networks" --top-k 5\n'
            "  sciembed index search papers.index --ids p1 p7\n\n"
            "Python: sciembed.PaperIndex.build(embeddings, output, kind=...), PaperIndex.load(folder).search(...)"
        ),
        formatter_class=HelpFormatter,
    )
    actions = parser.add_subparsers(title="actions", required=True, metavar="ACTION")

    build = actions.add_parser("build", help="build an index from an embedding output", formatter_class=HelpFormatter)
    build.add_argument(
        "embeddings", help="sciembed embed's output: .npy (+ .ids.json), .jsonl, .parquet, or a folder of parts"
    )
    build.add_argument("--output", required=True, help="the index folder, written atomically")
    build.add_argument(
        "--kind", choices=KIND_CHOICES, default="auto", help="index kind; auto: the most exact that fits --memory"
    )
    build.add_argument("--memory", help="RAM budget of --kind auto, e.g. 8G (default: half the machine's)")
    build.add_argument(
        "--target-recall", type=float, default=0.95, help="recall@10 against exact search the tuning must reach"
    )
    build.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="the confidence with which the held-out papers must show that recall@10 reaches --target-recall",
    )
    build.add_argument("--seed", type=int, default=0, help="seeds the samples, k-means and tuning queries")
    build.add_argument("--nlist", type=int, help="IVF cells (default: about sqrt(papers))")
    build.add_argument("--pq-m", type=int, help="pq sub-quantizers (default: a quarter of the dimension)")
    build.add_argument("--no-centre", action="store_true", help="binary codes of the vectors as they are, not centred")
    build.add_argument(
        "--model",
        help="the model that embedded the vectors, when the output has no <output>.meta.json (sciembed embed's)",
    )
    build.add_argument(
        "--trained-like",
        metavar="INDEX",
        help="reuse this index's kind, ranges, mean and quantizers (parts of one collection, merged later)",
    )
    build.add_argument("--overwrite", action="store_true", help="replace an index at --output (refused otherwise)")
    build.set_defaults(run=run_build)

    merge = actions.add_parser(
        "merge", help="merge index parts built with one training into one index", formatter_class=HelpFormatter
    )
    merge.add_argument("parts", nargs="+", help="the index parts, in the order of their papers")
    merge.add_argument("--output", required=True, help="the merged index folder, written atomically")
    merge.add_argument("--overwrite", action="store_true", help="replace an index at --output (refused otherwise)")
    merge.set_defaults(run=run_merge)

    add = actions.add_parser(
        "add", help="append the papers of another embedding output", formatter_class=HelpFormatter
    )
    add.add_argument("index", help="the index folder")
    add.add_argument("embeddings", help="the new papers' vectors, as sciembed embed writes them")
    add.set_defaults(run=run_add)

    search = actions.add_parser("search", help="the nearest papers of queries", formatter_class=HelpFormatter)
    search.add_argument("index", nargs="+", help=SHARDS_HELP)
    given = search.add_mutually_exclusive_group(required=True)
    given.add_argument("--query", nargs="+", metavar="TEXT", help="free-text queries, embedded by the index's model")
    given.add_argument("--ids", nargs="+", metavar="ID", help="indexed papers, each left out of its own results")
    given.add_argument("--papers", help="new papers (a papers file), embedded as the indexed papers were")
    search.add_argument("--top-k", "-k", type=int, default=10, help="results per query")
    search.add_argument("--multiplier", type=int, help="override the tuned rescore multiplier")
    search.add_argument("--nprobe", type=int, help="override the tuned IVF probes")
    search.add_argument("--output", help="write the results as JSON lines ({query, neighbours: [...]}) here")
    search.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    search.set_defaults(run=run_search)

    info = actions.add_parser(
        "info", help="kind, papers, bytes per paper, recall and model", formatter_class=HelpFormatter
    )
    info.add_argument("index", nargs="+", help=SHARDS_HELP)
    info.set_defaults(run=run_info)

    check = actions.add_parser(
        "check", help="verify the sha256 of every file (of every part)", formatter_class=HelpFormatter
    )
    check.add_argument("index", nargs="+", help=SHARDS_HELP)
    check.set_defaults(run=run_check)
    return parser


def run_build(args: argparse.Namespace) -> int:
    from ..index import IndexSettings, PaperIndex

    settings = IndexSettings(
        kind=args.kind,
        memory=args.memory,
        target_recall=args.target_recall,
        confidence=args.confidence,
        seed=args.seed,
        centre=not args.no_centre,
        nlist=args.nlist,
        pq_m=args.pq_m,
    )
    index = PaperIndex.build(
        args.embeddings,
        args.output,
        settings=settings,
        model=args.model,
        overwrite=args.overwrite,
        trained_like=args.trained_like,
    )
    info = index.info()
    bounded = "" if info["recall_bounded"] else f", below the target {info['target_recall']}"
    print(
        f"wrote an index of {info['papers']} papers ({info['kind']}) to {args.output}: recall@10 "
        f"{info['recall_at_10']:.3f}, at least {info['recall_at_10_lower_bound']:.3f} with confidence "
        f"{info['confidence']}{bounded} (multiplier {info['multiplier']}, nprobe {info['nprobe']}), "
        f"{info['ram_bytes_per_paper']:g} bytes per paper in RAM"
    )
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from ..index import PaperIndex

    index = PaperIndex.merge(args.parts, args.output, overwrite=args.overwrite)
    print(f"merged {len(args.parts)} parts into {args.output}: {len(index)} papers ({index.kind})")
    return 0


def run_add(args: argparse.Namespace) -> int:
    import os

    from ..index import PaperIndex

    # Mapped, the old codes and store are not read into memory; Windows cannot swap a folder whose files are mapped.
    report = PaperIndex.load(args.index, mmap=os.name != "nt").add(args.embeddings)
    clipped = f"; {report.clipped_share:.4%} of components clipped" if report.clipped_share is not None else ""
    print(f"added {report.added} papers to {args.index}: {report.papers} in all{clipped}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    from ..io import atomic_path, check_input, refuse_replacing_file

    if args.top_k < 1:
        raise ValueError(f"--top-k must be positive, got {args.top_k}")
    if args.output:
        refuse_replacing_file(args.output, overwrite=args.overwrite)
    if args.papers:
        from ..data.papers import read_papers

        papers = read_papers(check_input(args.papers, "--papers", "any")).papers
    index = _opened(args.index)
    options = {"top_k": args.top_k, "multiplier": args.multiplier, "nprobe": args.nprobe}
    if args.ids:
        result = index.search(ids=args.ids, **options)
    else:
        result = index.search(args.query if args.query else list(papers), **options)
    if args.output:
        with atomic_path(args.output) as temporary, temporary.open("w", encoding="utf-8") as handle:
            for record in result.to_records():
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"wrote the results of {len(result)} queries to {args.output}")
    else:
        print(result.format())
    return 0


def run_info(args: argparse.Namespace) -> int:
    for key, value in _opened(args.index).info().items():
        print(f"{key}: {value}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    index = _opened(args.index)
    index.check()
    files = sum(len(part.manifest.files) for part in index.parts or [index])
    print(f"{', '.join(args.index)}: {files} files match their sha256 in the manifest")
    return 0


def _opened(folders: list[str]):
    """The index folder, or the parts of one index opened as shards.

    The parts are the folders given, or the ``part-*`` folders of one.
    """
    from pathlib import Path

    from ..index import PaperIndex
    from ..index.manifest import MANIFEST_FILE

    if len(folders) > 1:
        return PaperIndex.load_shards(folders)
    folder = Path(folders[0])
    parts = (
        []
        if (folder / MANIFEST_FILE).exists()
        else [p for p in folder.glob("part-*") if (p / MANIFEST_FILE).is_file()]
    )
    if len(parts) > 1:
        return PaperIndex.load_shards(sorted(parts, key=lambda part: (len(part.name), part.name)))
    return PaperIndex.load(parts[0] if parts else folder)
