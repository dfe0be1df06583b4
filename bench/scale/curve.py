"""``python -m bench.scale.curve [--originals 1000,4000]``: the scale curve (issue 25, item 4).

A cold ``pericurate build`` of the corpus in the archive's own layout
(``corpus_zip(N, all_copies_among_originals=False)``) at each size, once on this machine
(``--executor local``) and once on a two-node Ray cluster on this machine
(``bench.scale.ray_cluster``, one CPU per node, joined through ``RAY_ADDRESS``): wall time, the
driver's peak RSS, each step's time (``work/times.json``), the load average before and after,
and whether the Ray build's outputs are byte-identical to the local one's. Then the cost per
original, and a projection to 100,000 and 1,000,000 originals on M machines, labelled as such.

The download (extraction) is not timed: it is the same on both executors. On Ray, the peak
RSS is the driver's alone (the nodes' workers are not its children).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from bench.common.corpus import CORPUS_DIR, corpus_zip
from bench.common.measure import run_measured
from bench.common.splits_bench import pericurate
from bench.scale.ray_cluster import two_nodes
from curation.source.extract import MAX_MEMBERS

OUTPUTS = ("manifest.parquet", "clusters.parquet", "agreement.parquet", "curation.json")
# the steps with per-file work, all of it through run.map (lookalikes reads the frame step's pairs)
MAPPED_STEPS = ("index", "hash", "same-picture", "keeper")
PROJECTED = (100_000, 1_000_000)
MACHINES = (1, 4, 16)
EXECUTORS = ("local", "ray")
STORE_MIB = 2048  # each node's object store: the 16k corpus's features are about 0.4 GB
CORES = 2  # this machine's, and each projected machine's (a projection: scale by cores)


def _outputs(build: Path) -> dict[str, bytes]:
    files = [build / n for n in OUTPUTS] + sorted((build / "dataset" / "data").iterdir())
    return {str(f.relative_to(build)): f.read_bytes() for f in files}


def as_source(archive: Path) -> Path:
    """The corpus as ``download`` takes it: the zip, or, past the extraction's member limit
    (``MAX_MEMBERS``, its zip-bomb guard: 16,000 originals are about 70,000 members), the
    folder it unpacks to, made once beside it, as a user gives a source that large."""
    with zipfile.ZipFile(archive) as zipped:
        if len(zipped.infolist()) <= MAX_MEMBERS:
            return archive
        folder = archive.parent / f"{archive.stem}-folder"
        done = folder / ".unpacked"
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            zipped.extractall(folder)  # the project's own corpus, not an untrusted archive
            done.touch()
    return folder


def _cold_build(archive: Path, build: Path, executor: str, env: dict[str, str]) -> dict:
    shutil.rmtree(build, ignore_errors=True)
    download = ("download", str(as_source(archive)), "--build", str(build))
    run_measured(pericurate(sys.executable, *download, "--lock", str(build / "source.lock")))
    load_before = os.getloadavg()[0]
    command = ("build", "--build", str(build), "--no-fail-on-rejected", "--executor", executor)
    with _environment(env):
        built = run_measured(pericurate(sys.executable, *command))
    times = json.loads((build / "work" / "times.json").read_text())
    found = {
        "wall_s": built.wall_s,
        "peak_rss_mib": built.peak_rss_mib,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "steps": {s["step"]: {"wall_s": s["wall_s"], "cpu_s": s["cpu_s"]} for s in times["steps"]},
        "source_images": times["source_images"],
    }
    print(json.dumps({"build": build.name, **found}), file=sys.stderr, flush=True)  # as it goes
    return found


class _environment:
    """``os.environ`` updated inside the block (the measuring relay passes it on)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def __exit__(self, *_: object) -> None:
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(
    originals: list[int],
    scratch: Path,
    executors: tuple[str, ...] = EXECUTORS,
    corpus_dir: Path = CORPUS_DIR,
) -> dict:
    """Each size built locally, then on the two-node cluster; a Ray build is compared with
    the local build of its size in ``scratch`` (this run's or an earlier one's). The corpora
    are written in ``corpus_dir``."""
    archives = {
        n: corpus_zip(n, folder=corpus_dir, all_copies_among_originals=False) for n in originals
    }
    rows: dict[str, dict] = {str(n): {} for n in originals}
    if "local" in executors:
        for n in originals:
            rows[str(n)]["local"] = _cold_build(archives[n], scratch / f"local-{n}", "local", {})
    if "ray" in executors:
        with two_nodes(store_mib=STORE_MIB) as cluster:
            keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
            ray_env = {k: cluster.env[k] for k in keys}
            for n in originals:
                build = scratch / f"ray-{n}"
                rows[str(n)]["ray"] = _cold_build(archives[n], build, "ray", ray_env)
                local = scratch / f"local-{n}"
                same = _outputs(build) == _outputs(local) if local.is_dir() else None
                rows[str(n)]["ray"]["outputs_identical"] = same
    for n in originals:
        for run in rows[str(n)].values():
            run["ms_per_original"] = round(1000 * run["wall_s"] / n, 2)
            run["cpu_ms_per_original"] = round(
                1000 * sum(s["cpu_s"] for s in run["steps"].values()) / n, 2
            )
    local_rows = {n: r for n, r in rows.items() if "local" in r}
    return {"sizes": rows, "projection": projection(local_rows) if local_rows else None}


