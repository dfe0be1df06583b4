"""A two-node Ray cluster on this machine, for ``tests/chain/test_ray_cluster.py`` and
``bench/scale/curve.py``: a head and a worker node, each started by ``ray start --block`` with its
own temp folder, a resource naming it (``head_node``, ``worker_node``) and ``cpus`` CPUs.

Ray binds its services to every interface whatever ``--node-ip-address`` says (and resolves
127.0.0.1 to this machine's address), so the cluster is joined through 127.0.0.1 and guarded
by a token of its own (``RAY_AUTH_MODE=token``). Every process the cluster started is killed
by its id when the block ends, whatever happened inside.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 180  # the head starts in 20-30 s on a busy 2-core machine


@dataclass(frozen=True)
class TwoNodes:
    head: subprocess.Popen
    worker: subprocess.Popen
    env: dict[str, str]  # a driver's: RAY_ADDRESS and the cluster's token
    head_logs: Path  # Ray's logs of the head node (its session folders)


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, from /proc (Ray's workers start sessions of
    their own, so a process group does not hold them all)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def kill_tree(root: int) -> None:
    """SIGKILL to ``root`` and every process below it, by id: no draining."""
    for pid in descendants(root):
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ray_start(
    env: dict[str, str], temp: str, cpus: int, store_mib: int, *args: str
) -> subprocess.Popen:
    ray_cli = str(Path(sys.executable).parent / "ray")
    return subprocess.Popen(
        [
            *(ray_cli, "start", "--block", "--num-cpus", str(cpus), "--temp-dir", temp, *args),
            *("--node-ip-address", "127.0.0.1", "--object-store-memory", str(store_mib * 2**20)),
            "--disable-usage-stats",
        ],
        env=env,
        stdout=open(Path(temp) / "ray-start.log", "w"),  # the child holds it
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C of the caller is not the cluster's
    )


def _wait_until_started(process: subprocess.Popen, temp: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while "Ray runtime started." not in (temp / "ray-start.log").read_text():
        assert process.poll() is None, (temp / "ray-start.log").read_text()[-3000:]
        assert time.monotonic() < deadline, f"ray start took over {START_SECONDS} s ({temp})"
        time.sleep(0.5)


@contextlib.contextmanager
def two_nodes(cpus: int = 1, store_mib: int = 150) -> Iterator[TwoNodes]:
    """The running cluster; both nodes are killed, and their folders removed, on leaving.
    ``store_mib``: each node's object store (the sample's results fit in 150 MiB; a corpus
    of 16,000 originals returns about 0.4 GB of local features to the driver, which a small
    store spills to disk)."""
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
        resources = ("--resources", '{"head_node": 1}')
        started.append(_ray_start(env, temps[0], cpus, store_mib, *head, *resources))
        _wait_until_started(started[0], Path(temps[0]))  # a worker cannot join before
        address = f"127.0.0.1:{port}"
        worker = ("--address", address, "--resources", '{"worker_node": 1}')
        started.append(_ray_start(env, temps[1], cpus, store_mib, *worker))
        # Both nodes before the driver: the executor deals a step's chunks round the nodes it
        # reads (again every DEAL_ROUND chunks), and a run measures two nodes from its start.
        _wait_until_started(started[1], Path(temps[1]))
        driver_env = {**env, "RAY_ADDRESS": address}
        yield TwoNodes(started[0], started[1], driver_env, Path(temps[0]))
    finally:
        for process in reversed(started):
            kill_tree(process.pid)
            process.wait()
        for temp in temps:
            subprocess.run(["rm", "-rf", temp], check=False)
