"""Loading an encoder by path or Hub id: a model of any supported kind or an ensemble folder
(:func:`load_encoder`), ensembles of encoders (:mod:`.ensemble`) and multi-format models as
sentence-transformers models with query and document routes (:mod:`.router`).

These sit above :mod:`sciembed.encode` (they build on :class:`~sciembed.PaperEncoder`), which never
imports them.
"""

from .ensemble import EnsembleEncoder, load_encoder, load_ensemble, save_ensemble

__all__ = ["EnsembleEncoder", "load_encoder", "load_ensemble", "save_ensemble"]
