"""The quality table's systems (``benchmarks/recipes``) are runs sciembed accepts: each row's settings resolve to
what it overrides, its counterpart and first stage are rows of the table, and its task mixture is one sciembed reads
with the weights the row asks for. A run of the table takes hours; these catch wiring mistakes in seconds."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import shared_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def table():
    """The ``benchmarks/recipes`` package, imported as the other benchmarks import it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("recipes")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _systems(table):
    return sorted(table.SYSTEMS.items())


def test_every_system_resolves_to_the_settings_it_overrides(table):
    from sciembed.training.run import resolved_settings

    for name, system in _systems(table):
        settings = resolved_settings(system.recipe, None, system.overrides)
        for key, value in system.overrides.items():
            section, _, setting = key.rpartition(".")
            # model.family=none is the switch to the dense base, which leaves the recipe without a family
            expected = None if (key, value) == ("model.family", "none") else value
            assert settings[section or "training"][setting] == expected, (name, key)
        # an anchored row names its papers (System.anchors) and weighs them (an override), or neither
        assert bool(system.anchors) == bool(settings["loss"].get("anchor_weight")), name


def test_counterparts_and_first_stages_are_rows_of_the_table(table):
    rows = {*table.SYSTEMS, table.REFERENCE, table.PEER}
    for name, system in _systems(table):
        assert system.counterpart is None or system.counterpart in rows, name
        if system.after is not None:
            first = table.SYSTEMS[system.after]
            assert first.after is None and first.mixture == system.mixture, name
        assert system.cite_weight == 1.0 or system.mixture, f"{name}: a citation weight needs a task mixture"


def test_anchored_systems_name_files_of_the_scirepeval_samples(table):
    samples = shared_data("scirepeval-samples")
    anchored = [system for _, system in _systems(table) if system.anchors]
    assert anchored
    for system in anchored:
        assert all((samples / name).is_file() for name in system.anchors), system


@pytest.mark.parametrize("cite_weight", [1.0, 4.0])
def test_the_task_mixture_gives_the_citations_the_systems_weight(table, tmp_path, cite_weight):
    from sciembed.training.task_mixture import read_task_mixture

    samples = tmp_path / "scirepeval-samples"
    (tmp_path / "cacm").mkdir()
    samples.mkdir()
    for name in ("fos_small.json", "mesh_small.json"):
        (samples / name).write_text("[]", encoding="utf-8")
    suite = SimpleNamespace(
        tasks=[
            SimpleNamespace(task_id="cacm_categories", test=(["c1", "c2"], [0, 1])),
            SimpleNamespace(task_id="fos", test=(["f1"], [0])),
        ]
    )
    folders = {"cacm": tmp_path / "cacm", "scirepeval-samples": samples}
    tasks = {task.name: task for task in read_task_mixture(table.write_mixture(folders, suite, tmp_path, cite_weight))}
    assert tasks["cite"].weight == cite_weight
    assert {task.weight for name, task in tasks.items() if name != "cite"} == {1.0}
    assert tasks["cacm_categories"].exclude == {"c1", "c2"}
    assert tasks["fos"].exclude == {"f1"}


def _classification_row(system: str, seed: int, papers: list[str], gold: list[str], predicted: list[str]) -> dict:
    return {
        "system": system,
        "seed": seed,
        "metrics": {"cacm_categories": {"f1_macro": 0.0}},
        "per_paper": {
            "cacm_categories": {"label_columns": None, "papers": dict(zip(papers, map(list, zip(gold, predicted))))}
        },
    }


def _rows(rng, systems: list[str], seeds=(0, 1), papers: int = 60) -> list[dict]:
    classes = ["cs", "math", "physics"]
    ids = [f"p{i}" for i in range(papers)]
    rows = []
    for seed in seeds:
        gold = rng.choice(classes, size=papers).tolist()
        for system in systems:
            # each system right on a share of the papers, wrong (the next class) on the rest
            right = rng.random(papers) < rng.uniform(0.4, 0.9)
            predicted = [g if r else classes[(classes.index(g) + 1) % 3] for g, r in zip(gold, right)]
            rows.append(_classification_row(system, seed, ids, gold, predicted))
    return rows


