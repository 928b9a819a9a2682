"""The documentation's benchmark page, written from ``benchmarks/results/*.json``: one section per results file, its
tables and, where a reader would rather look than read, a plot (matplotlib PNG), so the numbers on the site are the
numbers in the results. The docs build (``docs/hooks.py``) calls :func:`render`; run alone, it writes the page and
its plots into a folder to look at:

    python benchmarks/render_docs.py --output /tmp/benchmarks-page
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
#: Per-query and per-paper scores: what the intervals resample, far too long for a table.
BULKY = ("per_query", "per_paper")
#: Widest table drawn from a results file's rows; more columns than this read better as the JSON itself.
MAX_COLUMNS = 14
#: Characters per line of a plot's variant label: longer ones wrap, to keep the bars half of a 9-inch figure.
LABEL_WIDTH = 60

Image = tuple[str, bytes]
#: The measures ``index_scale.py`` compares between real and synthetic papers, in its table's order.
COMPARED = ("binary_multiplier", "binary_recall_at_10", "nearest_similarity", "tenth_similarity")


#: One sentence on what a results file shows, for the files that carry no ``description`` of their own. Keyed by the
#: file's ``benchmark`` field, or by its name where it has none.
WHAT_IT_SHOWS = {
    "embed_scale": "Embedding the same papers in one process and over two workers (torchrun, Ray Data, Ray tasks): "
    "time, rate, peak memory, and whether ids and vectors match one process.",
    "encode_speed": "Papers per second of each encode path, against `SentenceTransformer.encode` in the same run.",
    "model_overhead": "One forward pass of each model family against the plain `BertModel` it was built from, as "
    "CPU-time ratios.",
    "multiformat_overhead": "One forward pass in each task format of each multi-format method against the plain "
    "encoder, as CPU-time ratios.",
    "onnx_exporters": "The two ONNX exporters on the same model and papers: export time, fused operators, speed and "
    "agreement with PyTorch in fp32 and int8.",
    "sampling_scale": "SPECTER triplets sampled from a synthetic power-law citation graph: time and peak memory, "
    "against a dict-of-dicts sampler, and graphs read from string ids.",
    "scincl_scale": "SciNCL's exact kNN sampling on a synthetic graph: time, rate and peak memory, with ranks checked "
    "against a float64 numpy ranking.",
    "scincl_scale_tradeoff": "SciNCL's IVF search at several probe counts against exact search: time per query, and "
    "how far hard negatives fall from their rank range.",
}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``value``'s scalars under dotted keys (``a.b.c``); lists of scalars joined by commas; bulky keys left out."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            if key not in BULKY:
                flat.update(flatten(inner, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return {prefix[:-1]: ", ".join(map(str, value))}
        return {}
    return {prefix[:-1]: value}


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        text = f"{value:.4g}" if isinstance(value, float) else "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def generic(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """The file's scalars as a key / value table, and each list of records as a table of their scalars."""
    parts = []
    scalars = flatten({k: v for k, v in report.items() if k not in ("benchmark", "description")})
    if scalars:
        parts.append(markdown_table(["field", "value"], [[k, v] for k, v in scalars.items()]))
    for key, value in report.items():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            records = [flatten(item) for item in value]
            columns = list(dict.fromkeys(column for record in records for column in record))
            shown = columns[:MAX_COLUMNS]
            note = f" ({len(columns) - len(shown)} more columns in the JSON)" if len(shown) < len(columns) else ""
            parts.append(f"**{key}**{note}\n\n" + markdown_table(shown, [[r.get(c) for c in shown] for r in records]))
    return "\n\n".join(parts), []


