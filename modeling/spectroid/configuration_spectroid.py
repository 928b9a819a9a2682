"""Configuration of SPECTROID's classification models (Capuano et al.)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from transformers import BertConfig

TEXT_POOLINGS = (None, "mean")


class SpectroidConfig(BertConfig):
    """A BERT configuration plus the MLP classification head of SPECTROID.

    SPECTROID (Capuano et al., "SPECTROID: A Centroid-Based Citation-Aware Approach to Paper
    Classification", code: fracapuano/Spectroid) fine-tunes SPECTER end-to-end with an MLP
    classification head on the paper embedding, trained with cross-entropy. The encoder is a plain BERT
    (SPECTER, SciNCL, SciBERT, MiniLM), so every ``BertConfig`` field applies.

    Args:
        classifier_hidden_sizes: the sizes of the head's hidden layers, each a ``Linear`` followed by
            ReLU, before the output ``Linear`` to ``num_labels``. ``[]`` (default) is SPECTROID's CH1
            (one linear layer). ``SPECTROID_HEADS`` in ``modeling_spectroid`` names CH1, CH2 and CH3.
            Dropout (``classifier_dropout``, else ``hidden_dropout_prob``, as BertForSequenceClassification)
            is applied to the embedding before the head.
        text_pooling: the paper embedding the head reads and the encoder returns as ``pooler_output``: ``None``
            (default, SPECTER's: the final hidden state of ``[CLS]``) or ``"mean"``, the mean of the final states
            of the real tokens (padding excluded), for an encoder pretrained to embed that way (a
            sentence-transformers model such as all-MiniLM-L6-v2, whose ``[CLS]`` state was never trained alone).
        **kwargs: every ``transformers.BertConfig`` field (``num_labels``, ``problem_type``,
            ``classifier_dropout``, ...).
    """

    model_type = "spectroid"

    def __init__(
        self,
        classifier_hidden_sizes: Optional[Sequence[int]] = None,
        text_pooling: Optional[str] = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if text_pooling not in TEXT_POOLINGS:
            raise ValueError(f"text_pooling must be one of {TEXT_POOLINGS}, got {text_pooling!r}")
        self.text_pooling = text_pooling
        self.classifier_hidden_sizes = [int(size) for size in classifier_hidden_sizes or []]
        if any(size < 1 for size in self.classifier_hidden_sizes):
            raise ValueError(f"classifier_hidden_sizes must be positive layer sizes, got {classifier_hidden_sizes}")
