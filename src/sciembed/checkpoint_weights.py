"""Whether a checkpoint's weights are the model its ``config.json`` describes, checked before the model loads.

transformers starts a weight the config asks for but the checkpoint lacks at random, and drops a weight of the
checkpoint the model has no place for, with a warning only: a config with more layers than the weights gives a model
whose last layers are random (two loads differ), one with fewer silently cuts the checkpoint's last layers off. A
weight of another shape is a ``RuntimeError`` with a page of report. :func:`check_weights_fit` builds the model on
the meta device (no memory, no weights read), asks transformers what loading the checkpoint into it would leave
missing, unexpected or mismatched, and refuses the checkpoint in one line when any of it matters. What is normal
passes: a pretraining checkpoint's heads (BERT's ``cls.*``, a language-model head) that the encoder has no module
for, a ``pooler`` an embedding pooled from hidden states never reads, and the buffers transformers itself ignores. An
encoder-decoder saved as its encoder alone (sentence-transformers' T5 models) is checked as the encoder its config
names.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

#: Keys named in an error, of each kind; the count of the rest follows.
SHOWN_KEYS = 3


def check_weights_fit(name_or_path: str, *, subfolder: str = "", trust_remote_code: bool = False) -> None:
    """Refuse a checkpoint whose weights do not cover the model its config describes.

    Args:
        name_or_path: a local model folder or a Hub id (as ``AutoModel.from_pretrained`` takes it).
        subfolder: the folder of the transformer inside it (a sentence-transformers module's path).
        trust_remote_code: as for the load that follows (the model class is the one it would build).

    Raises:
        ValueError: naming the folder, the first missing, unexpected and mismatched keys with their shapes, and
            what to correct.
    """
    import sciembed.modeling  # noqa: F401  (registers sciembed's families: their folders build without remote code)

    with _quiet():
        model, info = _model_class(name_or_path, subfolder, trust_remote_code).from_pretrained(
            name_or_path,
            subfolder=subfolder,
            trust_remote_code=trust_remote_code,
            device_map="meta",
            output_loading_info=True,
            ignore_mismatched_sizes=True,
        )
    shapes = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    modules = {name for name, _ in model.named_modules() if name}
    prefix = f"{model.base_model_prefix}." if model.base_model_prefix else ""
    missing = [key for key in info["missing_keys"] if "pooler" not in key.split(".")]
    unexpected = [key for key in info["unexpected_keys"] if _inside(key.removeprefix(prefix), modules)]
    mismatched = sorted(info["mismatched_keys"], key=lambda item: _natural(item[0]))
    if not (missing or unexpected or mismatched):
        return
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} weight(s) the config asks for are not in the checkpoint and would start at random ("
            + _listed(f"{key} {_shape(shapes.get(key))}" for key in sorted(missing, key=_natural))
            + ")"
        )
    if unexpected:
        problems.append(
            f"{len(unexpected)} weight(s) of the checkpoint have no place in the model and would be dropped ("
            + _listed(sorted(unexpected, key=_natural))
            + ")"
        )
    if mismatched:
        problems.append(
            f"{len(mismatched)} weight(s) differ in shape ("
            + _listed(
                f"{key} {_shape(saved)} saved vs {_shape(wanted)} configured" for key, saved, wanted in mismatched
            )
            + ")"
        )
    where = "/".join(filter(None, [str(name_or_path).rstrip("/"), subfolder]))
    raise ValueError(
        f"{where}: its weights do not fit its config.json: {'; '.join(problems)}. Correct config.json (layers, "
        "sizes) to describe the saved weights, or save the model again; nothing was loaded"
    )


def _model_class(name_or_path: str, subfolder: str, trust_remote_code: bool) -> Any:
    """The class the checkpoint is loaded as.

    The encoder class its config names for an encoder-decoder saved without its decoder (sentence-transformers' T5
    models, ``T5EncoderModel``), else ``AutoModel``.
    """
    import transformers
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(name_or_path, subfolder=subfolder, trust_remote_code=trust_remote_code)
    encoders = [getattr(transformers, name, None) for name in getattr(config, "architectures", None) or ()]
    return next((cls for cls in encoders if cls is not None and cls.__name__.endswith("EncoderModel")), AutoModel)


def _inside(key: str, modules: set[str]) -> bool:
    """Whether an unexpected ``key`` belongs in one of the model's own modules.

    Such a key belongs to a layer the config leaves out, not to a head the model does not have
    (``cls.predictions.bias``).
    """
    parts = key.split(".")[:-1]
    return any(".".join(parts[:end]) in modules for end in range(1, len(parts) + 1))


def _natural(key: str) -> list[Any]:
    """A sort key that puts ``layer.2`` before ``layer.10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", key) if part]


def _shape(shape: Iterable[int] | None) -> str:
    return "(shape unknown)" if shape is None else str(tuple(shape))


def _listed(items: Iterable[str]) -> str:
    items = list(items)
    more = f" and {len(items) - SHOWN_KEYS} more" if len(items) > SHOWN_KEYS else ""
    return ", ".join(items[:SHOWN_KEYS]) + more


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Turns transformers' progress bar and load report off for the check.

    The load that follows shows its own.
    """
    from transformers.utils import logging as transformers_logging

    bars = transformers_logging.is_progress_bar_enabled()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bars:
            transformers_logging.enable_progress_bar()
