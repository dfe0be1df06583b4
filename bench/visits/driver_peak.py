"""``python -m bench.visits.driver_peak FOLDER...``: the memory the visits step costs the driver
per film, cold (every film described) and on a rerun (nothing described).

Every image below the folders is a kept film; a build's folder gives the films it kept. The
step runs as the chain runs it (``curation.visits.step.kept_film_visits``), its jobs always
in worker processes, as on a cluster (the local executor runs a lone job, such as training
the vocabulary, in the driver itself). The driver's peak is what ``tracemalloc`` sees above
the films' records (numpy's arrays included; faiss's own allocations are in the workers),
after a run on two films in another cache (imports and one-off set-ups are no film's cost).
Says plainly which folders are absent and measures the others.

    uv run --frozen python -m bench.visits.driver_peak build ../shared/realfilms-dev
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from curation.core.parallel import interrupts_held, worker_pool
from curation.core.records import Kind, SourceRecord
from curation.visits.step import kept_film_visits

IMAGES = (".jpg", ".jpeg", ".png")


class WorkersMap:
    """A ``Mapper`` whose jobs always run in worker processes, however few."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 16
    ) -> Iterator[Any]:
        with worker_pool(self.workers) as pool:
            with interrupts_held():
                results = pool.map(function, jobs, chunksize=chunksize)
            yield from results


class Quiet:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def kept_in(build: Path) -> list[Path]:
    """The films a build kept (its manifest), where its source folder holds them."""
    root = Path(json.loads((build / "work" / "source.json").read_text())["root"])
    rows = pq.read_table(build / "manifest.parquet", columns=["path", "kind", "fate"]).to_pylist()
    return [root / r["path"] for r in rows if r["kind"] == "image" and r["fate"] == "kept"]


def film_records(folders: list[Path]) -> tuple[Path, dict[str, SourceRecord]]:
    """The films below ``folders`` (a build's folder: the films it kept), their common parent
    and a record each, by film id."""
    paths = sorted(
        p
        for f in folders
        for p in (kept_in(f) if (f / "manifest.parquet").is_file() else f.rglob("*"))
        if p.suffix.lower() in IMAGES
    )
    root = Path(os.path.commonpath(paths)) if len(paths) > 1 else folders[0]
    films = {}
    for path in paths:
        relative = path.relative_to(root)
        data = path.read_bytes()
        stem = str(relative.with_suffix(""))
        films[stem] = SourceRecord(
            str(relative), Kind.image, stem, hashlib.sha256(data).hexdigest(), len(data)
        )
    return root, films


def driver_peak(folders: list[Path], workers: int) -> dict:
    """The driver's peak above the records, per film, cold and on a rerun."""
    root, films = film_records(folders)
    found: dict[str, Any] = {"films": len(films)}
    with (
        tempfile.TemporaryDirectory(prefix="pericurate-peak-") as warm,
        tempfile.TemporaryDirectory(prefix="pericurate-peak-") as cache,
    ):
        two = dict(list(films.items())[:2])  # imports and one-off set-ups: no film's cost
        for _ in ("cold", "rerun"):
            kept_film_visits(
                two, root, Path(warm).joinpath, WorkersMap(workers), lambda n, t: Quiet()
            )
        for run in ("cold", "rerun"):
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            visits = kept_film_visits(
                films, root, Path(cache).joinpath, WorkersMap(workers), lambda n, t: Quiet()
            )
            peak = tracemalloc.get_traced_memory()[1] - before
            tracemalloc.stop()
            found[run] = {"visits": len(visits), "peak_bytes": peak, "per_film": peak // len(films)}
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    present = [f for f in args.folders if f.is_dir()]
    for absent in sorted(set(args.folders) - set(present)):
        print(f"bench.visits.driver_peak: {absent} is absent: measured without it.")
    if not present:
        print("bench.visits.driver_peak skipped: none of the folders is there.")
        return
    print(json.dumps(driver_peak(present, args.workers)))


if __name__ == "__main__":
    main()
