"""Papers longer than the model's window: embedded window by window, and the windows combined.

A model reads at most ``max_length`` tokens (all-MiniLM-L6-v2 256, BERT 512). A full text (an S2ORC body, a PDF's
text) is cut there. :class:`WindowedEncoder` splits a paper's text into windows of the model's length that overlap by
``overlap`` tokens, embeds every window with the wrapped encoder (its family, pooling, format, domain and backend,
PyTorch or ONNX), and combines a paper's window vectors: their mean, or their mean weighted by each window's text
tokens. The title is kept at the head of every window (``title [SEP] window``), as SPECTER's input puts it ahead of
the text, so that every window is read as part of that paper. A paper that fits the window is embedded exactly as
the wrapped encoder embeds it. Window boundaries fall between words, never inside one (word pieces stay together).

What a paper's text is: ``text_fields``, in order (default title and abstract, ``("title", "abstract", "body")``
for full texts). The first is the title when it is ``title``.

    encoder = WindowedEncoder(sciembed.PaperEncoder.from_pretrained(), WindowSettings(text_fields=FULL_TEXT))
    vectors = encoder.encode(papers)  # one vector per paper, however long
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..choices import StrChoice, choices
from ..data.papers import TEXT_FIELDS, paper_text, text_field_names
from ..encode import Encoder, Papers

logger = logging.getLogger(__name__)


class WindowCombine(StrChoice):
    """How a paper's window vectors are combined: their mean, or weighted by text tokens."""

    MEAN = "mean"
    TOKENS = "tokens"


#: How a paper's window vectors become one: their mean, or their mean weighted by each window's text tokens.
COMBINATIONS = choices(WindowCombine)
#: A full text's fields, in the order they make the paper's text.
FULL_TEXT = ("title", "abstract", "body")
#: Fewer text tokens than this per window (after the title and the special tokens) and the title is read once instead
#: of in every window, which would be mostly title.
MIN_WINDOW_TEXT = 8


@dataclass(frozen=True)
class WindowSettings:
    """How long papers are split and combined (:class:`WindowedEncoder`).

    Args:
        window: tokens per window, special tokens and the title included. By default the wrapped encoder's
            ``max_length`` (the model's window). A smaller one measures windowing where the truth is known
            (``benchmarks/long_documents.py``).
        overlap: tokens each window shares with the one before it.
        combine: ``"tokens"`` (default: the windows' mean weighted by their text tokens, so that a short last window
            counts for what it holds) or ``"mean"`` (:data:`COMBINATIONS`).
        keep_title: put the title at the head of every window.
        text_fields: the paper fields that make its text, in order (one string is one field). The first is the title
            when it is ``title``.
        windows: split papers longer than ``window``. Without it they are cut as usual, and only ``text_fields``
            applies.

    Raises:
        ValueError: a negative ``overlap``, an unknown ``combine``, no ``text_fields``, or a ``window`` below 2.
        TypeError: ``text_fields`` is not field names.
    """

    window: int | None = None
    overlap: int = 32
    combine: WindowCombine = WindowCombine.TOKENS
    keep_title: bool = True
    text_fields: tuple[str, ...] = TEXT_FIELDS
    windows: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_fields", text_field_names(self.text_fields))
        if self.window is not None and self.window < 2:
            raise ValueError(f"window must be at least 2 tokens, got {self.window}")
        if self.overlap < 0:
            raise ValueError(f"overlap must be 0 or more tokens, got {self.overlap}")
        if self.combine not in COMBINATIONS:
            raise ValueError(f"combine must be one of {COMBINATIONS}, got {self.combine!r}")
        object.__setattr__(self, "combine", WindowCombine(self.combine))
        if not self.text_fields:
            raise ValueError("text_fields names no field: give at least one (e.g. title abstract)")


