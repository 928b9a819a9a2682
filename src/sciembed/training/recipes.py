"""Recipes: each paper's training settings by name, overridable key by key.

A recipe's settings are a nested dict with five sections:

- ``model``: options of the family built from the base checkpoint (``num_cls_tokens``, ``domains``, ...), and
  ``weight_average`` for every recipe: the share of the trained weights in a WiSE-FT average with the starting
  ones when training ends (default 1: the trained weights; see :class:`~sciembed.training.trainers.EmbeddingTrainer`);
- ``embedding``: ``pooling`` (plain encoders), ``normalize`` and ``max_length``; unset (``None``), they
  follow the base as its authors use it (its sentence-transformers modules: all-MiniLM-L6-v2 trains in
  mean pooling + L2 normalisation at 256 tokens), else the paper's (``[CLS]``, unnormalised);
- ``data``: how examples are made (sampler, held-out share of queries, seed, ...); ``max_length``: the tokens
  each training text is cut to (unset: ``embedding.max_length``). Training on shorter texts is cheaper and leaves
  the model's window alone: it is saved and evaluated at ``embedding.max_length`` (e.g. trained at 128 tokens,
  all-MiniLM-L6-v2 still embeds 256, as its authors publish it); ``exclude``: papers never trained on (a list of ids,
  or a file of them, one per line), e.g. the test papers of an evaluation made elsewhere; ``anchor_papers``: papers
  outside the training data (a paper file or a list of them) whose pairwise cosines training keeps (a multi-format
  model's in each of its formats), with
  ``loss.anchor_weight`` (and ``loss.anchor_batch_size``, 16 by default; see
  :class:`~sciembed.training.losses.RelationalAnchorLoss`);
- ``loss``: ``name`` (``triplet``, ``mnr``, ``multi2spe``; see :data:`LOSSES`) and the loss's
  hyper-parameters; changing ``name`` drops the recipe's own hyper-parameters of the other loss;
  ``micro_batch_size`` (triplet and Multi2SPE recipes): the texts embedded per forward pass, ``auto`` (the default)
  or ``null`` for the whole batch (:mod:`sciembed.training.micro_batches`);
- ``training``: ``transformers.TrainingArguments`` fields.

Overrides come as dotted keys (``training.learning_rate=1e-5``, ``loss.margin=0.5``; a bare
``TrainingArguments`` field such as ``max_steps=10`` means ``training.max_steps``) or as a YAML / JSON
file of the same shape; an unknown key is an error that names the known ones.

The values follow each paper; where a paper is silent the choice is named in the recipe's
``notes``. A paper's loss is built for the geometry it ranks in (SPECTER: L2 between unnormalised
vectors); when the model is trained in unit vectors (``embedding.normalize``, e.g. from the embedded
MiniLM) a recipe's ``unit_vector_settings`` apply on top of its paper settings (and under the user's):
multiple-negatives ranking with the hard negatives (the loss a base trained in unit vectors was trained with, where
SPECTER's L2 triplet loss fell below the base: ``docs/training.md``), and for the citation triplet recipes a short
fine-tuning budget's settings: a higher learning rate and WiSE-FT's average with the base (Wortsman et al. 2022),
which keep what the base knows out of the training domain. Measured numbers live in ``docs/training.md`` and
``benchmarks/results/``.
"Effective batch 32" means 32 triplets per optimiser step on one device
(``per_device_train_batch_size * gradient_accumulation_steps``); on N devices it is N times that.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import RepeatedKeyError, json_place, loads_json, loads_yaml

OBJECTIVES = ("triplet", "multi2spe", "pairs", "multitask", "classification")
#: ``loss.name`` -> the losses' class names in :mod:`sciembed.training.losses`, per objective that takes a choice.
LOSSES = {"triplet": "TripletMarginLoss", "mnr": "MultipleNegativesRankingLoss", "multi2spe": "Multi2SPELoss"}
OBJECTIVE_LOSSES = {"triplet": ("triplet", "mnr"), "multi2spe": ("multi2spe", "mnr"), "pairs": ("mnr",)}
SECTIONS = ("model", "embedding", "data", "loss", "training")
#: The objectives whose loss takes ``loss.micro_batch_size`` (:mod:`sciembed.training.micro_batches`).
MICRO_BATCH_OBJECTIVES = ("triplet", "multi2spe")

#: TrainingArguments every recipe starts from (logging, saving, no external trackers).
_COMMON_TRAINING = {
    "logging_steps": 10,
    "save_strategy": "epoch",
    "save_total_limit": 2,
    "report_to": "none",
    "seed": 42,
    "dataloader_drop_last": False,
}


@dataclass(frozen=True)
class Recipe:
    """One paper's training setting.

    Attributes:
        name: the name ``sciembed train --recipe`` takes.
        paper: the paper it reproduces.
        objective: ``triplet``, ``multi2spe`` (triplets with the facet loss), ``pairs`` (in-batch
            negatives), ``multitask`` (SciRepEval) or ``classification`` (SPECTROID heads).
        family: the model family built from the base (``None``: the base encoder as it is).
        data: what ``--data`` must hold: ``citations`` (a citation graph: CACM, a SPECTER release or
            S2ORC JSONL; or SciRepEval's ``specter_small.json`` triplets), ``scirepeval`` (SciRepEval's
            training samples), ``labelled`` (CACM categories or a SciRepEval MeSH sample).
        settings: the default settings (see the module docstring).
        notes: where the values come from, and the choices made where the paper is silent; the values
            themselves are in :attr:`description`, derived from the settings.
        unit_vector_settings: dotted overrides applied when the model is trained in unit vectors.
    """

    name: str
    paper: str
    objective: str
    family: str | None
    data: str
    settings: dict[str, dict[str, Any]]
    notes: str = ""
    unit_vector_settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    def resolve(
        self, overrides: Mapping[str, Any] | None = None, *, unit_vectors: bool = False
    ) -> dict[str, dict[str, Any]]:
        """The settings with ``overrides`` (nested sections or dotted keys) applied and checked; with
        ``unit_vectors``, :attr:`unit_vector_settings` first (under ``overrides``)."""
        settings = self._layered(overrides, unit_vectors)
        unknown = sorted(set(settings["training"]) - _training_fields())
        if unknown:
            # transformers 5 removed warmup_ratio: a warmup_steps below 1 is now the ratio of the steps.
            hint = (
                " (transformers 5: give a ratio as warmup_steps, e.g. warmup_steps=0.1)"
                if "warmup_ratio" in unknown
                else ""
            )
            raise ValueError(f"unknown TrainingArguments field(s) {', '.join(unknown)}{hint}")
        for name, value in settings["training"].items():
            _check_training_value(name, value)
        _check_bf16(settings["training"])
        if "micro_batch_size" in settings["loss"]:
            from .micro_batches import check_micro_batch_size

            if self.objective not in MICRO_BATCH_OBJECTIVES:
                raise ValueError(
                    f"loss.micro_batch_size: recipe {self.name} ({self.objective} objective) embeds each batch at "
                    "once; the triplet and Multi2SPE recipes take micro-batches"
                )
            check_micro_batch_size(settings["loss"]["micro_batch_size"])
        choices = OBJECTIVE_LOSSES.get(self.objective)
        if choices is not None and settings["loss"].get("name") not in choices:
            raise ValueError(
                f"recipe {self.name}: loss.name must be one of {', '.join(choices)}, "
                f"got {settings['loss'].get('name')!r}"
            )
        return settings

    def _layered(self, overrides: Mapping[str, Any] | None, unit_vectors: bool) -> dict[str, dict[str, Any]]:
        """The settings with the layers applied, unchecked (a new ``loss.name`` drops the other loss's settings)."""
        settings = copy.deepcopy(self.settings)
        layers = [self.unit_vector_settings] if unit_vectors else []
        for layer in [*layers, overrides or {}]:
            assignments = [(_section_of(key), value) for key, value in flatten_overrides(layer)]
            new_loss = next(
                (value for (section, name), value in assignments if (section, name) == ("loss", "name")), None
            )
            if new_loss is not None and new_loss != settings["loss"].get("name"):
                settings["loss"] = {}
            for (section, name), value in assignments:
                settings.setdefault(section, {})[name] = value
        return settings

    @property
    def description(self) -> str:
        """The notes, then the model options, loss, optimiser, batch and epochs a run uses, written from the
        settings themselves (so the two cannot disagree): the paper's, and for a recipe with
        :attr:`unit_vector_settings` what changes when the model is trained in unit vectors."""
        paper = _setting_phrases(self._layered(None, unit_vectors=False))
        text = f"{self.notes} Settings: {'; '.join(paper.values())}."
        if self.unit_vector_settings:
            unit = _setting_phrases(self._layered(None, unit_vectors=True))
            changed = [phrase for part, phrase in unit.items() if phrase != paper.get(part)]
            text += (
                f" Trained in unit vectors (embedding.normalize, e.g. from all-MiniLM-L6-v2): {'; '.join(changed)}."
            )
        return text


def _setting_phrases(settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Resolved settings as phrases by part (``model``, ``loss``, ``optimiser``, ``batch``, ``epochs``), e.g.
    ``batch``: "32 examples per optimiser step (8 per device x 4 accumulation steps)"."""

    def listed(options: Mapping[str, Any]) -> str:
        return ", ".join(f"{key} {value}" for key, value in options.items())

    training = settings["training"]
    phrases = {}
    if settings["model"]:
        phrases["model"] = f"model {listed(settings['model'])}"
    loss = dict(settings["loss"])
    if loss:
        name = loss.pop("name", None)
        phrases["loss"] = " ".join(part for part in ("loss", name, f"({listed(loss)})" if loss else "") if part)
    warmup = training.get("warmup_steps", 0)
    warmup = f"warm-up over {warmup:.0%} of the steps" if 0 < warmup < 1 else f"{warmup} warm-up steps"
    phrases["optimiser"] = (
        f"lr {training['learning_rate']:g}, {training['lr_scheduler_type']} schedule, {warmup}, "
        f"weight decay {training.get('weight_decay', 0.0)}"
    )
    per_device, accumulation = training["per_device_train_batch_size"], training.get("gradient_accumulation_steps", 1)
    phrases["batch"] = (
        f"{per_device * accumulation} examples per optimiser step ({per_device} per device x {accumulation} "
        "accumulation steps)"
    )
    phrases["epochs"] = f"{training['num_train_epochs']} epoch(s)"
    return phrases


def flatten_overrides(overrides: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    """``(dotted key, value)`` pairs of overrides given nested by section, dotted, or both."""
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name in SECTIONS:
            yield from flatten_overrides(value, f"{name}.")
        else:
            yield name, value


def _section_of(key: str) -> tuple[str, str]:
    if "." in key:
        section, name = key.split(".", 1)
        if section not in SECTIONS:
            raise ValueError(f"unknown setting {key!r}: the sections are {', '.join(SECTIONS)}")
        return section, name
    if key in _training_fields():
        return "training", key
    raise ValueError(f"unknown setting {key!r}: use section.name ({', '.join(SECTIONS)}) or a TrainingArguments field")


def _check_training_value(name: str, value: Any) -> None:
    """Refuse a value the ``TrainingArguments`` field cannot take (``max_steps="two"``) before anything runs;
    fields typed with enums or unions of other types are left to ``TrainingArguments`` itself."""
    import typing

    from transformers import TrainingArguments

    allowed = typing.get_type_hints(TrainingArguments)[name]
    options = typing.get_args(allowed) if typing.get_origin(allowed) is typing.Union else (allowed,)
    simple = {bool, int, float, str, type(None)}
    if not set(options) <= simple:
        return
    fits = (
        type(value) in options
        or (float in options and type(value) is int)
        or (value is None and type(None) in options)
    )
    if not fits:
        expected = " or ".join("null" if t is type(None) else t.__name__ for t in options)
        raise ValueError(f"setting {name}={value!r}: expected {expected}, got {type(value).__name__}")


def _check_bf16(training: Mapping[str, Any]) -> None:
    """Refuse ``bf16`` without a CUDA GPU unless ``use_cpu`` asks for the CPU's bf16 autocast, before the model loads.

    Args:
        training: the ``TrainingArguments`` settings.
    """
    import torch

    if training.get("bf16") and not training.get("use_cpu") and not torch.cuda.is_available():
        raise ValueError(
            "bf16=true: there is no CUDA GPU here; to train in bf16 on the CPU (torch's CPU autocast) add "
            "--set use_cpu=true (use_cpu=True), or leave bf16 out"
        )


def _training_fields() -> set[str]:
    from transformers import TrainingArguments

    return {f.name for f in dataclasses.fields(TrainingArguments) if f.init} - {"output_dir"}


def _recipe(
    name,
    paper,
    objective,
    family,
    data,
    *,
    model=None,
    embedding=None,
    data_settings=None,
    loss=None,
    training,
    notes="",
    unit_vectors=None,
):
    return Recipe(
        name,
        paper,
        objective,
        family,
        data,
        {
            "model": dict(model or {}),
            "embedding": {"pooling": None, "normalize": None, "max_length": None, **(embedding or {})},
            "data": {
                "held_out": 0.0,
                "validation": 0.0,
                "seed": 0,
                "max_examples": None,
                "max_length": None,
                "exclude": None,
                "anchor_papers": None,
                **(data_settings or {}),
            },
            "loss": dict(loss or {}),
            "training": {**_COMMON_TRAINING, **training},
        },
        notes,
        dict(unit_vectors or {}),
    )


#: Citation triplets in unit vectors: multiple-negatives ranking over the in-batch matrix plus each triplet's
#: hard negative, cosine similarity at temperature 0.05 (sentence-transformers' scale 20); the 32 triplets of
#: a step in one batch, since in-batch negatives come from the batch a loss sees, not from accumulation.
#: (Dotted keys throughout: `sciembed --help` writes the recipes' descriptions from these without importing
#: transformers, which a bare key would need to be found among TrainingArguments' fields.)
_UNIT_VECTOR_TRIPLETS = {
    "loss.name": "mnr",
    "loss.similarity": "cosine",
    "loss.temperature": 0.05,
    "training.per_device_train_batch_size": 32,
    "training.gradient_accumulation_steps": 1,
}

#: WiSE-FT's average of the trained and the starting weights (Wortsman et al. 2022, "Robust fine-tuning of zero-shot
#: models"), which keeps the base's quality outside the training domain, keeping a fifth of the trained weights: every
#: share scored from one run per recipe (seed 0, ``benchmarks/validation_search.py --weight-averages``) on validation
#: queries carved from the training ones and on out-of-domain validation tasks (hep-th queries, S2ORC fields of study,
#: arXiv archives); the share kept is the one with the most validation cite MAP among those losing at most a point
#: against the base on every out-of-domain task or, where none does, the one whose worst out-of-domain loss is
#: smallest: a fifth for every recipe searched (the citation recipes, scirepeval-ctrl and scirepeval-pals). With
#: half, the earlier share, the fields of study lost several points for little cite MAP.
_WISE_FT = {"model.weight_average": 0.2}

#: Fine-tuning a base already trained in unit vectors (a sentence-transformers model) on citations: learning rate 1e-4
#: (SPECTER's 2e-5 is for a full epoch from BERT), chosen on a validation split of CACM's training queries
#: (``data.validation``), never on held-out ones, then WiSE-FT's average; ``training.learning_rate=2e-5
#: model.weight_average=1`` trains as before.
_UNIT_VECTOR_FINE_TUNING = {"training.learning_rate": 1e-4, **_WISE_FT}

#: Relational anchoring as the recommended recipe uses it (``specter`` with ``data.anchor_papers``): the anchor papers
#: of a SciRepEval samples folder (the MeSH sample's and the ready triplets' papers, none of them in any evaluation of
#: ``benchmarks/recipes.py``; the fields-of-study sample's papers are its FoS task's) and the settings beside them,
#: weight and WiSE-FT share chosen on validation data (``benchmarks/results/validation_search.json``).
ANCHOR_FILES = ("mesh_small.json", "specter_small.json")
ANCHORED = {"loss.anchor_weight": 50.0, "model.weight_average": 0.5}


def anchor_paths(samples: Path) -> list[Path]:
    """The paths of :data:`ANCHOR_FILES` in ``samples``, a folder laid out as SciRepEval's samples (whether or not
    they exist: the caller decides what a missing file means)."""
    return [samples / name for name in ANCHOR_FILES]


#: Multi2SPE from a base trained in unit vectors (a sentence-transformers model, which pools by mean): its [CLS] was
#: never trained to embed the text, so each CLS output also carries 1/K of the mean of the text's states and the last
#: linear layers start at zero (``model.text_pooling="mean"``): the model starts as the base embeds. The facet loss
#: (eqs. 2-3) keeps its max-pair term, taken between unit vectors at sentence-transformers' temperature with every
#: positive and negative of the step's 32 triplets as candidates, as the specter recipe's multiple-negatives ranking
#: does; a plain multiple-negatives loss on the sum would give the K tokens no reason to part ways. Then the specter
#: recipe's learning rate and WiSE-FT average: chosen on validation queries over lr 2e-4 without the average, and over
#: the earlier construction that started at the base's [CLS] (``benchmarks/results/validation_search.json``).
_MULTI2SPE_UNIT_VECTORS = {
    "model.text_pooling": "mean",
    "loss.similarity": "cosine",
    "loss.temperature": 0.05,
    "loss.in_batch_negatives": True,
    "training.per_device_train_batch_size": 32,
    "training.gradient_accumulation_steps": 1,
    **_UNIT_VECTOR_FINE_TUNING,
}


_SPECTER_TRAINING = {
    "learning_rate": 2e-5,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.1,
    "num_train_epochs": 2,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "weight_decay": 0.0,
}

#: SciRepEval warms up over 700 steps of a run of many thousands; over a short run (the 60 steps of a CPU budget) that
#: would keep the learning rate below a tenth of its peak, so the warm-up is 10% of the run's steps, as SPECTER's
#: (``training.warmup_steps=700`` for the paper's).
_SCIREPEVAL_TRAINING = {
    "learning_rate": 5e-5,
    "lr_scheduler_type": "inverse_sqrt",
    "warmup_steps": 0.1,
    "num_train_epochs": 2,
    "per_device_train_batch_size": 16,
    "gradient_accumulation_steps": 2,
    "weight_decay": 0.01,
}

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        _recipe(
            "specter",
            "Cohan et al. 2020, SPECTER",
            "triplet",
            None,
            "citations",
            data_settings={"sampler": "specter", "triplets_per_query": 5},
            loss={"name": "triplet", "margin": 1.0, "distance": "l2"},
            training=_SPECTER_TRAINING,
            unit_vectors={**_UNIT_VECTOR_TRIPLETS, **_UNIT_VECTOR_FINE_TUNING},
            notes="SPECTER's triplet margin loss on unnormalised vectors; 5 triplets per query, 2 with hard "
            "negatives; the paper's batch reached by gradient accumulation. In unit vectors (a base such as "
            "all-MiniLM-L6-v2): multiple-negatives ranking with the hard negatives, the step's triplets in one batch "
            "(its in-batch negatives come from the batch the loss sees, not from accumulation); departure for a "
            "short budget: a higher learning rate and WiSE-FT's average with the base (model.weight_average), chosen "
            "on validation queries, the share also on out-of-domain validation data.",
        ),
        _recipe(
            "scincl",
            "Ostendorff et al. 2022, SciNCL",
            "triplet",
            None,
            "citations",
            data_settings={"sampler": "scincl", "rank_overflow": "nearest"},
            loss={"name": "triplet", "margin": 1.0, "distance": "l2"},
            training=_SPECTER_TRAINING,
            unit_vectors={**_UNIT_VECTOR_TRIPLETS, **_UNIT_VECTOR_FINE_TUNING},
            notes="SPECTER's triplet loss on triplets sampled from a citation-graph embedding: 5 positives from kNN "
            "ranks [20, 25), 2 hard negatives from [3998, 4000), 3 random. Departure: on a graph with fewer than "
            "4,000 candidates per query, where the paper's ranks cannot apply, positives come from the top ranks and "
            "hard negatives from the nearest tenth (data.rank_overflow=nearest; 'scale' shrinks the paper's ranges "
            "instead, which puts the hard negatives among the farthest papers). The optimiser settings are "
            "SPECTER's; SciNCL's own were not checked against its paper. In unit vectors: as the specter recipe "
            "(multiple-negatives ranking, a higher learning rate, WiSE-FT's average with the base).",
        ),
        _recipe(
            "multi2spe",
            "Seoh, Chang & McCallum 2023, Multi2SPE",
            "multi2spe",
            "multi2spe",
            "citations",
            model={"num_cls_tokens": 3},
            data_settings={"sampler": "specter", "triplets_per_query": 5},
            loss={"name": "multi2spe", "weight": 0.1, "mode": "paper"},
            training={**_SPECTER_TRAINING, "weight_decay": 0.0, "lr_scheduler_type": "linear"},
            unit_vectors=_MULTI2SPE_UNIT_VECTORS,
            notes="K CLS tokens (model.num_cls_tokens), lambda as loss.weight, Adam (AdamW with no weight decay), "
            "SPECTER's batch, SPECTER triplets; loss mode 'paper' (eqs. 2-3) by default, 'released' for the authors' "
            "code. The model starts where its base is (model.initialization='base'; 'paper' for the paper's random "
            "last layers). In unit vectors (a mean-pooling base such as all-MiniLM-L6-v2), departures: each CLS "
            "output also carries 1/K of the text's mean state and the last linear layers start at zero, so training "
            "starts where the base is (model.text_pooling=mean); the facet loss between unit vectors with in-batch "
            "negatives (loss.similarity=cosine, loss.in_batch_negatives); the citation recipes' higher learning "
            "rate and WiSE-FT average, chosen on validation queries.",
        ),
        _recipe(
            "scirepeval-ctrl",
            "Singh et al. 2023, SciRepEval (control codes)",
            "multitask",
            "control_code",
            "scirepeval",
            data_settings={"max_examples": None},
            loss={"dropout": 0.1, "margin": 1.0},
            training=_SCIREPEVAL_TRAINING,
            notes="Multi-task training over SciRepEval's formats with [CLF] [RGN] [PRX] [QRY] control codes: AdamW "
            "with an inverse-square-root schedule after warm-up (10% of the steps; the paper's 700 steps assume a "
            "longer run), task-heterogeneous batches; heads: linear with dropout, CE / BCE / MSE, triplet for "
            "proximity and search. --data is SciRepEval's samples or a task mixture of several sources. In unit "
            "vectors (a mean-pooling base such as all-MiniLM-L6-v2), departures: the embedding is the mean of the "
            "text's final states, which the code conditions through attention (model.text_pooling=mean), since a "
            "new code token read as the embedding starts far below the base; the codes start as copies of [SEP] "
            "(model.control_code_init=sep), a token BERT's attention rests on as a no-op, so the model starts close "
            "to the base's embedding, where random code rows shift every state of the text; proximity and search "
            "train with multiple-negatives ranking between cosines (loss.proximity=mnr), since a margin of 1 "
            "between unit vectors keeps every triplet active and pulls the embedding off the base. Chosen on "
            "validation queries "
            "over the triplet loss and over a higher rate with WiSE-FT's average (results/validation_search.json). "
            "Then WiSE-FT's average with the starting model, keeping a fifth of the trained weights "
            "(model.weight_average), chosen by the citation recipes' rule on validation queries and out-of-domain "
            "validation data: no share scored kept every out-of-domain task within a point of the base, and this "
            "one lost least.",
            unit_vectors={
                "model.text_pooling": "mean",
                "model.control_code_init": "sep",
                "loss.proximity": "mnr",
                **_WISE_FT,
            },
        ),
        _recipe(
            "scirepeval-adapters",
            "Singh et al. 2023, SciRepEval (format adapters, stage 1)",
            "multitask",
            None,
            "scirepeval",
            model={"format_modules": "adapters", "adapter_config": "seq_bn"},
            loss={"dropout": 0.1, "margin": 1.0},
            training=_SCIREPEVAL_TRAINING,
            notes="One seq_bn bottleneck adapter per format (classification, regression, proximity, adhoc_query) on "
            "a frozen base, trained together on task-heterogeneous batches, each task through its format's adapter; "
            "SciRepEval's optimiser settings. Stage 2 is scirepeval-fusion on the saved model.",
        ),
        _recipe(
            "scirepeval-fusion",
            "Singh et al. 2023, SciRepEval (AdapterFusion, stage 2)",
            "multitask",
            None,
            "scirepeval",
            model={"format_modules": "fusion"},
            loss={"dropout": 0.1, "margin": 1.0},
            training=_SCIREPEVAL_TRAINING,
            notes="--base is a model trained with scirepeval-adapters; per format an AdapterFusion layer Fuse(own, "
            "*others) over the frozen adapters, trained on the same multi-task batches. In unit vectors (a "
            "mean-pooling base such as all-MiniLM-L6-v2), departures: proximity and search train with "
            "multiple-negatives ranking between cosines (loss.proximity=mnr), since a margin of 1 between unit "
            "vectors keeps every triplet active, at twenty times SciRepEval's learning rate: at theirs, 60 steps of "
            "32 examples left the fusion where it started (its loss flat). Chosen on validation queries "
            "(results/validation_search.json); loss.proximity=triplet with SciRepEval's learning rate trains as the "
            "paper.",
            unit_vectors={"loss.proximity": "mnr", "training.learning_rate": 1e-3},
        ),
        _recipe(
            "scirepeval-pals",
            "Singh et al. 2023, SciRepEval (PALs)",
            "multitask",
            None,
            "scirepeval",
            model={"format_modules": "pals", "pals_hidden_size": 204, "pals_attention_heads": 6},
            loss={"dropout": 0.1, "margin": 1.0},
            training=_SCIREPEVAL_TRAINING,
            notes="Projected attention layers per format (projections shared across layers), trained jointly with "
            "the whole network on the multi-task batches. In unit vectors (a mean-pooling base such as "
            "all-MiniLM-L6-v2), departures: proximity and search train with multiple-negatives ranking between "
            "cosines (loss.proximity=mnr), since a margin of 1 between unit vectors keeps every triplet active and "
            "pulls the embedding off the base, at the citation recipes' learning rate, then WiSE-FT's average with "
            "the starting model keeping a fifth of the trained weights: chosen on validation queries and "
            "out-of-domain validation data by the citation recipes' rule (results/validation_search.json). With "
            "papers of other fields at hand, relational anchoring (data.anchor_papers, loss.anchor_weight) with each "
            "step's examples in one batch (training.gradient_accumulation_steps), the citations weighing more in the "
            "mixture (their task's weight) and a larger share of the trained weights kept (model.weight_average) "
            "gains more and keeps what the base knew out of domain: docs/training.md gives the values, chosen on "
            "validation data and held out.",
            unit_vectors={"loss.proximity": "mnr", **_UNIT_VECTOR_FINE_TUNING},
        ),
        _recipe(
            "spectroid-heads",
            "Capuano et al., SPECTROID (classification heads)",
            "classification",
            "spectroid",
            "labelled",
            model={"head": "CH1", "head_learning_rate": 1e-3, "head_only_steps": 300},
            training={
                "learning_rate": 2e-5,
                "lr_scheduler_type": "linear",
                "warmup_steps": 0.1,
                "num_train_epochs": 3,
                "per_device_train_batch_size": 16,
                "weight_decay": 0.01,
            },
            notes="The encoder with an MLP head (CH1 linear, CH2 one hidden layer of 64, CH3 five), ReLU, trained "
            "end-to-end with cross-entropy; optimiser settings are BERT fine-tuning defaults (the report does not "
            "fix them), the head at a rate of its own (model.head_learning_rate). Departures, chosen on validation "
            "papers carved from the training ones (results/validation_search.json): the head is first fitted alone "
            "on the frozen encoder's embeddings (model.head_only_steps; LP-FT, Kumar et al. 2022), since a random "
            "head trained end-to-end in a short run stays far below a linear probe; the linear head CH1 by default "
            "(model.head=CH2 for the paper's), which beat CH2 on a few hundred labelled papers. In unit vectors (a "
            "mean-pooling base such as all-MiniLM-L6-v2): the head reads, and the encoder embeds with, the mean of "
            "the text's final states (model.text_pooling=mean), which beat the base's untrained [CLS], and WiSE-FT's "
            "average with the start (the fitted head on the base), as the citation recipes.",
            unit_vectors={"model.text_pooling": "mean", "model.weight_average": 0.5},
        ),
        _recipe(
            "moe-cocitation",
            "Hallee, Kapur et al. 2024, MoE BERT",
            "pairs",
            "moe_bert",
            "citations",
            model={"domains": ["cs"], "routing": "enforced"},
            data_settings={"domain": "cs", "pairs": "citations"},
            loss={
                "name": "mnr",
                "temperature": 0.7,
                "learn_temperature": True,
                "similarity": "dot",
                "symmetric": False,
                "router_cross_entropy": 1.0,
                "router_mutual_information": 0.0,
                "router_load_balancing": 0.0,
            },
            training={
                "learning_rate": 1e-5,
                "lr_scheduler_type": "cosine",
                "warmup_steps": 0,
                "num_train_epochs": 1,
                "per_device_train_batch_size": 16,
                "weight_decay": 0.01,
            },
            notes="Positive pairs, multiple-negatives ranking over the full in-batch matrix with a learned "
            "temperature (loss.temperature is its initial value), cosine decay; experts copied from the pretrained "
            "MLP, routing by domain token (router losses apply to learned routing only). Departure: the pairs are "
            "citation links; the paper's co-citation pairs (data.pairs=cocitations, whence the recipe's name) fell "
            "below the base on validation queries at every learning rate tried, on a collection where few co-cited "
            "papers cite each other. In unit vectors: cosine similarity at a fixed temperature, and as the citation "
            "triplet recipes a higher learning rate and WiSE-FT's average with the base, chosen on validation "
            "queries.",
            unit_vectors={
                "loss.similarity": "cosine",
                "loss.temperature": 0.05,
                "loss.learn_temperature": False,
                **_UNIT_VECTOR_FINE_TUNING,
            },
        ),
    )
}


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    return RECIPES[name]


def read_overrides(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Settings from a YAML (``.yaml`` / ``.yml``) or JSON file, nested by section or with dotted keys."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            loaded = loads_yaml(text)
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from None
        except RepeatedKeyError as error:
            raise ValueError(f"{json_place(path, error)}: {error}") from None
    else:
        try:
            loaded = loads_json(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON: line {error.lineno}: {error.msg}") from None
        except RepeatedKeyError as error:
            raise ValueError(f"{json_place(path, error)}: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: expected a mapping of settings, got {type(loaded).__name__}")
    return loaded


def parse_assignments(assignments: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings (VALUE as JSON, else a plain string) as a dict of dotted keys."""
    result: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {assignment!r}")
        try:
            result[key.strip()] = loads_json(raw)
        except json.JSONDecodeError:
            result[key.strip()] = raw
        except RepeatedKeyError as error:
            raise ValueError(f"--set {assignment}: {error}") from None
    return result
