"""The Ray executor must return exactly what the local executor returns on the sample source,
running the same declared steps."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

# Under `uv run`, Ray would start every worker through `uv run` again (its uv hook); the test
# venv is already complete, so workers use this interpreter directly.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray")

from curation.chain.executors import LocalExecutor, RayExecutor  # noqa: E402
from curation.chain.runner import Settings, curate  # noqa: E402
from curation.core.parallel import LocalMap  # noqa: E402


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class CountingMap(LocalMap):
    """The local map, counting the per-file jobs the steps hand it."""

    jobs = 0

    def __call__(self, function, jobs, chunksize=16):
        CountingMap.jobs += len(jobs)
        return super().__call__(function, jobs, chunksize)


class CountingExecutor(LocalExecutor):
    @contextmanager
    def mapping(self):
        yield CountingMap(self.workers)


def test_ray_gives_the_local_records_and_hashes(sample_source, tmp_path, local_ray):
    on_ray = RayExecutor(workers=1)
    remote = curate(sample_source, tmp_path / "ray", Settings(), "hash", on_ray)
    local = curate(sample_source, tmp_path / "local", Settings(), "hash", CountingExecutor(1))
    assert remote.records == local.records
    assert remote.products["hashes"] == local.products["hashes"]
    assert ray.is_initialized(), "the executor leaves a Ray it did not start running"
    assert on_ray.map is not None
    ran_on_ray = sum(on_ray.map.jobs_by_node.values())
    assert ran_on_ray == CountingMap.jobs > len(local.products["hashes"])  # every file job
