"""The MTEB bridge (sciembed.evaluation.mteb_bridge): a sciembed encoder as an MTEB model (mteb's encoder protocol,
sciembed's own vectors, queries / documents / classification inputs in their formats), a local BEIR folder as an MTEB
retrieval task whose nDCG@10 equals sciembed's own BEIR evaluator's on the same vectors, `sciembed evaluate --benchmark
mteb` writing the usual report, and clear errors. Offline: tasks by name are looked up but never run (their data is on
the Hub)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import WORDS

mteb = pytest.importorskip("mteb")

from sciembed import PaperEncoder  # noqa: E402
from sciembed.cli import main  # noqa: E402
from sciembed.evaluation import evaluate  # noqa: E402
from sciembed.evaluation.mteb_bridge import (  # noqa: E402
    MtebEncoder,
    beir_task,
    load_mteb_tasks,
    mteb_format,
    mteb_scores,
    named_tasks,
    task_results,
)

#: mteb rounds retrieval scores to 5 decimals on the 0-1 scale: the most two exact values can differ by after it.
MTEB_ROUNDING = 0.5e-5 + 1e-12


def _write_beir(folder: Path, *, documents: int = 30, queries: int = 6, seed: int = 0) -> Path:
    """A BEIR folder: invented papers, text queries, graded judgements, and a document whose id is a query's."""
    rng = np.random.default_rng(seed)
    (folder / "qrels").mkdir(parents=True)
    corpus = {
        f"d{i}": {"title": " ".join(rng.choice(WORDS, 4)), "text": " ".join(rng.choice(WORDS, 12))}
        for i in range(documents)
    }
    corpus["q1"] = {"title": "", "text": " ".join(WORDS[1:6]) + " paper"}  # near the query, whose id it has
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, **v}) + "\n" for k, v in corpus.items()))
    texts = {f"q{i}": " ".join(WORDS[i : i + 5]) for i in range(queries)}
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in texts.items()))
    rows = [(f"q{i}", f"d{3 * i}", 1) for i in range(queries)] + [
        (f"q{i}", f"d{3 * i + 1}", 2) for i in range(queries)
    ]
    rows.append(("q1", "q1", 1))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)
    )
    return folder


def _loader(columns: dict[str, list], batch_size: int = 3):
    """Batches as mteb's dataloaders give them: a dict of lists per batch."""
    from datasets import Dataset
    from torch.utils.data import DataLoader

    return DataLoader(Dataset.from_dict(columns), batch_size=batch_size, shuffle=False)


PAPERS = [
    {"id": "a", "title": "Garbage collection", "body": "We reclaim list memory while the program runs."},
    {"id": "b", "title": "Compiler syntax", "body": "A translation of the program by a linear algorithm."},
    {"id": "c", "title": "", "body": "Neural network learning of document embedding."},
    {"id": "d", "title": "Query index join", "body": "A database index for the join of two tables."},
]
QUERIES = ["memory reclamation", "citation graph embedding", "operating system time sharing"]


def _documents() -> dict[str, list]:
    """The corpus as mteb hands it to an encoder: ``text`` is title and body joined by a space."""
    return {
        "id": [p["id"] for p in PAPERS],
        "text": [f"{p['title']} {p['body']}".strip() for p in PAPERS],
        "body": [p["body"] for p in PAPERS],
        "title": [p["title"] for p in PAPERS],
    }


@pytest.fixture(scope="module")
def control_code_encoder(tiny_bert, tmp_path_factory):
    from sciembed.families import from_bert, save_pretrained

    folder = tmp_path_factory.mktemp("ctrl")
    save_pretrained(*from_bert("control_code", str(tiny_bert)), folder)
    return PaperEncoder.from_pretrained(folder, device="cpu")