def projection(rows: dict[str, dict]) -> dict:
    """A PROJECTION, not a measurement: each step's CPU seconds at the largest local size,
    grown to the target as ``(target / size) ** k``, k fitted on the two largest sizes
    (at least 1: no step is taken to grow slower than its input); the mapped steps' CPU
    spread over M machines of ``CORES`` cores, the others on the driver machine's cores."""
    sizes = sorted(int(n) for n in rows)
    largest = rows[str(sizes[-1])]["local"]["steps"]
    below = rows[str(sizes[-2])]["local"]["steps"] if len(sizes) > 1 else None
    growth = {step: 1.0 for step in largest}
    span = math.log(sizes[-1] / sizes[-2]) if below else 1.0
    for step, cost in largest.items():
        if below and below[step]["cpu_s"] > 0 and cost["cpu_s"] > 0:
            fitted = math.log(cost["cpu_s"] / below[step]["cpu_s"]) / span
            growth[step] = round(max(1.0, fitted), 2)
    table = {}
    for target in PROJECTED:
        cpu = {s: c["cpu_s"] * (target / sizes[-1]) ** growth[s] for s, c in largest.items()}
        mapped = sum(v for s, v in cpu.items() if s in MAPPED_STEPS)
        driver = sum(v for s, v in cpu.items() if s not in MAPPED_STEPS)
        table[str(target)] = {
            "driver_core_hours": round(driver / 3600, 1),
            "mapped_core_hours": round(mapped / 3600, 1),
            "hours_on_machines": {
                str(m): round((mapped / (m * CORES) + driver / CORES) / 3600, 1) for m in MACHINES
            },
            "hours_if_every_step_mapped": {
                str(m): round((mapped + driver) / (m * CORES) / 3600, 1) for m in MACHINES
            },
        }
    return {"fitted_on": sizes[-2:], "growth_exponents": growth, "projected": table}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.curve", description=__doc__)
    parser.add_argument("--originals", default="1000,4000", help="corpus sizes (originals)")
    parser.add_argument("--executors", default=",".join(EXECUTORS), help="local, ray or both")
    parser.add_argument("--scratch", type=Path, help="keep the builds here (default: removed)")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.originals.split(",")]
    executors = tuple(args.executors.split(","))
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(sizes, args.scratch, executors)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-scale-", dir="/tmp") as scratch:
            found = measure(sizes, Path(scratch), executors)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
