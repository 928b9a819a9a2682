"""Similarity of embeddings, under the names sentence-transformers gives its functions.

``cosine`` (the default), ``dot``, ``euclidean`` and ``manhattan`` (the last two negated distances, so that
higher is more similar). Each comes as a matrix over all pairs (:func:`similarity`) and as one score per row
pair (:func:`similarity_pairwise`). Both return a float32 ``torch.Tensor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .choices import StrChoice, choices

if TYPE_CHECKING:
    import torch

SimilarityName = Literal["cosine", "dot", "euclidean", "manhattan"]


class Similarity(StrChoice):
    """A similarity function, by the name sentence-transformers gives it."""

    COSINE = "cosine"
    DOT = "dot"
    EUCLIDEAN = "euclidean"
    MANHATTAN = "manhattan"


SIMILARITY_FUNCTIONS = choices(Similarity)
#: Other names of the functions (sentence-transformers' ``SimilarityFunction`` values).
_ALIASES = {"dot_product": Similarity.DOT}
#: The order of the norm each negated distance takes.
_NORM_ORDER = {Similarity.EUCLIDEAN: 2.0, Similarity.MANHATTAN: 1.0}


def check_similarity_name(name: Any) -> Similarity:
    """``name`` when it is one of :data:`SIMILARITY_FUNCTIONS` (``dot_product`` read as ``dot``).

    Args:
        name: a similarity function's name.

    Raises:
        ValueError: naming the value and the choices.
    """
    name = getattr(name, "value", name)  # sentence-transformers' SimilarityFunction
    name = _ALIASES.get(name, name) if isinstance(name, str) else name
    if name not in SIMILARITY_FUNCTIONS:
        raise ValueError(f"similarity_fn_name must be one of {', '.join(SIMILARITY_FUNCTIONS)}, got {name!r}")
    return Similarity(name)


def similarity(a: Any, b: Any, similarity_fn_name: SimilarityName = "cosine") -> torch.Tensor:
    """Scores of every row of ``a`` against every row of ``b``: ``(len(a), len(b))``.

    Args:
        a: vectors ``(n, dim)`` or one vector ``(dim,)``: numpy, torch or nested lists.
        b: vectors ``(m, dim)`` or one vector.
        similarity_fn_name: ``cosine``, ``dot``, ``euclidean`` or ``manhattan``.

    Raises:
        TypeError: ``a`` or ``b`` is not numbers (texts are embedded first: ``encoder.encode``).
        ValueError: ``a`` and ``b`` differ in their number of dimensions.
    """
    import torch

    name = check_similarity_name(similarity_fn_name)
    a, b = _matrix(a, "a"), _matrix(b, "b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"similarity compares vectors of one size: a has {a.shape[-1]} dimensions, b {b.shape[-1]} (embed both "
            "with the same model)"
        )
    if name is Similarity.COSINE:
        a, b = _unit(a), _unit(b)
    if name in _NORM_ORDER:
        return -torch.cdist(a, b, p=_NORM_ORDER[name])
    return a @ b.T


def similarity_pairwise(a: Any, b: Any, similarity_fn_name: SimilarityName = "cosine") -> torch.Tensor:
    """The score of each row of ``a`` with the same row of ``b``: ``(n,)``.

    Args:
        a: vectors ``(n, dim)`` or one vector ``(dim,)``.
        b: vectors of the same shape as ``a``.
        similarity_fn_name: ``cosine``, ``dot``, ``euclidean`` or ``manhattan``.

    Raises:
        ValueError: ``a`` and ``b`` differ in shape.
    """
    import torch

    name = check_similarity_name(similarity_fn_name)
    a, b = _matrix(a, "a"), _matrix(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"similarity_pairwise compares row with row: shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if name is Similarity.COSINE:
        a, b = _unit(a), _unit(b)
    if name in _NORM_ORDER:
        return -torch.linalg.vector_norm(a - b, ord=_NORM_ORDER[name], dim=-1)
    return (a * b).sum(dim=-1)


def _matrix(vectors: Any, name: str) -> torch.Tensor:
    """``vectors`` as a float32 ``(n, dim)`` tensor. Anything but numbers of one or two dimensions is refused."""
    import numpy as np
    import torch

    if isinstance(vectors, (str, bytes)) or (
        isinstance(vectors, (list, tuple)) and any(isinstance(v, (str, bytes)) for v in vectors)
    ):
        raise TypeError(f"{name}: similarity takes embeddings, not texts; embed them first (encoder.encode)")
    try:
        tensor = torch.as_tensor(np.asarray(vectors, dtype=np.float32) if not torch.is_tensor(vectors) else vectors)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name}: expected vectors (numpy, torch or nested lists of numbers): {error}") from None
    if tensor.dim() not in (1, 2):
        raise ValueError(f"{name}: expected one vector or a matrix of them, got shape {tuple(tensor.shape)}")
    tensor = tensor.detach().cpu().float()
    return tensor.unsqueeze(0) if tensor.dim() == 1 else tensor


def _unit(vectors: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.nn.functional.normalize(vectors, p=2, dim=-1)
