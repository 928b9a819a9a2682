"""sciembed: scientific-document embedding models in one Hugging Face ecosystem package.

Importing sciembed is cheap: torch, transformers and sentence-transformers load on first use.
"""

__version__ = "0.1.0.dev0"

from . import encoders  # noqa: F401  (registers the ensemble folder with Encoder.from_pretrained)
from .data.papers import InvalidPaperError, paper_text, read_papers
from .default_model import default_model_path
from .encode import Encoder, PaperEncoder, clear_model_cache, encode, encode_document, encode_query
from .removed import install_moved_modules
from .search.neighbours import neighbours
from .similarity import similarity, similarity_pairwise

install_moved_modules()  # an old module path names its new module


def __getattr__(name: str):
    # PaperIndex loads on first use, so that importing sciembed stays cheap.
    if name == "PaperIndex":
        from .index import PaperIndex

        return PaperIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Encoder",
    "InvalidPaperError",
    "PaperEncoder",
    "PaperIndex",
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
