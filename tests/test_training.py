"""Trainers, collators, batching and recipes (tiny random BERTs; the recipes on the real shared data)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch
from helpers import PAPERS, shared_data, write_s2orc


def tiny_args(output_dir, **overrides):
    from transformers import TrainingArguments

    settings = dict(
        per_device_train_batch_size=4,
        max_steps=2,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="steps",
        save_steps=1,
        logging_steps=1,
        remove_unused_columns=False,
        seed=0,
    )
    return TrainingArguments(output_dir=str(output_dir), **{**settings, **overrides})


def triplet_rows(n=8):
    from datasets import Dataset

    papers = [{"title": p["title"], "abstract": p["abstract"]} for p in PAPERS]
    return Dataset.from_dict(
        {
            "query": [papers[i % 5] for i in range(n)],
            "positive": [papers[(i + 1) % 5] for i in range(n)],
            "negative": [papers[(i + 3) % 5] for i in range(n)],
        }
    )


# ---------------------------------------------------------------------- batching


def test_task_balanced_sampler_gives_every_batch_an_equal_share_of_every_task():
    from sciembed.training.task_batches import TaskBalancedSampler

    tasks = ["a"] * 10 + ["b"] * 3 + ["c"] * 25
    sampler = TaskBalancedSampler(tasks, batch_size=6, seed=1)
    order = list(sampler)
    assert len(order) == len(sampler) == 13 * 6  # the largest task (25 rows, 2 a batch) sets the epoch
    for start in range(0, len(order), 6):
        assert Counter(tasks[i] for i in order[start : start + 6]) == {"a": 2, "b": 2, "c": 2}
    assert set(i for i in order if tasks[i] == "c") == set(range(13, 38))  # the largest task is seen in full
    assert list(TaskBalancedSampler(tasks, 6, seed=1)) == order  # deterministic
    sampler.set_epoch(1)
    assert list(sampler) != order
    with pytest.raises(ValueError, match="cannot hold every one of the 3 tasks"):
        TaskBalancedSampler(tasks, batch_size=2)


def test_task_balanced_sampler_spreads_the_remainder():
    from sciembed.training.task_batches import TaskBalancedSampler

    tasks = ["x"] * 4 + ["y"] * 4
    order = list(TaskBalancedSampler(tasks, batch_size=3))
    assert [Counter(tasks[i] for i in order[s : s + 3]) for s in range(0, len(order), 3)][0] == {"x": 2, "y": 1}


def test_task_weights_give_each_task_rows_in_proportion():
    """weights: every batch holds rows in proportion to them (largest remainders first); a weight that leaves a task
    no row, or a task without a weight, is refused."""
    from sciembed.training.task_batches import TaskBalancedSampler

    tasks = ["cite"] * 40 + ["fos"] * 40 + ["mesh"] * 40
    sampler = TaskBalancedSampler(tasks, batch_size=10, seed=0, weights={"cite": 3, "fos": 1, "mesh": 1})
    order = list(sampler)
    for start in range(0, len(order), 10):
        assert Counter(tasks[i] for i in order[start : start + 10]) == {"cite": 6, "fos": 2, "mesh": 2}
    assert len(order) == 20 * 10  # fos and mesh, two a batch, set the epoch
    equal = TaskBalancedSampler(tasks, batch_size=10, seed=0, weights=dict.fromkeys(("cite", "fos", "mesh"), 2.0))
    assert list(equal) == list(TaskBalancedSampler(tasks, batch_size=10, seed=0))
    with pytest.raises(ValueError, match="gives task.*no row"):
        TaskBalancedSampler(tasks, batch_size=4, weights={"cite": 20, "fos": 1, "mesh": 1})
    with pytest.raises(ValueError, match="a positive weight"):
        TaskBalancedSampler(tasks, batch_size=10, weights={"cite": 1, "fos": 1})


# ---------------------------------------------------------------------- collators


def test_triplet_collator_puts_queries_positives_negatives_in_one_batch(tiny_bert):
    from transformers import AutoTokenizer

    from sciembed.data.papers import paper_text
    from sciembed.training.collators import TripletCollator

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    rows = list(triplet_rows(2))
    batch = TripletCollator(tokenizer, 32)(rows)
    assert batch["input_ids"].shape[0] == 6
    expected = [paper_text(row[role], "[SEP]") for role in ("query", "positive", "negative") for row in rows]
    assert tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=False)[3].startswith(
        "[CLS] " + expected[3].lower()[:10]
    )


def test_multitask_collator_groups_by_task_and_format(tiny_bert):
    from transformers import AutoTokenizer

    from sciembed.training.collators import MultiTaskCollator

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    paper = {"title": "graph", "abstract": "citation"}
    query = {"title": "query", "abstract": ""}
    rows = [
        {"task": "fos", "papers": [paper], "label": [1.0, 0.0, 1.0]},
        {"task": "mesh", "papers": [paper], "label": [2.0]},
        {"task": "search", "papers": [query, paper, paper], "label": []},
        {"task": "fos", "papers": [paper], "label": [0.0, 1.0, 0.0]},
    ]
    kinds = {"fos": "multilabel", "mesh": "classification", "search": "search"}
    batch = MultiTaskCollator(tokenizer, 16, task_kinds=kinds)(rows)["tasks"]
    assert [f for f, _ in batch["fos"]["inputs"]] == ["classification"]
    assert batch["fos"]["labels"].tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert batch["mesh"]["labels"].dtype == torch.long and batch["mesh"]["labels"].tolist() == [2]
    (query_format, queries), (candidate_format, candidates) = batch["search"]["inputs"]
    assert (query_format, candidate_format) == ("adhoc_query", "proximity")
    assert queries["input_ids"].shape[0] == 1 and candidates["input_ids"].shape[0] == 2
    with pytest.raises(ValueError, match="unknown task 'other'"):
        MultiTaskCollator(tokenizer, 16, task_kinds=kinds)([{"task": "other", "papers": [paper], "label": []}])


# ---------------------------------------------------------------------- trainers


def test_training_embeds_papers_as_encode_does(tiny_bert, tmp_path):
    """The loss sees exactly the vectors sciembed.encode later gives (pooling, text, truncation)."""
    from transformers import AutoModel, AutoTokenizer

    import sciembed
    from sciembed.training.collators import TripletCollator
    from sciembed.training.trainers import PaperEmbedding, TripletTrainer

    model, tokenizer = AutoModel.from_pretrained(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert)
    for pooling in ("cls", "mean"):
        trainer = TripletTrainer(
            model,
            tiny_args(tmp_path),
            embedding=PaperEmbedding(pooling=pooling),
            train_dataset=triplet_rows(2),
            data_collator=TripletCollator(tokenizer, 64),
            processing_class=tokenizer,
        )
        rows = list(triplet_rows(2))
        model.eval()
        with torch.no_grad():
            _, embedded = trainer.embed(model, TripletCollator(tokenizer, 64)(rows))
        papers = [row[role] for role in ("query", "positive", "negative") for row in rows]
        expected = sciembed.encode(
            model, papers, tokenizer=tokenizer, pooling=pooling, device="cpu", show_progress_bar=False
        )
        np.testing.assert_allclose(embedded.numpy(), expected, atol=1e-5)


def test_triplet_trainer_reduces_the_loss_and_multi2spe_needs_its_model(tiny_bert, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from sciembed.training.collators import TripletCollator
    from sciembed.training.losses import Multi2SPELoss
    from sciembed.training.trainers import TripletTrainer

    model, tokenizer = AutoModel.from_pretrained(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert)
    data = triplet_rows(8)
    trainer = TripletTrainer(
        model,
        tiny_args(tmp_path, max_steps=15, save_strategy="no", per_device_train_batch_size=8),
        train_dataset=data,
        data_collator=TripletCollator(tokenizer, 64),
        processing_class=tokenizer,
    )
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert losses[-1] < losses[0]
    with pytest.raises(ValueError, match="Multi2SPELoss needs a Multi2SPEModel"):
        TripletTrainer(model, tiny_args(tmp_path), loss=Multi2SPELoss(), train_dataset=data)


def test_loss_parameters_train_checkpoint_and_resume(tiny_bert, tmp_path):
    """MNR's learned temperature is optimised, saved in each checkpoint and restored on resume; the
    resumed run ends with the weights of an uninterrupted one."""
    from datasets import Dataset
    from transformers import AutoModel, AutoTokenizer

    from sciembed.training.collators import PairCollator
    from sciembed.training.losses import MultipleNegativesRankingLoss
    from sciembed.training.trainers import LOSS_STATE, PairTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    papers = [{"title": p["title"], "abstract": p["abstract"]} for p in PAPERS]
    data = Dataset.from_dict({"a": papers * 2, "b": papers[1:] + papers[:1] + papers[2:] + papers[:2]})

    def run(output, max_steps, resume=False):
        torch.manual_seed(0)
        loss = MultipleNegativesRankingLoss(temperature=0.7, learn_temperature=True, similarity="dot")
        trainer = PairTrainer(
            AutoModel.from_pretrained(tiny_bert),
            tiny_args(output, max_steps=max_steps, lr_scheduler_type="constant"),
            loss=loss,
            train_dataset=data,
            data_collator=PairCollator(tokenizer, 64),
            processing_class=tokenizer,
        )
        trainer.train(resume_from_checkpoint=True if resume else None)
        return trainer, loss

    straight, straight_loss = run(tmp_path / "straight", 3)
    assert straight_loss.temperature.item() != pytest.approx(0.7)
    assert (tmp_path / "straight" / "checkpoint-2" / LOSS_STATE).is_file()
    run(tmp_path / "resumed", 2)
    resumed, resumed_loss = run(tmp_path / "resumed", 3, resume=True)
    assert resumed.state.global_step == 3
    assert resumed_loss.temperature.item() == pytest.approx(straight_loss.temperature.item(), abs=1e-6)
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("recipe", ["specter", "multi2spe", "moe-cocitation"])
def test_a_sentence_transformers_base_trains_and_saves_in_its_own_embedding(recipe, tiny_st_base, tmp_path):
    """From a base used with mean pooling + Normalize, a recipe trains in that embedding (a family in its own
    pooling, normalised), with the unit-vector objective, records the choice, and the saved model's
    sciembed.encode gives exactly the vectors the training forward gave."""
    import sciembed
    from sciembed.training.collators import TripletCollator
    from sciembed.training.run import RESULTS_FILE, prepare, save_trained, train

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "data.max_examples": None}
    summary = train(recipe, tiny_st_base, data, tmp_path / "out", overrides)
    embedding = summary["settings"]["embedding"]
    assert embedding["normalize"] is True and embedding["max_length"] == 48
    assert embedding["pooling"] == ("mean" if recipe == "specter" else None)
    assert str(tiny_st_base) in embedding["chosen_by"]["normalize"]
    # Multi2SPE keeps its facet loss, in unit vectors with in-batch negatives, and starts at the base's mean pooling.
    assert summary["settings"]["loss"]["name"] == ("multi2spe" if recipe == "multi2spe" else "mnr")
    assert summary["settings"]["loss"]["similarity"] == "cosine"
    if recipe == "multi2spe":
        assert (
            summary["settings"]["loss"]["in_batch_negatives"] is True
            and summary["settings"]["model"]["text_pooling"] == "mean"
        )
    assert json.loads((tmp_path / "out" / RESULTS_FILE).read_text())["settings"]["embedding"] == embedding

    run = prepare(recipe, tiny_st_base, data, tmp_path / "again", {**overrides, "max_steps": 1})
    run.trainer.train()
    folder = save_trained(run.trainer, run.tokenizer, tmp_path / "saved")
    papers = [{"title": p["title"], "abstract": p["abstract"]} for p in PAPERS]
    features = TripletCollator(run.tokenizer, 48).tokenize(papers)
    if recipe == "moe-cocitation":
        features["domain_ids"] = torch.zeros(len(papers), dtype=torch.long)
    run.trainer.model.eval()
    with torch.no_grad():
        _, trained = run.trainer.embed(run.trainer.model, features)
    options = {"domain": "cs"} if recipe == "moe-cocitation" else {}
    encoded = sciembed.encode(folder, papers, device="cpu", show_progress_bar=False, **options)
    np.testing.assert_allclose(encoded, trained.numpy(), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(encoded, axis=1), 1, atol=1e-5)


def test_step_0_in_the_published_embedding_scores_as_the_published_base(tiny_st_base, tmp_path):
    """What lets `train --evaluate-before` score the base once: a recipe that starts as published (the
    base itself in its own pooling and normalisation) gives the published base's held-out metrics at step 0;
    Multi²SPE built on a mean-pooling base starts there too (text_pooling="mean"); with the paper's
    construction it does not."""
    from sciembed.training.run import _evaluate_published_base, prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "data.max_examples": None, "data.held_out": 0.25}
    for recipe in ("specter", "multi2spe"):
        run = prepare(recipe, tiny_st_base, data, tmp_path / recipe, overrides)
        assert run.data["starts_as_published"]
        step0, published = run.trainer.evaluate(), _evaluate_published_base(run, tiny_st_base)
        assert {k: v for k, v in step0.items() if k.startswith("eval_cite")} == pytest.approx(published, abs=1e-4)
    paper = prepare(
        "multi2spe", tiny_st_base, data, tmp_path / "paper", {**overrides, "model.initialization": "paper"}
    )
    assert not paper.data["starts_as_published"]


def test_a_validation_split_comes_out_of_the_training_queries_only(tiny_bert, tmp_path):
    """data.validation carves tuning queries out of the training ones: never trained on, disjoint from the held-out
    queries, which stay those of the run without a validation split."""
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "data.max_examples": None, "data.held_out": 0.25}
    plain = prepare("specter", tiny_bert, data, tmp_path / "plain", overrides)
    tuned = prepare("specter", tiny_bert, data, tmp_path / "tuned", {**overrides, "data.validation": 0.25})
    held, tuning = set(tuned.data["held_out_ids"]), set(tuned.data["validation_ids"])
    assert tuned.data["held_out_ids"] == plain.data["held_out_ids"] and tuning and not held & tuning
    assert tuned.data["queries"] + len(tuning) == plain.data["queries"] and plain.validation is None
    assert set(tuned.validation.tasks[0].qrels) == tuning
    triplets = tuned.trainer.train_dataset
    assert not (set(triplets["query_id"]) | set(triplets["positive_id"]) | set(triplets["negative_id"])) & (
        held | tuning
    )
    with pytest.raises(ValueError, match="data.validation splits citation queries"):
        prepare("spectroid-heads", tiny_bert, data, tmp_path / "heads", {"data.validation": 0.2})


@pytest.mark.parametrize("recipe", ["specter", "multi2spe"])
def test_weight_average_mixes_trained_and_starting_weights(recipe, tiny_bert, tmp_path):
    """model.weight_average (WiSE-FT): the saved model is alpha x trained + (1 - alpha) x starting, for the base
    encoder and for a family built from it; the final evaluation scores the average, not the trained weights."""
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "learning_rate": 0.01, "warmup_steps": 0, "data.held_out": 0.25}
    trained = prepare(recipe, tiny_bert, data, tmp_path / "trained", overrides)
    start = {k: v.clone() for k, v in trained.trainer.model.state_dict().items()}
    trained.trainer.train()
    averaged = prepare(recipe, tiny_bert, data, tmp_path / "averaged", {**overrides, "model.weight_average": 0.25})
    assert averaged.settings["model"]["weight_average"] == 0.25
    averaged.trainer.train()
    after, mixed = trained.trainer.model.state_dict(), averaged.trainer.model.state_dict()
    moved = [k for k in start if start[k].is_floating_point() and not torch.equal(start[k], after[k])]
    assert moved
    for key in moved:
        torch.testing.assert_close(mixed[key], 0.25 * after[key] + 0.75 * start[key], msg=key)
    assert averaged.trainer.last_metrics is None  # the scores of the trained weights are not the average's
    with pytest.raises(ValueError, match="weight_average is the share of the trained weights"):
        prepare(recipe, tiny_bert, data, tmp_path / "bad", {**overrides, "model.weight_average": 1.5})


def test_specter_trains_as_sentence_transformers_does_on_the_same_triplets(tiny_st_base, tmp_path):
    """From a sentence-transformers base, the specter recipe and sentence-transformers' own trainer with
    MultipleNegativesRankingLoss, given the same triplets and seed, see the same batches in the same order and
    compute the same loss and gradients on them: what separates their models is not the training step."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import set_seed

    from sciembed.data.papers import paper_text
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "data.max_examples": None, "seed": 3}
    run = prepare("specter", tiny_st_base, data, tmp_path / "sciembed", overrides)
    peer = SentenceTransformer(str(tiny_st_base), device="cpu")
    sep = peer.tokenizer.sep_token
    triplets = run.trainer.train_dataset
    texts = {
        column: [paper_text(row[role], sep) for row in triplets]
        for column, role in (("anchor", "query"), ("positive", "positive"), ("negative", "negative"))
    }
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "peer"), per_device_train_batch_size=4, seed=3, report_to="none"
    )
    trainer = SentenceTransformerTrainer(
        model=peer, args=arguments, train_dataset=Dataset.from_dict(texts), loss=MultipleNegativesRankingLoss(peer)
    )

    def texts_of(input_ids):
        return [tuple(row[row != peer.tokenizer.pad_token_id].tolist()) for row in input_ids]

    def batches_of(seeded_trainer):
        set_seed(seeded_trainer.args.seed)  # as Trainer.train does before it draws the order
        return list(seeded_trainer.get_train_dataloader())

    batches = list(zip(batches_of(run.trainer), batches_of(trainer)))
    assert len(batches) == len(triplets) // 4
    for ours, theirs in batches:
        roles = texts_of(ours["input_ids"])
        assert roles == texts_of(theirs["anchor_input_ids"]) + texts_of(theirs["positive_input_ids"]) + texts_of(
            theirs["negative_input_ids"]
        )
    ours, theirs = batches[0]
    run.trainer.model.eval(), peer.eval()
    our_loss = run.trainer.compute_loss(run.trainer.model, ours)
    their_loss = trainer.compute_loss(peer, theirs)
    our_loss.backward(), their_loss.backward()
    torch.testing.assert_close(our_loss, their_loss, atol=1e-5, rtol=1e-5)
    their_gradients = dict(peer[0].auto_model.named_parameters())
    for name, parameter in run.trainer.model.named_parameters():
        if parameter.grad is not None:
            torch.testing.assert_close(parameter.grad, their_gradients[name].grad, atol=1e-6, rtol=1e-3, msg=name)