def figure_png(figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    # A figure that chose its own layout (the recipes package's: constrained, to keep its title clear) keeps it.
    if figure.get_layout_engine() is None:
        figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def per_seed_table(rows: list[dict[str, Any]]) -> str:
    """Each system's scores per seed: its CACM cite MAP at step 0, then every task's measures."""
    pairs = (
        (task, measure) for row in rows for task, values in (row.get("metrics") or {}).items() for measure in values
    )
    measures = list(dict.fromkeys(pairs))[: MAX_COLUMNS - 3]
    header = ["system", "seed", "CACM cite MAP at step 0", *(f"{task} {measure}" for task, measure in measures)]
    table = [
        [
            row["system"],
            row["seed"],
            (row.get("before") or {}).get("map"),
            *((row.get("metrics") or {}).get(task, {}).get(measure) for task, measure in measures),
        ]
        for row in sorted(rows, key=lambda row: (row["system"], row["seed"]))
    ]
    return markdown_table(header, table)


def recipes_section(report: dict[str, Any], image: str) -> tuple[str, list[Image]]:
    """The ``recipes`` package's own table and plot of its summary, the scores per seed, and the run's settings."""
    sys.path.insert(0, str(Path(__file__).parent))
    import recipes

    settings = markdown_table(["setting", "value"], [[k, v] for k, v in flatten(report["settings"]).items()])
    png = figure_png(recipes.figure(report["summary"]))
    seeds = "Each system's scores per seed, and where it started on CACM cite:\n\n" + per_seed_table(report["rows"])
    return "\n\n".join([recipes.table(report["summary"]), seeds, settings]), [(image, png)]


def variant_label(row: dict[str, Any]) -> str:
    """A variant by the settings it resolved to (defaults change; a row keeps what it ran), then the overrides those
    do not already name, by their last key and a data file by its name, and its steps when not the rows' 60."""
    resolved = {k: v for k, v in row.get("resolved", {}).items() if v is not None}
    named = {"learning_rate": "lr", "weight_average": "WiSE"}

    def shown(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, list):
            return "+".join(shown(item) for item in value)
        return Path(value).name if isinstance(value, str) and "/" in value else str(value)

    parts = [f"{named.get(k, k)}={shown(v)}" for k, v in resolved.items()]
    parts += [
        f"{k.rsplit('.', 1)[-1]}={shown(v)}" for k, v in row["variant"].items() if k.rsplit(".", 1)[-1] not in resolved
    ]
    steps = f", {row['steps']} steps" if row["steps"] != 60 else ""
    return f"{row['recipe']}: {' '.join(parts)}{steps}"


def validation_section(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """Every variant tried: the cite variants' validation MAP change against MiniLM as published (a table and bars),
    the WiSE-FT curves (each share on the validation queries and the out-of-domain validation tasks), and the
    classification variants' head against MiniLM's linear probe on validation papers."""
    cite = [r for r in report["rows"] if "validation_queries" in r]
    labels = [variant_label(r) for r in cite]
    table = markdown_table(
        [
            "recipe",
            "variant",
            "seed",
            "steps",
            "validation queries",
            "MAP at step 0",
            "MAP",
            "MAP change",
            "nDCG change",
        ],
        [
            [
                r["recipe"],
                json.dumps(r["variant"]),
                r["seed"],
                r["steps"],
                r["validation_queries"],
                (r.get("before") or {}).get("map"),
                (r.get("after") or {}).get("map"),
                r["change_vs_published"]["map"],
                r["change_vs_published"]["ndcg"],
            ]
            for r in cite
        ],
    )
    for r in (r for r in cite if r.get("curve")):
        reference = r["MiniLM as published"]
        measures = list(reference)
        table += (
            f"\n\nWiSE-FT shares of one `{variant_label(r)}` run (seed {r['seed']}), change against MiniLM as "
            f"published ({', '.join(f'{m} {reference[m]}' for m in measures)}):\n\n"
        )
        table += markdown_table(
            ["share of the trained weights", *measures],
            [
                [share, *(round(scores[m] - reference[m], 2) for m in measures)]
                for share, scores in sorted(r["curve"].items(), key=lambda item: -float(item[0]))
            ],
        )
    heads = [r for r in report["rows"] if "validation_papers" in r]
    if heads:
        table += "\n\nClassification variants, the head's own macro-F1 on validation papers:\n\n"
        table += markdown_table(
            ["recipe", "variant", "seed", "validation papers", "head F1", "MiniLM probe F1", "change"],
            [
                [
                    r["recipe"],
                    json.dumps(r["variant"]),
                    r["seed"],
                    r["validation_papers"],
                    r["after"]["head_f1_macro"],
                    r["MiniLM as published"]["probe_f1_macro"],
                    round(r["after"]["head_f1_macro"] - r["MiniLM as published"]["probe_f1_macro"], 2),
                ]
                for r in heads
            ],
        )
    plt = pyplot()
    # Long variants wrap onto more lines and get that much more room, so no label runs into the next one.
    labels = [textwrap.fill(label, LABEL_WIDTH) for label in labels]
    room = [label.count("\n") + 2 for label in labels]
    centres = [sum(room[:i]) + room[i] / 2 for i in range(len(room))]
    figure, axis = plt.subplots(figsize=(9, 1 + 0.12 * sum(room)))
    changes = [r["change_vs_published"]["map"] for r in cite]
    axis.barh(centres, changes, height=1.4, color=["tab:green" if c > 0 else "tab:red" for c in changes])
    axis.set_yticks(centres, labels, fontsize=8)
    axis.set_ylim(sum(room), 0)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("validation cite MAP change against MiniLM as published")
    return table, [("validation_search.png", figure_png(figure))]


def encode_speed_section(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """A table of the encode paths, the generic tables, and the papers per second of each path as bars."""
    text, _ = generic(report)
    paths = {name: values for name, values in report["paths"].items() if isinstance(values, dict)}
    rate_key = next((k for k in ("median_docs_per_s", "papers_per_s") if all(k in v for v in paths.values())), None)
    if rate_key is None:
        return text, []
    columns = ("ratio_to_st_pytorch", "min_cosine_to_st_pytorch")
    rows = [[name, values[rate_key], *(values.get(column) for column in columns)] for name, values in paths.items()]
    text = (
        "Each path against `SentenceTransformer.encode` in the same run. The `openvino` rows are sciembed's "
        '`backend="openvino"`: fp32, NNCF int8, and the fp32 model run in bfloat16, each lower precision once it '
        "has passed the int8 gate.\n\n"
        + markdown_table(["path", *(key.replace("_", " ") for key in (rate_key, *columns))], rows)
        + "\n\n"
        + text
    )
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 1 + 0.4 * len(paths)))
    axis.barh(range(len(paths)), [v[rate_key] for v in paths.values()], color="tab:blue")
    axis.set_yticks(range(len(paths)), list(paths))
    axis.invert_yaxis()
    axis.set_xlabel(rate_key.replace("_", " "))
    return text, [("encode_speed.png", figure_png(figure))]


def recall_bytes_axis(axis, kinds: dict[str, dict[str, Any]], title: str) -> None:
    """Recall@10 of each index kind at its bytes per paper in RAM (filled), joined to its bytes on disk (hollow)."""
    for number, (kind, row) in enumerate(kinds.items()):
        colour = f"C{number}"
        ram, disk, recall = row["ram_bytes_per_paper"], row.get("disk_bytes_per_paper"), row["recall_at_10"]
        axis.plot([ram], [recall], "o", color=colour, label=kind)
        if disk is not None and disk != ram:
            axis.plot([ram, disk], [recall, recall], ":", color=colour)
            axis.plot([disk], [recall], "o", color=colour, mfc="none")
    from matplotlib.ticker import NullFormatter

    axis.set_xscale("log")
    axis.xaxis.set_minor_formatter(NullFormatter())  # the minor ticks' labels of a short log axis overlap
    axis.set_title(title, fontsize=9)
    axis.set_xlabel("bytes per paper: in RAM (filled), on disk (hollow)", fontsize=8)
    axis.grid(alpha=0.3)


def index_quality_section(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """A table per collection of every index kind against exact search, and a recall@10 against bytes per paper
    panel per collection."""
    columns = {
        "recall@10": "recall_at_10",
        "recall@10 lower bound": "recall_at_10_lower_bound",
        "multiplier": "multiplier",
        "RAM B/paper": "ram_bytes_per_paper",
        "disk B/paper": "disk_bytes_per_paper",
        "query time / exact": "query_time_vs_exact",
        "build time / exact": "build_time_vs_exact",
        "citation share / exact": "citation_share_vs_exact",
        "CACM cite MAP change": "cacm_cite_map_change",
    }
    parts = [
        "Each kind of the paper index against exact `IndexFlatIP` on the same vectors and one thread: recall@10 on "
        "the evaluation queries with its one-sided 95% lower bound, bytes per paper, time ratios, the share of "
        "neighbours linked by citation, and the CACM cite MAP change "
        "against float32, with the machine's load average (1, 5, 15 minutes) when each collection's measures began."
    ]
    collections = report["collections"]
    plt = pyplot()
    figure, axes = plt.subplots(1, len(collections), figsize=(3.5 * len(collections), 3.5), sharey=True, squeeze=False)
    for axis, (name, collection) in zip(axes[0], collections.items()):
        kinds = collection["kinds"]
        shown = [label for label, key in columns.items() if any(key in row for row in kinds.values())]
        rows = [[kind, *(row.get(columns[label]) for label in shown)] for kind, row in kinds.items()]
        missed = [f"{kind}: {t}" for kind, row in kinds.items() for t, ok in row.get("targets", {}).items() if not ok]
        note = f"Targets missed: {'; '.join(missed)}." if missed else "Every target of the issue holds."
        members = f", the union of {', '.join(collection['members'])}" if collection.get("members") else ""
        caveat = f" Only {collection['note']}." if collection.get("note") else ""
        if collection.get("kinds_not_measured"):
            caveat += f" Not measured in this run: {', '.join(collection['kinds_not_measured'])}."
        parts.append(
            f"**{name}** ({collection['papers']} papers{members}, d = {collection['dim']}; load average "
            f"{load_text(collection.get('load_average_start'))}).{caveat} What each kind keeps of exact search on "
            f"these papers, for the bytes it spends. {note}\n\n" + markdown_table(["kind", *shown], rows)
        )
        if collection.get("members"):
            parts.append(union_sources_text(collection["members"]))
        recall_bytes_axis(axis, kinds, f"{name} ({collection['papers']} papers)")
    axes[0][0].set_ylabel("recall@10 against exact")
    axes[0][0].legend(fontsize=7)
    return "\n\n".join(parts), [("index_quality.png", figure_png(figure))]


def union_sources_text(members: dict[str, dict[str, Any]]) -> str:
    """The union's papers per source: records read, repeated ids, skipped records, the sample and what is kept."""
    header = ["source", "records read", "repeated ids dropped", "records skipped", "sampled from", "papers"]
    rows = [
        [name, m.get("read"), m.get("repeated_ids", 0), len(m.get("skipped", [])), m.get("sampled_from"), m["papers"]]
        for name, m in members.items()
    ]
    left_out = [f"{name}: {item}" for name, m in members.items() for item in m.get("left_out", [])]
    text = "The union's papers per source, ids prefixed by source and deduplicated within it.\n\n"
    return text + markdown_table(header, rows) + (f"\n\nLeft out: {'; '.join(left_out)}." if left_out else "")


def load_text(load: list[float] | None) -> str:
    """A load average (1, 5, 15 minutes), or that it was not recorded."""
    return ", ".join(f"{x:g}" for x in load) if load else "not recorded"


def index_scale_section(report: dict[str, Any], image: str) -> tuple[str, list[Image]]:
    """``index_scale.py``'s kinds against exact search on synthetic papers, how the papers were made, the targets,
    and recall@10 against bytes per paper."""
    columns = {
        "factory": "factory",
        "multiplier": "multiplier",
        "nprobe": "nprobe",
        "recall@10": "recall_at_10",
        "RAM B/paper": "ram_bytes_per_paper",
        "disk B/paper": "disk_bytes_per_paper",
        "query ms": "query_ms",
        "query / exact": "query_vs_exact",
        "build s": "build_seconds",
        "tuning s": "tune_seconds",
        "build / exact add": "build_vs_exact_add",
        "opening adds MB": "open_rss_mb",
        "peak MB": "peak_rss_mb",
    }
    kinds = report["kinds"]
    shown = [label for label, key in columns.items() if any(key in row for row in kinds.values())]
    exact = report["exact"]
    scaled = f", times scaled from {exact['measured_papers']} papers" if exact["scaled_by"] != 1 else ""
    parts = [
        f"{report['papers']} synthetic papers of dimension {report['dim']} on one thread: what each kind costs and "
        f"keeps against exact search (one query {exact['query_ms']:g} ms, add {exact['add_seconds']:g} s{scaled}). "
        f"Whole run {report['total_seconds']:g} s, the process's peak RSS {report['peak_rss_mb']:g} MB (each "
        "kind's own, from its build to its searches, in the table), load average (1, 5, 15 minutes) at the start: "
        f"{load_text(report.get('load_average', {}).get('start'))}.",
        markdown_table(["kind", *shown], [[k, *(row.get(columns[c]) for c in shown)] for k, row in kinds.items()]),
    ]
    data = report.get("data")
    if data:
        parts.append(f"The papers: {data['model']}, fitted to {data['fitted_to']}.")
    compared = report.get("compared_with_real")
    if compared:
        parts.append(
            f"How alike synthetic and real papers are for search, on {compared['papers']} of each: a binary index's "
            "tuned multiplier and recall@10, and the mean similarity of the nearest and tenth nearest neighbour.\n\n"
            + markdown_table(
                ["papers", "binary multiplier", "binary recall@10", "nearest similarity", "tenth similarity"],
                [[name, *(compared[name][key] for key in COMPARED)] for name in ("real", "synthetic")],
            )
        )
    if report.get("kinds_left"):
        parts.append(f"The run stopped before it measured {', '.join(report['kinds_left'])}: targets are not judged.")
    if report.get("targets"):
        parts.append(
            "Targets of the issue at this size: "
            + "; ".join(f"{name}: {'holds' if ok else 'missed'}" for name, ok in report["targets"].items())
            + "."
        )
    if report.get("dry_run"):
        parts.append(
            "A dry run: the steps of the requested size on fewer papers, and what the requested size is projected to "
            "need.\n\n" + markdown_table(["measure", "value"], [[k, v] for k, v in report["dry_run"].items()])
        )
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(4, 3.5))
    recall_bytes_axis(axis, kinds, f"synthetic, {report['papers']} x {report['dim']}")
    axis.set_ylabel("recall@10 against exact (tuning)")
    axis.legend(fontsize=7)
    return "\n\n".join(parts), [(image, figure_png(figure))]


def memory_section(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """The peak resident memory of each job against its target, with the load it ran under."""
    rows = [
        [
            name,
            job["peak_rss_mb"],
            job["target_mb"],
            {True: "yes", False: "no", None: ""}[job["holds"]],
            job["seconds"],
            job["load_average"]["mean"],
            job["machine"]["cpus"],
            job["command"],
        ]
        for name, job in report["jobs"].items()
    ]
    header = ["job", "peak RSS (MB)", "target (MB)", "holds", "seconds", "mean load", "CPUs", "command"]
    text = (
        "The largest resident set of any process of each command a user runs, in MB, against the issue's target; "
        "other work on the cores (the mean load) slows a job but does not change its memory.\n\n"
    )
    return text + markdown_table(header, rows), []


SECTIONS: dict[str, Callable[[dict[str, Any]], tuple[str, list[Image]]]] = {
    "validation_search.json": validation_section,
    "encode_speed.json": encode_speed_section,
    "index_quality.json": index_quality_section,
    "memory.json": memory_section,
}


def render(results: Path = RESULTS, image_folder: str = "images/benchmarks") -> tuple[str, dict[str, bytes]]:
    """The benchmark page's Markdown and its images (``{path under docs/: PNG bytes}``), from every JSON file in
    ``results`` (subfolders included)."""
    lines = [
        "# Benchmarks",
        "",
        "Every results file in `benchmarks/results/`, rendered when the site is built",
        "(`benchmarks/render_docs.py`): the numbers here are the numbers in the JSON, and the only measured numbers",
        "of the documentation. How each was measured is in the script named by the file and in",
        "[Speed and scale](speed-and-scale.md) and [Training](training.md).",
    ]
    images: dict[str, bytes] = {}
    for path in sorted(results.rglob("*.json")):
        name = path.relative_to(results).as_posix()
        report = json.loads(path.read_text(encoding="utf-8"))
        if name in SECTIONS:
            text, pictures = SECTIONS[name](report)
        elif report.get("benchmark") == "recipes":
            # every recipes run (the table's, another budget's or window's): its table and plot, each its own PNG
            text, pictures = recipes_section(report, f"{path.stem}.png")
        elif report.get("benchmark") == "index_scale":
            text, pictures = index_scale_section(report, f"{path.stem}.png")
        else:
            text, pictures = generic(report)
        lines += ["", f"## `{name}`", ""]
        description = report.get("description") or WHAT_IT_SHOWS.get(report.get("benchmark", path.stem))
        if description:
            lines += [description, ""]
        for image_name, data in pictures:
            images[f"{image_folder}/{image_name}"] = data
            lines += [f"![{name}]({image_folder}/{image_name})", ""]
        lines.append(text)
    return "\n".join(lines) + "\n", images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the folder of results JSON files")
    parser.add_argument("--output", type=Path, required=True, help="a folder for benchmarks.md and its images")
    args = parser.parse_args()
    page, images = render(args.results)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "benchmarks.md").write_text(page, encoding="utf-8")
    for relative, data in images.items():
        (args.output / relative).parent.mkdir(parents=True, exist_ok=True)
        (args.output / relative).write_bytes(data)
    print(f"wrote {args.output / 'benchmarks.md'} and {len(images)} images")


if __name__ == "__main__":
    main()
