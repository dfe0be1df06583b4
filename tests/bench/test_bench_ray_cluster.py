"""The bench's two-node cluster is handed over with both nodes started: a run measured "on two
nodes" ran its first step on one when the worker node joined a few seconds after the driver
read the nodes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.scale import ray_cluster


class Started:
    """A stand-in for a ``ray start`` process."""

    pid = 0

    def wait(self) -> int:
        return 0


def test_two_nodes_waits_for_the_worker_node_before_handing_over(monkeypatch: pytest.MonkeyPatch):
    steps: list[tuple[str, str]] = []

    def start(env: dict, temp: str, *args: object) -> Started:
        steps.append(("start", Path(temp).name.split("-")[2]))
        return Started()

    def wait(process: subprocess.Popen, temp: Path) -> None:
        steps.append(("started", temp.name.split("-")[2]))

    monkeypatch.setattr(ray_cluster, "_ray_start", start)
    monkeypatch.setattr(ray_cluster, "_wait_until_started", wait)
    monkeypatch.setattr(ray_cluster, "kill_tree", lambda pid: None)
    with ray_cluster.two_nodes():
        handed_over = list(steps)
    assert handed_over == [("start", "h"), ("started", "h"), ("start", "w"), ("started", "w")]