def test_training_texts_are_cut_to_data_max_length_and_the_model_keeps_its_window(tiny_st_base, tmp_path):
    """data.max_length cuts the training texts only: the batches hold at most that many tokens, while the held-out
    evaluation and the saved model (its sentence-transformers max_seq_length) keep embedding.max_length; unset, the
    training texts take the window."""
    import sciembed
    from sciembed.checkpoint_files import base_embedding
    from sciembed.training.run import prepare, save_trained

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "save_strategy": "no", "data.max_examples": None, "data.held_out": 0.25}
    run = prepare("specter", tiny_st_base, data, tmp_path / "short", {**overrides, "data.max_length": 8})
    assert run.settings["data"]["max_length"] == 8 and run.settings["embedding"]["max_length"] == 48
    batch = next(iter(run.trainer.get_train_dataloader()))
    assert batch["input_ids"].shape[1] == 8
    assert run.trainer.max_length == 48
    folder = save_trained(run.trainer, run.tokenizer, tmp_path / "saved")
    assert base_embedding(str(folder)).max_length == 48
    assert sciembed.PaperEncoder.from_pretrained(str(folder), device="cpu").max_length == 48
    plain = prepare("specter", tiny_st_base, data, tmp_path / "plain", overrides)
    assert plain.settings["data"]["max_length"] == 48
    assert next(iter(plain.trainer.get_train_dataloader()))["input_ids"].shape[1] > 8
    for value in (0, "long", 4.5):
        with pytest.raises(ValueError, match=r"data\.max_length"):
            prepare("specter", tiny_st_base, data, tmp_path / "bad", {**overrides, "data.max_length": value})
    with pytest.raises(ValueError, match="data.max_length 4096 exceeds"):
        prepare("specter", tiny_st_base, data, tmp_path / "long", {**overrides, "data.max_length": 4096})


