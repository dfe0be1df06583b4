"""The chain on a real two-node Ray cluster on this machine: a head and a worker node, each
started by ``ray start --block`` with its own temp folder, one CPU and a resource naming it.
(``ray start`` rather than ``ray.cluster_utils.Cluster``: the same two raylets, but started as
a user starts them, each in its own folder, and nothing of Ray's test helpers in the test.)

Every step whose per-file jobs go through ``run.map`` must run them on both nodes, and every
output must be byte-identical to the local build; losing the worker node in the middle of the
hash step must not change a byte either (Ray retries the lost tasks on the head). The build
runs in a driver process of its own (``tests/ray_driver.py``), so no Ray state is left in
the test process.

Ray binds its services to every interface whatever ``--node-ip-address`` says (and resolves
127.0.0.1 to this machine's address), so the cluster is joined through 127.0.0.1 and guarded
by a token of its own (``RAY_AUTH_MODE=token``). Every process the cluster started is killed
by its id when the tests end, pass or fail.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.ray_driver import kill_tree

OUTPUTS = ("manifest.parquet", "clusters.parquet", "agreement.parquet", "curation.json")
REPOSITORY = Path(__file__).parents[1]
START_SECONDS = 180  # the head starts in 20-30 s on a busy 2-core machine


@dataclass
class TwoNodes:
    head: subprocess.Popen
    worker: subprocess.Popen
    env: dict[str, str]  # the driver's: RAY_ADDRESS and the cluster's token


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ray_start(env: dict[str, str], temp: str, *args: str) -> subprocess.Popen:
    ray_cli = str(Path(sys.executable).parent / "ray")
    return subprocess.Popen(
        [
            *(ray_cli, "start", "--block", "--num-cpus", "1", "--temp-dir", temp, *args),
            *("--node-ip-address", "127.0.0.1", "--object-store-memory", str(150 * 2**20)),
            "--disable-usage-stats",
        ],
        env=env,
        stdout=open(Path(temp) / "ray-start.log", "w"),  # the child holds it
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C of pytest is not the cluster's
    )


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[TwoNodes]:
    port = _free_port()
    env = {
        **os.environ,
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    env.pop("RAY_ADDRESS", None)
    # Short folders: Ray's socket paths below them must stay under 107 characters.
    temps = [tempfile.mkdtemp(prefix=f"pc-ray-{name}-", dir="/tmp") for name in ("h", "w")]
    started: list[subprocess.Popen] = []
    try:
        head = ("--head", "--port", str(port), "--include-dashboard", "false")
        started.append(_ray_start(env, temps[0], *head, "--resources", '{"head_node": 1}'))
        _wait_until_started(started[0], Path(temps[0]))  # a worker cannot join before
        address = f"127.0.0.1:{port}"
        worker = ("--address", address, "--resources", '{"worker_node": 1}')
        started.append(_ray_start(env, temps[1], *worker))
        yield TwoNodes(started[0], started[1], {**env, "RAY_ADDRESS": address})
    finally:
        for process in reversed(started):
            kill_tree(process.pid)
            process.wait()
        for temp in temps:
            subprocess.run(["rm", "-rf", temp], check=False)


def _wait_until_started(process: subprocess.Popen, temp: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while "Ray runtime started." not in (temp / "ray-start.log").read_text():
        assert process.poll() is None, (temp / "ray-start.log").read_text()[-3000:]
        assert time.monotonic() < deadline, f"ray start --head took over {START_SECONDS} s"
        time.sleep(0.5)


def _drive(cluster: TwoNodes, source, build: Path, *kill: str) -> dict:
    """The build on the cluster, in a driver process; what it says it ran where."""
    source_json = build.parent / f"{build.name}-source.json"
    source.save(source_json)
    ran = subprocess.run(
        [sys.executable, "-m", "tests.ray_driver", str(source_json), str(build), *kill],
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


def test_every_per_file_step_runs_on_both_nodes_with_the_local_outputs(
    two_nodes, sample_source, sample_build, tmp_path
):
    found = _drive(two_nodes, sample_source, tmp_path / "ray")

    mapped = {step: nodes for step, nodes in found["jobs_by_step"].items() if nodes}
    assert {"index", "hash"} <= set(mapped)  # the steps that hand jobs to run.map today
    both = set(found["nodes"].values())
    for step, nodes in mapped.items():
        assert set(nodes) == both, f"step {step} ran on {sorted(nodes)} only, not on {both}"
    assert _outputs(tmp_path / "ray") == _outputs(sample_build)


def test_losing_the_worker_node_mid_hash_changes_no_output(
    two_nodes, sample_source, sample_build, tmp_path
):
    found = _drive(two_nodes, sample_source, tmp_path / "ray", str(two_nodes.worker.pid))

    assert two_nodes.worker.poll() is not None, "the worker node was not stopped"
    assert found["worker_jobs_before_kill"] > 0, "the worker node ran no hash job before"
    assert _outputs(tmp_path / "ray") == _outputs(sample_build)
