"""`sciembed compare`: two results JSONs paired task by task, each difference with the 95% bootstrap interval a hand
computation gives; tasks that cannot be paired named with the reason; the output written as the other commands write
theirs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import WORDS
from sklearn.metrics import f1_score

from sciembed.cli import main

RESAMPLES, SEED = 500, 3


def _task(task_id: str, metrics: dict, details: dict, primary=(), **extra) -> dict:
    return {
        "benchmark": "mine",
        "task": task_id.title(),
        "task_id": task_id,
        "kind": extra.get("kind", "proximity"),
        "metrics": metrics,
        "counts": extra.get("counts", {}),
        "skipped": {},
        "details": details,
        "group": None,
        "primary_metrics": list(primary),
    }


def _results(seed: int, *, queries: int, extra_task: bool) -> dict:
    """A results JSON as `sciembed evaluate --output` writes it: a ranking task with per-query values, a
    classification task with per-paper labels and predictions, and tasks that cannot be paired."""
    rng = np.random.default_rng(seed)
    per_query = {
        f"q{i}": {"map": float(rng.uniform(0, 100)), "ndcg": float(rng.uniform(0, 100))} for i in range(queries)
    }
    labels = np.random.default_rng(99).choice(["cs", "math", "bio"], size=40)  # the same test labels in both
    guesses = np.where(rng.random(40) < 0.6, labels, rng.choice(["cs", "math", "bio"], size=40))
    per_paper = {f"p{i}": [str(g), str(p)] for i, (g, p) in enumerate(zip(labels, guesses))}
    tasks = [
        _task(
            "cite",
            {m: float(np.mean([v[m] for v in per_query.values()])) for m in ("map", "ndcg")},
            {"per_query": per_query},
            ("map", "ndcg"),
        ),
        _task(
            "mag",
            {"f1_macro": 100 * f1_score(labels, guesses, average="macro")},
            {"per_paper": per_paper},
            kind="classification",
            counts={"num_labels": 3},
        ),
        _task("recomm", {"ndcg": 50.0}, {}, kind="recommendation"),
    ]
    if extra_task:
        tasks.append(_task("cocite", {"map": 1.0}, {"per_query": {"x": {"map": 1.0}}}))
    return {"benchmark": "mine", "model": f"model-{seed}", "results": [], "tasks": tasks}


def _write(folder: Path) -> tuple[Path, Path, dict, dict]:
    first, second = _results(0, queries=30, extra_task=True), _results(1, queries=33, extra_task=False)
    paths = folder / "a.json", folder / "b.json"
    for path, results in zip(paths, (first, second)):
        path.write_text(json.dumps(results))
    return *paths, first, second


def _interval(values: np.ndarray) -> list[float]:
    return np.percentile(values, [2.5, 97.5]).tolist()


def test_compare_gives_the_interval_a_hand_computation_gives(tmp_path, capsys):
    a, b, first, second = _write(tmp_path)
    output = tmp_path / "out" / "comparison.json"
    argv = ["compare", str(a), str(b), "--resamples", str(RESAMPLES), "--seed", str(SEED)]
    assert main([*argv, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(output.read_text())
    rows = {(r["task_id"], r["metric"]): r for r in report["differences"]}
    assert set(rows) == {("cite", "map"), ("cite", "ndcg"), ("mag", "f1_macro")}

    # Ranking: the mean of the per-query differences over the 30 shared queries, resampled with replacement.
    ours, theirs = (r["tasks"][0]["details"]["per_query"] for r in (first, second))
    shared = sorted(q for q in ours if q in theirs)  # in the order of their ids
    differences = np.array([theirs[q]["map"] - ours[q]["map"] for q in shared])
    drawn = np.random.default_rng(SEED).integers(0, len(shared), size=(RESAMPLES, len(shared)))
    cite = rows[("cite", "map")]
    assert cite["difference"] == pytest.approx(differences.mean(), abs=1e-12)
    assert cite["interval_95"] == pytest.approx(_interval(differences[drawn].mean(axis=1)), abs=1e-12)
    assert (cite["units"], cite["unit"], cite["only_first"], cite["only_second"]) == (30, "queries", 0, 3)

    # Classification: scikit-learn's macro-F1 of both on each resample of the shared test papers.
    ours, theirs = (r["tasks"][1]["details"]["per_paper"] for r in (first, second))
    papers = sorted(ours)
    drawn = np.random.default_rng(SEED).integers(0, len(papers), size=(RESAMPLES, len(papers)))

    def f1(kept, rows):
        gold, guess = zip(*(kept[papers[i]] for i in rows))
        return 100 * f1_score(gold, guess, average="macro")

    everyone = np.arange(len(papers))
    mag = rows[("mag", "f1_macro")]
    assert mag["difference"] == pytest.approx(f1(theirs, everyone) - f1(ours, everyone), abs=1e-9)
    resampled = [f1(theirs, row) - f1(ours, row) for row in drawn]
    assert mag["interval_95"] == pytest.approx(_interval(np.array(resampled)), abs=1e-9)

    # Nothing dropped in silence: each task that cannot be paired is named with its reason, and counted.
    assert report["skipped"] == {
        "mine Recomm": "no per-query, per-paper or per-fold scores",
        "mine Cocite": f"only in {a}",
    }
    assert "skipped 2 task(s):" in printed and "mine Cocite: only in" in printed
    assert f"[{cite['interval_95'][0]:+.2f}, {cite['interval_95'][1]:+.2f}]" in printed
    # Seeded: the same interval every time.
    again = tmp_path / "again.json"
    assert main([*argv, "--output", str(again)]) == 0
    assert json.loads(again.read_text())["differences"] == report["differences"]


def test_few_shot_folds_and_regression_papers_are_paired_too():
    """A few-shot setting pairs its iterations (the mean of the per-fold differences); a regression task its test
    papers, Kendall's tau scored again on each resample for both."""
    from scipy.stats import kendalltau

    from sciembed.evaluation.compare import compare_results

    rng = np.random.default_rng(7)
    truth = rng.normal(size=25)
    results = []
    for seed in (0, 1):
        guess = truth + np.random.default_rng(seed).normal(scale=1.0 + seed, size=25)
        per_paper = {f"p{i}": [float(t), float(g)] for i, (t, g) in enumerate(zip(truth, guess))}
        folds = np.random.default_rng(10 + seed).uniform(40, 60, size=8).tolist()
        results.append(
            {
                "tasks": [
                    _task("fos 5 shot", {"f1_macro": float(np.mean(folds))}, {"per_fold": {"f1_macro": folds}}),
                    _task("year", {"kendalltau": 100 * kendalltau(truth, guess).statistic}, {"per_paper": per_paper}),
                ]
            }
        )
    comparison = compare_results(*results, resamples=RESAMPLES, seed=SEED)
    assert not comparison.skipped
    folds, year = comparison.differences
    ours, theirs = (np.array(r["tasks"][0]["details"]["per_fold"]["f1_macro"]) for r in results)
    drawn = np.random.default_rng(SEED).integers(0, 8, size=(RESAMPLES, 8))
    assert (folds.unit, folds.units) == ("folds", 8)
    assert folds.interval_95 == pytest.approx(_interval((theirs - ours)[drawn].mean(axis=1)), abs=1e-12)
    papers = sorted(results[0]["tasks"][1]["details"]["per_paper"])  # in the order of their ids
    columns = [np.array([r["tasks"][1]["details"]["per_paper"][p] for p in papers]).T for r in results]
    drawn = np.random.default_rng(SEED).integers(0, 25, size=(RESAMPLES, 25))
    resampled = [
        100 * (kendalltau(*columns[1][:, row]).statistic - kendalltau(*columns[0][:, row]).statistic) for row in drawn
    ]
    assert (year.unit, year.units) == ("papers", 25)
    assert year.difference == pytest.approx(
        results[1]["tasks"][1]["metrics"]["kendalltau"] - results[0]["tasks"][1]["metrics"]["kendalltau"]
    )
    assert year.interval_95 == pytest.approx(_interval(np.array(resampled)), abs=1e-9)


