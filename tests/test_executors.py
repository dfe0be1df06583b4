"""The Ray executor must return exactly what the local executor returns on the sample source,
running the same declared steps."""

from __future__ import annotations

import os

import pytest

# Under `uv run`, Ray would start every worker through `uv run` again (its uv hook); the test
# venv is already complete, so workers use this interpreter directly.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray")

from curation.chain.executors import RayExecutor  # noqa: E402
from curation.chain.runner import Settings, curate  # noqa: E402
from curation.core.records import Fate  # noqa: E402
from curation.hashes import hash_films as hash_films_module  # noqa: E402
from curation.index import index as index_module  # noqa: E402


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_gives_the_local_records_and_hashes(sample_source, tmp_path, local_ray, monkeypatch):
    decoded_on_driver, read_on_driver = [], []

    def hash_on_driver(args):
        decoded_on_driver.append(args[0])
        return hash_one(args)

    def read_facts_on_driver(args):
        read_on_driver.append(args[0])
        return facts_job(args)

    hash_one, facts_job = hash_films_module._hash_one, index_module._facts_job
    monkeypatch.setattr(hash_films_module, "_hash_one", hash_on_driver)
    monkeypatch.setattr(index_module, "_facts_job", read_facts_on_driver)
    settings = Settings(workers=1)
    on_ray = curate(sample_source, tmp_path / "ray", settings, "hash", RayExecutor())
    monkeypatch.undo()
    local = curate(sample_source, tmp_path / "local", settings, "hash")
    remote = on_ray.records, on_ray.products["hashes"]
    assert remote[0] == local.records
    assert remote[1] == local.products["hashes"]
    assert ray.is_initialized(), "the executor leaves a Ray it did not start running"
    undecodable = {
        str(sample_source.root / r.path)
        for r in remote[0]
        if r.fate is Fate.rejected and ("does not decode" in r.reason or "corrupt JPEG" in r.reason)
    }
    assert any("corrupt JPEG data" in r.reason for r in remote[0]), "the sample plants one"
    assert set(decoded_on_driver) == undecodable  # every other film was hashed on Ray
    assert read_on_driver == []  # every file was read on Ray
