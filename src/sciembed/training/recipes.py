"""Recipes: each paper's training settings by name, overridable key by key.

A recipe names its paper, its objective (:mod:`sciembed.training.objectives`), the paper's settings and its
departures from them. The settings are five sections of dotted keys:

- ``model``: options of the family built from the base, and ``weight_average``, the share of the trained weights
  in a WiSE-FT average with the starting ones (:class:`~sciembed.training.trainers.EmbeddingTrainer`).
- ``embedding``: ``pooling``, ``normalize`` and ``max_length``. Unset, they follow the base as its authors use it,
  else the paper's ([CLS], unnormalised).
- ``data``: how examples are made (:class:`~sciembed.training.settings.DataSettings` and the objective's own).
- ``loss``: ``name`` (see :data:`LOSSES`) and the loss's parameters. A new ``name`` drops the other loss's.
- ``training``: ``transformers.TrainingArguments`` fields.

Overrides come as dotted keys (``training.learning_rate=1e-5``, a bare ``TrainingArguments`` field such as
``max_steps=10`` means ``training.max_steps``) or as a YAML or JSON file of the same shape. Each key is checked
against the objective's schema, so an unknown key or a wrong type is refused before any data is read.

A :class:`Departure` is a setting that differs from the paper, with its reason and evidence. Some apply to every
run, others only when the model is trained in unit vectors (``embedding.normalize``, e.g. from the embedded
MiniLM). Settings resolve in layers: the paper's, the departures, then the user's overrides.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import RepeatedKeyError, json_place, loads_json, loads_yaml
from .objectives import LOSSES, Classification, Multi2SPE, MultiTask, Objective, Pairs, Triplet
from .settings import SECTIONS, DataSettings, EmbeddingSettings, check_value, training_schema

__all__ = ["LOSSES", "RECIPES", "Departure", "Recipe", "get_recipe"]

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
class Departure:
    """One setting in which a recipe departs from its paper.

    Attributes:
        setting: the setting's dotted key.
        value: the value the recipe uses.
        reason: why, in one sentence.
        evidence: the file that holds the evidence (``benchmarks/results/*.json`` or a docs page).
        unit_vectors: whether it applies only to a model trained in unit vectors.
    """

    setting: str
    value: Any
    reason: str
    evidence: str
    unit_vectors: bool = False


@dataclass(frozen=True)
class Recipe:
    """One paper's training setting.

    Attributes:
        name: the name ``sciembed train --recipe`` takes.
        paper: the paper it reproduces.
        objective: how it trains (:mod:`sciembed.training.objectives`).
        settings: the paper's settings by section (see the module docstring).
        departures: the settings in which the recipe departs from the paper.
        notes: one short note on the paper's setting, for ``train --help``.
    """

    name: str
    paper: str
    objective: Objective
    settings: dict[str, dict[str, Any]]
    departures: tuple[Departure, ...] = ()
    notes: str = ""

    @property
    def family(self) -> str | None:
        """The model family built from the base (``None``: the base encoder as it is)."""
        return self.objective.family

    @property
    def data(self) -> str:
        """What ``--data`` must hold: ``citations``, ``scirepeval`` or ``labelled``."""
        return self.objective.data.value

    @property
    def unit_vector_settings(self) -> dict[str, Any]:
        """The departures that apply to a model trained in unit vectors, as dotted overrides."""
        return {d.setting: d.value for d in self.departures if d.unit_vectors}

    def resolve(
        self, overrides: Mapping[str, Any] | None = None, *, unit_vectors: bool = False
    ) -> dict[str, dict[str, Any]]:
        """The settings with the departures and ``overrides`` applied and checked.

        Args:
            overrides: nested sections or dotted keys, applied last.
            unit_vectors: whether the departures for unit vectors apply.
        """
        settings = self._layered(overrides, unit_vectors)
        schema = training_schema()
        unknown = sorted(set(settings["training"]) - set(schema))
        if unknown:
            # transformers 5 removed warmup_ratio: a warmup_steps below 1 is now the ratio of the steps.
            hint = (
                " (transformers 5: give a ratio as warmup_steps, e.g. warmup_steps=0.1)"
                if "warmup_ratio" in unknown
                else ""
            )
            raise ValueError(f"unknown TrainingArguments field(s) {', '.join(unknown)}{hint}")
        for name, value in settings["training"].items():
            check_value(name, value, schema[name])
        _check_bf16(settings["training"])
        self.objective.check(settings, self.name)
        return settings

    def _layered(self, overrides: Mapping[str, Any] | None, unit_vectors: bool) -> dict[str, dict[str, Any]]:
        """The settings with the layers applied, unchecked (a new ``loss.name`` drops the other loss's settings)."""
        settings = copy.deepcopy(self.settings)
        layers = [{d.setting: d.value for d in self.departures if not d.unit_vectors}]
        if unit_vectors:
            layers.append(self.unit_vector_settings)
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
        """The notes, then the settings a run uses.

        The settings are the model options, loss, optimiser, batch and epochs.
        """
        paper = _setting_phrases(self._layered(None, unit_vectors=False))
        text = f"{self.notes} Settings: {'; '.join(paper.values())}."
        if self.unit_vector_settings:
            unit = _setting_phrases(self._layered(None, unit_vectors=True))
            changed = [phrase for part, phrase in unit.items() if phrase != paper.get(part)]
            text += (
                f" Trained in unit vectors (embedding.normalize, e.g. from all-MiniLM-L6-v2): {'; '.join(changed)}."
            )
        return text


def paper_settings(
    *,
    model: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    loss: Mapping[str, Any] | None = None,
    training: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """A paper's settings by section, with the defaults every recipe shares.

    Args:
        model: the model options.
        data: the data options beyond :class:`~sciembed.training.settings.DataSettings`.
        loss: the loss's name and parameters.
        training: the ``TrainingArguments`` fields beyond the common logging and saving.
    """
    from dataclasses import asdict

    return {
        "model": dict(model or {}),
        "embedding": asdict(EmbeddingSettings()),
        "data": {**asdict(DataSettings()), **(data or {})},
        "loss": dict(loss or {}),
        "training": {**_COMMON_TRAINING, **training},
    }


def _setting_phrases(settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Resolved settings as phrases by part.

    The parts are ``model``, ``loss``, ``optimiser``, ``batch`` and ``epochs``. For example, ``batch`` reads
    "32 examples per optimiser step (8 per device x 4 accumulation steps)".
    """

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
    """``(dotted key, value)`` pairs of overrides given nested by section, dotted, or both.

    Args:
        overrides: the overrides.
        prefix: the section of a nested mapping.
    """
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name in SECTIONS:
            yield from flatten_overrides(value, f"{name}.")
        else:
            yield name, value


def _section_of(key: str) -> tuple[str, str]:
    """The section and name of a dotted key (a bare ``TrainingArguments`` field is ``training``'s)."""
    if "." in key:
        section, name = key.split(".", 1)
        if section not in SECTIONS:
            raise ValueError(f"unknown setting {key!r}: the sections are {', '.join(SECTIONS)}")
        return section, name
    if key in training_schema():
        return "training", key
    raise ValueError(f"unknown setting {key!r}: use section.name ({', '.join(SECTIONS)}) or a TrainingArguments field")


def _check_bf16(training: Mapping[str, Any]) -> None:
    """Refuse ``bf16`` without a CUDA GPU unless ``use_cpu`` asks for the CPU's bf16 autocast.

    Args:
        training: the ``TrainingArguments`` settings.
    """
    import torch

    if training.get("bf16") and not training.get("use_cpu") and not torch.cuda.is_available():
        raise ValueError(
            "bf16=true: there is no CUDA GPU here; to train in bf16 on the CPU (torch's CPU autocast) add "
            "--set use_cpu=true (use_cpu=True), or leave bf16 out"
        )


#: Evidence files of the departures.
_VALIDATION = "benchmarks/results/validation_search.json"
_TRAINING_GUIDE = "docs/training.md"

#: A mean-pooling base's embedding carries into a family that would otherwise read a new token.
_MEAN = "the base was trained to embed the mean of the text's states, which its [CLS] never was"
#: In-batch negatives come from the batch the loss sees.
_ONE_BATCH = "In-batch negatives come from the batch the loss sees, so a step's examples go in one batch."

#: Citation triplets in unit vectors: multiple-negatives ranking with the hard negatives, in one batch.
_UNIT_VECTOR_TRIPLETS = (
    Departure(
        "loss.name",
        "mnr",
        "A base trained in unit vectors was trained with multiple-negatives ranking, and SPECTER's L2 triplet loss "
        "fell below it.",
        _TRAINING_GUIDE,
        unit_vectors=True,
    ),
    Departure("loss.similarity", "cosine", "Unit vectors are compared by their cosine.", _TRAINING_GUIDE, True),
    Departure(
        "loss.temperature", 0.05, "Sentence-transformers' scale for cosine similarities.", _TRAINING_GUIDE, True
    ),
    Departure("training.per_device_train_batch_size", 32, _ONE_BATCH, _TRAINING_GUIDE, True),
    Departure("training.gradient_accumulation_steps", 1, _ONE_BATCH, _TRAINING_GUIDE, True),
)

#: WiSE-FT's average of the trained and the starting weights (Wortsman et al. 2022).
_WISE_FT = (
    Departure(
        "model.weight_average",
        0.2,
        "WiSE-FT's average with the starting model keeps what the base knows outside the training domain, the "
        "share chosen on validation queries and out-of-domain validation data.",
        _VALIDATION,
        True,
    ),
)

#: Fine-tuning a base already trained in unit vectors on citations: a higher learning rate, then WiSE-FT.
_UNIT_VECTOR_FINE_TUNING = (
    Departure(
        "training.learning_rate",
        1e-4,
        "A short budget from a trained sentence encoder needs a higher rate than a full epoch from BERT, chosen on "
        "validation queries.",
        _VALIDATION,
        True,
    ),
    *_WISE_FT,
)

#: SciRepEval warms up over a fixed number of steps meant for a run of many thousands.
_SHORT_WARM_UP = Departure(
    "training.warmup_steps",
    0.1,
    "SciRepEval's fixed warm-up would keep a short run's learning rate far below its peak, so it is a tenth of "
    "the steps, as SPECTER's.",
    _TRAINING_GUIDE,
)

#: Proximity and search between unit vectors by multiple-negatives ranking.
_PROXIMITY_MNR = Departure(
    "loss.proximity",
    "mnr",
    "The paper's unit margin between unit vectors keeps every triplet active and pulls the embedding off the base.",
    _VALIDATION,
    True,
)

#: Relational anchoring as the recommended recipe uses it (``specter`` with ``data.anchor_papers``): the anchor papers
#: of a SciRepEval samples folder and the settings beside them, chosen on validation data.
ANCHOR_FILES = ("mesh_small.json", "specter_small.json")
ANCHORED = {"loss.anchor_weight": 50.0, "model.weight_average": 0.5}


def anchor_paths(samples: Path) -> list[Path]:
    """The paths of :data:`ANCHOR_FILES` in ``samples``, whether or not they exist.

    Args:
        samples: a folder laid out as SciRepEval's samples.
    """
    return [samples / name for name in ANCHOR_FILES]


_SPECTER_TRAINING = {
    "learning_rate": 2e-5,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.1,
    "num_train_epochs": 2,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "weight_decay": 0.0,
}

_SCIREPEVAL_TRAINING = {
    "learning_rate": 5e-5,
    "lr_scheduler_type": "inverse_sqrt",
    "warmup_steps": 700,
    "num_train_epochs": 2,
    "per_device_train_batch_size": 16,
    "gradient_accumulation_steps": 2,
    "weight_decay": 0.01,
}

#: The multi-task heads' settings of every SciRepEval recipe.
_SCIREPEVAL_LOSS = {"dropout": 0.1, "margin": 1.0}

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "specter",
            "Cohan et al. 2020, SPECTER",
            Triplet(),
            paper_settings(
                data={"sampler": "specter", "triplets_per_query": 5},
                loss={"name": "triplet", "margin": 1.0, "distance": "l2"},
                training=_SPECTER_TRAINING,
            ),
            (*_UNIT_VECTOR_TRIPLETS, *_UNIT_VECTOR_FINE_TUNING),
            notes="SPECTER's triplet margin loss on unnormalised vectors, triplets with cited positives and two-hop "
            "hard negatives, the paper's batch reached by gradient accumulation.",
        ),
        Recipe(
            "scincl",
            "Ostendorff et al. 2022, SciNCL",
            Triplet(),
            paper_settings(
                data={"sampler": "scincl"},
                loss={"name": "triplet", "margin": 1.0, "distance": "l2"},
                training=_SPECTER_TRAINING,
            ),
            (
                Departure(
                    "data.rank_overflow",
                    "nearest",
                    "On a graph too small for the paper's kNN ranks, positives come from the top ranks and hard "
                    "negatives from the nearest tenth.",
                    _TRAINING_GUIDE,
                ),
                *_UNIT_VECTOR_TRIPLETS,
                *_UNIT_VECTOR_FINE_TUNING,
            ),
            notes="SPECTER's triplet loss on triplets sampled from kNN ranks of a citation-graph embedding, with "
            "SPECTER's optimiser settings.",
        ),
        Recipe(
            "multi2spe",
            "Seoh, Chang & McCallum 2023, Multi2SPE",
            Multi2SPE(),
            paper_settings(
                model={"num_cls_tokens": 3},
                data={"sampler": "specter", "triplets_per_query": 5},
                loss={"name": "multi2spe", "weight": 0.1, "mode": "paper"},
                training={**_SPECTER_TRAINING, "weight_decay": 0.0, "lr_scheduler_type": "linear"},
            ),
            (
                Departure(
                    "model.text_pooling",
                    "mean",
                    f"Each CLS output also carries a share of the text's mean, since {_MEAN}.",
                    "benchmarks/results/multi2spe_init.json",
                    True,
                ),
                Departure(
                    "loss.similarity",
                    "cosine",
                    "The facet loss compares unit vectors by their cosine.",
                    _VALIDATION,
                    True,
                ),
                Departure(
                    "loss.temperature",
                    0.05,
                    "Sentence-transformers' scale for cosine similarities.",
                    _VALIDATION,
                    True,
                ),
                Departure(
                    "loss.in_batch_negatives",
                    True,
                    "The facet loss takes every positive and negative of the step as candidates, as "
                    "multiple-negatives ranking does.",
                    _VALIDATION,
                    True,
                ),
                Departure("training.per_device_train_batch_size", 32, _ONE_BATCH, _VALIDATION, True),
                Departure("training.gradient_accumulation_steps", 1, _ONE_BATCH, _VALIDATION, True),
                *_UNIT_VECTOR_FINE_TUNING,
            ),
            notes="K CLS tokens (model.num_cls_tokens), lambda as loss.weight, Adam without weight decay, SPECTER "
            "triplets, loss mode 'paper' by default and 'released' for the authors' code.",
        ),
        Recipe(
            "scirepeval-ctrl",
            "Singh et al. 2023, SciRepEval (control codes)",
            MultiTask(family="control_code"),
            paper_settings(data={"max_examples": None}, loss=_SCIREPEVAL_LOSS, training=_SCIREPEVAL_TRAINING),
            (
                _SHORT_WARM_UP,
                Departure(
                    "model.text_pooling",
                    "mean",
                    f"The embedding is the mean of the text's final states, which the code conditions, since {_MEAN}.",
                    _VALIDATION,
                    True,
                ),
                Departure(
                    "model.control_code_init",
                    "sep",
                    "The codes start as copies of [SEP], a token BERT's attention rests on as a no-op, so the model "
                    "starts close to the base's embedding.",
                    _VALIDATION,
                    True,
                ),
                _PROXIMITY_MNR,
                *_WISE_FT,
            ),
            notes="Multi-task training over SciRepEval's formats with [CLF] [RGN] [PRX] [QRY] control codes on "
            "task-heterogeneous batches, from SciRepEval's samples or a task mixture.",
        ),
        Recipe(
            "scirepeval-adapters",
            "Singh et al. 2023, SciRepEval (format adapters, stage 1)",
            MultiTask(),
            paper_settings(
                model={"format_modules": "adapters", "adapter_config": "seq_bn"},
                loss=_SCIREPEVAL_LOSS,
                training=_SCIREPEVAL_TRAINING,
            ),
            (_SHORT_WARM_UP,),
            notes="One bottleneck adapter per format on a frozen base, trained together on task-heterogeneous "
            "batches, with scirepeval-fusion as stage 2 on the saved model.",
        ),
        Recipe(
            "scirepeval-fusion",
            "Singh et al. 2023, SciRepEval (AdapterFusion, stage 2)",
            MultiTask(),
            paper_settings(model={"format_modules": "fusion"}, loss=_SCIREPEVAL_LOSS, training=_SCIREPEVAL_TRAINING),
            (
                _SHORT_WARM_UP,
                _PROXIMITY_MNR,
                Departure(
                    "training.learning_rate",
                    1e-3,
                    "At SciRepEval's rate a short run left the fusion where it started.",
                    _VALIDATION,
                    True,
                ),
            ),
            notes="Per format an AdapterFusion layer over the frozen adapters of --base (a model trained with "
            "scirepeval-adapters), trained on the same multi-task batches.",
        ),
        Recipe(
            "scirepeval-pals",
            "Singh et al. 2023, SciRepEval (PALs)",
            MultiTask(),
            paper_settings(
                model={"format_modules": "pals", "pals_hidden_size": 204, "pals_attention_heads": 6},
                loss=_SCIREPEVAL_LOSS,
                training=_SCIREPEVAL_TRAINING,
            ),
            (_SHORT_WARM_UP, _PROXIMITY_MNR, *_UNIT_VECTOR_FINE_TUNING),
            notes="Projected attention layers per format, trained jointly with the whole network on the multi-task "
            "batches.",
        ),
        Recipe(
            "spectroid-heads",
            "Capuano et al., SPECTROID (classification heads)",
            Classification(),
            paper_settings(
                model={"head": "CH2", "head_learning_rate": 1e-3, "head_only_steps": 0},
                training={
                    "learning_rate": 2e-5,
                    "lr_scheduler_type": "linear",
                    "warmup_steps": 0.1,
                    "num_train_epochs": 3,
                    "per_device_train_batch_size": 16,
                    "weight_decay": 0.01,
                },
            ),
            (
                Departure(
                    "model.head",
                    "CH1",
                    "The linear head beat the paper's one-hidden-layer head on a few hundred labelled papers.",
                    _VALIDATION,
                ),
                Departure(
                    "model.head_only_steps",
                    300,
                    "A random head trained end-to-end in a short run stays far below a linear probe, so the head is "
                    "first fitted alone on the frozen encoder (LP-FT).",
                    _VALIDATION,
                ),
                Departure(
                    "model.text_pooling",
                    "mean",
                    f"The head reads the mean of the text's final states, since {_MEAN}.",
                    _VALIDATION,
                    True,
                ),
                Departure(
                    "model.weight_average",
                    0.5,
                    "WiSE-FT's average with the start keeps what the base knows, as in the citation recipes.",
                    _VALIDATION,
                    True,
                ),
            ),
            notes="The encoder with an MLP head, trained end-to-end with cross-entropy, BERT fine-tuning defaults "
            "for the optimiser, the head at a rate of its own (model.head_learning_rate).",
        ),
        Recipe(
            "moe-cocitation",
            "Hallee, Kapur et al. 2024, MoE BERT",
            Pairs(family="moe_bert"),
            paper_settings(
                model={"domains": ["cs"], "routing": "enforced"},
                data={"domain": "cs", "pairs": "cocitations"},
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
            ),
            (
                Departure(
                    "data.pairs",
                    "citations",
                    "Co-citation pairs fell below the base on validation queries at every learning rate tried.",
                    _VALIDATION,
                ),
                Departure(
                    "loss.similarity", "cosine", "Unit vectors are compared by their cosine.", _VALIDATION, True
                ),
                Departure(
                    "loss.temperature",
                    0.05,
                    "Sentence-transformers' fixed scale for cosine similarities.",
                    _VALIDATION,
                    True,
                ),
                Departure(
                    "loss.learn_temperature",
                    False,
                    "A fixed temperature, as the base was trained with.",
                    _VALIDATION,
                    True,
                ),
                *_UNIT_VECTOR_FINE_TUNING,
            ),
            notes="Positive pairs, multiple-negatives ranking over the full in-batch matrix with a learned "
            "temperature and cosine decay, experts copied from the pretrained MLP, routing by domain token.",
        ),
    )
}


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    return RECIPES[name]


def read_overrides(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Settings from a YAML (``.yaml`` / ``.yml``) or JSON file.

    The settings are nested by section or have dotted keys.
    """
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