def test_compare_refuses_what_it_cannot_read_and_an_existing_output(tmp_path, caplog):
    a, b, _, _ = _write(tmp_path)
    output = tmp_path / "comparison.json"
    output.write_text("kept\n")
    assert main(["compare", str(a), str(b), "--output", str(output)]) == 2
    assert "comparison.json exists; pass --overwrite" in caplog.text and output.read_text() == "kept\n"
    assert main(["compare", str(a), str(b), "--output", str(output), "--overwrite", "--resamples", "50"]) == 0
    assert json.loads(output.read_text())["resamples"] == 50
    for text, message in (
        ('{"benchmark": "scidocs"}', "not the results of sciembed evaluate (no 'tasks' list)"),
        ("{", "line 1"),
    ):
        caplog.clear()
        (tmp_path / "bad.json").write_text(text)
        assert main(["compare", str(a), str(tmp_path / "bad.json")]) == 2
        assert f"{tmp_path / 'bad.json'}" in caplog.text and message in caplog.text
    caplog.clear()
    assert main(["compare", str(a), str(tmp_path / "none.json")]) == 2
    assert "none.json (B.json): no such file" in caplog.text
    assert main(["compare", str(a), str(b), "--resamples", "0"]) == 2


def test_two_models_evaluated_by_the_cli_compare_query_by_query(tiny_bert, tmp_path, capsys):
    """End to end: two evaluations of one qrels file (CLS and mean pooling); the paired difference of each measure
    is the difference of the reported means, every query paired."""
    rng = np.random.default_rng(0)
    papers = [
        {"paper_id": f"d{i}", "title": " ".join(rng.choice(WORDS, 4)), "abstract": " ".join(rng.choice(WORDS, 10))}
        for i in range(30)
    ]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers))
    qrels = "".join(f"d{q} 0 d{(q * 7 + k) % 30} {int(rng.integers(0, 3))}\n" for q in range(6) for k in range(1, 9))
    (tmp_path / "q.qrels").write_text(qrels + "d0 0 d7 2\n")
    outputs = []
    for pooling in ("cls", "mean"):
        outputs.append(tmp_path / f"{pooling}.json")
        argv = ["evaluate", "--model", str(tiny_bert), "--benchmark", "retrieval", "--data", str(tmp_path / "q.qrels")]
        argv += ["--papers", str(tmp_path / "papers.jsonl"), "--candidates", "judged", "--pooling", pooling]
        assert main([*argv, "--no-cache", "--no-progress", "--output", str(outputs[-1])]) == 0
    capsys.readouterr()
    assert main(["compare", *map(str, outputs), "--metrics", "ndcg_cut_10", "map", "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    first, second = (json.loads(path.read_text())["tasks"][0]["metrics"] for path in outputs)
    for metric in ("ndcg_cut_10", "map"):
        line = next(line for line in printed.splitlines() if f" {metric} " in f" {line} ")
        assert f"{second[metric] - first[metric]:+.2f}" in line and "6 queries" in line


@pytest.mark.parametrize("changed", ["papers.jsonl", "q.qrels"])
def test_compare_refuses_results_of_a_data_file_changed_in_place(tiny_bert, tmp_path, caplog, capsys, changed):
    papers = [{"paper_id": f"d{i}", "title": " ".join(WORDS[i : i + 3]), "abstract": WORDS[i + 5]} for i in range(12)]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers))
    (tmp_path / "q.qrels").write_text("".join(f"d{q} 0 d{q + k} {k % 2}\n" for q in range(4) for k in range(1, 6)))
    argv = ["evaluate", "--model", str(tiny_bert), "--benchmark", "retrieval", "--data", str(tmp_path / "q.qrels")]
    argv += ["--papers", str(tmp_path / "papers.jsonl"), "--candidates", "judged", "--no-cache", "--no-progress"]
    outputs = [tmp_path / "a.json", tmp_path / "b.json"]
    assert main([*argv, "--output", str(outputs[0])]) == 0
    with (tmp_path / changed).open("a") as handle:  # the same path, other contents
        handle.write(
            json.dumps({"paper_id": "d99", "title": "new"}) + "\n" if changed == "papers.jsonl" else "d9 0 d1 1\n"
        )
    assert main([*argv, "--output", str(outputs[1])]) == 0
    compare = ["compare", *map(str, outputs), "--resamples", "20"]
    assert main(compare) == 2
    role = "papers" if changed == "papers.jsonl" else "data"
    assert f"{role}/{changed}: sha256 " in caplog.text and "changed in place" in caplog.text
    capsys.readouterr()
    assert main([*compare, "--allow-different-settings"]) == 0
    assert f"differs: inputs.{role}/{changed}" in capsys.readouterr().out
    older = json.loads(outputs[0].read_text())
    del older["inputs"]
    outputs[0].write_text(json.dumps(older))
    assert main(compare) == 0
    assert f"note: {outputs[0]} records no digests of its data files" in capsys.readouterr().out