def test_the_classification_interval_is_sklearn_macro_f1_on_shared_resamples(table, monkeypatch):
    """A paired classification interval: the point is the difference of scikit-learn's macro-F1 averaged over seeds,
    and each resample scores both rows on the same drawn test papers (the same draw for every pair on those papers)."""
    from sklearn.metrics import f1_score

    monkeypatch.setattr(table.stats, "BOOTSTRAP", 40)
    rng = np.random.default_rng(0)
    rows = _rows(rng, ["a", "b"])
    a, b = ({r["seed"]: r for r in rows if r["system"] == s} for s in ("a", "b"))
    resamples = table.stats.PaperResamples(40)
    interval = table.paired_interval(list(a.values()), b, "cacm_categories", resamples)

    def macro_f1(row, drawn):
        papers = row["per_paper"]["cacm_categories"]["papers"]
        gold, predicted = zip(*(papers[p] for p in drawn))
        return 100 * f1_score(gold, predicted, average="macro")

    ids = sorted(a[0]["per_paper"]["cacm_categories"]["papers"])
    point = np.mean([macro_f1(a[s], ids) - macro_f1(b[s], ids) for s in (0, 1)])
    assert interval["difference"] == pytest.approx(point, abs=0.005)
    differences = np.mean(
        [
            [
                macro_f1(a[s], np.repeat(ids, counts)) - macro_f1(b[s], np.repeat(ids, counts))
                for counts in resamples.weights(tuple(ids)).astype(int)
            ]
            for s in (0, 1)
        ],
        axis=0,
    )
    assert interval["interval_95"] == pytest.approx(np.percentile(differences, [2.5, 97.5]).round(2).tolist())
    assert resamples.weights(tuple(ids)).sum(axis=1).tolist() == [len(ids)] * 40
    assert table.paired_interval(list(a.values()), a, "cacm_categories", resamples)["interval_95"] == [0.0, 0.0]


def test_a_system_s_intervals_do_not_depend_on_the_other_rows(table, monkeypatch):
    """Adding a system's rows to the results leaves every other system's intervals as they were (the resamples are
    drawn per test-paper set, not in the order the comparisons are made)."""
    monkeypatch.setattr(table.stats, "BOOTSTRAP", 200)
    rows = _rows(np.random.default_rng(1), [table.REFERENCE, "x", "y"])
    without_x = table.summarise([r for r in rows if r["system"] != "x"])
    assert table.summarise(rows)["y"] == without_x["y"]


@pytest.mark.parametrize("modules", [None, "pals", "adapters", "fusion"])
def test_reweigh_rebuilds_another_share_from_a_kept_model(table, tiny_bert, tmp_path, modules):
    """WiSE-FT at share s keeps ``start + s * (trained - start)``: from a folder kept at share 1, ``reweigh`` to 0.35
    gives exactly that, format modules (saved in their own folders) included; a folder with other modules is
    refused."""
    import torch
    from transformers import AutoModel

    from sciembed.formats import save_with_format_modules
    from sciembed.formats.adapters import add_format_adapters, add_format_fusion
    from sciembed.formats.pals import PALsConfig, add_pals

    def model(seed, modules=modules):
        bert = AutoModel.from_pretrained(tiny_bert)
        if modules == "pals":
            add_pals(bert, PALsConfig(hidden_size=8, num_attention_heads=2))
        elif modules is not None:
            add_format_adapters(bert, config={"reduction_factor": 4})
            if modules == "fusion":
                add_format_fusion(bert)
        torch.manual_seed(seed)
        with torch.no_grad():  # adapters start near the identity; every weight must move for the test to see it
            for parameter in bert.parameters():
                parameter.normal_(0, 0.2)
        return bert

    start, trained = model(0), model(1)
    if modules is None:
        trained.save_pretrained(tmp_path)
    else:
        assert save_with_format_modules(trained, tmp_path)
    rebuilt = model(0)
    table.reweigh(rebuilt, tmp_path, 1.0, 0.35)
    expected = {k: v + 0.35 * (trained.state_dict()[k] - v) for k, v in start.state_dict().items()}
    marker = {None: None, "pals": "pals.", "adapters": ".adapters.", "fusion": ".adapter_fusion_layer."}[modules]
    assert marker is None or any(marker in k for k in expected)
    for key, value in rebuilt.state_dict().items():
        torch.testing.assert_close(value, expected[key], msg=key)
    other = {None: "pals", "pals": "adapters", "adapters": "fusion", "fusion": "adapters"}[modules]
    with pytest.raises(SystemExit, match="not this model's"):
        table.reweigh(model(0, other), tmp_path, 1.0, 0.35)


def test_the_plot_s_title_sits_above_every_panel_s_title(table):
    pytest.importorskip("matplotlib", reason="the plots extra is not installed (pip install -e '.[plots]')")
    import matplotlib.pyplot
    import matplotlib.text

    paired = {"difference": 1.0, "interval_95": [0.5, 1.5]}
    entry = {"seeds": [0, 1, 2], "against_published": {task: paired for task, _, _ in table.COLUMNS}}
    # As many rows as the table has: the taller the figure, the further down a title placed by figure fraction sits.
    summary = {table.REFERENCE: {"seeds": [0, 1, 2]}, **dict.fromkeys(table.SYSTEMS, entry)}
    drawn = table.figure(summary)
    drawn.canvas.draw()
    renderer = drawn.canvas.get_renderer()
    (title,) = [text for text in drawn.findobj(matplotlib.text.Text) if text.get_text() == drawn.get_suptitle()]
    bottom = title.get_window_extent(renderer).y0
    tops = [axis.title.get_window_extent(renderer).y1 for axis in drawn.axes]
    matplotlib.pyplot.close(drawn)
    assert all(bottom >= top for top in tops)


