"""SPECTROID's classification heads: the encoder with an MLP head, trained end-to-end on labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..settings import DataKind, Schema
from .base import ModelSettings, Objective, RunSettings


@dataclass(frozen=True)
class ClassificationModel(ModelSettings):
    """The model settings of the classification objective.

    Attributes:
        head: ``CH1``, ``CH2``, ``CH3`` or a list of hidden sizes.
        head_learning_rate: the head's learning rate (unset: the model's).
        head_only_steps: the steps the head is first fitted alone on the frozen encoder.
    """

    head: str | list[int] = "CH2"
    head_learning_rate: float | None = None
    head_only_steps: int = 0


@dataclass(frozen=True)
class Classification(Objective):
    """Labelled papers through a classification head, cross-entropy."""

    family: str | None = "spectroid"
    name: ClassVar[str] = "classification"
    data: ClassVar[DataKind] = DataKind.LABELLED
    Model: ClassVar[type] = ClassificationModel
    anchors: ClassVar[bool] = False

    @property
    def trainer(self) -> type:
        from ..trainers import PaperClassificationTrainer

        return PaperClassificationTrainer

    def family_schema(self) -> Schema:
        """The options the classifier's configuration takes."""
        import importlib

        from transformers import BertConfig, PretrainedConfig

        from ...families import REGISTRY, register_families
        from ..settings import signature_schema

        register_families()
        module = importlib.import_module(f"sciembed.modeling.{self.family}")
        config_class = getattr(module, REGISTRY[self.family].classifier_class).config_class
        schema: Schema = {}
        for known in (PretrainedConfig, BertConfig, config_class):
            schema.update(signature_schema(known))
        return schema

    def model(self, base: str, settings: RunSettings, examples: Any, trust_remote_code: bool) -> tuple[Any, Any]:
        """The classifier with one output per label."""
        from ...checkpoint_files import transformer_path
        from ...families import classifier_from_bert

        labels = examples.labels or []
        return classifier_from_bert(
            self.family,
            transformer_path(base),
            head=settings.model.head,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            trust_remote_code=trust_remote_code,
            **settings.family_options,
        )

    def loss(self, settings: RunSettings, model: Any, examples: Any) -> Any:
        """None: the classifier computes its cross-entropy."""
        return None

    def collator(self, tokenizer: Any, max_length: int, model: Any, examples: Any) -> Any:
        """Papers with their labels."""
        from ..collators import LabelledPaperCollator

        return LabelledPaperCollator(tokenizer, max_length)

    def trainer_options(self, settings: RunSettings, model: Any, examples: Any) -> dict[str, Any]:
        """The head's learning rate and its steps alone."""
        return {
            "head_learning_rate": settings.model.head_learning_rate,
            "head_only_steps": settings.model.head_only_steps,
        }

    def default_pooling(self, model: Mapping[str, Any], published: str | None) -> str | None:
        """The text's mean where the classifier's encoder returns it, else the family's own."""
        # the text's mean is what the classifier's encoder returns (SpectroidConfig.text_pooling)
        return "mean" if model.get("text_pooling") == "mean" else None

    def starts_as_published(self, settings: Any, published: Any) -> bool:
        """A classifier's head is new: it never starts as the published base."""
        return False
