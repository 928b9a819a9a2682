"""``transformers.Trainer`` subclasses for the papers' objectives.

Each overrides only what it must: :meth:`~EmbeddingTrainer.compute_loss` (and the train sampler for
multi-task batches). Everything else (``TrainingArguments``, gradient accumulation, mixed precision,
checkpoints and resume, logging, ``accelerate`` / DDP / FSDP / DeepSpeed) is the plain Trainer's.

The embedding a loss sees is the one the model is later encoded with (:func:`sciembed.encode.pool`:
the family's ``pooler_output``, else ``[CLS]`` as SPECTER, or ``pooling="mean"``, L2-normalised with
``normalize``, as a base such as all-MiniLM-L6-v2 is used). The run saves the model with
sentence-transformers modules that say so, so :func:`sciembed.encode` gives exactly the trained vector. Losses with
parameters of their own (the learned temperature of
:class:`~.losses.MultipleNegativesRankingLoss`, the task heads of :class:`~.losses.MultiTaskLoss`)
are optimised with the model, saved in each checkpoint (``loss.pt``) and restored on resume. They are
not part of the saved model.

Passing a :class:`~sciembed.evaluation.TaskSuite` (e.g. the CACM cite task on held-out queries) as
``eval_dataset`` evaluates through :mod:`sciembed.evaluation` on every evaluation step, so its metrics
(``eval_cite_map``, ...) can drive ``metric_for_best_model``. Under DDP the main process evaluates once
and sends the metrics to the others.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn
from transformers import Trainer, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..encode import PaperEncoder, default_pooling, pool, with_domains
from ..evaluation.loaders import TaskSuite
from ..evaluation.runner import evaluate_suite
from ..families import family_of
from ..formats import activate_format, model_formats
from ..formats.adapters import fusion_regularization_loss, trainable_base_parameters
from ..removed import refuse_removed_keywords
from .collators import PaperCollator
from .losses import (
    Multi2SPELoss,
    MultipleNegativesRankingLoss,
    MultiTaskLoss,
    RelationalAnchorLoss,
    RouterLoss,
    TripletMarginLoss,
)
from .micro_batches import cached_loss, check_micro_batch_size, texts_per_forward
from .task_batches import TaskBalancedSampler

logger = logging.getLogger(__name__)

LOSS_STATE = "loss.pt"


@torch.no_grad()
def average_weights(model: nn.Module, starting: dict[str, torch.Tensor], share: float) -> None:
    """WiSE-FT (Wortsman et al. 2022), in place.

    Each floating-point weight of ``model`` becomes ``share * current + (1 - share) * starting[name]``. Weights
    missing from ``starting`` are left alone.
    """
    done = set()
    for name, value in model.state_dict().items():
        start = starting.get(name)
        # Tied weights appear under several names but must be averaged once.
        if start is not None and value.is_floating_point() and value.data_ptr() not in done:
            done.add(value.data_ptr())
            value.mul_(share).add_(start.to(value.device, value.dtype), alpha=1.0 - share)


@dataclass(frozen=True)
class PaperEmbedding:
    """How a trainer embeds a paper, in the loss and in evaluation.

    Attributes:
        pooling: ``cls`` or ``mean`` for a plain encoder (default: :func:`~sciembed.encode.default_pooling`).
        normalize: L2-normalise the paper embeddings.
        domain: the domain a mixture-of-experts model with enforced routing is evaluated in.
        task_format: the format a multi-format model (control codes, format adapters, PALs) embeds papers in.
            Unset: the trainer's own (``proximity`` for :class:`TripletTrainer`), else the model's default.
            Ignored by single-format models.
        max_length: tokens per text when evaluating (default: the model's limit).
    """

    pooling: Literal["cls", "mean"] | None = None
    normalize: bool = False
    domain: str | None = None
    task_format: str | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class Anchoring:
    """Papers outside the training data whose relations training keeps.

    Each training step of the triplet, pair and multi-task objectives adds ``loss`` on ``batch_size`` of the papers,
    drawn afresh each step. Their targets are their embeddings by the model as the Trainer was built (computed then
    in evaluation mode and tokenized by the ``data_collator``). The anchor batch is embedded in evaluation mode too,
    so the term is zero at step 0. A multi-format model keeps them in the trainer's format. Training several
    (:class:`MultiTaskTrainer`), it keeps them in each of its formats in turn, one per anchor batch. One process
    only: refused under DDP.

    Attributes:
        papers: the anchor paper records (e.g. other fields' papers).
        loss: the anchoring term.
        batch_size: anchor papers per training step (and per gradient-accumulation micro-batch).
    """

    papers: Sequence[Mapping[str, Any]]
    loss: RelationalAnchorLoss
    batch_size: int = 16


#: The keywords :class:`EmbeddingTrainer` took one by one and the dataclass that now holds each.
MOVED_TRAINER_KEYWORDS = {
    **{
        name: f"embedding=sciembed.training.trainers.PaperEmbedding({name}=...)"
        for name in ("pooling", "normalize", "domain", "task_format", "max_length")
    },
    **{
        f"anchor_{name}": f"anchoring=sciembed.training.trainers.Anchoring({name}=...)"
        for name in ("papers", "loss", "batch_size")
    },
}


class EmbeddingTrainer(Trainer):
    """The shared part of sciembed's trainers: embedding, trainable losses and task evaluation.

    Args:
        model: the encoder being trained (a transformers model, any sciembed family).
        args: ``TrainingArguments``.
        loss: the loss module.
        embedding: how papers are embedded (:class:`PaperEmbedding`: pooling, normalize, domain, task_format,
            max_length).
        eval_dataset: a :class:`~sciembed.evaluation.TaskSuite` to evaluate with sciembed's
            evaluators, or anything the plain Trainer evaluates.
        adapter_training: ``adapters`` or ``fusion`` when training format adapters or AdapterFusion
            (:mod:`sciembed.formats.adapters`): training refuses to start while a base parameter (neither an
            adapter's nor a fusion's) requires grad, and for ``fusion`` the value regularisation of the fusions
            whose config asks for it, ``0.01 * sum ||I - V||^2`` (Pfeiffer et al. 2021), is added to
            the loss of every training step of the triplet, pair and multi-task objectives. (The adapters
            library adds its gradient after each optimiser step instead. Adding it to the loss is the paper's
            formulation, and it is scaled with gradient accumulation like the rest of the loss.)
        weight_average: WiSE-FT (Wortsman et al. 2022, "Robust fine-tuning of zero-shot models"): when training ends,
            the model's weights become ``weight_average * trained + (1 - weight_average) * starting``, the starting
            weights being the model's when the Trainer was built (kept on CPU meanwhile, and a resumed run rebuilds
            them the same way). 1 keeps the trained weights. Lower values keep more of what the base knew out of
            domain. Applied after ``load_best_model_at_end`` and before the final evaluation.
        loss_learning_rate: the learning rate of the loss's own parameters (the multi-task heads, a learned
            temperature). By default the run's. A multi-task head starts at random: at an encoder's fine-tuning
            rate it barely moves in a short run, and its loss sends the encoder gradients of a head near chance.
        anchoring: papers whose relations the model keeps (:class:`Anchoring`, default: none).
        kwargs: the rest of ``transformers.Trainer``'s arguments (``train_dataset``, ``data_collator``,
            ``processing_class`` (the tokenizer), ``callbacks``, ...).
    """

    #: The format a multi-format model embeds papers in when ``embedding.task_format`` is unset.
    default_task_format: ClassVar[str | None] = None

    def __init__(
        self,
        model: nn.Module,
        args: Any,
        *,
        loss: nn.Module | None = None,
        embedding: PaperEmbedding | None = None,
        eval_dataset: Any = None,
        adapter_training: Literal["adapters", "fusion"] | None = None,
        weight_average: float = 1.0,
        loss_learning_rate: float | None = None,
        anchoring: Anchoring | None = None,
        **kwargs: Any,
    ):
        refuse_removed_keywords(f"sciembed.training.trainers.{type(self).__name__}", kwargs, MOVED_TRAINER_KEYWORDS)
        embedding = PaperEmbedding() if embedding is None else embedding
        if not isinstance(embedding, PaperEmbedding):
            raise TypeError(
                f"embedding= takes a sciembed.training.trainers.PaperEmbedding(pooling=..., ...), "
                f"got {type(embedding).__name__}"
            )
        if anchoring is not None and not isinstance(anchoring, Anchoring):
            raise TypeError(
                "anchoring= takes a sciembed.training.trainers.Anchoring(papers, loss), "
                f"got {type(anchoring).__name__}"
            )
        if loss_learning_rate is not None and not loss_learning_rate > 0:
            raise ValueError(f"the loss's learning rate must be positive, got {loss_learning_rate}")
        self.loss_learning_rate = loss_learning_rate
        if not 0.0 <= weight_average <= 1.0:
            raise ValueError(
                f"weight_average is the share of the trained weights, between 0 and 1; got {weight_average}"
            )
        self.weight_average = weight_average
        self._starting_weights = (
            {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}
            if weight_average < 1.0
            else None
        )
        super().__init__(model=model, args=args, eval_dataset=eval_dataset, **kwargs)
        _log_instead_of_printing(self)
        if adapter_training not in (None, "adapters", "fusion"):
            raise ValueError(f"adapter_training must be 'adapters' or 'fusion', got {adapter_training!r}")
        self.adapter_training = adapter_training
        if adapter_training is not None:
            self.add_callback(_FrozenBaseCheck())
        self.loss = loss.to(self.args.device) if loss is not None else None
        self.pooling = embedding.pooling or default_pooling(self.model)
        self.normalize, self.domain = embedding.normalize, embedding.domain
        if family_of(self.model) is not None and embedding.pooling is not None:
            raise ValueError(f"a {family_of(self.model)} model gives its own paper embedding: leave pooling unset")
        # Formats matter only to multi-format models (control codes, format adapters, PALs).
        self.formats = model_formats(self.model)
        self.task_format = embedding.task_format or self.default_task_format
        self.max_length = embedding.max_length
        # The metrics of the latest evaluation of eval_dataset and the step it scored (see evaluate).
        self.last_metrics: dict[str, float] | None = None
        self.last_metrics_step: int | None = None
        # Our losses are means over the batch; the Trainer then scales by gradient accumulation itself.
        self.model_accepts_loss_kwargs = False
        if self.loss is not None and any(p.requires_grad for p in self.loss.parameters()):
            self.add_callback(_ZeroLossGradients(self.loss))
            if self.args.world_size > 1:
                _average_gradients_across_processes(self.loss)
        self._anchor = None if anchoring is None else _Anchor.build(self, anchoring)

    def train(self, *args: Any, **kwargs: Any):
        """``transformers.Trainer.train``, then the weight average with the starting weights (``weight_average``)."""
        result = super().train(*args, **kwargs)
        if self._starting_weights is not None:
            self._average_with_start()
        return result

    def _average_with_start(self) -> None:
        alpha = self.weight_average
        average_weights(self.model, self._starting_weights, alpha)
        # Metrics of the last evaluation scored the weights before the average.
        self.last_metrics = self.last_metrics_step = None
        logger.info(
            "weights averaged with the starting ones: %.2f x trained + %.2f x starting (WiSE-FT)", alpha, 1.0 - alpha
        )

    # ------------------------------------------------------------------ embedding

    def embed(
        self, model: nn.Module, features: dict[str, torch.Tensor], task_format: str | None = None
    ) -> tuple[Any, torch.Tensor]:
        """Run ``model`` on tokenized ``features``. Returns its output and the pooled paper embeddings."""
        features = dict(features)
        domain_ids = features.pop("domain_ids", None)
        if domain_ids is not None:
            features = with_domains(features, self.model.config, domain_ids)
        if self.formats:
            features.update(activate_format(self.model, task_format or self.task_format))
        outputs = model(**features)
        return outputs, pool(outputs, features["attention_mask"], self.pooling, normalize=self.normalize)

    def _with_anchor(self, model: nn.Module, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` plus the anchoring term on a fresh batch of anchor papers while training (``anchoring``)."""
        if self._anchor is None or not model.training:
            return loss
        return loss + self._anchor.loss_term(self, model)

    def anchor_formats(self) -> tuple[str | None, ...]:
        """The formats in which the anchor papers' relations are kept.

        That is the one this trainer embeds in.
        """
        return (self.task_format,)

    # ------------------------------------------------------------------ trainable losses

    def _with_adapter_regularization(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` plus AdapterFusion's value regularisation when training fusion (see ``adapter_training``)."""
        if self.adapter_training != "fusion" or not self.model.training:
            return loss
        regularization = fusion_regularization_loss(self.model)
        return loss if regularization is None else loss + regularization

    def create_optimizer(self):
        """The Trainer's optimizer, plus a group for the loss's own parameters.

        The group has no weight decay, and its learning rate is ``loss_learning_rate`` when given.
        """
        if self.optimizer is None:
            super().create_optimizer()
            extra = [p for p in self.loss.parameters() if p.requires_grad] if self.loss is not None else []
            if extra:
                rate = {} if self.loss_learning_rate is None else {"lr": self.loss_learning_rate}
                self.optimizer.add_param_group({"params": extra, "weight_decay": 0.0, **rate})
        return self.optimizer

    def _save_checkpoint(self, model, trial):
        # The loss's state goes in first: the Trainer writes trainer_state.json last, so a checkpoint that
        # has it is complete (what resuming relies on).
        if self.loss is not None and len(self.loss.state_dict()) and self.args.should_save:
            folder = os.path.join(
                self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            )
            os.makedirs(folder, exist_ok=True)
            torch.save(self.loss.state_dict(), os.path.join(folder, LOSS_STATE))
        super()._save_checkpoint(model, trial)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        path = os.path.join(resume_from_checkpoint, LOSS_STATE)
        if self.loss is not None and len(self.loss.state_dict()):
            if not os.path.isfile(path):
                raise FileNotFoundError(
                    f"{resume_from_checkpoint}: no {LOSS_STATE}; the loss's own parameters cannot be restored"
                )
            self.loss.load_state_dict(torch.load(path, map_location=self.args.device, weights_only=True))

    # ------------------------------------------------------------------ evaluation

    def _remove_unused_columns(self, dataset, description=None):
        # Examples hold paper records that the collators turn into model inputs: keep every column.
        return dataset

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        """Score the :class:`~sciembed.evaluation.TaskSuite` given as ``eval_dataset``, else defer to the Trainer.

        Metrics are named ``{prefix}_{task_id}_{metric}``, and the full report is kept as ``last_evaluation``. Any
        other dataset is scored by the plain Trainer. An evaluation of the trainer's own ``eval_dataset`` also keeps
        its metrics as ``last_metrics`` and the global step it scored as ``last_metrics_step``, so a caller
        can tell whether the weights it has were already scored."""
        suite = eval_dataset if eval_dataset is not None else self.eval_dataset
        if not isinstance(suite, TaskSuite):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        metrics = None
        if self.args.process_index == 0:
            encoder_model = self.model.base_model
            pooling = None if family_of(encoder_model) is not None else self.pooling
            # A run on several domains has no one domain: its tasks name theirs (the runner routes each task's papers).
            routed = getattr(encoder_model.config, "domains", None)
            domain = self.domain or (
                next((task.domain for task in suite.tasks if task.domain), None) if routed else None
            )
            encoder = PaperEncoder(
                encoder_model,
                self.processing_class,
                pooling=pooling,
                normalize=self.normalize,
                max_length=self.max_length,
                device=self.args.device,
                domain=domain,
            )
            was_training = self.model.training
            report = evaluate_suite(
                encoder,
                suite,
                batch_size=self.args.per_device_eval_batch_size,
                n_jobs=1,
                show_progress_bar=False,
                settings={"global_step": self.state.global_step, "max_length": encoder.max_length},
            )
            self.model.train(was_training)
            self.last_evaluation = report
            metrics = {
                f"{metric_key_prefix}_{r.task_id or r.task}_{name}": value
                for r in report.results
                for name, value in r.metrics.items()
            }
        if self.args.world_size > 1:
            # Every process needs the metrics (best-model tracking, early stopping); one computes them.
            import torch.distributed as dist

            sent = [metrics]
            dist.broadcast_object_list(sent, src=0)
            metrics = sent[0]
        self.log(metrics)
        if suite is self.eval_dataset:
            self.last_metrics, self.last_metrics_step = dict(metrics), self.state.global_step
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


class _BarWithoutLogs(ProgressCallback):
    """The Trainer's progress bar, without the logs it writes under it at each logging step."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        pass


class _LogsAtInfo(TrainerCallback):
    """Each logging step's values (loss, learning rate, ...), logged at INFO: shown with ``-v``."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero and logs:
            shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in logs.items())
            logger.info("step %d: %s", state.global_step, shown)


def _log_instead_of_printing(trainer: Trainer) -> None:
    """Has ``trainer`` log its values at INFO rather than print them.

    Its progress bar stays, unless ``disable_tqdm``.
    """
    callbacks = trainer.callback_handler.callbacks
    if any(type(callback) is ProgressCallback for callback in callbacks):
        trainer.pop_callback(ProgressCallback)
        trainer.add_callback(_BarWithoutLogs)
    if any(type(callback) is PrinterCallback for callback in callbacks):
        trainer.pop_callback(PrinterCallback)
    trainer.add_callback(_LogsAtInfo)


class _Anchor:
    """The anchor papers of :class:`EmbeddingTrainer`, with their starting embeddings.

    It keeps the starting embeddings in each kept format, and draws each step's batch.
    """

    def __init__(
        self,
        papers: list[Mapping[str, Any]],
        targets: dict[str | None, torch.Tensor],
        loss: nn.Module,
        batch_size: int,
    ):
        self.papers, self.targets, self.loss, self.batch_size = papers, targets, loss, batch_size
        self.formats = tuple(targets)
        self.draws = 0

    @classmethod
    def build(cls, trainer: EmbeddingTrainer, anchoring: Anchoring) -> _Anchor:
        papers, loss, batch_size = list(anchoring.papers), anchoring.loss, anchoring.batch_size
        if not 2 <= batch_size <= len(papers):
            raise ValueError(
                f"the anchor batch size (loss.anchor_batch_size, Anchoring.batch_size) must be between 2 and the "
                f"{len(papers)} anchor papers, got {batch_size}"
            )
        if not isinstance(trainer.data_collator, PaperCollator):
            raise ValueError(f"anchoring tokenizes papers with a paper collator, not {type(trainer.data_collator)}")
        if trainer.args.world_size > 1:
            # The anchor batch is a second forward pass a step, which the DDP reducer does not expect.
            raise ValueError("anchoring (anchor_papers) trains in one process; it is not supported under DDP")
        model = trainer.model
        was_training = model.training
        model.eval()
        with torch.no_grad():
            targets = {
                task_format: torch.cat(
                    [
                        cls._embed(trainer, model, papers[start : start + batch_size], task_format).cpu()
                        for start in range(0, len(papers), batch_size)
                    ]
                )
                for task_format in trainer.anchor_formats()
            }
        model.train(was_training)
        logger.info("anchoring %d papers' relations, %d a step", len(papers), batch_size)
        return cls(papers, targets, loss.to(trainer.args.device), batch_size)

    @staticmethod
    def _embed(
        trainer: EmbeddingTrainer, model: nn.Module, papers: Sequence[Mapping[str, Any]], task_format: str | None
    ) -> torch.Tensor:
        features = trainer.data_collator.tokenize(papers)
        return trainer.embed(model, {k: v.to(trainer.args.device) for k, v in features.items()}, task_format)[1]

    def loss_term(self, trainer: EmbeddingTrainer, model: nn.Module) -> torch.Tensor:
        """The anchoring term of one micro-batch, in the next of the kept formats.

        The papers are drawn by seed, process, step and draw, so a rerun draws the same.
        """
        args = trainer.args
        generator = np.random.default_rng([args.seed, args.process_index, trainer.state.global_step, self.draws])
        task_format = self.formats[self.draws % len(self.formats)]
        self.draws += 1
        chosen = generator.choice(len(self.papers), self.batch_size, replace=False)
        # Evaluation mode (no dropout), as the targets were computed: the term measures only what training changed.
        model.eval()
        try:
            embeddings = self._embed(trainer, model, [self.papers[i] for i in chosen], task_format)
        finally:
            model.train()
        targets = self.targets[task_format][torch.from_numpy(chosen)]
        return self.loss(embeddings, targets.to(embeddings.device))


class _FrozenBaseCheck(TrainerCallback):
    """Refuses to train adapters or fusion while the base is trainable.

    A forgotten ``train_format_adapters`` would otherwise fine-tune the whole encoder.
    """

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        trainable = trainable_base_parameters(model)
        if trainable:
            raise ValueError(
                f"adapter training with {len(trainable)} trainable base parameter(s) ({', '.join(trainable[:3])}, "
                "...): freeze the base first (sciembed.formats.adapters.train_format_adapters / train_format_fusion)"
            )


class _ZeroLossGradients(TrainerCallback):
    """Clears the loss's gradients after every optimiser step (the Trainer clears only the model's)."""

    def __init__(self, loss: nn.Module):
        self.loss = loss

    def on_step_end(self, args, state, control, **kwargs):
        self.loss.zero_grad(set_to_none=True)


def _average_gradients_across_processes(module: nn.Module) -> None:
    """Average the gradients of ``module``'s parameters over processes as they are computed.

    DDP does this for the model, not for a loss's own parameters, which would otherwise drift apart."""
    import torch.distributed as dist

    for parameter in module.parameters():
        if parameter.requires_grad:
            parameter.register_hook(lambda grad: _all_reduce_mean(grad, dist))


def _all_reduce_mean(grad: torch.Tensor, dist) -> torch.Tensor:
    grad = grad.clone()
    dist.all_reduce(grad)
    return grad / dist.get_world_size()


class TripletTrainer(EmbeddingTrainer):
    """Citation triplets (SPECTER, SciNCL, SPECTROID positives, SciRepEval proximity).

    The collator (:class:`~.collators.TripletCollator`) puts all queries, positives and negatives in one
    batch. The loss is :class:`~.losses.TripletMarginLoss` (default) on the paper embeddings, or
    :class:`~.losses.Multi2SPELoss` on a Multi2SPEModel's ``cls_embeddings``. A multi-format model embeds papers in
    ``proximity`` unless ``embedding.task_format`` names another format.

    Args:
        micro_batch_size: the texts embedded per forward pass while training. A batch of more is embedded a micro-batch
            at a time (:func:`~.micro_batches.cached_loss`), ``auto`` chooses by the memory one layer's attention
            scores take (:func:`~.micro_batches.texts_per_forward`), ``None`` embeds the whole batch at once. One
            process only: under DDP ``auto`` embeds the whole batch and a number is refused.
        kwargs: as for :class:`EmbeddingTrainer`.
    """

    default_task_format = "proximity"

    def __init__(
        self,
        model: nn.Module,
        args: Any,
        *,
        loss: nn.Module | None = None,
        micro_batch_size: int | str | None = "auto",
        **kwargs: Any,
    ):
        loss = loss if loss is not None else TripletMarginLoss()
        if isinstance(loss, Multi2SPELoss) and family_of(model) != "multi2spe":
            raise ValueError(f"Multi2SPELoss needs a Multi2SPEModel's cls_embeddings, not a {type(model).__name__}")
        self.micro_batch_size = check_micro_batch_size(micro_batch_size)
        super().__init__(model, args, loss=loss, **kwargs)
        if self.args.world_size > 1:
            # DistributedDataParallel reduces gradients once per backward pass, not once per micro-batch.
            if isinstance(self.micro_batch_size, int):
                raise ValueError(
                    "loss.micro_batch_size trains in one process; under torchrun each process embeds its whole batch "
                    "(leave loss.micro_batch_size unset)"
                )
            self.micro_batch_size = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        texts, tokens = inputs["input_ids"].shape
        heads = getattr(self.model.config, "num_attention_heads", 1)
        size = texts_per_forward(self.micro_batch_size, texts, tokens, heads)
        outputs = None
        if size < texts and not return_outputs and torch.is_grad_enabled():
            loss = cached_loss(
                lambda part: self._triplet_embeddings(model, part)[1],
                lambda embeddings: self.loss(*embeddings.chunk(3)),
                inputs,
                size,
                self.loss,
            )
        else:
            outputs, embeddings = self._triplet_embeddings(model, inputs)
            loss = self.loss(*embeddings.chunk(3))
        loss = self._with_anchor(model, self._with_adapter_regularization(loss))
        return (loss, outputs) if return_outputs else loss

    def _triplet_embeddings(self, model: nn.Module, features: dict[str, torch.Tensor]) -> tuple[Any, torch.Tensor]:
        """The model's output and the embeddings the loss takes (a Multi2SPEModel's ``cls_embeddings``)."""
        outputs, embeddings = self.embed(model, features)
        return outputs, outputs.cls_embeddings if isinstance(self.loss, Multi2SPELoss) else embeddings


class PairTrainer(EmbeddingTrainer):
    """Positive pairs with in-batch negatives (the MoE paper's co-citation training).

    The loss is :class:`~.losses.MultipleNegativesRankingLoss` (learned temperature). For a
    mixture-of-experts model with a learned router, ``router_loss`` (:class:`~.losses.RouterLoss`) is
    added on its ``router_logits`` with each pair's domain.
    """

    def __init__(
        self,
        model: nn.Module,
        args: Any,
        *,
        loss: nn.Module | None = None,
        router_loss: RouterLoss | None = None,
        **kwargs: Any,
    ):
        super().__init__(model, args, loss=loss if loss is not None else MultipleNegativesRankingLoss(), **kwargs)
        self.router_loss = router_loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs, embeddings = self.embed(model, inputs)
        first, second = embeddings.chunk(2)
        loss = self.loss(first, second)
        if self.router_loss is not None:
            loss = loss + self.router_loss(outputs.router_logits, inputs.get("domain_ids"), inputs["attention_mask"])
        loss = self._with_anchor(model, self._with_adapter_regularization(loss))
        return (loss, outputs) if return_outputs else loss


class MultiTaskTrainer(EmbeddingTrainer):
    """SciRepEval's multi-task training: task-heterogeneous batches, one head per task, losses summed.

    Batches come from :class:`~.task_batches.TaskBalancedSampler` (an equal share of every task per device batch, or
    shares in proportion to ``task_weights``, a mixture's task weights) and :class:`~.collators.MultiTaskCollator`.
    Each task's papers are embedded in its format (``[CLF]`` / ``[RGN]`` / ``[PRX]`` / ``[QRY]`` for a control-code
    model) and scored by :class:`~.losses.MultiTaskLoss`, whose heads are dropped after training.
    """

    def __init__(
        self,
        model: nn.Module,
        args: Any,
        *,
        loss: MultiTaskLoss,
        task_weights: Mapping[str, float] | None = None,
        **kwargs: Any,
    ):
        super().__init__(model, args, loss=loss, **kwargs)
        self.task_weights = task_weights

    def _get_train_sampler(self, train_dataset=None):
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        return TaskBalancedSampler(
            dataset["task"], self.args.per_device_train_batch_size, seed=self.args.seed, weights=self.task_weights
        )

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        total = 0.0
        for name, task in inputs["tasks"].items():
            embedded = [self.embed(model, features, task_format)[1] for task_format, features in task["inputs"]]
            if task["kind"] == "search":
                positive, negative = embedded[1].chunk(2)
                arguments = (embedded[0], positive, negative)
            elif task["kind"] == "proximity":
                arguments = embedded[0].chunk(3)
            else:
                arguments = (embedded[0], task["labels"])
            total = total + self.loss.task_loss(name, arguments)
        total = self._with_anchor(model, self._with_adapter_regularization(total))
        return (total, None) if return_outputs else total

    def anchor_formats(self) -> tuple[str | None, ...]:
        """Every format of a multi-format model, since each task trains its own.

        The anchor batches take one format each, in turn.
        """
        return self.formats or (None,)


class PaperClassificationTrainer(EmbeddingTrainer):
    """End-to-end fine-tuning of an encoder with a classification head (SPECTROID's CH1 / CH2 / CH3).

    The model computes its own loss from ``labels`` (the plain Trainer's loss). Evaluation embeds papers with its
    encoder (``model.base_model``).

    Args:
        head_learning_rate: the learning rate of the head's parameters (those outside ``model.base_model``). By
            default the encoder's (``args.learning_rate``). A head starts at random, the encoder pretrained: at an
            encoder's fine-tuning rate a head barely moves in a short run. The schedule scales both alike.
        head_only_steps: before end-to-end training, this many full-batch AdamW steps (at ``head_learning_rate``,
            with the run's weight decay) fit the head alone on the frozen encoder's embeddings of the training set,
            embedded once: linear probing then fine-tuning (LP-FT, Kumar et al. 2022, "Fine-Tuning can Distort
            Pretrained Features and Underperform Out-of-Distribution"), so that a random head's early gradients do
            not pull the encoder off what it knows. Skipped when resuming (the checkpoint holds the fitted head).
            With ``weight_average`` the fitted head, not the random one, is what the trained head is averaged with.
        kwargs: as for :class:`EmbeddingTrainer`.
    """

    def __init__(
        self, *args: Any, head_learning_rate: float | None = None, head_only_steps: int = 0, **kwargs: Any
    ) -> None:
        if head_learning_rate is not None and not head_learning_rate > 0:
            raise ValueError(f"head_learning_rate must be positive, got {head_learning_rate}")
        if isinstance(head_only_steps, bool) or not isinstance(head_only_steps, int) or head_only_steps < 0:
            raise ValueError(f"head_only_steps must be a whole number of steps, 0 or more; got {head_only_steps!r}")
        self.head_learning_rate = head_learning_rate
        self.head_only_steps = head_only_steps
        super().__init__(*args, **kwargs)

    def train(self, resume_from_checkpoint: Any = None, **kwargs: Any):
        """The head fitted alone first (``head_only_steps``), then :meth:`EmbeddingTrainer.train`."""
        if self.head_only_steps and not resume_from_checkpoint:
            self.fit_head()
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    def fit_head(self) -> list[float]:
        """Fit ``model.classifier`` alone on the frozen encoder's embeddings of the training set (see
        ``head_only_steps``). Returns the loss before each step."""
        from ..modeling.spectroid.modeling_spectroid import sequence_classification_loss

        model = self.model
        head = getattr(model, "classifier", None)
        if head is None:
            raise ValueError(f"head_only_steps needs a model with a classifier head; {type(model).__name__} has none")
        was_training = model.training
        model.eval()
        embeddings, labels = [], []
        with torch.no_grad():
            for batch in self.get_train_dataloader():
                batch = self._prepare_inputs(batch)
                labels.append(batch.pop("labels"))
                embeddings.append(model.base_model(**batch).pooler_output)
        features, targets = torch.cat(embeddings), torch.cat(labels)
        head.train()
        optimizer = torch.optim.AdamW(
            head.parameters(),
            lr=self.head_learning_rate or self.args.learning_rate,
            weight_decay=self.args.weight_decay,
        )
        losses = []
        for _ in range(self.head_only_steps):
            optimizer.zero_grad()
            loss = sequence_classification_loss(model.config, head(features), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.train(was_training)
        if self._starting_weights is not None:
            for name, value in head.state_dict().items():
                self._starting_weights[f"classifier.{name}"] = value.detach().to("cpu", copy=True)
        logger.info(
            "head fitted alone on %d embeddings: loss %.4f -> %.4f in %d steps",
            len(targets),
            losses[0],
            losses[-1],
            len(losses),
        )
        return losses

    def create_optimizer(self) -> Any:
        """``transformers.Trainer``'s optimizer, with the head's parameters in groups of their own.

        These groups run at ``head_learning_rate``, each keeping its weight-decay group's settings.
        """
        fresh = self.optimizer is None
        optimizer = super().create_optimizer()
        if not fresh or self.head_learning_rate is None:
            return optimizer
        encoder = {id(p) for p in self.model.base_model.parameters()}
        groups = []
        for group in optimizer.param_groups:
            for params, lr in (
                ([p for p in group["params"] if id(p) in encoder], group["lr"]),
                ([p for p in group["params"] if id(p) not in encoder], self.head_learning_rate),
            ):
                if params:
                    groups.append({**group, "params": params, "lr": lr})
        optimizer.param_groups.clear()
        for group in groups:
            optimizer.add_param_group(group)
        return optimizer
