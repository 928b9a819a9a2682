"""Citation edge lists (CSV / TSV with a header, SNAP lines), papers + edges as a citation source, arXiv
listing abstracts, and the training layouts' examples: hand-written files, and hep-th's real ones."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from helpers import shared_data

from sciembed.data.edges import read_edge_list


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# ---------------------------------------------------------------------- the layouts


def test_csv_and_tsv_with_a_header_any_column_order_and_extra_columns(tmp_path):
    edges = read_edge_list(
        _write(tmp_path, "cites.csv", 'year,Citing,CITED\n2001,p1,p2\n2001," p2 ",p3\n\n2002,"a,b",p1\n')
    )
    assert (edges.layout, edges.columns, len(edges)) == ("csv", ("Citing", "CITED"), 3)
    assert edges.citing.to_pylist() == ["p1", "p2", "a,b"] and edges.cited.to_pylist() == ["p2", "p3", "p1"]
    edges = read_edge_list(_write(tmp_path, "cites.tsv", "target\tsource\r\n1\t0001001\r\n"))
    assert (edges.layout, edges.citing.to_pylist(), edges.cited.to_pylist()) == (
        "tsv",
        ["0001001"],
        ["1"],
    )  # ids kept as written


def test_snap_lines_after_comments(tmp_path):
    text = (
        "# Directed graph\r\n# Nodes: 4 Edges: 3\r\n# FromNodeId\tToNodeId\r\n1001\t9304045\r\n\r\n1001\t1001\r\n"
        "# FromNodeId\tToNodeId\r\n9304045\t12\r\n"
    )
    edges = read_edge_list(_write(tmp_path, "Cit.txt", text))
    assert (edges.layout, edges.columns, edges.comment_lines) == (
        "snap",
        None,
        4,
    )  # a `#` line mid-file is no citation either
    assert list(zip(edges.citing.to_pylist(), edges.cited.to_pylist())) == [
        ("1001", "9304045"),
        ("1001", "1001"),
        ("9304045", "12"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"cites\.txt: no citations \(an empty file\)"),
        ("# only\n# comments\n", r"no citations \(only # comment lines\)"),
        ("\n1001\n1002\n", r"cites\.txt, line 2: one column \('1001'\)"),
        (
            "a,b\n1,2\n",
            r"line 1: header not recognised \('a,b'\); expected a header naming the citing and cited columns",
        ),
        ("1\t2\n3\t4\n", r"line 1: header not recognised"),  # headerless lines are SNAP's only after its # comments
        (
            "# c\r\n1\t2\r\n\r\n3\r\n4\t5\r\n6\r\n",
            r"line 4: one column \('3'\) where SNAP lines have 2; 2 line\(s\) in all without 2 fields",
        ),
        (
            "# c\n1\t2\n\n\n3\t4\t5\n",
            r"line 5: 3 fields \('3\\t4\\t5'\) where SNAP lines have 2; 1 line\(s\) in all without 2 fields",
        ),
        ("x,citing,cited\n\n0,1,2\n1,3\n", r"line 4: 2 fields \('1,3'\) where the header names 3"),
        ("citing,cited\n1,2\n\n# note\n3, \n4,5\n", r"line 5: empty cited id; 1 such line\(s\) in all"),
        ("Citing,Cited\n", r"no citations after the header at line 1"),
    ],
)
def test_malformed_edge_lists_name_file_line_and_reason(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_edge_list(_write(tmp_path, "cites.txt", text))


def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path):
    with pytest.raises(ValueError, match=r"cites\.csv, line 3: not UTF-8 text"):
        read_edge_list(_write(tmp_path, "cites.csv", b"citing,cited\n1,2\n\xff,3\n"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_edge_list(tmp_path / "absent.csv")


def test_real_hepth_edge_lists():
    csv_edges = read_edge_list(shared_data("hepth", "citations-2000-2002", "df_formatted.csv"))
    assert (csv_edges.layout, csv_edges.columns, len(csv_edges)) == (
        "csv",
        ("from", "to"),
        38_386,
    )  # README: 38,386 links
    assert (csv_edges.citing[0].as_py(), csv_edges.cited[0].as_py()) == ("1034", "1004")
    snap = read_edge_list(shared_data("hepth", "citations-1992-2001-prefix", "Cit-HepTh.txt"))
    # README: 56,303 complete links, then the first 4 of the cut-off list; 4 `#` lines before them.
    assert (snap.layout, len(snap), snap.comment_lines) == ("snap", 56_307, 4)
    from sciembed.data.graph import CitationGraph

    assert CitationGraph.from_edges(snap.citing, snap.cited).stats.self_citations == 5  # README: 5 self-links


# ---------------------------------------------------------------------- papers + edges as a citation source


def _papers(tmp_path: Path, ids: list[str]) -> Path:
    return _write(
        tmp_path,
        "papers.jsonl",
        "".join(json.dumps({"paper_id": i, "title": f"Paper {i}", "abstract": "Text."}) + "\n" for i in ids),
    )


def test_papers_and_edges_count_what_they_drop_in_one_line(tmp_path, caplog):
    from sciembed.training.examples import CitationFiles, read_citation_source

    papers = _papers(tmp_path, ["a", "b", "c"])
    cites = _write(tmp_path, "cites.csv", "citing,cited\na,b\na,b\nb,b\nb,c\nc,zz\nyy,a\n")
    with caplog.at_level(logging.INFO, logger="sciembed"):
        source = read_citation_source(CitationFiles(papers, cites))
    [line] = [r.getMessage() for r in caplog.records if r.name == "sciembed.data.graph"]
    assert f"citation graph of {papers} + {cites}: 6 citation(s) given, 4 kept" in line
    assert "dropped 1 self-citation(s), 1 repeat(s)" in line
    assert (
        "1 cite an id without a paper (1 distinct id(s)), "
        "1 come from an id without a paper (kept, as papers without text)" in line
    )
    assert source.linked_queries() == ["a", "b"] and source.path == f"{papers} + {cites}"


def test_edges_that_name_no_paper_and_missing_files_are_refused(tmp_path):
    from sciembed.training.examples import CitationFiles, read_citation_source

    papers = _papers(tmp_path, ["0001001", "0001002"])
    cites = _write(tmp_path, "cites.txt", "# SNAP\n1001\t1002\n")
    with pytest.raises(
        ValueError,
        match=r"cites\.txt: none of its 1 citations names a paper of .*papers\.jsonl \(citation ids such as "
        r"'1001', paper ids such as '0001001'\); the two files must use the same ids",
    ):
        read_citation_source(CitationFiles(papers, cites))
    with pytest.raises(FileNotFoundError, match=r"nope\.csv: no such file \(--citations\)"):
        read_citation_source(CitationFiles(papers, tmp_path / "nope.csv"))
    # A malformed edge list stops before the papers are read (here they could not be).
    with pytest.raises(ValueError, match=r"bad\.csv, line 1: one column"):
        read_citation_source(
            CitationFiles(_write(tmp_path, "papers.jsonl", "not json\n"), _write(tmp_path, "bad.csv", "1001\n"))
        )


def test_real_hepth_papers_and_snap_citations(tmp_path):
    from sciembed.data.arxiv import read_arxiv_abstracts
    from sciembed.training.examples import CitationFiles, read_citation_source

    listing = read_arxiv_abstracts(shared_data("hepth", "abstracts"))
    papers = tmp_path / "hepth.jsonl"
    papers.write_text(
        "".join(json.dumps({k: p[k] for k in ("paper_id", "title", "abstract")}) + "\n" for p in listing.papers)
    )
    source = read_citation_source(
        CitationFiles(papers, shared_data("hepth", "citations-1992-2001-prefix", "Cit-HepTh.txt"))
    )
    stats = source.graph.stats
    # README: every linked paper has an abstract; 3,036 citing papers; 5 self-links.
    assert (stats.dangling_references, stats.unknown_citing, stats.self_citations) == (0, 0, 5)
    assert len(source.linked_queries()) == 3036


# ---------------------------------------------------------------------- arXiv listing abstracts

LISTING = """------------------------------------------------------------------------------
\\\\
Paper: hep-th/0001001
From: someone@example.org
Date: Tue, 4 Jan 2000 10:00:00 GMT   (10kb)
Date (revised v2): Wed, 5 Jan 2000 10:00:00 GMT