def test_the_validation_search_records_its_data_files_relative_to_the_data_folder(table, tmp_path, monkeypatch):
    import json

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("validation_search", ROOT / "benchmarks" / "validation_search.py")
    search = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(search)
    given = {"data.anchor_papers": [str(tmp_path / "samples" / "a.json")], "data.exclude": "/elsewhere/ids.txt"}
    recorded = search.recorded_paths(given, tmp_path)
    assert recorded == {"data.anchor_papers": ["samples/a.json"], "data.exclude": "/elsewhere/ids.txt"}
    rows = json.loads((ROOT / "benchmarks" / "results" / "validation_search.json").read_text())["rows"]
    files = [
        v for row in rows for value in row["variant"].values() for v in (value if isinstance(value, list) else [value])
    ]
    assert not [f for f in files if isinstance(f, str) and Path(f).is_absolute()]


def test_a_system_is_named_by_its_recipe_and_the_settings_that_differ(table):
    assert table.System("specter", "").name == "specter"
    assert table.System("specter", "", {"training.learning_rate": 2e-5}).name == "specter[lr=2e-5]"
    named = table.System("multi2spe", "", {"model.num_cls_tokens": 1, "model.text_pooling": None}, domains=True).name
    assert named == "multi2spe[k=1,text_pooling=none,data=domains]"
    for name, system in table.SYSTEMS.items():
        assert name == system.name and name.startswith(system.recipe), name


def test_every_results_file_names_systems_of_the_table(table):
    import json

    names = {*table.SYSTEMS, table.REFERENCE, table.PEER}
    for path in sorted((ROOT / "benchmarks" / "results").glob("recipes*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        rows = {row["system"] for row in report["rows"]}
        counterparts = {
            e["against_counterpart"]["system"] for e in report["summary"].values() if "against_counterpart" in e
        }
        assert rows | set(report["summary"]) | counterparts <= names, path.name


def _recipes(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "recipes"), *args], cwd=cwd, capture_output=True, text=True
    )


def test_the_table_command_prints_the_results_file_s_table(table):
    results = ROOT / "benchmarks" / "results" / "recipes_steps180.json"
    done = _recipes("table", "--output", str(results))
    assert done.returncode == 0, done.stderr
    summary = __import__("json").loads(results.read_text(encoding="utf-8"))["summary"]
    assert done.stdout.strip() == table.table(summary)


def test_each_mode_is_a_subcommand_with_its_own_help(table, capsys):
    commands = importlib.import_module("recipes.__main__")
    for command in ("run", "rescore", "summarise", "table", "plot"):
        with pytest.raises(SystemExit, match="0"):
            commands.parser().parse_args([command, "--help"])
        assert f"usage: recipes {command}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        commands.parser().parse_args(["run", "--help"])
    assert "specter[lr=2e-5,wise=1]: SPECTER recipe" in capsys.readouterr().out


def test_run_names_the_missing_data_folder_before_reading_anything(tmp_path):
    done = _recipes("run", "--data", str(tmp_path), "--output", str(tmp_path / "out.json"), cwd=tmp_path)
    assert done.returncode == 1
    assert f"{tmp_path / 'cacm'} is absent" in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_the_systems_other_benchmarks_name_are_systems_of_the_table(table):
    import re

    scripts = (ROOT / "benchmarks").glob("*.py")
    named = {
        name for path in scripts for name in re.findall(r'SYSTEMS\["([^"]+)"\]', path.read_text(encoding="utf-8"))
    }
    assert named and named <= set(table.SYSTEMS)


def test_run_trains_each_missing_row_once_and_writes_its_summary(table, tmp_path, monkeypatch):
    """The ``run`` command's bookkeeping, with training and scoring stubbed: a second run trains nothing again."""
    commands = importlib.import_module("recipes.__main__")
    for name in commands.DATA_FOLDERS:
        (tmp_path / name).mkdir()
    trained = []

    def row(name):
        def made(seed, *args):
            trained.append((seed, name))
            return {"seed": seed, "system": name, "metrics": {"fos": {"f1_macro": 1.0}}}

        return made

    split = SimpleNamespace(
        data={"held_out_ids": [], "held_out_queries": 0}, trainer=SimpleNamespace(eval_dataset=None)
    )
    monkeypatch.setattr(commands, "prepare", lambda *args: split)
    monkeypatch.setattr(
        commands, "FixedTasks", SimpleNamespace(read=lambda folders: SimpleNamespace(counts={}, suite=lambda *a: None))
    )
    monkeypatch.setattr(commands, "reference_row", row(table.REFERENCE))
    monkeypatch.setattr(commands, "system_row", lambda name, seed, *args: row(name)(seed))
    output = tmp_path / "recipes.json"
    run = ["run", "--data", str(tmp_path), "--seeds", "0", "1", "--systems", "specter", "--output", str(output)]
    commands.main(run)
    commands.main(run)
    assert sorted(trained) == [(0, table.REFERENCE), (0, "specter"), (1, table.REFERENCE), (1, "specter")]
    report = __import__("json").loads(output.read_text(encoding="utf-8"))
    assert report["settings"]["seeds"] == [0, 1] and set(report["summary"]) == {table.REFERENCE, "specter"}
