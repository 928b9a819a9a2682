"""The papers' training losses, one ``nn.Module`` a file, as sentence-transformers' ``losses/``.

Each takes embeddings (not a model), so any encoder's output can be trained with any of them.
"""

from .anchor import RelationalAnchorLoss
from .mnr import MultipleNegativesRankingLoss
from .multi2spe import Multi2SPELoss
from .multitask import MultiTaskLoss, TaskSpec
from .router import RouterLoss, load_balancing_loss, mutual_information_loss, router_cross_entropy
from .triplet import TripletMarginLoss

__all__ = [
    "Multi2SPELoss",
    "MultiTaskLoss",
    "MultipleNegativesRankingLoss",
    "RelationalAnchorLoss",
    "RouterLoss",
    "TaskSpec",
    "TripletMarginLoss",
    "load_balancing_loss",
    "mutual_information_loss",
    "router_cross_entropy",
]
