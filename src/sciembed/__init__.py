"""sciembed: scientific-document embedding models in one Hugging Face ecosystem package.

Importing sciembed is cheap: torch, transformers and sentence-transformers load on first use.
"""

__version__ = "0.1.0.dev0"

from .data.papers import InvalidPaperError, paper_text, read_papers
from .default_model import default_model_path
from .encode import Encoder, PaperEncoder, encode
from .evaluation.neighbours import neighbours

__all__ = [
    "Encoder",
    "InvalidPaperError",
    "PaperEncoder",
    "default_model_path",
    "encode",
    "neighbours",
    "paper_text",
    "read_papers",
]
