"""Loading an encoder by path or Hub id: a model of any supported kind or an ensemble folder
(:func:`load_encoder`), ensembles of encoders (:mod:`.ensemble`) and multi-format models as
sentence-transformers models with a route per format (:mod:`.router`), and papers longer than the model's window
embedded window by window (:mod:`.windows`).

These sit above :mod:`sciembed.encode` (they build on :class:`~sciembed.PaperEncoder`), which never
imports them.
"""

from .ensemble import EnsembleEncoder, load_encoder, load_ensemble, save_ensemble
from .windows import WindowedEncoder, WindowSettings

__all__ = ["EnsembleEncoder", "WindowSettings", "WindowedEncoder", "load_encoder", "load_ensemble", "save_ensemble"]
