"""Options given to a benchmark that does not take them are refused, naming the benchmark and the option.

Each benchmark's own options are a dataclass in its module under ``sciembed.evaluation.benchmarks``; the command
line and ``evaluate`` build it, and an option of another benchmark stops the run before the model loads (exit 2, one
line), where it was once read by no task and silently ignored.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

from sciembed.cli import main
from sciembed.evaluation import evaluate, load_tasks
from sciembed.evaluation.benchmarks import SciDocsOptions

SOURCE = Path(__file__).resolve().parents[1] / "src" / "sciembed"
SCRIPTS = Path(__file__).resolve().parents[1] / "datasets_scripts"


@pytest.mark.parametrize(
    ("benchmark", "given", "flag", "takers"),
    [
        ("scidocs", ["--no-few-shot"], "--no-few-shot", "scirepeval"),
        ("scidocs", ["--smart-links", "all"], "--smart-links", "cacm or classification or retrieval"),
        ("beir", ["--proximity-similarity", "min_facet_l2"], "--proximity-similarity", "cacm or multi-scidocs or"),
        ("cacm", ["--test-data", "allenai/scirepeval_test"], "--test-data", "scirepeval"),
        ("cacm", ["--test-size", "0.3"], "--test-size", "classification"),
        ("classification", ["--candidates", "judged"], "--candidates", "retrieval"),
        ("cocitation", ["--qrels-columns", "document-query"], "--qrels-columns", "beir or cacm or mteb or"),
    ],
)
def test_an_option_of_another_benchmark_is_refused_before_the_model_loads(
    tmp_path, caplog, benchmark, given, flag, takers
):
    argv = ["evaluate", "--benchmark", benchmark, "--data", str(tmp_path / "absent"), "--model", "no-model", *given]
    assert main([*argv, "--no-progress"]) == 2
    assert f"{flag}: not for --benchmark {benchmark}, which does not take it" in caplog.text
    assert f"{flag} is for --benchmark {takers}" in caplog.text
    assert "absent" not in caplog.text and "no-model" not in caplog.text and "Traceback" not in caplog.text


def test_the_python_api_refuses_them_too(tmp_path):
    with pytest.raises(ValueError, match="--no-few-shot: not for --benchmark cacm"):
        evaluate(None, "cacm", tmp_path, few_shot=False)
    with pytest.raises(ValueError, match="--queries: not for --benchmark classification"):
        load_tasks("classification", tmp_path / "labels.csv", papers="papers.jsonl", queries="queries.jsonl")
    with pytest.raises(ValueError, match="--proximity-similarity 'cos': one of l2, min_facet_l2"):
        load_tasks("scidocs", tmp_path, SciDocsOptions(proximity_similarity="cos"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        evaluate(None, "cacm", tmp_path, bogus=1)
    with pytest.raises(TypeError, match="load_tasks\\(\\) got an unexpected keyword argument 'bogus'"):
        load_tasks("cacm", tmp_path, bogus=1)
    with pytest.raises(TypeError, match=r"load_tasks\(\) does not take cutoffs: .*reading=Reading\(cutoffs="):
        load_tasks("cacm", tmp_path, cutoffs=[10])


@pytest.mark.parametrize(
    ("benchmark", "given", "dataclass"),
    [
        ("retrieval", {"papers": "papers.jsonl"}, "RetrievalOptions"),
        ("classification", {"test_size": 0.3}, "ClassificationOptions"),
        ("scirepeval", {"few_shot": False}, "SciRepEvalOptions"),
        ("scidocs", {"proximity_similarity": "l2"}, "SciDocsOptions"),
    ],
)
def test_load_tasks_takes_a_benchmark_s_options_only_as_its_dataclass(tmp_path, benchmark, given, dataclass):
    (name,) = given
    message = rf"^load_tasks\(\) takes {name} inside another argument: options=sciembed\.evaluation\.benchmarks\."
    with pytest.raises(TypeError, match=message + rf"{dataclass}\({name}=\.\.\.\)$"):  # before the data is read
        load_tasks(benchmark, tmp_path / "absent", **given)


def test_every_benchmark_keeps_its_facts_in_its_own_module():
    """One class per benchmark, its options a dataclass; the CLI, the cards and the tables read the table."""
    from sciembed.evaluation.benchmarks import BENCHMARKS, option_flags
    from sciembed.hub import cards

    modules = {type(b).__module__ for b in BENCHMARKS.values()}
    assert len(modules) == len(BENCHMARKS) and all(m.startswith("sciembed.evaluation.benchmarks.") for m in modules)
    for name, benchmark in BENCHMARKS.items():
        assert benchmark.info.name == name and benchmark.info.title and benchmark.info.reads, name
        assert cards._BENCHMARK_TITLES[name] == benchmark.info.title
        assert cards._BENCHMARK_CITATIONS[name] == benchmark.info.citations
        fields(benchmark.Options)  # a dataclass
    assert set(option_flags().values()) <= set(_evaluate_flags())


def test_the_typed_options_are_the_api_and_are_checked(tmp_path):
    from sciembed.evaluation.benchmarks import Reading, RetrievalOptions, SciRepEvalOptions

    signature = inspect.signature(evaluate).parameters
    assert signature["reading"].annotation == "Reading | None"
    assert signature["options"].annotation == "BenchmarkOptions | None"
    assert not {"tasks", "split", "skip_invalid", "seed", "text_fields", "cutoffs"} & set(signature)
    with pytest.raises(TypeError, match=r"takes tasks inside another argument: reading=.*Reading\(tasks=\.\.\.\)"):
        evaluate(None, "cacm", tmp_path, tasks=["cite"])
    with pytest.raises(TypeError, match=r"takes smart_links inside another argument: options=.*CacmOptions\("):
        evaluate(None, "cacm", tmp_path, smart_links="all")
    with pytest.raises(
        TypeError, match="options=SciRepEvalOptions.*not for --benchmark cacm, which takes CacmOptions"
    ):
        evaluate(None, "cacm", tmp_path, options=SciRepEvalOptions(few_shot=False))
    with pytest.raises(TypeError, match=r"reading= takes a sciembed.evaluation.Reading.*got dict"):
        evaluate(None, "cacm", tmp_path, reading={"tasks": ["cite"]})
    with pytest.raises(ValueError, match="--candidates 'some': one of all, judged"):
        evaluate(None, "retrieval", tmp_path, options=RetrievalOptions(candidates="some"))
    # The typed form reads the data, before a model loads.
    with pytest.raises(FileNotFoundError, match=r"q.txt \(--data\): no such file"):
        evaluate(
            "no-model", "retrieval", tmp_path / "q.txt", reading=Reading(tasks="cite"), options=RetrievalOptions()
        )


def test_every_built_dataset_layout_is_on_its_benchmark_s_class():
    """The configs and columns of a folder datasets_scripts/ builds are a fact of its benchmark, in its module."""
    import sciembed.data.benchmarks as machinery
    from sciembed.data.layouts import DATASET_LAYOUTS, DatasetLayout
    from sciembed.evaluation.benchmarks import BENCHMARKS

    built = {"scidocs": "scidocs", "multi-scidocs": "multi_scidocs", "scirepeval": "scirepeval", "beir": "beir"}
    for name, layout in {**built, "cocitation": "cocitation"}.items():
        own = vars(type(BENCHMARKS[name]))["layout"]
        assert isinstance(own, DatasetLayout) and DATASET_LAYOUTS[layout] is own, name
    assert not hasattr(machinery, "BENCHMARKS") and not hasattr(machinery, "BenchmarkSpec")
    assert not [v for v in vars(machinery).values() if isinstance(v, DatasetLayout)]
    written = {
        match for path in SCRIPTS.glob("build_*.py") for match in re.findall(r'benchmark="(\w+)"', path.read_text())
    }
    assert written <= set(DATASET_LAYOUTS), written - set(DATASET_LAYOUTS)


def test_no_public_evaluation_function_takes_more_than_twelve_parameters():
    long = []
    for path in (SOURCE / "evaluation").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                arguments = node.args
                count = len(arguments.posonlyargs + arguments.args + arguments.kwonlyargs) + bool(arguments.kwarg)
                count -= bool(arguments.args) and arguments.args[0].arg in ("self", "cls")
                if count > 12:
                    long.append(f"{path.name}:{node.name} ({count})")
    assert long == []


def _evaluate_flags() -> list[str]:
    import argparse

    from sciembed.commands import evaluate as command

    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    (evaluate_parser,) = parser._subparsers._group_actions[0].choices.values()
    return [flag for action in evaluate_parser._actions for flag in action.option_strings]
