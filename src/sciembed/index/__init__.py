"""The paper index: build, add to and search a saved index of paper embeddings.

The index runs on faiss (:class:`PaperIndex`, ``sciembed index``): exact, int8, binary with an int8 rescore store, or
IVF-PQ, tuned to a target recall.
"""

from .paper_index import AddReport, PaperIndex, SearchResult
from .settings import KINDS, IndexKind, IndexSettings

__all__ = ["KINDS", "AddReport", "IndexKind", "IndexSettings", "PaperIndex", "SearchResult"]