def test_a_model_trained_from_a_base_saved_by_sentence_transformers_5_keeps_the_base_s_window(tiny_st_base, tmp_path):
    """A base in the layout sentence-transformers < 6 wrote (all-MiniLM-L6-v2: its window, 256, in
    ``sentence_bert_config.json``, its tokenizer's limit, 512, in ``tokenizer_config.json``) trains and is saved in its
    window: sentence-transformers and sciembed load the saved model with the base's window, not the tokenizer's
    limit, so that the saved model embeds long papers as it was evaluated."""
    import shutil

    from sentence_transformers import SentenceTransformer

    import sciembed
    from sciembed.checkpoint_files import base_embedding
    from sciembed.training.run import prepare, save_trained

    base = shutil.copytree(tiny_st_base, tmp_path / "st5-layout")
    (base / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24, "do_lower_case": False}))
    config = json.loads((base / "tokenizer_config.json").read_text())
    (base / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 64}))
    assert base_embedding(str(base)).max_length == 24

    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {key: value for key, value in TINY_RUN.items() if key != "embedding.max_length"}
    run = prepare("specter", base, data, tmp_path / "run", {**overrides, "save_strategy": "no"})
    assert run.trainer.max_length == 24
    folder = save_trained(run.trainer, run.tokenizer, tmp_path / "saved")
    assert base_embedding(str(folder)).max_length == 24
    assert sciembed.PaperEncoder.from_pretrained(str(folder), device="cpu").max_length == 24
    assert SentenceTransformer(str(folder), device="cpu").max_seq_length == 24


def test_a_plain_checkpoint_keeps_the_paper_s_embedding_and_loss(tiny_bert):
    """Without sentence-transformers modules SPECTER's own setting stays: [CLS], unnormalised, L2 triplet
    margin 1; embedding.normalize switches to the unit-vector objective, loss.name to another loss."""
    from sciembed.training.recipes import get_recipe
    from sciembed.training.run import _settings

    recipe = get_recipe("specter")
    settings, _ = _settings(recipe, str(tiny_bert), {})
    assert (settings["embedding"]["pooling"], settings["embedding"]["normalize"]) == ("cls", False)
    assert settings["loss"] == {"name": "triplet", "margin": 1.0, "distance": "l2"}
    settings, _ = _settings(recipe, str(tiny_bert), {"embedding.normalize": True})
    assert settings["loss"]["name"] == "mnr" and settings["training"]["per_device_train_batch_size"] == 32
    settings, _ = _settings(
        recipe, str(tiny_bert), {"embedding.normalize": True, "loss.name": "triplet", "loss.distance": "cosine"}
    )
    assert settings["loss"] == {"name": "triplet", "distance": "cosine"}
    with pytest.raises(ValueError, match="loss.name must be one of triplet, mnr"):
        recipe.resolve({"loss.name": "multi2spe"})


# ---------------------------------------------------------------------- recipes and settings


