"""Distinct real papers for the speed benchmarks: every CACM, SciRepEval-sample and S2ORC-sample paper
with a title, once per distinct text (repeated papers flatter batching), ids made unique by source.

Fewer papers than the samples hold are a seeded draw across all of them. When more are asked for than
the samples hold (about 6,000), the rest are made by pairing a real
title with the abstract of another real paper (a seeded draw, never the same text twice), so every text
is distinct and the lengths keep the real distribution; the description returned says how many.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sciembed.data.smart import read_smart_collection


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def real_papers(data: Path) -> list[dict]:
    """The distinct papers of the shared samples, in a fixed order (CACM, SciRepEval, S2ORC)."""
    found: list[dict] = []

    def add(source: str, paper_id, title, abstract) -> None:
        if _text(title):
            found.append({"paper_id": f"{source}-{paper_id}", "title": _text(title), "abstract": _text(abstract)})

    for paper in read_smart_collection(data / "cacm", skip_invalid=True).papers:
        add("cacm", paper["paper_id"], paper["title"], paper["abstract"])
    samples = data / "scirepeval-samples"
    for name in ("fos_small.json", "mesh_small.json"):
        for record in json.loads((samples / name).read_text(encoding="utf-8")):
            add(name.split("_")[0], record["corpus_id"], record.get("title"), record.get("abstract"))
    for record in json.loads((samples / "specter_small.json").read_text(encoding="utf-8")):
        for role in ("query", "pos", "neg"):
            add(
                "specter",
                record[role].get("corpus_id") or record[role].get("sha"),
                record[role].get("title"),
                record[role].get("abstract"),
            )
    for line in (samples / "search_small.jsonl").read_text(encoding="utf-8").splitlines():
        for candidate in json.loads(line)["candidates"]:
            add("search", candidate.get("corpus_id"), candidate.get("title"), candidate.get("abstract"))
    for line in (
        (data / "s2orc-sample" / "data" / "metadata" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    ):
        record = json.loads(line)
        add("s2orc", record["paper_id"], record.get("title"), record.get("abstract"))

    distinct, seen_texts, seen_ids = [], set(), set()
    for paper in found:
        text = (paper["title"], paper["abstract"])
        if text not in seen_texts and paper["paper_id"] not in seen_ids:
            seen_texts.add(text)
            seen_ids.add(paper["paper_id"])
            distinct.append(paper)
    return distinct


def distinct_papers(data: Path, count: int, seed: int = 0) -> tuple[list[dict], dict]:
    """``count`` papers with distinct texts and ids, and a description of where they came from."""
    papers = real_papers(data)
    real = min(count, len(papers))
    rng = np.random.default_rng(seed)
    # Fewer than the samples hold: a seeded draw over all sources (in their order), not the first source alone.
    chosen = (
        [papers[i] for i in np.sort(rng.choice(len(papers), real, replace=False))]
        if real < len(papers)
        else list(papers)
    )
    texts = {(p["title"], p["abstract"]) for p in chosen}
    abstracts = [p["abstract"] for p in papers if p["abstract"]]
    while len(chosen) < count:
        title = papers[int(rng.integers(len(papers)))]["title"]
        abstract = abstracts[int(rng.integers(len(abstracts)))]
        if (title, abstract) not in texts:
            texts.add((title, abstract))
            chosen.append({"paper_id": f"paired-{len(chosen)}", "title": title, "abstract": abstract})
    description = {
        "papers": count,
        "real": real,
        "real_available": len(papers),
        "paired_title_and_other_abstract": count - real,
        "sources": "CACM, SciRepEval samples (fos, mesh, specter, search candidates), S2ORC sample",
    }
    return chosen, description


def distinct_titles(data: Path, count: int, seed: int = 0) -> tuple[list[dict], dict]:
    """``count`` papers with distinct titles, each its title alone, and a description of where they came from."""
    first: dict[str, dict] = {}
    for paper in real_papers(data):
        first.setdefault(paper["title"], paper)
    papers = list(first.values())
    if count > len(papers):
        raise ValueError(f"{data}: {len(papers)} distinct titles in the shared samples, fewer than the {count} asked")
    rng = np.random.default_rng(seed)
    chosen = [papers[i] for i in np.sort(rng.choice(len(papers), count, replace=False))]
    description = {
        "papers": count,
        "distinct_titles_available": len(papers),
        "sources": "titles of CACM, SciRepEval samples (fos, mesh, specter, search candidates), S2ORC sample",
    }
    return [{"paper_id": paper["paper_id"], "title": paper["title"], "abstract": ""} for paper in chosen], description
