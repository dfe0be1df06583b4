"""``python -m bench.scale.driver_slope [--originals 4000,8000] [--top 6] [--scratch S [--warm]]``:
the build's driver memory per source file, the content checks included, as the slope between
two corpus sizes.

A whole cold build (``curate``, local executor, two worker processes; with ``--warm``, a
second build into the builds kept in ``--scratch``, their caches read) of the corpus in the
archive's own layout (``corpus_zip(N, all_copies_among_originals=False)``) at each size, each
in its own process with the driver under ``tracemalloc`` (one frame a block). The workers
are spawned, not forked: a fork while another thread held tracemalloc's lock (a thread that
ends, for one, frees its state under that lock without the interpreter's) left a worker
waiting for that lock for ever (CPython 3.11, a traced process only). A spawned worker is a
new, untraced interpreter; a traced build that forked all the same is refused
(``TracedFork``). For each step: what the driver held when the step began, the step's peak
above that, and what it held once the step's products replaced
the earlier ones (the next step's start); the driver's traced peak over the whole build, and
its peak RSS (``VmHWM``, reset per step through ``/proc/self/clear_refs``; tracing's own
tables are in it and reported beside it). With ``--top N``, the N source lines holding the
most at each step's highest traced point (a snapshot whenever the step's traced memory grows
by a quarter).

Bytes per source file are the SLOPE between the two sizes, ``(b - a) / (files_b - files_a)``:
what the driver adds per file as the archive grows. The FIXED part, ``a - slope * files_a``,
is what it holds whatever the size (the interpreter, the imported libraries, faiss's and
OpenCV's tables, the step's fixed buffers); the goal of ``docs/scale.md`` is on the slope.

With ``--mapped``, the shortlist's jobs go to the workers at every size, as they do in an
archive of millions of voting descriptors: ``IN_PROCESS_ROWS`` set to 0, its films filed in
batches of ``MAPPED_FILMS_PER_BATCH`` and its counting split into parts of
``MAPPED_ROWS_PER_COUNT`` voting descriptors (a lone job runs in the driver, and below
``FILMS_PER_BATCH`` films or ``ROWS_PER_COUNT`` descriptors there is one). That is the regime
an archive grows into, which corpora small enough to trace twice do not reach; the votes are
the same.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common.corpus import CORPUS_DIR, corpus_source, corpus_zip
from bench.common.measure import child_json, python_child, run_measured

# Both past the fixed samples' ceilings (the vocabulary's 1,024 films, the projection's 2,048:
# 4,000 originals keep about 3,800), so that a slope is a cost per file, not a sample growing.
SIZES = (4000, 8000)
REPO = Path(__file__).parents[2]
GROWTH_TO_SNAPSHOT = 1.25  # a step's snapshot is retaken when its traced memory grows by this
SAMPLE_SECONDS = 0.2
MAPPED_FILMS_PER_BATCH = 128  # several filing jobs at 1,000 originals already
MAPPED_ROWS_PER_COUNT = 20_000  # and several counting parts
MIB = 2**20


def _rss_peak_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))


def _reset_rss_peak() -> None:
    """Start the process's peak RSS afresh (Linux: ``5`` to ``clear_refs``); where that is
    refused, the peak stays the process's own so far."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _top_lines(
    peak: tracemalloc.Snapshot, start: tracemalloc.Snapshot, top: int
) -> list[dict[str, Any]]:
    """The ``top`` source lines whose held memory grew the most from ``start`` to ``peak``
    (imports left out: they are the fixed part)."""
    left_out = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen*"),
    ]
    growth = peak.filter_traces(left_out).compare_to(start.filter_traces(left_out), "lineno")
    lines = []
    for stat in sorted(growth, key=lambda s: -s.size_diff)[:top]:
        frame = stat.traceback[0]
        where = Path(frame.filename)
        name = where.relative_to(REPO) if where.is_relative_to(REPO) else Path(*where.parts[-3:])
        lines.append(
            {"line": f"{name}:{frame.lineno}", "grew_b": stat.size_diff, "blocks": stat.count_diff}
        )
    return lines


class TracedFork(RuntimeError):
    """A traced driver forked: such a build can hang, so its figures are not reported."""


