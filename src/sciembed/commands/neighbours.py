"""``sciembed neighbours``: embed the CACM papers and look at their nearest neighbours.

For a few query papers it lists the nearest neighbours by cosine similarity with their titles, marking
true citation links (CACM ``.X`` type 5), and reports the share of citation links among the ``k``
nearest neighbours of every paper that has at least one link, next to what random neighbours give.
Without ``../shared/data`` it says so and runs on the small example set in :mod:`sciembed.data.example`.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data.example import example_citation_links, example_papers
from ..data.knn import nearest_neighbours
from ..data.smart import CACM_CITATION, read_smart_collection
from ..encode import PaperEncoder
from .options import DEFAULT_DATA, add_options

logger = logging.getLogger(__name__)


@dataclass
class Neighbour:
    paper: dict[str, Any]
    similarity: float
    linked: bool


@dataclass
class QueryNeighbours:
    paper: dict[str, Any]
    links: int
    neighbours: list[Neighbour]


@dataclass
class NeighboursResult:
    source: str
    model: str
    papers: int
    skipped: int
    k: int
    queries: list[QueryNeighbours]
    linked_papers: int
    link_share: float
    random_share: float


def load_collection(data_dir: str | os.PathLike[str] | None) -> tuple[str, list[dict[str, Any]], set[tuple[str, str]], int]:
    """Return (description, papers, undirected citation links, skipped records) for the view: CACM under
    ``data_dir``, or sciembed's small invented example set when no ``data_dir`` is given.

    Raises:
        FileNotFoundError: ``data_dir`` is given but holds no ``cacm/`` folder (never silently the example set).
    """
    if data_dir is None:
        logger.warning("no data given: running on sciembed's small invented example set (not real data)")
        return "sciembed example set (invented papers, not real data)", example_papers(), example_citation_links(), 0
    cacm = Path(data_dir) / "cacm"
    if not cacm.is_dir():
        raise FileNotFoundError(f"{data_dir}: no cacm/ folder here" + ("" if Path(data_dir).is_dir() else f" ({data_dir} does not exist)"))
    collection = read_smart_collection(cacm, skip_invalid=True)
    return f"CACM ({collection.path})", collection.papers, collection.links.get(CACM_CITATION, set()), len(collection.skipped)


def run_neighbours(
    data_dir: str | os.PathLike[str] | None,
    *,
    model: str | None = None,
    queries: int = 3,
    k: int = 10,
    batch_size: int | None = None,
    show_progress_bar: bool = True,
) -> NeighboursResult:
    """Embed the collection with ``model`` (default: the embedded all-MiniLM-L6-v2) and measure
    how many nearest neighbours are citation links."""
    source, papers, links, skipped = load_collection(data_dir)
    encoder = PaperEncoder.from_pretrained(model)
    logger.info("embedding %d papers from %s with %s", len(papers), source, encoder.name_or_path)
    vectors = encoder.encode(papers, batch_size=batch_size, show_progress_bar=show_progress_bar)
    indices, scores = nearest_neighbours(vectors, k)

    position = {paper["paper_id"]: i for i, paper in enumerate(papers)}
    linked: list[set[int]] = [set() for _ in papers]
    for a, b in links:
        if a in position and b in position:
            linked[position[a]].add(position[b])
            linked[position[b]].add(position[a])
    with_links = [i for i, ids in enumerate(linked) if ids]
    shares = [len(linked[i].intersection(indices[i])) / indices.shape[1] for i in with_links]
    # Expected share for k neighbours drawn at random from the other papers.
    random_shares = [len(linked[i]) / (len(papers) - 1) for i in with_links]

    # Queries: the papers with the most citation links among those that have an abstract.
    candidates = sorted(with_links, key=lambda i: (-len(linked[i]), not papers[i]["abstract"], i))[:queries]
    reports = [
        QueryNeighbours(
            papers[i],
            len(linked[i]),
            [Neighbour(papers[j], float(s), int(j) in linked[i]) for j, s in zip(indices[i], scores[i])],
        )
        for i in candidates
    ]
    return NeighboursResult(
        source=source,
        model=encoder.name_or_path,
        papers=len(papers),
        skipped=skipped,
        k=indices.shape[1],
        queries=reports,
        linked_papers=len(with_links),
        link_share=float(np.mean(shares)) if shares else 0.0,
        random_share=float(np.mean(random_shares)) if random_shares else 0.0,
    )


def format_neighbours(result: NeighboursResult, title_width: int = 90) -> str:
    """The report as text."""
    lines = [
        f"Data:  {result.source}: {result.papers} papers with text"
        + (f" ({result.skipped} record(s) skipped, see the log)" if result.skipped else ""),
        f"Model: {result.model}",
        "",
    ]
    for query in result.queries:
        found = sum(n.linked for n in query.neighbours)
        lines.append(f"[{query.paper['paper_id']}] {query.paper['title'][:title_width]}")
        lines.append(f"  {query.links} citation link(s); {found} of its {len(query.neighbours)} nearest neighbours are among them")
        for rank, neighbour in enumerate(query.neighbours, start=1):
            mark = "cites/cited" if neighbour.linked else ""
            lines.append(
                f"  {rank:>2}. {neighbour.similarity:.3f} {mark:<11} [{neighbour.paper['paper_id']}] "
                f"{neighbour.paper['title'][:title_width]}"
            )
        lines.append("")
    lines.append(
        f"Share of citation links among the {result.k} nearest neighbours, over the {result.linked_papers} papers "
        f"with at least one link: {result.link_share:.3f} (random neighbours: {result.random_share:.4f}, "
        f"{result.link_share / result.random_share:.0f}x)" if result.random_share else "no citation links to score"
    )
    return "\n".join(lines)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "neighbours",
        help="embed the CACM papers and show nearest neighbours and citation links",
        description=(
            "Embed the real CACM collection from DATA/cacm and print, for a few query papers, their nearest "
            "neighbours with titles, marking true citation links, and the share of citation links among the "
            "nearest neighbours of every linked paper. Without DATA/cacm it runs on a small invented example set."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--data", help=f"folder holding cacm/ (default: {DEFAULT_DATA} when it holds cacm/, else sciembed's "
                                       "small invented example set); a given folder without cacm/ is an error")
    add_options(parser, "model")
    parser.add_argument("--queries", type=int, default=3, help="query papers to show")
    parser.add_argument("-k", type=int, default=10, help="neighbours per paper")
    add_options(parser, "batch_size", "no_progress")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    data = args.data
    if data is None and (Path(DEFAULT_DATA) / "cacm").is_dir():
        data = DEFAULT_DATA
    result = run_neighbours(data, model=args.model, queries=args.queries, k=args.k, batch_size=args.batch_size,
                            show_progress_bar=not args.no_progress)
    print(format_neighbours(result))
    return 0