def test_a_folder_s_digests_are_of_the_files_read(tmp_path):
    from sciembed.evaluation.loaders import load_tasks

    folder = tmp_path / "cacm"
    folder.mkdir()
    records = "".join(f".I {i}\n.T\nTitle {WORDS[i]}\n.X\n{i % 9 + 1}\t5\t{i}\n" for i in range(1, 10))
    (folder / "cacm.all").write_text(records)
    (folder / "query.text").write_text("".join(f".I {q}\n.W\n{WORDS[q]} query\n" for q in range(1, 4)))
    (folder / "qrels.text").write_text("".join(f"{q} {d} 0 0\n" for q in range(1, 4) for d in range(q, q + 3)))
    (folder / "notes.md").write_text("not read")
    suite = load_tasks("cacm", folder, tasks=["search"], skip_invalid=True)
    assert sorted(suite.inputs) == ["data"] and sorted(suite.inputs["data"]) == [
        "cacm.all",
        "qrels.text",
        "query.text",
    ]
    assert suite.inputs["data"]["qrels.text"] == hashlib.sha256((folder / "qrels.text").read_bytes()).hexdigest()


def _pair(tmp_path: Path, change) -> tuple[Path, Path]:
    """Two results of one run's settings, the second changed by ``change(results)``."""
    files = []
    for name, seed in (("a.json", 0), ("b.json", 1)):
        results = _results(seed, queries=10, extra_task=False)
        results |= {
            "source": "qrels.tsv",
            "scale": "0-100: metrics",
            "settings": {"split": "test", "papers": "p.jsonl"},
        }
        results["settings"] |= {"candidates": "all", "cutoffs": None, "pooling": "cls", "embeddings": "a.npy"}
        if name == "b.json":
            change(results)
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(results))
    return files[0], files[1]


