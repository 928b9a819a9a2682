"""Citation triplets (SPECTER, SciNCL): a query, a cited paper and an uncited paper."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..settings import DataKind, DataSettings, Schema, schema_of
from .base import Objective, RunSettings, anchoring

#: The triplet samplers (:func:`~sciembed.training.examples.triplet_dataset`).
Sampler = Literal["specter", "spectroid", "scincl"]


@dataclass(frozen=True)
class TripletData(DataSettings):
    """The data settings of a triplet objective.

    Attributes:
        sampler: the paper whose rules draw the triplets.
    """

    sampler: Sampler = "specter"


@dataclass(frozen=True)
class SamplerSettings:
    """The options of the SPECTER and SPECTROID samplers.

    Attributes:
        triplets_per_query: the triplets drawn for each query.
        hard_ratio: the share of triplets with a hard negative.
    """

    triplets_per_query: int = 5
    hard_ratio: float = 0.4


@dataclass(frozen=True)
class TripletRows:
    """Triplets from citation graphs.

    Attributes:
        sampler: the paper whose rules draw the triplets.
        seed: the sampling seed.
        options: the sampler's options.
    """

    sampler: str
    seed: int
    options: dict[str, Any]

    def graph_rows(self, source: Any, queries: list[str], unseen: list[str]) -> Any:
        """Triplets of one graph's training queries."""
        from ..examples import triplet_dataset

        return triplet_dataset(
            source, sampler=self.sampler, queries=queries, exclude=unseen, seed=self.seed, **self.options
        )

    def mixture_rows(self) -> dict[str, Any]:
        """Triplets of each domain's graph."""
        return {"pairs": None, "sampler": self.sampler, "sampler_options": self.options}

    def takes_ready_triplets(self) -> bool:
        """SciRepEval's ready triplets are triplets."""
        return True


@dataclass(frozen=True)
class Triplet(Objective):
    """Triplets from a citation graph, ranked by a triplet margin or multiple-negatives loss."""

    name: ClassVar[str] = "triplet"
    has_dense_variant: ClassVar[bool] = True
    data: ClassVar[DataKind] = DataKind.CITATIONS
    Data: ClassVar[type] = TripletData
    losses: ClassVar[tuple[str, ...]] = ("triplet", "mnr")

    @property
    def trainer(self) -> type:
        from ..trainers import TripletTrainer

        return TripletTrainer

    def data_schema(self, data: Mapping[str, Any]) -> Schema:
        """The data section's keys: the common ones and the chosen sampler's.

        Args:
            data: the resolved data settings.
        """
        from ...data.scincl import SciNCLConfig

        options = {"scincl": SciNCLConfig}.get(data.get("sampler"), SamplerSettings)
        return {**schema_of(options), **schema_of(self.Data)}

    def loss_schema(self, loss: Mapping[str, Any]) -> Schema:
        """The loss section's keys, with ``micro_batch_size``.

        Args:
            loss: the resolved loss settings.
        """
        return {**super().loss_schema(loss), "micro_batch_size": int | Literal["auto"] | None}

    def check_loss(self, loss: Mapping[str, Any], schema: Schema, recipe: str) -> None:
        """Refuse loss settings outside the schema and a micro-batch size that is not one.

        Args:
            loss: the loss settings.
            schema: the loss section's keys.
            recipe: the recipe's name, for messages.
        """
        from ..micro_batches import check_micro_batch_size

        if "micro_batch_size" in loss:
            check_micro_batch_size(loss["micro_batch_size"])
        super().check_loss(loss, schema, recipe)

    def rows(self, settings: RunSettings) -> TripletRows:
        """Triplets drawn by the chosen sampler with its options.

        Args:
            settings: the run's settings.
        """
        return TripletRows(settings.data.sampler, settings.data.seed, dict(settings.data_options))

    def collator(self, tokenizer: Any, max_length: int, model: Any, examples: Any) -> Any:
        """Queries, positives and negatives in one batch."""
        from ..collators import TripletCollator

        return TripletCollator(tokenizer, max_length)

    def trainer_options(self, settings: RunSettings, model: Any, examples: Any) -> dict[str, Any]:
        """The micro-batch size and the anchoring."""
        return {
            "micro_batch_size": settings.loss.get("micro_batch_size", "auto"),
            **anchoring(settings.loss, examples.anchor_papers),
        }
