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
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
#: Per-query and per-paper scores: what the intervals resample, far too long for a table.
BULKY = ("per_query", "per_paper")
#: Widest table drawn from a results file's rows: a wider one continues in another table.
MAX_COLUMNS = 14
#: Columns that name a row of a list of records, repeated where its table continues.
KEY_COLUMNS = 3
#: Columns beyond which records of records read better as one row per inner record.
SPLIT_COLUMNS = 8
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
    "int8_variants": "Each int8 and bf16 engine setting on the same papers, against `SentenceTransformer.encode` in "
    "the same rounds: wall and CPU time ratios, rate, and min cosine to its vectors.",
    "int8_variants_paired": "Engine settings timed against the first of them in shuffled order, slice by slice, on "
    "the same papers: each one's median paired speedup, the share of pairs it won, its first pass over the papers "
    "(every input shape new to it), and min cosine to `SentenceTransformer.encode`.",
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
    """``value``'s scalars and lists of scalars under dotted keys (``a.b.c``), bulky keys left out."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            if key not in BULKY:
                flat.update(flatten(inner, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return {prefix[:-1]: value}
        return {}
    return {prefix[:-1]: value}


def label(key: str) -> str:
    """A flattened JSON key as words: ``median_docs_per_s.fp32`` reads ``median docs per s fp32``."""
    return words(key).replace(".", " ")


def words(key: str) -> str:
    """One JSON key as words: ``at_least_1.2x`` reads ``at least 1.2x``."""
    return key.replace("_", " ")


def cell_text(value: Any) -> str:
    """A value as a table cell or in a sentence: floats to four significant digits, booleans as yes or no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(map(cell_text, value))
    return "" if value is None else str(value)


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        return cell_text(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def phrases(value: Any, key: str = "") -> list[str]:
    """``value`` as ``key value`` phrases for a sentence: a dict of flags names the ones that are set."""
    if isinstance(value, dict):
        if value and all(isinstance(inner, bool) for inner in value.values()):
            return [f"{key} {' '.join(name for name, on in value.items() if on) or 'none'}".strip()]
        inner_phrases = (
            phrases(inner, f"{key} {label(name)}".strip()) for name, inner in value.items() if name not in BULKY
        )
        return [phrase for group in inner_phrases for phrase in group]
    if isinstance(value, list):
        return [f"{key} ({cell_text(value)})"] if value and not isinstance(value[0], (dict, list)) else []
    return [f"{key} {cell_text(value)}".strip()] if cell_text(value) else []


def sentence(opening: str, fields: dict[str, Any]) -> str:
    """``fields`` as one sentence after ``opening``, each part named by its key."""
    parts = [
        phrase for key, value in fields.items() for phrase in phrases(value, "" if key in BY_PARTS else label(key))
    ]
    return f"{opening}: {', '.join(parts)}." if parts else ""


#: Fields that say where a run was made and under what load: one sentence under its results.
CONDITIONS = ("machine", "cpu", "versions", "threads", "torch", "load", "load_average", "load_average_1_5_15_min")
#: Fields that say what a run measured: one sentence over its results.
SETTINGS = ("settings", "data", "source", "generator", "model", "base_model", "seed", "seeds")
#: Fields whose parts' own names say enough in a sentence (``cpus 2``, not ``machine cpus 2``).
BY_PARTS = ("machine", "cpu", "versions", "settings", "data", "source", "generator")


def is_setting(key: str, value: Any) -> bool:
    """Whether a field says how the run was made: a settings field, a scalar, or a list of scalars."""
    if isinstance(value, list):
        return not value or not isinstance(value[0], (dict, list))
    return key in SETTINGS or not isinstance(value, dict)


def is_records(value: Any) -> bool:
    """Whether ``value`` maps names to dicts: one table row per name."""
    return isinstance(value, dict) and bool(value) and all(isinstance(inner, dict) for inner in value.values())


def is_scalars(value: Any) -> bool:
    """Whether ``value`` maps names to scalars or lists of scalars: one table column."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(not isinstance(inner, dict) and flatten(inner, "x.") for inner in value.values())
    )


def records_table(name: str, records: dict[str, dict[str, Any]] | list[dict[str, Any]]) -> str:
    """One row per record and one column per field. A table too wide turns, splits its records, or continues.

    Args:
        name: the JSON field that holds the records, the table's caption.
        records: named records (each row opens with its name), or a list of records that name themselves.
    """
    named = isinstance(records, dict)
    flat = {row: flatten(value) for row, value in (records.items() if named else enumerate(records))}
    columns = list(dict.fromkeys(column for record in flat.values() for column in record))
    if named and len(columns) > SPLIT_COLUMNS and all(is_records(value) for value in records.values()):
        return records_table(name, {f"{a} / {b}": inner for a, value in records.items() for b, inner in value.items()})
    if named and len(columns) > MAX_COLUMNS >= len(records):
        rows = [[label(column), *(flat[row].get(column) for row in flat)] for column in columns]
        return f"**{label(name)}**\n\n" + markdown_table(["", *flat], rows)
    keys = [] if named else columns[:KEY_COLUMNS]
    rest = [column for column in columns if column not in keys]
    width = MAX_COLUMNS - len(keys)
    tables = []
    for start in range(0, max(len(rest), 1), width):
        shown = [*keys, *rest[start : start + width]]
        rows = [[*([row] if named else []), *(flat[row].get(column) for column in shown)] for row in flat]
        tables.append(markdown_table([*([""] if named else []), *map(label, shown)], rows))
    return f"**{label(name)}**\n\n" + "\n\n".join(tables)


def scalar_groups(fields: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The fields that share most of their names, grouped: each group is one table, a column per field."""
    groups: list[list[str]] = []
    for key, value in fields.items():
        for group in groups:
            names = {name for member in group for name in fields[member]}
            if 2 * len(names & set(value)) >= len(value):
                group.append(key)
                break
        else:
            groups.append([key])
    return groups


def verdicts(value: dict[str, Any], parent: str = "", inside: bool = False) -> dict[str, bool]:
    """Every boolean about a target in ``value``, by what it judges: its key, or its parent's for a bare verdict."""
    found: dict[str, bool] = {}
    for key, inner in value.items():
        about = inside or "target" in key
        if isinstance(inner, bool) and about:
            target = value.get("target")
            bare = key == "meets_target"
            found[(target if isinstance(target, str) else words(parent)) if bare else words(key)] = inner
        elif isinstance(inner, dict):
            found |= verdicts(inner, key, about)
    return found


def targets_text(report: dict[str, Any]) -> str:
    """One sentence on the file's targets (booleans under a field about a target): which hold."""
    found = verdicts(report)
    missed = [name for name, holds in found.items() if not holds]
    if not found:
        return ""
    if not missed:
        return "Every target of the file holds."
    return f"{len(found) - len(missed)} of {len(found)} targets hold. Missed: {', '.join(missed)}."


def generic(report: dict[str, Any]) -> tuple[str, list[Image]]:
    """The file's results as tables, with its settings, targets and machine in sentences."""
    fields = {k: v for k, v in report.items() if k not in ("benchmark", "description") and k not in BULKY}
    conditions = {k: v for k, v in fields.items() if k in CONDITIONS}
    settings = {k: v for k, v in fields.items() if k not in conditions and is_setting(k, v)}
    results = {k: v for k, v in fields.items() if k not in conditions and k not in settings}
    parts = [sentence("The run", settings), targets_text(report)]
    columns = {k: v for k, v in results.items() if is_scalars(v)}
    for group in scalar_groups(columns):
        names = list(dict.fromkeys(name for member in group for name in columns[member]))
        rows = [[words(name), *(columns[member].get(name) for member in group)] for name in names]
        parts.append(markdown_table(["", *map(label, group)], rows))
    for key, value in results.items():
        if key in columns:
            continue
        if is_records(value):
            parts.append(records_table(key, value))
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            parts.append(records_table(key, value))
        elif isinstance(value, dict) and value:
            flat = flatten(value)
            parts.append(markdown_table(["", label(key)], [[label(k), v] for k, v in flat.items()]))
    parts.append(sentence("Measured on", conditions))
    return "\n\n".join(part for part in parts if part), []


def embed_scale_headline(report: dict[str, Any]) -> str:
    """The fastest way over two workers, its speedup, and whether every way matches one process."""
    ways = report.get("two_workers", {})
    if not ways:
        return ""
    fastest = max(ways, key=lambda way: ways[way].get("speedup_over_one_process", 0))
    same = all(way.get("same_ids") and not way.get("max_abs_diff") for way in ways.values())
    match = "every way returns" if same else "not every way returns"
    return (
        f"Over two workers, {fastest} is fastest at {cell_text(ways[fastest].get('speedup_over_one_process'))} times "
        f"one process's rate, and {match} the same ids and vectors as one process."
    )


def ratio_range_headline(report: dict[str, Any]) -> str:
    """The range of CPU-time ratios against the plain encoder."""
    ratios = report.get("median_ratio_over_formats_cpu") or report.get("ratio_to_bert_cpu") or {}
    if not ratios:
        return ""
    low, high = min(ratios, key=ratios.get), max(ratios, key=ratios.get)
    return (
        "Against the plain encoder, CPU time per forward pass ranges from "
        f"{cell_text(ratios[low])} times ({words(low)}) to {cell_text(ratios[high])} times ({words(high)})."
    )


def onnx_exporters_headline(report: dict[str, Any]) -> str:
    """Each exporter's speed against TorchScript's, in fp32 and int8."""
    parts = []
    for name, exporter in report.get("exporters", {}).items():
        speeds = {key: exporter[key].get("speed_vs_torchscript") for key in ("fp32", "int8") if key in exporter}
        if speeds and all(isinstance(speed, (int, float)) for speed in speeds.values()):
            times = " and ".join(f"{cell_text(speed)} times in {key}" for key, speed in speeds.items())
            parts.append(f"{name}'s model runs at TorchScript's speed {times}")
    text = ". ".join(parts)
    return f"{text[:1].upper()}{text[1:]}." if parts else ""


def int8_variants_paired_headline(report: dict[str, Any]) -> str:
    """The setting with the largest median paired speedup over the first, and the share of pairs it won."""
    baseline = report.get("baseline", "")
    key, share = f"speedup_over_{baseline}_median", f"faster_than_{baseline}_share"
    variants = {name: row for name, row in report.get("variants", {}).items() if name != baseline and key in row}
    if not variants:
        return ""
    fastest = max(variants, key=lambda name: variants[name][key])
    row = variants[fastest]
    return (
        f"Against {words(baseline)} in the same shuffled rounds, the fastest setting, {words(fastest)}, runs "
        f"{cell_text(row[key])} times its speed on the median of {row.get('pairs')} pairs and was faster in "
        f"{cell_text(round(100 * row[share]))}% of them."
    )


def int8_variants_headline(report: dict[str, Any]) -> str:
    """The fastest engine setting by its median ratio over rounds, and its min cosine."""
    import statistics

    variants = {
        name: statistics.median(variant["ratio_to_st_pytorch_by_round"])
        for name, variant in report.get("variants", {}).items()
        if variant.get("ratio_to_st_pytorch_by_round")
    }
    if not variants:
        return ""
    fastest = max(variants, key=variants.get)
    cosine = report["variants"][fastest].get("min_cosine_to_st_pytorch")
    return (
        f"The fastest setting, {words(fastest)}, runs at a median {cell_text(variants[fastest])} times "
        f"`SentenceTransformer.encode` over the rounds, at min cosine {cell_text(cosine)} to its vectors."
    )


def long_documents_headline(report: dict[str, Any]) -> str:
    """The best way against truncation on each task: its paired cite MAP change and interval."""
    parts = []
    for task, pairs in report.get("paired_map", {}).items():
        against = {pair: value for pair, value in pairs.items() if pair.endswith(" - truncated")}
        if against:
            best = max(against, key=lambda pair: against[pair]["difference"])
            low, high = against[best]["interval"]
            parts.append(
                f"on {task}, {best.removesuffix(' - truncated')} by {cell_text(against[best]['difference'])} "
                f"(interval {cell_text(low)} to {cell_text(high)})"
            )
    return f"Against truncation, the best way raises cite MAP {', and '.join(parts)}." if parts else ""


def sampling_scale_headline(report: dict[str, Any]) -> str:
    """The full-scale run against its targets, and the speed against a dict-of-dicts sampler."""
    scale, comparison = report.get("scale", {}), report.get("comparison", {})
    target = scale.get("target", {})
    if not scale:
        return ""
    return (
        f"{scale.get('papers')} papers are built and sampled in {cell_text(scale.get('build_plus_sample_s'))} s "
        f"(target {cell_text(target.get('build_plus_sample_s'))} s) at {cell_text(scale.get('peak_memory_gb'))} GB "
        f"(target {cell_text(target.get('peak_memory_gb'))} GB), {cell_text(comparison.get('speed_ratio'))} times as "
        f"fast as a dict-of-dicts sampler on {comparison.get('papers')} papers."
    )


def scincl_tradeoff_headline(report: dict[str, Any]) -> str:
    """IVF's query time and hard-negative distance at its fewest and most probes."""
    rows = [row for row in report.get("settings", []) if row.get("index") == "ivf"]
    exact = next((row for row in report.get("settings", []) if row.get("index") == "exact"), None)
    if not rows or exact is None:
        return ""
    few, many = min(rows, key=lambda row: row["nprobe"]), max(rows, key=lambda row: row["nprobe"])
    share = "hard_negative_median_distance_share_of_rank"
    return (
        f"From {few['nprobe']} to {many['nprobe']} probes, IVF takes {cell_text(few['ms_per_query'])} to "
        f"{cell_text(many['ms_per_query'])} ms per query against exact search's {cell_text(exact['ms_per_query'])}, "
        f"and its hard negatives' median distance from their range falls from {cell_text(few.get(share))} to "
        f"{cell_text(many.get(share))} of the rank (target {cell_text(report.get('target', {}).get(share))})."
    )


def scincl_scale_headline(report: dict[str, Any]) -> str:
    """Triplets per second and peak memory, and the ranks' agreement with an exact float64 ranking."""
    accuracy = report.get("accuracy_vs_exact", {})
    if "triplets_per_s" not in report:
        return ""
    return (
        f"{report.get('triplets')} triplets at {cell_text(report['triplets_per_s'])} per second and "
        f"{cell_text(report.get('peak_memory_gb'))} GB peak. By the exact ranking, a share of "
        f"{cell_text(accuracy.get('positive_ranks', {}).get('share_in_range'))} of positives and "
        f"{cell_text(accuracy.get('hard_negative_ranks', {}).get('share_in_range'))} of hard negatives fall in "
        "their requested rank range."
    )


def train_cacm_headline(report: dict[str, Any]) -> str:
    """Which systems beat MiniLM as published on held-out CACM cite MAP on every seed."""
    summary = report.get("summary", {})
    judged = {
        name: row["beats_published_on_every_seed"]
        for name, row in summary.items()
        if "beats_published_on_every_seed" in row
    }
    if not judged:
        return ""
    beat = [name for name, holds in judged.items() if holds] or ["none"]
    rest = [name for name, holds in judged.items() if not holds] or ["none"]
    return (
        f"Above MiniLM as published on held-out CACM cite MAP on every seed: {', '.join(beat)}. "
        f"Not on every seed: {', '.join(rest)}."
    )


def training_speed_headline(report: dict[str, Any]) -> str:
    """sciembed's step time against the peer's, alone and with anchoring."""
    ratio, anchored = report.get("ratio_to_peer", {}), report.get("anchored_ratio_to_peer", {})
    if not ratio:
        return ""
    return (
        f"sciembed's step takes {cell_text(ratio.get('wall'))} times the peer's wall time "
        f"({cell_text(ratio.get('cpu'))} times its CPU time), and {cell_text(anchored.get('wall'))} times with "
        "anchoring."
    )


def triplet_positives_headline(report: dict[str, Any]) -> str:
    """How often each sampler's positive is cited by its query paper."""
    shares = [
        f"{cell_text(sampler.get('positive_cited', sampler.get('pair_cited')))} for {name}"
        for name, sampler in report.get("samplers", {}).items()
        if "positive_cited" in sampler or "pair_cited" in sampler
    ]
    return f"The share of positives (or pairs) that the query paper cites: {', '.join(shares)}." if shares else ""


def multi2spe_init_headline(report: dict[str, Any]) -> str:
    """The initialisations that start highest and lowest, by cite MAP at step 0."""
    rows = [row for row in report.get("rows", []) if "map" in row]
    if not rows:
        return ""
    best, worst = max(rows, key=lambda row: row["map"]), min(rows, key=lambda row: row["map"])

    def name(row: dict[str, Any]) -> str:
        return f"{row.get('initialization')} ({'normalised' if row.get('normalize') else 'not normalised'})"

    return (
        f"{name(best)[:1].upper()}{name(best)[1:]} starts highest at cite MAP {cell_text(best['map'])}, "
        f"{name(worst)} lowest at {cell_text(worst['map'])}."
    )


def fos_probe_headline(report: dict[str, Any]) -> str:
    """Each probe's mean macro-F1 of MiniLM as published against the trained models, over the rows."""
    rows = report.get("rows", [])
    probes = list(dict.fromkeys(key for row in rows for key, value in row.items() if isinstance(value, dict)))
    parts = []
    for probe in probes:
        published = [row[probe]["f1_macro"] for row in rows if row.get("system") == "MiniLM as published"]
        trained = [row[probe]["f1_macro"] for row in rows if row.get("system") != "MiniLM as published"]
        if published and trained:
            mean_published, mean_trained = sum(published) / len(published), sum(trained) / len(trained)
            parts.append(f"{cell_text(mean_published)} against {cell_text(mean_trained)} ({words(probe)})")
    return f"Mean macro-F1, MiniLM as published against the trained models: {', '.join(parts)}." if parts else ""


#: One sentence on what a results file shows, written from its numbers, by the file's ``benchmark`` (or its name).
HEADLINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "embed_scale": embed_scale_headline,
    "model_overhead": ratio_range_headline,
    "multiformat_overhead": ratio_range_headline,
    "onnx_exporters": onnx_exporters_headline,
    "int8_variants": int8_variants_headline,
    "int8_variants_paired": int8_variants_paired_headline,
    "long_documents": long_documents_headline,
    "sampling_scale": sampling_scale_headline,
    "scincl_scale_tradeoff": scincl_tradeoff_headline,
    "scincl_scale": scincl_scale_headline,
    "train_cacm": train_cacm_headline,
    "training_speed": training_speed_headline,
    "triplet_positives": triplet_positives_headline,
    "multi2spe_init": multi2spe_init_headline,
    "fos_probe": fos_probe_headline,
}


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
    """The ``recipes`` package's table and plot, the scores per seed, and the run's settings."""
    sys.path.insert(0, str(Path(__file__).parent))
    import recipes

    settings = sentence("The run", report["settings"])
    png = figure_png(recipes.figure(report["summary"]))
    seeds = "Each system's scores per seed, and where it started on CACM cite:\n\n" + per_seed_table(report["rows"])
    return "\n\n".join([settings, recipes.table(report["summary"]), seeds]), [(image, png)]


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


