"""Citation graphs as compressed sparse rows over integer paper indices.

A :class:`CitationGraph` holds ``n`` papers, numbered ``0 .. n-1``, with their string ids in
:attr:`CitationGraph.ids`, and the directed citations ``i -> j`` ("paper i cites paper j") twice:
as out-rows (``cited(i)``: the papers i cites, sorted) and as in-rows (``citing(j)``: the papers that
cite j, sorted). Both are plain numpy ``indptr`` / ``indices`` arrays, the layout of
``scipy.sparse.csr_array``, so a graph of millions of papers and tens of millions of citations costs a
few hundred megabytes and every query (degrees, two-hop neighbourhoods, co-citation counts, edge
membership) is a vectorised numpy or scipy operation, never a Python loop over papers.

Papers without text (no title and no abstract, or cited papers that have no record at all) stay in
the graph, because they still connect papers that do have text (a two-hop path or a co-citation may
run through them), but :attr:`CitationGraph.has_text` is false for them and the samplers in
:mod:`sciembed.data.samplers` never emit them as training text.

Building a graph keeps going on messy input and reports what it did in a :class:`GraphStats`
(also logged, in one line): self-citations and repeated edges are dropped. References to ids without a record
("dangling" references, counted when the caller passes the list of known ``ids``) are kept as papers
without text unless ``drop_dangling=True``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .paper_ids import IdArray, IdLike, PaperIds, factorise, id_array

logger = logging.getLogger(__name__)

#: Papers named by graph index or by id.
PaperRefs = Iterable[int | str] | np.ndarray | None


@dataclass(frozen=True)
class GraphStats:
    """What building a :class:`CitationGraph` found in its input and what it dropped.

    Attributes:
        edges_given: citation pairs passed in (for undirected links: links passed in).
        self_citations: pairs whose two ends are the same paper (dropped).
        duplicate_edges: repeats of a pair already seen (dropped, for undirected links a pair and its
            reverse count as the same link).
        dangling_references: pairs whose cited paper is not among the known ``ids``.
        dangling_papers: distinct cited ids that are not among the known ``ids``.
        unknown_citing: pairs whose citing paper is not among the known ``ids``.
        dropped_dangling: pairs dropped because an end is unknown (only with ``drop_dangling=True``).
        papers: papers in the graph.
        papers_with_text: papers in the graph that may be emitted as training text.
        citations: directed citations kept (an undirected link counts twice: once each way).
        undirected: built from links without a direction (:meth:`CitationGraph.from_undirected_pairs`), each
            kept link stored both ways.
    """

    edges_given: int
    self_citations: int
    duplicate_edges: int
    dangling_references: int
    dangling_papers: int
    unknown_citing: int
    dropped_dangling: int
    papers: int
    papers_with_text: int
    citations: int
    undirected: bool = False

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class CitationGraph:
    """Directed citations between ``n`` papers in compressed sparse rows (see the module docstring).

    Build one with :meth:`from_edges` (string ids), :meth:`from_undirected_pairs` (links without a
    direction, such as CACM's) or :meth:`from_indices` (integer indices, for large synthetic graphs).
    """

    def __init__(
        self,
        ids: PaperIds | IdArray,
        out_indptr: np.ndarray,
        out_indices: np.ndarray,
        has_text: np.ndarray,
        stats: GraphStats,
    ):
        """Wrap ready CSR arrays. Use the ``from_*`` constructors rather than calling this directly.

        ``out_indices`` must be sorted within each row and hold no repeats and no self-citations.
        """
        ids = PaperIds(ids)
        n = len(ids)
        if len(out_indptr) != n + 1 or len(has_text) != n:
            raise ValueError(
                f"inconsistent graph arrays: {n} ids, indptr of {len(out_indptr)}, has_text of {len(has_text)}"
            )
        self.ids = ids
        self.out_indptr = out_indptr
        self.out_indices = out_indices
        self.has_text = has_text
        self.stats = stats
        # In-rows: the transpose, built once by a stable sort of the cited column (rows come out sorted).
        order = np.argsort(out_indices, kind="stable")
        self.in_indices = self.citing_of_edges().astype(out_indices.dtype, copy=False)[order]
        self.in_indptr = _indptr(np.bincount(out_indices, minlength=n))

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_edges(
        cls,
        citing_ids: Iterable[IdLike],
        cited_ids: Iterable[IdLike],
        papers_with_text: Iterable[IdLike] | None = None,
        ids: Iterable[IdLike] | None = None,
        *,
        drop_dangling: bool = False,
        source: str | None = None,
    ) -> CitationGraph:
        """Build a graph from parallel lists of citing and cited paper ids (``citing[k]`` cites ``cited[k]``).

        Args:
            citing_ids, cited_ids: the citations, as string (or integer) ids. Same length.
            papers_with_text: ids of the papers that have text. They are added to the graph even when
                they have no citation (a paper with text and no links is still a valid random
                negative). ``None`` means every paper counts as having text.
            ids: the ids that have a record (e.g. every paper in the metadata). When given, cited ids
                outside it are counted as dangling references and citing ids outside it as unknown.
                These papers stay in the graph (without text, unless listed in ``papers_with_text``)
                unless ``drop_dangling`` is true, in which case their citations are dropped.
            drop_dangling: drop citations with an end outside ``ids`` instead of keeping them.
            source: what the citations were read from, named in the one line that logs the counts.

        The integer index of each paper is its position in the sorted array of all ids (``np.unique``),
        so the same input always gives the same numbering.
        """
        arrays = _edge_arrays((citing_ids, "citing_ids"), (cited_ids, "cited_ids"), ids, papers_with_text)
        return cls._build(*arrays, drop_dangling=drop_dangling, undirected=False, source=source)

    @classmethod
    def from_undirected_pairs(
        cls,
        a_ids: Iterable[IdLike],
        b_ids: Iterable[IdLike],
        papers_with_text: Iterable[IdLike] | None = None,
        ids: Iterable[IdLike] | None = None,
        *,
        drop_dangling: bool = False,
        source: str | None = None,
    ) -> CitationGraph:
        """Build a graph from links that carry no direction, storing each link in both directions.

        CACM's ``.X`` type-5 lines say only that "A cites B or B cites A" (``cite.info`` of the
        collection), so the direction is lost. Storing both directions is the one reading that
        neither invents a direction nor loses a link: ``cited(i)`` and ``citing(i)`` both become
        "linked to i", a sampler's positive is a linked paper and a hard negative a paper linked to a
        linked paper but not to the query. Pairs are compared without order, so ``(a, b)`` after
        ``(b, a)`` counts as a duplicate link. :attr:`GraphStats.citations` counts each kept link twice.
        Arguments as in :meth:`from_edges`.
        """
        arrays = _edge_arrays((a_ids, "a_ids"), (b_ids, "b_ids"), ids, papers_with_text)
        return cls._build(*arrays, drop_dangling=drop_dangling, undirected=True, source=source)

    @classmethod
    def from_indices(
        cls,
        citing: np.ndarray,
        cited: np.ndarray,
        num_papers: int,
        *,
        ids: Sequence[str] | np.ndarray | None = None,
        has_text: np.ndarray | None = None,
    ) -> CitationGraph:
        """Build a graph from integer index arrays (``citing[k]`` cites ``cited[k]``), for large graphs.

        Self-citations and repeated pairs are dropped and counted as in :meth:`from_edges`. ``ids``
        defaults to the decimal strings of the indices. ``has_text`` to all true.
        """
        citing = np.asarray(citing)
        cited = np.asarray(cited)
        if citing.shape != cited.shape or citing.ndim != 1:
            raise ValueError(
                f"citing and cited must be 1-d arrays of equal length, got shapes {citing.shape} and {cited.shape}"
            )
        if len(citing) and (min(citing.min(), cited.min()) < 0 or max(citing.max(), cited.max()) >= num_papers):
            raise ValueError(f"paper indices must lie in [0, {num_papers})")
        paper_ids = PaperIds(id_array(range(num_papers) if ids is None else ids, "ids"))
        if len(paper_ids) != num_papers:
            raise ValueError(f"{len(paper_ids)} ids for {num_papers} papers")
        text = np.ones(num_papers, dtype=bool) if has_text is None else np.asarray(has_text, dtype=bool)
        indptr, indices, self_count, duplicates = _csr_from_pairs(citing, cited, num_papers)
        stats = GraphStats(
            edges_given=len(citing),
            self_citations=self_count,
            duplicate_edges=duplicates,
            dangling_references=0,
            dangling_papers=0,
            unknown_citing=0,
            dropped_dangling=0,
            papers=num_papers,
            papers_with_text=int(text.sum()),
            citations=len(indices),
        )
        _log_stats(stats)
        return cls(paper_ids, indptr, indices, text, stats)

    @classmethod
    def _build(
        cls,
        first: IdArray,
        second: IdArray,
        known: IdArray | None,
        text: IdArray | None,
        *,
        drop_dangling: bool,
        undirected: bool,
        source: str | None,
    ) -> CitationGraph:
        all_ids, (src, dst, known_codes, text_codes) = factorise([first, second, known, text])
        n_edges = len(src)

        dangling = unknown = dangling_papers = dropped = 0
        keep_node = np.ones(len(all_ids), dtype=bool)
        if known_codes is not None:
            is_known = np.zeros(len(all_ids), dtype=bool)
            is_known[known_codes] = True
            bad_dst, bad_src = ~is_known[dst], ~is_known[src]
            if undirected:
                # A link has no citing end: every unknown end counts as a dangling reference.
                dangling = int(bad_dst.sum() + bad_src.sum())
                dangling_papers = len(np.unique(np.concatenate([dst[bad_dst], src[bad_src]])))
            else:
                dangling, unknown = int(bad_dst.sum()), int(bad_src.sum())
                dangling_papers = len(np.unique(dst[bad_dst]))
            if drop_dangling:
                keep = ~(bad_src | bad_dst)
                dropped = int((~keep).sum())
                src, dst = src[keep], dst[keep]
                keep_node = is_known.copy()
        if text_codes is not None:
            has_text = np.zeros(len(all_ids), dtype=bool)
            has_text[text_codes] = True
            keep_node |= has_text
        else:
            has_text = np.ones(len(all_ids), dtype=bool)

        if not keep_node.all():
            # Renumber so that papers only reachable through dropped citations disappear.
            new_index = np.cumsum(keep_node) - 1
            all_ids, has_text = PaperIds(all_ids.arrow.filter(keep_node)), has_text[keep_node]
            src, dst = new_index[src], new_index[dst]
        n = len(all_ids)

        if undirected:
            low, high = np.minimum(src, dst), np.maximum(src, dst)
            _, _, self_count, duplicates = _csr_from_pairs(low, high, n)
            # Count on unordered pairs, then store each surviving link both ways.
            src, dst = np.concatenate([low, high]), np.concatenate([high, low])
            indptr, indices, _, _ = _csr_from_pairs(src, dst, n)
        else:
            indptr, indices, self_count, duplicates = _csr_from_pairs(src, dst, n)

        stats = GraphStats(
            edges_given=n_edges,
            self_citations=self_count,
            duplicate_edges=duplicates,
            dangling_references=dangling,
            dangling_papers=dangling_papers,
            unknown_citing=unknown,
            dropped_dangling=dropped,
            papers=n,
            papers_with_text=int(has_text.sum()),
            citations=len(indices),
            undirected=undirected,
        )
        _log_stats(stats, source, ends_checked=known_codes is not None, drop_dangling=drop_dangling)
        return cls(all_ids, indptr, indices, has_text, stats)

    # ------------------------------------------------------------------ sizes and ids

    @property
    def num_papers(self) -> int:
        return len(self.ids)

    @property
    def num_citations(self) -> int:
        return len(self.out_indices)

    def __len__(self) -> int:
        return self.num_papers

    def __repr__(self) -> str:
        return (
            f"CitationGraph({self.num_papers} papers, {self.num_citations} citations, "
            f"{int(self.has_text.sum())} with text)"
        )

    def index_of(self, paper_ids: IdLike | Iterable[IdLike] | IdArray) -> int | np.ndarray:
        """The index of one paper id, or an array of indices for many.

        The ids are looked up in one Arrow hash lookup.

        Raises:
            KeyError: an id is not in the graph (the message names up to five of them).
        """
        scalar = isinstance(paper_ids, (str, int, np.str_, np.integer))
        wanted = id_array([str(paper_ids)] if scalar else paper_ids, "paper ids")
        found = self.ids.positions(wanted)
        if (found < 0).any():
            missing = wanted.filter(found < 0)
            raise KeyError(
                f"{len(missing)} paper id(s) not in the graph, e.g. {', '.join(map(repr, missing[:5].to_pylist()))}"
            )
        return int(found[0]) if scalar else found.astype(np.int64, copy=False)

    def __contains__(self, paper_id: object) -> bool:
        try:
            self.index_of(paper_id)  # type: ignore[arg-type]
        except KeyError:
            return False
        return True

    # ------------------------------------------------------------------ neighbourhoods

    @cached_property
    def out_degree(self) -> np.ndarray:
        """How many papers each paper cites."""
        return np.diff(self.out_indptr)

    @cached_property
    def in_degree(self) -> np.ndarray:
        """How many papers cite each paper (its in-citation count within the graph)."""
        return np.diff(self.in_indptr)

    def cited(self, i: int) -> np.ndarray:
        """The papers that paper ``i`` cites (sorted indices)."""
        return self.out_indices[self.out_indptr[i] : self.out_indptr[i + 1]]

    def citing(self, i: int) -> np.ndarray:
        """The papers that cite paper ``i`` (sorted indices)."""
        return self.in_indices[self.in_indptr[i] : self.in_indptr[i + 1]]

    def two_hop(self, i: int, *, exclude_cited: bool = True) -> np.ndarray:
        """Papers cited by a paper that ``i`` cites (sorted, without ``i`` itself).

        With ``exclude_cited`` (the default) the papers ``i`` cites directly are removed too: that is
        SPECTER's hard-negative pool (Cohan et al. 2020, sec. 3.2).
        """
        cited = self.cited(i)
        reached = np.unique(self.out_indices[_row_positions(self.out_indptr, cited)])
        reached = reached[reached != i]
        if exclude_cited:
            reached = np.setdiff1d(reached, cited, assume_unique=True)
        return reached

    @cached_property
    def adjacency(self) -> sp.csr_array:
        """The citation matrix ``A`` as a scipy CSR array sharing our arrays.

        ``A[i, j] = 1`` when i cites j.
        """
        data = np.ones(self.num_citations, dtype=np.int32)
        return sp.csr_array((data, self.out_indices, self.out_indptr), shape=(self.num_papers, self.num_papers))

    def two_hop_counts(self, rows: np.ndarray | None = None) -> sp.csr_array:
        """Path counts ``(A @ A)[rows]``: entry ``(q, x)`` is how many papers cited by q cite x.

        The diagonal and the direct citations are not removed. See :meth:`two_hop` for the set.
        Pass ``rows`` (a chunk of paper indices) on large graphs: the full product can be large.
        """
        a = self.adjacency
        left = a if rows is None else a[np.asarray(rows)]
        return (left @ a).tocsr()

    def cocitation_counts(self) -> sp.csr_array:
        """Co-citation counts ``A^T A`` without its diagonal: entry ``(i, j)`` is how many papers cite both.

        The diagonal (``A^T A[i, i]`` = in-degree of i) is dropped because a paper is not co-cited
        with itself.
        """
        a = self.adjacency
        counts = (a.T @ a).tocsr()
        counts.setdiag(0)
        counts.eliminate_zeros()
        return counts

    def cocited_pairs(self, block: int = 50_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every co-cited pair once, ``a < b``, with its count: the upper triangle of :meth:`cocitation_counts`.

        Computed ``block`` rows of ``A^T A`` at a time, so memory holds the pairs and one block's product,
        never the whole symmetric matrix (twice the pairs) or its intermediate. Sorted by ``(a, b)``.
        """
        cited_by = sp.csr_array(
            (np.ones(self.num_citations, dtype=np.int32), self.in_indices, self.in_indptr),
            shape=(self.num_papers, self.num_papers),
        )
        a = self.adjacency
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for start in range(0, self.num_papers, block):
            counts = (cited_by[start : start + block] @ a).tocoo()
            row = counts.row.astype(np.int64) + start
            upper = counts.col > row
            found.append((row[upper], counts.col[upper].astype(np.int64), counts.data[upper].astype(np.int64)))
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        first, second, count = (np.concatenate(parts) for parts in zip(*found))
        order = np.lexsort((second, first))  # sparse products leave columns unsorted: give one order
        return first[order], second[order], count[order]

    def cocitation(self, i: int, j: int) -> int:
        """How many papers cite both ``i`` and ``j`` (0 for ``i == j`` by convention, as :meth:`cocitation_counts`)."""
        if i == j:
            return 0
        return len(np.intersect1d(self.citing(i), self.citing(j), assume_unique=True))

    # ------------------------------------------------------------------ edge membership

    @cached_property
    def _edge_keys(self) -> np.ndarray:
        # Row-major CSR with sorted rows means ``row * n + column`` is already globally sorted.
        return self.citing_of_edges().astype(np.int64) * self.num_papers + self.out_indices

    def citing_of_edges(self) -> np.ndarray:
        """The citing paper's index of every edge, aligned with ``out_indices`` (its cited paper's)."""
        return np.repeat(np.arange(self.num_papers, dtype=np.int64), np.diff(self.out_indptr))

    def has_edge(self, citing: np.ndarray | int, cited: np.ndarray | int) -> np.ndarray | bool:
        """Whether ``citing[k]`` cites ``cited[k]``, vectorised (one binary search per pair)."""
        scalar = np.ndim(citing) == 0 and np.ndim(cited) == 0
        keys = np.asarray(citing, dtype=np.int64) * self.num_papers + np.asarray(cited, dtype=np.int64)
        edge_keys = self._edge_keys
        position = np.searchsorted(edge_keys, keys)
        found = (
            edge_keys[np.minimum(position, len(edge_keys) - 1)] == keys
            if len(edge_keys)
            else np.zeros(np.shape(keys), dtype=bool)
        )
        return bool(found) if scalar else found

    def symmetric_adjacency(self) -> sp.csr_array:
        """``A + A^T`` as 0/1 floats: the undirected citation graph (used for graph embeddings)."""
        a = self.adjacency.astype(np.float32)
        sym = (a + a.T).tocsr()
        sym.data[:] = 1.0
        return sym


