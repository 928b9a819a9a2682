"""Texts tokenized once, kept unpadded, and padded batch by batch as the tokenizer would.

:class:`~sciembed.encode.PaperEncoder` measures every text's length to batch texts of similar length. The
:class:`TokenIds` of that pass keep the token ids too, so no batch is tokenized again: :meth:`TokenIds.padded`
gives the arrays the tokenizer would give for those texts with ``padding=True``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

#: Texts per tokenizer call, so the tokenizer's own lists never hold more than this many texts' ids.
WINDOW = 16_384

PaddingSide = Literal["left", "right"]


@dataclass(frozen=True)
class Padding:
    """How a tokenizer pads a batch: each input's padding value, and the side.

    Args:
        values: the padding value of each input (``input_ids``, ``attention_mask``, ...).
        side: the side padding goes on.
    """

    values: Mapping[str, int]
    side: PaddingSide


def tokenizer_padding(tokenizer: PreTrainedTokenizerBase) -> Padding | None:
    """How ``tokenizer`` pads a batch (``None`` for a tokenizer without a padding token).

    Args:
        tokenizer: a transformers tokenizer.
    """
    if tokenizer.pad_token_id is None:
        return None
    values = {
        "input_ids": tokenizer.pad_token_id,
        "token_type_ids": tokenizer.pad_token_type_id,
        "attention_mask": 0,
        "special_tokens_mask": 1,
    }
    return Padding(values, tokenizer.padding_side)


@dataclass(frozen=True)
class TokenIds:
    """The token ids (and the tokenizer's other inputs) of some texts, unpadded, end to end.

    Args:
        lengths: each text's tokens.
        values: each input's values for all texts, end to end (empty when only lengths were kept).
    """

    lengths: np.ndarray
    values: Mapping[str, np.ndarray] = field(default_factory=dict)
    starts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        starts = np.zeros(len(self.lengths), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=starts[1:])
        object.__setattr__(self, "starts", starts)

    @classmethod
    def of(
        cls, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int, *, keep: bool = True
    ) -> TokenIds:
        """``texts`` tokenized once by ``tokenizer``, truncated to ``max_length`` tokens.

        Args:
            tokenizer: a transformers tokenizer.
            texts: the texts.
            max_length: tokens per text, special tokens included.
            keep: keep the token ids (``False``: only the lengths).
        """
        lengths = np.empty(len(texts), dtype=np.int64)
        parts: dict[str, list[np.ndarray]] = {}
        for start in range(0, len(texts), WINDOW):
            window = texts[start : start + WINDOW]
            encoded = tokenizer(window, truncation=True, max_length=max_length)
            lengths[start : start + len(window)] = [len(ids) for ids in encoded["input_ids"]]
            if keep:
                total = int(lengths[start : start + len(window)].sum())
                for key, lists in encoded.items():
                    parts.setdefault(key, []).append(_flat(lists, total))
        return cls(lengths, {key: np.concatenate(arrays) for key, arrays in parts.items()})

    def longest_first(self) -> np.ndarray:
        """The texts' positions, longest first. Equal lengths keep their order, so ties never change results."""
        return np.argsort(-self.lengths, kind="stable")

    def padded(self, rows: np.ndarray, padding: Padding) -> dict[str, np.ndarray]:
        """The int64 inputs of the texts at ``rows``, each padded to the longest of them.

        Args:
            rows: positions of texts (at least one).
            padding: the tokenizer's :class:`Padding`, with a value for each input kept.
        """
        starts = self.starts[rows]
        lengths = self.lengths[rows][:, None]
        columns = np.arange(int(lengths.max()))[None, :]
        shift = columns.shape[1] - lengths if padding.side == "left" else np.zeros_like(lengths)
        real = (columns >= shift) & (columns < shift + lengths)
        source = (starts[:, None] + columns - shift)[real]
        arrays = {}
        for key, flat in self.values.items():
            array = np.full((len(rows), columns.shape[1]), padding.values[key], dtype=np.int64)
            array[real] = flat[source]
            arrays[key] = array
        return arrays


def _flat(lists: Sequence[Sequence[int]], total: int) -> np.ndarray:
    """``lists`` end to end in the smallest integer type that holds them."""
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=total)
    if not total:
        return flat.astype(np.int8)
    return flat.astype(np.result_type(np.min_scalar_type(int(flat.min())), np.min_scalar_type(int(flat.max()))))
