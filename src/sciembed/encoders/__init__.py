"""Encoders built on :class:`~sciembed.PaperEncoder`: ensembles, format routes and long papers.

Encoders built on :class:`~sciembed.PaperEncoder`: ensembles of encoders (:mod:`.ensemble`, an ensemble folder loads
through :meth:`sciembed.Encoder.from_pretrained`), multi-format models as sentence-transformers models with a route per
format (:mod:`.router`), and papers longer than the model's window embedded window by window (:mod:`.windows`).

These sit above :mod:`sciembed.encode` (they build on :class:`~sciembed.PaperEncoder`), which never
imports them.
"""

from ..removed import module_getattr
from .ensemble import REMOVED, EnsembleEncoder, save_ensemble
from .windows import WindowedEncoder, WindowSettings

__all__ = ["EnsembleEncoder", "WindowSettings", "WindowedEncoder", "save_ensemble"]

__getattr__ = module_getattr(__name__, REMOVED)
