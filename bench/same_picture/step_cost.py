"""``python -m bench.same_picture.step_cost BUILD``: where the same-picture step's CPU goes.

Runs the chain of the build folder ``BUILD`` (a ``pericurate build`` of a corpus, e.g. the
one ``bench.scale.cost`` leaves in ``bench/corpus/sample-4000-seed7-cost/current``) through the
hash step in a scratch folder (the hashes come from the hash step as a cold build makes
them), then the same-picture step with empty caches, on this machine's worker processes.
Every per-file map the step makes is timed by the function it maps (CPU of this process and
of the workers it reaped, and wall), and what is left is the driver's own work (the
candidate and feature shortlists, the keeper's rules). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from curation.chain.runner import curate
from curation.chain.settings import Settings
from curation.core.parallel import ordered_map
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.keeper.step import keep_one_per_group
from curation.same_picture.detect import Progress, find_same_pictures
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.same_picture.step_cost", description=__doc__
    )
    parser.add_argument("build", type=Path, help="a build folder (its work/source.json)")
    print(json.dumps(measure(parser.parse_args(argv).build), indent=1))


if __name__ == "__main__":
    main()
