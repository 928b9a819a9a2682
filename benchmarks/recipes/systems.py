"""The systems of the recipes table: a recipe and the settings that differ from its defaults, named by them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sciembed.training.recipes import ANCHOR_FILES, ANCHORED

#: MiniLM as published, not trained.
REFERENCE = "MiniLM as published"
#: sentence-transformers' own trainer on the specter recipe's triplets.
PEER = "sentence-transformers"
#: Examples per optimiser step.
BATCH = 32
#: WiSE-FT's share of the trained weights, the one override in which ``--reuse-training`` lets two systems differ.
SHARE = "model.weight_average"
#: Short names of settings in a system's name; other settings go by the last part of their dotted key.
SHORT = {
    "learning_rate": "lr",
    "weight_average": "wise",
    "num_cls_tokens": "k",
    "per_device_train_batch_size": "batch",
    "gradient_accumulation_steps": "accumulation",
    "control_code_init": "codes",
}


@dataclass(frozen=True)
class System:
    """A trained row: a recipe with its defaults, or with the settings that make it a variant.

    Args:
        recipe: the sciembed recipe it trains.
        description: what the row is, in a sentence.
        overrides: the dotted recipe settings it changes.
        counterpart: the name of the system its paired intervals are also drawn against.
        mixture: trains on the seed's task mixture (``tasks.write_mixture``) instead of CACM's citations.
        after: a second stage that starts from this system's kept model of the same seed.
        labelled: trains a classification head on CACM's categories, judged by its predictions.
        domains: trains on CACM (``cs``) and hep-th (``physics``) without the seed's hep-th queries.
        anchors: files of SciRepEval's samples whose papers' pairwise cosines it keeps.
        cite_weight: the citations' weight in the task mixture against the other tasks' 1.
    """

    recipe: str
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)
    counterpart: str | None = None
    mixture: bool = False
    after: str | None = None
    labelled: bool = False
    domains: bool = False
    anchors: tuple[str, ...] = ()
    cite_weight: float = 1.0

    @property
    def name(self) -> str:
        """The recipe and each setting that differs, e.g. ``specter[lr=2e-5,wise=1]``."""
        settings = {
            SHORT.get(key.rpartition(".")[2], key.rpartition(".")[2]): value for key, value in self.overrides.items()
        }
        if self.domains:
            settings["data"] = "domains"
        if self.anchors:
            settings["anchors"] = "+".join(Path(name).stem for name in self.anchors)
        if self.cite_weight != 1.0:
            settings["cite_weight"] = self.cite_weight
        shown = ",".join(f"{key}={_shown(value)}" for key, value in settings.items())
        return f"{self.recipe}[{shown}]" if shown else self.recipe


def _shown(value: Any) -> str:
    """A setting's value as a name shows it: ``2e-5``, ``50``, ``none``."""
    if value is None:
        return "none"
    if isinstance(value, float):
        mantissa, _, exponent = f"{value:g}".partition("e")
        return f"{mantissa}e{int(exponent)}" if exponent else mantissa
    return str(value)


def variant(system: System, description: str, overrides: dict[str, Any], against: System | None = None) -> System:
    """``system`` with more ``overrides``, drawn against ``against``.

    Args:
        system: the system it changes.
        description: what the change is, appended to the system's description.
        overrides: the dotted settings it adds or replaces.
        against: its counterpart (none without).
    """
    return replace(
        system,
        description=f"{system.description}; {description}",
        overrides={**system.overrides, **overrides},
        counterpart=None if against is None else against.name,
    )


