"""The recipes table's summary as a Markdown table and as a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sciembed.io import atomic_path

from .stats import mean_change
from .systems import REFERENCE
from .tasks import HEAD

COLUMNS = (
    ("cacm_cite", "map", "CACM cite MAP"),
    ("hepth_cite", "map", "hep-th cite MAP"),
    ("cacm_categories", "f1_macro", "CACM categories F1"),
    ("arxiv_archive", "f1_macro", "arXiv archive F1"),
    ("fos", "f1_macro", "FoS F1"),
    ("search", "ndcg", "search nDCG"),
)


def table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table, one row per system.

    A cell holds the mean over seeds and the change against MiniLM as published: the paired difference with its 95%
    interval, or the mean per-seed change where rows lack what the interval resamples. The last columns compare CACM
    cite with the peer and the counterpart (a head: its categories F1 against MiniLM's probe) and say whether the row
    ended above its start on every seed.

    Args:
        summary: the summary of :func:`stats.summarise`.
    """

    def cell(entry: dict[str, Any], task: str, metric: str) -> str:
        value = f"{entry['mean'][task][metric]:.2f}"
        if entry.get("against_published", {}).get(task):
            paired = entry["against_published"][task]
            low, high = paired["interval_95"]
            fewer = f", seed {', '.join(map(str, paired['seeds']))}" if paired["seeds"] != entry["seeds"] else ""
            return f"{value} ({paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]{fewer})"
        change = mean_change(entry, task, metric)
        if change is not None:
            return f"{value} ({change:+.2f})"
        return value

    header = [
        "system",
        "seeds",
        *(title for _, _, title in COLUMNS),
        "vs peer (CACM cite)",
        "vs counterpart (CACM cite; a head: its categories F1 vs MiniLM's probe)",
        "above its start on every seed",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in summary.items():

        def versus(key: str, entry: dict[str, Any] = entry) -> str:
            if key == "against_counterpart" and entry.get("head_against_probe"):
                paired = entry["head_against_probe"]
                low, high = paired["interval_95"]
                return f"{entry['mean'][HEAD]['f1_macro']:.2f}: {paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"
            paired = (entry.get(key) or {}).get("cacm_cite")
            if not paired:
                return ""
            low, high = paired["interval_95"]
            named = f"{entry[key]['system']}: " if "system" in entry[key] else ""
            return f"{named}{paired['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"

        cells = [
            name,
            ", ".join(map(str, entry["seeds"])),
            *(cell(entry, task, metric) for task, metric, _ in COLUMNS),
            versus("against_peer"),
            versus("against_counterpart"),
            _yes_no(entry.get("head_above_probe_on_every_seed", entry.get("above_step_0_on_every_seed"))),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _yes_no(value: bool | None) -> str:
    return "" if value is None else "yes" if value else "no"


def figure(summary: dict[str, Any]):
    """One panel per task: each system's paired difference to MiniLM as published, with its interval.

    A bar is green when its interval is above 0, red when below, grey when it holds 0, and hatched without whiskers
    where only the mean per-seed change is known.

    Args:
        summary: the summary of :func:`stats.summarise`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [name for name in summary if name != REFERENCE]
    # Constrained layout leaves room for the title above the panels' own (tight_layout drew it over them).
    # The systems' names label the rows: the figure widens with the longest, so the panels keep their width.
    width = 13 + 0.08 * max(0, max(map(len, systems), default=0) - 30)
    drawn, axes = plt.subplots(2, 3, figsize=(width, 2.5 + 0.45 * len(systems)), sharey=True, layout="constrained")
    for axis, (task, metric, title) in zip(axes.flat, COLUMNS):
        for y, name in enumerate(systems):
            entry = summary[name]
            paired = entry.get("against_published", {}).get(task)
            if paired:
                difference, (low, high) = paired["difference"], paired["interval_95"]
                colour = "tab:green" if low > 0 else "tab:red" if high < 0 else "tab:gray"
                axis.barh(y, difference, color=colour, xerr=[[difference - low], [high - difference]], capsize=3)
            elif (change := mean_change(entry, task, metric)) is not None:
                axis.barh(y, change, color="lightgray", hatch="//")
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title(title, fontsize=10)
        axis.set_yticks(range(len(systems)), systems)
        axis.invert_yaxis()
        axis.grid(axis="x", alpha=0.3)
    seeds = sorted({seed for entry in summary.values() for seed in entry["seeds"]})
    drawn.suptitle(
        f"Change against all-MiniLM-L6-v2 as published, paired 95% interval "
        f"({'seed' if len(seeds) == 1 else 'seeds'} {', '.join(map(str, seeds))}; "
        "a row's own seeds are in the table)"
    )
    return drawn


def plot(summary: dict[str, Any], path: Path) -> None:
    """:func:`figure` saved to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    drawn = figure(summary)
    with atomic_path(path) as temporary:
        drawn.savefig(temporary, format="png", dpi=110)
    plt.close(drawn)
    print(f"wrote {path}")
