"""Index builds do no repeated work: tuning searches the faiss index once per probe setting and reads narrower
candidate lists from prefixes, and the batch paths (exact neighbours, flat int8, IVF cells) give the rows faiss
gives."""

from __future__ import annotations

import faiss
import numpy as np
from test_index import clustered

from sciembed.index.build import _add_assigned, _trained
from sciembed.index.codes import IndexCodes, sign_bits, top_inner_products
from sciembed.index.settings import IndexSettings
from sciembed.index.tuning import Candidates, ExactTruth, tune


def binary_codes(vectors: np.ndarray) -> IndexCodes:
    from sciembed.index.build import add_codes
    from sciembed.index.codes import int8_codes
    from sciembed.quantization import calibration_ranges

    codes = IndexCodes("binary", faiss.IndexBinaryFlat(vectors.shape[1]), ranges=calibration_ranges(vectors))
    codes.mean = vectors.mean(axis=0)
    add_codes(codes, vectors)
    codes.store = int8_codes(vectors, codes.ranges)
    return codes


def test_tuning_searches_a_binary_index_once(monkeypatch):
    vectors = clustered(4000, 64)
    codes = binary_codes(vectors)
    truth = ExactTruth(vectors[:300], np.arange(300))
    truth.update(vectors, 0)
    searches = []
    real = IndexCodes.candidates
    monkeypatch.setattr(IndexCodes, "candidates", lambda self, *a: searches.append(a[1]) or real(self, *a))
    tuned = tune(codes, truth, 0.6, None, confidence=0.95)
    assert len(searches) == 1
    rows, _ = codes.search(truth.queries, 10, truth.rows, multiplier=tuned.multiplier)
    assert tuned.recall == np.mean([len(np.intersect1d(r, t)) / 10 for r, t in zip(rows, truth.best, strict=True)])


def test_a_prefix_of_candidates_holds_the_rows_a_narrower_search_finds():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((5000, 16)).astype(np.float32)  # 16 bits: many tied Hamming distances
    codes = IndexCodes("binary", faiss.IndexBinaryFlat(16))
    codes.index.add(sign_bits(vectors, None))
    candidates = Candidates(codes, vectors[:100], 352)
    for width in (11, 33, 66, 132, 352):
        _, narrow = codes.candidates(vectors[:100], width, None)
        assert np.array_equal(np.sort(candidates.labels(width, None), axis=1), np.sort(narrow, axis=1)), width


def test_top_inner_products_and_flat_int8_batches_equal_faiss():
    vectors = clustered(3000, 32)
    queries = vectors[:50]
    scores, rows = top_inner_products(queries, vectors, 11)
    exact_scores, exact_rows = faiss.knn(queries, vectors, 11, metric=faiss.METRIC_INNER_PRODUCT)
    assert np.array_equal(rows, exact_rows) and np.allclose(scores, exact_scores, atol=1e-6)
    index = faiss.index_factory(32, "SQ8", faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    index.add(vectors)
    codes = IndexCodes("int8", index)
    batch = codes.search(queries, 10, np.arange(50))
    single = [codes.search(queries[i : i + 1], 10, np.array([i])) for i in range(50)]
    assert np.array_equal(batch[0], np.vstack([s[0] for s in single]))


def test_ivf_cells_assigned_by_matrix_products_give_faiss_own_index():
    vectors = clustered(6000, 32)
    codes, _, _ = _trained("pq", _Source(32, 6000), vectors[:4000], IndexSettings(kind="pq", nlist=64))
    copy = faiss.deserialize_index(faiss.serialize_index(codes.index))
    copy.add(vectors)
    _add_assigned(codes.index, vectors)
    assert np.array_equal(faiss.serialize_index(codes.index), faiss.serialize_index(copy))


class _Source:
    """The dimension and count :func:`_trained` reads from an embedding source."""

    def __init__(self, dim: int, count: int) -> None:
        self.dim, self.count = dim, count
