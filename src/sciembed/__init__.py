"""sciembed: scientific-document embedding models in one Hugging Face ecosystem package.

Importing sciembed is cheap: torch, transformers and sentence-transformers load on first use.
"""

__version__ = "0.1.0.dev0"

from . import encoders  # noqa: F401  (registers the ensemble folder with Encoder.from_pretrained)
from .data.papers import InvalidPaperError, paper_text, read_papers
from .default_model import default_model_path
from .encode import Encoder, PaperEncoder, clear_model_cache, encode, encode_document, encode_query
from .search.neighbours import neighbours
from .similarity import similarity, similarity_pairwise

__all__ = [
    "Encoder",
    "InvalidPaperError",
    "PaperEncoder",
    "clear_model_cache",
    "default_model_path",
    "encode",
    "encode_document",
    "encode_query",
    "neighbours",
    "paper_text",
    "read_papers",
    "similarity",
    "similarity_pairwise",
]
