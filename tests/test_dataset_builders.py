"""datasets_scripts/ builders: each writes a folder that datasets.load_dataset reads offline, with a card.

Builders run in-process through their ``main(argv)`` (one also as a real script), on small fixtures in
each raw layout and on the real SPECTER sample; load_benchmark reads the results by local folder and
refuses an unreachable Hub id quickly under HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
import yaml
from datasets import Dataset
from helpers import shared_data
from huggingface_hub import DatasetCard

from sciembed.data.benchmarks import BenchmarkSourceError
from sciembed.data.layouts import DATASET_LAYOUTS
from sciembed.evaluation import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "datasets_scripts"
BUILDERS = (
    "build_scidocs",
    "build_multi_scidocs",
    "build_scirepeval",
    "build_specter_triplets",
    "build_cocitation",
    "build_beir",
)


@pytest.fixture(scope="module")
def builders(request):
    """The builder modules, imported the way ``python datasets_scripts/build_x.py`` sees them."""
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(SCRIPTS))
    request.addfinalizer(mp.undo)
    return {name: importlib.import_module(name) for name in BUILDERS}


def card_of(folder: Path) -> tuple[dict, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def assert_loads(folder: Path, cache: Path, expected: dict[str, dict[str, int]]) -> None:
    """Every config loads offline with the expected rows, and YAML and card agree with the data."""
    meta, body = card_of(folder)
    assert {c["config_name"] for c in meta["configs"]} == set(expected)
    assert datasets.get_dataset_config_names(str(folder)) == [c["config_name"] for c in meta["configs"]]
    for config, splits in expected.items():
        loaded = datasets.load_dataset(str(folder), config, cache_dir=str(cache))
        assert {split: len(data) for split, data in loaded.items()} == splits
        for split, rows in splits.items():
            assert f"| {config} | {split} | {rows} |" in body, f"card lacks the size of {config}/{split}"
    assert f"{sum(sum(s.values()) for s in expected.values())} rows in all" in body
    assert DatasetCard.load(folder / "README.md").data.to_dict()["sciembed_benchmark"] == meta["sciembed_benchmark"]


# ------------------------------------------------------------------ fixtures in each raw layout


def scidocs_release(folder: Path) -> Path:
    folder.mkdir()
    view = {
        pid: {"paper_id": pid, "title": f"Title {pid}", "abstract": "An abstract."}
        for pid in ("q1", "q2", "c1", "c2", "c3")
    }
    (folder / "paper_metadata_view_cite_read.json").write_text(json.dumps(view))
    mag = {pid: {"paper_id": pid, "title": f"Title {pid}", "abstract": None} for pid in ("m1", "m2", "m3", "m4")}
    (folder / "paper_metadata_mag_mesh.json").write_text(json.dumps(mag))
    for task in ("cite", "cocite"):
        (folder / task).mkdir()
        for split in ("val", "test"):
            (folder / task / f"{split}.qrel").write_text("q1 0 c1 1\nq1 0 c2 0\nq2 0 c3 1\n")
    (folder / "mag").mkdir()
    for split, rows in {"train": ["m1,0", "m2,1"], "val": ["m3,1"], "test": ["m4,0", "m1,2"]}.items():
        (folder / "mag" / f"{split}.csv").write_text("pid,class_label\n" + "\n".join(rows) + "\n")
    return folder


def beir_folder(root: Path) -> Path:
    root.mkdir()
    corpus = [
        {"_id": "d1", "title": "Garbage collection", "text": "We reclaim memory."},
        {"_id": "d2", "title": "", "text": "Join ordering."},
        {"_id": 3, "title": "Only a title", "text": ""},
    ]
    queries = [{"_id": "q1", "text": "memory reclamation"}, {"_id": "q2", "text": "joins"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\t3\t0\n")
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def hub_folder(root: Path, configs: dict[str, dict[str, Dataset]]) -> Path:
    """A local copy in the allenai/scirepeval(_test) Hub layout (what the SciRepEval reader loads)."""
    root.mkdir()
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        (root / config).mkdir()
        for split, data in splits.items():
            data.to_parquet(root / config / f"{split}.parquet")
            lines += [f"  - split: {split}", f"    path: {config}/{split}.parquet"]
    (root / "README.md").write_text("\n".join(lines + ["---", "local copy"]) + "\n")
    return root


def specter_release(folder: Path) -> Path:
    """A SPECTER-format release whose cited papers have text and cite further papers (hard negatives exist).

    q1 cites a, b; a cites c, d; b cites d, e; q2 cites c; c cites f. Every paper has text except e.
    """
    folder.mkdir()
    cites = {"q1": ["a", "b"], "a": ["c", "d"], "b": ["d", "e"], "q2": ["c"], "c": ["f"]}
    data = {q: {c: {"count": 5} for c in cited} for q, cited in cites.items()}
    (folder / "data.json").write_text(json.dumps(data))
    text = ["q1", "q2", "a", "b", "c", "d", "f", "g", "h"]
    (folder / "metadata.json").write_text(
        json.dumps({p: {"paper_id": p, "title": f"Paper {p}", "abstract": "Text."} for p in text})
    )
    (folder / "train.txt").write_text("q1\na\nb\n")
    (folder / "val.txt").write_text("q2\n")
    return folder


# ------------------------------------------------------------------ builders


def test_scidocs_builder_and_load_benchmark(builders, tmp_path):
    out = builders["build_scidocs"].main(
        ["--source", str(scidocs_release(tmp_path / "raw")), "--out", str(tmp_path / "scidocs")]
    )
    expected = {
        "papers_view_cite_read": {"evaluation": 5},
        "papers_mag_mesh": {"evaluation": 4},
        "cite": {"val": 3, "test": 3},
        "cocite": {"val": 3, "test": 3},
        "mag": {"train": 2, "val": 1, "test": 2},
    }
    assert_loads(out, tmp_path / "cache", expected)
    meta, body = card_of(out)
    assert (
        meta["license"] == "other" and "Not in this folder: paper_metadata_recomm.json, coview, coread, mesh." in body
    )
    benchmark = load_benchmark("scidocs", out, cache_dir=tmp_path / "cache")
    assert benchmark.sizes() == expected
    assert benchmark["cite"]["test"].to_dict() == {
        "query_id": ["q1", "q1", "q2"],
        "cand_id": ["c1", "c2", "c3"],
        "score": [1, 0, 1],
    }
    assert (
        benchmark["mag"]["test"]["label"] == [0, 2] and benchmark["papers_mag_mesh"]["evaluation"]["abstract"][0] == ""
    )
    only = load_benchmark("scidocs", str(out), "mag", cache_dir=tmp_path / "cache")
    assert list(only.configs) == ["mag"]
    with pytest.raises(ValueError, match=r"no config\(s\) \['coview'\].*available: papers_view_cite_read"):
        load_benchmark("scidocs", out, ["coview"], cache_dir=tmp_path / "cache")
    # The same folder is not a BEIR set: the schema check names what is wrong.
    with pytest.raises(ValueError, match=r"config\(s\) \['papers_view_cite_read', .*\] are not part of beir"):
        load_benchmark("beir", out, cache_dir=tmp_path / "cache")


def test_multi_scidocs_is_the_scidocs_builder_on_that_layout(builders, tmp_path):
    raw = scidocs_release(tmp_path / "raw")
    with pytest.raises(SystemExit):
        builders["build_scidocs"].main(["--source", str(raw), "--out", str(tmp_path / "x"), "--benchmark", "nope"])
    out = builders["build_multi_scidocs"].main(["--source", str(raw), "--out", str(tmp_path / "multi")])
    meta, body = card_of(out)
    assert (meta["sciembed_benchmark"], meta["license"], meta["pretty_name"]) == (
        "multi_scidocs",
        "odc-by",
        "Multi-SciDocs",
    )
    assert load_benchmark("multi_scidocs", out, "cite", cache_dir=tmp_path / "cache")["cite"]["val"].num_rows == 3


def test_builder_is_atomic_and_refuses_to_overwrite(builders, tmp_path):
    raw = scidocs_release(tmp_path / "raw")
    out = tmp_path / "scidocs"
    builders["build_scidocs"].main(["--source", str(raw), "--out", str(out)])
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        builders["build_scidocs"].main(["--source", str(raw), "--out", str(out)])
    # A failing rebuild (bad qrel line) leaves the previous folder intact and no temporary folder behind.
    (raw / "cite" / "test.qrel").write_text("q1 0 c1 1\nq1 c2 0\n")
    with pytest.raises(ValueError, match=r"cite/test\.qrel, line 2"):
        builders["build_scidocs"].main(["--source", str(raw), "--out", str(out), "--overwrite"])
    assert card_of(out)[0]["sciembed_benchmark"] == "scidocs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "scidocs"]
    (raw / "cite" / "test.qrel").write_text("q1 0 c1 1\n")
    builders["build_scidocs"].main(["--source", str(raw), "--out", str(out), "--overwrite", "--license", "cc-by-4.0"])
    assert card_of(out)[0]["license"] == "cc-by-4.0" and "| cite | test | 1 |" in card_of(out)[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "scidocs"]


def test_beir_builder(builders, tmp_path):
    out = builders["build_beir"].main(
        [
            "--source",
            str(beir_folder(tmp_path / "scifact")),
            "--out",
            str(tmp_path / "out"),
            "--license",
            "cc-by-nc-2.0",
        ]
    )
    assert_loads(
        out, tmp_path / "cache", {"corpus": {"corpus": 3}, "queries": {"queries": 2}, "qrels": {"dev": 1, "test": 3}}
    )
    beir = load_benchmark("beir", out, cache_dir=tmp_path / "cache")
    assert beir["corpus"]["corpus"]["paper_id"] == ["d1", "d2", "3"] and beir["qrels"]["test"]["score"] == [1, 2, 0]
    assert "`scifact`" in card_of(out)[1] and card_of(out)[0]["license"] == "cc-by-nc-2.0"


def test_cocitation_builder_from_csv_splits(builders, tmp_path):
    raw = tmp_path / "cvd_raw"
    raw.mkdir()
    Dataset.from_dict({"a": ["A one.", "A one."], "b": ["A two.", "A three."], "label": [1, 1]}).to_csv(
        raw / "train.csv", index=False
    )
    Dataset.from_dict(
        {"a": ["A two.", "A five.", ""], "b": ["A three.", "A six.", "A seven."], "label": [1, 0, 1]}
    ).to_csv(raw / "test.csv", index=False)
    args = ["--source", f"cvd={raw}", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    with pytest.raises(Exception, match=r"split 'test', row 2: empty abstract"):
        builders["build_cocitation"].main(args)
    out = builders["build_cocitation"].main([*args, "--skip-invalid"])
    assert_loads(out, tmp_path / "cache", {"cvd": {"train": 2, "test": 2}})
    meta, body = card_of(out)
    assert "| cvd.test_skipped | 1 |" in body and meta["size_categories"] == ["n<1K"]
    pairs = load_benchmark("cocitation", out, cache_dir=tmp_path / "cache")["cvd"]
    assert pairs["test"].to_dict() == {"a": ["A two.", "A five."], "b": ["A three.", "A six."], "label": [1, 0]}


def test_scirepeval_builder_from_local_hub_layout(builders, tmp_path):
    meta = hub_folder(
        tmp_path / "scirepeval",
        {
            "fos": {
                "evaluation": Dataset.from_dict(
                    {"doc_id": [11, 12, 13], "title": ["a", "b", "c"], "abstract": ["x", None, "z"]}
                )
            },
            "scidocs_view_cite_read": {
                "evaluation": Dataset.from_dict(
                    {"doc_id": ["p1", "p2", "p3"], "title": ["a", "b", "c"], "abstract": ["", "", ""]}
                )
            },
        },
    )
    test = hub_folder(
        tmp_path / "scirepeval_test",
        {
            "fos": {
                "train": Dataset.from_dict({"paper_id": [11, 12], "label": [[1], [2, 3]]}),
                "test": Dataset.from_dict({"paper_id": [13], "label": [[0]]}),
            },
            "scidocs_cite": {
                "test": Dataset.from_dict({"query_id": ["p1", "p1"], "cand_id": ["p2", "p3"], "score": [1, 0]})
            },
            "scidocs_cocite": {"test": Dataset.from_dict({"query_id": ["p2"], "cand_id": ["p3"], "score": [1]})},
        },
    )
    out = builders["build_scirepeval"].main(
        [
            "--meta-source",
            str(meta),
            "--test-source",
            str(test),
            "--tasks",
            "fos",
            "scidocs_cite",
            "scidocs_cocite",
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    expected = {
        "meta_fos": {"evaluation": 3},
        "fos": {"train": 2, "test": 1},
        "meta_scidocs_view_cite_read": {"evaluation": 3},
        "scidocs_cite": {"test": 2},
        "scidocs_cocite": {"test": 1},
    }
    assert_loads(out, tmp_path / "cache", expected)
    loaded = load_benchmark("scirepeval", out, cache_dir=tmp_path / "cache")
    assert loaded["meta_fos"]["evaluation"]["paper_id"] == ["11", "12", "13"] and loaded["fos"]["train"]["label"] == [
        [1],
        [2, 3],
    ]


def test_scirepeval_builder_adds_the_real_training_samples(builders, tmp_path):
    samples = shared_data("scirepeval-samples")
    meta = hub_folder(
        tmp_path / "m",
        {"fos": {"evaluation": Dataset.from_dict({"doc_id": ["1"], "title": ["t"], "abstract": ["a"]})}},
    )
    test = hub_folder(tmp_path / "t", {"fos": {"test": Dataset.from_dict({"paper_id": ["1"], "label": [[0]]})}})
    out = builders["build_scirepeval"].main(
        [
            "--meta-source",
            str(meta),
            "--test-source",
            str(test),
            "--tasks",
            "fos",
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--samples",
            str(samples / "fos_small.json"),
            str(samples / "search_small.jsonl"),
        ]
    )
    assert_loads(
        out,
        tmp_path / "cache",
        {
            "meta_fos": {"evaluation": 1},
            "fos": {"test": 1},
            "train_fos": {"train": 205},
            "train_search": {"train": 100},
        },
    )
    search = load_benchmark("scirepeval", out, "train_search", cache_dir=tmp_path / "cache")["train_search"]["train"]
    assert sum(len(c) for c in search["candidates"]) == 1000


def test_specter_triplet_builder_follows_the_rules(builders, tmp_path):
    raw = specter_release(tmp_path / "raw")
    args = ["--source", str(raw), "--seed", "7"]
    out = builders["build_specter_triplets"].main([*args, "--out", str(tmp_path / "out")])
    assert_loads(out, tmp_path / "cache", {"triplets": {"train": 15, "val": 5}, "papers": {"train": 9}})
    bench = load_benchmark("specter_triplets", out, cache_dir=tmp_path / "cache")
    cites = {"q1": {"a", "b"}, "a": {"c", "d"}, "b": {"d", "e"}, "q2": {"c"}, "c": {"f"}}
    two_hop = {q: set().union(*(cites.get(c, set()) for c in cited)) - cited - {q} for q, cited in cites.items()}
    with_text = set(bench["papers"]["train"]["paper_id"])
    rows = [r for split in ("train", "val") for r in bench["triplets"][split]]
    for row in rows:
        q, p, n = row["query_id"], row["positive_id"], row["negative_id"]
        assert {q, p, n} <= with_text and "e" not in (p, n), "papers without text are never emitted"
        assert p in cites[q] and n not in cites[q] and n != q
        assert not row["hard"] or n in two_hop[q]
    # q1 and a each have a two-hop paper with text: 2 hard slots each; b (two hop: nothing) and q2 (f) as counted.
    hard = {q: sum(r["hard"] for r in rows if r["query_id"] == q) for q in ("q1", "a", "b", "q2")}
    assert hard == {"q1": 2, "a": 2, "b": 0, "q2": 2}
    assert "| train.hard_slots_filled_easy | 2 |" in card_of(out)[1]
    again = builders["build_specter_triplets"].main([*args, "--out", str(tmp_path / "again")])
    assert (
        Dataset.from_parquet(str(again / "triplets" / "train.parquet")).to_dict()
        == bench["triplets"]["train"].to_dict()
    )


def test_specter_triplet_builder_on_the_real_sample_applies_the_text_rule(builders, tmp_path):
    folder = shared_data("specter", "training")
    # The sample's cited papers have no metadata, so with the text rule no triplet may be emitted: the
    # builder says so instead of writing an empty (or text-less) training set.
    with pytest.raises(
        ValueError, match=r"of 17 queries, 17 cite no paper with text \(17 of 101 papers in the graph have text"
    ):
        builders["build_specter_triplets"].main(["--source", str(folder), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ command line and load_benchmark errors


def test_every_builder_has_a_help_that_explains(builders, capsys):
    for name in BUILDERS:
        with pytest.raises(SystemExit) as exit_code:
            builders[name].main(["--help"])
        assert exit_code.value.code == 0
        text = capsys.readouterr().out
        assert "--out" in text and "--source" in text or "--meta-source" in text, name
        assert "Configs written:" in text and f"python datasets_scripts/{name}.py" in text, name


def test_builder_runs_as_a_script(tmp_path):
    raw = beir_folder(tmp_path / "nfcorpus")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "build_beir.py"), "--source", str(raw), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "no licence given" in result.stderr and "wrote" in result.stderr
    assert (
        datasets.load_dataset(str(tmp_path / "out"), "qrels", cache_dir=str(tmp_path / "cache"))["test"].num_rows == 3
    )


def test_load_benchmark_hub_id_offline_fails_fast_and_clearly(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    start = time.perf_counter()
    with pytest.raises(
        BenchmarkSourceError, match=r"cannot load scidocs from 'sciembed/scidocs-nowhere'.*HF_HUB_OFFLINE=1"
    ):
        load_benchmark("scidocs", "sciembed/scidocs-nowhere", cache_dir=tmp_path / "cache")
    assert time.perf_counter() - start < 5


def test_load_benchmark_refuses_unknown_names_and_missing_folders(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark 'scidoc'; supported: " + ", ".join(DATASET_LAYOUTS)):
        load_benchmark("scidoc", tmp_path)
    with pytest.raises(BenchmarkSourceError, match="no such folder"):
        load_benchmark("scidocs", tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchmarkSourceError, match="no README.md"):
        load_benchmark("scidocs", tmp_path / "empty")