#: How the encode-speed results name what they compare, as the page names it.
ENCODE_NAMES = {
    "st_pytorch": "`SentenceTransformer.encode`",
    "st_onnx": "sentence-transformers' ONNX backend",
    "matmul_peak": "the matrix-product peak",
    "sciembed": "sciembed",
    "pytorch": "PyTorch",
    "onnx": "ONNX",
    "openvino": "OpenVINO",
    "vnni": "VNNI",
}
#: What ``encode_speed.json`` encoded and how: one sentence over its results.
ENCODE_RUN = ("model", "texts", "data", "papers", "mean_tokens", "batch_size", "max_length")
#: Where ``encode_speed.json`` was measured: one sentence under its results.
ENCODE_MACHINE = ("cpu", "threads", "load_average_1_5_15_min")
#: A target on the ratio to ``SentenceTransformer.encode``, such as ``int8_at_least_3.5x_st_pytorch``.
RATIO_TARGET = re.compile(r"at_least_([0-9.]+)x_st_pytorch")


def encode_name(key: str) -> str:
    """A path or target of ``encode_speed.json`` in words: ``sciembed_onnx_int8`` reads ``sciembed ONNX int8``."""
    for short, name in ENCODE_NAMES.items():
        key = re.sub(rf"(^|_){short}(?=_|$)", rf"\g<1>{name}", key)
    return words(key)


