"""sciembed neighbours: nearest neighbours against scikit-learn, and the view on the example set."""

from __future__ import annotations

import numpy as np
import pytest

from sciembed.commands.neighbours import format_neighbours, run_neighbours
from sciembed.data.example import example_citation_links, example_papers
from sciembed.data.knn import nearest_neighbours, unit_rows


def test_unit_rows_match_scikit_learn_and_keep_zero_rows_zero():
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        matrix = rng.standard_normal((50, 8)).astype(dtype)
        matrix[[3, 17]] = 0
        np.testing.assert_allclose(unit_rows(matrix), normalize(matrix), rtol=1e-6 if dtype == np.float32 else 1e-12)
        assert not unit_rows(matrix)[[3, 17]].any() and np.isfinite(unit_rows(matrix)).all()
        in_place = matrix.copy()
        assert unit_rows(in_place, out=in_place) is in_place
        np.testing.assert_allclose(in_place, normalize(matrix), rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_nearest_neighbours_match_scikit_learn():
    from sklearn.neighbors import NearestNeighbors

    vectors = np.random.default_rng(1).standard_normal((50, 8)).astype(np.float32)
    indices, scores = nearest_neighbours(vectors, k=5, block=16)
    reference = NearestNeighbors(n_neighbors=6, metric="cosine", algorithm="brute").fit(vectors)
    distances, expected = reference.kneighbors(vectors)
    np.testing.assert_array_equal(indices, expected[:, 1:])  # sklearn returns each point first
    np.testing.assert_allclose(scores, 1 - distances[:, 1:], atol=1e-5)


def test_example_set_is_consistent():
    ids = {p["paper_id"] for p in example_papers()}
    links = example_citation_links()
    assert len(ids) == 18 and len(links) == 36
    assert all(a in ids and b in ids and a.split("-")[0] == b.split("-")[0] for a, b in links)


@pytest.mark.slow
def test_neighbours_without_data_use_the_example_set(tmp_path, caplog):
    result = run_neighbours(None, k=5, queries=2, show_progress_bar=False)
    assert "no data given" in caplog.text
    assert result.source.startswith("sciembed example set") and result.papers == 18
    assert result.linked_papers == 18 and len(result.queries) == 2
    # The embedded model groups the three invented topics, so linked papers are far above chance.
    assert result.link_share > 3 * result.random_share
    text = format_neighbours(result)
    assert result.queries[0].paper["title"] in text and "cites/cited" in text
