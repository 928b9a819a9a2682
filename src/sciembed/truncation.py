"""Over-long texts cut before tokenizing, keeping every token the model reads.

A tokenizer works on the whole string before truncation drops the tokens past ``max_length``, so one record
with a 20 MB abstract costs gigabytes and tens of seconds. :func:`cut_text` hands the tokenizer a head of
the text instead, chosen so that the model's input is unchanged:

- the head ends just before a whitespace character. Tokenizers split text into words at whitespace before
  they split words into tokens (BERT's WordPiece, byte-level BPE, SentencePiece's metaspace), and their
  normalisers act on characters, so the tokens of such a head are the first tokens of the whole text.
- the head is kept only once it gives at least ``max_length`` tokens without special tokens, which is more
  than truncation keeps. Until then it is widened (four times each round), up to the whole text.

So the vectors are the same as without the cut (tested on the families' tokenizers). A text with no
whitespace in its first characters, or a tokenizer that truncates on the left, is tokenized whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

#: The first head allows this many characters per token; English runs at about 4 to 5 characters per WordPiece
#: token, so a text shorter than ``max_length`` times this is never cut and costs nothing extra.
CHARS_PER_TOKEN = 12

_LAST_SPACE = re.compile(r"\s(?=\S*$)")


def cut_text(text: str, tokenizer: PreTrainedTokenizerBase, max_length: int) -> str:
    """``text``, or a head of it that ``tokenizer`` turns into the same first ``max_length`` tokens."""
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1 token, got {max_length}")
    size = max_length * CHARS_PER_TOKEN
    if len(text) <= size or getattr(tokenizer, "truncation_side", "right") != "right":
        return text
    while size < len(text):
        space = _LAST_SPACE.search(text, 0, size)
        if space is not None:
            head = text[: space.start()]
            if (
                len(tokenizer(head, add_special_tokens=False, truncation=True, max_length=max_length)["input_ids"])
                >= max_length
            ):
                return head
        size *= 4
    return text


def cut_texts(texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_length: int) -> list[str]:
    """:func:`cut_text` of each text."""
    return [cut_text(text, tokenizer, max_length) for text in texts]