def test_the_wrapper_is_an_mteb_encoder_with_sciembeds_own_vectors(tiny_encoder):
    model = MtebEncoder(tiny_encoder, show_progress_bar=False)
    assert isinstance(model, mteb.EncoderProtocol) and not isinstance(model, mteb.SearchProtocol)
    meta = model.mteb_model_meta
    assert isinstance(meta, mteb.models.ModelMeta)
    assert meta.name == tiny_encoder.name_or_path and meta.similarity_fn_name.value == "cosine"
    assert meta.max_tokens == tiny_encoder.max_length and meta.embed_dim == 32 and meta.n_parameters > 0

    retrieval = mteb.get_task("SCIDOCS").metadata
    where = dict(task_metadata=retrieval, hf_split="test", hf_subset="default")
    documents = model.encode(_loader(_documents()), prompt_type=mteb.types.PromptType.document, **where)
    sep = tiny_encoder.sep_token
    texts = [sep.join(part for part in (p["title"], p["body"]) if part) for p in PAPERS]
    assert isinstance(documents, np.ndarray) and documents.shape == (4, 32) and documents.dtype == np.float32
    np.testing.assert_allclose(documents, tiny_encoder.encode(texts, show_progress_bar=False), atol=1e-5)
    papers = [{"title": p["title"], "abstract": p["body"]} for p in PAPERS]
    np.testing.assert_allclose(documents, tiny_encoder.encode(papers, show_progress_bar=False), atol=1e-5)

    queries = model.encode(_loader({"id": ["1", "2", "3"], "text": QUERIES}), prompt_type="query", **where)
    assert queries.shape == (3, 32)
    np.testing.assert_allclose(queries, tiny_encoder.encode(QUERIES, show_progress_bar=False), atol=1e-5)
    # One embedding for a single-format model: queries and documents share one cache, nothing embeds twice.
    again = model.encode(
        _loader({"text": QUERIES}), **{**where, "task_metadata": mteb.get_task("STSBenchmark").metadata}
    )
    np.testing.assert_array_equal(again, queries)
    assert model.texts_encoded == 7 and model.cache_hits == 3
    scores = np.asarray(model.similarity(queries, documents))
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(scores, unit(queries) @ unit(documents).T, atol=1e-5)


def test_queries_documents_and_classification_inputs_take_their_formats(control_code_encoder):
    encoder = control_code_encoder
    model = MtebEncoder(encoder, show_progress_bar=False)
    retrieval = mteb.get_task("SCIDOCS").metadata
    where = dict(hf_split="test", hf_subset="default")

    def vectors(task_format, items):
        return encoder.with_format(task_format).encode(items, show_progress_bar=False)

    queries = model.encode(
        _loader({"id": ["1", "2", "3"], "text": QUERIES}), task_metadata=retrieval, prompt_type="query", **where
    )
    np.testing.assert_allclose(queries, vectors("adhoc_query", QUERIES), atol=1e-5)
    assert not np.allclose(queries, vectors("proximity", QUERIES), atol=1e-3)  # the format decides the vectors

    documents = model.encode(_loader(_documents()), task_metadata=retrieval, prompt_type="document", **where)
    papers = [{"title": p["title"], "abstract": p["body"]} for p in PAPERS]
    np.testing.assert_allclose(documents, vectors("proximity", papers), atol=1e-5)
    sep = encoder.sep_token
    texts = [sep.join(part for part in (p["title"], p["body"]) if part) for p in PAPERS]  # title [SEP] abstract
    np.testing.assert_allclose(documents, vectors("proximity", texts), atol=1e-5)

    for task, task_format in (
        ("Banking77Classification", "classification"),
        ("ArxivClusteringS2S", "classification"),
        ("STSBenchmark", "proximity"),
    ):
        metadata = mteb.get_task(task).metadata
        embedded = model.encode(_loader({"text": QUERIES}), task_metadata=metadata, **where)
        np.testing.assert_allclose(embedded, vectors(task_format, QUERIES), atol=1e-5, err_msg=task)
    assert mteb_format("Regression", "classification", None) == "regression"
    assert mteb_format("Reranking", "retrieval", "document") == "proximity"


