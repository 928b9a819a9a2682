"""The papers' training losses, one ``nn.Module`` a file, as sentence-transformers' ``losses/``.

Each takes embeddings (not a model), so any encoder's output can be trained with any of them.
"""

from .mnr import MultipleNegativesRankingLoss
from .multi2spe import Multi2SPELoss
from .triplet import TripletMarginLoss

__all__ = ["Multi2SPELoss", "MultipleNegativesRankingLoss", "TripletMarginLoss"]