@pytest.mark.parametrize(
    "setting, value, shown",
    [
        ("source", "other/qrels.tsv", "source: 'qrels.tsv' in"),
        ("benchmark", "scidocs", "benchmark: 'mine' in"),
        ("candidates", "judged", "settings.candidates: 'all' in"),
        ("papers", "other.jsonl", "settings.papers: 'p.jsonl' in"),
        ("split", "validation", "settings.split: 'test' in"),
        ("cutoffs", [5], "settings.cutoffs: None in"),
    ],
)
def test_compare_refuses_results_of_other_data_or_settings(tmp_path, caplog, capsys, setting, value, shown):
    def change(results):
        (results if setting in ("source", "benchmark") else results["settings"])[setting] = value

    a, b = _pair(tmp_path, change)
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 2
    assert shown in caplog.text and f"{value!r} in {b}" in caplog.text and "--allow-different-settings" in caplog.text
    assert main(["compare", str(a), str(b), "--resamples", "20", "--allow-different-settings"]) == 0
    assert f"differs: {shown.split(' in')[0]}" in capsys.readouterr().out


def test_compare_pairs_results_whose_model_settings_differ(tmp_path, capsys):
    def change(results):
        results["settings"].update(pooling="mean", embeddings="b.npy", papers="./p.jsonl")

    a, b = _pair(tmp_path, change)
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 0
    assert "differs" not in capsys.readouterr().out