class WindowedEncoder(Encoder):
    """An encoder that embeds each paper window by window (see the module docstring).

    Args:
        encoder: the encoder that embeds the windows (a :class:`~sciembed.PaperEncoder`, an ensemble, ...).
        settings: the windows, their combination and the text fields.

    Raises:
        ValueError: the window leaves fewer than :data:`MIN_WINDOW_TEXT` text tokens, or exceeds the encoder's
            ``max_length``.
    """

    def __init__(self, encoder: Encoder, settings: WindowSettings | None = None) -> None:
        self.encoder = encoder
        self.settings = settings or WindowSettings()
        self.window = self.settings.window or encoder.max_length
        text_room = self.window - encoder.tokenizer.num_special_tokens_to_add(pair=False)
        if self.settings.windows and self.settings.overlap >= text_room:
            raise ValueError(
                f"an overlap of {self.settings.overlap} tokens is the whole of a {self.window}-token window "
                f"({text_room} after the special tokens): use a smaller overlap"
            )
        if self.settings.windows and not encoder.tokenizer.is_fast:
            raise ValueError(
                f"{encoder.name_or_path}: windows need a fast tokenizer (its token offsets); this one is "
                f"{type(encoder.tokenizer).__name__}"
            )
        if self.window > encoder.max_length:
            raise ValueError(
                f"window {self.window} exceeds the {encoder.max_length} tokens {encoder.name_or_path} reads"
            )
        self.tokenizer, self.device, self.max_length = encoder.tokenizer, encoder.device, self.window
        #: Papers windowed otherwise than the settings say (see :meth:`paper_windows`), counted since construction.
        self.adjusted = {"title_read_once": 0, "overlap_halved": 0}
        self.pooling, self.normalize, self.facets = encoder.pooling, encoder.normalize, encoder.facets
        self.forward_options, self.backend, self.quantization = (
            encoder.forward_options,
            encoder.backend,
            encoder.quantization,
        )
        self.revision = encoder.revision

    @property
    def name_or_path(self) -> str:
        return self.encoder.name_or_path

    @property
    def task_formats(self) -> tuple[str, ...]:
        return self.encoder.task_formats

    def _model_similarity_fn_name(self) -> str:
        return self.encoder.similarity_fn_name

    @property
    def transformer(self) -> Any:
        return self.encoder.transformer

    def with_format(self, task_format: str | None) -> WindowedEncoder:
        return WindowedEncoder(self.encoder.with_format(task_format), self.settings)

    def fingerprint(self) -> str:
        settings = json.dumps({**asdict(self.settings), "window": self.window}, sort_keys=True)
        return hashlib.sha256(f"windows {settings} {self.encoder.fingerprint()}".encode()).hexdigest()

    def texts(self, papers: Papers, fields: Sequence[str] | None = None) -> list[str]:
        """Model texts of ``papers`` from ``text_fields`` (unwindowed: what an embed run's manifest records)."""
        return super().texts(papers, fields or self.settings.text_fields)

    def _encode(
        self,
        papers: list[Mapping[str, Any] | str],
        *,
        batch_size: int | None,
        show_progress_bar: bool,
        progress_desc: str,
    ) -> np.ndarray:
        """One vector per paper: the combination of its windows' vectors (one window when it fits)."""
        if not papers:
            raise ValueError("no papers to encode")
        options = {"batch_size": batch_size, "show_progress_bar": show_progress_bar, "progress_desc": progress_desc}
        if not self.settings.windows:
            return self.encoder.encode(self.texts(papers), **options)
        before = dict(self.adjusted)
        texts, owners, weights = [], [], []
        for index, paper in enumerate(papers):
            for text, tokens in self.paper_windows(paper, index=index):
                texts.append(text)
                owners.append(index)
                # A paper read in one window (its title alone, an empty text) has no text tokens to weigh by: its
                # one window is its vector whatever the weight, as long as the weight is not 0 (0 / 0 would be NaN).
                weights.append(max(tokens, 1) if self.settings.combine is WindowCombine.TOKENS else 1)
        changed = {key: self.adjusted[key] - before[key] for key in before if self.adjusted[key] > before[key]}
        if changed:
            logger.warning(
                "%d of %d papers windowed otherwise: %s (a title too long to repeat is read once, at the head of the "
                "text; windows that would overlap by more than half their text overlap by half)",
                sum(changed.values()),
                len(papers),
                ", ".join(f"{key.replace('_', ' ')} {count}" for key, count in changed.items()),
            )
        vectors = self.encoder.encode(texts, **{**options, "progress_desc": f"{progress_desc} (windows)"})
        owners_array, weight_array = np.asarray(owners), np.asarray(weights, dtype=np.float64)
        sums = np.zeros((len(papers), *vectors.shape[1:]), dtype=np.float64)
        np.add.at(sums, owners_array, vectors * weight_array.reshape(-1, *[1] * (vectors.ndim - 1)))
        totals = np.bincount(owners_array, weights=weight_array, minlength=len(papers))
        combined = sums / totals.reshape(-1, *[1] * (vectors.ndim - 1))
        if _unit_vectors(self.encoder):
            # The mean of unit vectors is shorter than one: the combination is a unit vector like every window's.
            combined /= np.linalg.norm(combined, axis=-1, keepdims=True).clip(min=1e-12)
        return combined.astype(np.float32)

    def paper_windows(self, paper: Mapping[str, Any] | str, *, index: int | None = None) -> list[tuple[str, int]]:
        """The texts ``paper`` is embedded as, each with its count of text tokens.

        The title's tokens are not counted. A paper that fits the window is one text, a longer one windows of the text
        that overlap by ``overlap`` tokens, each after the title (``keep_title``). ``index``, the paper's position
        among those given, names it in messages.

        Two papers are windowed otherwise, and counted in :attr:`adjusted` (``encode`` logs the counts): one whose
        title leaves fewer than :data:`MIN_WINDOW_TEXT` tokens of text per window has its title read once, at the
        head of the text. One whose windows would overlap by more than half their text overlaps by half.
        """
        title, body = self._title_and_body(paper, index)
        sep = self.sep_token
        whole = sep.join(part for part in (title, body) if part)
        specials = self.tokenizer.num_special_tokens_to_add(pair=False)
        if self._tokens(whole) + specials <= self.window or not body:
            return [(whole, self._tokens(body))]
        head = f"{title}{sep}" if title and self.settings.keep_title else ""
        room = self.window - specials - self._tokens(head)
        if room < MIN_WINDOW_TEXT and head:
            self.adjusted["title_read_once"] += 1
            body, head, room = whole, "", self.window - specials
        overlap = self.settings.overlap
        if overlap > room // 2:
            self.adjusted["overlap_halved"] += 1
            overlap = room // 2
        encoded = self.tokenizer(body, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets, words = encoded["offset_mapping"], encoded.word_ids()
        windows, start = [], 0
        while True:
            end = min(start + room, len(offsets))
            while end < len(offsets) and end > start + 1 and words[end] == words[end - 1]:
                end -= 1  # never cut a word: its pieces go to the next window
            windows.append((head + body[offsets[start][0] : offsets[end - 1][1]], end - start))
            if end == len(offsets):
                return windows
            following = max(end - overlap, start + 1)
            while following > start + 1 and words[following] == words[following - 1]:
                following -= 1  # a window starts at a word's first piece
            start = following

    def _tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def _title_and_body(self, paper: Mapping[str, Any] | str, index: int | None) -> tuple[str, str]:
        fields = self.settings.text_fields
        if isinstance(paper, str):
            return "", paper
        if fields[0] == "title":
            title = str(paper.get("title") or "").strip()
            rest = fields[1:]
            body = (
                paper_text(paper, self.sep_token, rest, index=index)
                if rest and any(paper.get(f) for f in rest)
                else ""
            )
            if not title and not body:
                paper_text(paper, self.sep_token, fields, index=index)  # raises, naming the paper and the fields
            return title, body
        return "", paper_text(paper, self.sep_token, fields, index=index)


def _unit_vectors(encoder: Encoder) -> bool:
    """Whether ``encoder`` gives unit vectors: it normalises, or its sentence-transformers modules end in Normalize."""
    st = getattr(encoder, "_sentence_transformer", None)
    return bool(encoder.normalize) or (st is not None and type(st[len(st) - 1]).__name__ == "Normalize")