def test_mteb_and_sciembeds_beir_evaluator_agree_on_the_same_vectors(control_code_encoder, tmp_path):
    folder = _write_beir(tmp_path / "scifact")
    cache = tmp_path / "cache"
    own = evaluate(control_code_encoder, "beir", folder, cache_dir=cache, show_progress_bar=False)
    bridged = evaluate(control_code_encoder, "mteb", folder, cache_dir=cache, show_progress_bar=False)
    # The same vectors: mteb's every query and document was found in the cache sciembed's run filled, so the bridge
    # asked for the same texts (title [SEP] abstract; queries as they are) in the same formats.
    assert bridged.embedding["texts_encoded"] == 0 and bridged.embedding["cache_hits"] == 31 + 6

    (reference,) = own.results
    (result,) = bridged.results
    assert (result.task, result.task_id, result.kind) == ("scifact", "search", "search")
    assert result.counts == reference.counts == {"queries": 6, "documents": 31}
    raw = result.details["scores"]
    # Two implementations (pytrec_eval through mteb's search and sciembed's own full-corpus run), one number, up to
    # mteb's rounding to 5 decimals.
    assert 0 < reference.metrics["ndcg_cut_10"] < 100
    assert abs(raw["ndcg_at_10"] - reference.metrics["ndcg_cut_10"] / 100) <= MTEB_ROUNDING
    assert abs(raw["recall_at_100"] - reference.metrics["recall_100"] / 100) <= MTEB_ROUNDING
    # Every document is returned but q1's own: both leave the relevant document "q1" out of query q1's results.
    assert reference.metrics["recall_100"] == pytest.approx(100 * 17 / 18)
    assert result.metrics["ndcg_at_10"] == pytest.approx(100 * raw["ndcg_at_10"])
    assert list(result.metrics) == ["ndcg_at_10", "map_at_10", "mrr_at_10", "recall_at_100"]
    assert result.primary_metrics == ("ndcg_at_10",) and result.details["main_score"] == "ndcg_at_10"

    # The task alone, as mteb users run it.
    task = beir_task(folder)
    assert isinstance(task, mteb.AbsTask) and task.metadata.type == "Retrieval" and task.ignore_identical_ids
    outcome = mteb.evaluate(
        MtebEncoder(control_code_encoder, cache_dir=cache, show_progress_bar=False),
        task,
        cache=None,
        co2_tracker=False,
        show_progress_bar=False,
    )
    assert outcome.task_results[0].scores["test"][0]["ndcg_at_10"] == raw["ndcg_at_10"]


