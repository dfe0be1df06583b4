"""``python -m bench.scale.shortlist_driver``: what the feature shortlist costs the
driver, a checkout's in-memory shortlist against this one's over a features store, in one
interleaved run.

The pools are ``bench.scale.distractors``' (the 120 real development films, each with 4 of its
relatives, among 0 and 4,000 synthetic distractors), read from ``--corpus`` (made there by
``python -m bench.scale.distractors``; this part says so and stops when they are absent, and
never makes them). For each size and round, each side's shortlist (``SHORTLIST_PER_FILM``
partners a film, from the votes at ``MIN_VOTES``) is timed in turn:

- ``baseline``: the ``--against`` checkout's ``pair_votes`` and ``shortlisted`` over the
  films' features held in memory, as its frame step ran them;
- ``stored``: this checkout's ``stored_pair_votes`` over the films' features in an
  ``ArrayStore`` (written beforehand, untimed: the features step's workers write it),
  every job in two local worker processes (``IN_PROCESS_ROWS`` set to 0, and a lone job
  sent there too), so the driver's peak is its own: voter counts, jobs and votes;
- ``in_process``: the same jobs run in this process (``IN_PROCESS_ROWS`` as it is, as a
  build of up to that many voting descriptors runs them).

Each side's process time (with its workers') in one run and ``tracemalloc`` peak in another,
per film; the pairs of every side and run must be the same.

    uv run --frozen python -m bench.scale.shortlist_driver --against ../main
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from bench.common.corpus import CORPUS_DIR
from bench.scale import distractors
from curation.core.parallel import worker_pool
from curation.core.store import ArrayStore
from curation.features import vote_shards
from curation.features.features import FEATURES_VERSION, FilmFeatures
from curation.features.shortlist import MIN_VOTES, shortlisted, stored_pair_votes, voter_counts
from curation.same_picture.frame_check import SHORTLIST_PER_FILM

Job = TypeVar("Job")
Result = TypeVar("Result")


def _baseline(checkout: Path) -> ModuleType:
    """The shortlist module of another checkout (its own dependencies: this checkout's)."""
    spec = importlib.util.spec_from_file_location(
        "baseline_shortlist", checkout / "curation" / "features" / "shortlist.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cpu() -> float:
    """Process time of this process and of its reaped workers."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(shortlist: Callable[[], list[tuple[int, int]]], films: int) -> dict[str, Any]:
    """The process time of one run, then the ``tracemalloc`` peak of another (tracing slows
    Python's small allocations, the store's reads most: timed apart), per film."""
    gc.collect()
    started = _cpu()
    pairs = shortlist()
    seconds = _cpu() - started
    gc.collect()
    tracemalloc.start()
    traced = shortlist()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "ms_per_film": round(1000 * seconds / films, 3),
        "peak_bytes_per_film": round(peak / films),
        "pairs": pairs if traced == pairs else None,
    }


def _stored(pool: list[FilmFeatures], folder: Path) -> tuple[ArrayStore, list[str]]:
    """The pool's features in a store, by made-up sha256s."""
    store = ArrayStore(folder / "features", FEATURES_VERSION)
    shas = [f"{n:064x}" for n in range(len(pool))]
    for sha, film in zip(shas, pool, strict=True):
        store.put(sha, {"descriptors": film.descriptors, "size": np.zeros(2, np.int64)})
    return store, shas


def _old_shortlist(baseline: ModuleType, pool: list[FilmFeatures]) -> list[tuple[int, int]]:
    """The baseline's shortlist over features held in memory."""
    votes = baseline.pair_votes(pool, MIN_VOTES)
    found: list[tuple[int, int]] = baseline.shortlisted(pool, votes, SHORTLIST_PER_FILM)
    return found


def _new_shortlist(
    store: ArrayStore, shas: list[str], voters: list[int], work: Path
) -> list[tuple[int, int]]:
    """This checkout's shortlist over the store, its jobs in two local worker processes
    (unless the set is small enough to run here: ``IN_PROCESS_ROWS``)."""
    votes = stored_pair_votes(store, shas, voters, work, MIN_VOTES, map=_pooled)
    return shortlisted(voters, votes, SHORTLIST_PER_FILM)


def _pooled(
    function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 1
) -> Iterator[Result]:
    """Every job in two worker processes, even a lone one (``LocalMap`` runs a lone job
    here), so that the driver's peak is its own."""
    with worker_pool(2) as pool:
        yield from pool.map(function, jobs, chunksize=chunksize)


def measure(against: Path, corpus: Path, sizes: list[int], rounds: int) -> dict[str, Any]:
    """Every side's figures per size and round, or why none were measured."""
    distractors.CORPUS_DIR = corpus
    chunks = [distractors._cache(f"chunk-{distractors.SEED}-{c}.npz") for c in range(4)]
    real = distractors._cache("real-120.npz")
    if not real.is_file() or not all(chunk.is_file() for chunk in chunks[: max(sizes) // 1000]):
        return {"measured": False, "why": f"skipped: no distractor pools in {corpus}"}
    baseline = _baseline(against)
    families = distractors.planted_families(distractors._real_families(120, 1))
    pool_of_distractors = distractors._distractors(max(sizes), 1)
    runs = []
    with tempfile.TemporaryDirectory(prefix="shortlist-driver-") as scratch:
        for size in sizes:
            pool = pool_of_distractors[:size] + [f for members, _ in families for f in members]
            store, shas = _stored(pool, Path(scratch) / str(size))
            voters = voter_counts(pool)

            old = partial(_old_shortlist, baseline, pool)
            new = partial(_new_shortlist, store, shas, voters, Path(scratch) / "work")
            for round_ in range(rounds):
                sides = {"baseline": _timed(old, len(pool))}
                rows = vote_shards.IN_PROCESS_ROWS
                vote_shards.IN_PROCESS_ROWS = 0
                sides["stored"] = _timed(new, len(pool))
                vote_shards.IN_PROCESS_ROWS = rows
                sides["in_process"] = _timed(new, len(pool))
                pairs = {json.dumps(side.pop("pairs")) for side in sides.values()}
                runs.append(
                    {"distractors": size, "films": len(pool), "round": round_, **sides}
                    | {"same_pairs": len(pairs) == 1}
                )
                print(json.dumps(runs[-1]), file=sys.stderr)
    return {"measured": True, "baseline": str(against), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.shortlist_driver")
    parser.add_argument("--against", type=Path, required=True, help="a baseline checkout")
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="distractor pools")
    parser.add_argument("--sizes", default="0,4000", help="distractor counts")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    print(json.dumps(measure(args.against, args.corpus, sizes, args.rounds), indent=1))


if __name__ == "__main__":
    main()
