"""``python -m bench.scale.shortlist_nodes``: the feature shortlist's search among thousands
of distractor films, in the driver's process, through local worker processes and as Ray tasks
on a two-node cluster: its cost per film, and whether every way finds the same pairs.

The pools are ``bench.scale.distractors``' (the real development films and 4 relatives each,
planted among its cached synthetic distractors; the part says so and stops when the real films
are absent). At each size, ``feature_shortlist`` runs with the executor's map of each kind:

- ``in_process``: its default, the search in the driver;
- ``local``: ``LocalMap`` (worker processes of this machine, a pool per table);
- ``ray``: ``RayExecutor``'s map on the two-node cluster of ``bench.scale.ray_cluster`` (one
  CPU a node, as this machine has two), each table's key shards as Ray tasks.

The search goes through the map whatever the number of descriptors (``IN_PROCESS_ROWS`` set
to 0 for the run: below it the shortlist keeps the search in the driver, and the smallest pool
would not measure the map). The figures per run: wall, the driver's CPU (this process and the
worker processes it reaped), the CPU of every process of the two Ray nodes (their workers
alone, and all of them with Ray's own services), each per film and per voting descriptor, and
whether the pairs are those of the in-process search. The local runs come first, in rounds
that interleave them with the in-process one; then the cluster starts and the Ray runs are
interleaved with the in-process one again (a process that has joined Ray does not fork
workers), after one unrecorded Ray run that starts the nodes' workers. A Ray worker that
ended between two readings would take its CPU with it (Ray keeps its idle workers).

    uv run --frozen python -m bench.scale.shortlist_nodes --sizes 4000,16000,64000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

from bench.common.real_films import REAL_FILMS
from bench.scale import distractors
from bench.scale.ray_cluster import descendants, two_nodes
from curation.chain.executors import RayExecutor
from curation.core.atomic import write_bytes
from curation.core.parallel import LocalMap, Mapper
from curation.features import shortlist, vote_shards
from curation.features.close_pairs import HASH_TABLES
from curation.features.features import FilmFeatures
from curation.same_picture import frame_check

RESULTS = Path(__file__).with_name("shortlist_nodes.json")
STORE_MIB = 1024  # each node's object store: a table's shards of 64,600 films are ~0.3 GB
TICKS = os.sysconf("SC_CLK_TCK")
PROJECTED_FILMS = 1_000_000
PROJECTED_NODES = 16
NODE_CORES = 2


def process_cpu(pids: Sequence[int]) -> dict[str, float]:
    """CPU seconds, from /proc, of ``pids`` and the children each has reaped: of the Ray
    workers among them (named ``ray::...``) and of them all."""
    workers = every = 0.0
    for pid in pids:
        try:
            name, fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
        except OSError:
            continue  # it ended meanwhile
        seconds = sum(int(f) for f in fields.split()[11:15]) / TICKS  # utime stime cutime cstime
        every += seconds
        workers += seconds if name.split("(", 1)[1].startswith("ray::") else 0.0
    return {"workers": workers, "all": every}


def driver_cpu() -> float:
    """CPU seconds of this process and of the worker processes it has reaped."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def timed_shortlist(
    pool: Sequence[FilmFeatures], map: Mapper, nodes: Callable[[], dict[str, float]]
) -> tuple[list[tuple[int, int]], dict]:
    """The shortlist of ``pool`` through ``map``, and its wall and CPU: the driver's and
    ``nodes``' (the CPU of the processes outside the driver that ``map`` runs work in)."""
    before_nodes, before, wall = nodes(), driver_cpu(), time.perf_counter()
    pairs = shortlist.feature_shortlist(pool, frame_check.SHORTLIST_PER_FILM, map=map)
    wall, driver = time.perf_counter() - wall, driver_cpu() - before
    after_nodes = nodes()
    spent = {k: after_nodes[k] - before_nodes[k] for k in after_nodes}
    return pairs, {
        "wall_s": wall,
        "driver_cpu_s": driver,
        **{f"nodes_{k}_cpu_s": v for k, v in spent.items()},
    }


def no_nodes() -> dict[str, float]:
    """The nodes' CPU when the work stays on this machine: none to read."""
    return {"workers": 0.0, "all": 0.0}