def test_the_cli_writes_the_report_model_cards_read(tiny_bert, tmp_path, capsys):
    from sciembed.hub.cards import evaluation_results

    folder = _write_beir(tmp_path / "nfcorpus", seed=1)
    output = tmp_path / "out" / "mteb.json"
    argv = ["-q", "evaluate", "--model", str(tiny_bert), "--benchmark", "mteb", "--data", str(folder)]
    code = main([*argv, "--output", str(output), "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "ndcg_at_10" in printed and "recall_at_100" in printed and "queries 6, documents 31" in printed
    report = json.loads(output.read_text())
    assert report["benchmark"] == "mteb" and report["source"] == str(folder) and report["model"] == str(tiny_bert)
    assert report["settings"]["split"] == "test" and report["settings"]["mteb_version"] == mteb.__version__
    rows = {row["metric"]: row for row in report["results"]}
    assert set(rows) == {"ndcg_at_10", "map_at_10", "mrr_at_10", "recall_at_100"}
    assert rows["ndcg_at_10"]["task_id"] == "search" and isinstance(rows["ndcg_at_10"]["value"], float)
    assert report["embedding"]["texts_encoded"] == 37
    cards, left_out = evaluation_results([report])
    # A card shows the task's primary metric; the results JSON holds the rest.
    assert not left_out and {(r.dataset_name, r.metric_type) for r in cards} == {("nfcorpus search", "ndcg_at_10")}
    # The cache keeps the vectors: a second run embeds nothing.
    again = tmp_path / "again.json"
    assert main([*argv, "--output", str(again), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]) == 0
    assert json.loads(again.read_text())["embedding"]["texts_encoded"] == 0


def test_named_tasks_are_found_offline_and_their_scores_become_rows():
    (task,) = named_tasks(["SCIDOCS"])
    assert task.metadata.name == "SCIDOCS" and list(task.eval_splits) == ["test"] and not task.data_loaded
    suite = load_mteb_tasks(tasks=["SCIDOCS", "STSBenchmark"])
    assert (
        suite.source == "mteb"
        and not suite.local
        and [t.metadata.name for t in suite.tasks]
        == [
            "SCIDOCS",
            "STSBenchmark",
        ]
    )
    # mteb's result of a task with subsets, as mteb builds it after a run.
    sts = mteb.get_task("STS17")
    scores = {"test": {"en-en": {"cosine_spearman": 0.5, "cosine_pearson": 0.25, "manhattan_spearman": 0.1}}}
    for values in scores["test"].values():
        values["main_score"] = values[sts.metadata.main_score]
    result = mteb.TaskResult.from_task_results(sts, scores, evaluation_time=1.5)
    (row,) = task_results(result, sts.metadata)
    assert (row.task, row.task_id, row.kind) == ("STS17 en-en", "STS17/en-en", "sts")
    assert row.metrics == {"cosine_spearman": 50.0, "cosine_pearson": 25.0}
    assert row.details["scores"]["manhattan_spearman"] == 0.1 and row.details["hf_subset"] == "en-en"


def test_rows_are_mtebs_scores_times_100_and_go_back_to_mteb_on_its_0_1_scale():
    """sciembed's rows hold 0-100 (its own class, not mteb's TaskResult); mteb_scores hands mteb back its 0-1 values,
    from which mteb's own TaskResult gives the same score as from what mteb computed."""
    import sciembed.evaluation

    task = mteb.get_task("SCIDOCS")
    computed = {"ndcg_at_10": 0.21345, "map_at_10": 0.12, "mrr_at_10": 0.3, "recall_at_100": 0.45678}
    result = mteb.TaskResult.from_task_results(
        task, {"test": {"default": {**computed, "main_score": computed["ndcg_at_10"]}}}, evaluation_time=1.0
    )
    (row,) = task_results(result, task.metadata)
    assert type(row).__name__ == "TaskScores" and not hasattr(sciembed.evaluation, "TaskResult")
    assert row.metrics == pytest.approx({name: 100 * value for name, value in computed.items()}, abs=1e-12)
    assert {name: row.details["scores"][name] for name in computed} == computed  # mteb's own, as mteb gave them
    back = mteb_scores(row)
    assert back == pytest.approx(computed, abs=1e-15)
    rebuilt = mteb.TaskResult.from_task_results(
        task, {"test": {"default": {**back, "main_score": back["ndcg_at_10"]}}}, evaluation_time=1.0
    )
    assert rebuilt.get_score() == pytest.approx(result.get_score(), abs=1e-15) and 0 < rebuilt.get_score() < 1


def test_bad_input_is_refused_with_what_to_fix(tmp_path, caplog):
    folder = _write_beir(tmp_path / "broken")
    (folder / "corpus.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="no corpus.jsonl"):
        load_mteb_tasks(folder)
    assert main(["evaluate", "--benchmark", "mteb", "--data", str(folder), "--no-progress"]) == 2
    assert f"{folder}: no corpus.jsonl" in caplog.text

    with pytest.raises(ValueError, match="not both"):
        load_mteb_tasks(folder, tasks=["SCIDOCS"])
    with pytest.raises(ValueError, match="needs MTEB task names"):
        load_mteb_tasks()
    with pytest.raises(ValueError, match="no MTEB task 'SCIDOC'.*Did you mean: 'SCIDOCS'"):
        named_tasks(["SCIDOC"])
    with pytest.raises(ValueError, match="MSMARCO has no 'test' evaluation split .*dev"):
        named_tasks(["MSMARCO"])
    with pytest.raises(ValueError, match="--papers: not for --benchmark mteb"):
        load_mteb_tasks(tasks=["SCIDOCS"], papers="papers.jsonl")
    caplog.clear()
    assert main(["evaluate", "--benchmark", "beir", "--no-progress"]) == 2
    assert "--benchmark beir needs --data" in caplog.text


def test_mteb_averages_are_mtebs_own_means():
    """The report's MTEB averages: per task mteb's TaskResult.get_score (the main score's mean over splits and
    subsets), then the mean over tasks and over task types, from mteb's own results."""
    import numpy as np

    from sciembed.evaluation.tables import averages

    def result(name, scores):
        task = mteb.get_task(name)
        for subsets in scores.values():
            for values in subsets.values():
                values["main_score"] = values[task.metadata.main_score]
        return task, mteb.TaskResult.from_task_results(task, scores, evaluation_time=1.0)

    runs = [
        result("STS17", {"test": {"en-en": {"cosine_spearman": 0.5}, "en-de": {"cosine_spearman": 0.7}}}),
        result("STSBenchmark", {"test": {"default": {"cosine_spearman": 0.8}}}),
        result("SCIDOCS", {"test": {"default": {"ndcg_at_10": 0.2}}}),
    ]
    rows = [row for task, run in runs for row in task_results(run, task.metadata)]
    got = averages("mteb", rows)
    scores = [100 * run.get_score() for _, run in runs]
    assert got["mean (3 tasks)"] == pytest.approx(np.mean(scores))
    assert got["mean over task types (2 types)"] == pytest.approx(np.mean([np.mean(scores[:2]), scores[2]]))
