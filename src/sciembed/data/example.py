"""A small example collection written for sciembed, used when the real data is not available.

The papers and their citation links are invented (not real publications): three topics of six papers
each, with links inside a topic only, so an embedding model that groups papers by topic finds the
cited papers among the nearest neighbours.
"""

from __future__ import annotations

from typing import Any

_TOPICS = {
    "gc": [
        (
            "Incremental Garbage Collection for List Processing Systems",
            "A garbage collector that runs in small increments interleaved with the program, bounding the pause "
            "caused by reclaiming unreachable list cells.",
        ),
        (
            "Copying Collection with Two Semispaces",
            "Live objects are copied from one half of memory to the other, compacting the heap and freeing the old "
            "semispace in a single sweep.",
        ),
        (
            "Reference Counting and Cyclic Structures",
            "Reference counts reclaim storage as soon as it becomes unreachable but fail on cycles; we combine "
            "counting with an occasional tracing pass.",
        ),
        (
            "Generational Scavenging of Short-Lived Objects",
            "Most objects die young, so collecting a small nursery often and the old generation rarely reduces the "
            "cost of automatic storage reclamation.",
        ),
        (
            "Mark and Sweep Collection Without a Stack",
            "Pointer reversal lets the marking phase of a garbage collector traverse list structures using no "
            "storage beyond the cells themselves.",
        ),
        (
            "Real-Time Storage Reclamation in Lisp",
            "A real-time list processing system must allocate and collect memory with a guaranteed worst-case delay "
            "per operation.",
        ),
    ],
    "db": [
        (
            "Access Path Selection in a Relational Database",
            "The optimizer estimates the cost of alternative access paths and join orders from catalog statistics "
            "and picks the cheapest plan for a query.",
        ),
        (
            "Join Ordering by Dynamic Programming",
            "Dynamic programming over subsets of relations finds the join order of minimal estimated cost for "
            "queries with many relations.",
        ),
        (
            "Estimating the Selectivity of Predicates",
            "Histograms of attribute values give estimates of how many tuples satisfy a selection predicate, which "
            "the query optimizer needs.",
        ),
        (
            "Hash Joins for Large Relations",
            "Partitioning both relations by a hash of the join attribute lets a join of relations larger than memory "
            "run in two passes.",
        ),
        (
            "Index Structures for Relational Query Processing",
            "B-trees on join and selection attributes change which query plans are cheap; we evaluate their effect "
            "on plan choice.",
        ),
        (
            "Query Decomposition in Distributed Databases",
            "A query over relations stored at several sites is decomposed into local subqueries, minimising the data "
            "shipped between sites.",
        ),
    ],
    "la": [
        (
            "Iterative Solution of Sparse Linear Systems",
            "Conjugate gradient iterations solve large sparse symmetric positive definite systems of linear "
            "equations without forming a factorization.",
        ),
        (
            "Pivoting Strategies in Gaussian Elimination",
            "Partial pivoting keeps Gaussian elimination numerically stable; we bound the growth of matrix elements "
            "during the factorization.",
        ),
        (
            "Computing Eigenvalues of Symmetric Matrices",
            "Householder reduction to tridiagonal form followed by the QR algorithm computes all eigenvalues of a "
            "real symmetric matrix.",
        ),
        (
            "Preconditioning the Conjugate Gradient Method",
            "An incomplete Cholesky factorization used as preconditioner reduces the number of conjugate gradient "
            "iterations on sparse systems.",
        ),
        (
            "Rounding Error Analysis of Matrix Factorizations",
            "Backward error analysis shows that the computed LU factors are the exact factors of a slightly "
            "perturbed matrix.",
        ),
        (
            "Band Matrix Algorithms for Finite Difference Equations",
            "Finite difference discretisations give banded linear systems, which elimination solves in time linear "
            "in the matrix order.",
        ),
    ],
}

# Within each topic of six papers, paper i cites papers i+1 and i+2 (mod 6): 12 links per topic.
_OFFSETS = (1, 2)


def example_papers() -> list[dict[str, Any]]:
    """The example papers as paper records (``paper_id``, ``title``, ``abstract``, ``topic``)."""
    return [
        {"paper_id": f"{topic}-{index}", "title": title, "abstract": abstract, "topic": topic}
        for topic, papers in _TOPICS.items()
        for index, (title, abstract) in enumerate(papers)
    ]


def example_citation_links() -> set[tuple[str, str]]:
    """Undirected citation links between example papers, as ``(paper_id, paper_id)`` pairs."""
    links = set()
    for topic, papers in _TOPICS.items():
        for index in range(len(papers)):
            for offset in _OFFSETS:
                a, b = f"{topic}-{index}", f"{topic}-{(index + offset) % len(papers)}"
                links.add((min(a, b), max(a, b)))
    return links