def encode_paths_table(paths: dict[str, dict[str, Any]], rate_key: str) -> str:
    """Each path's ratio to ``SentenceTransformer.encode``, rate, share of the matrix-product peak and min cosine."""
    header = ["path", "ratio to `SentenceTransformer.encode`", "papers per s", "share of the matrix-product peak"]
    keys = ("ratio_to_st_pytorch", rate_key, "share_of_matmul_peak", "min_cosine_to_st_pytorch")
    rows = [[encode_name(name), *(values.get(key) for key in keys)] for name, values in paths.items()]
    return markdown_table([*header, "min cosine to its vectors"], rows)


def encode_gates_text(report: dict[str, Any]) -> str:
    """The quantized models' gates: cite MAP of fp32 against the lower precision, per backend."""
    gates = {key: gate for key, gate in report.items() if is_gate(gate)}
    if not gates:
        return ""
    rows = []
    for gate in gates.values():
        hint = gate.get("inference_precision")
        precision = gate.get("quantization", "") + (
            f", {hint} inference" if hint and hint != gate["quantization"] else ""
        )
        rows.append(
            [
                f"{ENCODE_NAMES.get(gate.get('backend', ''), gate.get('backend'))} {precision}",
                gate["fp32_map"],
                gate["int8_map"],
                gate.get("tolerance"),
                gate.get("min_cosine"),
                gate.get("calibration_papers"),
                gate.get("queries"),
                "passed" if gate["passed"] else "failed",
            ]
        )
    first = next(iter(gates.values()))
    header = ["model", "fp32 cite MAP", "its cite MAP", "tolerance", "min cosine", "calibration papers", "queries"]
    return (
        f"A lower precision is used only once it passes its gate: cite MAP on {first.get('benchmark')} within the "
        "tolerance of the fp32 model's.\n\n" + markdown_table([*header, "gate"], rows)
    )


