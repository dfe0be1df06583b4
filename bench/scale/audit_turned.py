"""The audit's search for turned copies by average hash alone (the search of
``curation.leaks.turned.turned_same_picture``, not its pixel check): every film's codes in
each turned view and inverted against every film's upright codes, at the same-picture radius,
on correlated synthetic codes (``bench.search.codes``; each view's codes drawn apart, with
copies planted, ``_plant``).
``--in-process`` runs it in this process (faiss's threads on every core, the audit's way until
the search went through the executor); otherwise a table of the multi-index a job in
``--workers`` processes (``curation.hashes.orientations.mapped_pairs_in_any_orientation``).
Prints CPU seconds of this process and its workers, wall seconds, the pairs found and their
sha256 (rows and order: two runs found the same pairs when it is the same).

``python -m bench.scale.audit_turned --films 200000 [--in-process]`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.scale.audit_closest import _cpu_seconds
from bench.search.codes import correlated_codes
from curation.core.parallel import LocalMap
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.hashes.hashing import View
from curation.hashes.orientations import (
    mapped_pairs_in_any_orientation,
    negative_pairs,
    pairs_in_any_orientation,
)
from curation.leaks.target import TURNED_VIEWS

SEED = 11


def _plant(codes: dict[View, np.ndarray], views: list[View]) -> None:
    """One film in a hundred of each turned view (and of the upright codes, inverted: the
    negatives) made a copy of another film's upright code with about 3 % of its bits flipped,
    so that each search has pairs to find."""
    rng = np.random.default_rng(SEED)
    upright = codes[View.identity]
    for view in views:
        copies = rng.choice(len(upright), len(upright) // 100, replace=False)
        flips = np.packbits(rng.random((len(copies), 512)) < 0.03, axis=1)
        originals = upright[rng.choice(len(upright), len(copies), replace=False)] ^ flips
        codes[view][copies] = np.bitwise_not(originals) if view is View.identity else originals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_turned", description=__doc__)
    parser.add_argument("--films", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args(argv)
    views = [View.identity, *TURNED_VIEWS]
    codes = {view: correlated_codes(args.films, SEED + n) for n, view in enumerate(views)}
    _plant(codes, views)
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    if args.in_process:
        found = list(pairs_in_any_orientation(codes.__getitem__, SAME_PICTURE_RADIUS, TURNED_VIEWS))
        found.append((None, negative_pairs(codes[View.identity], SAME_PICTURE_RADIUS)))
    else:
        with tempfile.TemporaryDirectory() as folder:
            found = list(
                mapped_pairs_in_any_orientation(
                    codes.__getitem__,
                    SAME_PICTURE_RADIUS,
                    TURNED_VIEWS,
                    Path(folder),
                    LocalMap(args.workers),
                    negatives=True,
                )
            )
    cpu_s, wall_s = _cpu_seconds() - cpu_started, time.perf_counter() - started
    rows = np.concatenate([rows for _, rows in found])
    figures = {
        "films": args.films,
        "in_process": args.in_process,
        "workers": None if args.in_process else args.workers,
        "cpu_s": round(cpu_s, 2),
        "wall_s": round(wall_s, 2),
        "pairs": len(rows),
        "pairs_sha256": hashlib.sha256(rows.astype(np.int64).tobytes()).hexdigest()[:16],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