def test_recipe_settings_take_dotted_nested_bare_and_file_overrides(tmp_path):
    from sciembed.training.recipes import RECIPES, get_recipe, parse_assignments, read_overrides

    assert {"specter", "scincl", "multi2spe", "scirepeval-ctrl", "spectroid-heads", "moe-cocitation"} <= set(RECIPES)
    specter = get_recipe("specter").settings
    assert specter["training"]["learning_rate"] == 2e-5 and specter["training"]["warmup_steps"] == 0.1
    assert (
        specter["training"]["per_device_train_batch_size"] * specter["training"]["gradient_accumulation_steps"] == 32
    )
    assert get_recipe("multi2spe").settings["loss"] == {"name": "multi2spe", "weight": 0.1, "mode": "paper"}
    ctrl = get_recipe("scirepeval-ctrl").resolve()["training"]  # the paper's warm-up, shortened by a departure
    assert (ctrl["learning_rate"], ctrl["lr_scheduler_type"], ctrl["warmup_steps"]) == (5e-5, "inverse_sqrt", 0.1)
    assert (
        get_recipe("scirepeval-ctrl").resolve({"training.warmup_steps": 700})["training"]["warmup_steps"] == 700
    )  # the paper's

    (tmp_path / "o.yaml").write_text("training:\n  num_train_epochs: 5\nloss.margin: 0.5\n")
    (tmp_path / "o.json").write_text(json.dumps({"max_steps": 7, "data": {"held_out": 0.2}}))
    settings = get_recipe("specter").resolve(
        {
            **read_overrides(tmp_path / "o.yaml"),
            **read_overrides(tmp_path / "o.json"),
            **parse_assignments(["learning_rate=1e-4", "embedding.pooling=mean"]),
        }
    )
    assert settings["training"]["num_train_epochs"] == 5 and settings["training"]["max_steps"] == 7
    assert settings["training"]["learning_rate"] == 1e-4 and settings["loss"]["margin"] == 0.5
    assert settings["data"]["held_out"] == 0.2 and settings["embedding"]["pooling"] == "mean"
    assert get_recipe("specter").settings["training"]["learning_rate"] == 2e-5  # the recipe itself is untouched
    with pytest.raises(ValueError, match="unknown setting 'learning_rat'"):
        get_recipe("specter").resolve({"learning_rat": 1})
    with pytest.raises(ValueError, match="unknown TrainingArguments field"):
        get_recipe("specter").resolve({"training.nonsense": 1})
    with pytest.raises(ValueError, match="unknown recipe 'bert'"):
        get_recipe("bert")
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        read_overrides(tmp_path / "bad.json")


def test_recipe_descriptions_state_the_settings_a_run_uses(tiny_bert, tiny_st_base):
    """The help's text of each recipe gives the loss, learning rate and batch of the settings a run resolves: from a
    plain checkpoint the paper's (specter: 8 x 4 accumulation), trained in unit vectors the unit-vector ones
    (specter from a sentence-transformers base: 32 x 1); the hand-written notes restate none of those numbers."""
    import re

    from sciembed.training.recipes import RECIPES
    from sciembed.training.run import resolved_settings

    for recipe in RECIPES.values():
        described = recipe.description
        for unit_vectors in (False, True) if recipe.unit_vector_settings else (False,):
            settings = recipe.resolve(unit_vectors=unit_vectors)
            training = settings["training"]
            per_device, accumulation = (
                training["per_device_train_batch_size"],
                training.get("gradient_accumulation_steps", 1),
            )
            assert (
                f"{per_device * accumulation} examples per optimiser step "
                f"({per_device} per device x {accumulation} accumulation" in described
            )
            assert f"lr {training['learning_rate']:g}" in described
            if "name" in settings["loss"]:
                assert f"loss {settings['loss']['name']} (" in described
        assert not re.search(
            r"\d\s*x\s*\d|batch (of )?\d|lr \d|\d(\.\d+)?e-\d|margin \d|temperature \d|hidden \d|\d epoch|\d+ warm-up",
            recipe.notes,
        ), (recipe.name, recipe.notes)

    # What a run actually resolves, by base: a plain checkpoint trains in the paper's settings, MiniLM-like in
    # unit vectors.
    specter = RECIPES["specter"].description
    for base, batch, loss in ((tiny_bert, (8, 4), "triplet"), (tiny_st_base, (32, 1), "mnr")):
        settings = resolved_settings("specter", base)
        training = settings["training"]
        assert (training["per_device_train_batch_size"], training["gradient_accumulation_steps"]) == batch
        assert (
            settings["loss"]["name"] == loss and f"({batch[0]} per device x {batch[1]} accumulation steps)" in specter
        )