def test_compare_refuses_values_on_two_scales(tmp_path, caplog):
    a, b = _pair(tmp_path, lambda results: results.update(scale="0-1"))
    assert main(["compare", str(a), str(b), "--resamples", "20", "--allow-different-settings"]) == 2
    assert f"{a} holds values on the scale 0-100, {b} on 0-1" in caplog.text


@pytest.mark.parametrize(
    "value, shown",
    [(float("nan"), "nan is not"), (float("inf"), "inf is not"), ("high", "'high' is not"), (None, "no value")],
)
def test_compare_refuses_a_per_query_value_that_is_not_a_finite_number(tmp_path, caplog, value, shown):
    a, b = _pair(tmp_path, lambda results: results["tasks"][0]["details"]["per_query"]["q3"].update(map=value))
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 2
    assert f"{b}: task mine Cite, query 'q3', map: {shown}" in caplog.text


def test_compare_refuses_a_metric_no_task_holds(tmp_path, caplog):
    a, b = _pair(tmp_path, lambda results: None)
    assert main(["compare", str(a), str(b), "--metrics", "map", "nDCG@10"]) == 2
    assert "--metrics nDCG@10: no task" in caplog.text and "they hold: f1_macro, map, ndcg" in caplog.text


def test_compare_refuses_a_folder_as_output_before_reading(tmp_path, caplog):
    (tmp_path / "victim").mkdir()
    assert (
        main(
            [
                "compare",
                str(tmp_path / "none.json"),
                str(tmp_path / "none.json"),
                "--output",
                str(tmp_path / "victim"),
                "--overwrite",
            ]
        )
        == 2
    )
    assert f"{tmp_path / 'victim'} is a folder" in caplog.text and "none.json" not in caplog.text


@pytest.mark.parametrize(
    "task, unit, entry, shown",
    [
        (0, "per_query", 0.5, "per_query 'q3': 0.5 is not a mapping of metric to value"),
        (1, "per_paper", ["cs"], "per_paper 'p3': ['cs'] is not a [label, prediction] pair"),
        (1, "per_paper", ["cs", None], "paper 'p3': the prediction None is not a known value"),
        (1, "per_paper", [float("nan"), 1.0], "paper 'p3': the label nan is not a known value"),
    ],
)
def test_compare_refuses_a_per_unit_entry_not_as_evaluate_writes_it(tmp_path, caplog, task, unit, entry, shown):
    def change(results):
        results["tasks"][task]["details"][unit]["q3" if unit == "per_query" else "p3"] = entry

    a, b = _pair(tmp_path, change)
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 2
    assert f"{b}: task mine {'Cite' if task == 0 else 'Mag'}, {shown}" in caplog.text


def test_a_metric_one_file_lacks_in_every_query_is_skipped_with_the_reason(tmp_path, capsys):
    def change(results):
        for values in results["tasks"][0]["details"]["per_query"].values():
            del values["map"]

    a, b = _pair(tmp_path, change)
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 0
    assert "mine Cite: no per-unit values of map" in capsys.readouterr().out
