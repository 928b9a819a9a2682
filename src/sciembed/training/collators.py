"""Data collators: examples of :mod:`.data` to model inputs.

Paper records become model text with the tokenizer's own separator
(:func:`~sciembed.data.papers.paper_text`, ``title [SEP] abstract``) at collation time. Triplets and
pairs are tokenized as one concatenated batch (all queries, then all positives, then all negatives), so
a trainer encodes them in one forward pass, as SPECTER's training does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.papers import paper_text
from ..encode import QUERY_FORMAT
from ..truncation import cut_texts
from .examples import PAIR_ROLES, TASK_FORMATS, TRIPLET_ROLES, TaskKind

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase


@dataclass
class PaperCollator:
    """Tokenizes paper records (truncated to ``max_length`` tokens, padded to the longest)."""

    tokenizer: PreTrainedTokenizerBase
    max_length: int

    def tokenize(self, papers: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        sep = self.tokenizer.sep_token or " "
        texts = cut_texts([paper_text(paper, sep) for paper in papers], self.tokenizer, self.max_length)
        return dict(
            self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        )


@dataclass
class TripletCollator(PaperCollator):
    """``{query, positive, negative}`` rows -> one batch of ``3 * rows`` texts, queries first."""

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        return self.tokenize([row[role] for role in TRIPLET_ROLES for row in rows])


@dataclass
class PairCollator(PaperCollator):
    """``{a, b}`` rows -> one batch of ``2 * rows`` texts (all ``a``, then all ``b``). With ``domains``
    (a mixture-of-experts model's ``config.domains``) each row's ``domain`` becomes ``domain_ids``."""

    domains: Sequence[str] | None = None

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        features = self.tokenize([row[role] for role in PAIR_ROLES for row in rows])
        if self.domains:
            try:
                index = [list(self.domains).index(row["domain"]) for row in rows]
            except (KeyError, ValueError):
                raise ValueError(
                    f"every pair needs a domain among {', '.join(self.domains)}; got "
                    f"{[row.get('domain') for row in rows]}"
                ) from None
            features["domain_ids"] = torch.tensor(index * len(PAIR_ROLES), dtype=torch.long)
        return features


@dataclass
class LabelledPaperCollator(PaperCollator):
    """``{paper, label}`` rows -> tokenized papers with ``labels`` (for a sequence-classification model)."""

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        features = self.tokenize([row["paper"] for row in rows])
        features["labels"] = torch.tensor([row["label"] for row in rows])
        return features


@dataclass
class MultiTaskCollator(PaperCollator):
    """Task-tagged rows (:func:`~.data.multitask_dataset`) -> per task, its inputs grouped by format.

    Returns ``{"tasks": {name: {"kind", "inputs": [(format, features), ...], "labels"}}}``: one
    ``(format, features)`` entry for classification / regression papers, and for proximity the query,
    positive and negative papers in one entry. A search task has its queries in the query format and
    its candidates in the proximity format.
    """

    task_kinds: Mapping[str, TaskKind | str] | None = None

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            grouped.setdefault(row["task"], []).append(row)
        tasks: dict[str, Any] = {}
        for name, members in grouped.items():
            kind = (self.task_kinds or {}).get(name)
            if kind is None:
                raise ValueError(f"unknown task {name!r} in the batch; known: {', '.join(self.task_kinds or {})}")
            kind = TaskKind(kind)
            papers = [row["papers"] for row in members]
            inputs = [(QUERY_FORMAT, self.tokenize([p[0] for p in papers]))] if kind is TaskKind.SEARCH else []
            inputs.append((TASK_FORMATS[kind], self.tokenize([p[i] for i in _FORMAT_PAPERS[kind] for p in papers])))
            shape = _LABEL_SHAPES.get(kind)
            labels = shape(torch.tensor([row["label"] for row in members], dtype=torch.float)) if shape else None
            tasks[name] = {"kind": kind, "inputs": inputs, "labels": labels}
        return {"tasks": tasks}


#: A task kind -> the papers of a row embedded in its task format (a search query is in the query format).
_FORMAT_PAPERS = {
    TaskKind.CLASSIFICATION: (0,),
    TaskKind.MULTILABEL: (0,),
    TaskKind.REGRESSION: (0,),
    TaskKind.PROXIMITY: (0, 1, 2),
    TaskKind.SEARCH: (1, 2),
}
#: A task kind with a head -> its labels from the rows' float label lists.
_LABEL_SHAPES = {
    TaskKind.CLASSIFICATION: lambda labels: labels[:, 0].long(),
    TaskKind.MULTILABEL: lambda labels: labels,
    TaskKind.REGRESSION: lambda labels: labels[:, 0],
}
