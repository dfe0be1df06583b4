"""``bench.scale.shortlist_nodes`` compares the shortlist's CPU in the driver, in local worker
processes and on Ray's nodes: each reading must count the processes that did the work, or the
ways it compares would differ by what is left out rather than by what they cost."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.scale.shortlist_nodes import driver_cpu, process_cpu

# Burns CPU itself and in a child it reaps, then names itself as Ray names its workers (when
# told to) and waits on stdin, so its figures can be read while it is alive.
BURNER = """
import os, sys, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
burn(0.3)
child = os.fork()
if child == 0:
    burn(0.3)
    os._exit(0)
os.waitpid(child, 0)
if sys.argv[1] == "ray":
    open("/proc/self/comm", "w").write("ray::run_chunk")
print("ready", flush=True)
sys.stdin.read()
"""


def _burner(name: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", BURNER, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def test_a_node_process_counts_with_the_children_it_reaped_and_ray_workers_by_their_name():
    plain, worker = _burner("plain"), _burner("ray")
    try:
        alone, named = process_cpu([plain.pid]), process_cpu([worker.pid])
        both = process_cpu([plain.pid, worker.pid])
    finally:
        for process in (plain, worker):
            process.communicate("")
    assert alone["all"] >= 0.55 and alone["workers"] == 0  # its own 0.3 s and its child's
    assert named["workers"] == named["all"] >= 0.55
    assert both["all"] == alone["all"] + named["all"]
    assert process_cpu([plain.pid]) == {"workers": 0.0, "all": 0.0}  # ended: nothing to read


def test_the_driver_counts_the_worker_processes_it_reaped():
    before, wall = driver_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", BURNER, "plain"], input="", text=True, check=True)
    spent = driver_cpu() - before
    assert spent >= 0.55, f"{spent:.2f} s of CPU counted for 0.6 s in reaped processes"
    assert time.perf_counter() - wall >= 0.55
