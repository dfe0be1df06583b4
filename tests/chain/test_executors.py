"""The Ray executor must return exactly what the local executor returns on the sample source,
running the same declared steps."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections import Counter

import pytest

# Under `uv run`, Ray would start every worker through `uv run` again (its uv hook); the test
# venv is already complete, so workers use this interpreter directly.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray")

from curation.chain.executors import (  # noqa: E402
    DEAL_ROUND,
    IN_FLIGHT_PER_CPU,
    LocalExecutor,
    RayExecutor,
    RayMap,
    run_chunk,
)
from curation.chain.runner import Settings, curate  # noqa: E402
from curation.core.errors import PericurateError  # noqa: E402
from curation.core.parallel import LocalMap  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class CountingMap(LocalMap):
    """The local map, counting the per-file jobs each step hands it."""

    def __init__(self, workers, counted):
        super().__init__(workers)
        self.counted = counted

    def __call__(self, function, jobs, chunksize=16):
        self.counted[0] += len(jobs)
        return super().__call__(function, jobs, chunksize)


class CountingExecutor(LocalExecutor):
    def __init__(self, workers):
        super().__init__(workers)
        self.jobs_by_step = {}

    def mapper(self, step):
        return CountingMap(self.workers, self.jobs_by_step.setdefault(step, [0]))


def test_ray_gives_the_local_records_and_hashes(sample_source, tmp_path, local_ray, capsys):
    on_ray = RayExecutor(workers=1)
    remote = curate(sample_source, tmp_path / "ray", Settings(), "hash", on_ray)
    counting = CountingExecutor(1)
    local = curate(sample_source, tmp_path / "local", Settings(), "hash", counting)
    assert remote.records == local.records
    assert remote.products["hashes"] == local.products["hashes"]
    assert ray.is_initialized(), "the executor leaves a Ray it did not start running"
    # Every job of every step is counted once, under the step that handed it over.
    ran = {step: sum(nodes.values()) for step, nodes in on_ray.jobs_by_step.items()}
    handed = {step: counted for step, (counted,) in counting.jobs_by_step.items()}
    assert ran == handed
    assert ran["index"] > ran["hash"] > 0
    (node,) = set(on_ray.jobs_by_step["index"])
    said = capsys.readouterr().err
    assert f"Ray ran per-file jobs on 1 node(s): index {node[:8]} {ran['index']}; " in said


def _fails_on_two(job: int) -> int:
    if job == 2:
        raise ValueError("job two is broken")
    return job


def test_a_job_ray_cannot_finish_ends_the_step_in_one_sentence(local_ray):
    mapper = RayMap(ray, ray.remote(run_chunk), "hash", Counter())
    with pytest.raises(PericurateError) as raised:
        list(mapper(_fails_on_two, [1, 2, 3], chunksize=1))
    said = str(raised.value)
    assert said.startswith("Ray could not finish the hash step's per-file work (RayTaskError")
    assert "\n" not in said


LEAVING = """
import sys
import types
from curation.chain.executors import RayExecutor, leave_process
RayExecutor.sessions_here = int(sys.argv[1])
print("summary", end="")  # unflushed: os._exit would lose it
leave_process(3)
print(" and the teardown")
"""


@pytest.mark.parametrize(
    ("sessions", "printed", "status"), [(1, "summary", 3), (0, "summary and the teardown", 0)]
)
def test_a_process_that_ran_ray_ends_with_its_status_and_its_output(sessions, printed, status):
    """``leave_process`` ends a process that opened a Ray session with the status given and
    every line it printed, skipping the teardown that once aborted a finished run; a process
    that never opened one goes on (every command run in the test process itself)."""
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    ran = subprocess.run(
        [sys.executable, "-c", LEAVING, str(sessions)],
        capture_output=True,
        text=True,
        timeout=60,
        env=buffered,
    )
    assert (ran.stdout.strip(), ran.returncode) == (printed, status)


class OutstandingRay:
    """A stand-in for the ``ray`` module and a remote task that runs each chunk at once and
    counts the chunks submitted but not yet read (``most``: the largest count seen)."""

    exceptions = types.SimpleNamespace(RayError=RuntimeError)

    def __init__(self, cpus: int) -> None:
        self.cpus, self.outstanding, self.most = cpus, 0, 0

    def nodes(self):
        return [{"NodeID": "a" * 56, "Alive": True, "Resources": {"CPU": self.cpus}}]

    def options(self, **_):
        return self

    def remote(self, function, chunk):
        self.outstanding += 1
        self.most = max(self.most, self.outstanding)
        return "a" * 56, [function(job) for job in chunk]

    def get(self, done):
        self.outstanding -= 1
        return done


def test_ray_map_keeps_a_bounded_number_of_chunks_in_flight():
    """A step of many chunks submits a few per CPU ahead of the one it reads, not all of them:
    finished results no longer pile up in the object store and the driver."""
    fake = OutstandingRay(cpus=2)
    mapper = RayMap(fake, fake, "search", Counter())
    assert list(mapper(str, list(range(500)), chunksize=1)) == [str(n) for n in range(500)]
    assert fake.outstanding == 0
    assert fake.most == IN_FLIGHT_PER_CPU * 2 + 1  # the one read, and those submitted ahead


class JoiningRay(OutstandingRay):
    """The stand-in, on a cluster of one node of one CPU that a second node joins after the
    nodes were first read; records the node each chunk is dealt to."""

    def __init__(self) -> None:
        super().__init__(cpus=1)
        self.reads, self.dealt = 0, []

    def nodes(self):
        self.reads += 1
        ids = ["a" * 56] if self.reads == 1 else ["a" * 56, "b" * 56]
        return [{"NodeID": node, "Alive": True, "Resources": {"CPU": 1}} for node in ids]

    def options(self, scheduling_strategy, **_):
        self.dealt.append(scheduling_strategy.node_id)
        return self


def test_a_node_that_joins_while_a_step_runs_is_dealt_the_chunks_still_to_deal():
    """A worker node that joined a few seconds after a long step began ran none of its chunks:
    the chunks were all dealt round the nodes read at the start."""
    fake = JoiningRay()
    mapper = RayMap(fake, fake, "hash", Counter())
    count = 3 * DEAL_ROUND
    assert list(mapper(str, list(range(count)), chunksize=1)) == [str(n) for n in range(count)]
    assert fake.dealt[:DEAL_ROUND] == ["a" * 56] * DEAL_ROUND  # before it joined
    assert Counter(fake.dealt[DEAL_ROUND:]) == {"a" * 56: DEAL_ROUND, "b" * 56: DEAL_ROUND}
    assert fake.most == IN_FLIGHT_PER_CPU * 2 + 1  # as many ahead as two CPUs take
