"""Multi²SPE: citation triplets through K [CLS] tokens, ranked by the facet loss."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .triplet import Triplet


@dataclass(frozen=True)
class Multi2SPE(Triplet):
    """Triplets from a citation graph, ranked by Multi²SPE's facet loss or multiple-negatives ranking."""

    family: str | None = "multi2spe"
    name: ClassVar[str] = "multi2spe"
    has_dense_variant: ClassVar[bool] = False
    losses: ClassVar[tuple[str, ...]] = ("multi2spe", "mnr")

    def starts_as_published(self, settings: Mapping[str, Mapping[str, Any]], published: Any) -> bool:
        """Whether the model is built to start at a mean-pooling base, normalised like the base.

        Args:
            settings: the resolved settings by section.
            published: the base's published embedding.
        """
        if self.family is None:
            return super().starts_as_published(settings, published)
        model = settings["model"]
        built = (published.pooling, model.get("text_pooling"), model.get("initialization", "base"))
        return built == ("mean", "mean", "base") and settings["embedding"]["normalize"] == published.normalize
