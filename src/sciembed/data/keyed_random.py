"""Random numbers keyed by (seed, query, stream, slot).

They are the same for a query however the queries are split.

The samplers draw for all queries at once (one array operation per round), which a single
``numpy.random.Generator`` makes depend on which other queries share the run: query 7's positives would
change when the queries are split over two processes. Keying every number by the query instead, as
``numpy.random.default_rng([seed, query])`` would, keeps a query's triplets the same in one process or in
N. A Generator per query costs about 10 microseconds to create, a minute per million queries and round,
so the keys are hashed instead, vectorised: the SplitMix64 finaliser (Steele et al. 2014, the mixer of
``java.util.SplittableRandom``) applied to the key parts in turn (tests check the uniformity of the
numbers and that neighbouring queries are uncorrelated).
"""

from __future__ import annotations

import numpy as np

SeedLike = int | np.random.Generator | None

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def base_seed(seed: SeedLike) -> int:
    """The integer seed that keys every draw.

    It is ``seed`` itself, one draw of a Generator, or fresh entropy for None.
    """
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    if seed is None:
        return int(np.random.SeedSequence().entropy % 2**63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")
    return int(seed)


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def keyed_uniform(seed: int, query: np.ndarray | int, stream: int, slot: np.ndarray | int = 0) -> np.ndarray:
    """Uniform numbers in [0, 1), one per element of ``query`` and ``slot`` broadcast together.

    Each number depends only on its own ``(seed, query, stream, slot)``: ``stream`` names the purpose of a
    draw (and its round, for rejection sampling), ``slot`` which of a query's draws of that purpose it is.
    """
    with np.errstate(over="ignore"):  # multiplication modulo 2**64 is the point
        key = _mix(np.uint64(seed) * _GOLDEN + np.uint64(1))
        key = _mix(key ^ (np.asarray(query, dtype=np.uint64) * _GOLDEN))
        key = _mix(key ^ (np.uint64(stream) * _GOLDEN))
        key = _mix(key ^ (np.asarray(slot, dtype=np.uint64) * _GOLDEN))
    # The top 53 bits as a double, as numpy's own random() does.
    return (key >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)
