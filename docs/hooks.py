"""MkDocs hook: the benchmark page and its plots, rendered from ``benchmarks/results/*.json`` when the site is built
(``benchmarks/render_docs.py``), so the site never shows other numbers than the results hold."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def on_files(files: Files, config) -> Files:
    sys.path.insert(0, str(BENCHMARKS))
    from render_docs import render

    page, images = render()
    files.append(File.generated(config, "benchmarks.md", content=page))
    for path, data in images.items():
        files.append(File.generated(config, path, content=data))
    return files


#: ``<!-- recipe: NAME -->`` in a page becomes the recipe's paper, its notes and its settings, written from the code.
RECIPE_MARK = re.compile(r"<!-- recipe: ([a-z0-9-]+) -->")


def recipe_block(name: str) -> str:
    from sciembed.training.recipes import RECIPES

    if name not in RECIPES:
        raise ValueError(f"a page names the recipe {name!r}; the recipes are {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    return (
        f'!!! note "The `{name}` recipe ({recipe.paper}), as the code defines it"\n'
        # Square brackets (control codes such as [CLF]) would read as Markdown links.
        f"    `sciembed train --recipe {name}`: {recipe.description.replace('[', '&#91;')}\n"
    )


#: ``<!-- departures: NAME -->`` in a page becomes the table of the recipe's departures from its paper.
DEPARTURES_MARK = re.compile(r"<!-- departures: ([a-z0-9-]+) -->")


def departures_block(name: str) -> str:
    """The departures of recipe ``name`` as a Markdown table: setting, value, when, reason and evidence."""
    import json

    from sciembed.training.recipes import RECIPES

    if name not in RECIPES:
        raise ValueError(f"a page names the recipe {name!r}; the recipes are {', '.join(RECIPES)}")
    departures = RECIPES[name].departures
    if not departures:
        return f"The `{name}` recipe trains with its paper's settings.\n"
    rows = [
        f"The `{name}` recipe departs from its paper in these settings:",
        "",
        "| Setting | Value | When | Reason | Evidence |",
        "|---|---|---|---|---|",
    ]
    for departure in departures:
        when = "trained in unit vectors" if departure.unit_vectors else "every run"
        reason = departure.reason.replace("[", "&#91;").replace("|", "\\|")
        rows.append(
            f"| `{departure.setting}` | `{json.dumps(departure.value)}` | {when} | {reason} | `{departure.evidence}` |"
        )
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = DEPARTURES_MARK.sub(lambda match: departures_block(match.group(1)), markdown)
    return RECIPE_MARK.sub(lambda match: recipe_block(match.group(1)), markdown)