class _PeakSnapshots:
    """A thread that snapshots the traces whenever a step's traced memory above its start
    passes the last snapshot's by a quarter (and 1 MiB): the last one a step took is near
    its peak, compared with a snapshot at its start."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.start_level = self.level = 0
        self.start: tracemalloc.Snapshot | None = None
        self.snapshot: tracemalloc.Snapshot | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def begin(self) -> None:
        with self.lock:
            self.start, self.snapshot = tracemalloc.take_snapshot(), None
            self.start_level = self.level = tracemalloc.get_traced_memory()[0]

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            snapshot, self.snapshot = self.snapshot, None
            start = self.start
        return _top_lines(snapshot, start, self.top) if snapshot and start else []

    def _watch(self) -> None:
        while not self.done.wait(SAMPLE_SECONDS):
            current = tracemalloc.get_traced_memory()[0]
            above = self.level - self.start_level
            if current > self.level + max(MIB, (GROWTH_TO_SNAPSHOT - 1) * above):
                with self.lock:
                    self.snapshot, self.level = tracemalloc.take_snapshot(), current


def traced_build(archive: Path, build: Path, top: int, mapped: bool = False) -> dict[str, Any]:
    """One cold build of ``archive`` into ``build`` with this process traced, per step
    (``mapped``: the shortlist's jobs in the workers whatever the number of descriptors)."""
    from curation.chain.executors import LocalExecutor
    from curation.chain.runner import Settings, curate
    from curation.features import vote_shards

    source = corpus_source(archive)  # extracted once beside the archive, not traced
    steps: list[dict[str, Any]] = []
    watcher = _PeakSnapshots(top) if top else None

    def traced(name: str, function: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> dict[str, Any]:
            gc.collect()
            start = tracemalloc.get_traced_memory()[0]
            if steps:
                steps[-1]["held_after_b"] = start
            tracemalloc.reset_peak()
            _reset_rss_peak()
            if watcher:
                watcher.begin()
            written = function(*args, **kwargs)
            peak = tracemalloc.get_traced_memory()[1]
            steps.append(
                {
                    "step": name,
                    "start_b": start,
                    "peak_above_start_b": peak - start,
                    "peak_rss_kib": _rss_peak_kib(),
                    **({"top_at_peak": watcher.take()} if watcher else {}),
                }
            )
            return written

        return step

    class Traced(LocalExecutor):
        def run(self, chain: Sequence[Any], run: Any) -> Any:
            wrapped = [dataclasses.replace(s, function=traced(s.name, s.function)) for s in chain]
            return super().run(wrapped, run)

    multiprocessing.set_start_method("spawn", force=True)  # the pools' workers
    forks: list[int] = []
    os.register_at_fork(before=lambda: forks.append(1))
    tracemalloc.start(1)
    if watcher:
        watcher.thread.start()
    started = time.perf_counter()
    in_process_rows = 0 if mapped else vote_shards.IN_PROCESS_ROWS
    rows_per_count = MAPPED_ROWS_PER_COUNT if mapped else vote_shards.ROWS_PER_COUNT
    films_per_batch = MAPPED_FILMS_PER_BATCH if mapped else vote_shards.FILMS_PER_BATCH
    with (
        mock.patch.object(vote_shards, "IN_PROCESS_ROWS", in_process_rows),
        mock.patch.object(vote_shards, "ROWS_PER_COUNT", rows_per_count),
        mock.patch.object(vote_shards, "FILMS_PER_BATCH", films_per_batch),
    ):
        outcome = curate(source, build, Settings(), executor=Traced(2))
    wall = time.perf_counter() - started
    gc.collect()
    steps[-1]["held_after_b"] = tracemalloc.get_traced_memory()[0]
    if watcher:
        watcher.done.set()
    return {
        "shortlist_jobs": "mapped" if mapped else "as built",
        "source_files": len(outcome.records),
        "wall_s": round(wall, 1),
        "traced_peak_b": max(s["start_b"] + s["peak_above_start_b"] for s in steps),
        "peak_rss_kib": max(s["peak_rss_kib"] for s in steps),
        "tracing_tables_b": tracemalloc.get_tracemalloc_memory(),
        "driver_forks": len(forks),
        "steps": steps,
    }


def slope(small: dict[str, Any], large: dict[str, Any]) -> dict[str, Any]:
    """Bytes per source file between two builds, and the fixed part, per step and overall."""
    files = large["source_files"] - small["source_files"]

    def fit(a: float, b: float) -> dict[str, float]:
        per_file = (b - a) / files
        return {
            "per_file_b": round(per_file),
            "fixed_b": round(a - per_file * small["source_files"]),
        }

    steps = {}
    for one, other in zip(small["steps"], large["steps"], strict=True):
        steps[one["step"]] = {
            key.removesuffix("_b"): fit(one[key], other[key])
            for key in ("start_b", "peak_above_start_b", "held_after_b")
        } | {"peak_rss": fit(1024 * one["peak_rss_kib"], 1024 * other["peak_rss_kib"])}
    overall = {
        "traced_peak": fit(small["traced_peak_b"], large["traced_peak_b"]),
        "peak_rss": fit(1024 * small["peak_rss_kib"], 1024 * large["peak_rss_kib"]),
    }
    return {"overall": overall, "steps": steps}


def measure(
    originals: Sequence[int],
    scratch: Path,
    top: int = 0,
    corpus_dir: Path = CORPUS_DIR,
    mapped: bool = False,
    warm: bool = False,
) -> dict[str, Any]:
    """Each size built once in its own traced process; the slope between the first two. A
    build left in ``scratch`` by an earlier run is removed first, unless ``warm``: then it is
    built again, its caches read, as a curator's next build is."""
    builds = {}
    for n in originals:
        archive = corpus_zip(n, folder=corpus_dir, all_copies_among_originals=False)
        corpus_source(archive)  # the extraction, outside the measured child
        build = scratch / f"build-{n}"
        if not warm:
            shutil.rmtree(build, ignore_errors=True)
        child = python_child(
            "bench.scale.driver_slope", "--one", str(archive), str(build),
            "--top", str(top), *(["--mapped"] if mapped else []),
        )  # fmt: skip
        builds[str(n)] = {"originals": n, **child_json(run_measured(child))}
        if builds[str(n)]["driver_forks"]:
            raise TracedFork(
                f"The traced build of {archive} forked its driver, which can hang under "
                "tracemalloc: its workers must be spawned."
            )
        print(json.dumps({"originals": n, **builds[str(n)]}), file=sys.stderr, flush=True)
    sizes = [str(n) for n in originals]
    found: dict[str, Any] = {"builds": builds, "load_at_end": os.getloadavg()[0]}
    if len(sizes) > 1:
        found["slope"] = slope(builds[sizes[0]], builds[sizes[1]])
    return found


def part(originals: Sequence[int], corpus_dir: Path) -> dict[str, Any]:
    """``make bench``'s part ``driver_memory``: ``measure`` in a scratch folder, removed after,
    with the shortlist's jobs mapped (``--mapped``: the regime the goal is about)."""
    with tempfile.TemporaryDirectory(prefix="pericurate-driver-", dir="/tmp") as scratch:
        found = measure(originals, Path(scratch), corpus_dir=corpus_dir, mapped=True)
        return {"driver_memory": found}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.driver_slope", description=__doc__)
    parser.add_argument("--originals", default=",".join(map(str, SIZES)), help="two corpus sizes")
    parser.add_argument("--top", type=int, default=0, help="source lines to list at each peak")
    parser.add_argument("--scratch", type=Path, help="keep the builds here (default: removed)")
    parser.add_argument(
        "--mapped", action="store_true", help="the shortlist's jobs in the workers at every size"
    )
    parser.add_argument(
        "--warm", action="store_true", help="build again into the builds kept in --scratch"
    )
    parser.add_argument(
        "--one", nargs=2, type=Path, metavar=("ARCHIVE", "BUILD"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(traced_build(args.one[0], args.one[1], args.top, args.mapped)))
        return
    sizes = [int(n) for n in args.originals.split(",")]
    if args.warm and not args.scratch:
        parser.error("--warm builds again into the builds of --scratch; name that folder")
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(sizes, args.scratch, args.top, mapped=args.mapped, warm=args.warm)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-driver-", dir="/tmp") as scratch:
            found = measure(sizes, Path(scratch), args.top, mapped=args.mapped)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