def test_show_settings_prints_every_key_a_run_uses(tiny_st_base, tmp_path, capsys):
    """`sciembed train --show-settings` prints one --set KEY=VALUE a line, the values a run would resolve, without
    --output or data; each printed line is accepted back by --set."""
    from sciembed.cli import main
    from sciembed.training.recipes import get_recipe, parse_assignments
    from sciembed.training.run import resolved_settings

    assert (
        main(["train", "--recipe", "specter", "--base", str(tiny_st_base), "--set", "max_steps=20", "--show-settings"])
        == 0
    )
    lines = [line.split("  # ")[0] for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    printed = parse_assignments(lines)
    expected = resolved_settings("specter", tiny_st_base, {"max_steps": 20})
    expected["embedding"].pop("chosen_by")
    assert printed == {
        f"{section}.{name}": value for section, values in expected.items() for name, value in values.items()
    }
    assert (
        printed["training.per_device_train_batch_size"] == 32
        and printed["loss.name"] == "mnr"
        and printed["training.max_steps"] == 20
    )
    get_recipe("specter").resolve(printed, unit_vectors=True)  # every key is one --set takes
    assert not (tmp_path / "out").exists()
    assert main(["train", "--recipe", "specter", "--data", str(tmp_path)]) == 2  # training needs --output


def test_train_and_from_bert_options_all_have_help():
    from sciembed.cli import parser

    commands = parser()._subparsers._group_actions[0].choices
    for name in ("train", "from-bert"):
        undocumented = [action.option_strings for action in commands[name]._actions if not action.help]
        assert not undocumented, (name, undocumented)


RECIPE_DATA = {
    "specter": ("cacm",),
    "scincl": ("cacm",),
    "multi2spe": ("scirepeval-samples", "specter_small.json"),
    "scirepeval-ctrl": ("scirepeval-samples",),
    "scirepeval-adapters": ("scirepeval-samples",),
    "scirepeval-pals": ("scirepeval-samples",),
    "spectroid-heads": ("cacm",),
    "moe-cocitation": ("cacm",),
}


TINY_RUN = {
    "max_steps": 2,
    "save_strategy": "steps",
    "save_steps": 1,
    "logging_steps": 1,
    "learning_rate": 1e-3,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "warmup_steps": 0,
    "embedding.max_length": 48,
    "data.max_examples": 24,
    "dataloader_drop_last": True,
}


@pytest.mark.parametrize("name", sorted(RECIPE_DATA))
def test_recipe_trains_on_real_data_saves_reloads_and_resumes(name, tiny_bert, tmp_path):
    """A few real steps of every recipe on ../shared/data with a tiny BERT: checkpoints are written,
    the run resumes from the latest, and the saved model encodes papers as the trained model does."""
    import sciembed
    from sciembed.training.run import MODEL_FOLDER, RESULTS_FILE, train

    data = shared_data(*RECIPE_DATA[name])
    overrides = dict(TINY_RUN)
    out = tmp_path / name
    first = train(name, tiny_bert, data, out, overrides)
    assert first["global_step"] == 2 and (out / "checkpoint-2").is_dir()
    resumed = train(name, tiny_bert, data, out, {**overrides, "max_steps": 3}, resume=True)
    assert resumed["global_step"] == 3
    history = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
    assert [entry["step"] for entry in history if "loss" in entry] == [1, 2, 3]  # steps 1-2 come from the checkpoint
    assert json.loads((out / RESULTS_FILE).read_text())["recipe"] == name
    if name == "spectroid-heads":  # head and encoder saved as one model
        from transformers import AutoModelForSequenceClassification

        classifier = AutoModelForSequenceClassification.from_pretrained(out / MODEL_FOLDER)
        head = classifier.classifier  # the recipe's default head, CH1: linear
        assert classifier.config.num_labels == 6 and len(head.hidden) == 0 and head.out_proj.out_features == 6
    options = {"domain": "cs"} if name == "moe-cocitation" else {}  # enforced routing needs the domain
    vectors = sciembed.encode(out / MODEL_FOLDER, PAPERS, device="cpu", show_progress_bar=False, **options)
    assert vectors.shape[0] == len(PAPERS) and np.isfinite(vectors).all()


def test_evaluation_during_training_drives_the_best_checkpoint(tiny_bert, tmp_path):
    """Held-out CACM queries become a cite task scored by sciembed.evaluation at every evaluation step;
    its MAP is the metric_for_best_model."""
    from sciembed.training.run import prepare

    run = prepare(
        "specter",
        tiny_bert,
        shared_data("cacm"),
        tmp_path,
        {
            "data.held_out": 0.05,
            "max_steps": 2,
            "save_strategy": "steps",
            "save_steps": 1,
            "eval_steps": 1,
            "learning_rate": 1e-3,
            "per_device_train_batch_size": 4,
            "gradient_accumulation_steps": 1,
            "embedding.max_length": 32,
            "load_best_model_at_end": True,
        },
    )
    assert len(run.trainer.eval_dataset.tasks[0].qrels) == run.data["held_out_queries"] > 0
    run.trainer.train()
    maps = [entry["eval_cite_map"] for entry in run.trainer.state.log_history if "eval_cite_map" in entry]
    assert len(maps) == 2 and run.trainer.state.best_metric == max(maps)
    assert run.trainer.state.best_model_checkpoint.endswith(f"checkpoint-{1 + maps.index(max(maps))}")


def test_a_run_scores_its_held_out_set_once_at_the_end(tiny_bert, tiny_st_base, tmp_path, monkeypatch):
    """The Trainer's own evaluation at the last step (the recipes' eval_strategy 'epoch') is the final one:
    train_results.json and held_out_evaluation.json carry its metrics, the same as one evaluation after training
    gives, and with --evaluate-before a base that starts as published is scored once before."""
    from sciembed.evaluation import runner
    from sciembed.training import trainers
    from sciembed.training.run import EVALUATION_FILE, RESULTS_FILE, train

    steps = []

    def counting(evaluate_suite):
        def evaluate(*args, **kwargs):
            steps.append((kwargs.get("settings") or {}).get("global_step", "published base"))
            return evaluate_suite(*args, **kwargs)

        return evaluate

    monkeypatch.setattr(trainers, "evaluate_suite", counting(trainers.evaluate_suite))
    monkeypatch.setattr(runner, "evaluate_suite", counting(runner.evaluate_suite))
    data = write_s2orc(tmp_path / "papers.jsonl")
    overrides = {**TINY_RUN, "data.max_examples": None, "data.held_out": 0.25}
    del overrides["save_strategy"], overrides["save_steps"]  # the recipe's: evaluate and save at the end of the epoch
    at_the_end = train("specter", tiny_bert, data, tmp_path / "epoch", overrides)
    assert at_the_end["settings"]["training"]["save_strategy"] == "epoch" and steps == [2]
    history = json.loads((tmp_path / "epoch" / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
    assert [entry["step"] for entry in history if "eval_cite_map" in entry] == [2]

    steps.clear()
    after = train("specter", tiny_bert, data, tmp_path / "after", {**overrides, "save_strategy": "no"})
    assert steps == [2]  # no evaluation during training: the one after it
    assert (
        json.loads((tmp_path / "epoch" / RESULTS_FILE).read_text())["eval_metrics"]
        == after["eval_metrics"]
        == at_the_end["eval_metrics"]
    )
    written = [json.loads((tmp_path / run / EVALUATION_FILE).read_text())["results"] for run in ("epoch", "after")]
    assert written[0] == written[1]

    steps.clear()
    before = train(
        "specter",
        tiny_st_base,
        data,
        tmp_path / "before",
        {**overrides, "model.weight_average": 1.0},
        evaluate_before=True,
    )
    assert before["data"]["starts_as_published"] and steps == ["published base", 2]
    # In unit vectors the recipe ends with WiSE-FT's average, another model than the epoch's: it is scored again.
    steps.clear()
    averaged = train("specter", tiny_st_base, data, tmp_path / "averaged", overrides, evaluate_before=True)
    assert averaged["settings"]["model"]["weight_average"] == 0.2 and steps == ["published base", 2, 2]


def test_held_out_queries_never_appear_in_training_triplets():
    from sciembed.training.examples import read_citation_source, split_queries, triplet_dataset

    source = read_citation_source(shared_data("cacm"))
    train, held = split_queries(source.linked_queries(), 0.2, seed=3)
    assert len(held) == round(0.2 * len(source.linked_queries())) and not set(train) & set(held)
    for sampler in ("specter", "spectroid"):
        triplets = triplet_dataset(source, sampler=sampler, queries=train, exclude=held, seed=3)
        assert not (set(triplets["query_id"]) | set(triplets["positive_id"]) | set(triplets["negative_id"])) & set(
            held
        )
        assert triplets[0]["query"] == {k: source.papers[triplets[0]["query_id"]][k] for k in ("title", "abstract")}
        everything = triplet_dataset(source, sampler=sampler, seed=3)
        assert set(everything["positive_id"]) & set(held)  # without exclude they do appear


def test_pairs_are_co_citations_or_citations_and_never_touch_held_out_papers(tiny_bert, tmp_path):
    """data.pairs: the MoE recipe's co-citation pairs (papers cited together), or citation links (citing paper
    first); held-out papers are in neither, and an unknown kind is named."""
    from sciembed.training.examples import pair_dataset, read_citation_source, split_queries
    from sciembed.training.run import prepare

    source = read_citation_source(shared_data("cacm"))
    _, held = split_queries(source.linked_queries(), 0.2, seed=3)
    links = source.neighbours()
    cocited = pair_dataset(source, exclude=held)
    cited = pair_dataset(source, exclude=held, kind="citations")
    for pairs in (cocited, cited):
        assert not ({*pairs["a_id"], *pairs["b_id"]} & set(held))
    linked = [b in links.get(a, set()) for a, b in zip(cited["a_id"], cited["b_id"])]
    assert all(linked) and set(cited["a_id"]) <= set(source.linked_queries())
    assert sum(b in links.get(a, set()) for a, b in zip(cocited["a_id"], cocited["b_id"])) < len(cocited) / 2
    run = prepare(
        "moe-cocitation",
        tiny_bert,
        shared_data("cacm"),
        tmp_path / "moe",
        {"data.held_out": 0.2, "data.seed": 3, "data.pairs": "citations", "max_steps": 1, "embedding.max_length": 32},
    )
    assert run.data["examples"] == len(cited) and run.settings["data"]["pairs"] == "citations"
    with pytest.raises(ValueError, match=r"setting data.pairs='links': expected one of 'citations', 'cocitations'"):
        prepare(
            "moe-cocitation", tiny_bert, shared_data("cacm"), tmp_path / "bad", {"data.pairs": "links", "max_steps": 1}
        )


def test_sciembed_train_command(tiny_bert, tmp_path, capsys):
    from sciembed.cli import main

    (tmp_path / "settings.yaml").write_text(
        "training:\n  max_steps: 2\n  per_device_train_batch_size: 2\n  gradient_accumulation_steps: 1\n"
    )
    out = tmp_path / "out"
    code = main(
        [
            "train",
            "--recipe",
            "multi2spe",
            "--base",
            str(tiny_bert),
            "--data",
            str(shared_data("scirepeval-samples", "specter_small.json")),
            "--output",
            str(out),
            "--config",
            str(tmp_path / "settings.yaml"),
            "--set",
            "embedding.max_length=32",
            "--set",
            "save_strategy=no",
        ]
    )
    assert code == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["global_step"] == 2 and results["settings"]["loss"] == {
        "name": "multi2spe",
        "weight": 0.1,
        "mode": "paper",
    }
    assert json.loads((out / "model" / "config.json").read_text())["model_type"] == "multi2spe"
    assert (
        main(
            ["train", "--recipe", "specter", "--data", str(tmp_path), "--output", str(out), "--set", "learning_rat=1"]
        )
        == 2
    )


def test_adapters_then_fusion_train_only_their_own_parameters(tiny_bert, tmp_path):
    """SciRepEval's two stages: format adapters on a frozen base, then AdapterFusion over the frozen
    adapters; the saved models keep the base (and, in stage 2, the adapters) as they were."""
    from transformers import AutoModel

    import sciembed
    from sciembed.formats import FORMATS
    from sciembed.training.run import MODEL_FOLDER, prepare, save_trained, train

    data = shared_data("scirepeval-samples")
    run = prepare("scirepeval-adapters", tiny_bert, data, tmp_path / "adapters", TINY_RUN)
    before = {n: p.detach().clone() for n, p in run.trainer.model.named_parameters()}
    run.trainer.train()
    changed = {n for n, p in run.trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all(".adapters." in n for n in changed)  # the base stayed frozen
    # Every format with data trained; the samples hold no regression task, so its adapter never moved.
    assert {n.split(".adapters.")[1].split(".")[0] for n in changed} == {"classification", "proximity", "adhoc_query"}
    stage1 = save_trained(run.trainer, run.tokenizer, tmp_path / "adapters" / MODEL_FOLDER)
    base = AutoModel.from_pretrained(tiny_bert).state_dict()
    for name, tensor in AutoModel.from_pretrained(stage1).state_dict().items():
        torch.testing.assert_close(tensor, base[name], msg=name)

    def adapter_weights(folder, name):
        return torch.load(folder / name / "pytorch_adapter.bin", weights_only=True)

    with pytest.raises(ValueError, match="give as --base a model trained with scirepeval-adapters"):
        train("scirepeval-fusion", tiny_bert, data, tmp_path / "bad", TINY_RUN)
    train("scirepeval-fusion", stage1, data, tmp_path / "fusion", TINY_RUN)
    stage2 = tmp_path / "fusion" / MODEL_FOLDER
    assert {p.name for p in stage2.iterdir() if p.name.startswith("fusion_")} == {f"fusion_{f}" for f in FORMATS}
    for f in FORMATS:
        torch.testing.assert_close(
            adapter_weights(stage2, f), adapter_weights(stage1, f)
        )  # the adapters stayed frozen
    encoder = sciembed.PaperEncoder.from_pretrained(stage2, device="cpu")
    vectors = {f: encoder.with_format(f).encode(PAPERS, show_progress_bar=False) for f in FORMATS}
    assert not np.allclose(vectors["proximity"], vectors["classification"])


def test_a_run_is_the_same_run_every_time(tiny_bert, tmp_path):
    """The parts a recipe adds to the base start random (here Multi2SPE's last layers as the paper builds
    them); they are seeded with the run's seed."""
    from sciembed.training.run import prepare

    data = shared_data("scirepeval-samples", "specter_small.json")
    paper = {"model.initialization": "paper"}
    states = [
        prepare("multi2spe", tiny_bert, data, tmp_path / str(i), {"seed": 3, **paper}).trainer.model.state_dict()
        for i in range(2)
    ]
    other = prepare("multi2spe", tiny_bert, data, tmp_path / "other", {"seed": 4, **paper}).trainer.model.state_dict()
    torch.testing.assert_close(states[0], states[1])
    assert any(not torch.equal(states[0][name], other[name]) for name in other)


def test_loss_settings_the_chosen_loss_does_not_take_are_named(tiny_st_base, tmp_path):
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    with pytest.raises(
        ValueError,
        match=r"loss.margin: not a setting of MultipleNegativesRankingLoss \(loss.name=mnr\); its settings: ",
    ):
        prepare("specter", tiny_st_base, data, tmp_path / "out", {**TINY_RUN, "loss.margin": 0.5})
    run = prepare(
        "specter",
        tiny_st_base,
        data,
        tmp_path / "out",
        {**TINY_RUN, "loss.name": "triplet", "loss.distance": "cosine", "loss.margin": 0.25},
    )
    assert run.settings["embedding"]["chosen_by"]["loss"] == "settings" and run.trainer.loss.distance == "cosine"


# ---------------------------------------------------------------------- papers + citation edge lists


def _papers_and_edges(folder):
    """Forty papers as JSONL and their citations (each cites the next three) as a CSV edge list and as SNAP lines."""
    from helpers import WORDS

    folder.mkdir(exist_ok=True)
    papers = folder / "papers.jsonl"
    papers.write_text(
        "".join(
            json.dumps(
                {
                    "paper_id": f"p{i}",
                    "title": " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(5)),
                    "abstract": " ".join(WORDS[(i * 5 + k) % len(WORDS)] for k in range(12)),
                }
            )
            + "\n"
            for i in range(40)
        )
    )
    pairs = [(f"p{i}", f"p{(i + k) % 40}") for i in range(40) for k in (1, 2, 3)]
    (folder / "cites.csv").write_text("citing,cited\n" + "".join(f"{a},{b}\n" for a, b in pairs))
    (folder / "cites.txt").write_text(
        "# Directed graph\n# FromNodeId\tToNodeId\n" + "".join(f"{a}\t{b}\n" for a, b in pairs)
    )
    return papers, folder / "cites.csv", folder / "cites.txt"


def test_sciembed_train_on_papers_and_a_csv_edge_list(tiny_bert, tmp_path, caplog):
    import logging

    from sciembed.cli import main

    papers, cites, _ = _papers_and_edges(tmp_path / "data")
    out = tmp_path / "out"
    with caplog.at_level(logging.INFO, logger="sciembed"):
        code = main(
            [
                "train",
                "--recipe",
                "specter",
                "--base",
                str(tiny_bert),
                "--papers",
                str(papers),
                "--citations",
                str(cites),
                "--output",
                str(out),
                "--set",
                "max_steps=2",
                "--set",
                "per_device_train_batch_size=4",
                "--set",
                "gradient_accumulation_steps=1",
                "--set",
                "embedding.max_length=32",
                "--set",
                "save_strategy=no",
                "--set",
                "data.held_out=0.1",
            ]
        )
    assert code == 0
    messages = [record.getMessage() for record in caplog.records]
    # The counts are logged once each: the graph's (given, kept, dropped) and the sampler's.
    assert sum("citation graph of" in m for m in messages) == 1 and sum("triplets: {" in m for m in messages) == 1
    results = json.loads((out / "train_results.json").read_text())
    assert results["global_step"] == 2 and results["data"]["source"] == f"{papers} + {cites}"
    assert results["data"]["queries"] == 36 and results["data"]["held_out_queries"] == 4
    assert (out / "held_out_evaluation.json").is_file() and (out / "model" / "config.json").is_file()


@pytest.mark.parametrize("recipe", ["scincl", "multi2spe", "moe-cocitation"])
def test_every_citation_recipe_trains_on_papers_and_snap_lines(recipe, tiny_bert, tmp_path):
    from sciembed.training.examples import CitationFiles
    from sciembed.training.run import train

    papers, _, snap = _papers_and_edges(tmp_path / "data")
    summary = train(
        recipe, tiny_bert, CitationFiles(papers, snap), tmp_path / "out", {**TINY_RUN, "save_strategy": "no"}
    )
    assert summary["global_step"] == 2 and summary["data"]["examples"] > 0


def test_edge_list_options_and_bad_edge_files_stop_before_the_model_loads(tiny_bert, tmp_path, caplog, monkeypatch):
    from sciembed.cli import main
    from sciembed.training.objectives.base import Objective

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the data was checked")

    monkeypatch.setattr(Objective, "model", never)
    papers, cites, _ = _papers_and_edges(tmp_path / "data")
    (tmp_path / "bad.csv").write_text("citing,cited\np1,p2\np3\n")
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(papers.read_text().replace('"paper_id"', '"pid"'))
    base = ["train", "--base", str(tiny_bert), "--output", str(tmp_path / "out")]
    for argv, message in [
        (["--recipe", "specter", "--papers", str(papers)], "--papers and --citations go together (got only --papers)"),
        (
            ["--recipe", "specter", "--data", str(papers), "--papers", str(papers), "--citations", str(cites)],
            "give --data, or --papers with --citations, not both",
        ),
        (["--recipe", "specter"], "no training data: give --data, or --papers and --citations"),
        (
            ["--recipe", "scirepeval-ctrl", "--papers", str(papers), "--citations", str(cites)],
            "recipe scirepeval-ctrl trains on scirepeval data",
        ),
        (
            ["--recipe", "specter", "--papers", str(papers), "--citations", str(tmp_path / "bad.csv")],
            "bad.csv, line 3: one column ('p3') where the header names 2; 1 line(s) in all without 2 fields",
        ),
        (
            ["--recipe", "specter", "--papers", str(renamed), "--citations", str(cites)],
            "with id_field=... / --id-field",
        ),
        (
            ["--recipe", "specter", "--data", str(papers), "--id-field", "pid"],
            "--id-field names the id column of --papers",
        ),
    ]:
        caplog.clear()
        assert main(base + argv) == 2, argv
        assert message in caplog.text, caplog.text
    # Named, the id column is read: the run gets as far as loading the model.
    with pytest.raises(AssertionError, match="the model was loaded"):
        main(base + ["--recipe", "specter", "--papers", str(renamed), "--citations", str(cites), "--id-field", "pid"])


def test_data_exclude_keeps_papers_out_of_every_training_example(tiny_bert, tmp_path):
    """``data.exclude`` (ids, or a file of them): no triplet or co-citation pair holds an excluded paper, no labelled
    example is about one; what was left out is counted, and data that cannot honour it says so."""
    from sciembed.training.examples import labelled_papers
    from sciembed.training.run import prepare

    cacm = shared_data("cacm")
    step = {"max_steps": 1, "save_strategy": "no", "embedding.max_length": 32}
    specter = prepare("specter", tiny_bert, cacm, tmp_path / "all", step).trainer.train_dataset
    # The papers the first 30 query papers' triplets use: excluded, none of them may appear again.
    used = sorted(
        {row[f"{role}_id"] for row in specter.select(range(30)) for role in ("query", "positive", "negative")}
    )
    (tmp_path / "ids.txt").write_text("\n".join(used) + "\n", encoding="utf-8")
    run = prepare(
        "specter", tiny_bert, cacm, tmp_path / "specter", {**step, "data.exclude": str(tmp_path / "ids.txt")}
    )
    seen = {row[f"{role}_id"] for row in run.trainer.train_dataset for role in ("query", "positive", "negative")}
    assert (
        not seen & set(used)
        and run.data["excluded_papers"] == len(used)
        and len(run.trainer.train_dataset) < len(specter)
    )
    pairs = prepare(
        "moe-cocitation", tiny_bert, cacm, tmp_path / "moe", {**step, "data.exclude": used}
    ).trainer.train_dataset
    assert not ({*pairs["a_id"], *pairs["b_id"]} & set(used))
    labelled = labelled_papers(cacm)[0]["paper_id"]
    heads = prepare(
        "spectroid-heads",
        tiny_bert,
        cacm,
        tmp_path / "heads",
        {**step, "data.exclude": [*labelled[:7], "no-such-paper"]},
    )
    assert heads.data["excluded_papers"] == 7 and not set(heads.trainer.train_dataset["paper_id"]) & set(labelled[:7])
    # Ids that name no paper exclude nothing, and are counted (a wrongly formatted ids file is not silent).
    assert heads.data["exclude_ids_unknown"] == 1 and run.data["exclude_ids_unknown"] == 0
    for value, message in (
        ("missing.txt", "data.exclude: missing.txt is not a file of paper ids"),
        ({"a": 1}, r"setting data.exclude=\{'a': 1\}: expected str or a path or a list of str or int"),
    ):
        with pytest.raises(ValueError, match=message):
            prepare("specter", tiny_bert, cacm, tmp_path / "bad", {**step, "data.exclude": value})
    with pytest.raises(ValueError, match="multi-task data takes them per task: give a task mixture"):
        prepare(
            "scirepeval-ctrl",
            tiny_bert,
            shared_data("scirepeval-samples"),
            tmp_path / "ctrl",
            {**step, "data.exclude": ["1"]},
        )
    with pytest.raises(ValueError, match="SciRepEval's ready triplets carry no paper ids to exclude"):
        prepare(
            "specter",
            tiny_bert,
            shared_data("scirepeval-samples", "specter_small.json"),
            tmp_path / "ready",
            {**step, "data.exclude": ["1"]},
        )


def test_a_classification_head_trains_at_its_own_learning_rate(tiny_bert, tmp_path):
    """spectroid-heads' model.head_learning_rate: the head's parameters (outside the encoder) in optimiser groups of
    their own at that rate, the encoder's at the run's, each group keeping its weight decay; the schedule scales
    both alike."""
    from sciembed.training.run import prepare

    overrides = {**TINY_RUN, "save_strategy": "no", "learning_rate": 2e-5, "warmup_steps": 0}
    run = prepare("spectroid-heads", tiny_bert, shared_data("cacm"), tmp_path / "heads", overrides)
    trainer = run.trainer
    optimizer = trainer.create_optimizer()
    encoder = {id(p) for p in trainer.model.base_model.parameters()}
    head = [p for p in trainer.model.parameters() if id(p) not in encoder]
    assert head and run.settings["model"]["head_learning_rate"] == 1e-3
    for group in optimizer.param_groups:
        kinds = {id(p) in encoder for p in group["params"]}
        assert len(kinds) == 1 and group["lr"] == (2e-5 if kinds == {True} else 1e-3)
    grouped = [p for group in optimizer.param_groups for p in group["params"]]
    assert len(grouped) == len({id(p) for p in grouped}) == len(list(trainer.model.parameters()))
    assert {g["weight_decay"] for g in optimizer.param_groups} == {0.0, 0.01}
    scheduler = trainer.create_scheduler(num_training_steps=10, optimizer=optimizer)
    optimizer.step()
    scheduler.step()
    rates = {round(g["lr"] / g["initial_lr"], 6) for g in optimizer.param_groups}
    assert len(rates) == 1  # one schedule for both rates
    with pytest.raises(ValueError, match="head_learning_rate must be positive"):
        prepare(
            "spectroid-heads",
            tiny_bert,
            shared_data("cacm"),
            tmp_path / "bad",
            {**overrides, "model.head_learning_rate": 0},
        )


def test_a_head_fitted_alone_first_leaves_the_encoder_alone_and_lowers_its_loss(tiny_bert, tmp_path):
    """model.head_only_steps (LP-FT): the head is fitted on the frozen encoder's embeddings of the training set
    before end-to-end training; the encoder is untouched, the head's loss falls, and with model.weight_average the
    fitted head (not the random one) is what the trained head is averaged with."""
    from sciembed.training.run import prepare

    overrides = {**TINY_RUN, "save_strategy": "no", "model.head_only_steps": 40, "model.weight_average": 0.5}
    run = prepare("spectroid-heads", tiny_bert, shared_data("cacm"), tmp_path / "heads", overrides)
    trainer = run.trainer
    encoder = {k: v.clone() for k, v in trainer.model.base_model.state_dict().items()}
    mode = trainer.model.training
    losses = trainer.fit_head()
    assert len(losses) == 40 and losses[-1] < 0.9 * losses[0]
    assert all(torch.equal(v, encoder[k]) for k, v in trainer.model.base_model.state_dict().items())
    assert trainer.model.training == mode
    head = trainer.model.classifier.state_dict()
    assert all(torch.equal(trainer._starting_weights[f"classifier.{k}"], v.cpu()) for k, v in head.items())
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"head_only_steps"):
            prepare(
                "spectroid-heads",
                tiny_bert,
                shared_data("cacm"),
                tmp_path / f"bad{bad}",
                {**overrides, "model.head_only_steps": bad},
            )


def test_a_classifier_from_a_unit_vector_base_is_evaluated_and_saved_in_the_base_s_embedding(tiny_st_base, tmp_path):
    """spectroid-heads from a base used in mean pooling + normalisation (as all-MiniLM-L6-v2): the trainer evaluates
    the text's mean, L2-normalised, as the base is used (not the raw [CLS]), and the saved classifier encodes
    exactly that vector."""
    import sciembed
    from sciembed.data.papers import paper_text
    from sciembed.encode import pool
    from sciembed.training.run import MODEL_FOLDER, train

    out = tmp_path / "heads"
    overrides = {**TINY_RUN, "save_strategy": "no"}
    train("spectroid-heads", str(tiny_st_base), shared_data("cacm"), out, overrides)
    saved = out / MODEL_FOLDER
    from sciembed.training.run import prepare

    run = prepare("spectroid-heads", str(tiny_st_base), shared_data("cacm"), tmp_path / "check", overrides)
    assert (run.trainer.pooling, run.trainer.normalize) == ("mean", True)
    assert run.settings["model"]["text_pooling"] == "mean"
    from transformers import AutoModel, AutoTokenizer

    encoder = AutoModel.from_pretrained(saved, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(saved)
    texts = [paper_text(p, tokenizer.sep_token) for p in PAPERS]
    batch = tokenizer(texts, padding=True, truncation=True, max_length=48, return_tensors="pt")
    with torch.no_grad():
        expected = pool(encoder(**batch), batch["attention_mask"], "mean", normalize=True)
        torch.testing.assert_close(
            encoder(**batch).pooler_output, pool(encoder(**batch), batch["attention_mask"], "mean")
        )
    vectors = sciembed.encode(saved, PAPERS, device="cpu", max_length=48, show_progress_bar=False)
    np.testing.assert_allclose(vectors, expected.numpy(), atol=1e-5)


def test_readers_take_the_run_s_data_settings_themselves(tmp_path):
    """A data key is defined once: every reader takes the run's ``DataSettings``, a subclass's new keys too."""
    import dataclasses
    import typing

    from sciembed.training import sources
    from sciembed.training.settings import DataKind, DataSettings

    @dataclasses.dataclass(frozen=True)
    class WithNewKey(DataSettings):
        new_key: int = 3

    received = []

    class Recorder(sources.Source):
        kind = DataKind.LABELLED

        def read(self, *given):
            received.extend(given)
            return sources.Examples(train=[])

    data = WithNewKey(seed=5, max_examples=2, exclude=["p1", 2])
    sources.read_examples(Recorder(tmp_path / "papers.jsonl"), data, None)
    assert received[:2] == [data, frozenset({"p1", "2"})]
    assert received[0].new_key == 3
    readers = [r for r in vars(sources).values() if isinstance(r, type) and issubclass(r, sources.Source)]
    assert len(readers) == 7  # the base and its six layouts
    for reader in readers:
        assert typing.get_type_hints(reader.read)["data"] is DataSettings, reader.__name__


def test_anchor_papers_keep_their_relations_and_cost_nothing_at_step_0(tiny_st_base, tmp_path):
    """data.anchor_papers with loss.anchor_weight: the term is zero at step 0 (the first logged loss equals an
    unanchored run's), the anchor papers' pairwise cosines move less than without it, their counts are recorded
    (invalid, repeated and excluded papers left out), and a recipe or setting that cannot anchor says so."""
    from sciembed.data.papers import read_papers
    from sciembed.training.losses import RelationalAnchorLoss
    from sciembed.training.run import prepare
    from sciembed.training.sources import anchor_papers

    data = write_s2orc(tmp_path / "papers.jsonl")
    anchors, more = tmp_path / "anchors.jsonl", tmp_path / "more.json"
    records = [
        {"paper_id": f"a{i}", "title": f"{PAPERS[i % len(PAPERS)]['title']} {i}", "abstract": "x " * i}
        for i in range(12)
    ]
    anchors.write_text("".join(json.dumps(r) + "\n" for r in [*records, {"paper_id": "a1", "title": "again"}]))
    more.write_text(json.dumps([{"paper_id": "a0", "title": "once more"}, {"paper_id": "b0", "title": "new"}]))
    overrides = {**TINY_RUN, "max_steps": 6, "save_strategy": "no", "learning_rate": 0.01, "data.exclude": ["a11"]}
    anchored = {
        "data.anchor_papers": [str(anchors), str(more)],
        "loss.anchor_weight": 50.0,
        "loss.anchor_batch_size": 8,
    }
    papers = read_papers(anchors, skip_invalid=True).papers
    moved, first = {}, {}
    for name, extra in (("plain", {}), ("anchored", anchored)):
        # Prepared and trained in turn: the Trainer seeds when it is built, so two built first would train apart.
        run = prepare("specter", tiny_st_base, data, tmp_path / name, {**overrides, **extra})
        start = _Embedder(run.trainer)(papers)
        run.trainer.train()
        first[name] = next(entry["loss"] for entry in run.trainer.state.log_history if "loss" in entry)
        moved[name] = RelationalAnchorLoss()(_Embedder(run.trainer)(papers), start).item()
    assert run.data["anchor_papers"] == {"papers": 12, "skipped": 1, "repeated": 1, "excluded": 1}
    # SciRepEval's ready triplets give their papers.
    counts = {}
    triplets = anchor_papers(shared_data("scirepeval-samples") / "specter_small.json", set(), counts)
    assert counts["anchor_papers"]["papers"] == len(triplets) == len({p["paper_id"] for p in triplets}) > 200
    assert all(p["title"] for p in triplets)
    assert first["anchored"] == pytest.approx(first["plain"], rel=1e-5)
    assert moved["anchored"] < 0.5 * moved["plain"]
    with pytest.raises(ValueError, match="both data.anchor_papers"):
        prepare("specter", tiny_st_base, data, tmp_path / "half", {**overrides, "loss.anchor_weight": 1.0})
    with pytest.raises(ValueError, match="anchor papers have no domain"):
        prepare("moe-cocitation", tiny_st_base, data, tmp_path / "moe", {**overrides, **anchored})
    with pytest.raises(ValueError, match="does not anchor papers"):
        prepare("spectroid-heads", tiny_st_base, shared_data("cacm"), tmp_path / "heads", {"max_steps": 1, **anchored})


def test_multitask_anchoring_keeps_every_format(tiny_st_base, tmp_path):
    """A multi-format model trained on several tasks keeps the anchor papers' relations in each of its formats,
    one a step in turn: targets for every format, zero at step 0, and each format's relations move less than
    without anchoring."""
    from sciembed.training.losses import RelationalAnchorLoss
    from sciembed.training.run import prepare
    from sciembed.training.sources import anchor_papers

    data = shared_data("scirepeval-samples")
    anchored = {
        "data.anchor_papers": str(data / "specter_small.json"),
        "loss.anchor_weight": 500.0,
        "loss.anchor_batch_size": 8,
    }
    overrides = {**TINY_RUN, "max_steps": 8, "save_strategy": "no", "learning_rate": 1e-3, "model.weight_average": 1.0}
    papers = anchor_papers(data / "specter_small.json", set(), {})[:64]
    first, moved = {}, {}
    for name, extra in (("plain", {}), ("anchored", anchored)):
        run = prepare("scirepeval-ctrl", tiny_st_base, data, tmp_path / name, {**overrides, **extra})
        formats = run.trainer.formats
        start = {f: _Embedder(run.trainer)(papers, f) for f in formats}
        run.trainer.train()
        first[name] = next(entry["loss"] for entry in run.trainer.state.log_history if "loss" in entry)
        moved[name] = {f: RelationalAnchorLoss()(_Embedder(run.trainer)(papers, f), start[f]).item() for f in formats}
    assert len(formats) == 4 and set(run.trainer._anchor.targets) == set(formats)
    assert first["anchored"] == pytest.approx(first["plain"], rel=1e-5)
    assert all(moved["anchored"][f] < 0.8 * moved["plain"][f] for f in formats), moved


class _Embedder:
    """A trainer's embeddings of paper records (in ``task_format``, for a multi-format model), in evaluation mode,
    without gradients."""

    def __init__(self, trainer):
        self.trainer = trainer

    @torch.no_grad()
    def __call__(self, papers, task_format=None):
        model = self.trainer.model
        model.eval()
        features = self.trainer.data_collator.tokenize(papers)
        return self.trainer.embed(model, features, task_format)[1]


def test_bf16_training_runs_under_the_cpu_autocast_and_keeps_float32_weights(tiny_bert, tmp_path, monkeypatch, caplog):
    """bf16=True (--set bf16=true) trains in bf16 autocast, with float32 master weights (from a base stored in fp16
    too) and a finite loss; without a CUDA GPU it needs use_cpu=True, and the run says so before the model loads."""
    from transformers import AutoModel, AutoTokenizer

    from sciembed.cli import main
    from sciembed.training.run import prepare

    data = write_s2orc(tmp_path / "papers.jsonl")
    AutoModel.from_pretrained(tiny_bert, dtype=torch.float16).save_pretrained(tmp_path / "fp16")
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(tmp_path / "fp16")
    run = prepare(
        "specter",
        tmp_path / "fp16",
        data,
        tmp_path / "out",
        {**TINY_RUN, "save_strategy": "no", "bf16": True, "use_cpu": True},
    )
    seen = []
    linear = next(m for m in run.trainer.model.modules() if isinstance(m, torch.nn.Linear))
    linear.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    result = run.trainer.train()
    assert run.trainer.args.bf16 and seen and set(seen) == {torch.bfloat16}  # matrix products in bf16
    assert np.isfinite(result.training_loss) and result.global_step == 2
    assert {p.dtype for p in run.trainer.model.parameters()} == {torch.float32}

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    command = ["train", "--recipe", "specter", "--base", str(tiny_bert), "--data", str(data), "--set", "bf16=true"]
    assert main([*command, "--output", str(tmp_path / "cpu")]) == 2
    assert "no CUDA GPU here" in caplog.text and "--set use_cpu=true" in caplog.text
    assert "Traceback" not in caplog.text and not (tmp_path / "cpu" / "model").exists()
