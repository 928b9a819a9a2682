"""Co-citation pair sets in the MoE paper's Hub layout, loaded from a small local folder."""

from __future__ import annotations

import pytest
from datasets import Dataset

from sciembed import InvalidPaperError
from sciembed.data.cocitation import load_cocitation_pairs


def _folder(root, splits):
    root.mkdir()
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split, columns in splits.items():
        Dataset.from_dict(columns).to_parquet(root / f"{split}.parquet")
        lines += [f"  - split: {split}", f"    path: {split}.parquet"]
    (root / "README.md").write_text(
        "\n".join(lines + ["---", "Pairs in the GleghornLab/abstract_domain_* layout."]) + "\n"
    )
    return root


GOOD = {
    "train": {"a": ["Abstract one.", "Abstract one."], "b": ["Abstract two.", "Abstract three."], "label": [1, 1]},
    "valid": {"a": ["Abstract one."], "b": ["Abstract four."], "label": [0]},
    "test": {"a": ["Abstract two.", "Abstract five."], "b": ["Abstract three.", "Abstract five."], "label": [1, 0]},
}


def test_local_folder_loads_with_counts(tmp_path):
    pairs = load_cocitation_pairs(_folder(tmp_path / "cvd", GOOD), cache_dir=tmp_path / "cache")
    assert {split: len(data) for split, data in pairs.pairs.items()} == {"train": 2, "valid": 1, "test": 2}
    assert pairs.pairs["test"]["label"] == [1, 0] and pairs.pairs["train"].column_names == ["a", "b", "label"]
    assert (pairs.stats["train_positive"], pairs.stats["valid_positive"], pairs.stats["test_identical_texts"]) == (
        2,
        0,
        1,
    )
    assert pairs.skipped == []


def test_bad_rows_name_split_and_row(tmp_path):
    bad = {**GOOD, "test": {"a": ["x", "", "y"], "b": ["z", "w", "v"], "label": [1, 1, 7]}}
    folder = _folder(tmp_path / "cvd", bad)
    with pytest.raises(InvalidPaperError, match="2 invalid") as error:
        load_cocitation_pairs(folder, cache_dir=tmp_path / "cache")
    assert "split 'test', row 1: empty abstract in a or b" in str(error.value)
    assert "split 'test', row 2: label must be 0 or 1, got 7" in str(error.value)
    pairs = load_cocitation_pairs(folder, cache_dir=tmp_path / "cache", skip_invalid=True)
    assert pairs.pairs["test"]["a"] == ["x"] and pairs.stats["test_skipped"] == 2


def test_missing_column_names_what_was_found(tmp_path):
    folder = _folder(tmp_path / "cvd", {"train": {"a": ["x"], "text_b": ["y"], "label": [1]}})
    with pytest.raises(ValueError, match=r"split 'train': no column\(s\) \['b'\].*found \['a', 'text_b', 'label'\]"):
        load_cocitation_pairs(folder, cache_dir=tmp_path / "cache")
