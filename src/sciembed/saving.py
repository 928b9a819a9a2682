"""Saving a model folder that loads back as the same encoder.

The folder holds the weights, the tokenizer and the embedding the encoder is used in.

:func:`save_model` is what :meth:`sciembed.PaperEncoder.save_pretrained` and training's
:func:`~sciembed.training.run.save_trained` write: format modules beside a clean base, a family model with its
remote code, or a plain transformers model with sentence-transformers modules (Transformer, Pooling, Normalize).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def save_model(
    model: Any,
    tokenizer: Any,
    folder: str | os.PathLike[str],
    *,
    pooling: str | None,
    normalize: bool,
    max_length: int | None,
) -> Path:
    """Write ``model`` and ``tokenizer`` to ``folder`` so that :meth:`~sciembed.PaperEncoder.from_pretrained` embeds
    as they were used.

    Args:
        model: a transformers model (a family model, or one with format adapters or PALs).
        tokenizer: its tokenizer.
        folder: where to write (created, files there are replaced).
        pooling: ``cls`` or ``mean`` for a plain transformers model (sentence-transformers modules record it).
        normalize: the vectors are L2-normalised.
        max_length: the window the model is used with.
    """
    from .families import family_of
    from .families import save_pretrained as save_family
    from .formats import save_with_format_modules

    folder = Path(folder)
    if save_with_format_modules(model, folder):
        tokenizer.save_pretrained(folder)
    elif family_of(model) is not None:
        save_family(model, tokenizer, folder, normalize=normalize, max_seq_length=max_length)
    else:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    # An encoder records the embedding it is used in; so does a classifier (head + encoder, one model), whose
    # encoder is what sentence-transformers loads from the folder (AutoModel: the encoder alone).
    if family_of(model) is None and pooling in ("cls", "mean"):
        save_sentence_transformers_modules(folder, pooling, normalize, max_length)
    return folder


def save_sentence_transformers_modules(folder: Path, pooling: str, normalize: bool, max_length: int | None) -> None:
    """Add sentence-transformers' module files to a saved model's ``folder``.

    Add sentence-transformers' module files (Transformer + Pooling + Normalize) to a saved model's ``folder``, leaving
    its model files alone: sentence-transformers saves the encoder it loaded, which for a classifier is the encoder
    without its head. The tokenizer's config is sentence-transformers' too: version 6 keeps the window there
    (``model_max_length``), where a base saved by an earlier version (all-MiniLM-L6-v2: 256 in its
    ``sentence_bert_config.json``, 512 in its tokenizer's) would otherwise leave the tokenizer's limit.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformer = Transformer(str(folder), max_seq_length=max_length)
    modules = [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)] + (
        [Normalize()] if normalize else []
    )
    with tempfile.TemporaryDirectory() as written:
        SentenceTransformer(modules=modules, device="cpu").save(written, create_model_card=False)
        module_files = json.loads((Path(written) / "modules.json").read_text(encoding="utf-8"))
        names = [
            "modules.json",
            "config_sentence_transformers.json",
            "sentence_bert_config.json",
            "tokenizer_config.json",
        ]
        names += [module["path"] for module in module_files if module["path"]]
        for name in names:
            source = Path(written) / name
            if source.is_dir():
                shutil.copytree(source, folder / name, dirs_exist_ok=True)
            elif source.is_file():
                shutil.copy2(source, folder / name)
