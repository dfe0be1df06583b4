"""``python -m bench.same_picture.step_cost``: where the same-picture step's CPU goes.

``step BUILD`` runs the chain of the build folder ``BUILD`` (a ``pericurate build`` of a
corpus, e.g. the one ``bench.scale.cost`` leaves in
``bench/corpus/sample-4000-seed7-cost/current``) through the hash step in a scratch folder
(the hashes come from the hash step as a cold build makes them), then the same-picture step
with empty caches, on this machine's worker processes. Every per-file map the step makes is
timed by the function it maps (CPU of this process and of the workers it reaped, and wall),
and what is left is the driver's own work (the candidate and feature shortlists, the
keeper's rules). Prints one JSON object.

``frames`` measures the frame check alone (``curation.same_picture.frame_step.frame_job``) on
a folder of real films with altered copies (``bench.same_picture.frame_folder``): every pair
the feature shortlist and the crop path propose, on this machine's worker processes. It prints
the check's CPU (this process and the workers it reaped) and wall time, how many pairs reached
the pixels and were confirmed, and a digest of every comparison, so that two runs of two
versions of the check on one folder show whether they measured the same figures; with
``--profile``, the check runs in this process under cProfile (CPU time) and its costliest
functions are listed. With ``--against CHECKOUT``, the frame check of that checkout (its
``curation``, this bench) and of this one run in turn, ``--rounds`` times, on one folder:
their CPU, and whether every comparison came out the same. Skipped with one sentence when
the real films are absent.

    uv run --frozen python -m bench.same_picture.step_cost step BUILD
    uv run --frozen python -m bench.same_picture.step_cost frames --films 4 --archive 3
    uv run --frozen python -m bench.same_picture.step_cost frames --against ../old --rounds 2
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common.real_films import REAL_FILMS
from bench.same_picture.frame_folder import folder_of_copies, shortlisted_jobs
from curation.chain.runner import curate
from curation.chain.settings import Settings
from curation.core.parallel import ordered_map
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.keeper.step import keep_one_per_group
from curation.same_picture.detect import Progress, find_same_pictures
from curation.same_picture.frame_step import frame_job
from curation.same_picture.pixel_cache import ComparisonCache
from curation.source.source import Source


def _cpu() -> float:
    own, reaped = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


class _Bar:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def measure(build: Path) -> dict[str, Any]:
    source = Source.load(build / "work" / "source.json")
    cpu: Counter[str] = Counter()
    wall: Counter[str] = Counter()

    def timed(
        function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 16
    ) -> Iterator[Any]:
        started, clock = _cpu(), time.perf_counter()
        results = list(ordered_map(function, jobs, 0, chunksize))
        cpu[function.__name__] += _cpu() - started
        wall[function.__name__] += time.perf_counter() - clock
        return iter(results)

    with tempfile.TemporaryDirectory(prefix="near-identical-cost-") as scratch:
        out = Path(scratch)
        hashed = curate(source, out, Settings(), stop_after="hash")
        (out / "cache").mkdir(exist_ok=True)
        started, clock = _cpu(), time.perf_counter()
        records = hashed.products["records"]
        hashes = hashed.products["hashes"]
        cache = ComparisonCache(out / "cache" / "pixels.parquet")
        progress = Progress(lambda n: None, lambda n: None, lambda name, total: _Bar())
        confirmed = find_same_pictures(
            source.root,
            records,
            hashes,
            SAME_PICTURE_RADIUS,
            cache,
            timed,
            progress,  # type: ignore[arg-type]
        )
        keep_one_per_group(source.root, records, hashes, confirmed, cache, timed)  # type: ignore[arg-type]
        total_cpu, total_wall = _cpu() - started, time.perf_counter() - clock
        shutil.rmtree(out / "cache")
    return {
        "build": str(build),
        "cpu_s": round(total_cpu, 1),
        "wall_s": round(total_wall, 1),
        "maps": {
            name: {"cpu_s": round(cpu[name], 1), "wall_s": round(wall[name], 1)} for name in cpu
        },
        "driver_outside_maps_cpu_s": round(total_cpu - sum(cpu.values()), 1),
    }


def _costliest(profile: cProfile.Profile, count: int) -> list[str]:
    """The ``count`` functions with the most own time: "own s, calls, function"."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:count]
    return [
        f"{own:.2f} s, {calls} calls, {Path(file).name}:{line}({name})"
        for (file, line, name), (_, calls, own, _, _) in rows
    ]


