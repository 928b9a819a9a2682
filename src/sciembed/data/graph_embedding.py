"""A citation-graph embedding that needs no training (FastRP), for SciNCL's sampler.

A citation-graph embedding that needs no training: FastRP (Chen et al. 2019), random projections of each paper's 1- to
3-hop neighbourhood in the undirected citation graph, seeded, as SciNCL's sampler (:mod:`.scincl`) uses in place of the
paper's PyTorch-BigGraph vectors. And :func:`align_vectors` to use precomputed vectors (PBG output) in a graph's order
instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from .graph import CitationGraph, PaperRefs, paper_indices
from .keyed_random import SeedLike
from .knn import unit_rows

logger = logging.getLogger(__name__)

#: Dimensions and propagation steps of the computed FastRP embedding.
EMBEDDING_DIM = 64
PROPAGATION_STEPS = 3


def citation_graph_embedding(
    graph: CitationGraph,
    dim: int = EMBEDDING_DIM,
    *,
    exclude: PaperRefs = None,
    seed: SeedLike = 0,
    steps: int = PROPAGATION_STEPS,
) -> np.ndarray:
    """A citation-graph embedding by random projection of neighbourhoods: ``(n, dim)`` rows aligned with ``graph.ids``.

    The method is FastRP (Chen et al. 2019, "Fast and Accurate Network Embeddings via Very Sparse
    Random Projection"): with ``S = A + A^T`` the undirected 0/1 citation graph
    (:meth:`CitationGraph.symmetric_adjacency`), ``P = D^-1 S`` its random-walk matrix and ``R`` an
    ``(n, dim)`` Gaussian matrix drawn from ``seed``, ``N_1 = P R``, ``N_k = P N_{k-1}``, each row of
    each ``N_k`` scaled to unit length, and the embedding is ``sum_k N_k`` (``k = 1 .. steps``) with
    unit rows. Row i is thus a random projection of the papers reachable from i in up to ``steps``
    hops, weighted by walk probability, so papers that share neighbourhoods get near rows (the
    similarity PBG's link-prediction training also captures), and the inner product of two rows
    estimates the overlap of their neighbourhoods (Johnson-Lindenstrauss). It needs only ``steps``
    sparse products (linear in the citations, fine for millions of papers) and is exact and
    deterministic for a seed. A truncated SVD of the normalised adjacency was tried first and
    rejected: citation graphs have many small components, each contributing an eigenvalue 1, so the top
    singular vectors are component indicators and a truncation through that degenerate eigenspace is
    arbitrary (not even reproducible between runs). Papers without links (and the ``exclude``d papers,
    whose links are removed first) get a row of NaN, which :func:`sample_scincl_triplets` counts as a
    paper without a vector. Rows have unit length, so euclidean and cosine kNN rank alike.

    Raises:
        ValueError: ``dim`` or ``steps`` is not a positive integer.
    """
    n = graph.num_papers
    for name, value in (("embedding dim", dim), ("steps", steps)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    # float32 throughout: half the memory of float64 at 10^8 papers, and random projections need no more.
    sym = graph.symmetric_adjacency().astype(np.float32)
    excluded = paper_indices(graph, exclude, "exclude")
    if len(excluded):
        keep = np.ones(n, dtype=np.float32)
        keep[excluded] = 0.0
        mask = sp.diags_array(keep)
        sym = (mask @ sym @ mask).tocsr()
        sym.eliminate_zeros()
    degree = np.asarray(sym.sum(axis=1)).ravel()
    inverse = np.zeros(n, dtype=np.float32)
    np.divide(1.0, degree, out=inverse, where=degree > 0)
    walk = (sp.diags_array(inverse) @ sym).tocsr()

    layer = rng.standard_normal((n, dim), dtype=np.float32)
    embedding = np.zeros((n, dim), dtype=np.float32)
    for _ in range(steps):
        layer = unit_rows(walk @ layer)
        embedding += layer
    embedding = unit_rows(embedding)
    # No link, no position: NaN rather than a zero row, which would look like a real point.
    embedding[degree == 0] = np.nan
    logger.info(
        "FastRP citation-graph embedding: %d papers x %d dims, %d steps, %d without links",
        n,
        dim,
        steps,
        int((degree == 0).sum()),
    )
    return embedding


def align_vectors(graph: CitationGraph, ids: Iterable[str | int], vectors: np.ndarray) -> np.ndarray:
    """Puts precomputed vectors given as ``(ids, vectors)`` into the order of ``graph.ids``.

    PyTorch-BigGraph's ``entity_names`` and embeddings are such vectors.

    Graph papers without a vector get a row of NaN (counted as "without vector" by the sampler). Ids not
    in the graph are ignored. Both counts are logged.

    Raises:
        ValueError: ``vectors`` is not 2-d, or its rows do not match ``ids``.
    """
    vectors = np.asarray(vectors)
    id_array = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids)).astype(str)
    if vectors.ndim != 2 or vectors.shape[0] != len(id_array) or vectors.shape[1] < 1:
        raise ValueError(
            f"vectors must be a 2-d array with one row per id: {len(id_array)} ids, vectors of shape {vectors.shape}"
        )
    aligned = np.full((graph.num_papers, vectors.shape[1]), np.nan, dtype=np.float64)
    position = graph.ids.positions(id_array)
    in_graph = position >= 0
    aligned[position[in_graph]] = vectors[in_graph]
    missing = int(np.isnan(aligned[:, 0]).sum())
    logger.info(
        "aligned vectors: %d of %d ids are graph papers; %d graph papers have no vector",
        int(in_graph.sum()),
        len(id_array),
        missing,
    )
    return aligned


# ---------------------------------------------------------------------- the sampler
