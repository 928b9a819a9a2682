"""Options that several subcommands take, declared once, with their choices read from the library."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from ..backends import BACKENDS, WEIGHT_QUANTIZATIONS, Backend, WeightQuantization, check_backend
from ..data.smart import LINK_READINGS
from ..encode import CPU_BATCH_SIZE, GPU_BATCH_SIZE, POOLINGS, Encoder
from ..formats.names import FORMATS
from ..io import check_input

#: The shared data folder of this project's machines: where `make demo` and `sciembed neighbours` look first.
DEFAULT_DATA = "../shared/data"

#: Weight dtypes ``--dtype`` takes (transformers' ``dtype`` names).
DTYPES = ("float32", "float16", "bfloat16")


class _Renamed(argparse.Action):
    """A renamed option: the old name stops with a message naming the new one."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ):
        parser.error(
            f"{option} is now --onnx-quantization (fp32 or int8, the ONNX or OpenVINO model's weights); the vectors' "
            "precision (float32, int8, uint8, binary, ubinary) is encode(precision=) in Python"
        )


_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "model": ("--model", {"help": "Hub id or local folder (default: the embedded all-MiniLM-L6-v2)"}),
    "pooling": (
        "--pooling",
        {
            "choices": POOLINGS,
            "help": "pooling of a plain transformers model (default: the model's own; CLS "
            "for BERT as SPECTER); a sentence-transformers folder is then read as a plain transformer at its "
            "own max_seq_length",
        },
    ),
    "task_format": (
        "--task-format",
        {"choices": FORMATS, "help": "format of a multi-format model (default: the model's own)"},
    ),
    "domain": (
        "--domain",
        {"help": "domain of a mixture-of-experts model with domain routing (one of its config's domains)"},
    ),
    "max_length": ("--max-length", {"type": int, "help": "tokens per text (default: the model's limit, at most 512)"}),
    "batch_size": (
        "--batch-size",
        {
            "type": int,
            "help": f"texts per forward pass (default: {CPU_BATCH_SIZE} on CPU, {GPU_BATCH_SIZE} on GPU)",
        },
    ),
    "device": ("--device", {"help": "cpu, cuda, cuda:1, ... (default: cuda when available, else cpu)"}),
    "trust_remote_code": (
        "--trust-remote-code",
        {
            "action": "store_true",
            "help": "let the model run code that is not sciembed's own (what its configs' auto_map or module "
            "classes name, in its folder, on the Hub or elsewhere); without it such a model is refused, naming "
            "the entries",
        },
    ),
    "no_progress": (
        "--no-progress",
        {"action": "store_true", "help": "hide sciembed's progress bars (with -v, the libraries' bars too)"},
    ),
    "backend": (
        "--backend",
        {
            "choices": BACKENDS,
            "default": "pytorch",
            "help": "pytorch; onnx: ONNX Runtime on CPU "
            "(needs sciembed[onnx]), from an export of the model made once and cached under "
            "$SCIEMBED_CACHE/onnx; or openvino: that export run by OpenVINO on CPU (needs sciembed[openvino]), "
            "cached under $SCIEMBED_CACHE/openvino; threads = physical cores ($SCIEMBED_ONNX_THREADS overrides)",
        },
    ),
    "onnx_quantization": (
        "--onnx-quantization",
        {
            "choices": WEIGHT_QUANTIZATIONS,
            "default": "fp32",
            "help": "the weights of --backend onnx or openvino: int8 (onnx: dynamically quantised; openvino: NNCF's "
            "post-training quantization calibrated on the --int8-check-set papers) or int8_weights (openvino: int8 "
            "weights only) or bf16 (openvino: the fp32 model in bfloat16 arithmetic, on CPUs with AVX-512 BF16 or "
            "AMX), refused until they pass the int8 gate (sciembed embed / evaluate --int8-check-set)",
        },
    ),
    "revision": (
        "--revision",
        {"help": "with a Hub id: the branch, tag or commit to load (default: main); the commit is recorded"},
    ),
    "dtype": (
        "--dtype",
        {
            "choices": DTYPES,
            "help": "the weights' dtype (default: as saved, float32 on CPU); vectors are float32 whatever it is",
        },
    ),
    "int8_check_set": (
        "--int8-check-set",
        {
            "metavar": "FOLDER",
            "help": "run the int8 gate first: a held-out CACM (or "
            "SciDocs, see --int8-check-benchmark) folder whose cite MAP with int8 must stay "
            "within 0.5 points of fp32; the verdict is kept with the export",
        },
    ),
    "smart_links": (
        "--smart-links",
        {
            "choices": LINK_READINGS,
            "default": "cacm",
            "help": "how a SMART collection's .X lines "
            "(id, middle column, id) are read: cacm, the middle column is CACM's link type (5 citation, "
            "6 co-citation, 4 coupling) and any other value is refused; all, every pair is a citation "
            "link whatever its middle column (CISI, whose middle column is a weight)",
        },
    ),
    "long_documents": (
        "--long-documents",
        {
            "action": "store_true",
            "help": "embed a paper longer than the model's window window by window (the title at the head of each) "
            "and average the windows' vectors, instead of cutting it at the window",
        },
    ),
    "window_tokens": (
        "--window-tokens",
        {"type": int, "help": "with --long-documents: tokens per window (default: the model's window)"},
    ),
    "window_overlap": (
        "--window-overlap",
        {"type": int, "default": 32, "help": "with --long-documents: tokens each window shares with the one before"},
    ),
    "window_combine": (
        "--window-combine",
        {
            "choices": ("mean", "tokens"),
            "default": "tokens",
            "help": "with --long-documents: the windows' mean weighted by their text tokens (default), or plain",
        },
    ),
    "text_fields": (
        "--text-fields",
        {
            "nargs": "+",
            "metavar": "FIELD",
            "help": "the paper fields that make its text, in order (default: title abstract; title abstract body "
            "for full texts, with --long-documents)",
        },
    ),
    "int8_check_benchmark": (
        "--int8-check-benchmark",
        {"choices": ("cacm", "scidocs"), "default": "cacm", "help": "the kind of --int8-check-set folder"},
    ),
    "cache_dir": (
        "--cache-dir",
        {
            "help": "embedding cache folder, shared by embed and evaluate (default: $SCIEMBED_CACHE or "
            "$HF_HOME/sciembed/embeddings)"
        },
    ),
    "no_cache": (
        "--no-cache",
        {"action": "store_true", "help": "keep vectors in memory for this run only (the embedding cache unused)"},
    ),
}


