"""Fine-tune an encoder with the SPECTER recipe in Python: citation triplets from sciembed.training.examples,
sciembed's TripletTrainer (a transformers.Trainer subclass) and TrainingArguments; the model is saved so that
sciembed.encode embeds it as it was trained. Embedding, loss and optimiser are the `specter` recipe's for the base
(`sciembed train --recipe specter --show-settings`): mean pooling, normalisation and multiple-negatives ranking from
the embedded all-MiniLM-L6-v2, SPECTER's [CLS] and triplet margin loss from a plain checkpoint (SciBERT).
Held-out query papers are never trained on; they are scored (SciDocs' cite protocol) before and after.

    python examples/finetune_specter.py --data ../shared/data/cacm --output runs/specter --max-steps 20
    python examples/finetune_specter.py --data papers.jsonl --citations cites.csv --output runs/mine --held-out 0.1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, TrainingArguments

import sciembed
from sciembed.evaluation import TaskSuite
from sciembed.training import losses
from sciembed.training.collators import TripletCollator
from sciembed.training.examples import CitationFiles, read_citation_source, split_queries, triplet_dataset
from sciembed.training.recipes import LOSSES
from sciembed.training.run import EVALUATION_FILE, resolved_settings, save_trained
from sciembed.training.trainers import PaperEmbedding, TripletTrainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--data", required=True, help="a CACM folder, SPECTER release folder, S2ORC JSONL, or papers (--citations)")
    add("--citations", help="an edge list (CSV citing,cited, or SNAP lines) for the papers file given as --data")
    add("--base", help="the checkpoint to start from (default: the embedded all-MiniLM-L6-v2)")
    add("--output", required=True, type=Path, help="the run folder: checkpoints, and the trained model in model/")
    add("--max-steps", type=int, default=-1, help="optimiser steps (default: the recipe's two epochs)")
    add("--held-out", type=float, default=0.2, help="share of the query papers held out and scored (default: 0.2)")
    add("--batch-size", type=int, help="triplets per optimiser step (default: the recipe's, 32)")
    add("--overwrite", action="store_true", help="replace the model an earlier run left in OUTPUT/model")
    args = parser.parse_args(argv)
    if (args.output / "model").exists() and not args.overwrite:
        parser.error(f"{args.output / 'model'} exists; pass --overwrite to replace it")

    base = args.base or sciembed.default_model_path()
    settings = resolved_settings("specter", base)
    embedding, training = settings["embedding"], dict(settings["training"], max_steps=args.max_steps)
    training["dataloader_pin_memory"] = torch.cuda.is_available()  # pinned memory only helps copies to a GPU
    if args.batch_size:
        training.update(per_device_train_batch_size=args.batch_size, gradient_accumulation_steps=1)
    source = read_citation_source(
        CitationFiles(Path(args.data), Path(args.citations)) if args.citations else args.data
    )
    train_ids, held_out_ids = split_queries(source.linked_queries(), args.held_out, seed=0)
    triplets = triplet_dataset(source, sampler="specter", queries=train_ids, exclude=held_out_ids)
    print(f"{len(triplets)} triplets from {len(train_ids)} query papers; {len(held_out_ids)} held out")

    model, tokenizer = AutoModel.from_pretrained(base), AutoTokenizer.from_pretrained(base)
    loss = dict(settings["loss"])
    trainer = TripletTrainer(
        model,
        TrainingArguments(str(args.output), remove_unused_columns=False, **training),
        loss=getattr(losses, LOSSES[loss.pop("name")])(**loss),
        embedding=PaperEmbedding(embedding["pooling"], embedding["normalize"], max_length=embedding["max_length"]),
        weight_average=settings["model"].get("weight_average", 1.0),
        train_dataset=triplets,
        data_collator=TripletCollator(tokenizer, embedding["max_length"] or min(tokenizer.model_max_length, 512)),
        processing_class=tokenizer,
        eval_dataset=TaskSuite("held-out", str(args.data), [source.cite_task(held_out_ids)]) if held_out_ids else None,
    )
    before = trainer.evaluate() if held_out_ids else {}
    trainer.train()
    folder = save_trained(trainer, tokenizer, args.output / "model")
    if held_out_ids:
        after = trainer.evaluate()  # its report, written for export_and_push.py to put in the model card:
        trainer.last_evaluation.write_json(args.output / EVALUATION_FILE)
        print(f"held-out cite MAP: {before['eval_cite_map']:.2f} before, {after['eval_cite_map']:.2f} after")
    dim = sciembed.encode(folder, [triplets[0]["query"]], show_progress_bar=False).shape[1]
    print(f"saved {folder} after {trainer.state.global_step} steps; sciembed.encode gives {dim}-dim vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
