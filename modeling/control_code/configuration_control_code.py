"""Configuration of the SciRepEval control-code model (Singh et al., 2023)."""

from __future__ import annotations

from typing import Any

from transformers import BertConfig

#: The embeddings a control-code model gives: the code's final state (``None``, the paper's) or the text's mean.
TEXT_POOLINGS = (None, "mean")

#: How ``ControlCodeModel.from_bert`` fills a new code's word-embedding row: drawn from BERT's init (``"normal"``,
#: the paper's) or copied from the tokenizer's ``[SEP]`` row (``"sep"``).
CONTROL_CODE_INITS = ("normal", "sep")

#: SciRepEval's four task formats and their control codes (``TASK_IDS`` in allenai/scirepeval).
DEFAULT_CONTROL_CODES: dict[str, str] = {
    "classification": "[CLF]",
    "regression": "[RGN]",
    "proximity": "[PRX]",
    "adhoc_query": "[QRY]",
}


class ControlCodeConfig(BertConfig):
    """A BERT configuration plus the task-format control codes of SciRepEval's MTL CTRL model.

    SciRepEval (Singh et al., "SciRepEval: A Multi-Format Benchmark for Scientific Document
    Representations", EMNLP 2023) trains one encoder on four task formats and tells it the format of
    each input with a control code, a special token placed right after ``[CLS]``. The final hidden state
    of that token is the document embedding for that format.

    Args:
        control_codes: task-format name -> control-code token. Defaults to SciRepEval's
            ``{"classification": "[CLF]", "regression": "[RGN]", "proximity": "[PRX]",
            "adhoc_query": "[QRY]"}``. In ad-hoc search SciRepEval embeds the *query* with ``[QRY]``
            and the candidate papers with ``[PRX]``, so ``adhoc_query`` is only for queries.
        control_code_token_ids: task-format name -> vocabulary id of its control code. Filled by
            ``ControlCodeModel.from_bert`` when it adds the codes to the tokenizer. Empty until then.
        default_task_format: the format used when ``forward`` gets ``task_format=None``. Defaults to
            ``"proximity"``: ``[PRX]`` is the code SciRepEval uses for proximity (similarity, citation
            prediction, recommendation) and for search candidates, i.e. the general-purpose paper
            embedding, and SPECTER2's default released adapter (``allenai/specter2``) is the proximity
            one as well. SciRepEval's own evaluation has no default: it sets the code per task.
        text_pooling: ``None`` (default, the paper's: the embedding is the final hidden state of the code) or
            ``"mean"``: the mean of the final hidden states of ``[CLS]`` and the text tokens (padding and the code
            excluded), which the code still conditions through attention, so each format keeps its own embedding.
            This is the embedding of a base that pools by mean, as sentence-transformers models such as
            all-MiniLM-L6-v2 do: read at a new code token, such a base starts far below itself (the step 0 of
            ``benchmarks/recipes.py``'s ``scirepeval-ctrl`` rows, docs/training.md). A departure from the paper,
            whose base (SciBERT) is read at a ``[CLS]``-like position.
        control_code_init: how ``ControlCodeModel.from_bert`` fills the word-embedding row of each code it adds:
            ``"normal"`` (default, the paper's: N(0, initializer_range), what SciRepEval's
            ``resize_token_embeddings`` gave) or ``"sep"``: a copy of the ``[SEP]`` row. BERT's heads use ``[SEP]``
            as a no-op their attention rests on (Clark et al., "What Does BERT Look At?", 2019), so a code that
            starts as a second ``[SEP]`` barely moves the text's states and, with ``text_pooling="mean"``, the model
            starts close to the base's own embedding, where a random row shifts every state. The codes become
            distinct as each format's loss trains its own row. Recorded in the configuration, used only when the
            codes are added.
        classifier_hidden_sizes: the hidden-layer sizes, each Linear + ReLU, of the SPECTROID classification head
            (Capuano et al.) that ``ControlCodeForSequenceClassification`` puts on the control-code embedding.
            ``[]`` (default) is a linear head. Unused by the encoder.
        **kwargs: every ``transformers.BertConfig`` field.
    """

    model_type = "control_code"

    def __init__(
        self,
        control_codes: dict[str, str] | None = None,
        control_code_token_ids: dict[str, int] | None = None,
        default_task_format: str = "proximity",
        classifier_hidden_sizes: list[int] | None = None,
        text_pooling: str | None = None,
        control_code_init: str = "normal",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if text_pooling not in TEXT_POOLINGS:
            raise ValueError(f"text_pooling must be one of {TEXT_POOLINGS}, got {text_pooling!r}")
        if control_code_init not in CONTROL_CODE_INITS:
            raise ValueError(f"control_code_init must be one of {CONTROL_CODE_INITS}, got {control_code_init!r}")
        self.text_pooling = text_pooling
        self.control_code_init = control_code_init
        self.control_codes = dict(DEFAULT_CONTROL_CODES if control_codes is None else control_codes)
        self.control_code_token_ids = {name: int(i) for name, i in (control_code_token_ids or {}).items()}
        self.default_task_format = default_task_format
        self.classifier_hidden_sizes = [int(size) for size in classifier_hidden_sizes or []]
        if any(size < 1 for size in self.classifier_hidden_sizes):
            raise ValueError(f"classifier_hidden_sizes must be positive layer sizes, got {classifier_hidden_sizes}")
        formats = ", ".join(self.control_codes)
        if default_task_format not in self.control_codes:
            raise ValueError(f"default_task_format {default_task_format!r} is not one of the formats: {formats}")
        unknown = sorted(set(self.control_code_token_ids) - set(self.control_codes))
        if unknown:
            raise ValueError(f"control_code_token_ids names unknown formats {unknown}; the formats are: {formats}")
