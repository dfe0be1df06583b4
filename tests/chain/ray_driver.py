"""The driver of ``tests/chain/test_ray_cluster.py``, run in a process of its own so that Ray's
per-process state (its connection, its cached auth token) never meets the test process:

    python -m tests.chain.ray_driver SOURCE_JSON BUILD [WORKER_PID]

joins the cluster ``RAY_ADDRESS`` names once both of its nodes are alive, builds the source
(``Source.save``'s file) into BUILD with ``curate(..., RayExecutor())``, and prints as JSON
which node is which and which node ran how many jobs of which step. With WORKER_PID (the
worker node's ``ray start --block``), that node is killed once half of the hash step's
results are in; the hash jobs then go one per task, so many are still queued or running on
the worker at that moment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ray

from bench.scale.ray_cluster import kill_tree
from curation.chain.executors import RayExecutor, leave_process
from curation.chain.runner import Settings, Source, curate

JOIN_SECONDS = 180  # a node joining on a busy 2-core machine takes 15-40 s


def node_ids() -> dict[str, str]:
    """``{"head": id, "worker": id}`` of the alive nodes, by the resource each started with."""
    return {
        name: node["NodeID"]
        for node in ray.nodes()
        for name in ("head", "worker")
        if node["Alive"] and f"{name}_node" in node["Resources"]
    }


def join_both() -> dict[str, str]:
    deadline = time.monotonic() + JOIN_SECONDS
    ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
    while len(ids := node_ids()) < 2:
        if time.monotonic() > deadline:
            raise SystemExit(f"the two-node cluster did not come up in {JOIN_SECONDS} s")
        time.sleep(1)
    ray.shutdown()  # the executor joins again, through RAY_ADDRESS
    return ids


class KillingExecutor(RayExecutor):
    """The Ray executor, killing the worker node once half of the hash results are in."""

    def __init__(self, worker_pid: int, worker_node: str) -> None:
        super().__init__()
        self.worker_pid = worker_pid
        self.worker_node = worker_node
        self.worker_jobs_before_kill = 0

    def mapper(self, step: str) -> Callable[..., Iterator[Any]]:
        mapper = super().mapper(step)
        if step != "hash":
            return mapper

        def map_then_kill(function: Callable, jobs: list, chunksize: int = 16) -> Iterator:
            for n, result in enumerate(mapper(function, jobs, 1), start=1):
                if n == len(jobs) // 2:
                    self.worker_jobs_before_kill = self.jobs_by_step[step][self.worker_node]
                    kill_tree(self.worker_pid)
                yield result

        return map_then_kill


def main(source_json: str, build: str, worker_pid: str = "") -> None:
    ids = join_both()
    killing = KillingExecutor(int(worker_pid), ids["worker"]) if worker_pid else None
    executor = killing or RayExecutor()
    curate(Source.load(Path(source_json)), Path(build), Settings(), executor=executor)
    print("driver: the build returned", file=sys.stderr)  # tells a later abort from an earlier
    found = {
        "nodes": ids,
        "jobs_by_step": {step: dict(nodes) for step, nodes in executor.jobs_by_step.items()},
        "worker_jobs_before_kill": killing.worker_jobs_before_kill if killing else None,
    }
    print(json.dumps(found))
    leave_process(0)  # as the pericurate program ends after a Ray run


if __name__ == "__main__":
    main(*sys.argv[1:])