Title: A long title that
  continues here
Author: A. Person
Comments: 10 pages
\\\\
  An abstract over
two lines.
\\\\
"""


def test_arxiv_listing_fields_ids_and_bad_files(tmp_path):
    from sciembed import InvalidPaperError
    from sciembed.data.arxiv import read_arxiv_abstracts

    (tmp_path / "2000").mkdir()
    _write(tmp_path / "2000", "0001001.abs", LISTING)
    [paper] = read_arxiv_abstracts(tmp_path).papers
    assert paper == {
        "paper_id": "1001",
        "arxiv_id": "hep-th/0001001",
        "title": "A long title that continues here",
        "date": "Tue, 4 Jan 2000 10:00:00 GMT   (10kb)",
        "journal_ref": "",
        "comments": "10 pages",
        "authors": "A. Person",
        "abstract": "An abstract over two lines.",
    }
    assert "someone@example.org" not in json.dumps(paper)  # submitters' addresses are not kept
    _write(tmp_path / "2000", "0001002.abs", LISTING.replace("0001001", "0001003"))
    with pytest.raises(
        InvalidPaperError,
        match=r"0001002\.abs, whole file \(paper_id '1003'\): Paper: hep-th/0001003 is not the file's name",
    ):
        read_arxiv_abstracts(tmp_path)
    _write(tmp_path / "2000", "0001004.abs", "no listing here\n")
    loaded = read_arxiv_abstracts(tmp_path, skip_invalid=True)
    assert len(loaded.papers) == 1 and [p.reason.split(":")[0] for p in loaded.skipped] == [
        "Paper",
        "not an arXiv listing",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidPaperError) as empty:  # a folder without listings is not an invalid record
        read_arxiv_abstracts(tmp_path / "empty")
    assert "no .abs files" in str(empty.value) and "invalid paper record" not in str(empty.value)
    assert "--skip-invalid" not in str(empty.value)


def test_real_hepth_abstracts():
    from sciembed.data.arxiv import read_arxiv_abstracts

    listing = read_arxiv_abstracts(shared_data("hepth", "abstracts"))
    assert len(listing.papers) == 29_555 and not listing.skipped  # README: 29,555 abstracts, 29,162 with >= 20 words
    assert sum(len(p["abstract"].split()) >= 20 for p in listing.papers) == 29_162
    first = listing.papers[0]
    assert (first["paper_id"], first["arxiv_id"], first["authors"]) == (
        "9201001",
        "hep-th/9201001",
        "C. Itzykson and J.-B. Zuber",
    )
    assert not any("@" in p["authors"] for p in listing.papers[:500])


# ---------------------------------------------------------------------- the layouts --help and the README show


def _example_files(example: str) -> dict[str, str]:
    """An example's files: the lines under each ``==> name <==`` heading."""
    files: dict[str, list[str]] = {}
    for line in example.splitlines():
        if heading := re.match(r"==> (\S+) <==", line):
            current = files.setdefault(heading.group(1), [])
        else:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def test_every_training_layout_example_reads(tmp_path):
    """What `sciembed train --help` shows is what the readers take."""
    from sciembed.data.layouts import TRAINING_LAYOUTS
    from sciembed.data.papers import read_papers
    from sciembed.data.s2orc import read_s2orc
    from sciembed.data.scirepeval import read_scirepeval_sample
    from sciembed.data.smart import read_smart_collection
    from sciembed.data.specter import read_specter_release
    from sciembed.training.task_mixture import read_task_mixture

    records = {
        "papers.jsonl": lambda path: len(read_papers(path)),
        "cites.csv": lambda path: len(read_edge_list(path)),
        "Cit-HepTh.txt": lambda path: len(read_edge_list(path)),
        "metadata.jsonl": lambda path: len(read_s2orc(path).papers),
        "cacm.all": lambda path: len(read_smart_collection(path).papers),
    }
    for number, layout in enumerate(TRAINING_LAYOUTS):
        folder = tmp_path / str(number)
        folder.mkdir()
        files = _example_files(layout.example)
        assert 2 <= sum(len(text.splitlines()) for text in files.values()) <= 6, layout.name  # about five lines
        for name, text in files.items():
            _write(folder, name, text)
        if "data.json" in files:
            assert len(read_specter_release(folder).papers) == 2
            continue
        if "mixture.json" in files:  # its sources are the other layouts': here only their names need to exist
            for task in json.loads(files["mixture.json"]):
                (folder / task["data"]).touch()
            assert [task.name for task in read_task_mixture(folder / "mixture.json")] == [
                "cite",
                "categories",
                "fos",
                "search",
            ]
            continue
        for name in files:
            read = records.get(name, lambda path: len(read_scirepeval_sample(path).data))
            assert read(folder / name) >= 1, (layout.name, name)


def test_the_training_docs_list_every_training_layout_with_its_example():
    from sciembed.data.layouts import TRAINING_LAYOUTS

    readme = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text(encoding="utf-8")
    for layout in TRAINING_LAYOUTS:
        assert f"[{layout.name}]  {layout.given_as}  (" in readme and layout.example in readme, layout.name