def _table() -> dict[str, System]:
    """Every system of the table by its name."""
    specter_2e5 = System(
        "specter",
        "SPECTER recipe on MiniLM at SPECTER's learning rate 2e-5, no weight averaging",
        {"learning_rate": 2e-5, SHARE: 1.0},
    )
    specter = System(
        "specter",
        "SPECTER recipe (citation triplets) on MiniLM: in unit vectors multiple-negatives ranking at lr 1e-4, then "
        "WiSE-FT's average with MiniLM",
        counterpart=specter_2e5.name,
    )
    scincl = System("scincl", "SciNCL recipe (graph-neighbour triplets) on MiniLM", counterpart=specter.name)
    multi2spe_k1 = System(
        "multi2spe", "Multi2SPEModel with one CLS token (K = 1), multi2spe recipe", {"model.num_cls_tokens": 1}
    )
    multi2spe = System(
        "multi2spe", "Multi2SPEModel (K = 3) from MiniLM, multi2spe recipe", counterpart=multi2spe_k1.name
    )
    moe = System("moe-cocitation", "MoEBertModel from MiniLM (enforced routing, domain cs), citation pairs")
    multi2spe_k1_domains = replace(
        multi2spe_k1, description=f"{multi2spe_k1.description} on CACM + hep-th", domains=True
    )
    multi2spe_domains = System(
        "multi2spe",
        "Multi2SPEModel (K = 3) from MiniLM, multi2spe recipe on CACM + hep-th",
        counterpart=multi2spe_k1_domains.name,
        domains=True,
    )
    moe_dense_domains = System(
        "moe-cocitation",
        "MiniLM as it is (no experts), the moe-cocitation recipe on CACM + hep-th",
        {"model.family": "none"},
        domains=True,
    )
    moe_domains = System(
        "moe-cocitation",
        "MoEBertModel from MiniLM, one expert per domain (cs, physics), citation pairs of CACM + hep-th",
        counterpart=moe_dense_domains.name,
        domains=True,
    )
    ctrl = System(
        "scirepeval-ctrl",
        "ControlCodeModel from MiniLM, multi-task on the seed's task mixture",
        counterpart=specter.name,
        mixture=True,
    )
    ctrl_random = variant(
        ctrl, "the control codes' rows drawn at random as the paper's", {"model.control_code_init": "normal"}, ctrl
    )
    ctrl_triplet = variant(
        ctrl,
        "the paper's triplet loss for citations and random control codes",
        {"loss.proximity": "triplet", "model.control_code_init": "normal"},
    )
    adapters = System(
        "scirepeval-adapters",
        "MiniLM with a bottleneck adapter per format, multi-task on the seed's task mixture",
        counterpart=specter.name,
        mixture=True,
    )
    fusion = System(
        "scirepeval-fusion",
        "AdapterFusion over the seed's scirepeval-adapters model, the same task mixture",
        counterpart=specter.name,
        mixture=True,
        after=adapters.name,
    )
    fusion_paper = variant(
        fusion,
        "as the paper trains it: the triplet loss for citations, its learning rate",
        {"loss.proximity": "triplet", "learning_rate": 5e-5},
        fusion,
    )
    pals = System(
        "scirepeval-pals",
        "MiniLM with PALs per format, multi-task on the seed's task mixture",
        counterpart=specter.name,
        mixture=True,
    )
    pals_triplet = variant(
        pals,
        "as the paper trains them: the triplet loss for citations, its learning rate, no weight averaging",
        {"loss.proximity": "triplet", "learning_rate": 5e-5, SHARE: 1.0},
        pals,
    )
    pals_anchored = replace(
        variant(
            pals,
            "the citations weighing 4 against the other tasks' 1, batches of 32 without accumulation, keeping the "
            "pairwise cosines of SciRepEval's SPECTER sample's papers (relational anchoring, weight 50), no weight "
            "averaging: chosen on validation data",
            {
                "training.per_device_train_batch_size": 32,
                "training.gradient_accumulation_steps": 1,
                "loss.anchor_weight": 50.0,
                SHARE: 1.0,
            },
            pals,
        ),
        anchors=("specter_small.json",),
        cite_weight=4.0,
    )
    heads = System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM, the recipe's defaults (CH1 linear head fitted alone first, "
        "the text's mean, WiSE-FT 0.5), CACM categories",
        labelled=True,
    )
    heads_paper = System(
        "spectroid-heads",
        "SpectroidForSequenceClassification from MiniLM as the paper trains it: CH2 from random, end to end, on [CLS]",
        {"model.head": "CH2", "model.head_only_steps": 0, "model.text_pooling": None, SHARE: 1.0},
        labelled=True,
    )
    ch2, ch3 = (
        System(
            "spectroid-heads",
            f"SpectroidForSequenceClassification from MiniLM, the recipe's defaults with {head}",
            {"model.head": head.split()[0]},
            labelled=True,
        )
        for head in ("CH2 (one hidden layer of 64)", "CH3 (five hidden layers)")
    )
    # The share WiSE-FT kept before it was chosen on out-of-domain validation data too, each against its counterpart's.
    half = {SHARE: 0.5}
    specter_half = variant(specter, "WiSE-FT's share 0.5", half)
    multi2spe_k1_half = variant(multi2spe_k1, "WiSE-FT's share 0.5", half)
    multi2spe_k1_domains_half = variant(multi2spe_k1_domains, "WiSE-FT's share 0.5", half)
    moe_dense_domains_half = variant(moe_dense_domains, "WiSE-FT's share 0.5", half)
    specter_anchored = replace(
        variant(
            specter,
            "keeping the pairwise cosines of other fields' papers (relational anchoring, weight 50, on SciRepEval's "
            "MeSH sample and its triplets' papers), WiSE-FT's share 0.5: both chosen on validation data",
            ANCHORED,
            specter_half,
        ),
        anchors=ANCHOR_FILES,
    )
    systems = [
        specter,
        specter_2e5,
        specter_anchored,
        scincl,
        multi2spe,
        multi2spe_k1,
        moe,
        multi2spe_domains,
        multi2spe_k1_domains,
        moe_domains,
        moe_dense_domains,
        ctrl,
        ctrl_random,
        ctrl_triplet,
        adapters,
        fusion,
        fusion_paper,
        pals,
        pals_triplet,
        pals_anchored,
        heads,
        heads_paper,
        ch2,
        ch3,
        specter_half,
        variant(scincl, "WiSE-FT's share 0.5", half, specter_half),
        variant(multi2spe, "WiSE-FT's share 0.5", half, multi2spe_k1_half),
        multi2spe_k1_half,
        variant(multi2spe_domains, "WiSE-FT's share 0.5", half, multi2spe_k1_domains_half),
        multi2spe_k1_domains_half,
        variant(moe, "WiSE-FT's share 0.5", half),
        variant(moe_domains, "WiSE-FT's share 0.5", half, moe_dense_domains_half),
        moe_dense_domains_half,
        variant(ctrl_random, "no weight averaging", {SHARE: 1.0}),
        variant(pals_anchored, "WiSE-FT's share 0.35", {SHARE: 0.35}, pals_anchored),
    ]
    table = {system.name: system for system in systems}
    if len(table) != len(systems):
        raise ValueError("two systems of the recipes table have the same settings")
    return table


SYSTEMS = _table()


def budget(seed: int, steps: int, max_length: int, held_out: float = 0.2) -> dict[str, Any]:
    """The recipe overrides every sciembed row of a seed trains with.

    Args:
        seed: the seed of the split, the sampling and the training.
        steps: optimiser steps of ``BATCH`` examples in one batch.
        max_length: tokens per training text.
        held_out: share of CACM's query papers held out for evaluation.
    """
    return {
        "data.held_out": held_out,
        "data.seed": seed,
        "seed": seed,
        "max_steps": steps,
        "data.max_length": max_length,
        "per_device_train_batch_size": BATCH,
        "gradient_accumulation_steps": 1,
        "save_strategy": "no",
        "eval_strategy": "no",
        "logging_steps": 5,
        "per_device_eval_batch_size": 32,
    }
