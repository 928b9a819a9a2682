"""Sampling split over processes: the shares of N ranks together are exactly the triplets of one process."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_data

from sciembed.data.keyed_random import keyed_uniform
from sciembed.data.samplers import Triplets, sample_specter_triplets, sample_spectroid_triplets
from sciembed.data.scincl import SciNCLConfig, sample_scincl_triplets


def by_query(triplets: list[Triplets]) -> np.ndarray:
    """All rows of the given runs, (query, positive, negative, hard), grouped by query, each query's rows in slot
    order."""
    rows = np.concatenate(
        [np.stack([t.query, t.positive, t.negative, t.hard.astype(np.int64)], axis=1) for t in triplets]
    )
    return rows[np.argsort(rows[:, 0], kind="stable")]


SAMPLERS = {
    "specter": lambda graph, **kw: sample_specter_triplets(graph, **kw),
    "spectroid": lambda graph, **kw: sample_spectroid_triplets(graph, **kw),
    "scincl-exact": lambda graph, **kw: sample_scincl_triplets(graph, config=SciNCLConfig(embedding_dim=16), **kw),
    "scincl-ivf": lambda graph, **kw: sample_scincl_triplets(
        graph, config=SciNCLConfig(embedding_dim=16, index="ivf"), **kw
    ),
}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_two_ranks_give_exactly_the_triplets_of_one_process(cacm_graph, sampler):
    sample = SAMPLERS[sampler]
    whole = sample(cacm_graph, seed=11)
    shares = [sample(cacm_graph, seed=11, rank=rank, world_size=2) for rank in range(2)]
    assert len(whole) > 1000 and all(len(share) > 0 for share in shares)
    assert not set(shares[0].query.tolist()) & set(shares[1].query.tolist())
    assert (by_query(shares) == by_query([whole])).all()
    # Three ranks, and one query asked on its own, agree too: a query's draws depend on it alone.
    assert (
        by_query([sample(cacm_graph, seed=11, rank=rank, world_size=3) for rank in range(3)]) == by_query([whole])
    ).all()
    query = int(whole.query[len(whole) // 2])
    alone = sample(cacm_graph, queries=np.array([query]), seed=11)
    assert (by_query([alone]) == by_query([whole])[by_query([whole])[:, 0] == query]).all()
    assert not (by_query([sample(cacm_graph, seed=12)]) == by_query([whole])).all()


def test_triplet_dataset_shares_are_the_whole_dataset():
    from sciembed.training.examples import read_citation_source, triplet_dataset

    source = read_citation_source(shared_data("cacm"))
    whole = triplet_dataset(source, sampler="specter", seed=3).to_pandas()
    shares = [
        triplet_dataset(source, sampler="specter", seed=3, rank=rank, world_size=2).to_pandas() for rank in range(2)
    ]
    key = ["query_id", "positive_id", "negative_id"]
    combined = (shares[0][key].itertuples(index=False), shares[1][key].itertuples(index=False))
    assert sorted(row for share in combined for row in share) == sorted(whole[key].itertuples(index=False))
    assert len(shares[0]) + len(shares[1]) == len(whole) and min(len(shares[0]), len(shares[1])) > 0


def test_rank_and_world_size_are_checked(cacm_graph):
    for kwargs, message in (
        (dict(rank=2, world_size=2), r"rank must be an integer in \[0, 2\)"),
        (dict(rank=0, world_size=0), "world_size must be a positive integer"),
        (dict(rank=-1, world_size=2), "rank must be"),
    ):
        with pytest.raises(ValueError, match=message):
            sample_specter_triplets(cacm_graph, **kwargs)


def test_keyed_numbers_are_uniform_and_depend_on_every_key_part():
    from scipy.stats import kstest

    u = keyed_uniform(5, np.arange(200_000), stream=3)
    assert 0.0 <= u.min() and u.max() < 1.0 and kstest(u, "uniform").pvalue > 0.001
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01  # neighbouring queries are not correlated
    base = keyed_uniform(5, 42, 3, 1)
    for other in (
        keyed_uniform(6, 42, 3, 1),
        keyed_uniform(5, 43, 3, 1),
        keyed_uniform(5, 42, 4, 1),
        keyed_uniform(5, 42, 3, 2),
    ):
        assert other != base
    assert keyed_uniform(5, 42, 3, 1) == base
