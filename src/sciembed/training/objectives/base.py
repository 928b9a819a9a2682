"""What every training objective shares: its settings' schema, its model, and the anchoring term.

An objective turns a recipe's resolved settings into the parts of a run: examples from a data source, the model
built from the base, the loss, the collator and the trainer with its options. The module imports neither torch
nor transformers, so that the recipe table reads without them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..settings import DataKind, DataSettings, EmbeddingSettings, Schema, check_section, schema_of, typed


@dataclass(frozen=True)
class ModelSettings:
    """The model options every objective takes.

    Attributes:
        weight_average: the share of the trained weights in a WiSE-FT average with the starting ones.
    """

    weight_average: float = 1.0


@dataclass(frozen=True)
class RunSettings:
    """A run's settings, parsed once into the objective's dataclasses.

    Attributes:
        model: the objective's model settings.
        embedding: how the model embeds.
        data: the objective's data settings.
        loss: the loss's settings as given (``name`` and the loss class's parameters).
        training: the ``TrainingArguments`` fields.
        family_options: the model settings that go to the family's configuration.
        data_options: the data settings outside the objective's dataclass (a sampler's options).
    """

    model: Any
    embedding: EmbeddingSettings
    data: Any
    loss: Mapping[str, Any]
    training: Mapping[str, Any]
    family_options: Mapping[str, Any]
    data_options: Mapping[str, Any]


#: ``loss.name`` -> the loss's class name in :mod:`sciembed.training.losses`.
LOSSES = {"triplet": "TripletMarginLoss", "mnr": "MultipleNegativesRankingLoss", "multi2spe": "Multi2SPELoss"}
#: The anchoring settings of the loss section (:class:`~sciembed.training.losses.RelationalAnchorLoss`).
ANCHOR_SCHEMA: Schema = {"anchor_weight": float, "anchor_batch_size": int}
#: The loss section's settings that go to the trainer, not to the loss class.
_TRAINER_LOSS_SETTINGS = frozenset({*ANCHOR_SCHEMA, "micro_batch_size"})
#: The model settings of objectives that train a head.
HEAD_SETTINGS = ("head_learning_rate", "head_only_steps")


@dataclass(frozen=True)
class Objective:
    """How a recipe trains: its examples, model, loss, collator and trainer.

    Attributes:
        family: the model family built from the base (``None``: the base encoder as it is).
    """

    family: str | None = None

    #: The objective's name, as ``train_results.json`` and messages give it.
    name: ClassVar[str]
    #: What ``--data`` must hold.
    data: ClassVar[DataKind]
    #: The objective's model settings.
    Model: ClassVar[type] = ModelSettings
    #: The objective's data settings.
    Data: ClassVar[type] = DataSettings
    #: The ``loss.name`` values the objective takes (empty: the objective has one loss of its own).
    losses: ClassVar[tuple[str, ...]] = ()
    #: Whether the objective adds the anchoring term (``data.anchor_papers``).
    anchors: ClassVar[bool] = True
    #: Whether ``model.family=none`` trains the recipe on the base encoder as it is.
    has_dense_variant: ClassVar[bool] = False

    @property
    def trainer(self) -> type:
        """The objective's ``Trainer`` class."""
        raise NotImplementedError

    def schema(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, Schema]:
        """Each section's keys with their type hints, for these settings (the loss's follow ``loss.name``).

        Args:
            settings: the resolved settings by section.
        """
        from ..settings import training_schema

        return {
            "model": {**self.family_schema(), **schema_of(self.Model), "family": None},
            "embedding": schema_of(EmbeddingSettings),
            "data": self.data_schema(settings["data"]),
            "loss": self.loss_schema(settings["loss"]),
            "training": training_schema(),
        }

    def family_schema(self) -> Schema:
        """The options the family's configuration takes (none without a family)."""
        if self.family is None:
            return {}
        from transformers import BertConfig

        from ...families import family_class
        from ..settings import signature_schema

        return {
            **signature_schema(BertConfig),
            **signature_schema(family_class(self.family).config_class),
        }

    def data_schema(self, data: Mapping[str, Any]) -> Schema:
        """The data section's keys.

        Args:
            data: the resolved data settings.
        """
        return schema_of(self.Data)

    def loss_schema(self, loss: Mapping[str, Any]) -> Schema:
        """The loss section's keys: the chosen loss's parameters and the anchoring settings.

        Args:
            loss: the resolved loss settings.
        """
        from .. import losses
        from ..settings import signature_schema

        schema = dict(ANCHOR_SCHEMA) if self.anchors else {}
        if self.losses:
            from typing import Literal

            schema["name"] = Literal[self.losses]  # type: ignore[valid-type]
            name = loss.get("name")
            if name in LOSSES:
                schema.update(signature_schema(getattr(losses, LOSSES[name]), ("gather_across_processes",)))
        return schema

    def check(self, settings: Mapping[str, Mapping[str, Any]], recipe: str) -> None:
        """Refuse a key outside the schema or a value of the wrong type.

        Args:
            settings: the resolved settings by section.
            recipe: the recipe's name, for messages.
        """
        schema = self.schema(settings)
        heads = [key for key in HEAD_SETTINGS if key in settings["model"] and key not in schema["model"]]
        if heads:
            raise ValueError(
                f"recipe {recipe} trains no head that {', '.join(f'model.{k}' for k in heads)} could apply to"
            )
        anchored = settings["data"].get("anchor_papers") is not None or set(ANCHOR_SCHEMA) & set(settings["loss"])
        if anchored and not self.anchors:
            raise ValueError(
                f"recipe {recipe} ({self.name} objective) does not anchor papers; the triplet, Multi2SPE, "
                "pair and multi-task recipes do"
            )
        if "micro_batch_size" in settings["loss"] and "micro_batch_size" not in schema["loss"]:
            raise ValueError(
                f"loss.micro_batch_size: recipe {recipe} ({self.name} objective) embeds each batch at "
                "once; the triplet and Multi2SPE recipes take micro-batches"
            )
        if self.losses and settings["loss"].get("name") not in self.losses:
            raise ValueError(
                f"recipe {recipe}: loss.name must be one of {', '.join(self.losses)}, "
                f"got {settings['loss'].get('name')!r}"
            )
        for section in ("model", "embedding", "data"):
            check_section(section, settings[section], schema[section], f"recipe {recipe} ({self.name} objective)")
        self.check_loss(settings["loss"], schema["loss"], recipe)

    def check_loss(self, loss: Mapping[str, Any], schema: Schema, recipe: str) -> None:
        """Refuse ``loss.*`` settings the chosen loss does not take (``loss.margin`` with ``loss.name=mnr``).

        Args:
            loss: the loss settings.
            schema: the loss section's keys.
            recipe: the recipe's name, for messages.
        """
        unknown = sorted(set(loss) - set(schema))
        if unknown:
            name = loss.get("name")
            what = f"{LOSSES[name]} (loss.name={name})" if name in LOSSES else f"recipe {recipe}'s loss"
            raise ValueError(
                f"loss.{', loss.'.join(unknown)}: not a setting of {what}; its settings: {', '.join(sorted(schema))}"
            )
        check_section("loss", loss, schema, f"recipe {recipe}")

    def parse(self, settings: Mapping[str, Mapping[str, Any]]) -> RunSettings:
        """The resolved settings as the objective's dataclasses.

        Args:
            settings: the resolved settings by section.
        """
        model, data = settings["model"], settings["data"]
        own = {f.name for f in dataclasses.fields(self.Model)} | {"family"}
        data_fields = {f.name for f in dataclasses.fields(self.Data)}
        return RunSettings(
            typed(self.Model, model),
            typed(EmbeddingSettings, settings["embedding"]),
            typed(self.Data, data),
            dict(settings["loss"]),
            dict(settings["training"]),
            {key: value for key, value in model.items() if key not in own},
            {key: value for key, value in data.items() if key not in data_fields},
        )

    def examples(self, source: Any, settings: RunSettings) -> Any:
        """The run's examples from ``source``.

        Args:
            source: the detected data layout (:mod:`sciembed.training.sources`).
            settings: the run's settings.
        """
        from ..sources import read_examples

        return read_examples(source, settings.data, self.rows(settings))

    def rows(self, settings: RunSettings) -> Any:
        """How citation graphs become rows (``None``: the objective reads no citation graph).

        Args:
            settings: the run's settings.
        """
        return None

    def model(self, base: str, settings: RunSettings, examples: Any, trust_remote_code: bool) -> tuple[Any, Any]:
        """The model and tokenizer built from ``base``.

        Args:
            base: the base checkpoint.
            settings: the run's settings.
            examples: the run's examples.
            trust_remote_code: whether the base's own code may run.
        """
        from ...checkpoint_files import transformer_path
        from ...families import from_bert

        source = transformer_path(base)  # a sentence-transformers folder's transformer may sit in a subfolder
        if self.family is None:
            return plain_encoder(source, trust_remote_code)
        return from_bert(self.family, source, trust_remote_code=trust_remote_code, **settings.family_options)

    def loss(self, settings: RunSettings, model: Any, examples: Any) -> Any:
        """The loss module (``None``: the model computes its own).

        Args:
            settings: the run's settings.
            model: the model.
            examples: the run's examples.
        """
        from .. import losses

        options = loss_options(settings.loss)
        return getattr(losses, LOSSES[options.pop("name")])(**options)

    def collator(self, tokenizer: Any, max_length: int, model: Any, examples: Any) -> Any:
        """The collator that turns rows into model inputs.

        Args:
            tokenizer: the model's tokenizer.
            max_length: the tokens each training text is cut to.
            model: the model.
            examples: the run's examples.
        """
        raise NotImplementedError

    def trainer_options(self, settings: RunSettings, model: Any, examples: Any) -> dict[str, Any]:
        """The trainer's options beyond those every trainer takes.

        Args:
            settings: the run's settings.
            model: the model.
            examples: the run's examples.
        """
        return anchoring(settings.loss, examples.anchor_papers)

    def domain(self, settings: RunSettings) -> str | None:
        """The domain the trainer evaluates a mixture-of-experts model in (``None``: none).

        Args:
            settings: the run's settings.
        """
        return None

    def default_pooling(self, model: Mapping[str, Any], published: str | None) -> str | None:
        """The pooling a run uses when ``embedding.pooling`` is unset (``None``: the family's own).

        Args:
            model: the resolved model settings.
            published: the base's published pooling.
        """
        return (published or "cls") if self.family is None else None

    def starts_as_published(self, settings: Mapping[str, Mapping[str, Any]], published: Any) -> bool:
        """Whether the model at step 0 embeds exactly as the base as published.

        Args:
            settings: the resolved settings by section.
            published: the base's published embedding (:func:`~sciembed.checkpoint_files.base_embedding`).
        """
        embedding = settings["embedding"]
        return (
            self.family is None
            and published.pooling is not None
            and (embedding["pooling"], embedding["normalize"]) == (published.pooling, published.normalize)
        )


