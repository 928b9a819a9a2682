"""SciRepEval's multi-task training: classification, regression, proximity and search, one head each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..settings import DataKind, Schema
from .base import ModelSettings, Objective, RunSettings, anchoring, loss_options


@dataclass(frozen=True)
class MultiTaskModel(ModelSettings):
    """The model settings of the multi-task objective.

    Attributes:
        format_modules: SciRepEval's per-format modules (``None``: none, or the family's control codes).
        adapter_config: the adapters' configuration (``format_modules=adapters``).
        pals_hidden_size: the PALs' hidden size (``format_modules=pals``).
        pals_attention_heads: the PALs' attention heads (``format_modules=pals``).
        head_learning_rate: the learning rate of the task heads (unset: the model's).
    """

    format_modules: Literal["adapters", "fusion", "pals"] | None = None
    adapter_config: str = "seq_bn"
    pals_hidden_size: int = 204
    pals_attention_heads: int = 6
    head_learning_rate: float | None = None


@dataclass(frozen=True)
class MultiTask(Objective):
    """Task-heterogeneous batches, each task through its format and its own head."""

    name: ClassVar[str] = "multitask"
    data: ClassVar[DataKind] = DataKind.SCIREPEVAL
    Model: ClassVar[type] = MultiTaskModel

    @property
    def trainer(self) -> type:
        from ..trainers import MultiTaskTrainer

        return MultiTaskTrainer

    def loss_schema(self, loss: Any) -> Schema:
        """The loss section's keys: :class:`~sciembed.training.losses.MultiTaskLoss`'s and the anchoring's.

        Args:
            loss: the resolved loss settings.
        """
        from ..losses import MultiTaskLoss
        from ..settings import signature_schema

        return {**super().loss_schema(loss), **signature_schema(MultiTaskLoss, ("tasks", "hidden_size"))}

    def model(self, base: str, settings: RunSettings, examples: Any, trust_remote_code: bool) -> tuple[Any, Any]:
        """The base or the family, with SciRepEval's format modules."""
        model, tokenizer = super().model(base, settings, examples, trust_remote_code)
        add_format_modules(model, settings.model, base)
        return model, tokenizer

    def loss(self, settings: RunSettings, model: Any, examples: Any) -> Any:
        """One head per task, proximity and search ranked alike."""
        from ..losses import MultiTaskLoss, TaskSpec

        specs = {
            name: TaskSpec(_HEAD_KINDS.get(kind, kind), labels) for name, (kind, labels) in examples.tasks.items()
        }
        return MultiTaskLoss(specs, model.config.hidden_size, **loss_options(settings.loss))

    def collator(self, tokenizer: Any, max_length: int, model: Any, examples: Any) -> Any:
        """Rows grouped by task and format."""
        from ..collators import MultiTaskCollator

        kinds = {name: kind for name, (kind, _) in examples.tasks.items()}
        return MultiTaskCollator(tokenizer, max_length, task_kinds=kinds)

    def trainer_options(self, settings: RunSettings, model: Any, examples: Any) -> dict[str, Any]:
        """The modules trained alone, the anchoring, the task weights and the heads' learning rate."""
        modules = settings.model.format_modules
        options: dict[str, Any] = {"adapter_training": modules} if modules in _TRAINED_ALONE else {}
        options.update(anchoring(settings.loss, examples.anchor_papers))
        if examples.task_weights:
            options["task_weights"] = examples.task_weights
        if settings.model.head_learning_rate is not None:
            options["loss_learning_rate"] = settings.model.head_learning_rate
        return options

    def starts_as_published(self, settings: Any, published: Any) -> bool:
        """A model with format modules embeds otherwise than the base at step 0."""
        return not settings["model"].get("format_modules") and super().starts_as_published(settings, published)


def add_format_modules(model: Any, settings: MultiTaskModel, base: str) -> None:
    """Add SciRepEval's format modules: stage-1 adapters, stage-2 fusion or PALs.

    Args:
        model: the model.
        settings: the model settings.
        base: the base checkpoint (fusion reads its adapters).
    """
    if settings.format_modules is not None:
        _FORMAT_MODULES[settings.format_modules](model, settings, base)


def _adapters(model: Any, settings: MultiTaskModel, base: str) -> None:
    """Stage 1: one adapter per format on the frozen base."""
    from ...formats import adapters as format_adapters

    format_adapters.add_format_adapters(model, config=settings.adapter_config)
    format_adapters.train_format_adapters(model)


def _fusion(model: Any, settings: MultiTaskModel, base: str) -> None:
    """Stage 2: per format a fusion over the adapters saved with ``base``, the adapters frozen."""
    from ...formats import adapters as format_adapters
    from ...formats import load_format_modules

    if not Path(base).is_dir() or len(load_format_modules(model, base)) < 2:
        raise ValueError(
            f"{base}: AdapterFusion trains over format adapters; give as --base a model trained with "
            "scirepeval-adapters"
        )
    format_adapters.add_format_fusion(model)
    format_adapters.train_format_fusion(model)


def _pals(model: Any, settings: MultiTaskModel, base: str) -> None:
    """Projected attention layers per format, trained with the whole network."""
    from ...formats.pals import PALsConfig, add_pals

    add_pals(
        model,
        PALsConfig(hidden_size=settings.pals_hidden_size, num_attention_heads=settings.pals_attention_heads),
    )


#: ``model.format_modules`` -> how the modules are added.
_FORMAT_MODULES = {"adapters": _adapters, "fusion": _fusion, "pals": _pals}
#: The format modules trained alone, the rest of the model frozen.
_TRAINED_ALONE = ("adapters", "fusion")
#: A task kind whose head is another kind's: search trains as proximity.
_HEAD_KINDS = {"search": "proximity"}