# ---------------------------------------------------------------------- helpers


def _edge_arrays(
    first: tuple[Iterable[IdLike], str],
    second: tuple[Iterable[IdLike], str],
    ids: Iterable[IdLike] | None,
    papers_with_text: Iterable[IdLike] | None,
) -> tuple[IdArray, IdArray, IdArray | None, IdArray | None]:
    """The id arrays of an edge list, checked.

    They are both ends, the known ids and the ids with text.
    """
    a, b = id_array(*first), id_array(*second)
    if len(a) != len(b):
        raise ValueError(f"{first[1]} and {second[1]} differ in length ({len(a)} != {len(b)})")
    known = None if ids is None else id_array(ids, "ids")
    text = None if papers_with_text is None else id_array(papers_with_text, "papers_with_text")
    return a, b, known, text


def _indptr(counts: np.ndarray) -> np.ndarray:
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


def _csr_from_pairs(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Sorted, de-duplicated CSR of the pairs without self-loops. Also the self-loop and repeat counts."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    not_self = src != dst
    self_count = int(len(src) - not_self.sum())
    keys = np.unique(src[not_self] * n + dst[not_self])  # sorts by (citing, cited) and drops repeats
    duplicates = int(not_self.sum() - len(keys))
    rows, columns = np.divmod(keys, n)
    index_type = np.int32 if n < np.iinfo(np.int32).max else np.int64
    return _indptr(np.bincount(rows, minlength=n)), columns.astype(index_type), self_count, duplicates


def _row_positions(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions, in the CSR ``indices`` array, of all entries of ``rows`` (concatenated, in order)."""
    starts = indptr[rows]
    lengths = indptr[np.asarray(rows) + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    row_of = np.repeat(np.arange(len(rows)), lengths)
    return starts[row_of] + (np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths))


def _log_stats(
    stats: GraphStats, source: str | None = None, *, ends_checked: bool = False, drop_dangling: bool = False
) -> None:
    """Log what building the graph kept and dropped, in one line. Undirected links are counted as links (each
    kept one is stored both ways, so "citations" would read as twice the links given). Ends without a paper are
    reported when they were checked (the builder had the list of known ids)."""
    if stats.undirected:
        given = (
            f"{stats.edges_given} undirected link(s) given, {stats.citations // 2} kept (stored both ways: "
            f"{stats.citations} citations)"
        )
        ends = f"{stats.dangling_references} link end(s) name no known paper ({stats.dangling_papers} distinct id(s))"
        repeats, selfs = "repeat(s) in either order", "self-link(s)"
    else:
        given = f"{stats.edges_given} citation(s) given, {stats.citations} kept"
        ends = (
            f"{stats.dangling_references} cite an id without a paper ({stats.dangling_papers} distinct id(s)), "
            f"{stats.unknown_citing} come from an id without a paper"
        )
        repeats, selfs = "repeat(s)", "self-citation(s)"
    if ends_checked:
        ends += f" ({stats.dropped_dangling} dropped)" if drop_dangling else " (kept, as papers without text)"
    else:
        ends = "ends not checked against a list of papers"
    logger.info(
        "citation graph%s: %s; dropped %d %s, %d %s; %s; %d papers, %d with text",
        f" of {source}" if source else "",
        given,
        stats.self_citations,
        selfs,
        stats.duplicate_edges,
        repeats,
        ends,
        stats.papers,
        stats.papers_with_text,
    )


def paper_indices(graph: CitationGraph, refs: PaperRefs, name: str) -> np.ndarray:
    """Paper indices of ``graph`` from indices or ids.

    The indices are unique and sorted for ``exclude``, as given otherwise.

    Args:
        graph: the citation graph.
        refs: paper indices or ids.
        name: the argument's name, for errors.
    """
    if refs is None:
        return np.zeros(0, dtype=np.int64)
    array = np.asarray(refs if isinstance(refs, np.ndarray) else list(refs))
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind in "iu":
        if array.min() < 0 or array.max() >= graph.num_papers:
            raise IndexError(f"{name} indices must lie in [0, {graph.num_papers})")
        indices = array.astype(np.int64)
    else:
        indices = np.asarray(graph.index_of(array.astype(str)), dtype=np.int64)
    return np.unique(indices) if name == "exclude" else indices