#: Options that come with another: how a model given by name loads; the old name of ``--onnx-quantization``.
_COMPANIONS = {"model": ("revision", "dtype")}


def add_options(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add the shared options ``names`` (keys of the table above, e.g. ``"model"``, ``"batch_size"``) to ``parser``."""
    for name in names:
        flag, settings = _OPTIONS[name]
        parser.add_argument(flag, **settings)
        for companion in _COMPANIONS.get(name, ()):
            add_options(parser, companion)
        if name == "onnx_quantization":
            parser.add_argument("--precision", action=_Renamed, help=argparse.SUPPRESS)


def loading_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The Hub loading options (``revision``, ``model_kwargs``) of ``--revision`` and ``--dtype``."""
    loading: dict[str, Any] = {"revision": getattr(args, "revision", None)}
    if getattr(args, "dtype", None):
        loading["model_kwargs"] = {"torch_dtype": args.dtype}
    return loading


#: Encoder settings a subcommand may take (``--max-length``, ``--pooling``, ...), by their ``args`` name.
#: The options that say how papers are embedded, and their defaults: with vectors read from a file none takes effect.
MODEL_OPTIONS = {
    "model": None,
    "pooling": None,
    "max_length": None,
    "batch_size": None,
    "device": None,
    "domain": None,
    "backend": "pytorch",
    "onnx_quantization": "fp32",
    "revision": None,
    "dtype": None,
    "int8_check_set": None,
    "long_documents": False,
    "window_tokens": None,
    "text_fields": None,
    "trust_remote_code": False,
    "cache_dir": None,
    "no_cache": False,
}


#: The options of the embedding cache, which a command reading vectors may still use for what it embeds.
CACHE_OPTIONS = ("cache_dir", "no_cache")


def refuse_model_options(args: argparse.Namespace, source: str, keep: tuple[str, ...] = ()) -> None:
    """Refuse options that embed papers beside an option that reads their vectors (``--embeddings``, ``--index``).

    Args:
        args: the parsed options.
        source: the option that reads the vectors, and from where: ``--embeddings (the vectors are read from F)``.
        keep: options that still take effect, not refused.
    """
    given = [
        f"--{name.replace('_', '-')}"
        for name, default in MODEL_OPTIONS.items()
        if name not in keep and getattr(args, name, default) != default
    ]
    if given:
        option = source.split(" ", 1)[0]
        raise ValueError(
            f"{', '.join(given)}: with {source} nothing is embedded; give --model and its options, or {option} alone"
        )


_ENCODER_SETTINGS = ("max_length", "pooling", "task_format", "domain")


def encoder_from_args(args: argparse.Namespace, *, device: str | None = None) -> Encoder:
    """The encoder the shared options describe, loaded once through :meth:`sciembed.Encoder.from_pretrained`.

    With ``--int8-check-set`` the int8 gate runs first and a failed gate stops the command.

    Args:
        args: the parsed options (``--model``, ``--device``, ``--max-length``, ``--revision``, ..., those the
            subcommand has).
        device: where to run when ``--device`` is not given (a rank's own GPU under torchrun).
    """
    check_engine_cache(args)
    backend = getattr(args, "backend", Backend.PYTORCH)
    quantization = getattr(args, "onnx_quantization", WeightQuantization.FP32)
    if (backend, quantization) != (Backend.PYTORCH, WeightQuantization.FP32):  # before the model loads, in its names
        try:
            check_backend(backend, quantization, getattr(args, "device", None))
        except (ValueError, ImportError) as error:  # a missing extra too: one line naming the install
            raise ValueError(f"--backend {backend} --onnx-quantization {quantization}: {error}") from None
    if getattr(args, "int8_check_set", None):  # before the model loads and its ONNX graph is built
        if quantization == WeightQuantization.FP32:
            raise ValueError(
                "--int8-check-set checks int8: give --backend onnx or openvino, and --onnx-quantization int8 (or "
                "int8_weights or bf16 with openvino), with it"
            )
        check_input(args.int8_check_set, "--int8-check-set", "any")
    settings = {name: getattr(args, name) for name in _ENCODER_SETTINGS if getattr(args, name, None) is not None}
    encoder = Encoder.from_pretrained(
        args.model,
        device=getattr(args, "device", None) or device,
        trust_remote_code=args.trust_remote_code,
        backend=backend,
        quantization=quantization,
        **loading_from_args(args),
        **settings,
    )
    if getattr(args, "int8_check_set", None):
        from ..encode import PaperEncoder
        from ..evaluation.int8_gate import check_int8

        if not isinstance(encoder, PaperEncoder):
            raise ValueError(f"the int8 gate checks one model; {args.model} is an ensemble (check each member)")
        verdict = check_int8(
            encoder,
            args.int8_check_set,
            benchmark=args.int8_check_benchmark,
            show_progress_bar=not getattr(args, "no_progress", False),
        )
        if not verdict.passed:
            raise ValueError(
                f"{quantization} refused for {args.model or 'the default model'}: {verdict.reason} on "
                f"{args.int8_check_set} "
                f"(min cosine to fp32 {verdict.min_cosine}); use --onnx-quantization fp32"
            )
        logging.getLogger(__name__).info(
            "int8 gate passed: %s; min cosine to fp32 %s", verdict.reason, verdict.min_cosine
        )
    return _with_windows(encoder, args)


def check_engine_cache(args: argparse.Namespace) -> None:
    """Refuse an engine cache that cannot be written, before the model loads.

    Only ``--backend onnx`` and ``openvino`` use the cache.

    Args:
        args: the parsed options (``--backend``).
    """
    from ..backends import ENGINES

    backend = getattr(args, "backend", Backend.PYTORCH)
    if backend in ENGINES:
        from ..io import check_cache_dir

        check_cache_dir(
            kind=_ENGINE_CACHE_KINDS[backend],
            subfolder=ENGINES[backend].cache_name,
            remedy="set $SCIEMBED_CACHE to a folder that can be written, or use --backend pytorch",
        )


#: What each engine's cache holds, as its error names it.
_ENGINE_CACHE_KINDS = {Backend.ONNX: "ONNX export", Backend.OPENVINO: "OpenVINO model"}


def _with_windows(encoder: Any, args: argparse.Namespace) -> Any:
    """``encoder`` embedding long papers window by window (``--long-documents``) or from ``--text-fields``."""
    long_documents, fields = getattr(args, "long_documents", False), getattr(args, "text_fields", None)
    if getattr(args, "window_tokens", None) and not long_documents:
        raise ValueError("--window-tokens sets the windows of --long-documents: give both")
    if not long_documents and not fields:
        return encoder
    from ..encoders import WindowedEncoder, WindowSettings

    settings = WindowSettings(
        window=getattr(args, "window_tokens", None),
        overlap=getattr(args, "window_overlap", 32),
        combine=getattr(args, "window_combine", "tokens"),
        windows=long_documents,
        **({"text_fields": tuple(fields)} if fields else {}),
    )
    return WindowedEncoder(encoder, settings)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help with defaults shown, paragraphs wrapped, and text with line breaks kept line by line.

    A default is shown when there is one and the help does not state it. The epilog's examples keep their lines.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        # No "(default: None)", "(default: [])" or "(default: False)", and none after a text that states its default.
        unstated = action.default is None or action.default is False or action.default == []
        if unstated or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)
