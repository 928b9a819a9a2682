"""Multi-format models as sentence-transformers models: each task in its format.

SciRepEval (Singh et al. 2023) and SPECTER2 embed ad-hoc search queries in the ``adhoc_query`` format
(the ``[QRY]`` control code, SPECTER2's ``allenai/specter2_adhoc_query`` adapter), the candidate
papers in the ``proximity`` format (``[PRX]``, the ``allenai/specter2`` adapter), and papers to classify in
``classification`` or ``regression``. :func:`to_sentence_transformer` turns a multi-format sciembed model (a
control-code model, a BERT with format adapters or with PALs) into a ``SentenceTransformer`` whose ``encode_query``,
``encode_document`` and ``encode(..., task=format)`` give the vectors of :meth:`sciembed.PaperEncoder.encode_query`,
:meth:`~sciembed.PaperEncoder.encode_document` and :meth:`~sciembed.PaperEncoder.with_format`::

    st = to_sentence_transformer(model, tokenizer)
    queries = st.encode_query(["contrastive citation embeddings"])
    papers = st.encode_document([sciembed.paper_text(p, tokenizer.sep_token) for p in papers])
    labels_in = st.encode(texts, task="classification")

The modules are :mod:`sciembed.formats.format_routes`' (one Router route per format). ``st.save(folder)`` writes
them under sciembed's names, so that folder loads where sciembed is installed. :func:`add_format_routes` writes the
same modules into an exported model folder (what ``sciembed export`` does for multi-format models) with their code
beside the weights, so that ``SentenceTransformer(folder, trust_remote_code=True)`` loads it without sciembed.
(This module sits in ``encoders``, above ``encode``, because it reads a model's embedding through ``encode``.)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import sentence_transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Router
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..checkpoint_files import base_embedding
from ..encode import DOCUMENT_FORMAT, QUERY_FORMAT, PaperEncoder, default_max_length, default_pooling
from ..formats import format_routes, model_formats
from ..formats.format_routes import MultiFormatTransformer, TaskFormatInput
from ..formats.names import ROUTE_CODE_FILES, route_of

#: What the modules' classes are called in a folder that ships their code (sentence-transformers' custom modules).
_REMOTE_PREFIX = "format_routes."


def to_sentence_transformer(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    pooling: str | None = None,
    normalize: bool = False,
    max_seq_length: int | None = None,
    device: str | None = None,
) -> SentenceTransformer:
    """A ``SentenceTransformer`` with one route per format of ``model``.

    Queries (``encode_query``) in ``adhoc_query``, documents (``encode_document``, and ``encode`` without a task) in
    ``proximity`` (SPECTER2's general-purpose embedding), and ``encode(texts, task=f)`` in any other format ``f`` the
    model has.

    The vectors are :class:`sciembed.PaperEncoder`'s in the same format and embedding (``pooling``,
    ``normalize``, ``max_seq_length``). The model is shared, not copied: the SentenceTransformer moves it to
    ``device``. Save with ``st.save(folder)``.

    Args:
        model: a control-code model, or a transformers encoder with format adapters or PALs, with at least the
            ``adhoc_query`` and ``proximity`` formats.
        tokenizer: its tokenizer.
        pooling: ``"family"``, ``"cls"`` or ``"mean"``. By default sciembed's
            (:func:`sciembed.encode.default_pooling`): the family's embedding for sciembed's families, ``[CLS]``
            for any other encoder.
        normalize: L2-normalise the vectors (a Normalize module after the model), for a model trained in unit
            vectors.
        max_seq_length: tokens per text. By default :class:`sciembed.PaperEncoder`'s
            (:func:`sciembed.encode.default_max_length`).
        device: as for ``SentenceTransformer`` (by default CUDA when available).

    Raises:
        ValueError: the model lacks the ``adhoc_query`` or the ``proximity`` format (its formats are named).
    """
    formats = model_formats(model)
    missing = [f for f in (QUERY_FORMAT, DOCUMENT_FORMAT) if f not in formats]
    if missing:
        raise ValueError(
            f"{type(model).__name__} has no {' and no '.join(missing)} format (its formats: "
            f"{', '.join(formats) or 'none'}); queries take {QUERY_FORMAT} and documents {DOCUMENT_FORMAT}"
        )
    length = default_max_length(model, tokenizer) if max_seq_length is None else max_seq_length
    router = Router(
        {route_of(f): [TaskFormatInput(tokenizer, f, length)] for f in formats},
        default_route=route_of(DOCUMENT_FORMAT),
    )
    encoder = MultiFormatTransformer(model, pooling or default_pooling(model))
    return SentenceTransformer(modules=[router, encoder, *([Normalize()] if normalize else [])], device=device)


def add_format_routes(folder: str | os.PathLike[str], *, trust_remote_code: bool = False) -> list[str]:
    """Make the multi-format model in ``folder`` a sentence-transformers model.

    Make the multi-format model saved in ``folder`` (``config.json`` and weights at its root, format adapters or PALs
    beside them) a sentence-transformers model that loads without sciembed. Returns the files written.

    Writes :func:`to_sentence_transformer`'s modules for the folder's own embedding (the pooling, normalisation
    and window sciembed encodes it with, :func:`sciembed.checkpoint_files.base_embedding`) into the folder:
    ``modules.json`` with the Router and the model at the root (the model's files stay where they are), the
    Router's route folders, and the modules' code (:data:`ROUTE_CODE_FILES`), named the way sentence-transformers loads
    custom modules with ``trust_remote_code=True``. sentence-transformers files the folder had (a control-code
    model's single-embedding Transformer) are replaced.

    Raises:
        ValueError: the model has no ``adhoc_query`` or no ``proximity`` format.
    """
    folder = Path(folder)
    encoder = PaperEncoder.from_pretrained(folder, trust_remote_code=trust_remote_code, device="cpu")
    embedding = base_embedding(folder)
    st = to_sentence_transformer(
        encoder.transformer,
        encoder.tokenizer,
        pooling=embedding.pooling or default_pooling(encoder.transformer),
        normalize=embedding.normalize,
        max_seq_length=encoder.max_length,
        device="cpu",
    )
    _remove_sentence_transformers_files(folder)
    written = []
    router, model, *rest = st
    router.save(str(folder))
    config = json.loads((folder / router.config_file_name).read_text(encoding="utf-8"))
    config["types"] = {key: _remote_name(type(module)) for key, module in _route_modules(router).items()}
    (folder / router.config_file_name).write_text(json.dumps(config, indent=4), encoding="utf-8")
    written += [router.config_file_name, *(f"{key}/" for key in config["types"])]
    model.save_config(str(folder))
    written.append(model.config_file_name)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": _st_name(Router)},
        {"idx": 1, "name": "1", "path": "", "type": _remote_name(type(model))},
    ]
    for index, module in enumerate(rest, start=2):
        path = f"{index}_{type(module).__name__}"
        (folder / path).mkdir()
        module.save(str(folder / path))
        modules.append({"idx": index, "name": str(index), "path": path, "type": _st_name(type(module))})
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    settings = {
        "model_type": "SentenceTransformer",
        "__version__": {"sentence_transformers": sentence_transformers.__version__},
        "prompts": st.prompts,
        "default_prompt_name": st.default_prompt_name,
        "similarity_fn_name": st.similarity_fn_name,
    }
    (folder / "config_sentence_transformers.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    written += ["modules.json", "config_sentence_transformers.json", *(f"{m['path']}/" for m in modules[2:])]
    code = Path(format_routes.__file__).parent
    for name in ROUTE_CODE_FILES:
        shutil.copyfile(code / name, folder / name)
    return sorted(written + list(ROUTE_CODE_FILES))


def _route_modules(router: Router) -> dict[str, object]:
    """The Router's route modules by the folder name ``Router.save`` gives each."""
    return {
        f"{route}_{index}_{type(module).__name__}": module
        for route, modules in router.sub_modules.items()
        for index, module in enumerate(modules)
    }


def _remote_name(cls: type) -> str:
    return f"{_REMOTE_PREFIX}{cls.__name__}"


def _st_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__name__}"


def _remove_sentence_transformers_files(folder: Path) -> None:
    """Removes the sentence-transformers modules a folder had, which the routes replace.

    Those are a family model's Transformer at the root and the modules after it. The model's own files stay.
    """
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return
    for module in json.loads(modules_file.read_text(encoding="utf-8")):
        if module.get("path"):
            shutil.rmtree(folder / module["path"], ignore_errors=True)
    (folder / "sentence_bert_config.json").unlink(missing_ok=True)