def measure_frames(
    folder: Path, films: int, archive: int, workers: int, profile: bool = False
) -> dict[str, Any]:
    """The frame check's cost on the folder of real films with altered copies at ``folder``
    (made there first when absent); see the module docstring."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    paths = folder_of_copies(folder, films, archive)
    jobs = shortlisted_jobs(paths, workers)
    started, clock = _cpu(), time.perf_counter()
    if profile:
        profiler = cProfile.Profile(time.process_time)
        results = profiler.runcall(lambda: [frame_job(job) for job in jobs])
    else:
        results = list(ordered_map(frame_job, jobs, workers, chunksize=4))
    cpu, wall = _cpu() - started, time.perf_counter() - clock
    digest = hashlib.sha256(repr(results).encode()).hexdigest()
    found: dict[str, Any] = {
        "measured": True,
        "folder": str(folder),
        "films": len(paths),
        "pairs": len(jobs),
        "pairs_compared_pixels": sum(1 for r in results if r.overlap_a > 0),
        "confirmed": sum(1 for r in results if r.same_picture),
        "comparisons_sha256": digest,
        "frame_check_cpu_s": round(cpu, 2),
        "frame_check_wall_s": round(wall, 2),
        "workers": 1 if profile else workers,
    }
    if profile:
        found["costliest"] = _costliest(profiler, 15)
    return found


REPO = Path(__file__).resolve().parents[2]
# A child measuring the frame check of the checkout at argv[1] with this checkout's bench:
# that checkout's ``curation`` is imported first, so every later import of it is that one.
_CHILD = (
    "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
    "import curation; sys.path.pop(0); "
    "from bench.same_picture.step_cost import measure_frames; "
    "print(json.dumps(measure_frames(Path(sys.argv[2]), *map(int, sys.argv[3:]))))"
)


def frames_against(
    against: Path, folder: Path, films: int, archive: int, workers: int, rounds: int
) -> dict[str, Any]:
    """The frame check of the checkout ``against`` (the baseline) and of this one on one
    folder, in one run, interleaved (baseline, current, baseline, current, ...), each run in
    its own child process, so that other load on the machine weighs on both sides alike."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    folder_of_copies(folder, films, archive, workers)
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "current": []}
    for _ in range(rounds):
        for side, code in (("baseline", against), ("current", REPO)):
            numbers = [str(n) for n in (films, archive, workers)]
            child = subprocess.run(
                [sys.executable, "-c", _CHILD, str(code), str(folder), *numbers],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[side].append(json.loads(child.stdout.splitlines()[-1]))
    cpu = {side: [r["frame_check_cpu_s"] for r in found] for side, found in runs.items()}
    digests = {r["comparisons_sha256"] for found in runs.values() for r in found}
    return {
        "measured": True,
        "baseline": str(against),
        "folder": str(folder),
        "pairs": runs["current"][0]["pairs"],
        "pairs_compared_pixels": runs["current"][0]["pairs_compared_pixels"],
        "frame_check_cpu_s": cpu,
        "median_cpu_s": {side: statistics.median(values) for side, values in cpu.items()},
        "current_over_baseline": round(
            statistics.median(cpu["current"]) / statistics.median(cpu["baseline"]), 3
        ),
        "same_comparisons": len(digests) == 1,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.same_picture.step_cost", description=__doc__
    )
    parts = parser.add_subparsers(dest="part", required=True)
    step = parts.add_parser("step", help="the whole same-picture step on a build folder")
    step.add_argument("build", type=Path, help="a build folder (its work/source.json)")
    frames = parts.add_parser("frames", help="the frame check on real films with copies")
    frames.add_argument("--films", type=int, default=4, help="real films, upscaled")
    frames.add_argument("--archive", type=int, default=3, help="archive-sized real films")
    frames.add_argument("--folder", type=Path, help="where the folder is (made when absent)")
    frames.add_argument("--workers", type=int, default=2)
    frames.add_argument("--profile", action="store_true", help="in this process, profiled")
    frames.add_argument("--against", type=Path, help="a baseline checkout, interleaved with this")
    frames.add_argument("--rounds", type=int, default=2, help="interleaved rounds (--against)")
    args = parser.parse_args(argv)
    if args.part == "step":
        print(json.dumps(measure(args.build), indent=1))
        return
    if args.against is not None:
        with tempfile.TemporaryDirectory(prefix="frame-cost-") as scratch:
            folder = args.folder or Path(scratch)
            found = frames_against(
                args.against, folder, args.films, args.archive, args.workers, args.rounds
            )
    elif args.folder is not None:
        found = measure_frames(args.folder, args.films, args.archive, args.workers, args.profile)
    else:
        with tempfile.TemporaryDirectory(prefix="frame-cost-") as scratch:
            found = measure_frames(
                Path(scratch), args.films, args.archive, args.workers, args.profile
            )
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
