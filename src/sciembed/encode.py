"""Papers to vectors: the one place in sciembed that batches text through a model.

Every evaluator, the CLI and the demo embed papers through :func:`encode` (or a :class:`PaperEncoder`
held across calls). Texts are tokenized once, grouped into batches of similar length (longest first, so a
batch that does not fit in memory fails at once), padded from their stored ids, run under
``torch.inference_mode`` and put back in input order. The result is a float32 numpy array.

Pooling is the model's own: the ``[CLS]`` vector for a plain transformers encoder (SPECTER's choice),
the family's embedding (``pooler_output``) for sciembed's model families, and the model's own modules
(pooling, normalisation, ...) for a sentence-transformers model, recognised by its ``modules.json``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import numbers
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn

import numpy as np
from tqdm.auto import tqdm

from .backends import BACKEND_NAMES, Backend, WeightQuantization, check_backend, make_engine
from .checkpoint_files import (
    ENSEMBLE_FILE,
    base_embedding,
    folder_window,
    format_routes_at_root,
    has_sentence_transformers_modules,
    only_sciembed_code,
    st_window,
    tokenizer_window,
    transformer_folder,
    transformer_path,
)
from .checkpoint_hub import (
    check_model_location,
    check_module_chain,
    hub_folder_with,
    load_errors_named,
    named_as,
    resolve_model,
)
from .checkpoint_weights import check_weights_fit
from .checkpoints import check_remote_code, check_tokenizer
from .data.papers import TEXT_FIELDS, paper_inputs, paper_text
from .default_model import default_model_path
from .families import family_of, register_families
from .formats import activate_format, load_format_modules, model_formats
from .formats.embedding import FAMILY_POOLING, POOLINGS, pool  # noqa: F401  (encode's API too)
from .formats.names import DOCUMENT_FORMAT, QUERY_FORMAT  # noqa: F401  (encode's API too)
from .io import check_finite, default_cache_dir
from .logs import progress_enabled
from .quantization import OutputPrecision, Precision, calibration_ranges, check_precision, load_ranges, quantize
from .removed import RemovedAttribute, refuse_removed_keywords, removed_keywords, removed_message
from .similarity import SimilarityName, check_similarity_name
from .similarity import similarity as _similarity
from .similarity import similarity_pairwise as _similarity_pairwise
from .tokens import Padding, TokenIds, tokenizer_padding
from .truncation import cut_texts

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

Pooling = Literal["cls", "mean"]
#: Papers or queries as :meth:`Encoder.encode` takes them (:func:`~sciembed.data.papers.paper_inputs`): one text or
#: record, or a list, tuple, generator or pandas DataFrame of them.
Papers = str | Mapping[str, Any] | Iterable[Mapping[str, Any] | str]


#: Texts per forward pass by default. Small batches run fastest on CPUs (``benchmarks/encode_speed.py`` sweeps the
#: batch size), GPUs want more.
CPU_BATCH_SIZE, GPU_BATCH_SIZE = 8, 32


@dataclass(frozen=True)
class BatchPadding:
    """How :class:`PaperEncoder` makes a batch from stored token ids, as its tokenizing would make it.

    Args:
        padding: the tokenizer's padding.
        extras: the batch's entries other than tensors (a sentence-transformers model's ``modality``).
    """

    padding: Padding
    extras: Mapping[str, str]


class Encoder(ABC):
    """What every sciembed encoder offers: papers (records or texts) to vectors in a task format.

    :class:`PaperEncoder` wraps one model. :class:`~sciembed.encoders.EnsembleEncoder`
    averages several. The evaluation runner, the embedding cache and the embed job take any encoder.

    Every encoder sets ``tokenizer``, ``device``, ``max_length``, ``pooling``, ``normalize``, ``facets``,
    ``forward_options`` (the keyword arguments its forward pass gets, such as ``task_format``), ``backend``
    (``pytorch``, ``onnx`` or ``openvino``) and ``quantization`` (``fp32``, or an int8 kind of the ONNX or OpenVINO
    model's weights).
    It embeds a list of papers in ``_encode``. :meth:`encode` turns what users give (one text, a generator, a
    DataFrame, ...) into that list first, and the vectors into what was asked for (a tensor, int8, bits, ...).
    """

    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    max_length: int
    pooling: str | None
    normalize: bool
    facets: bool
    forward_options: dict[str, Any]
    backend: str
    quantization: str
    #: The Hub commit the model was loaded at; ``None`` for a local folder outside the Hub cache or a model given
    #: in Python (see :meth:`PaperEncoder.from_pretrained`).
    revision: str | list[str | None] | None = None
    _similarity_fn_name: str | None = None
    #: Encoder kinds with a folder of their own, by the file that marks the folder (``{file: class}``). A kind names
    #: its file where it is defined: ``class EnsembleEncoder(Encoder, folder_file=ENSEMBLE_FILE)``.
    _folder_kinds: ClassVar[dict[str, type[Encoder]]] = {}

    def __init_subclass__(cls, folder_file: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if folder_file is not None:
            Encoder._folder_kinds[folder_file] = cls

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike[str] | None = None, **options: Any) -> Encoder:
        """Load the encoder a local folder or Hub id holds.

        Every entry point that takes a model name loads it here. A folder or Hub repository (at ``revision``) holding
        ``sciembed_ensemble.json`` loads as an :class:`~sciembed.encoders.EnsembleEncoder`, its members each with
        ``options``. Anything else loads as a :class:`PaperEncoder`.

        Args:
            name_or_path: a local folder or a Hub id (default: the embedded all-MiniLM-L6-v2).
            device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, .... Defaults to CUDA when available.
            max_length: tokens per text (default: the model's limit, at most 512).
            pooling: ``"cls"`` or ``"mean"`` for a plain transformers model (default: the model's own).
            task_format: the format of a multi-format model (default: the model's own).
            domain: the domain of a mixture-of-experts model with domain routing.
            backend: ``"pytorch"`` (default), ``"onnx"`` (ONNX Runtime on CPU) or ``"openvino"`` (OpenVINO on CPU).
            quantization: the ONNX or OpenVINO model's weights: ``"fp32"`` (default), ``"int8"``, or
                ``"int8_weights"`` (OpenVINO only).
            trust_remote_code: let the checkpoint run code that is not sciembed's own.
            revision: a Hub id's branch, tag or commit (default: ``main``). Refused for a local folder.
            token: a Hub token for private repositories (default: the one ``hf auth login`` stored).
            cache_dir: the Hub cache to download to and read from (default: ``HF_HUB_CACHE``).
            local_files_only: read a Hub id from the cache only, never downloading.
            model_kwargs: keyword arguments of transformers' ``from_pretrained``, such as ``torch_dtype``.
            options: the other settings of :class:`PaperEncoder` (``normalize``, ``facets``, ``engine_cache``, ...).

        Raises:
            TypeError: called on an encoder class that wraps other encoders (build it from a loaded one).
            ValueError: a folder or Hub id that would not load, named with what is wrong.

        Example::

            >>> encoder = sciembed.Encoder.from_pretrained("allenai/specter2_base", device="cuda", revision="main")
        """
        if cls is not Encoder:
            raise TypeError(
                f"{cls.__name__} wraps an encoder: build it from one, e.g. "
                f"{cls.__name__}(sciembed.Encoder.from_pretrained(name), ...)"
            )
        if name_or_path is not None:
            hub = {name: options[name] for name in ("revision", "token", "cache_dir") if name in options}
            for file, kind in Encoder._folder_kinds.items():
                if (Path(name_or_path) / file).is_file():
                    return kind.from_pretrained(name_or_path, **options)
                folder = hub_folder_with(
                    str(name_or_path), file, local_files_only=options.get("local_files_only", False), **hub
                )
                if folder is not None:  # a Hub repository holding the file: its snapshot, at the revision asked
                    with named_as(str(name_or_path), folder):
                        encoder = kind.from_pretrained(folder, **{k: v for k, v in options.items() if k != "revision"})
                    return encoder.named_by_hub(str(name_or_path), folder)
        return PaperEncoder.from_pretrained(name_or_path, **options)

    def named_by_hub(self, repo_id: str, snapshot: str) -> Encoder:
        """This encoder, its parts from ``snapshot`` named by the Hub id and commit.

        Args:
            repo_id: the Hub id the user gave.
            snapshot: the Hub cache snapshot folder the encoder was read from.
        """
        return self

    @property
    @abstractmethod
    def name_or_path(self) -> str:
        """Where the encoder was loaded from, for logs and reports."""

    @property
    @abstractmethod
    def task_formats(self) -> tuple[str, ...]:
        """The formats the encoder embeds differently (empty for a single-embedding model)."""

    @abstractmethod
    def with_format(self, task_format: str | None) -> Encoder:
        """This encoder embedding in ``task_format`` (no copy of any weights)."""

    @abstractmethod
    def fingerprint(self) -> str:
        """A hash of everything that decides the vectors. Equal fingerprints give equal vectors."""

    def encode(
        self,
        inputs: Papers,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        precision: OutputPrecision = "float32",
        ranges: np.ndarray | None = None,
        calibration_embeddings: np.ndarray | None = None,
        progress_desc: str = "Encoding",
    ) -> Any:
        """Embed ``inputs`` (paper records, or texts as they are), in input order, as sentence-transformers does.

        Args:
            inputs: one text or one paper record, embedded as one vector ``(dim,)``. Or a list, tuple, generator or
                pandas DataFrame of them (its rows), embedded as ``(n, dim)``
                (:func:`~sciembed.data.papers.paper_inputs`).
            batch_size: texts per forward pass (default: :attr:`default_batch_size`).
            show_progress_bar: show a tqdm bar over the papers. ``None`` shows it when the ``sciembed`` logger is at
                INFO or lower.
            convert_to_numpy: return a numpy array (``False``: a list of tensors, one per input).
            convert_to_tensor: return one ``torch.Tensor`` (takes precedence over ``convert_to_numpy``).
            normalize_embeddings: scale each vector to length 1 (before any quantization).
            precision: ``float32``, ``int8``, ``uint8``, ``binary`` or ``ubinary`` (:mod:`sciembed.quantization`).
            ranges: int8 / uint8: the ``(2, dim)`` per-dimension minima and maxima (default: those stored by
                :meth:`calibrate`, else read from ``calibration_embeddings``, else from the vectors themselves).
            calibration_embeddings: int8 / uint8 without ``ranges``: float vectors to read the ranges from.
            progress_desc: the bar's label.

        Raises:
            TypeError: ``inputs`` is none of these (bytes, a number, ``None``, a set, ...), naming what was given.
            ValueError: an unknown ``precision``, named before anything is embedded.
        """
        precision = check_precision(precision)
        items, single = paper_inputs(inputs)
        vectors = self._encode(
            items,
            batch_size=batch_size,
            show_progress_bar=progress_enabled(show_progress_bar),
            progress_desc=progress_desc,
        )
        if normalize_embeddings:
            norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
            vectors = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
        if precision is not Precision.FLOAT32:
            if ranges is None and calibration_embeddings is None:
                ranges = self.quantization_ranges.get(self._ranges_key)
            vectors = quantize(vectors, precision, ranges=ranges, calibration_embeddings=calibration_embeddings)
        if convert_to_tensor or not convert_to_numpy:
            import torch

            tensor = torch.from_numpy(np.ascontiguousarray(vectors))
            vectors = tensor if convert_to_tensor else list(tensor)
        return vectors[0] if single else vectors

    @abstractmethod
    def _encode(
        self,
        papers: list[Mapping[str, Any] | str],
        *,
        batch_size: int | None,
        show_progress_bar: bool,
        progress_desc: str,
    ) -> np.ndarray:
        """Embed the list ``papers`` (records, or texts as they are) as ``(len(papers), ...)``, in input order."""

    @property
    def quantization_ranges(self) -> dict[str, np.ndarray]:
        """Calibrated int8 / uint8 ranges per task format (``""``: the default format), shared by format copies.

        :meth:`calibrate` sets them, :meth:`PaperEncoder.save_pretrained` stores them beside the model
        (:data:`sciembed.quantization.RANGES_FILE`) and :meth:`PaperEncoder.from_pretrained` reads them back.
        """
        return self.__dict__.setdefault("_quantization_ranges", {})

    @property
    def _ranges_key(self) -> str:
        return str(self.forward_options.get("task_format") or "")

    def calibrate(self, papers: Papers, *, normalize_embeddings: bool = False, **kwargs: Any) -> np.ndarray:
        """Read int8 and uint8 ranges from the vectors of ``papers``, kept for this task format.

        Args:
            papers: papers representative of those to quantize (at least two).
            normalize_embeddings: calibrate unit vectors, for ``encode(..., normalize_embeddings=True)``.
            kwargs: further :meth:`encode` options (``batch_size``, ``show_progress_bar``).

        Returns:
            The ``(2, dim)`` ranges, also kept in :attr:`quantization_ranges`.
        """
        vectors = self.encode(papers, normalize_embeddings=normalize_embeddings, **kwargs)
        ranges = calibration_ranges(np.atleast_2d(vectors))
        self.quantization_ranges[self._ranges_key] = ranges
        return ranges

    @property
    def similarity_fn_name(self) -> SimilarityName:
        """The similarity :meth:`similarity` computes: the model's own (a sentence-transformers model's config), else
        ``cosine``. It can be set to ``cosine``, ``dot``, ``euclidean`` or ``manhattan``."""
        if self._similarity_fn_name is None:
            self._similarity_fn_name = check_similarity_name(self._model_similarity_fn_name())
        return self._similarity_fn_name

    @similarity_fn_name.setter
    def similarity_fn_name(self, name: SimilarityName) -> None:
        self._similarity_fn_name = check_similarity_name(name)

    def _model_similarity_fn_name(self) -> str:
        return "cosine"

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        """Scores of every vector of ``embeddings1`` against every one of ``embeddings2`` (:attr:`similarity_fn_name`).

        Args:
            embeddings1: vectors ``(n, dim)`` or one ``(dim,)``, numpy or torch.
            embeddings2: vectors ``(m, dim)`` or one ``(dim,)``.

        Returns:
            A float32 tensor ``(n, m)``.
        """
        return _similarity(embeddings1, embeddings2, self.similarity_fn_name)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        """The score of each vector of ``embeddings1`` with that row of ``embeddings2`` (:attr:`similarity_fn_name`).

        Args:
            embeddings1: vectors ``(n, dim)`` or one ``(dim,)``.
            embeddings2: vectors of the same shape.

        Returns:
            A float32 tensor ``(n,)``.
        """
        return _similarity_pairwise(embeddings1, embeddings2, self.similarity_fn_name)

    def push_to_hub(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Removed: publish with :func:`sciembed.hub.push.push_to_hub` ``(encoder, repo_id)``.

        Args:
            args, kwargs: not used.
        """
        raise AttributeError(
            removed_message("sciembed.Encoder", "push_to_hub", "sciembed.hub.push.push_to_hub(encoder, repo_id)")
        )

    def get_embedding_dimension(self) -> int:
        """The size of the vectors :meth:`encode` returns (measured once on a short text)."""
        if "_dimension" not in self.__dict__:
            self.__dict__["_dimension"] = int(self.encode("dimension", show_progress_bar=False).shape[-1])
        return self.__dict__["_dimension"]

    def save_pretrained(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Save the encoder as a folder that :meth:`Encoder.from_pretrained` loads as the same encoder.

        Args:
            path: the folder to write. It appears whole or not at all.
            overwrite: replace a folder that is there (refused otherwise).

        Raises:
            ValueError: this kind of encoder has no folder of its own (the message names what to save instead).
        """
        raise ValueError(f"a {type(self).__name__} has no model folder of its own; save the encoder it is built on")

    @property
    def default_batch_size(self) -> int:
        """Texts per forward pass when none is given.

        That is :data:`CPU_BATCH_SIZE` on a CPU and :data:`GPU_BATCH_SIZE` on a GPU.
        """
        return CPU_BATCH_SIZE if self.device.type == "cpu" else GPU_BATCH_SIZE

    @property
    def sep_token(self) -> str:
        """The separator placed between title and abstract (the tokenizer's ``sep_token``)."""
        return self.tokenizer.sep_token or " "

    def texts(self, papers: Papers, fields: Sequence[str] = TEXT_FIELDS) -> list[str]:
        """Model texts of ``papers``: records joined into text, strings unchanged.

        ``papers`` are as :meth:`encode` takes them, and one text or record gives a list of one. Records go through
        :func:`~sciembed.data.papers.paper_text`, which joins their ``fields`` by the separator. SciRepEval's search
        adds venue and year.
        """
        items, _ = paper_inputs(papers)
        return [
            paper if isinstance(paper, str) else paper_text(paper, self.sep_token, fields, index=index)
            for index, paper in enumerate(items)
        ]

    def encode_query(self, queries: Papers, **kwargs: Any) -> Any:
        """Embed search queries, in the ``adhoc_query`` format when the model has one.

        That format is SciRepEval's ``[QRY]`` or SPECTER2's query adapter. Other models embed queries as any text. One
        query gives one vector. ``kwargs`` as for :meth:`encode`.
        """
        items, single = paper_inputs(queries, what="queries")
        vectors = self._in_format(QUERY_FORMAT).encode(items, **kwargs)
        return vectors[0] if single else vectors

    def encode_document(self, papers: Papers, **kwargs: Any) -> Any:
        """Embed search candidates, in the ``proximity`` format when the model has one.

        Other models embed them as any paper. One paper gives one vector. ``kwargs`` as for :meth:`encode`.
        """
        return self._in_format(DOCUMENT_FORMAT).encode(papers, **kwargs)

    def _in_format(self, task_format: str) -> Encoder:
        return self.with_format(task_format) if task_format in self.task_formats else self


#: What replaces the two cache folders a :class:`PaperEncoder` took, one per engine.
ENGINE_CACHE = "engine_cache=, the one folder holding onnx/ and openvino/"
#: The removed cache keywords of :class:`PaperEncoder` and what replaces them.
MOVED_ENGINE_CACHES = {"onnx_cache": ENGINE_CACHE, "openvino_cache": ENGINE_CACHE}
#: The keywords :class:`PaperEncoder` refuses and what replaces them: the weights' precision is ``quantization``.
MOVED_ENCODER_KEYWORDS = {
    **MOVED_ENGINE_CACHES,
    "precision": "quantization= for the ONNX or OpenVINO weights (--onnx-quantization fp32 or int8), "
    "encode(precision=) for the vectors' precision (float32, int8, uint8, binary, ubinary)",
}


class PaperEncoder(Encoder):
    """A model, its tokenizer and its pooling, ready to turn papers into vectors.

    Args:
        model: a transformers ``PreTrainedModel`` (encoder) or a ``SentenceTransformer``.
        tokenizer: the tokenizer of a transformers model. Loaded from ``model.name_or_path`` when omitted.
        pooling: ``"cls"`` (default) or ``"mean"`` for a plain transformers model. sciembed's families
            and sentence-transformers models pool their own way, so this must be left unset for them.
        normalize: L2-normalise the vectors of a transformers model (a sentence-transformers model
            normalises when its modules say so).
        max_length: tokens per text after truncation, more than the special tokens the tokenizer adds. Defaults to
            the model's limit (the tokenizer's ``model_max_length`` capped by ``max_position_embeddings`` less the
            tokens a family inserts itself, at most 512, a limit the folder sets below :data:`MIN_FOLDER_WINDOW` is
            refused).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, .... Defaults to CUDA when available, else CPU.
        task_format: the format of a control-code model (``classification``, ``regression``,
            ``proximity``, ``adhoc_query``). The model's default when unset.
        domain: the domain of a mixture-of-experts model with domain routing (one of ``config.domains``).
        facets: return each paper's facet vectors ``(K, dim)`` instead of one vector, for a model whose
            output holds ``cls_embeddings`` (Multi2SPEModel). :meth:`encode` then returns ``(n, K, dim)``.
        backend: ``"pytorch"`` (default), ``"onnx"``: the same batches run by ONNX Runtime on CPU, from an export of
            this encoder made once and cached (:mod:`sciembed.onnx_backend`, needs ``sciembed[onnx]``), or
            ``"openvino"``: that export run by OpenVINO on CPU (:mod:`sciembed.openvino_backend`, needs
            ``sciembed[openvino]``).
        quantization: the ONNX or OpenVINO model's weights: ``"fp32"`` (default), ``"int8"`` (ONNX: dynamically
            quantised, OpenVINO: NNCF's post-training quantization) or ``"int8_weights"`` (OpenVINO: int8 weights
            only). int8 is refused until :func:`sciembed.evaluation.int8_gate.check_int8` has passed it. The
            vectors' own precision is :meth:`encode`'s ``precision``.
        engine_cache: the folder holding the ONNX exports (``onnx/``) and OpenVINO models (``openvino/``). Defaults
            to :func:`sciembed.io.default_cache_dir`.
    """

    @removed_keywords("sciembed.PaperEncoder", MOVED_ENCODER_KEYWORDS)
    def __init__(
        self,
        model: PreTrainedModel | SentenceTransformer,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        pooling: Pooling | None = None,
        normalize: bool = False,
        max_length: int | None = None,
        device: str | torch.device | None = None,
        task_format: str | None = None,
        domain: str | None = None,
        facets: bool = False,
        backend: Backend | str = Backend.PYTORCH,
        quantization: WeightQuantization | str = WeightQuantization.FP32,
        engine_cache: str | os.PathLike[str] | None = None,
    ):
        import torch

        backend = check_backend(backend, quantization, device)
        pytorch = backend is Backend.PYTORCH
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() and pytorch else "cpu"))
        self._sentence_transformer = model if _is_sentence_transformer(model) else None
        if self._sentence_transformer is not None:
            if tokenizer is not None or pooling is not None or normalize:
                raise ValueError(
                    "a sentence-transformers model tokenizes and pools with its own modules: "
                    "leave tokenizer, pooling and normalize unset"
                )
            self.tokenizer = model.tokenizer
            positions = position_limit(model.transformers_model)
            if max_length is not None and max_length > positions:
                raise ValueError(f"max_length {max_length} exceeds the {positions} tokens the model takes")
            folder = model.transformers_model.name_or_path
            window = (
                None if max_length is not None else folder_window(model.max_seq_length, f"{folder}: max_seq_length")
            )
            model_limit = min(window or 512, positions)
            self.pooling: str | None = None
        else:
            if pooling is not None and pooling not in POOLINGS:
                raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
            if tokenizer is None:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(model.name_or_path)
            self.tokenizer = tokenizer
            if family_of(model) is not None and pooling is not None:
                raise ValueError(f"a {family_of(model)} model gives its own paper embedding: leave pooling unset")
            self.pooling = pooling or default_pooling(model)
            positions = position_limit(model)
            if max_length is not None and max_length > positions:
                raise ValueError(f"max_length {max_length} exceeds the {positions} tokens the model takes")
            model_limit = default_max_length(model, tokenizer) if max_length is None else positions
        if max_length is not None:
            check_max_length(max_length, self.tokenizer)
        self.max_length = max_length or model_limit
        self.normalize = normalize
        self.model = model.to(self.device).eval()
        self.forward_options = self._forward_options(task_format, domain)
        config = self.transformer.config
        if getattr(config, "routing", None) == "enforced" and domain is None and not self._routes:
            raise ValueError(
                f"{type(self.transformer).__name__} routes every paper to the expert of its domain: give its domain "
                f"(domain= in Python, --domain on the command line), one of {', '.join(config.domains)}"
            )
        if facets and family_of(self.transformer) != "multi2spe":
            raise ValueError(
                f"{type(self.transformer).__name__} has no facet vectors; facets is for models with cls_embeddings "
                "(Multi2SPEModel)"
            )
        self.facets = facets
        self.backend = backend
        if not pytorch and any(p.dtype != torch.float32 for p in self.model.parameters()):
            raise ValueError(
                f"{self.name_or_path}: the {BACKEND_NAMES[backend]} backend exports float32 weights; load the model "
                f"without a dtype (model_kwargs / --dtype) for backend={backend!r}"
            )
        #: The folder holding the engines' ``onnx/`` and ``openvino/`` (``None`` for PyTorch).
        self.engine_cache = None if pytorch else Path(default_cache_dir() if engine_cache is None else engine_cache)
        self._engine = make_engine(backend, quantization, self.engine_cache)
        self.__dict__.setdefault("_quantization_ranges", {})  # shared with this encoder's format copies

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike[str] | None = None,
        *,
        trust_remote_code: bool = False,
        device: str | torch.device | None = None,
        revision: str | None = None,
        token: str | bool | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        local_files_only: bool = False,
        model_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> PaperEncoder:
        """Load one model by Hub id or local path. The arguments are those of :meth:`Encoder.from_pretrained`.

        A folder holding ``sciembed_ensemble.json`` is refused, naming :meth:`Encoder.from_pretrained`, which loads
        it as an ensemble: a ``PaperEncoder`` is always one model.

        A Hub id is resolved to a commit in the Hub cache first (downloaded unless ``local_files_only`` or
        ``HF_HUB_OFFLINE``, other frameworks' weights are left out). Every check and load then reads that folder, and
        the commit is the encoder's :attr:`~Encoder.revision`. A local folder has ``revision`` ``None``, unless it is
        a snapshot folder of the Hub cache (``.../snapshots/<commit>``), whose commit it is.

        A folder or Hub repository with a sentence-transformers ``modules.json`` loads as a
        ``SentenceTransformer``. Anything else with ``AutoModel`` / ``AutoTokenizer``. A ``pooling`` given for a
        sentence-transformers folder loads its transformer alone and pools that way instead of with its own modules,
        so that off-the-shelf sentence encoders can be compared with SPECTER-style models under one pooling. It keeps
        the folder's ``max_seq_length`` unless ``max_length`` is given. ``model_kwargs`` may set ``torch_dtype``
        (``"bfloat16"``, ``torch.float16``, ...). The vectors are float32 whatever the dtype.
        A local folder with format adapters or PALs saved next to its base gets them attached
        (:func:`sciembed.formats.load_format_modules`).
        """
        refuse_removed_keywords("sciembed.PaperEncoder", kwargs, MOVED_ENCODER_KEYWORDS)  # before loading
        check_backend(kwargs.get("backend", "pytorch"), kwargs.get("quantization", "fp32"), device)
        given = str(name_or_path) if name_or_path is not None else default_model_path()
        name, resolved = resolve_model(
            given, revision=revision, token=token, cache_dir=cache_dir, local_files_only=local_files_only
        )
        with named_as(given, name):  # a Hub snapshot's errors name the Hub id
            loading = _model_kwargs(model_kwargs)
            if (Path(name) / ENSEMBLE_FILE).is_file():
                raise ValueError(
                    f"{name} is an ensemble ({ENSEMBLE_FILE}), not one model: load it with "
                    "sciembed.Encoder.from_pretrained"
                )
            # Code, window (unless one is given) and weights, before anything of the checkpoint runs or loads.
            cls.check_checkpoint(name, trust_remote_code=trust_remote_code, window=kwargs.get("max_length") is None)
            sentence_transformers = has_sentence_transformers_modules(name)
            if sentence_transformers and format_routes_at_root(name):
                # An exported multi-format model: its root is the model folder, read with sciembed's own classes (not
                # the copies of them it ships for sentence-transformers) in the embedding its routes give.
                spec = base_embedding(name)
                kwargs = {**kwargs, "normalize": spec.normalize or bool(kwargs.get("normalize"))}
                kwargs["pooling"] = kwargs.get("pooling") or spec.pooling
                kwargs["max_length"] = kwargs.get("max_length") or spec.max_length
            elif kwargs.get("pooling") is None and sentence_transformers:
                from sentence_transformers import SentenceTransformer

                trusted = trust_remote_code or only_sciembed_code(name)
                with load_errors_named(name):
                    model = SentenceTransformer(
                        name, device=str(device) if device else None, trust_remote_code=trusted, model_kwargs=loading
                    )
                check_module_chain(model, name)
                if Path(name).is_dir():
                    load_format_modules(model.transformers_model, name)
                return cls(model, device=device, **kwargs)._loaded_from(given, name, resolved)
            from transformers import AutoModel, AutoTokenizer

            if kwargs.get("max_length") is None and sentence_transformers:
                # Read as a plain transformer with another pooling, a sentence-transformers model keeps its own length.
                kwargs["max_length"] = base_embedding(name).max_length
                logger.info(
                    "%s: pooling %s over its transformer, at its sentence-transformers max_seq_length %s",
                    name,
                    kwargs.get("pooling"),
                    kwargs["max_length"] or "(unset: the model's limit)",
                )
            source = transformer_path(name) if sentence_transformers else name
            with load_errors_named(name):
                model = AutoModel.from_pretrained(source, trust_remote_code=trust_remote_code, **loading)
                if trust_remote_code and kwargs.get("tokenizer") is None:  # a tokenizer may be the model's code too
                    kwargs["tokenizer"] = AutoTokenizer.from_pretrained(source, trust_remote_code=True)
            if Path(name).is_dir():
                load_format_modules(model, name)
            return cls(model, device=device, **kwargs)._loaded_from(given, name, resolved)

    def save_pretrained(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Save the encoder as a folder that :meth:`from_pretrained` loads as this encoder.

        The folder holds the model, tokenizer, embedding settings and calibrated ranges. A sentence-transformers model
        is saved as its own modules.

        Args:
            path: the folder to write. It appears whole or not at all.
            overwrite: replace a folder that is there (refused otherwise, before anything is written).

        Raises:
            FileExistsError: ``path`` exists and ``overwrite`` is false.
        """
        import shutil

        from .io import refuse_replacing, replace_folder
        from .quantization import save_ranges
        from .saving import save_model

        folder = refuse_replacing(path, overwrite=overwrite)
        staging = folder.with_name(f".{folder.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            if self._sentence_transformer is not None:
                self._sentence_transformer.save_pretrained(str(staging))
            else:
                save_model(
                    self.model,
                    self.tokenizer,
                    staging,
                    pooling=self.pooling if self.pooling in POOLINGS else None,
                    normalize=self.normalize,
                    max_length=self.max_length,
                )
            if self.quantization_ranges:
                save_ranges(staging, self.quantization_ranges)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return replace_folder(staging, folder)

    def _model_similarity_fn_name(self) -> str:
        st = self._sentence_transformer
        return (getattr(st, "_similarity_fn_name", None) if st is not None else None) or "cosine"

    def _loaded_from(self, given: str, folder: str, revision: str | None) -> PaperEncoder:
        """This encoder, noting the name asked for, its commit and the ranges in ``folder``."""
        self.source, self.revision = given, revision
        self.quantization_ranges.update(load_ranges(folder))
        return self

    @staticmethod
    def check_checkpoint(name: str, *, trust_remote_code: bool = False, window: bool = True) -> None:
        """Refuse a model folder or Hub id that would not load as saved.

        The check runs before anything of the model runs or loads.

        What :meth:`from_pretrained` checks first: code that is not sciembed's own, a window no paper fits in, a
        tokenizer that would not load or would know no word, and weights that do not cover the config.

        Args:
            name: the model folder or Hub id.
            trust_remote_code: the user lets the checkpoint's own code run.
            window: check the window the folder sets (not when the caller gives its own).

        Raises:
            ValueError: naming the file, entry, window or weights at fault.
        """
        check_model_location(name)
        check_remote_code(name, trust_remote_code=trust_remote_code)
        register_families()
        sentence_transformers = has_sentence_transformers_modules(name)
        subfolder = transformer_folder(name) if sentence_transformers else ""
        if subfolder is None:  # modules without a transformers model of their own: nothing more to check here
            return
        if window and sentence_transformers:
            st_window(name)
        if window:
            tokenizer_window(name, subfolder)
        check_tokenizer(name, subfolder, trust_remote_code=trust_remote_code)
        trusted = trust_remote_code or (sentence_transformers and only_sciembed_code(name))
        with load_errors_named(name):  # damaged weights, unsafe pickles: one line naming the folder
            check_weights_fit(name, subfolder=subfolder, trust_remote_code=trusted)

    @property
    def transformer(self) -> PreTrainedModel:
        """The transformers model (inside the sentence-transformers model, if that is what was given)."""
        return self.model.transformers_model if self._sentence_transformer is not None else self.model

    @property
    def name_or_path(self) -> str:
        """Where the model was loaded from: the Hub id or folder given to :meth:`from_pretrained`."""
        return getattr(self, "source", None) or str(self.transformer.name_or_path)

    def _forward_options(self, task_format: str | None, domain: str | None) -> dict[str, Any]:
        model = self.transformer
        options: dict[str, Any] = {}
        if task_format is not None:
            formats = self.task_formats
            if task_format not in formats:
                raise ValueError(
                    f"{type(model).__name__} has no task format {task_format!r}; "
                    + (
                        f"its formats: {', '.join(formats)}"
                        if formats
                        else "task_format is for control-code, format-adapter and PALs models"
                    )
                )
            options["task_format"] = task_format
        if domain is not None:
            domains = list(getattr(model.config, "domains", None) or [])
            if not domains:
                raise ValueError(f"{type(model).__name__} has no domains; domain is for mixture-of-experts models")
            if domain not in domains:
                raise ValueError(f"unknown domain {domain!r}; this model knows {', '.join(domains)}")
            options["domain"] = domain
        return options

    def _routed(self, features: Mapping[str, Any]) -> dict[str, Any]:
        """Tokenized ``features`` routed to the encoder's domain (a mixture-of-experts model), as model inputs."""
        import torch

        features = dict(features)
        if "domain" in self.forward_options:
            index = list(self.transformer.config.domains).index(self.forward_options["domain"])
            domain_ids = torch.full((len(features["input_ids"]),), index, dtype=torch.long, device=self.device)
            features = with_domains(features, self.transformer.config, domain_ids)
        return features

    @property
    def task_formats(self) -> tuple[str, ...]:
        """The formats the model embeds differently (empty for a single-embedding model). A
        sentence-transformers model with format routes (:mod:`sciembed.formats.format_routes`) has those of its
        routes."""
        if self._routes:
            return tuple(self._routes)
        return model_formats(self.transformer)

    @property
    def _routes(self) -> dict[str, str]:
        """A sentence-transformers model's format routes: ``{format: route}`` (empty without a Router)."""
        # Checked by class name so that plain transformers models never import sentence_transformers.
        st = getattr(self, "_sentence_transformer", None)
        routers = [module for module in st or () if type(module).__name__ == "Router"]
        return {
            modules[0].task_format: route
            for router in routers
            for route, modules in router.sub_modules.items()
            if modules and hasattr(modules[0], "task_format")
        }

    @property
    def domains(self) -> tuple[str, ...]:
        """The domains a mixture-of-experts model with domain routing knows (empty for other models)."""
        return tuple(getattr(self.transformer.config, "domains", None) or ())

    def with_domain(self, domain: str) -> PaperEncoder:
        """This encoder (same model, no copy of the weights) routing every paper to ``domain``'s expert."""
        other = copy.copy(self)
        other.forward_options = self._forward_options(self.forward_options.get("task_format"), domain)
        return other

    def with_format(self, task_format: str | None) -> PaperEncoder:
        """This encoder (same model, no copy of the weights) embedding in ``task_format``."""
        other = copy.copy(self)
        other.forward_options = self._forward_options(task_format, self.forward_options.get("domain"))
        return other

    def with_quantization(self, quantization: WeightQuantization, *, gated: bool = True) -> PaperEncoder:
        """This ONNX or OpenVINO encoder (same model and cache) running the ``quantization`` model. ``gated=False``
        (for the int8 gate only) runs int8 before it has passed."""
        if self._engine is None:
            raise ValueError("quantization is for backend='onnx' or backend='openvino'")
        check_backend(self.backend, quantization)
        other = copy.copy(self)
        other._engine = make_engine(
            self.backend, quantization, self.engine_cache, threads=self._engine.threads, gated=gated
        )
        return other

    onnx_cache = RemovedAttribute("sciembed.PaperEncoder", ENGINE_CACHE)
    openvino_cache = RemovedAttribute("sciembed.PaperEncoder", ENGINE_CACHE)

    @property
    def quantization(self) -> str:
        """``"fp32"``, or the int8 kind of an ONNX or OpenVINO model's weights."""
        return self._engine.quantization if self._engine is not None else WeightQuantization.FP32

    @property
    def _non_finite_remedy(self) -> str:
        if self.quantization != WeightQuantization.FP32:
            return (
                f"nothing was kept; try --onnx-quantization fp32 (quantization='fp32'): "
                f"{self.quantization} can overflow where fp32 does not"
            )
        return (
            "nothing was kept; the model computes NaN or infinity (damaged weights, a training run that diverged): "
            "check its weights or load another checkpoint"
        )

    def fingerprint(self) -> str:
        """A hash of everything that decides the vectors.

        Weights, config, pooling, length, options, and the backend when it is not PyTorch (ONNX Runtime's and
        OpenVINO's vectors differ from PyTorch's in the last bits, int8's more, and OpenVINO's int8 with the papers it
        was calibrated on and the precision of its float operations).

        Two encoders with equal fingerprints give equal vectors for equal texts, so vectors may be
        cached under it (the evaluation cache does).
        """
        if self._engine is None:
            return self.model_fingerprint()
        model = self.model_fingerprint()
        label = f"{model}:{self.backend}:{self.quantization}"
        if self.backend == Backend.OPENVINO and self.quantization == WeightQuantization.INT8:
            from .openvino_backend import inference_precision

            # Where the CPU has bfloat16, int8's float operations run in it and its vectors differ.
            precision = inference_precision(self.quantization)
            label += f":{self._engine.calibration_digest(model)}:{precision.value}"
        return hashlib.sha256(label.encode()).hexdigest()

    def model_fingerprint(self) -> str:
        """The fingerprint of the PyTorch encoder.

        The ONNX and OpenVINO models are made from this encoder and cached under its fingerprint.
        """
        import torch

        digest = hashlib.sha256()
        settings = {
            # Where the model was read from does not decide its vectors.
            "config": {k: v for k, v in self.transformer.config.to_dict().items() if k != "_name_or_path"},
            "modules": repr(self.model) if self._sentence_transformer is not None else None,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "facets": self.facets,
            "sep_token": self.sep_token,
            "forward_options": self.forward_options,
        }
        digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
        for name, tensor in sorted(self.model.state_dict().items()):
            digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
            digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
        return digest.hexdigest()

    def _encode(
        self,
        papers: list[Mapping[str, Any] | str],
        *,
        batch_size: int | None,
        show_progress_bar: bool,
        progress_desc: str,
    ) -> np.ndarray:
        """Embed ``papers`` (paper records or ready-made texts). Returns float32 ``(len(papers), dim)``
        (``(len(papers), K, dim)`` with ``facets``) in input order."""
        import torch

        batch_size = self.default_batch_size if batch_size is None else batch_size
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        texts = self.texts(papers)
        if not texts:
            raise ValueError("no papers to encode")
        texts = cut_texts(texts, self.tokenizer, self.max_length)
        padding = self._batch_padding()
        tokens = TokenIds.of(self.tokenizer, texts, self.max_length, keep=padding is not None)
        order = tokens.longest_first()
        vectors: np.ndarray | None = None
        with (
            torch.inference_mode(),
            tqdm(total=len(texts), desc=progress_desc, unit="paper", disable=not show_progress_bar) as progress,
        ):
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                if padding is None:
                    features = self.features([texts[i] for i in rows])
                else:
                    features = self._routed(self._padded(tokens, rows, padding))
                if self._engine is not None:
                    embeddings = self._engine.session(self)(features)
                else:
                    embeddings = self._float32(self.forward(features))
                check_finite(
                    embeddings,
                    lambda bad, rows=rows: [_paper_name(papers, i) for i in rows[bad]],
                    f"model {self.name_or_path}",
                    self._non_finite_remedy,
                )
                if vectors is None:
                    vectors = np.empty((len(texts), *embeddings.shape[1:]), dtype=np.float32)
                vectors[rows] = embeddings
                progress.update(len(rows))
        return vectors

    def _float32(self, embeddings: torch.Tensor) -> np.ndarray:
        """A batch of the model's vectors as float32. Unit vectors computed in a lower dtype made unit length again.

        Args:
            embeddings: the output of :meth:`forward`.
        """
        import torch

        embeddings = embeddings.float()
        if embeddings.dtype != self.transformer.dtype and not self.facets:
            modules = list(self._sentence_transformer or ())
            if self.normalize or any(type(module).__name__ == "Normalize" for module in modules):
                embeddings = torch.nn.functional.normalize(embeddings, dim=-1)
        return embeddings.cpu().numpy()

    def _batch_padding(self) -> BatchPadding | None:
        """How stored token ids become a batch equal to :meth:`features`' (``None``: tokenize each batch again).

        A sentence-transformers model with format routes tokenizes each batch itself. For any other model, probe texts
        are tokenized both ways once per ``max_length`` and padding side, and the ids are used only where they agree.
        """
        key = (self.max_length, self.tokenizer.padding_side, self.tokenizer.pad_token_id)
        found = self.__dict__.setdefault("_batch_paddings", {})
        if key not in found:
            found[key] = None if self._routes else self._probe_padding()
        return found[key]

    def _probe_padding(self) -> BatchPadding | None:
        """The :class:`BatchPadding` that gives :meth:`_tokenized`'s batch of probe texts, if one does."""
        import torch

        padding = tokenizer_padding(self.tokenizer)
        if padding is None:
            return None
        texts = [" ".join(["paper"] * (self.max_length + 1)), "x", "Graph neural networks"]
        tokens = TokenIds.of(self.tokenizer, texts, self.max_length)
        expected = self._tokenized(texts)
        extras = {key: value for key, value in expected.items() if isinstance(value, str)}
        if not set(tokens.values) <= set(padding.values):
            return None
        batch = BatchPadding(padding, extras)
        got = self._padded(tokens, np.arange(len(texts)), batch)
        same = got.keys() == expected.keys() and all(
            value == got[key]
            if key in extras
            else isinstance(value, torch.Tensor) and value.dtype == got[key].dtype and torch.equal(value, got[key])
            for key, value in expected.items()
        )
        return batch if same else None

    def _padded(self, tokens: TokenIds, rows: np.ndarray, batch: BatchPadding) -> dict[str, Any]:
        """The stored ids of the texts at ``rows``, as padded tensors on the device.

        They are what :meth:`_tokenized` gives for those texts.

        Args:
            tokens: the texts' ids.
            rows: positions of the batch's texts.
            batch: how the ids are padded, and the other entries of a batch.
        """
        import torch

        arrays = tokens.padded(rows, batch.padding)
        return {**{key: torch.from_numpy(a).to(self.device) for key, a in arrays.items()}, **batch.extras}

    def features(self, texts: list[str]) -> dict[str, Any]:
        """The model inputs of one batch of ``texts``, as tensors on the encoder's device.

        The texts are padded to the batch's longest, truncated to ``max_length`` and routed to the encoder's domain.
        """
        return self._routed(self._tokenized(texts))

    def _tokenized(self, texts: list[str]) -> dict[str, Any]:
        """One batch of ``texts`` through the model's own preprocessing, as tensors on its device."""
        import torch

        if self._sentence_transformer is not None:
            st = self._sentence_transformer
            # A model with format routes (sciembed.formats.format_routes) picks its format by route.
            routes = self._routes
            route = {"task": routes[self.forward_options.get("task_format") or DOCUMENT_FORMAT]} if routes else {}
            features = st.preprocess(texts, processing_kwargs={"text": {"max_length": self.max_length}}, **route)
            features = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        else:
            features = self.tokenizer(
                texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            ).to(self.device)
        return dict(features)

    def forward(self, features: Mapping[str, Any]) -> torch.Tensor:
        """The paper embeddings of the PyTorch model on :meth:`features`' inputs, in the encoder's format.

        With ``facets`` they are facet vectors. The ONNX and OpenVINO backends export exactly this function.
        """
        format_options = (
            {} if self._routes else activate_format(self.transformer, self.forward_options.get("task_format"))
        )
        if self.facets:  # the facet vectors sit before any sentence-transformers module; the model takes the tensors
            tensors = {key: value for key, value in features.items() if hasattr(value, "dim")}
            return self.transformer(**tensors, **format_options).cls_embeddings
        if self._sentence_transformer is not None:
            st = self._sentence_transformer
            # The Transformer module passes keys that the model's forward accepts on to it.
            embeddings = st({**features, **format_options})["sentence_embedding"]
            return embeddings[:, : st.truncate_dim] if st.truncate_dim else embeddings
        outputs = self.model(**features, **format_options)
        return pool(outputs, features["attention_mask"], self.pooling, normalize=self.normalize)


def _paper_name(papers: Sequence[Mapping[str, Any] | str], index: int) -> str:
    """How an error names ``papers[index]``: its id, or its position and first words."""
    paper = papers[index]
    if isinstance(paper, Mapping) and paper.get("paper_id") is not None:
        return f"paper_id {str(paper['paper_id'])!r}"
    text = paper if isinstance(paper, str) else str(paper.get("title") or "")
    return f"paper #{index} {text[:40]!r}"


def with_domains(features: Mapping[str, Any], config: Any, domain_ids: torch.Tensor) -> dict[str, Any]:
    """Model inputs routed to the given domains of a mixture-of-experts model.

    Model inputs routed to the given domains (indices into ``config.domains``) of a mixture-of-experts model:
    ``domain_ids`` added and, where the model has domain tokens, the MoE paper's input, whose domain token takes the
    place of ``[CLS]``.
    """
    features = dict(features, domain_ids=domain_ids)
    if getattr(config, "domain_token_ids", None):
        input_ids = features["input_ids"].clone()
        input_ids[:, 0] = input_ids.new_tensor(config.domain_token_ids)[domain_ids]
        features["input_ids"] = input_ids
    return features


def default_pooling(model: Any) -> str:
    """The pooling :class:`PaperEncoder` uses by default for a transformers ``model``.

    It is the family's own embedding for sciembed's families, and ``[CLS]`` (SPECTER's choice) for any other encoder.
    """
    return FAMILY_POOLING if family_of(model) is not None else "cls"


def encode(
    model: Encoder | PreTrainedModel | SentenceTransformer | str | os.PathLike[str] | None,
    inputs: Papers,
    *,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    convert_to_numpy: bool = True,
    convert_to_tensor: bool = False,
    normalize_embeddings: bool = False,
    precision: OutputPrecision = "float32",
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    max_length: int | None = None,
    device: str | torch.device | None = None,
    pooling: Pooling | None = None,
    normalize: bool = False,
    trust_remote_code: bool = False,
    task_format: str | None = None,
    domain: str | None = None,
    backend: Backend | str = Backend.PYTORCH,
    quantization: WeightQuantization | None = None,
    revision: str | None = None,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    local_files_only: bool = False,
    model_kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """Embed papers with any supported model, as ``SentenceTransformer.encode`` does.

    It returns float32 ``(len(inputs), dim)`` in input order, or ``(dim,)`` for one text or record.

    A model given by name is loaded once and kept: a loop of ``sciembed.encode(name, ...)`` with the same name and
    loading options reuses it (the last model only, :func:`clear_model_cache` lets it go).

    Args:
        model: a :class:`PaperEncoder` (or any :class:`Encoder`), a transformers model, a ``SentenceTransformer``,
            or a Hub id / local path (``None``: the embedded all-MiniLM-L6-v2).
        inputs: paper records (``title`` / ``abstract``, see :func:`~sciembed.data.papers.paper_text`)
            or ready-made texts: one, or a list, tuple, generator or pandas DataFrame of them (its rows). Checked
            before a model is loaded (:func:`~sciembed.data.papers.paper_inputs`).
        batch_size, show_progress_bar, convert_to_numpy, convert_to_tensor: see :meth:`Encoder.encode`.
        normalize_embeddings, precision, ranges, calibration_embeddings: see :meth:`Encoder.encode`.
        tokenizer, max_length, device, pooling, normalize, task_format, domain, backend, quantization: see
            :class:`PaperEncoder` (an encoder already holds them, so they must be left unset with one).
        trust_remote_code, revision, token, cache_dir, local_files_only, model_kwargs: how a model given by name is
            loaded (:meth:`Encoder.from_pretrained`).

    Raises:
        TypeError: ``inputs`` is none of these (bytes, a number, ``None``, a set, ...), naming what was given.
        ValueError: an unknown ``precision``, or ``precision="int8"`` with the ONNX backend and no ``quantization``
            (which of the two int8s is meant).

    Example::

        >>> vectors = sciembed.encode(sciembed.default_model_path(), [{"title": "BERT", "abstract": "..."}])
    """
    return _embed(
        "encode",
        model,
        inputs,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
        convert_to_numpy=convert_to_numpy,
        convert_to_tensor=convert_to_tensor,
        normalize_embeddings=normalize_embeddings,
        precision=precision,
        ranges=ranges,
        calibration_embeddings=calibration_embeddings,
        tokenizer=tokenizer,
        max_length=max_length,
        device=device,
        pooling=pooling,
        normalize=normalize,
        trust_remote_code=trust_remote_code,
        task_format=task_format,
        domain=domain,
        backend=backend,
        quantization=quantization,
        revision=revision,
        token=token,
        cache_dir=cache_dir,
        local_files_only=local_files_only,
        model_kwargs=model_kwargs,
    )


def encode_query(
    model: Encoder | PreTrainedModel | SentenceTransformer | str | os.PathLike[str] | None,
    queries: Papers,
    **kwargs: Any,
) -> Any:
    """Embed search queries as :meth:`Encoder.encode_query` does (the ``adhoc_query`` format where the model has one).

    Args:
        model: as for :func:`encode`.
        queries: one query text (or record), or several.
        kwargs: the options of :func:`encode`.
    """
    return _embed("encode_query", model, queries, **kwargs)


def encode_document(
    model: Encoder | PreTrainedModel | SentenceTransformer | str | os.PathLike[str] | None,
    papers: Papers,
    **kwargs: Any,
) -> Any:
    """Embed search candidates as :meth:`Encoder.encode_document` does (the ``proximity`` format where the model has
    one).

    Args:
        model: as for :func:`encode`.
        papers: one paper record (or text), or several.
        kwargs: the options of :func:`encode`.
    """
    return _embed("encode_document", model, papers, **kwargs)


def clear_model_cache() -> None:
    """Let go of the model the top-level functions (:func:`encode`, ...) keep after loading it by name."""
    _LAST_LOADED.clear()


#: The model last loaded by name for the top-level functions: ``{key: encoder}``, one entry at most.
_LAST_LOADED: dict[str, Encoder] = {}


def _embed(
    method: str,
    model: Any,
    inputs: Papers,
    *,
    tokenizer: Any = None,
    max_length: int | None = None,
    device: Any = None,
    pooling: str | None = None,
    normalize: bool = False,
    task_format: str | None = None,
    domain: str | None = None,
    backend: str = "pytorch",
    quantization: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
    token: str | bool | None = None,
    cache_dir: Any = None,
    local_files_only: bool = False,
    model_kwargs: Mapping[str, Any] | None = None,
    precision: str = "float32",
    **encode_options: Any,
) -> Any:
    """``method`` (``encode``, ``encode_query``, ...) of the encoder ``model`` stands for, loaded once per name."""
    precision = check_precision(precision)
    if backend in (Backend.ONNX, Backend.OPENVINO) and quantization is None and precision is Precision.INT8:
        raise ValueError(
            f"precision='int8' quantizes the vectors; the {BACKEND_NAMES[backend]} model's int8 weights are "
            f"quantization='int8' (--onnx-quantization int8). Give quantization ('fp32' or 'int8') with "
            f"backend={backend!r} to say which"
        )
    items, single = paper_inputs(inputs, what="queries" if method == "encode_query" else "papers")  # before loading
    encoder_options = dict(
        pooling=pooling,
        normalize=normalize,
        max_length=max_length,
        device=device,
        task_format=task_format,
        domain=domain,
        backend=backend,
        quantization=quantization or "fp32",
    )
    loading = dict(
        trust_remote_code=trust_remote_code,
        revision=revision,
        token=token,
        cache_dir=cache_dir,
        local_files_only=local_files_only,
        model_kwargs=model_kwargs,
    )
    if isinstance(model, Encoder):
        defaults = {"backend": "pytorch", "quantization": "fp32"}
        given = [
            name
            for name, value in {**encoder_options, **loading, "tokenizer": tokenizer}.items()
            if value and value != defaults.get(name)
        ]
        if given:
            raise ValueError(f"an encoder holds its own settings; set {', '.join(given)} when creating it")
        encoder = model
    elif model is None or isinstance(model, (str, os.PathLike)):
        if tokenizer is not None:
            raise ValueError("pass a tokenizer only with a loaded model; a path loads its own")
        name = str(model) if model is not None else default_model_path()
        key = json.dumps([name, encoder_options, loading], sort_keys=True, default=str)
        if key not in _LAST_LOADED:
            _LAST_LOADED.clear()  # the old model goes before the new one loads
            _LAST_LOADED[key] = Encoder.from_pretrained(name, **loading, **encoder_options)
        encoder = _LAST_LOADED[key]
    else:
        if any(value for value in loading.values()):
            raise ValueError("loading options (revision, token, model_kwargs, ...) are for a model given by name")
        encoder = PaperEncoder(model, tokenizer, **encoder_options)
    vectors = getattr(encoder, method)(items, precision=precision, **encode_options)
    return vectors[0] if single else vectors


def default_max_length(model: Any, tokenizer: Any) -> int:
    """Tokens per text a transformers ``model`` takes by default.

    The tokenizer's limit (checked by :func:`folder_window`), capped by the position embeddings less the tokens a
    family inserts itself, at most 512.
    """
    source = f"{Path(str(tokenizer.name_or_path)) / 'tokenizer_config.json'}: model_max_length"
    window = folder_window(tokenizer.model_max_length, source)
    return min(window or 512, position_limit(model), 512)


def check_max_length(max_length: Any, tokenizer: Any, setting: str = "--max-length (max_length=)") -> None:
    """Refuse an explicit ``max_length`` that cannot hold any text.

    Refuse an explicit ``max_length`` that is not a whole number or holds no token of text beside the special tokens
    ``tokenizer`` adds to every text (every paper would get the same vector).

    Args:
        max_length: the tokens per text asked for.
        tokenizer: the model's tokenizer.
        setting: how the error names the setting that gave it.

    Raises:
        ValueError: naming the value, the special tokens and ``setting``.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, numbers.Integral):
        raise ValueError(f"{setting} is a whole number of tokens, got {max_length!r}")
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    if max_length <= specials:
        raise ValueError(
            f"{setting} {max_length} leaves no room for text: the tokenizer adds {specials} special token(s) to "
            f"every text, so every paper would get the same vector; give {setting} above {specials}"
        )


def position_limit(model: Any) -> int:
    """The tokens of text a transformers ``model`` takes.

    That is its position embeddings less the tokens a family inserts itself (extra CLS tokens, a control code).
    """
    return getattr(model.config, "max_position_embeddings", 512) - getattr(model, "num_inserted_tokens", 0)


def _model_kwargs(model_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``model_kwargs`` for transformers' ``from_pretrained``, ``torch_dtype`` under its current name ``dtype``."""
    options = dict(model_kwargs or {})
    if "torch_dtype" in options:
        if "dtype" in options:
            raise ValueError("model_kwargs gives both torch_dtype and dtype; give one")
        options["dtype"] = options.pop("torch_dtype")
    return options


#: What the entry points that take a model take: an encoder, a Hub id or local folder, a function that loads the
#: encoder (called once the input is checked), or ``None`` for the embedded default.
ModelArgument = Encoder | str | os.PathLike[str] | Callable[[], Encoder] | None


def resolve_encoder(model: ModelArgument) -> Encoder:
    """The encoder ``model`` stands for, loaded if need be.

    That is the encoder itself, what a loading function returns, or the model of that name loaded with
    :meth:`Encoder.from_pretrained`'s defaults.

    Args:
        model: an encoder, a name, a function returning an encoder, or ``None`` (the embedded default).

    Raises:
        TypeError: a function that returned something other than an encoder.
    """
    if isinstance(model, Encoder):
        return model
    if model is None or isinstance(model, (str, os.PathLike)):
        return Encoder.from_pretrained(model)
    encoder = model()
    if not isinstance(encoder, Encoder):
        raise TypeError(f"the function given as the model returned {type(encoder).__name__}, not an Encoder")
    return encoder


#: Options that load or set up an encoder: the entry points that take a model take an encoder built with them.
ENCODER_OPTIONS = (
    "device",
    "max_length",
    "pooling",
    "normalize",
    "task_format",
    "domain",
    "backend",
    "quantization",
    "trust_remote_code",
    "revision",
    "token",
    "cache_dir",
    "local_files_only",
    "model_kwargs",
    "loading",
)


def refuse_encoder_options(function: str, given: Mapping[str, Any], *, moved: Mapping[str, str] | None = None) -> None:
    """Refuse keyword arguments ``function`` does not take, and say how to give encoder options.

    Args:
        function: the entry point's name, as the message shows it (``neighbours``, ``evaluate``, ...).
        given: the keyword arguments it did not take.
        moved: options ``function`` takes inside another argument, and how to write that argument.

    Raises:
        TypeError: for an encoder option, naming :meth:`Encoder.from_pretrained`. For a moved option, naming its
            argument. For any other, as Python does.
    """
    for name in given:
        if moved and name in moved:
            raise TypeError(f"{function}() takes {name} inside another argument: {moved[name]}")
        if name not in ENCODER_OPTIONS:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
        setting = "**loading" if name == "loading" else f"{name}=..."
        raise TypeError(
            f"{function}() no longer takes {name}=; load the model with "
            f"sciembed.Encoder.from_pretrained(name, {setting}) and pass it"
        )


def _is_sentence_transformer(model: Any) -> bool:
    # Checked by class name so that plain transformers models never import sentence_transformers.
    return any(cls.__name__ == "SentenceTransformer" for cls in type(model).__mro__)
