"""SciRepEval's multi-task training loss: one head per task on the shared embedding, losses summed.

Singh et al. 2023 (SciRepEval, sec. 5): classification tasks train a linear head with cross-entropy
(multi-class) or binary cross-entropy with logits (multi-label), regression tasks a linear head with
mean squared error, and proximity / ad-hoc search tasks the triplet margin loss on the embeddings
themselves. Heads apply dropout to the embedding first. They exist only for training and are not part
of the saved encoder.

For a base trained in unit vectors (a sentence-transformers model), proximity and search tasks can take the
multiple-negatives ranking loss between cosine similarities instead (``proximity="mnr"``): a margin of 1 between
L2 distances of unit vectors, which lie within 2 of each other, keeps almost every triplet active and pulls the
embedding away from the geometry the base was trained in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ...choices import StrChoice, choices
from ..examples import TaskKind
from .mnr import MultipleNegativesRankingLoss
from .triplet import TripletMarginLoss


class ProximityLoss(StrChoice):
    """The ranking loss of proximity and search tasks."""

    TRIPLET = "triplet"
    MNR = "mnr"


#: The task kinds a loss takes (search tasks train as proximity).
KINDS = (TaskKind.CLASSIFICATION, TaskKind.MULTILABEL, TaskKind.REGRESSION, TaskKind.PROXIMITY)
PROXIMITY_LOSSES = choices(ProximityLoss)
#: The kinds whose head picks one or more of several labels.
_LABELLED = frozenset({TaskKind.CLASSIFICATION, TaskKind.MULTILABEL})


@dataclass(frozen=True)
class TaskSpec:
    """One training task: its kind and, for classification, its number of labels."""

    kind: TaskKind
    num_labels: int = 1

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown task kind {self.kind!r}; one of {', '.join(KINDS)}")
        object.__setattr__(self, "kind", TaskKind(self.kind))
        if self.kind in _LABELLED and self.num_labels < 2:
            raise ValueError(f"a {self.kind} task needs num_labels >= 2, got {self.num_labels}")


class MultiTaskLoss(nn.Module):
    """Sum over the tasks present in a batch of each task's loss.

    Args:
        tasks: task name -> :class:`TaskSpec`.
        hidden_size: the embedding size.
        dropout: dropout before each head (BERT's 0.1).
        margin: the triplet margin of proximity tasks.
        proximity: the loss of proximity and search tasks: ``"triplet"`` (the paper's, with ``margin``) or ``"mnr"``
            (multiple-negatives ranking between cosine similarities at ``temperature``: each query against every
            positive and negative of its task in the batch).
        temperature: the ``"mnr"`` temperature (sentence-transformers' default scale 20).
    """

    def __init__(
        self,
        tasks: Mapping[str, TaskSpec],
        hidden_size: int,
        dropout: float = 0.1,
        margin: float = 1.0,
        proximity: ProximityLoss | str = ProximityLoss.TRIPLET,
        temperature: float = 0.05,
    ):
        super().__init__()
        if not tasks:
            raise ValueError("no tasks")
        if proximity not in PROXIMITY_LOSSES:
            raise ValueError(f"unknown proximity loss {proximity!r}; one of {', '.join(PROXIMITY_LOSSES)}")
        self.tasks = dict(tasks)
        self.heads = nn.ModuleDict(
            {
                name: nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden_size, spec.num_labels))
                for name, spec in self.tasks.items()
                if spec.kind is not TaskKind.PROXIMITY
            }
        )
        self.ranking = (
            TripletMarginLoss(margin)
            if ProximityLoss(proximity) is ProximityLoss.TRIPLET
            else MultipleNegativesRankingLoss(temperature, similarity="cosine")
        )

    def task_loss(self, name: str, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """One task's loss: ``(embeddings, labels)``, or ``(query, positive, negative)`` for proximity."""
        if name not in self.tasks:
            raise ValueError(f"unknown task {name!r}; tasks: {', '.join(self.tasks)}")
        kind = self.tasks[name].kind
        if kind is TaskKind.PROXIMITY:
            return self.ranking(*inputs)
        embeddings, labels = inputs
        return _HEAD_LOSSES[kind](self.heads[name](embeddings), labels)

    def forward(self, batch: Mapping[str, tuple[torch.Tensor, ...]]) -> torch.Tensor:
        """Sum of the losses of the tasks in ``batch`` (task name -> inputs of :meth:`task_loss`)."""
        if not batch:
            raise ValueError("empty batch")
        return sum(self.task_loss(name, inputs) for name, inputs in batch.items())


def _cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, labels)


def _binary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits, labels.float())


def _squared_error(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(logits.squeeze(-1), labels.float())


#: A task kind with a head -> the loss of its logits against its labels.
_HEAD_LOSSES = {
    TaskKind.CLASSIFICATION: _cross_entropy,
    TaskKind.MULTILABEL: _binary_cross_entropy,
    TaskKind.REGRESSION: _squared_error,
}
