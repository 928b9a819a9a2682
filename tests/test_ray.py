"""The embed job on a local Ray cluster of two workers (issue 24, part 3): Ray Data's batch-inference pipeline and the
rank-sharded job as Ray tasks give the ids and vectors of a single-process run."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
from test_embed_distributed import PAPERS_200

from sciembed import Encoder
from sciembed.io import read_embeddings
from sciembed.jobs.embed import embed_to_file
from sciembed.jobs.ray_embed import PaperEmbedder, embed_parquet_with_ray, embed_with_ray_tasks


@pytest.fixture(scope="module")
def local_cluster():
    # Two CPUs, the dashboard off (its job API is unauthenticated, CVE-2023-48022), workers in one thread each. Ray
    # starts its workers at niceness 15, which on a busy machine (the other test process) starves them for minutes.
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}},
        _system_config={"worker_niceness": 0},
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def papers_and_reference(tiny_bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray")
    papers = folder / "papers.parquet"
    pq.write_table(pa.Table.from_pylist(PAPERS_200), papers)
    embed_to_file(Encoder.from_pretrained(str(tiny_bert), device="cpu"), papers, folder / "single.npy", shard_size=50)
    return papers, read_embeddings(folder / "single.npy")


def test_ray_data_pipeline_gives_the_single_process_vectors(local_cluster, papers_and_reference, tiny_bert, tmp_path):
    papers, (ids, vectors) = papers_and_reference
    load = functools.partial(Encoder.from_pretrained, str(tiny_bert), device="cpu")
    # Four blocks, so that both actors get batches.
    output = embed_parquet_with_ray(
        papers, tmp_path / "vectors", encoder=load, concurrency=2, num_cpus=0.5, num_blocks=4, batch_size=32
    )
    assert output == str(tmp_path / "vectors")
    ray_ids, ray_vectors = read_embeddings(output)
    assert sorted(ray_ids) == sorted(ids) and len(ray_ids) == len(ids)
    by_id = dict(zip(ray_ids, ray_vectors))
    np.testing.assert_allclose(np.stack([by_id[i] for i in ids]), vectors, atol=1e-5)
    with pytest.raises(FileExistsError, match="exists"):
        embed_parquet_with_ray(papers, output, encoder=load, num_cpus=0.5)


def test_actors_that_would_hold_every_cpu_are_refused_rather_than_left_waiting(local_cluster, papers_and_reference):
    papers, _ = papers_and_reference
    with pytest.raises(ValueError, match="would hold all 2 CPUs"):
        embed_parquet_with_ray(papers, "never-written", concurrency=2, num_cpus=1)


def test_ray_tasks_share_the_sharded_job_and_give_the_single_process_output(
    local_cluster, papers_and_reference, tiny_bert, tmp_path
):
    papers, (ids, vectors) = papers_and_reference
    load = functools.partial(Encoder.from_pretrained, str(tiny_bert), device="cpu")
    output = tmp_path / "vectors.npy"
    reports = embed_with_ray_tasks(papers, output, encoder=load, world_size=2, shard_size=50, num_cpus=1)
    assert sorted(r.encoded_shards for r in reports) == [2, 2]
    ray_ids, ray_vectors = read_embeddings(output)
    assert ray_ids == ids  # the sharded job keeps the input's order
    np.testing.assert_allclose(ray_vectors, vectors, atol=1e-5)
    with pytest.raises(FileExistsError):
        embed_with_ray_tasks(papers, output, encoder=load)


def test_a_parquet_without_text_columns_is_refused_before_any_actor_starts(local_cluster, tmp_path):
    papers = tmp_path / "ids.parquet"
    pq.write_table(pa.Table.from_pylist([{"paper_id": "a", "body": "text"}]), papers)
    with pytest.raises(ValueError, match="title or abstract"):
        embed_parquet_with_ray(papers, tmp_path / "vectors", num_cpus=0.5)


def test_a_batch_with_a_paper_without_text_names_it(tiny_bert):
    embedder = PaperEmbedder(functools.partial(Encoder.from_pretrained, str(tiny_bert), device="cpu"))
    batch = {"paper_id": np.array(["a", "b"], dtype=object), "title": np.array(["graphs", None], dtype=object)}
    with pytest.raises(ValueError, match=r"record #1 \(paper_id 'b'\): neither title nor abstract"):
        embedder(batch)


def test_ray_index_parts_give_the_one_process_build(local_cluster, tmp_path):
    from test_index import clustered, write

    from sciembed import PaperIndex
    from sciembed.jobs.ray_index import index_with_ray

    vectors = clustered(2000, 32)
    source = write(tmp_path / "v.npy", vectors)
    parts = index_with_ray(source, tmp_path / "index", parts=4, kind="binary", merge=False)
    whole = PaperIndex.build(source, tmp_path / "whole", trained_like=tmp_path / "index.parts" / "trained")
    merged = PaperIndex.merge(parts, tmp_path / "merged")
    for name in ("index.faiss", "store.npy", "ids.bytes.npy", "ids.offsets.npy", "ids.order.npy"):
        assert (tmp_path / "merged" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    settings = {"top_k": 10, "multiplier": whole.manifest.multiplier}
    want = whole.search(vectors[:40], **settings)
    for index in (merged, PaperIndex.load_shards(parts)):
        got = index.search(vectors[:40], **settings)
        assert got.ids == want.ids and np.array_equal(got.scores, want.scores)
    (done,) = index_with_ray(source, tmp_path / "one", parts=4, kind="binary")
    assert (done / "index.faiss").read_bytes() == (tmp_path / "whole" / "index.faiss").read_bytes()
    assert not (tmp_path / "one.parts").exists()
