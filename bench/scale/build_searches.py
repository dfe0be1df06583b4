"""The build's searches by hash in every orientation, at scale: the same-picture step's
candidates (``curation.same_picture.candidates.candidate_pairs``: every orientation and the
negatives, at the same-picture radius) and the look-alike step's links
(``curation.lookalikes.components.lookalike_links``: every orientation, at the look-alike
distance), over correlated synthetic codes (``bench.search.codes``, copies planted in each view
as ``bench.scale.audit_turned`` plants them).

``--in-process`` searches in this process alone (the build's way until its steps ran the
search on the executor: the driver, while a cluster's workers waited); otherwise a table of the
multi-index a job in ``--workers`` processes, the codes in a temporary folder (the build's way
now, ``Run.scratch``). Prints, for each search, the driver's own CPU seconds, the CPU of it and
its workers, wall seconds, the rows found and their sha256 (the same for both ways when the
candidates and links are the same). With ``--traced`` the driver runs under ``tracemalloc``
and each search's figures add its traced peak above its start (the driver's own Python and
numpy allocations; times then say little).

``python -m bench.scale.build_searches --films 200000 [--in-process] [--traced]`` prints the
figures as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.scale.audit_closest import _cpu_seconds
from bench.scale.audit_turned import SEED, _plant
from bench.search.codes import correlated_codes
from curation.core.parallel import LocalMap
from curation.core.vocabulary import LOOKALIKE_DISTANCE, SAME_PICTURE_RADIUS
from curation.hashes.hash_films import VIEWS, Hashes
from curation.lookalikes.components import lookalike_links
from curation.same_picture.candidates import candidate_pairs


def _hashes(films: int) -> Hashes:
    """``films`` films' codes in every view, copies planted in each."""
    codes = {view: correlated_codes(films, SEED + n) for n, view in enumerate(VIEWS)}
    _plant(codes, list(VIEWS))
    by_view = np.stack([codes[view] for view in VIEWS], axis=1)
    return Hashes([f"film-{n:07d}" for n in range(films)], by_view)


def _timed(search: Callable[[], list[Any]]) -> dict[str, Any]:
    """One search's figures: the driver's CPU, all CPU, wall, the rows and their sha256, and
    under ``tracemalloc`` the traced peak above the search's start."""
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    driver, cpu, wall = os.times(), _cpu_seconds(), time.perf_counter()
    found = search()
    after = os.times()
    traced = {"driver_traced_peak_b": tracemalloc.get_traced_memory()[1] - start} if tracing else {}
    return traced | {
        "driver_cpu_s": round(after.user + after.system - driver.user - driver.system, 2),
        "cpu_s": round(_cpu_seconds() - cpu, 2),
        "wall_s": round(time.perf_counter() - wall, 2),
        "rows": len(found),
        "rows_sha256": hashlib.sha256(repr(found).encode()).hexdigest()[:16],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.build_searches", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--films", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--traced", action="store_true", help="the driver's traced peaks")
    args = parser.parse_args(argv)
    hashes = _hashes(args.films)
    figures: dict[str, Any] = {"films": args.films, "in_process": args.in_process}
    figures["workers"] = None if args.in_process else args.workers
    if args.traced:
        tracemalloc.start()
    with tempfile.TemporaryDirectory(prefix="pericurate-build-searches-") as scratch:
        folder = None if args.in_process else Path(scratch)
        map = None if args.in_process else LocalMap(args.workers)
        figures["same_picture_candidates"] = _timed(
            lambda: candidate_pairs(hashes, SAME_PICTURE_RADIUS, folder, map)
        )
        figures["lookalike_links"] = _timed(
            lambda: lookalike_links(hashes, LOOKALIKE_DISTANCE, folder, map)
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
