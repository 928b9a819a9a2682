"""The recipes table's tasks: held-out CACM, hep-th, arXiv and SciRepEval's samples, cut per seed."""

from __future__ import annotations

import csv
import json
import tempfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from sciembed.evaluation.loaders import TaskSuite

#: Fields of study with fewer papers leave cross-validation folds with one class only.
MIN_FIELD_PAPERS = 8
#: arXiv archives with fewer papers are left out, counted in the JSON.
MIN_ARCHIVE_PAPERS = 20
CITE_TASKS = ("cacm_cite", "hepth_cite")
#: Ranking tasks and the measure whose per-query values the paired intervals resample (queries pooled over seeds).
PER_QUERY = {"cacm_cite": "map", "hepth_cite": "map", "search": "ndcg"}
#: Classification tasks: macro-F1 of the test papers resampled per seed, the differences averaged over seeds.
PER_PAPER = ("cacm_categories", "arxiv_archive", "fos")
#: Examples per domain in a two-domain run (CACM's and hep-th's, sampled), so both domains weigh the same.
DOMAIN_EXAMPLES = 3000
#: The expert a mixture-of-experts model with one expert per domain embeds each task in (other tasks: the first, cs).
TASK_DOMAINS = {"cacm_cite": "cs", "cacm_categories": "cs", "hepth_cite": "physics", "arxiv_archive": "physics"}
#: A SPECTROID row's own head on CACM's category test papers, judged against MiniLM's linear probe.
HEAD = "cacm_categories_head"


@dataclass
class FixedTasks:
    """The tasks read once per run; :meth:`suite` cuts a seed's tasks from them.

    Args:
        cacm: CACM's collection.
        hepth: hep-th's citation source.
        arxiv: the arXiv archive labels and papers files.
        samples: SciRepEval's samples folder.
        counts: what was read, recorded in the results file.
        hepth_files: hep-th's papers (JSON lines) and citations (CSV), for the two-domain rows.
        workdir: holds the files written once, read again by each seed's tasks.
    """

    cacm: Any
    hepth: Any
    arxiv: tuple[Path, Path]
    samples: Path
    counts: dict[str, Any]
    #: hep-th's papers (JSON lines) and citations (CSV), for the two-domain rows' training data.
    hepth_files: tuple[Path, Path]
    #: Holds the hep-th and arXiv files written once; kept open because each seed's tasks read the arXiv files again.
    workdir: tempfile.TemporaryDirectory

    @classmethod
    def read(cls, folders: dict[str, Path]) -> FixedTasks:
        from sciembed.data.arxiv import read_arxiv_abstracts
        from sciembed.data.edges import read_edge_list
        from sciembed.data.smart import read_smart_collection
        from sciembed.training.examples import CitationFiles, read_citation_source

        workdir = tempfile.TemporaryDirectory()
        root = Path(workdir.name)
        # hep-th: every abstract, and both citation sets as one edge list (the same ids: leading zeros dropped).
        listing = read_arxiv_abstracts(folders["hepth"] / "abstracts", skip_invalid=True)
        papers = root / "hepth.jsonl"
        papers.write_text(
            "".join(json.dumps({k: p[k] for k in ("paper_id", "title", "abstract")}) + "\n" for p in listing.papers)
        )
        edges = [
            read_edge_list(folders["hepth"] / "citations-2000-2002" / "df_formatted.csv"),
            read_edge_list(folders["hepth"] / "citations-1992-2001-prefix" / "Cit-HepTh.txt"),
        ]
        citations = root / "hepth-citations.csv"
        citations.write_text(
            "citing,cited\n"
            + "".join(f"{a},{b}\n" for e in edges for a, b in zip(e.citing.to_pylist(), e.cited.to_pylist()))
        )
        hepth = read_citation_source(CitationFiles(papers, citations))
        arxiv, arxiv_counts = arxiv_archive_files(
            folders["arxiv-metadata"] / "random-2007-2008" / "arxiv_sample.csv", root
        )
        counts = {
            "hepth": {
                "papers_with_text": len(hepth.papers),
                "linked_queries": len(hepth.linked_queries()),
                "abstract_files_skipped": len(listing.skipped),
            },
            "arxiv_archive": arxiv_counts,
        }
        return cls(
            read_smart_collection(folders["cacm"], skip_invalid=True),
            hepth,
            arxiv,
            folders["scirepeval-samples"],
            counts,
            (papers, citations),
            workdir,
        )

    def suite(self, cacm_cite: TaskSuite, seed: int, hepth_queries: int) -> TaskSuite:
        """Seed ``seed``'s tasks, each split or sampled by the seed.

        Args:
            cacm_cite: the specter run's held-out CACM cite task.
            seed: the seed.
            hepth_queries: hep-th query papers sampled.
        """
        from sciembed.evaluation.custom import classification_tasks
        from sciembed.evaluation.loaders import cacm_category_task

        linked = self.hepth.linked_queries()
        chosen = hepth_test_sample(len(linked), seed, hepth_queries)
        tasks = [
            replace(cacm_cite.tasks[0], task_id="cacm_cite", keep_per_query=True),
            replace(
                self.hepth.cite_task([linked[i] for i in sorted(chosen)], seed=seed),
                task_id="hepth_cite",
                keep_per_query=True,
            ),
            replace(cacm_category_task(self.cacm, seed=seed), task_id="cacm_categories", keep_predictions=True),
        ]
        (archive,), _ = classification_tasks("arxiv", str(self.arxiv[0]), papers=str(self.arxiv[1]), seed=seed)
        tasks.append(replace(archive, task_id="arxiv_archive", keep_predictions=True))
        tasks = [
            replace(task, domain=TASK_DOMAINS.get(task.task_id))
            for task in tasks + list(out_of_domain_suite(self.samples, seed).tasks)
        ]
        return TaskSuite("recipes", "cacm + hepth + arxiv + scirepeval-samples", tasks)