def plain_encoder(source: str, trust_remote_code: bool) -> tuple[Any, Any]:
    """The base encoder as it is, in float32, with its tokenizer.

    Args:
        source: the base's transformer folder or Hub id.
        trust_remote_code: whether the base's own code may run.
    """
    from transformers import AutoModel, AutoTokenizer

    from ...checkpoint_weights import check_weights_fit

    check_weights_fit(source)  # a family's from_bert checks its base itself
    # float32 weights whatever the checkpoint stores: bf16 / fp16 training keeps float32 master weights.
    model = AutoModel.from_pretrained(source, trust_remote_code=trust_remote_code, dtype="float32")
    return model, AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)


def loss_options(loss: Mapping[str, Any]) -> dict[str, Any]:
    """The loss section without the settings that are not the loss class's (anchoring, micro-batches).

    Args:
        loss: the loss settings.
    """
    return {k: v for k, v in loss.items() if k not in _TRAINER_LOSS_SETTINGS}


def anchoring(loss: Mapping[str, Any], papers: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The trainer's ``anchoring`` from ``data.anchor_papers`` and ``loss.anchor_weight``.

    Args:
        loss: the loss settings (``anchor_weight``, ``anchor_batch_size``).
        papers: the anchor papers (``None``: no anchoring).
    """
    from ..losses import RelationalAnchorLoss
    from ..trainers import Anchoring

    weight = loss.get("anchor_weight")
    if papers is None and weight is None:
        return {}
    if papers is None or weight is None:
        raise ValueError("anchoring takes both data.anchor_papers (the papers) and loss.anchor_weight (its weight)")
    batch_size = loss.get("anchor_batch_size", 16)
    return {"anchoring": Anchoring(papers, RelationalAnchorLoss(weight), batch_size)}