def encode_limit_text(limit: dict[str, Any]) -> str:
    """How the share of the peak is counted, and every rate of the machine's limit."""
    numbers: dict[str, Any] = {}
    tables: list[str] = []
    notes: dict[str, Any] = {}

    def walk(value: dict[str, Any], prefix: str) -> None:
        for key, inner in value.items():
            if is_records(inner):
                tables.append(records_table(f"{prefix}{key}", inner))
            elif isinstance(inner, dict):
                walk(inner, f"{prefix}{key}.")
            elif isinstance(inner, (int, float)) and not isinstance(inner, bool):
                numbers[f"{prefix}{key}"] = inner
            elif key not in ("flops_model", "matmul"):
                notes[f"{prefix}{key}"] = inner

    walk(limit, "")
    text = (
        f"The share of the matrix-product peak is a path's useful rate (FLOPs: {limit.get('flops_model')}) over the "
        f"machine's rate for a {limit.get('matmul')}."
    )
    table = markdown_table(["the machine's limit", "value"], [[label(k), v] for k, v in numbers.items()])
    return "\n\n".join(part for part in (text, table, *tables, sentence("Also", notes)) if part)


def encode_machine_text(report: dict[str, Any]) -> str:
    """The CPU, its threads and the load at the start and end."""
    cpu = report.get("cpu", {})
    flags = " ".join(name for name, on in cpu.get("flags", {}).items() if on) or "none of the flags checked"
    threads = ", ".join(f"{words(name)} {count}" for name, count in report.get("threads", {}).items())
    load = report.get("load_average_1_5_15_min", {})
    return (
        f"Measured on {cpu.get('cpu')} with {cpu.get('cpus')} CPUs (flags: {flags}), threads {threads}, load average "
        f"(1, 5, 15 minutes) {load_text(load.get('start'))} at the start and {load_text(load.get('end'))} at the end."
    )