def hepth_test_sample(linked: int, seed: int, hepth_queries: int) -> np.ndarray:
    """Which of hep-th's ``linked`` query papers (by position) seed ``seed``'s test task scores."""
    return np.random.default_rng(seed).choice(linked, size=min(hepth_queries, linked), replace=False)


def fields_task(
    benchmark: str, what: str, papers: list[tuple[str, list[str], dict[str, Any]]], seed: int, **options: Any
):
    """A multi-label fields-of-study task, split in halves by ``seed``, scored by macro-F1.

    Fields with fewer than ``MIN_FIELD_PAPERS`` papers are left out, and papers without a kept field with them.

    Args:
        benchmark: the task's benchmark name.
        what: the task's title.
        papers: ``(paper_id, fields, record)`` per paper.
        seed: the seed of the split.
        options: more keyword arguments of the task.
    """
    from sciembed.evaluation.supervised import SCIREPEVAL_MULTILABEL
    from sciembed.evaluation.tasks import ClassificationTask

    counts = Counter(field for _, fields, _ in papers for field in fields)
    kept = sorted(field for field, n in counts.items() if n >= MIN_FIELD_PAPERS)
    rows = [(paper_id, [kept.index(f) for f in fields if f in kept], record) for paper_id, fields, record in papers]
    rows = [row for row in rows if row[1]]
    order = np.random.default_rng(seed).permutation(len(rows))
    half = len(order) // 2
    split = [([rows[i][0] for i in part], [rows[i][1] for i in part]) for part in (order[:half], order[half:])]
    return ClassificationTask(
        benchmark,
        f"{what} ({len(kept)} with >= {MIN_FIELD_PAPERS} papers)",
        {paper_id: record for paper_id, _, record in rows},
        train=split[0],
        test=split[1],
        protocol=replace(SCIREPEVAL_MULTILABEL, metrics=("f1_macro",)),
        **options,
    )


def arxiv_archive_files(path: Path, root: Path) -> tuple[tuple[Path, Path], dict[str, Any]]:
    """The arXiv sample as a labels file (``paper_id,label``: the archive) and a papers file, with counts.

    Archives with fewer than ``MIN_ARCHIVE_PAPERS`` papers are left out.

    Args:
        path: the arXiv sample (CSV).
        root: the folder the files are written to.
    """
    with path.open(encoding="utf-8", newline="") as handle:
        records = [row for row in csv.DictReader(handle) if row["abstract"].strip() and row["categories"].strip()]
    archive = {row["id"]: row["categories"].split()[0].split(".")[0] for row in records}
    sizes = Counter(archive.values())
    kept = {pid: label for pid, label in archive.items() if sizes[label] >= MIN_ARCHIVE_PAPERS}
    papers, labels = root / "arxiv.jsonl", root / "arxiv-archive.csv"
    papers.write_text(
        "".join(
            json.dumps({"paper_id": r["id"], "title": r["title"], "abstract": r["abstract"]}) + "\n"
            for r in records
            if r["id"] in kept
        )
    )
    labels.write_text("paper_id,label\n" + "".join(f"{pid},{label}\n" for pid, label in kept.items()))
    counts = {
        "papers": len(kept),
        "archives": dict(Counter(kept.values()).most_common()),
        "left_out": {
            "papers": len(archive) - len(kept),
            "archives": sorted(a for a, n in sizes.items() if n < MIN_ARCHIVE_PAPERS),
        },
    }
    return (labels, papers), counts


def suite_task(suite: TaskSuite, task_id: str):
    """The task ``task_id`` of ``suite``."""
    return next(task for task in suite.tasks if task.task_id == task_id)


