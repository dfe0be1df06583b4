"""The chain on a real two-node Ray cluster on this machine (``bench.scale.ray_cluster``: a head
and a worker node, each started by ``ray start --block`` with its own temp folder, one CPU and
a resource naming it; ``ray start`` rather than ``ray.cluster_utils.Cluster``: the same two
raylets, but started as a user starts them, each in its own folder, with nothing of Ray's
test helpers).

Every step whose per-file jobs go through ``run.map`` must run them on both nodes, and every
output must be byte-identical to the local build; losing the worker node in the middle of the
hash step must not change a byte either (Ray retries the lost tasks on the head). The build
runs in a driver process of its own (``tests/chain/ray_driver.py``), so no Ray state (connection,
cached auth token) is left in the test process. Every process the cluster started is
killed by its id when the tests end, pass or fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")

from bench.scale.ray_cluster import TwoNodes, two_nodes

OUTPUTS = ("manifest.parquet", "clusters.parquet", "agreement.parquet", "curation.json")
REPOSITORY = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[TwoNodes]:
    with two_nodes() as running:
        yield running


def _drive(cluster: TwoNodes, source, build: Path, *kill: str) -> dict:
    """The build on the cluster, in a driver process; what it says it ran where."""
    source_json = build.parent / f"{build.name}-source.json"
    source.save(source_json)
    ran = subprocess.run(
        [sys.executable, "-m", "tests.chain.ray_driver", str(source_json), str(build), *kill],
        env=cluster.env,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Ray ran per-file jobs on 2 node(s): index " in ran.stderr
    return json.loads(ran.stdout.strip().splitlines()[-1])


def _outputs(build: Path) -> dict[str, bytes]:
    """Every output the local and the Ray build must share, by name."""
    files = [build / name for name in OUTPUTS] + sorted((build / "dataset" / "data").iterdir())
    return {str(f.relative_to(build)): f.read_bytes() for f in files}


def test_every_step_runs_on_both_nodes_and_losing_the_worker_changes_no_output(
    cluster, sample_source, sample_build, tmp_path
):
    """One test, so that one cluster serves both runs in order under ``pytest -n 2`` (the
    second stops the worker node; xdist's ``loadgroup`` cannot keep two tests on one worker
    with pytest 9.2, whose node ids it no longer rewrites)."""
    found = _drive(cluster, sample_source, tmp_path / "ray")

    mapped = {step: nodes for step, nodes in found["jobs_by_step"].items() if nodes}
    assert {"index", "hash"} <= set(mapped)  # the steps that hand jobs to run.map today
    both = set(found["nodes"].values())
    for step, nodes in mapped.items():
        assert set(nodes) == both, f"step {step} ran on {sorted(nodes)} only, not on {both}"
    assert _outputs(tmp_path / "ray") == _outputs(sample_build)

    # The worker node killed when half the hash results are in: Ray retries on the head.
    found = _drive(cluster, sample_source, tmp_path / "ray-killed", str(cluster.worker.pid))

    assert cluster.worker.poll() is not None, "the worker node was not stopped"
    assert found["worker_jobs_before_kill"] > 0, "the worker node ran no hash job before"
    assert _outputs(tmp_path / "ray-killed") == _outputs(sample_build)
