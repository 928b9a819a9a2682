"""The scripts of examples/, run as a user runs them: ``python examples/X.py ...`` in a fresh process from the
repository root, offline, on a few invented papers and citations and the tiny random models of conftest.py. Each
test checks what the script wrote (files, shapes, values), not only that it exited."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import PAPERS, WORDS

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("embed_folder", "finetune_specter", "train_format_adapters", "evaluate_scidocs", "export_and_push")
#: What a SciDocs-style proximity task reports: its MAP and nDCG, then the standard ranking measures.
RANKING = ("map", "ndcg", "Rprec", *(f"{m}_{k}" for m in ("ndcg_cut", "P", "recall") for k in (5, 10, 20, 100)))


def example_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a script: offline, with an embedding cache of the test's own, and a Hub endpoint that
    goes nowhere, so that even a bug could not reach the Hub."""
    env = {key: value for key, value in os.environ.items() if key not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_ENDPOINT="http://127.0.0.1:9",
        SCIEMBED_CACHE=str(tmp_path / "embedding-cache"),
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def run_example(name: str, *args: object, tmp_path: Path, returncode: int = 0) -> subprocess.CompletedProcess:
    command = [sys.executable, f"examples/{name}.py", *map(str, args)]
    result = subprocess.run(command, cwd=ROOT, env=example_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert result.returncode == returncode, (
        f"{' '.join(command)} exited {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    )
    return result


def undocumented_arguments(help_text: str) -> list[str]:
    """The arguments of an argparse --help whose entry has no explanation after the option (and its metavar)."""
    entries: list[list[str]] = []
    in_arguments = False
    for line in help_text.splitlines():
        if re.fullmatch(r"(positional arguments|options):", line):
            in_arguments = True
        elif in_arguments and re.match(r"  \S", line):
            entries.append([line.strip()])
        elif in_arguments and line.startswith("   ") and entries:
            entries[-1].append(line.strip())
        elif not line.strip():
            in_arguments = False
    assert entries, "no arguments found in the help"
    return [e[0] for e in entries if len(e) == 1 and len(re.split(r"\s{2,}", e[0], maxsplit=1)) < 2]


def test_every_example_explains_itself_and_each_option(tmp_path):
    processes = {
        name: subprocess.Popen(
            [sys.executable, f"examples/{name}.py", "--help"],
            cwd=ROOT,
            env=example_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in SCRIPTS
    }
    for name, process in processes.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, (name, err[-3000:])
        assert out.startswith("usage: ") and f"python examples/{name}.py" in out, name  # the docstring, with its use
        assert not undocumented_arguments(out), (name, undocumented_arguments(out))
        assert (ROOT / "examples" / f"{name}.py").read_text().count("\n") <= 95, f"{name} is no longer short"


def test_embed_folder_writes_vectors_and_ids_per_papers_file_and_refuses_to_overwrite(tiny_st_base, tmp_path):
    import pandas as pd

    import sciembed
    from sciembed.io import read_embeddings

    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "a.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    (papers / "b.csv").write_text("paper_id,title,abstract\n7,Graph citation,The embedding of a graph.\n8,Join,\n")
    pd.DataFrame(PAPERS[3:]).to_parquet(papers / "c.parquet")
    (papers / "notes.txt").write_text("not a papers file")
    out = tmp_path / "vectors"
    result = run_example("embed_folder", papers, out, "--model", tiny_st_base, "--batch-size", 2, tmp_path=tmp_path)

    expected = {"a": PAPERS, "b": [{"paper_id": "7"}, {"paper_id": "8"}], "c": PAPERS[3:]}
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}{s}" for n in expected for s in (".npy", ".ids.json"))
    assert "a.jsonl: 5 x 32" in result.stdout and "c.parquet: 2 x 32" in result.stdout
    for name, records in expected.items():
        ids, vectors = read_embeddings(out / f"{name}.npy")  # checks the ids file's hash of the vectors too
        assert ids == [p["paper_id"] for p in records] and vectors.shape == (len(records), 32)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)  # the model's Normalize module
    reference = sciembed.encode(tiny_st_base, PAPERS, device="cpu", show_progress_bar=False)
    np.testing.assert_allclose(read_embeddings(out / "a.npy")[1], reference, atol=1e-5)

    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    refused = run_example("embed_folder", papers, out, "--model", tiny_st_base, tmp_path=tmp_path, returncode=1)
    assert "--overwrite" in refused.stderr and "a.npy exists" in refused.stderr
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == written  # nothing touched
    (papers / "b.csv").unlink()
    run_example("embed_folder", papers, out, "--model", tiny_st_base, "--overwrite", tmp_path=tmp_path)
    assert (out / "a.npy").stat().st_mtime_ns != written["a.npy"]


def test_finetune_specter_trains_saves_and_scores_held_out_queries(tiny_st_base, tmp_path):
    import sciembed

    papers = [
        {"paper_id": f"p{i}", "title": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4)), "abstract": ""}
        for i in range(24)
    ]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in papers))
    (tmp_path / "cites.csv").write_text(
        "citing,cited\n" + "".join(f"p{i},p{(i + k) % 24}\n" for i in range(24) for k in (1, 2, 3))
    )
    out = tmp_path / "run"
    result = run_example(
        "finetune_specter",
        *("--data", tmp_path / "papers.jsonl", "--citations", tmp_path / "cites.csv", "--base", tiny_st_base),
        *("--output", out, "--max-steps", 2, "--batch-size", 4, "--held-out", 0.25),
        tmp_path=tmp_path,
    )

    assert re.search(r"triplets from 18 query papers; 6 held out", result.stdout), result.stdout
    assert re.search(r"held-out cite MAP: \d+\.\d\d before, \d+\.\d\d after", result.stdout), result.stdout
    assert "after 2 steps; sciembed.encode gives 32-dim vectors" in result.stdout
    evaluation = json.loads((out / "held_out_evaluation.json").read_text())
    assert [(r["task_id"], r["metric"]) for r in evaluation["results"]] == [("cite", m) for m in RANKING]
    assert evaluation["results"][0]["counts"]["queries"] == 6
    # From a base used with mean pooling + Normalize, the model is trained and saved in that embedding.
    modules = json.loads((out / "model" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Normalize"]
    trained = sciembed.encode(out / "model", PAPERS, device="cpu", show_progress_bar=False)
    base = sciembed.encode(tiny_st_base, PAPERS, device="cpu", show_progress_bar=False)
    assert trained.shape == (5, 32) and not np.array_equal(trained, base)
    np.testing.assert_allclose(np.linalg.norm(trained, axis=1), 1, atol=1e-5)


def write_scirepeval_samples(folder: Path) -> Path:
    """SciRepEval training samples in allenai/scirepeval's files: fields of study, citation triplets, search."""

    def paper(i: int) -> dict:
        title = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
        return {
            "corpus_id": i,
            "title": title,
            "abstract": " ".join(WORDS[(3 * i + k) % len(WORDS)] for k in range(9)),
        }

    folder.mkdir()
    fos = [{**paper(i), "labels": [i % 3], "labels_text": [f"field {i % 3}"]} for i in range(9)]
    (folder / "fos_small.json").write_text(json.dumps(fos))
    triplets = [{"query": paper(i), "pos": paper(i + 1), "neg": paper(i + 20)} for i in range(8)]
    (folder / "specter_small.json").write_text(json.dumps(triplets))
    sessions = [
        {"query": WORDS[i], "candidates": [{**paper(i), "score": 1}, {**paper(i + 9), "score": 0}]} for i in range(8)
    ]
    (folder / "search_small.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions))
    return folder


def test_train_format_adapters_then_use_them_specter2_style(tiny_bert, tmp_path):
    from sciembed.formats import FORMATS

    out = tmp_path / "adapters"
    result = run_example(
        "train_format_adapters",
        *("--data", write_scirepeval_samples(tmp_path / "samples"), "--base", tiny_bert, "--output", out),
        *("--max-steps", 2, "--batch-size", 6, "--query", "citation graph"),
        tmp_path=tmp_path,
    )

    assert "trained 2 steps on tasks fos, proximity, search" in result.stdout
    assert "formats: classification, regression, proximity, adhoc_query" in result.stdout
    assert "adhoc_query (1, 32), encode_query (1, 32)" in result.stdout
    assert "encode_document (2, 32)" in result.stdout and "classification (2, 32)" in result.stdout
    assert "nearest paper to 'citation graph': " in result.stdout
    # A clean base plus one AdapterHub folder per format, as SPECTER2 ships them.
    for task_format in FORMATS:
        assert (out / "model" / task_format / "adapter_config.json").is_file(), task_format
    results = json.loads((out / "train_results.json").read_text())
    assert results["recipe"] == "scirepeval-adapters" and results["global_step"] == 2


def write_scidocs(root: Path) -> Path:
    """A folder in SciDocs' release layout with a cite task and a MAG classification (allenai/scidocs paths.py)."""
    rng = np.random.default_rng(0)
    papers = {
        f"p{i}": {
            "paper_id": f"p{i}",
            "title": " ".join(rng.choice(WORDS, 4)),
            "abstract": " ".join(rng.choice(WORDS, 10)),
        }
        for i in range(40)
    }
    root.mkdir()
    for name in ("paper_metadata_view_cite_read.json", "paper_metadata_mag_mesh.json"):
        (root / name).write_text(json.dumps(papers))
    (root / "cite").mkdir()
    rows = [(f"p{q}", f"p{(q + k) % 40}", int(k < 3)) for q in range(6) for k in range(1, 10)]
    (root / "cite" / "test.qrel").write_text("".join(f"{q} 0 {c} {r}\n" for q, c, r in rows))
    (root / "mag").mkdir()
    for split, ids in (("train", range(10, 28)), ("test", range(28, 37))):
        (root / "mag" / f"{split}.csv").write_text("pid,class_label\n" + "".join(f"p{i},{i % 3}\n" for i in ids))
    return root


@pytest.mark.filterwarnings("ignore:Liblinear failed to converge")  # 18 training papers, in the reference run
def test_evaluate_scidocs_prints_the_table_and_writes_the_results(tiny_bert, tmp_path):
    from sciembed.evaluation import evaluate

    folder = write_scidocs(tmp_path / "scidocs")
    out = tmp_path / "results" / "scidocs.json"
    result = run_example(
        "evaluate_scidocs", "--model", tiny_bert, "--data", folder, "--output", out, "--jobs", 1, tmp_path=tmp_path
    )

    report = json.loads(out.read_text())
    values = {(r["task"], r["metric"]): r["value"] for r in report["results"]}
    assert set(values) == {("Cite", m) for m in RANKING} | {("MAG", "f1_macro")}
    reference = evaluate(tiny_bert, "scidocs", folder, use_cache=False, n_jobs=1, show_progress_bar=False)
    assert values == {(r.task, m): v for r in reference.results for m, v in r.metrics.items()}
    assert {"cocite", "coview", "coread", "mesh", "recomm"} <= set(report["missing_tasks"])
    assert "Cite" in result.stdout and "MAG" in result.stdout and f"{values['Cite', 'map']:.2f}" in result.stdout
    assert report["embedding"]["texts_encoded"] > 0 and any((tmp_path / "embedding-cache").rglob("*"))  # cached
    run_example("evaluate_scidocs", "--data", folder, "--output", out, tmp_path=tmp_path, returncode=2)  # exists


RESULTS = {
    "benchmark": "cacm",
    "source": "cacm",
    "model": "m",
    "sciembed_version": "0",
    "results": [
        {"benchmark": "cacm", "task": "cite", "task_id": "cite", "kind": "proximity", "metric": m, "value": v}
        for m, v in (("map", 71.25), ("ndcg", 81.5))
    ],
}


def test_export_and_push_exports_with_its_card_and_uploads_only_when_asked(family_model, tmp_path):
    from huggingface_hub import ModelCard

    (tmp_path / "cacm.json").write_text(json.dumps(RESULTS))
    out = tmp_path / "hub"
    result = run_example(
        "export_and_push",
        *("--model", family_model, "--repo-id", "org/tiny-m2s", "--out", out, "--evaluation", tmp_path / "cacm.json"),
        tmp_path=tmp_path,
    )

    assert "dry run: nothing was uploaded" in result.stdout and "pushed" not in result.stdout
    assert "loads without sciembed as Multi2SPEModel" in result.stdout  # validated in a fresh process
    assert re.search(r"left out: checkpoint-3\S*", result.stdout), result.stdout
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert {"README.md", "config.json", "model.safetensors", "modeling_multi2spe.py", "modules.json"} <= files
    assert not any(name.startswith("checkpoint-") for name in files)
    card = ModelCard.load(out / "README.md")
    assert {("map", 71.25), ("ndcg", 81.5)} <= {(r.metric_type, r.metric_value) for r in card.data.eval_results}
    assert "org/tiny-m2s" in card.text

    # --push is the one way to upload; offline it stops after the export, saying why, and uploads nothing.
    pushed = run_example(
        "export_and_push",
        *("--model", family_model, "--repo-id", "org/tiny-m2s", "--out", tmp_path / "hub2", "--no-validate", "--push"),
        tmp_path=tmp_path,
        returncode=1,
    )
    assert "HF_HUB_OFFLINE is set" in pushed.stderr and (tmp_path / "hub2" / "README.md").is_file()


def test_examples_use_only_public_names():
    """No script imports a private module or name of sciembed, or reaches for a private attribute of anything."""
    import ast

    for name in SCRIPTS:
        tree = ast.parse((ROOT / "examples" / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sciembed"):
                parts = [*node.module.split("."), *(alias.name for alias in node.names)]
                assert not any(part.startswith("_") for part in parts), (name, ast.unparse(node))
            if isinstance(node, ast.Attribute):
                assert not node.attr.startswith("_") or node.attr.endswith("__"), (name, ast.unparse(node))
