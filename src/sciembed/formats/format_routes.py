"""sentence-transformers modules that embed each task in its format.

A Router has one route per format of a model.

A multi-format model (SciRepEval, Singh et al. 2023: control codes, format adapters or PALs) becomes
``[Router({route: [TaskFormatInput(format)]}), MultiFormatTransformer(model)]``: ``encode_query`` takes the
``query`` route (the ``adhoc_query`` format), ``encode_document`` the ``document`` route (``proximity``), and
``encode(texts, task=f)`` the route named after any other format ``f`` (``classification``, ``regression``).
sentence-transformers' ``Router`` saves each route's modules on their own (one folder per route and position,
``Router.load`` builds one module per folder), so one transformer placed in every route would be written once per
route and load as that many models. Here the routes hold only the tokenizer and their format's name. The single
encoder after the Router reads the format from the batch and activates it on every forward pass, since format
adapters and PALs keep the active format as state on the model and the previous batch's route must not decide the
next one's.

This module imports only sentence-transformers, transformers and its own package, so that exported models ship it
as remote code (:func:`sciembed.encoders.router.add_format_routes`): ``SentenceTransformer(folder,
trust_remote_code=True)`` then loads them where sciembed is not installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sentence_transformers.base.modules import InputModule, Module
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from .embedding import (
    FAMILY_POOLING,
    POOLINGS,
    activate_format,
    load_format_modules,
    model_formats,
    pool,
    save_with_format_modules,
)
from .names import FORMATS, MULTI_FORMAT_CONFIG_FILE, TASK_FORMAT_CONFIG_FILE

#: The feature under which a route's :class:`TaskFormatInput` hands its format to :class:`MultiFormatTransformer`.
FORMAT_FEATURE = "task_format"
#: The tokenizer outputs a BERT-style forward pass takes (as :class:`sciembed.PaperEncoder` passes them).
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class _LoadsFromFolder:
    """``Module.load`` for the modules here.

    The module's folder (local, or fetched from the Hub) and its config go to the class's ``_from_folder`` with
    sentence-transformers' loading options (``trust_remote_code``, ``model_kwargs``, ``processor_kwargs``, ...).
    """

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> Any:
        hub = dict(
            subfolder=subfolder,
            token=token,
            cache_folder=cache_folder,
            revision=revision,
            local_files_only=local_files_only,
        )
        return cls._from_folder(
            cls.load_dir_path(model_name_or_path, **hub), cls.load_config(model_name_or_path, **hub), **kwargs
        )


class TaskFormatInput(_LoadsFromFolder, InputModule):
    """The input module of one route: tokenize and tag the batch with its format.

    The input module of one route: tokenizes texts as :class:`sciembed.PaperEncoder` does (padded, truncated to
    ``max_seq_length``) and tags the batch with the route's task format, which :class:`MultiFormatTransformer` embeds
    it in.

    Args:
        tokenizer: the model's tokenizer (a control-code model's includes its codes).
        task_format: one of :data:`sciembed.formats.FORMATS`.
        max_seq_length: tokens per text after truncation, at least 2.

    Raises:
        ValueError: an unknown format or a ``max_seq_length`` below 2.
    """

    config_file_name = TASK_FORMAT_CONFIG_FILE
    config_keys = ["task_format", "max_seq_length"]

    def __init__(self, tokenizer: PreTrainedTokenizerBase, task_format: str, max_seq_length: int) -> None:
        super().__init__()
        if task_format not in FORMATS:
            raise ValueError(f"unknown task format {task_format!r}; the formats are {', '.join(FORMATS)}")
        if max_seq_length < 2:
            raise ValueError(f"max_seq_length must be at least 2, got {max_seq_length}")
        self.tokenizer = tokenizer
        self.task_format = task_format
        self.max_seq_length = max_seq_length

    def preprocess(
        self,
        inputs: Sequence[str],
        prompt: str | None = None,
        processing_kwargs: dict[str, dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Tokenize ``inputs`` (texts). ``processing_kwargs`` override tokenizer options per call under
        ``"common"`` / ``"text"``, as for sentence-transformers' ``Transformer`` (e.g. ``max_length``).

        Raises:
            TypeError: an input is not a string (make paper records texts with :func:`sciembed.paper_text`).
        """
        texts = list(inputs)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(
                    f"{type(self).__name__} embeds texts, got a {type(text).__name__}; "
                    "make paper records texts with sciembed.paper_text(paper, tokenizer.sep_token)"
                )
        if prompt:
            texts = self._prepend_prompt(texts, prompt)
        overrides = processing_kwargs or {}
        options = {"max_length": self.max_seq_length, **overrides.get("common", {}), **overrides.get("text", {})}
        return dict(self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt", **options))

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        features[FORMAT_FEATURE] = self.task_format
        return features

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)
        self.save_tokenizer(output_path)

    @classmethod
    def _from_folder(
        cls, folder: str, config: dict[str, Any], processor_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> TaskFormatInput:
        return cls(AutoTokenizer.from_pretrained(folder, **(processor_kwargs or {})), **config)


class MultiFormatTransformer(_LoadsFromFolder, Module):
    """A multi-format model shared by every route.

    Embeds each batch in the format its route tagged it with (:class:`TaskFormatInput`), switching the model to that
    format on every call (:func:`sciembed.formats.activate_format`), and pools as :mod:`sciembed.encode` does.

    Args:
        model: a control-code model, or a transformers encoder with format adapters or PALs.
        pooling: ``"family"`` (the family's ``pooler_output``, e.g. the control-code position), ``"cls"``
            or ``"mean"``.

    Raises:
        ValueError: a model without task formats, or an unknown pooling.
    """

    config_file_name = MULTI_FORMAT_CONFIG_FILE
    config_keys = ["pooling"]

    def __init__(self, model: PreTrainedModel, pooling: str) -> None:
        super().__init__()
        if not model_formats(model):
            raise ValueError(
                f"{type(model).__name__} has no task formats: "
                "give a control-code model or one with format adapters or PALs"
            )
        if pooling not in (FAMILY_POOLING, *POOLINGS):
            raise ValueError(f"pooling must be one of {(FAMILY_POOLING, *POOLINGS)}, got {pooling!r}")
        self.model = model
        self.pooling = pooling

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Add ``sentence_embedding`` to ``features`` (a batch tagged with its format).

        Raises:
            ValueError: the batch carries no format (no :class:`TaskFormatInput` route ran), or one the
                model does not have.
        """
        task_format = features.get(FORMAT_FEATURE)
        if task_format is None:
            raise ValueError(
                f"{type(self).__name__} embeds batches tagged with a task format: put it behind a Router whose "
                "routes start with TaskFormatInput (sciembed.encoders.router.to_sentence_transformer builds one)"
            )
        inputs = {key: features[key] for key in _MODEL_INPUTS if key in features}
        outputs = self.model(**inputs, **activate_format(self.model, task_format))
        features["sentence_embedding"] = pool(outputs, features["attention_mask"], self.pooling)
        return features

    def get_embedding_dimension(self) -> int:
        return self.model.config.hidden_size

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        """Write the pooling and the model, always as safetensors.

        Write the pooling and the model (always safetensors): format adapters or PALs in their own layout next to a
        clean base, a control-code model with its remote code.
        """
        self.save_config(output_path)
        if not save_with_format_modules(self.model, output_path):
            self.model.save_pretrained(output_path)

    @classmethod
    def _from_folder(
        cls,
        folder: str,
        config: dict[str, Any],
        trust_remote_code: bool = False,
        model_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MultiFormatTransformer:
        """The model saved by :meth:`save` (its format adapters or PALs attached) and its pooling."""
        model = AutoModel.from_pretrained(folder, trust_remote_code=trust_remote_code, **(model_kwargs or {}))
        load_format_modules(model, folder)
        return cls(model, **config)