def encode_speed_section(report: dict[str, Any], image: str = "encode_speed.png") -> tuple[str, list[Image]]:
    """The encode paths against ``SentenceTransformer.encode``, the targets, the gates, the machine, and a plot.

    Args:
        report: an ``encode_speed`` results file.
        image: the plot's file name.
    """
    paths = {name: values for name, values in report["paths"].items() if isinstance(values, dict)}
    rate_key = next((k for k in ("median_docs_per_s", "papers_per_s") if all(k in v for v in paths.values())), None)
    if rate_key is None or not all("ratio_to_st_pytorch" in values for values in paths.values()):
        return generic(report)
    fastest = max(paths, key=lambda name: paths[name]["ratio_to_st_pytorch"])
    best = paths[fastest]
    parts = [
        f"The fastest path, {encode_name(fastest)}, encodes {best['ratio_to_st_pytorch']:g} times as many papers per "
        "second as `SentenceTransformer.encode` in the same run, at min cosine "
        f"{cell_text(best.get('min_cosine_to_st_pytorch'))} to its vectors.",
        sentence("The run", {key: report[key] for key in ENCODE_RUN if key in report}),
        encode_paths_table(paths, rate_key),
    ]
    targets = report.get("targets", {})
    judged = {key: held for key, held in targets.items() if held is not None}  # None: not for this CPU
    if targets:
        result = {True: "holds", False: "missed", None: "not for this CPU"}
        parts.append(
            f"{sum(judged.values())} of {len(judged)} targets judged on this CPU hold.\n\n"
            + markdown_table(["target", "result"], [[encode_name(k), result[v]] for k, v in targets.items()])
        )
    parts.append(encode_gates_text(report))
    if report.get("machine_limit"):
        parts.append(encode_limit_text(report["machine_limit"]))
    parts.append(encode_machine_text(report))
    shown = ("benchmark", "description", "paths", "targets", "machine_limit", *ENCODE_MACHINE, *ENCODE_RUN)
    for key, value in report.items():
        if key not in shown and not is_gate(value):
            name = encode_name(key)
            parts.append(sentence(name[:1].upper() + name[1:], value if isinstance(value, dict) else {key: value}))
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 1 + 0.4 * len(paths)))
    axis.barh(range(len(paths)), [v["ratio_to_st_pytorch"] for v in paths.values()], color="tab:blue")
    axis.set_yticks(range(len(paths)), [encode_name(name).replace("`", "") for name in paths])
    axis.invert_yaxis()
    ratios: dict[float, list[str]] = {}
    for key in targets:
        if match := RATIO_TARGET.search(key):
            ratios.setdefault(float(match.group(1)), []).append(encode_name(key[: match.start()].rstrip("_")))
    for number, (ratio, names) in enumerate(sorted(ratios.items())):
        axis.axvline(ratio, color=f"C{number + 1}", linestyle="--", label=f"{ratio:g}x: {', '.join(names)}")
    axis.axvline(1, color="black", linewidth=0.8)
    if ratios:
        axis.legend(fontsize=8, title="targets", title_fontsize=8)
    axis.set_xlabel("ratio to SentenceTransformer.encode in the same run")
    return "\n\n".join(part for part in parts if part), [(image, figure_png(figure))]


