"""Task mixtures (several sources in one multi-task run, SciRepEval's task configuration) on the real data."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import shared_data

SPLIT = {"data.held_out": 0.2, "data.seed": 3}
STEP = {
    "max_steps": 1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "warmup_steps": 0,
    "save_strategy": "no",
    "embedding.max_length": 32,
}


def write_mixture(folder: Path, tasks: list[dict] | dict, name: str = "mixture.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


@pytest.fixture
def mixture(tmp_path) -> tuple[Path, list[str]]:
    """CACM citations and categories (five category papers excluded), fields of study and search, as one mixture."""
    from sciembed.training.examples import labelled_papers

    cacm, samples = shared_data("cacm"), shared_data("scirepeval-samples")
    excluded = list(labelled_papers(cacm)[0]["paper_id"][:5])
    (tmp_path / "test-papers.txt").write_text("\n".join(excluded) + "\n", encoding="utf-8")
    return write_mixture(
        tmp_path,
        [
            {"name": "cite", "type": "proximity", "data": str(cacm)},
            {
                "name": "categories",
                "type": "classification",
                "data": str(cacm),
                "exclude": "test-papers.txt",
                "multi_label": False,
            },
            {
                "name": "fos",
                "type": "classification",
                "data": str(samples / "fos_small.json"),
                "sample_size": {"train": 40},
            },
            {"name": "search", "type": "ir", "data": str(samples / "search_small.jsonl"), "sample_size": 30},
        ],
    ), excluded


def test_a_mixture_trains_every_task_and_is_judged_on_the_specter_runs_held_out_queries(mixture, tiny_bert, tmp_path):
    from sciembed.training.examples import labelled_papers, paper_record, read_citation_source
    from sciembed.training.run import prepare

    path, excluded = mixture
    run = prepare("scirepeval-ctrl", tiny_bert, path, tmp_path / "ctrl", {**SPLIT, **STEP})
    specter = prepare("specter", tiny_bert, shared_data("cacm"), tmp_path / "specter", {**SPLIT, **STEP})
    # The same held-out queries as a single-source run of the seed, and the same cite task on them.
    assert run.data["held_out_ids"] == specter.data["held_out_ids"] and run.data["held_out_queries"] > 0
    assert run.trainer.eval_dataset.tasks[0].qrels == specter.trainer.eval_dataset.tasks[0].qrels
    tasks = run.data["tasks"]
    assert {name: task["kind"] for name, task in tasks.items()} == {
        "cite": "proximity",
        "categories": "classification",
        "fos": "multilabel",
        "search": "search",
    }
    assert tasks["fos"]["used"] == 40 and tasks["search"]["used"] == 30 and tasks["fos"]["rows"] > 40
    labelled = len(labelled_papers(shared_data("cacm"))[0])
    assert tasks["categories"]["excluded_papers"] == 5 and tasks["categories"]["exclude_ids_unknown"] == 0
    assert tasks["categories"]["rows"] == tasks["categories"]["used"] == labelled - 5
    # No held-out query paper is in a training triplet, and no excluded paper in a classification row (rows hold
    # texts, not ids: compared on the texts no other paper shares, as some CACM algorithms share a bare title).
    source = read_citation_source(shared_data("cacm"))
    texts = Counter(json.dumps(paper_record(p)) for p in source.papers.values())
    held = {json.dumps(paper_record(source.papers[q])) for q in run.data["held_out_ids"]}
    held = {text for text in held if texts[text] == 1}
    rows = run.trainer.train_dataset
    cite_papers = {json.dumps(p) for r in rows if r["task"] == "cite" for p in r["papers"]}
    assert cite_papers and not cite_papers & held
    category_papers = [json.dumps(r["papers"][0]) for r in rows if r["task"] == "categories"]
    assert category_papers and not set(category_papers) & {
        json.dumps(paper_record(source.papers[p])) for p in excluded
    }
    run.trainer.train()
    assert run.trainer.state.global_step == 1


def test_a_task_s_weight_gives_it_that_share_of_every_batch(mixture, tiny_bert, tmp_path):
    """A task's ``weight``: the run's batches hold its rows in proportion (the others keep weight 1)."""
    from sciembed.training.run import prepare

    path, _ = mixture
    tasks = json.loads(path.read_text(encoding="utf-8"))
    tasks[0]["weight"] = 5
    weighted = write_mixture(tmp_path, tasks, "weighted.json")
    run = prepare("scirepeval-ctrl", tiny_bert, weighted, tmp_path / "ctrl", {**SPLIT, **STEP})
    rows = run.trainer.train_dataset["task"]
    order = list(run.trainer._get_train_sampler())
    assert Counter(rows[i] for i in order[:8]) == {"cite": 5, "categories": 1, "fos": 1, "search": 1}


def test_a_mixture_with_a_validation_split_tunes_on_training_queries_only(mixture, tiny_bert, tmp_path):
    from sciembed.training.run import prepare

    path, _ = mixture
    run = prepare("scirepeval-ctrl", tiny_bert, path, tmp_path / "ctrl", {**SPLIT, **STEP, "data.validation": 0.1})
    assert run.data["validation_queries"] > 0 and not set(run.data["validation_ids"]) & set(run.data["held_out_ids"])
    samples_only = write_mixture(
        tmp_path,
        [{"name": "fos", "type": "classification", "data": str(shared_data("scirepeval-samples", "fos_small.json"))}],
        "fos.json",
    )
    for key in ("data.validation", "data.held_out"):
        with pytest.raises(
            ValueError, match=f"fos.json: {key} splits citation queries, and this mixture has no citation graph"
        ):
            prepare("scirepeval-ctrl", tiny_bert, samples_only, tmp_path / "fos", {**STEP, key: 0.1})
    with pytest.raises(
        ValueError, match="data.held_out splits citation queries, and SciRepEval's samples hold no citation graph"
    ):
        prepare(
            "scirepeval-ctrl",
            tiny_bert,
            shared_data("scirepeval-samples"),
            tmp_path / "samples",
            {**STEP, "data.held_out": 0.1},
        )


def test_only_a_list_of_tasks_is_a_mixture(tmp_path):
    from sciembed.training.task_mixture import is_task_mixture

    samples = shared_data("scirepeval-samples")
    assert not is_task_mixture(samples / "fos_small.json") and not is_task_mixture(samples / "specter_small.json")
    assert not is_task_mixture(samples)
    assert is_task_mixture(
        write_mixture(tmp_path, [{"name": "fos", "type": "classification", "data": str(samples / "fos_small.json")}])
    )
    assert is_task_mixture(write_mixture(tmp_path, {"tasks": [{"name": "x", "data": "y"}]}, "keyed.json"))
    assert not is_task_mixture(write_mixture(tmp_path, [{"paper_id": "1", "title": "t"}], "records.json"))


def test_a_graph_s_exclusions_are_counted_in_mixtures_of_tasks_and_of_domains(tiny_bert, tmp_path):
    from sciembed.training.examples import read_citation_source
    from sciembed.training.run import prepare

    cacm = shared_data("cacm")
    some = sorted(read_citation_source(cacm).linked_queries())[:6]
    task = {"name": "cite", "type": "proximity", "data": str(cacm), "exclude": [*some, "no-such-paper"]}
    mixed = prepare(
        "scirepeval-ctrl", tiny_bert, write_mixture(tmp_path, [task]), tmp_path / "ctrl", {**SPLIT, **STEP}
    )
    assert mixed.data["excluded_papers"] == 6 and mixed.data["exclude_ids_unknown"] == 1
    physics = {"name": "physics", "type": "proximity", "data": write_physics_graph(tmp_path / "physics")}
    by_domain = prepare(
        "specter",
        tiny_bert,
        write_mixture(tmp_path, [{**task, "name": "cs"}, physics], "domains.json"),
        tmp_path / "sp",
        {**SPLIT, **STEP},
    )
    assert (
        by_domain.data["domains"]["cs"]["excluded_papers"] == 6
        and by_domain.data["domains"]["cs"]["exclude_ids_unknown"] == 1
    )
    assert "excluded_papers" not in by_domain.data["domains"]["physics"]
    seen = {row[f"{role}_id"] for row in by_domain.trainer.train_dataset for role in ("query", "positive", "negative")}
    assert not seen & set(some)


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (
            {"name": "x", "type": "proximity", "data": "cacm", "ctrl_token": "[PRX]"},
            r"task 1 \(x\): unknown key\(s\) ctrl_token; a task takes name",
        ),
        (
            {"name": "x", "type": "regression", "data": "cacm"},
            r"task 1 \(x\): unknown type 'regression'; one of classification, proximity, search",
        ),
        ({"name": "x", "type": "proximity"}, r"task 1 \(x\): missing data"),
        ({"name": "x", "type": "proximity", "data": "nowhere"}, r"task 1 \(x\): .*nowhere does not exist"),
        (
            {"name": "x", "type": "classification", "data": "cacm", "sample_size": 0},
            "sample_size must be a positive integer, got 0",
        ),
        (
            {"name": "x", "type": "classification", "data": "cacm", "exclude": "ids.txt"},
            r"exclude: .*ids.txt is not a file of paper ids",
        ),
        (
            {"name": "x", "type": "search", "data": "scirepeval-samples/search_small.jsonl", "exclude": ["1"]},
            "exclude takes papers out of classification tasks and citation graphs, not search sessions",
        ),
        ({"name": "x", "type": "classification", "data": "cacm", "weight": 0}, "weight is a positive number"),
        ("cacm", "task 1: a task is a mapping with name, type and data, got str"),
    ],
)
def test_a_bad_task_is_named_before_anything_is_read(task, message, tmp_path):
    from sciembed.training.task_mixture import read_task_mixture

    data = shared_data()
    for name in ("cacm", "scirepeval-samples"):
        (tmp_path / name).symlink_to(data / name)
    with pytest.raises(ValueError, match=message):
        read_task_mixture(write_mixture(tmp_path, [task]))


def test_mixture_level_problems_are_named(tmp_path, tiny_bert):
    from sciembed.training.run import prepare
    from sciembed.training.task_mixture import read_task_mixture

    cacm = str(shared_data("cacm"))
    with pytest.raises(ValueError, match=r"task names repeat \(a\)"):
        read_task_mixture(write_mixture(tmp_path, [{"name": "a", "type": "classification", "data": cacm}] * 2))
    with pytest.raises(ValueError, match="a task mixture is a non-empty list of tasks"):
        read_task_mixture(write_mixture(tmp_path, {"fos": 1}))
    (tmp_path / "broken.yaml").write_text("tasks: [", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.yaml: not a readable task mixture"):
        read_task_mixture(tmp_path / "broken.yaml")
    wrong = write_mixture(
        tmp_path,
        [
            {
                "name": "fos",
                "type": "classification",
                "multi_label": False,
                "data": str(shared_data("scirepeval-samples", "fos_small.json")),
            }
        ],
    )
    with pytest.raises(
        ValueError, match="task fos: multi_label is false, but .*fos_small.json holds several labels per paper"
    ):
        prepare("scirepeval-ctrl", tiny_bert, wrong, tmp_path / "out", STEP)


def test_a_yaml_mixture_under_tasks_reads_as_the_json_list(tmp_path):
    from sciembed.training.task_mixture import read_task_mixture

    cacm = shared_data("cacm")
    (tmp_path / "mixture.yaml").write_text(
        f"tasks:\n  - {{name: cite, type: triplet, data: {cacm}}}\n", encoding="utf-8"
    )
    listed = write_mixture(tmp_path, [{"name": "cite", "type": "proximity", "data": str(cacm)}])
    assert read_task_mixture(tmp_path / "mixture.yaml") == read_task_mixture(listed)


def test_search_sessions_without_two_scores_are_counted_not_dropped_silently(tmp_path):
    from sciembed.training.examples import search_rows

    session = {
        "query": "graph embeddings",
        "candidates": [
            {"corpus_id": 1, "title": "Graph embedding", "abstract": "nodes as vectors", "score": 2},
            {"corpus_id": 2, "title": "Sorting", "abstract": "lists in order", "score": 0},
        ],
    }
    flat = {
        "query": "sorting",
        "candidates": [
            {"corpus_id": 3, "title": "Sort", "abstract": "x", "score": 1},
            {"corpus_id": 4, "title": "Merge", "abstract": "y", "score": 1},
        ],
    }
    path = tmp_path / "search_small.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in (session, flat, session)) + "\n", encoding="utf-8")
    rows = search_rows(path)
    assert len(rows.rows) == 2 and rows.skipped == {"sessions_without_two_scores": 1}
    assert [p["title"] for p in rows.rows[0]["papers"]] == ["graph embeddings", "Graph embedding", "Sorting"]


# ---------------------------------------------------------------- one citation graph per domain (Multi2SPE, MoE BERT)


def write_physics_graph(folder: Path) -> dict[str, str]:
    """Forty invented papers, each citing the next three, as a papers file and an edge list."""
    from helpers import WORDS

    folder.mkdir(parents=True, exist_ok=True)
    papers = [
        {
            "paper_id": f"ph{i}",
            "title": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4)),
            "abstract": " ".join(WORDS[(3 * i + k) % len(WORDS)] for k in range(12)),
        }
        for i in range(40)
    ]
    (folder / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
    (folder / "cites.csv").write_text(
        "citing,cited\n" + "".join(f"ph{i},ph{(i + k) % 40}\n" for i in range(40) for k in (1, 2, 3)), encoding="utf-8"
    )
    return {"papers": str(folder / "papers.jsonl"), "citations": str(folder / "cites.csv")}


@pytest.fixture
def domains(tmp_path) -> Path:
    return write_mixture(
        tmp_path,
        [
            {"name": "cs", "type": "proximity", "data": str(shared_data("cacm"))},
            {"name": "physics", "type": "proximity", "data": write_physics_graph(tmp_path / "physics")},
        ],
        "domains.json",
    )


def test_moe_trains_one_expert_per_domain_and_is_judged_per_domain(domains, tiny_bert, tmp_path):
    from sciembed.training.run import prepare

    run = prepare("moe-cocitation", tiny_bert, domains, tmp_path / "moe", {**SPLIT, **STEP, "data.max_examples": 64})
    model = run.trainer.model
    assert model.config.domains == ["cs", "physics"] and run.settings["model"]["domains"] == ["cs", "physics"]
    assert run.settings["data"]["domain"] is None and set(run.trainer.train_dataset["domain"]) <= {"cs", "physics"}
    assert all(run.data["domains"][d]["examples"] > 0 for d in ("cs", "physics"))  # before data.max_examples' cut
    # The cs graph is split as a single-graph run of the seed splits it.
    specter = prepare("specter", tiny_bert, shared_data("cacm"), tmp_path / "specter", {**SPLIT, **STEP})
    assert run.data["domains"]["cs"]["held_out_ids"] == specter.data["held_out_ids"]
    assert run.data["held_out_queries"] == sum(d["held_out_queries"] for d in run.data["domains"].values())
    tasks = run.trainer.eval_dataset.tasks
    assert [(t.task_id, t.domain) for t in tasks] == [("cite_cs", "cs"), ("cite_physics", "physics")]
    metrics = run.trainer.evaluate()
    assert {"eval_cite_cs_map", "eval_cite_physics_map"} <= set(metrics)
    run.trainer.train()
    assert run.trainer.state.global_step == 1
    with pytest.raises(
        ValueError, match=r"model.domains \['cs'\] differs from the mixture's domains \['cs', 'physics'\]"
    ):
        prepare("moe-cocitation", tiny_bert, domains, tmp_path / "bad", {**STEP, "model.domains": ["cs"]})


def test_the_dense_counterpart_trains_the_same_data_without_experts(domains, tiny_bert, tmp_path):
    from transformers import BertModel

    from sciembed.training.run import prepare

    run = prepare(
        "moe-cocitation",
        tiny_bert,
        domains,
        tmp_path / "dense",
        {**SPLIT, **STEP, "model.family": "none", "data.max_examples": 64},
    )
    assert type(run.trainer.model) is BertModel and run.settings["model"] == {"family": None}
    assert run.settings["loss"]["name"] == "mnr" and run.trainer.eval_dataset.tasks[1].task_id == "cite_physics"
    assert {"eval_cite_cs_map", "eval_cite_physics_map"} <= set(run.trainer.evaluate())
    run.trainer.train()
    single = prepare(
        "moe-cocitation", tiny_bert, shared_data("cacm"), tmp_path / "single", {**STEP, "model.family": "none"}
    )
    assert type(single.trainer.model) is BertModel and single.trainer.domain is None
    with pytest.raises(ValueError, match="model.family takes none"):
        prepare("moe-cocitation", tiny_bert, domains, tmp_path / "other", {**STEP, "model.family": "multi2spe"})
    # What a recipe's model adds (CLS tokens, a head, format modules) is not dropped in silence.
    for recipe in ("multi2spe", "spectroid-heads", "scirepeval-ctrl", "scirepeval-adapters"):
        with pytest.raises(ValueError, match=f"model.family=none: recipe {recipe} needs what its model adds"):
            prepare(recipe, tiny_bert, shared_data("cacm"), tmp_path / recipe, {**STEP, "model.family": "none"})
    # The settings shown are the ones the run uses: no experts, no domain.
    from sciembed.training.run import resolved_settings

    shown = resolved_settings("moe-cocitation", tiny_bert, {"model.family": "none"})
    assert shown["model"] == {"family": None} and shown["data"]["domain"] is None
    # In unit vectors the dense counterpart keeps the recipe's WiSE-FT average: the two differ by the experts alone.
    from sciembed.training.recipes import get_recipe
    from sciembed.training.run import _dense_variant

    dense, _ = _dense_variant(get_recipe("moe-cocitation"), {"model.family": "none"})
    assert (
        dense.resolve(unit_vectors=True)["model"]["weight_average"]
        == get_recipe("moe-cocitation").resolve(unit_vectors=True)["model"]["weight_average"]
    )


def test_triplet_recipes_take_a_domain_mixture_and_multitask_ones_one_graph(domains, tiny_bert, tmp_path):
    from sciembed.training.run import prepare

    run = prepare(
        "multi2spe",
        tiny_bert,
        domains,
        tmp_path / "m2",
        {**SPLIT, **STEP, "model.num_cls_tokens": 2, "data.max_examples": 64},
    )
    assert set(run.trainer.train_dataset["domain"]) <= {"cs", "physics"} and "domains" not in run.settings["model"]
    assert all(run.data["domains"][d]["examples"] > 0 for d in ("cs", "physics"))
    run.trainer.train()
    with pytest.raises(ValueError, match="a multi-task mixture takes one citation graph .* found 2: cs, physics"):
        prepare("scirepeval-ctrl", tiny_bert, domains, tmp_path / "ctrl", STEP)
    fos = write_mixture(
        tmp_path,
        [{"name": "fos", "type": "classification", "data": str(shared_data("scirepeval-samples", "fos_small.json"))}],
        "fos.json",
    )
    with pytest.raises(
        ValueError, match="a citation recipe's mixture is one citation graph per domain; not a citation graph: fos"
    ):
        prepare("specter", tiny_bert, fos, tmp_path / "specter", STEP)


def test_evaluation_embeds_each_task_through_its_domains_expert(tiny_bert):
    import numpy as np
    import torch

    from sciembed import PaperEncoder
    from sciembed.evaluation.loaders import TaskSuite
    from sciembed.evaluation.runner import _embed_tasks
    from sciembed.evaluation.tasks import ProximityTask
    from sciembed.families import from_bert, register_families

    register_families()
    model, tokenizer = from_bert("moe_bert", str(tiny_bert), domains=["cs", "physics"])
    with torch.no_grad():  # the physics expert's gate moved away from the copy of the pretrained MLP
        for name, parameter in model.named_parameters():
            if ".experts.1.w3." in name:
                parameter.normal_(0.0, 0.5)
    encoder = PaperEncoder(model, tokenizer, pooling=None, device="cpu", max_length=32, domain="cs")
    papers = {
        "a": {"title": "graph embedding", "abstract": "citation network"},
        "b": {"title": "memory", "abstract": "garbage collection"},
    }
    tasks = [
        ProximityTask("x", f"cite {d}", papers, qrels={"a": {"b": 1}}, task_id=f"cite_{d}", domain=d)
        for d in ("cs", "physics")
    ]
    vectors, _ = _embed_tasks(TaskSuite("x", "", tasks), encoder, None, batch_size=2, show_progress_bar=False)
    cs, physics = (np.stack([vectors[id(t)][0][p] for p in papers]) for t in tasks)
    texts = encoder.texts(papers.values(), tasks[0].fields)
    assert np.allclose(cs, encoder.encode(texts, show_progress_bar=False), atol=1e-6)
    assert np.allclose(physics, encoder.with_domain("physics").encode(texts, show_progress_bar=False), atol=1e-6)
    assert not np.allclose(cs, physics, atol=1e-4)


def test_the_task_heads_train_at_their_own_rate(mixture, tiny_bert, tmp_path):
    """model.head_learning_rate in a multi-task recipe: the loss's task heads in an optimiser group of their own at
    that rate (the encoder's at the run's); a recipe without heads refuses it."""
    from sciembed.training.run import prepare

    path, _ = mixture
    overrides = {**SPLIT, **STEP, "learning_rate": 5e-5, "model.head_learning_rate": 1e-3}
    run = prepare("scirepeval-ctrl", tiny_bert, path, tmp_path / "ctrl", overrides)
    optimizer = run.trainer.create_optimizer()
    heads = {id(p) for p in run.trainer.loss.parameters() if p.requires_grad}
    assert heads
    for group in optimizer.param_groups:
        kinds = {id(p) in heads for p in group["params"]}
        assert len(kinds) == 1 and group["lr"] == (1e-3 if kinds == {True} else 5e-5)
    assert {id(p) for g in optimizer.param_groups for p in g["params"] if g["lr"] == 1e-3} == heads
    with pytest.raises(ValueError, match="trains no head that model.head_learning_rate could apply to"):
        prepare("specter", tiny_bert, shared_data("cacm"), tmp_path / "specter", {**SPLIT, **STEP, **overrides})
