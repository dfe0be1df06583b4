"""``python -m bench.scale.ray_inflight``: the driver's memory while a step on the two-node Ray
cluster returns many results, read one by one, with the chunks in flight bounded (``RayMap``
as built) and all submitted at once (``IN_FLIGHT_PER_CPU`` patched past the number of chunks:
the code before the bound).

Two workloads, each the size of a 64,000-row audit's: ``tiles``, 1,008 jobs each returning
what one tile of the visits step's search returns (``TILE_QUERIES`` queries x ``TILE_KEEP``
best, float32 and int64: 0.84 MB, kept in the object store); ``rows``, 64,000 per-row jobs in
chunks of 16, each returning ``ROW_BYTES`` (a chunk's results under Ray's 100 KiB, so they
are kept in the driver's own memory until their reference goes). The reader keeps a running
sum. A first driver warms the cluster up, unmeasured; then each way runs in a driver process
of its own; its peak RSS (``VmHWM``) and the RSS it ends with are read from ``/proc``, and the
two ways' sums must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from unittest import mock

import numpy as np

from bench.common.measure import child_json, python_child, run_measured
from bench.scale.curve import _environment
from bench.scale.ray_cluster import two_nodes

TILES = 1008
TILE_QUERIES = 4096
TILE_KEEP = 17
ROWS = 64_000
ROW_BYTES = 4096
ROW_CHUNK = 16
STORE_MIB = 600  # each node's object store, as the audit bench's


def tile_like(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A tile's best: similarities and film indexes."""
    shape = (TILE_QUERIES, TILE_KEEP)
    return np.full(shape, n, np.float32), np.full(shape, n, np.int64)


def row_like(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A row's result of ``ROW_BYTES``, in the shape the reader sums."""
    return np.full((1, 1), n, np.float32), np.full((1, ROW_BYTES // 8), n, np.int64)


WORKLOADS = {"tiles": (tile_like, TILES, 1), "rows": (row_like, ROWS, ROW_CHUNK)}
WARM_UP = {"warm-up": (row_like, 256, ROW_CHUNK)}  # the cluster's first driver, not measured


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def one_way(workload: str, bounded: bool) -> dict[str, float]:
    """Map ``workload``'s jobs on the cluster ``RAY_ADDRESS`` names and read them in order."""
    import ray

    from curation.chain import executors

    ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
    mapper = executors.RayMap(ray, ray.remote(executors.run_chunk), "search", executors.Counter())
    function, jobs, chunksize = {**WORKLOADS, **WARM_UP}[workload]
    window = executors.IN_FLIGHT_PER_CPU if bounded else jobs + 1
    total = 0.0
    with mock.patch.object(executors, "IN_FLIGHT_PER_CPU", window):
        for similarity, films in mapper(function, list(range(jobs)), chunksize=chunksize):
            total += float(similarity[0, 0]) + float(films[-1, -1])
    found = {
        "peak_rss_mib": _status_kib("VmHWM") / 1024,
        "end_rss_mib": _status_kib("VmRSS") / 1024,
    }
    ray.shutdown()
    return {**{k: round(v, 1) for k, v in found.items()}, "sum": total}


def measure() -> dict[str, dict[str, float]]:
    """Both ways of each workload on one cluster, the bounded first."""
    found = {}
    with two_nodes(store_mib=STORE_MIB) as cluster:
        keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
        with _environment({k: cluster.env[k] for k in keys}):
            run_measured(python_child("bench.scale.ray_inflight", "--one", "warm-up", "bounded"))
            for workload in WORKLOADS:
                for way in ("bounded", "all_at_once"):
                    child = python_child("bench.scale.ray_inflight", "--one", workload, way)
                    measured = run_measured(child)
                    found[f"{workload}, {way}"] = {
                        **child_json(measured),
                        "wall_s": measured.wall_s,
                    }
                    print(json.dumps(found), file=sys.stderr, flush=True)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.ray_inflight", description=__doc__)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_way(args.one[0], args.one[1] == "bounded")))
        return
    print(json.dumps(measure(), indent=1))


if __name__ == "__main__":
    main()
