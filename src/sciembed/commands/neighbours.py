"""``sciembed neighbours``: the nearest neighbours of papers in any collection (:func:`sciembed.neighbours`).

Embeds the papers of a papers file or SMART collection (or reads their vectors from an embedding file), searches
them with faiss and prints, or writes as JSONL / CSV, each query paper's ``top_k`` nearest neighbours with ids, titles
and cosine scores, marking citation links when the collection has them (or ``--citations`` gives them).
Without ``--papers`` it shows CACM from ``--data`` (default ``../shared/data``) as before, or, without CACM, the
small example set of :mod:`sciembed.data.example`.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from .options import (
    DEFAULT_DATA,
    HelpFormatter,
    add_options,
    check_engine_cache,
    encoder_from_args,
    refuse_model_options,
)

logger = logging.getLogger(__name__)

#: Query papers printed without --papers (the view of CACM or the example set): the most linked ones.
LEGACY_QUERIES = 3


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "neighbours",
        help="the nearest neighbours of papers in any collection (ids, titles, cosine scores), printed or written",
        description=(
            "Embed the papers of a papers file (.jsonl, .json, .csv or .parquet with paper_id, title, abstract) or "
            "of a SMART collection (a folder with a *.all file, such as CACM), or read their vectors with "
            "--embeddings; search them with faiss (exact cosine) and print each query paper's --top-k nearest "
            "neighbours with ids, titles and scores, or write them with --output (JSONL: one line per query paper; "
            "CSV / TSV: one row per neighbour). Query papers: --query-ids / --query-file, else every paper. "
            "Citation links (a SMART collection's .X citations, or --citations) are marked and their share among "
            f"the neighbours is reported. Without --papers: CACM from --data (default {DEFAULT_DATA}), or a small "
            "invented example set."
        ),
        epilog=(
            "examples:\n"
            "  sciembed neighbours --papers papers.jsonl --query-ids p1 p7 --top-k 5\n"
            "  sciembed neighbours --papers papers.csv --embeddings vectors.npy --output neighbours.jsonl\n"
            "  sciembed neighbours --papers ../shared/data/cacm --skip-invalid --queries 3\n\n"
            "Python: sciembed.neighbours(model, papers, top_k=10, query_ids=None, embeddings=None, citations=None)"
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--papers",
        help="papers: a .jsonl / .json / .csv / .parquet file (paper_id, title, abstract; see "
        "--id-field), a folder of Parquet parts, or a SMART collection folder or *.all file (CACM; its citation "
        "links are marked)",
    )
    parser.add_argument(
        "--embeddings",
        help="read the papers' vectors from this file instead of embedding them: .jsonl / "
        ".npy (+ .ids.json) / .parquet, or a folder of Parquet parts, as `sciembed embed` writes",
    )
    parser.add_argument(
        "--index",
        help="search this paper index (sciembed index build) instead of embedding: the results of "
        "`sciembed index search DIR --ids ...`; --papers gives the titles and the query ids",
    )
    parser.add_argument(
        "--query-ids", nargs="+", metavar="ID", help="query papers (default: every paper); unknown ids are an error"
    )
    parser.add_argument("--query-file", help="query paper ids, one a line (blank and # lines ignored)")
    parser.add_argument("--top-k", "-k", type=int, default=10, help="neighbours per query paper")
    parser.add_argument(
        "--queries",
        type=int,
        metavar="N",
        help="print only N query papers (the most linked when citation "
        f"links are known, else the first N); default: every one, {LEGACY_QUERIES} without --papers; "
        "--output always holds every query paper",
    )
    parser.add_argument(
        "--output",
        help="write the neighbours here, atomically: .jsonl ({paper_id, title, neighbours: [{rank, "
        "paper_id, title, score}]} a line) or .csv / .tsv (query_id, query_title, rank, paper_id, title, score)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --output file (refused otherwise)"
    )
    parser.add_argument(
        "--citations",
        help="citation links to mark: CSV / TSV with a citing,cited header, or SNAP's tab-separated lines",
    )
    parser.add_argument(
        "--id-field", help="field holding the paper id (default: first of paper_id, corpus_id, id, doc_id)"
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip invalid records (and papers without a vector in --embeddings) and report them, instead of stopping",
    )
    add_options(parser, "smart_links")
    parser.add_argument(
        "--data",
        help=f"without --papers: a folder holding cacm/ (default: {DEFAULT_DATA} when it holds "
        "cacm/, else sciembed's small invented example set); a given folder without cacm/ is an error",
    )
    add_options(
        parser,
        "model",
        "batch_size",
        "max_length",
        "pooling",
        "device",
        "backend",
        "onnx_quantization",
        "trust_remote_code",
        "no_progress",
        "text_fields",
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..data.papers import PaperReading, check_paper_source
    from ..io import check_input
    from ..search.neighbours import UnknownQueryError, check_output, neighbours

    if args.top_k < 1:
        raise ValueError(f"--top-k must be positive, got {args.top_k}")
    if args.output:
        check_output(args.output, overwrite=args.overwrite)  # before anything is embedded
    for option, path, kind in (
        ("--papers", args.papers, "any"),
        ("--embeddings", args.embeddings, "any"),
        ("--index", args.index, "folder"),
        ("--query-file", args.query_file, "file"),
        ("--citations", args.citations, "file"),
    ):
        if path is not None:
            check_input(path, option, kind)
    if args.papers is not None:
        check_paper_source(args.papers, "--papers")
    if args.data is not None and Path(args.data).is_symlink():
        check_input(args.data, "--data", "folder")  # a link loop or dangling link; a missing folder is named below
    check_engine_cache(args)
    if args.embeddings and args.model:
        raise ValueError("give --model (embed the papers) or --embeddings (read their vectors), not both")
    if args.index and args.embeddings:
        raise ValueError("give --index (search an index) or --embeddings (read vectors), not both")
    if args.index:
        refuse_model_options(args, f"--index (the neighbours come from the index {args.index})")
    elif args.embeddings:
        refuse_model_options(args, f"--embeddings (the vectors are read from {args.embeddings})")
    query_ids = list(args.query_ids or [])
    listed = _read_query_file(args.query_file) if args.query_file else []
    query_ids += [paper_id for _, paper_id in listed]
    file_lines = {paper_id: number for number, paper_id in reversed(listed)}  # each id's first line
    papers, citations, limit, source, skip_invalid = args.papers, args.citations, args.queries, None, args.skip_invalid
    if papers is None:
        if args.query_ids or args.query_file or args.embeddings or args.index:
            raise ValueError("--query-ids, --query-file, --embeddings and --index need --papers")
        papers, citations, source = _legacy_collection(args.data, citations)
        limit = LEGACY_QUERIES if limit is None else limit
        skip_invalid = True  # CACM's record 2856 has no text: the view has always left it out (and says so)
    elif args.data:
        raise ValueError("--data is the folder holding cacm/ when no --papers is given; give one of them")
    # The model is loaded by the library once the papers and the query ids are known to be good.
    model = None if args.embeddings or args.index else lambda: encoder_from_args(args)
    try:
        result = neighbours(
            model,
            papers,
            top_k=args.top_k,
            query_ids=query_ids or None,
            embeddings=args.embeddings,
            index=args.index,
            citations=citations,
            reading=PaperReading(args.id_field, skip_invalid, args.text_fields, args.smart_links),
            batch_size=args.batch_size,
            show_progress_bar=not args.no_progress,
        )
    except UnknownQueryError as error:
        in_file = [paper_id for paper_id in error.unknown if paper_id in file_lines]
        if not in_file:
            raise
        where = ", ".join(f"line {file_lines[paper_id]} ({paper_id!r})" for paper_id in in_file[:5])
        raise UnknownQueryError(f"{args.query_file}, {where}: {error}", error.unknown) from None
    result.source = source or result.source
    if args.output:
        path = result.write(args.output, overwrite=args.overwrite)
        print(f"wrote the {result.top_k} nearest neighbours of {len(result)} paper(s) of {result.source} to {path}")
        if limit:
            print(result.format(limit=limit))
    else:
        print(result.format(limit=limit))
    return 0


def _read_query_file(path: str) -> list[tuple[int, str]]:
    """The query ids of a query file, one a line, each with its line number.

    Blank lines and ``#`` lines are skipped.
    """
    with open(path, encoding="utf-8") as handle:
        lines = ((number, line.strip()) for number, line in enumerate(handle, start=1))
        return [(number, text) for number, text in lines if text and not text.startswith("#")]


def _legacy_collection(data: str | None, citations: str | None):
    """Without --papers: CACM under ``data`` (or ../shared/data), else the invented example set and its links."""
    if data is None and (Path(DEFAULT_DATA) / "cacm").is_dir():
        data = DEFAULT_DATA
    if data is None:
        from ..data.example import example_citation_links, example_papers

        logger.warning("no data given: running on sciembed's small invented example set (not real data)")
        links = citations if citations is not None else sorted(example_citation_links())
        return example_papers(), links, "sciembed example set (invented papers, not real data)"
    cacm = Path(data) / "cacm"
    if not cacm.is_dir():
        raise FileNotFoundError(
            f"{data}: no cacm/ folder here" + ("" if Path(data).is_dir() else f" ({data} does not exist)")
        )
    return str(cacm), citations, None