def is_gate(value: Any) -> bool:
    """Whether ``value`` is a quantized model's quality gate (``fp32_map`` against the lower precision's)."""
    return isinstance(value, dict) and "fp32_map" in value


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
        note = f"Targets missed: {', '.join(missed)}." if missed else "Every target of the issue holds."
        members = f", the union of {', '.join(collection['members'])}" if collection.get("members") else ""
        caveat = f" Only {collection['note']}." if collection.get("note") else ""
        if collection.get("kinds_not_measured"):
            caveat += f" Not measured in this run: {', '.join(collection['kinds_not_measured'])}."
        parts.append(
            f"**{name}** ({collection['papers']} papers{members}, d = {collection['dim']}, load average "
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
    listed = "".join(f"\n- {item}" for item in left_out)
    return text + markdown_table(header, rows) + (f"\n\nLeft out:\n{listed}" if left_out else "")


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
            + ", ".join(f"{name}: {'holds' if ok else 'missed'}" for name, ok in report["targets"].items())
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
        "The largest resident set of any process of each command a user runs, in MB, against the issue's target. "
        "Other work on the cores (the mean load) slows a job but does not change its memory.\n\n"
    )
    return text + markdown_table(header, rows), []


SECTIONS: dict[str, Callable[[dict[str, Any]], tuple[str, list[Image]]]] = {
    "validation_search.json": validation_section,
    "index_quality.json": index_quality_section,
    "memory.json": memory_section,
}


#: The section of every run of a benchmark (by its ``benchmark``: the table's run, another budget's, titles alone),
#: each with its plot named after its file.
BENCHMARK_SECTIONS: dict[str, Callable[[dict[str, Any], str], tuple[str, list[Image]]]] = {
    "recipes": recipes_section,
    "index_scale": index_scale_section,
    "encode_speed": encode_speed_section,
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
        elif report.get("benchmark") in BENCHMARK_SECTIONS:
            text, pictures = BENCHMARK_SECTIONS[report["benchmark"]](report, f"{path.stem}.png")
        else:
            text, pictures = generic(report)
            headline = HEADLINES.get(report.get("benchmark", path.stem))
            text = "\n\n".join(part for part in (headline(report) if headline else "", text) if part)
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