def write_mixture(folders: dict[str, Path], suite: TaskSuite, folder: Path, cite_weight: float = 1.0) -> Path:
    """The seed's task mixture for the multi-task rows; returns its file.

    CACM's citations, CACM's categories and the fields of study without their test papers, and the MeSH sample. The
    search sessions stay out, so search is data no row was trained on.

    Args:
        folders: the data folders by name.
        suite: the seed's tasks, whose test papers are left out.
        folder: where the mixture file is written.
        cite_weight: the citations' weight against the other tasks' 1.
    """
    tests = {task_id: suite_task(suite, task_id).test[0] for task_id in ("cacm_categories", "fos")}
    samples = folders["scirepeval-samples"]
    tasks = [
        {
            "name": "cite",
            "type": "proximity",
            "data": str(folders["cacm"].resolve()),
            **({"weight": cite_weight} if cite_weight != 1.0 else {}),
        },
        {
            "name": "cacm_categories",
            "type": "classification",
            "data": str(folders["cacm"].resolve()),
            "exclude": list(tests["cacm_categories"]),
        },
        {
            "name": "fos",
            "type": "classification",
            "data": str((samples / "fos_small.json").resolve()),
            "exclude": list(tests["fos"]),
        },
        {"name": "mesh", "type": "classification", "data": str((samples / "mesh_small.json").resolve())},
    ]
    path = folder / "mixture.json"
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    return path


def write_domains(folders: dict[str, Path], fixed: FixedTasks, suite: TaskSuite, folder: Path) -> Path:
    """The seed's two-domain mixture: CACM as ``cs``, hep-th as ``physics`` without the seed's test queries.

    Each domain gives ``DOMAIN_EXAMPLES`` sampled examples, so both weigh the same.

    Args:
        folders: the data folders by name.
        fixed: the tasks read once, with hep-th's files.
        suite: the seed's tasks.
        folder: where the mixture file is written.
    """
    hepth_queries = sorted(suite_task(suite, "hepth_cite").qrels)
    papers, citations = fixed.hepth_files
    tasks = [
        {"name": "cs", "type": "proximity", "data": str(folders["cacm"].resolve()), "sample_size": DOMAIN_EXAMPLES},
        {
            "name": "physics",
            "type": "proximity",
            "data": {"papers": str(papers), "citations": str(citations)},
            "exclude": hepth_queries,
            "sample_size": DOMAIN_EXAMPLES,
        },
    ]
    path = folder / "domains.json"
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    return path


def out_of_domain_suite(folder: Path, seed: int) -> TaskSuite:
    """SciRepEval's fields-of-study and search samples as tasks, the fields' papers split by ``seed``.

    Args:
        folder: SciRepEval's samples folder.
        seed: the seed of the split.
    """
    from sciembed.data.scirepeval import read_scirepeval_sample
    from sciembed.evaluation.tasks import SearchTask

    fos = read_scirepeval_sample(folder / "fos_small.json", skip_invalid=True).data
    classification = fields_task(
        "scirepeval-samples",
        "Fields of study",
        [(str(row["paper_id"]), row["labels"], row) for row in fos],
        seed,
        task_id="fos",
        keep_predictions=True,
    )
    search = read_scirepeval_sample(folder / "search_small.jsonl", skip_invalid=True).data
    queries, documents, qrels = {}, {}, {}
    for number, row in enumerate(search):
        qid = f"q{number}"
        queries[qid] = row["query"]
        qrels[qid] = {c["paper_id"]: int(c["score"]) for c in row["candidates"]}
        documents.update({c["paper_id"]: c for c in row["candidates"]})
    ranking = SearchTask(
        "scirepeval-samples",
        "Search",
        documents,
        queries=queries,
        qrels=qrels,
        measures=("ndcg",),
        similarity="l2",
        task_id="search",
        keep_per_query=True,
    )
    return TaskSuite("scirepeval-samples", str(folder), [classification, ranking])


def scores(results) -> dict[str, Any]:
    """A row's metrics by task, with what the paired intervals resample.

    Ranking tasks keep their per-query measure; classification tasks their test labels and predictions.

    Args:
        results: the task results of an evaluation.
    """
    metrics = {r.task_id: {name: round(value, 2) for name, value in r.metrics.items()} for r in results}
    per_query = {
        r.task_id: {q: round(v[PER_QUERY[r.task_id]], 4) for q, v in r.details["per_query"].items()}
        for r in results
        if r.task_id in PER_QUERY
    }
    per_paper = {
        r.task_id: {
            "label_columns": r.counts["num_labels"]
            if r.details["per_paper"] and isinstance(next(iter(r.details["per_paper"].values()))[0], list)
            else None,
            "papers": r.details["per_paper"],
        }
        for r in results
        if r.task_id in PER_PAPER
    }
    return {"metrics": metrics, "per_query": per_query, "per_paper": per_paper}
