"""The recipe table: each recipe's departures from its paper are structured, applied and shown on its page."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _recipes():
    from sciembed.training.recipes import RECIPES

    return RECIPES


@pytest.mark.parametrize("name", sorted(_recipes()))
def test_each_departure_is_a_setting_a_reason_and_evidence_and_the_run_uses_it(name):
    recipe = _recipes()[name]
    for departure in recipe.departures:
        section, key = departure.setting.split(".", 1)
        resolved = recipe.resolve(unit_vectors=departure.unit_vectors)
        assert resolved[section][key] == departure.value, departure
        assert (ROOT / departure.evidence).is_file(), departure.evidence
        sentences = re.findall(r"[.!?](\s|$)", departure.reason)
        assert len(sentences) == 1 and departure.reason.endswith(".") and ";" not in departure.reason, departure
        assert not re.search(r"\b\d", departure.reason), departure  # numbers live in the evidence
    assert len(recipe.notes.split()) <= 40 and ";" not in recipe.notes, recipe.notes
    assert recipe.unit_vector_settings == {d.setting: d.value for d in recipe.departures if d.unit_vectors}


def test_a_paper_s_own_value_stays_in_the_settings_and_the_departure_replaces_it():
    recipes = _recipes()
    spectroid = recipes["spectroid-heads"]
    assert spectroid.settings["model"]["head"] == "CH2" and spectroid.resolve()["model"]["head"] == "CH1"
    assert recipes["scirepeval-ctrl"].settings["training"]["warmup_steps"] == 700
    assert recipes["moe-cocitation"].resolve({"data.pairs": "cocitations"})["data"]["pairs"] == "cocitations"


def test_every_system_page_lists_the_departures_of_its_recipes():
    """Each page that shows a recipe has a Departures section with the recipe's table, and the hook writes it."""
    sys.path.insert(0, str(ROOT / "docs"))
    from hooks import DEPARTURES_MARK, RECIPE_MARK, departures_block, on_page_markdown

    shown = set()
    for page in sorted((ROOT / "docs" / "systems").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        recipes = RECIPE_MARK.findall(text)
        assert DEPARTURES_MARK.findall(text) == recipes, page.name
        assert not recipes or "\n## Departures\n" in text, page.name
        rendered = on_page_markdown(text, None, None, None)
        for name in recipes:
            assert departures_block(name) in rendered
        shown.update(recipes)
    assert shown == set(_recipes())
    block = departures_block("specter")
    for departure in _recipes()["specter"].departures:
        assert f"| `{departure.setting}` |" in block and departure.evidence in block
