"""The Ray executor must return exactly what the local executor returns on the sample source."""

from __future__ import annotations

import pytest

from curation.executors import index_and_hash_local, index_and_hash_ray, ray_hashes
from curation.hash_films import read_cache
from curation.hashing import AverageHash512
from curation.records import Fate

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_gives_the_local_records_and_hashes(sample_source, tmp_path, local_ray):
    local = index_and_hash_local(sample_source.root, tmp_path / "local.parquet", workers=1)
    ray_cache = tmp_path / "ray.parquet"
    remote = index_and_hash_ray(sample_source.root, ray_cache)
    assert remote[0] == local[0]
    assert remote[1] == local[1]
    assert any(r.fate is Fate.rejected and "does not decode" in r.reason for r in remote[0])
    cached = read_cache(ray_cache, AverageHash512().version)
    films = {r.sha256 for r in remote[0] if r.film_id in remote[1]}
    assert films <= set(cached)


def test_ray_workers_hash_what_the_local_hasher_hashes(sample_source, local_ray):
    paths = sorted(str(p) for p in sample_source.root.rglob("*1.jpg"))[:6]
    by_sha = ray_hashes(paths, "draft")
    assert sorted(v for views in by_sha.values() for v in views.values()) == sorted(
        v for p in paths for v in AverageHash512("draft").hash_views(p).values()
    )
