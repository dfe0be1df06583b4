"""``python -m bench.same_picture.driver_memory FOLDER``: the same-picture step's peak memory in
the driver (the process that runs the step, not its workers), per film, cold and rerun.

The films of ``FOLDER`` (every JPEG below it, as ``curation.api`` reads a folder) are read and
hashed first, untraced; then ``find_same_pictures`` (the step: the whole-frame check, the local
features, the feature shortlist and the frame check) runs with its caches in a fresh folder
(cold), and again on the same caches (rerun), each under ``tracemalloc`` (numpy's arrays are
traced too), the peak taken apart by phase, each above what the driver held when the phase
began: the whole-frame check (before the frame step), the feature shortlist
(``frame_step.stored_pair_votes``; what it hands back, the votes of every pair, is
``retained`` and counts in the frame step's peak), and the rest of the frame step. Workers
are separate processes (``--workers``, 2 by default): their memory is not the driver's and is
not counted. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from curation.api import _read_folder
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.same_picture import detect, frame_step
from curation.same_picture.detect import Progress, find_same_pictures
from curation.same_picture.pixel_cache import ComparisonCache


class _Quiet:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


class Phases:
    """The traced peak of each phase above what was held when it began (a phase's peak
    starts when it does: ``reset_peak``; the caller's phase resumes after a nested one)."""

    def __init__(self) -> None:
        self.peaks: dict[str, int] = {}
        self.retained: dict[str, int] = {}  # what a phase leaves held for the next
        self.whole = 0  # the step's own peak
        self.started: list[tuple[str, int]] = [("whole-frame check", 0)]

    def close(self) -> None:
        phase, held = self.started[-1]
        peak = tracemalloc.get_traced_memory()[1]
        self.peaks[phase] = max(self.peaks.get(phase, 0), peak - held)
        self.whole = max(self.whole, peak)
        tracemalloc.reset_peak()

    def wrap(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, its peak counted as ``phase``'s."""

        def phased(*args: Any, **kwargs: Any) -> Any:
            self.close()
            self.started.append((phase, tracemalloc.get_traced_memory()[0]))
            try:
                return function(*args, **kwargs)
            finally:
                self.close()
                self.retained[phase] = tracemalloc.get_traced_memory()[0] - self.started.pop()[1]

        return phased


@contextmanager
def _phased() -> Iterator[Phases]:
    phases = Phases()
    frame_pairs, shortlist = detect.frame_pairs, frame_step.stored_pair_votes
    detect.frame_pairs = phases.wrap("frame step without the shortlist", frame_pairs)
    frame_step.stored_pair_votes = phases.wrap("feature shortlist", shortlist)
    tracemalloc.start()
    try:
        yield phases
        phases.close()
    finally:
        tracemalloc.stop()
        detect.frame_pairs, frame_step.stored_pair_votes = frame_pairs, shortlist


def _peak(folder: Path, cache: Path, workers: int) -> dict[str, Any]:
    films = _read_folder(folder, workers)
    quiet = _Quiet()
    progress = Progress(quiet.total, quiet.advance, lambda _what, _total: quiet)
    with _phased() as phases:
        confirmed = find_same_pictures(
            films.root,
            films.records,
            films.hashes,
            SAME_PICTURE_RADIUS,
            ComparisonCache(cache / "pixels.parquet"),
            films.map,
            progress,
        )
    count = len(films.records)
    return {
        "films": count,
        "pairs": len(confirmed.pairs),
        "peak_bytes_per_film": round(phases.whole / count),
        "peak_above_phase_start_bytes_per_film": {
            phase: round(peak / count) for phase, peak in phases.peaks.items()
        },
        "retained_after_phase_bytes_per_film": {
            phase: round(held / count) for phase, held in phases.retained.items()
        },
    }


def measure(folder: Path, workers: int) -> dict[str, object]:
    """The cold and the rerun peaks of the step on ``folder``'s films."""
    with tempfile.TemporaryDirectory(prefix="driver-memory-") as scratch:
        cold = _peak(folder, Path(scratch), workers)
        rerun = _peak(folder, Path(scratch), workers)
    return {
        "folder": str(folder),
        "films": cold["films"],
        "confirmed_pairs": cold["pairs"],
        "workers": workers,
        "cold": cold,
        "rerun": rerun,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.same_picture.driver_memory", description=__doc__
    )
    parser.add_argument("folder", type=Path, help="a folder of JPEG films")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.folder, args.workers), indent=2))


if __name__ == "__main__":
    main()
