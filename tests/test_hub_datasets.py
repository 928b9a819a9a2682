"""Local Hub-layout folders load their own rows, even where datasets' cache would mix them up."""

from __future__ import annotations

import time

from datasets import Dataset
from helpers import write_hub_folder

from sciembed.data.hub_datasets import load_hub_dataset


def test_two_folders_of_one_name_and_a_rebuilt_folder_load_their_own_rows(tmp_path):
    first = write_hub_folder(tmp_path / "a" / "scidocs", {"cite": {"test": Dataset.from_dict({"v": [1, 2]})}})
    second = write_hub_folder(tmp_path / "b" / "scidocs", {"cite": {"test": Dataset.from_dict({"v": [1, 2, 3]})}})
    assert len(load_hub_dataset(first, "cite", split="test")) == 2
    # Plain datasets.load_dataset returns the first folder's 2 rows here (datasets 5.0.1).
    assert len(load_hub_dataset(second, "cite", split="test")) == 3
    time.sleep(0.01)
    Dataset.from_dict({"v": [1, 2, 3, 4]}).to_parquet(first / "cite" / "test.parquet")
    assert len(load_hub_dataset(first, "cite", split="test")) == 4