def per_film(size: int, way: str, runs: list[dict], films: int, descriptors: int) -> dict:
    """One size and way's rounds as figures per film (the median round by total CPU, the
    lower of two)."""
    totals = sorted(r["driver_cpu_s"] + r["nodes_all_cpu_s"] for r in runs)
    median = totals[(len(totals) - 1) // 2]
    best = next(r for r in runs if r["driver_cpu_s"] + r["nodes_all_cpu_s"] == median)
    driver_and_workers = best["driver_cpu_s"] + best["nodes_workers_cpu_s"]
    return {
        "distractors": size,
        "way": way,
        "films": films,
        "voting_descriptors": descriptors,
        "rounds": len(runs),
        "wall_s": [round(r["wall_s"], 2) for r in runs],
        "cpu_s": [round(r["driver_cpu_s"] + r["nodes_all_cpu_s"], 2) for r in runs],
        "driver_cpu_s": round(best["driver_cpu_s"], 2),
        "nodes_workers_cpu_s": round(best["nodes_workers_cpu_s"], 2),
        "nodes_all_cpu_s": round(best["nodes_all_cpu_s"], 2),
        "ms_per_film_driver_and_workers": round(1000 * driver_and_workers / films, 3),
        "ms_per_film_all": round(1000 * median / films, 3),
        "us_per_voting_descriptor": round(1e6 * driver_and_workers / descriptors, 3),
        "wall_ms_per_film": round(
            1000 * sorted(r["wall_s"] for r in runs)[(len(runs) - 1) // 2] / films, 3
        ),
    }


def projection(figures: list[dict], voters_per_film: float) -> dict:
    """A projection, not a measurement: the shortlist of ``PROJECTED_FILMS`` films of
    ``voters_per_film`` voting descriptors on ``PROJECTED_NODES`` nodes of ``NODE_CORES`` cores,
    from the largest pool's Ray run, its CPU per voting descriptor taken as flat. The driver's
    work here (filing the pool it holds, merging the votes) is serial; the search runs one job
    per table and key range, all at once. The driver's memory is not projected here: in a
    build the features are in a store and the driver holds voter counts and votes
    (``bench.scale.shortlist_driver`` measures it)."""
    ray = max((f for f in figures if f["way"] == "ray"), key=lambda f: f["films"])
    rows = PROJECTED_FILMS * voters_per_film
    per_row = rows / ray["voting_descriptors"]
    driver = ray["driver_cpu_s"] * per_row
    workers = ray["nodes_workers_cpu_s"] * per_row
    services = (ray["nodes_all_cpu_s"] - ray["nodes_workers_cpu_s"]) * per_row
    cores = PROJECTED_NODES * NODE_CORES
    at_once = min(cores, HASH_TABLES * vote_shards.KEY_RANGES)
    return {
        "what": "projection from the measured CPU per voting descriptor, not a measurement",
        "from_distractors": ray["distractors"],
        "films": PROJECTED_FILMS,
        "voting_descriptors_per_film": round(voters_per_film),
        "nodes": PROJECTED_NODES,
        "cores": cores,
        "driver_cpu_h": round(driver / 3600, 2),
        "workers_cpu_h": round(workers / 3600, 2),
        "ray_services_cpu_h": round(services / 3600, 2),
        "shards_at_once": at_once,
        "wall_h": round((driver + workers / at_once) / 3600, 2),
        "wall_h_if_every_core_searched": round((driver + workers / cores) / 3600, 2),
    }


def measure(sizes: list[int], rounds: int, films: int, workers: int, ray: bool) -> dict:
    """Every size and way, ``rounds`` times each, interleaved; or why nothing was measured."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    families = distractors.planted_families(distractors.real_families(films, workers))
    made = distractors.distractor_films(max(sizes), workers)
    pools = {s: made[:s] + [film for members, _ in families for film in members] for s in sizes}
    voters = {s: sum(int(shortlist.voting(f).sum()) for f in pools[s]) for s in sizes}
    reference: dict[int, list[tuple[int, int]]] = {}
    runs: dict[tuple[int, str], list[dict]] = {}
    identical: dict[str, bool] = {}

    def record(size: int, way: str, map: Mapper, nodes: Callable[[], dict[str, float]]) -> None:
        pairs, figures = timed_shortlist(pools[size], map, nodes)
        reference.setdefault(size, pairs)
        key = f"{size} {way}"
        identical[key] = identical.get(key, True) and pairs == reference[size]
        runs.setdefault((size, way), []).append(figures)
        print(json.dumps({"distractors": size, "way": way, **figures}), file=sys.stderr)

    with mock.patch.object(vote_shards, "IN_PROCESS_ROWS", 0):
        for _ in range(rounds):
            for size in sizes:
                record(size, "in_process", shortlist.in_process, no_nodes)
                record(size, "local", LocalMap(workers), no_nodes)
        if ray:
            with two_nodes(store_mib=STORE_MIB) as cluster:
                os.environ.update(cluster.env)

                def on_nodes() -> dict[str, float]:
                    pids = descendants(cluster.head.pid) + descendants(cluster.worker.pid)
                    return process_cpu(pids)

                executor = RayExecutor(workers)
                with executor.mapping("shortlist") as on_ray:
                    shortlist.feature_shortlist(pools[sizes[0]], map=on_ray)  # workers start
                    for _ in range(rounds):
                        for size in sizes:
                            record(size, "in_process (beside ray)", shortlist.in_process, no_nodes)
                            record(size, "ray", on_ray, on_nodes)
                nodes_ran = {n[:8]: c for n, c in executor.jobs_by_step["shortlist"].items()}
    figures = [
        per_film(size, way, found, len(pools[size]), voters[size])
        for (size, way), found in runs.items()
    ]
    real = [f for members, _ in families for f in members]
    real_voters = sum(int(shortlist.voting(f).sum()) for f in real) / len(real)
    return {
        "measured": True,
        "projection": projection(figures, real_voters) if ray else {},
        "shortlist": shortlist.SHORTLIST_VERSION,
        "real_films": films,
        "workers": workers,
        "pairs": {str(s): len(p) for s, p in reference.items()},
        "pairs_identical_to_in_process": identical,
        "ray_shards_by_node": nodes_ran if ray else {},
        "runs": figures,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.shortlist_nodes", description=__doc__
    )
    parser.add_argument("--sizes", default="4000,16000,64000", help="distractor counts")
    parser.add_argument("--films", type=int, default=120, help="real films planted")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of each way")
    parser.add_argument("--no-ray", action="store_true", help="in process and local only")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    found = measure(sizes, args.rounds, args.films, args.workers, not args.no_ray)
    if not found["measured"]:
        print(found["why"])
        return
    write_bytes(RESULTS, (json.dumps(found, indent=1, sort_keys=True) + "\n").encode())
    json.dump(found, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
