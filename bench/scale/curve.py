"""``python -m bench.scale.curve [--originals 1000,4000] [--rounds R]``: the scale curve.

A cold ``pericurate build`` of the corpus in the archive's own layout
(``corpus_zip(N, all_copies_among_originals=False)``) at each size, on this machine
(``--executor local``) and on a two-node Ray cluster on this machine
(``bench.scale.ray_cluster``, one CPU per node, joined through ``RAY_ADDRESS``): wall time, the
driver's peak RSS, each step's time (``work/times.json``), the machine's CPU seconds and the
share of its time the host took as steal (``psutil.cpu_times``, before and after), the CPU a
fixed unit of the build's own work took, sampled on each core all through the build
(``bench.scale.reference``: the machine's speed at the time, which steal does not show; the
samples' own CPU is taken off the machine's), locally the share of the machine's CPU spent
outside the build's processes (anything else running spoils the figures), the load average
before and after, and whether the Ray build's outputs are byte-identical to the local one's.
With ``--rounds R`` the sizes are built in turn R times (round 1 at every size, then round 2,
...), so a slower spell of the host falls on every size alike; each size reports its median
round. Then whether the cost per original is flat across the sizes, in units of the reference
work (and, beside it, in the machine's CPU milliseconds), and a projection to 100,000 and
1,000,000 originals on M machines, labelled as such.

The download (extraction) is not timed: it is the same on both executors. On Ray, the steps'
CPU and the peak RSS are the driver's alone (the nodes' workers are not its children); the
machine's CPU counts the nodes too, so it is the figure the two executors share.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.common.corpus import CORPUS_DIR, corpus_path, corpus_zip
from bench.common.measure import run_measured
from bench.common.splits_bench import pericurate
from bench.scale.ray_cluster import two_nodes
from bench.scale.reference import Speedometer
from curation.core.build_lock import holding_build_folder
from curation.source.extract import MAX_MEMBERS

OUTPUTS = ("manifest.parquet", "clusters.parquet", "agreement.parquet", "curation.json")
# the steps with their work through run.map (lookalikes reads the frame step's pairs); on two
# nodes at 64,000 originals the driver did 6 % of the visits step's CPU, the nodes the rest
MAPPED_STEPS = ("index", "hash", "same-picture", "keeper", "visits")
PROJECTED = (100_000, 1_000_000)
MACHINES = (1, 4, 16)
EXECUTORS = ("local", "ray")
STORE_MIB = 2048  # each node's object store: the 16k corpus's features are about 0.4 GB
CORES = 2  # this machine's, and each projected machine's (a projection: scale by cores)
FLAT = 0.15  # the goal: the highest cost per original at most 15 % over the lowest
UNPACKED = ".unpacked"  # written in a corpus folder once it is wholly unpacked


def _outputs(build: Path) -> dict[str, str]:
    """Each output's sha256, read in blocks: at 64,000 originals the dataset's files are
    several GB, too much to hold for two builds beside a running cluster."""
    files = [build / n for n in OUTPUTS] + sorted((build / "dataset" / "data").iterdir())
    digests = {}
    for file in files:
        with file.open("rb") as read:
            digests[str(file.relative_to(build))] = hashlib.file_digest(read, "sha256").hexdigest()
    return digests


def unpacked(archive: Path) -> Path:
    """The folder ``as_source`` unpacks ``archive`` to."""
    return archive.parent / f"{archive.stem}-folder"


def as_source(archive: Path) -> Path:
    """The corpus as ``download`` takes it: the zip, or, past the extraction's member limit
    (``MAX_MEMBERS``, its zip-bomb guard: 16,000 originals are about 70,000 members), the
    folder it unpacks to, made once beside it, as a user gives a source that large."""
    with zipfile.ZipFile(archive) as zipped:
        if len(zipped.infolist()) <= MAX_MEMBERS:
            return archive
        folder = unpacked(archive)
        done = folder / UNPACKED
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            zipped.extractall(folder)  # the project's own corpus, not an untrusted archive
            done.touch()
    return folder


def source_of(originals: int, corpus_dir: Path) -> Path:
    """The corpus of ``originals`` as ``download`` takes it. A wholly unpacked folder is taken
    without its zip, which may then be removed: at 64,000 originals each is 22 GB, and
    writing the zip again takes over an hour."""
    archive = corpus_path(originals, folder=corpus_dir, all_copies_among_originals=False)
    if (unpacked(archive) / UNPACKED).is_file():
        return unpacked(archive)
    return as_source(corpus_zip(originals, folder=corpus_dir, all_copies_among_originals=False))


@dataclass(frozen=True)
class MachineCpu:
    """This machine's CPU seconds over all its cores: busy (user, nice, system, interrupts),
    steal (the host ran something else while a core waited) and all of its time."""

    busy: float
    steal: float
    total: float

    @classmethod
    def now(cls) -> MachineCpu:
        t = psutil.cpu_times()
        busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
        steal = getattr(t, "steal", 0.0)  # Linux's; elsewhere none is reported
        waiting = t.idle + getattr(t, "iowait", 0.0)
        return cls(busy, steal, busy + steal + waiting)

    def __sub__(self, before: MachineCpu) -> MachineCpu:
        return MachineCpu(
            self.busy - before.busy, self.steal - before.steal, self.total - before.total
        )


def _cold_build(
    source: Path, build: Path, executor: str, env: dict[str, str], originals: int
) -> dict:
    if build.is_dir():  # an earlier build; refused while another run still uses the folder
        with holding_build_folder(build, "the scale curve's cold build"):
            shutil.rmtree(build)
    download = ("download", str(source), "--build", str(build))
    run_measured(pericurate(sys.executable, *download, "--lock", str(build / "source.lock")))
    load_before = os.getloadavg()[0]
    command = ("build", "--build", str(build), "--no-fail-on-rejected", "--executor", executor)
    before = MachineCpu.now()
    with _environment(env), Speedometer() as speed:
        built = run_measured(pericurate(sys.executable, *command))
    spent = MachineCpu.now() - before
    busy = spent.busy - speed.cpu_s  # the speedometer's samples are not the build's work
    times = json.loads((build / "work" / "times.json").read_text())
    steps = {s["step"]: {"wall_s": s["wall_s"], "cpu_s": s["cpu_s"]} for s in times["steps"]}
    found = {
        "wall_s": built.wall_s,
        "peak_rss_mib": built.peak_rss_mib,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "steal_share": round(spent.steal / spent.total, 3) if spent.total > 0 else 0.0,
        "steps": steps,
        "source_images": times["source_images"],
        "ms_per_original": round(1000 * built.wall_s / originals, 2),
        "cpu_ms_per_original": round(1000 * sum(s["cpu_s"] for s in steps.values()) / originals, 2),
        "machine_cpu_ms_per_original": round(1000 * busy / originals, 2),
        "reference": speed.summary(),
    }
    if executor == "local" and busy > 0:  # the build's own processes are the relay's children
        found["outside_share"] = round(max(0.0, busy - built.cpu_s) / busy, 3)
    if speed.unit_ms > 0:
        found["reference_units_per_original"] = round(1000 * busy / originals / speed.unit_ms, 4)
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
    rounds: int = 1,
) -> dict:
    """Each size built locally, then on the two-node cluster, ``rounds`` times in turn; a Ray
    build is compared with the local build of its size in ``scratch`` (this run's or an
    earlier one's). The corpora are written in ``corpus_dir``."""
    sources = {n: source_of(n, corpus_dir) for n in originals}
    runs: dict[tuple[int, str], list[dict]] = defaultdict(list)
    if "local" in executors:
        for _ in range(rounds):
            for n in originals:
                built = _cold_build(sources[n], scratch / f"local-{n}", "local", {}, n)
                runs[n, "local"].append(built)
    if "ray" in executors:
        with two_nodes(store_mib=STORE_MIB) as cluster:
            keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
            ray_env = {k: cluster.env[k] for k in keys}
            local = {n: scratch / f"local-{n}" for n in originals}
            expected = {n: _outputs(local[n]) for n in originals if local[n].is_dir()}
            for _ in range(rounds):
                for n in originals:
                    build = scratch / f"ray-{n}"
                    built = _cold_build(sources[n], build, "ray", ray_env, n)
                    same = _outputs(build) == expected[n] if n in expected else None
                    runs[n, "ray"].append({**built, "outputs_identical": same})
    rows = {
        str(n): {e: median_round(runs[n, e]) for e in EXECUTORS if runs[n, e]} for n in originals
    }
    local_rows = {n: r for n, r in rows.items() if "local" in r}
    return {
        "sizes": rows,
        "flatness": flatness(rows),
        "projection": projection(local_rows) if local_rows else None,
    }


def cost_measure(runs: list[dict]) -> str:
    """What a cost per original is read in: units of the reference work when it was sampled
    through every build, else the machine's CPU milliseconds (results recorded before)."""
    if all("reference_units_per_original" in run for run in runs):
        return "reference_units_per_original"
    return "machine_cpu_ms_per_original"


def median_round(runs: list[dict]) -> dict:
    """The round with the median cost per original (``cost_measure``; the lower of the middle
    two), with every round's cost, reference and steal beside it; a Ray size's outputs are
    identical only if every round's were."""
    measure = cost_measure(runs)
    ranked = sorted(runs, key=lambda run: run[measure])
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    keys = ("machine_cpu_ms_per_original", "cpu_ms_per_original", "steal_share", "wall_s")
    keys += ("reference", "reference_units_per_original", "outside_share")
    chosen["rounds"] = [{k: run[k] for k in keys if k in run} for run in runs]
    if "outputs_identical" in chosen:
        seen = [run["outputs_identical"] for run in runs]
        chosen["outputs_identical"] = None if None in seen else all(seen)
    return chosen


def flatness(rows: dict[str, dict]) -> dict:
    """Per executor built at more than one size: the cost per original at each size (its
    median round) in the measure judged (``cost_measure``: units of the reference work when
    it was sampled through every build), the highest over the lowest, and whether that is within
    ``FLAT``; beside it the same in the machine's CPU milliseconds."""
    found = {}
    for executor in EXECUTORS:
        runs = {n: r[executor] for n, r in rows.items() if executor in r}
        if len(runs) < 2:
            continue
        judged = cost_measure(list(runs.values()))
        cost = {n: run[judged] for n, run in runs.items()}
        machine = {n: run["machine_cpu_ms_per_original"] for n, run in runs.items()}
        if min(cost.values()) > 0 and min(machine.values()) > 0:
            found[executor] = {
                "judged_on": judged,
                "cost": cost,
                "highest_over_lowest": _spread(cost),
                "flat": _spread(cost) <= 1 + FLAT,
                "machine_cpu_ms_per_original": machine,
                "machine_cpu_highest_over_lowest": _spread(machine),
            }
    return found


def _spread(cost: dict[str, float]) -> float:
    return round(max(cost.values()) / min(cost.values()), 3)


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
    parser.add_argument("--rounds", type=int, default=1, help="builds of every size, in turn")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.originals.split(",")]
    executors = tuple(args.executors.split(","))
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(sizes, args.scratch, executors, rounds=args.rounds)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-scale-", dir="/tmp") as scratch:
            found = measure(sizes, Path(scratch), executors, rounds=args.rounds)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
