"""Positive pairs (MoE BERT): multiple-negatives ranking over the in-batch matrix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..settings import DataKind, DataSettings
from .base import Objective, RunSettings, anchoring, loss_options

#: The router losses' weights, settings of the loss section.
ROUTER_WEIGHTS = ("router_cross_entropy", "router_mutual_information", "router_load_balancing")


@dataclass(frozen=True)
class PairData(DataSettings):
    """The data settings of the pair objective.

    Attributes:
        pairs: ``citations`` (a paper and one it cites) or ``cocitations`` (two papers cited together).
        domain: the domain tag of every pair (``None``: untagged).
    """

    pairs: Literal["citations", "cocitations"] = "cocitations"
    domain: str | None = None


@dataclass(frozen=True)
class PairRows:
    """Pairs from citation graphs.

    Attributes:
        kind: ``citations`` or ``cocitations``.
        domain: the domain tag of a single graph's pairs.
    """

    kind: str
    domain: str | None

    def graph_rows(self, source: Any, queries: list[str], unseen: list[str]) -> Any:
        """Pairs of one graph, none touching ``unseen``."""
        from ..examples import pair_dataset

        return pair_dataset(source, exclude=unseen, domain=self.domain, kind=self.kind)

    def mixture_rows(self) -> dict[str, Any]:
        """Pairs of each domain's graph, tagged with its domain."""
        return {"pairs": self.kind}

    def takes_ready_triplets(self) -> bool:
        """SciRepEval's ready triplets are no pairs."""
        return False


@dataclass(frozen=True)
class Pairs(Objective):
    """Positive pairs from a citation graph, with the router losses of a mixture of experts."""

    name: ClassVar[str] = "pairs"
    has_dense_variant: ClassVar[bool] = True
    data: ClassVar[DataKind] = DataKind.CITATIONS
    Data: ClassVar[type] = PairData
    losses: ClassVar[tuple[str, ...]] = ("mnr",)

    @property
    def trainer(self) -> type:
        from ..trainers import PairTrainer

        return PairTrainer

    def loss_schema(self, loss: Any) -> dict[str, Any]:
        """The loss section's keys, with the router losses' weights.

        Args:
            loss: the resolved loss settings.
        """
        return {**super().loss_schema(loss), **dict.fromkeys(ROUTER_WEIGHTS, float)}

    def rows(self, settings: RunSettings) -> PairRows:
        """Pairs of the kind ``data.pairs`` names.

        Args:
            settings: the run's settings.
        """
        return PairRows(settings.data.pairs, settings.data.domain)

    def loss(self, settings: RunSettings, model: Any, examples: Any) -> Any:
        """Multiple-negatives ranking with the loss's settings."""
        from ..losses import MultipleNegativesRankingLoss

        options = {k: v for k, v in loss_options(settings.loss).items() if k not in ROUTER_WEIGHTS}
        options.pop("name")
        return MultipleNegativesRankingLoss(**options)

    def collator(self, tokenizer: Any, max_length: int, model: Any, examples: Any) -> Any:
        """Both papers of each pair, with the model's domain tokens."""
        from ..collators import PairCollator

        return PairCollator(tokenizer, max_length, domains=getattr(model.config, "domains", None))

    def trainer_options(self, settings: RunSettings, model: Any, examples: Any) -> dict[str, Any]:
        """The router loss (learned routing only) and the anchoring."""
        from ..losses import RouterLoss

        anchored = anchoring(settings.loss, examples.anchor_papers)
        routing = getattr(model.config, "routing", None)
        enforced = routing is None or routing == "enforced"
        if anchored and routing is not None and enforced:
            raise ValueError(
                "data.anchor_papers: a mixture-of-experts model with enforced routing sends each paper to its "
                "domain's expert, and anchor papers have no domain; anchor a dense model (model.family=none) or "
                "learned routing"
            )
        weights = [settings.loss.get(k) for k in ROUTER_WEIGHTS]
        router = None
        if not enforced and any(weights):
            router = RouterLoss(*weights, top_k=getattr(model.config, "num_experts_per_tok", 1))
        return {"router_loss": router, **anchored}

    def domain(self, settings: RunSettings) -> str | None:
        """The domain tag of the pairs (``data.domain``).

        Args:
            settings: the run's settings.
        """
        return settings.data.domain
