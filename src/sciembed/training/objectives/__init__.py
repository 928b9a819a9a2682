"""Training objectives: how a recipe makes its examples, model, loss, collator and trainer.

- :class:`.Triplet`: citation triplets (SPECTER, SciNCL).
- :class:`.Multi2SPE`: citation triplets through K [CLS] tokens.
- :class:`.Pairs`: positive pairs with in-batch negatives (MoE BERT).
- :class:`.MultiTask`: SciRepEval's tasks, one head each.
- :class:`.Classification`: SPECTROID's classification heads.
"""

from .base import LOSSES, Objective, RunSettings
from .classification import Classification
from .multi2spe import Multi2SPE
from .multitask import MultiTask
from .pairs import Pairs
from .triplet import Triplet

__all__ = ["LOSSES", "Classification", "Multi2SPE", "MultiTask", "Objective", "Pairs", "RunSettings", "Triplet"]
