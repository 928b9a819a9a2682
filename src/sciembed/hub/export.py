"""Hub-ready model folders: what ``sciembed export`` writes and ``sciembed push`` uploads.

:func:`export_model` turns a saved model (a family from ``sciembed from-bert`` or ``sciembed train``, a
plain encoder, a model with format adapters or PALs, a SPECTROID classifier) into a folder that the Hub
serves as it is:

- weights as safetensors, ``config.json`` (with ``auto_map`` and the remote-code ``.py`` files for the
  families, so ``AutoModel.from_pretrained(id, trust_remote_code=True)`` works without sciembed), the
  tokenizer, sentence-transformers files where the model has them, format adapters in the adapters
  library's layout and PALs next to a clean base.
- ``README.md``: the model card rendered from ``hub_cards/`` with the evaluation results and the
  training run (:mod:`.cards`).

The folder is then checked before anyone uploads it (:func:`validate_export`): the card's YAML parses,
and a fresh Python process in which sciembed cannot be imported loads the model with ``AutoModel`` and
embeds a paper. The folder is written beside its destination and renamed when complete, so an
interrupted export never leaves a folder that looks finished.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checkpoint_files import base_embedding, has_sentence_transformers_modules
from ..checkpoints import check_published_code
from ..io import refuse_replacing, replace_folder
from .files import CARD_FILE, ONNX_FOLDER, hub_files

logger = logging.getLogger(__name__)
#: The files the loaders read to build a model, which an export cannot leave out.
_LOADED_FILES = frozenset(
    {
        "model.safetensors",
        "model.safetensors.index.json",
        "pytorch_model.bin",
        "config.json",
        "modules.json",
        "sentence_bert_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    }
)

#: Where sentence-transformers' ONNX backend looks for the model in a Hub folder.
ONNX_FILE = f"{ONNX_FOLDER}/model.onnx"


@dataclass
class ExportReport:
    """What :func:`export_model` wrote and checked."""

    folder: Path
    files: list[str]
    model_type: str
    validated: bool
    checks: list[str] = field(default_factory=list)
    #: Files of the model folder that were not exported, with why (:func:`~.files.hub_files`).
    left_out: dict[str, str] = field(default_factory=dict)


def export_model(
    model_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    evaluations: Sequence[Mapping[str, Any]] = (),
    training: Mapping[str, Any] | None = None,
    repo_id: str | None = None,
    license: str = "apache-2.0",
    name: str | None = None,
    dataset_names: Sequence[str | None] = (),
    validate: bool = True,
    trust_remote_code: bool = False,
    onnx: bool = False,
    overwrite: bool = False,
) -> ExportReport:
    """Write the Hub-ready folder of the model saved in ``model_dir`` to ``out_dir``.

    Args:
        model_dir: a saved model folder.
        out_dir: the folder to write. One that exists is refused (before any work) unless ``overwrite``, then replaced
            in one step.
        evaluations: results JSON dicts written by ``sciembed evaluate --output`` (the card's model-index).
        training: the ``train_results.json`` of the run that trained the model, when there is one.
        repo_id: the Hub id the card's usage code names (default: a placeholder).
        license: the card's licence.
        name: the model's name in the card's title and model-index (default: the last part of ``repo_id``, else
            the name of ``model_dir``, never ``out_dir``'s, which says where the export went, not what the model is).
        dataset_names: one name per evaluation for the data it was measured on (default: as
            :func:`~.cards.dataset_identity` names it from the report's source).
        validate: load the folder in a fresh process without sciembed and parse the card (see
            :func:`validate_export`). A failure raises and leaves ``out_dir`` untouched.
        trust_remote_code: export (and run, when validating) code the folder holds or names that is not
            sciembed's own. Without it, a folder whose ``.py`` files differ from those sciembed ships for its
            family (a tampered ``configuration_*.py``, say), or whose configs name code elsewhere or not
            sciembed's (:func:`sciembed.checkpoints.check_published_code`), is refused before anything of it runs.
        onnx: also write ``onnx/model.onnx`` (:func:`sciembed.onnx_backend.export_transformer`), which
            ``SentenceTransformer(folder, backend="onnx")`` loads. Plain transformers only.

    Raises:
        FileExistsError: ``out_dir`` exists and ``overwrite`` is false.
        FileNotFoundError: ``model_dir`` holds no ``config.json``.
        ValueError: the model has no weights, the folder fails validation (the reason is named), it holds or
            names code that is not sciembed's and ``trust_remote_code`` is false, or its ``modules.json`` names a
            folder outside it.
    """
    from .cards import render_model_card

    source, destination = Path(model_dir), Path(out_dir)
    config_path = source / "config.json"
    if not config_path.is_file():
        from ..checkpoint_files import transformer_path

        if (source / "modules.json").is_file() and (inner := Path(transformer_path(source))) != source:
            raise FileNotFoundError(
                f"{source}: its transformer sits in {inner.name}/ (the layout older sentence-transformers releases "
                "save), and export takes a folder with config.json at its root: save the model again with a current "
                f"release (SentenceTransformer({str(source)!r}).save_pretrained(NEW)) and export NEW"
            )
        raise FileNotFoundError(f"{source}: no config.json; export takes a saved model folder")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{config_path}: not a JSON model config ({error})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{config_path}: holds a JSON {type(config).__name__}, not a model config (an object)")
    check_published_code(source, trust_remote_code=trust_remote_code)
    try:
        same = source.resolve() == destination.resolve()
    except (OSError, RuntimeError):  # a symbolic-link loop on the way, which refuse_replacing names
        same = False
    if same:
        raise ValueError(f"{destination}: export writes a new folder; choose one other than the model's")
    refuse_replacing(destination, overwrite=overwrite)
    from ..encode import PaperEncoder

    PaperEncoder.check_checkpoint(str(source), trust_remote_code=trust_remote_code)  # named here, not in the copy
    if has_sentence_transformers_modules(str(source)):
        # The card and the remote code describe the embedding sciembed reproduces: named in the user's folder.
        base_embedding(
            source,
            remedy="export writes a card and remote code for those embeddings only; publish this model with "
            "sentence-transformers (SentenceTransformer(path).push_to_hub(repo_id)), which keeps its modules",
        )
    kept, left_out = hub_files(source)
    for stray, why in left_out.items():
        if why.startswith("a link to") and Path(stray).name in _LOADED_FILES:
            raise ValueError(
                f"{source / stray} is {why}; the export copies no file from outside the folder, and the model does not"
                " load without this one: copy the file itself into the model folder, replacing the link"
            )
    if left_out:
        shown = "; ".join(f"{name} ({why})" for name, why in list(left_out.items())[:8])
        logger.warning(
            "%s: left out %d file(s) that do not belong on the Hub: %s%s",
            source,
            len(left_out),
            shown,
            f"; and {len(left_out) - 8} more" if len(left_out) > 8 else "",
        )
    staging = destination.with_name(f".{destination.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        for file in kept:
            if file != CARD_FILE:  # the card is written anew
                (staging / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / file, staging / file)
        _to_safetensors(staging)
        if onnx:
            from ..onnx_backend import export_transformer

            done = export_transformer(staging, staging / ONNX_FILE)
            logger.info(
                "wrote %s (max abs difference to PyTorch %.2e)", ONNX_FILE, done["max_abs_difference_to_pytorch"]
            )
        routes = _add_routes(staging, trust_remote_code) if _has_task_formats(staging, config) else None
        model_type = config.get("model_type", "")
        card = render_model_card(
            staging,
            evaluations=evaluations,
            training=training,
            repo_id=repo_id,
            license=license,
            name=name or (repo_id.split("/")[-1] if repo_id else source.resolve().name),
            dataset_names=dataset_names,
        )
        card.save(staging / CARD_FILE)
        checks = (
            validate_export(staging, route_vectors=routes, trust_remote_code=trust_remote_code) if validate else []
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    replace_folder(staging, destination)
    files = sorted(str(p.relative_to(destination)) for p in destination.rglob("*") if p.is_file())
    logger.info(
        "exported %s (%s) to %s: %d files%s",
        source,
        model_type,
        destination,
        len(files),
        "; validated" if validate else "",
    )
    return ExportReport(destination, files, model_type, validate, checks, left_out)


def _to_safetensors(folder: Path) -> None:
    """Safetensors weights: a folder with only ``pytorch_model.bin`` is loaded and saved again."""
    if (
        (folder / "model.safetensors").is_file()
        or any(folder.glob("model-*.safetensors"))
        or not (folder / "pytorch_model.bin").is_file()
    ):
        return
    import torch
    from safetensors.torch import save_file

    state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    save_file(
        {k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"), metadata={"format": "pt"}
    )
    (folder / "pytorch_model.bin").unlink()


def _has_task_formats(folder: Path, config: Mapping[str, Any]) -> bool:
    """Whether the model in ``folder`` embeds in several formats (control codes, format adapters or PALs)."""
    from ..formats.adapters import has_format_adapters
    from ..formats.pals import has_saved_pals

    return bool(config.get("control_codes")) or has_format_adapters(folder) or has_saved_pals(folder)


#: Texts each format route embeds when an export is validated (their vectors are compared with sciembed's).
_ROUTE_TEXTS = (
    "Citation embeddings{sep}Papers that cite each other are embedded close together.",
    "garbage collection in list processing systems",
)


def _add_routes(folder: Path, trust_remote_code: bool) -> dict[str, Any] | None:
    """Give a multi-format model its sentence-transformers routes (:func:`sciembed.encoders.router.add_format_routes`).
    Returns the vectors sciembed gives :data:`_ROUTE_TEXTS` in each format, by route, for :func:`validate_export`
    to compare with sentence-transformers'. A model without both search formats (``adhoc_query`` and
    ``proximity``) gets no routes (logged) and returns None."""
    from ..encode import DOCUMENT_FORMAT, QUERY_FORMAT, PaperEncoder
    from ..encoders.router import add_format_routes
    from ..formats.names import route_of

    encoder = PaperEncoder.from_pretrained(folder, trust_remote_code=trust_remote_code, device="cpu")
    formats = encoder.task_formats
    if QUERY_FORMAT not in formats or DOCUMENT_FORMAT not in formats:
        logger.info(
            "%s: formats %s lack %s or %s, so no sentence-transformers query / document routes are written",
            folder.name,
            ", ".join(formats),
            QUERY_FORMAT,
            DOCUMENT_FORMAT,
        )
        return None
    texts = [text.format(sep=encoder.tokenizer.sep_token) for text in _ROUTE_TEXTS]
    vectors = {route_of(f): encoder.with_format(f).encode(texts, show_progress_bar=False).tolist() for f in formats}
    add_format_routes(folder, trust_remote_code=trust_remote_code)
    return {"texts": texts, "vectors": vectors}


_FRESH_ROUTES = """
import json, sys
sys.modules["sciembed"] = None  # the Hub user has no sciembed
from sentence_transformers import SentenceTransformer
folder, expected = sys.argv[1], json.loads(sys.stdin.read())
st = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
texts = expected["texts"]
vectors = {route: st.encode(texts, task=route).tolist() for route in expected["vectors"]}
vectors["encode_query"] = st.encode_query(texts).tolist()
vectors["encode_document"] = st.encode_document(texts).tolist()
print(json.dumps(vectors))
"""

#: How far sentence-transformers' vectors of an exported multi-format model may be from sciembed's.
ROUTE_TOLERANCE = 1e-5


_FRESH_LOAD = """
import json, sys
sys.modules["sciembed"] = None  # the Hub user has no sciembed
import torch
from transformers import AutoModel, AutoTokenizer
folder = sys.argv[1]
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
# transformers 5's AutoTokenizer reads the folder's config through AutoConfig, which asks before it runs remote code.
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
features = tokenizer(["A paper title" + tokenizer.sep_token + "Its abstract."], return_tensors="pt")
kwargs = {}
if getattr(model.config, "routing", None) == "enforced":
    kwargs["domain_ids"] = torch.zeros(1, dtype=torch.long)
with torch.no_grad():
    output = model(**features, **kwargs)
print(json.dumps({"class": type(model).__name__, "shape": list(output.last_hidden_state.shape)}))
"""


def validate_export(
    folder: str | os.PathLike[str],
    *,
    route_vectors: Mapping[str, Any] | None = None,
    timeout: float = 600,
    trust_remote_code: bool = False,
) -> list[str]:
    """Check an exported folder. Returns what was checked, raises ValueError naming what failed.

    - ``README.md`` exists and its YAML front matter parses (``huggingface_hub.ModelCard``).
    - a fresh Python process in which ``import sciembed`` fails loads the model with
      ``AutoModel.from_pretrained(folder, trust_remote_code=True)`` and runs one paper through it.
    - with ``route_vectors`` (a multi-format model's ``{"texts": [...], "vectors": {route: vectors}}``, sciembed's
      vectors of the texts in each format), another such process loads the folder with
      ``SentenceTransformer(folder, trust_remote_code=True)`` and embeds the texts in every route
      (``encode(task=route)``, ``encode_query``, ``encode_document``): each must be sciembed's within
      :data:`ROUTE_TOLERANCE`.

    The fresh processes run the folder's code, so a folder naming code that is not sciembed's own
    (:func:`sciembed.checkpoints.check_published_code`) is refused first unless ``trust_remote_code``.
    """
    from huggingface_hub import ModelCard

    folder = Path(folder)
    check_published_code(folder, trust_remote_code=trust_remote_code)
    checks = []
    try:
        data = ModelCard.load(folder / CARD_FILE).data.to_dict()
    except Exception as error:  # noqa: BLE001 -- any parse failure is reported with its cause
        raise ValueError(f"{folder / CARD_FILE}: the model card does not parse: {error}") from None
    checks.append(f"card YAML parses ({len(data)} keys)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_LOAD, str(folder)], capture_output=True, text=True, env=env, timeout=timeout
    )
    if done.returncode != 0:
        raise ValueError(
            f"{folder}: AutoModel.from_pretrained(..., trust_remote_code=True) fails without sciembed:\n"
            f"{done.stderr[-2000:]}"
        )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    checks.append(f"loads without sciembed as {loaded['class']}, output {loaded['shape']}")
    if route_vectors is not None:
        checks.append(_check_routes(folder, route_vectors, env, timeout))
    return checks


def _check_routes(folder: Path, expected: Mapping[str, Any], env: Mapping[str, str], timeout: float) -> str:
    import numpy as np

    done = subprocess.run(
        [sys.executable, "-c", _FRESH_ROUTES, str(folder)],
        input=json.dumps(expected),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise ValueError(
            f"{folder}: SentenceTransformer(..., trust_remote_code=True) fails without sciembed:\n"
            f"{done.stderr[-2000:]}"
        )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = dict(
        expected["vectors"], encode_query=expected["vectors"]["query"], encode_document=expected["vectors"]["document"]
    )
    gaps = {
        route: float(np.abs(np.asarray(got[route]) - np.asarray(vectors)).max()) for route, vectors in want.items()
    }
    wrong = {route: gap for route, gap in gaps.items() if not gap <= ROUTE_TOLERANCE}
    if wrong:
        shown = ", ".join(f"{route} {gap:.2e}" for route, gap in wrong.items())
        raise ValueError(
            f"{folder}: sentence-transformers' vectors differ from sciembed's beyond {ROUTE_TOLERANCE:g} ({shown})"
        )
    return (
        f"loads without sciembed in sentence-transformers: routes {', '.join(sorted(expected['vectors']))} give "
        f"sciembed's vectors (max difference {max(gaps.values()):.1e})"
    )
