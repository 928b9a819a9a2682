"""Training: the papers' losses, ``transformers.Trainer`` subclasses, their data and recipes.

- :mod:`.losses`: one ``nn.Module`` per paper's loss.
- :mod:`.trainers`: ``TripletTrainer``, ``PairTrainer``, ``MultiTaskTrainer``, ``PaperClassificationTrainer``, and
  their settings ``PaperEmbedding`` and ``Anchoring``.
- :mod:`.examples` and :mod:`.collators`: training examples from the data layer and their model inputs.
- :mod:`.task_batches`: task-heterogeneous batches (the multi-task sampler).
- :mod:`.objectives`: one class per objective (its examples, model, loss, collator and trainer).
- :mod:`.sources`: one reader per data layout.
- :mod:`.settings`: the typed sections and the checks on dotted keys.
- :mod:`.recipes` and :mod:`.run`: each paper's settings and departures by name, and ``sciembed train``.

The trainers and ``prepare`` / ``train`` are reached lazily (``sciembed.training.train``), so that
reading the recipes (as ``sciembed --help`` does) imports neither torch nor transformers.
"""

_LAZY = {
    "prepare": "run",
    "train": "run",
    "EmbeddingTrainer": "trainers",
    "TripletTrainer": "trainers",
    "PairTrainer": "trainers",
    "MultiTaskTrainer": "trainers",
    "PaperClassificationTrainer": "trainers",
    "PaperEmbedding": "trainers",
    "Anchoring": "trainers",
    "RECIPES": "recipes",
    "Recipe": "recipes",
    "Departure": "recipes",
    "get_recipe": "recipes",
    "Objective": "objectives",
    "Triplet": "objectives",
    "Multi2SPE": "objectives",
    "Pairs": "objectives",
    "MultiTask": "objectives",
    "Classification": "objectives",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
