"""What the keeper step builds in the driver grows with the films it decides about, not with
the archive: a per-film structure of every film is what a large archive cannot afford."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from curation.core.parallel import LocalMap
from curation.core.records import Kind, SourceRecord
from curation.hashes.hash_films import HASH_BYTES, VIEWS, Hashes
from curation.hashes.hashing import View
from curation.index.originals import ORIGINALS_FOLDER
from curation.keeper.evidence import augmented_twins, hash_bits, mean_grid

ARCHIVE_FILMS = 8192


def traced_peak(work: Callable[[], Any]) -> tuple[Any, int]:
    """``work()`` and the most it had allocated at once. A peak cannot be filtered to the
    toolkit's code; the bounds below leave room for what pytest's own threads allocate."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        result = work()
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return result, peak


def test_the_mean_grid_counts_bits_without_a_row_of_floats_per_film():
    """A row of 512 float bits per film, stacked, was 8 KB a film of the archive at once;
    counted a bounded number of films at a time, the share is the same to the bit."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, (ARCHIVE_FILMS, len(VIEWS), HASH_BYTES), dtype=np.uint8)
    hashes = Hashes([f"{n:05d}1" for n in range(ARCHIVE_FILMS)], codes)
    mean_grid(hashes)  # what numpy sets up on a first call is not the grid's
    mean, peak = traced_peak(lambda: mean_grid(hashes))
    assert peak < 1 << 20  # a row of floats a film: 69 MB
    rows = [hash_bits(hashes[f][View.identity]) for f in sorted(hashes)]
    assert mean.tobytes() == np.stack(rows).mean(axis=0).tobytes()


def test_augmentation_twins_are_looked_up_for_the_grouped_films_only():
    """The augmentation folder is most of an archive: the twins' lookup holds the copies a
    grouped film can match, not a table of every augmented file."""
    augmented = [
        SourceRecord(f"augmented/{n:05d}2.jpg", Kind.image, f"{n:05d}2", f"{n:064x}", 1, "aug")
        for n in range(ARCHIVE_FILMS)
    ]
    group = [
        SourceRecord(f"originals/{n}.jpg", Kind.image, n, f"{n:0>64}", 1, ORIGINALS_FOLDER)
        for n in ("900001", "900011")
    ]
    records = augmented + group
    codes = np.zeros((len(group), len(VIEWS), HASH_BYTES), dtype=np.uint8)
    hashes = Hashes([r.film_id for r in group], codes)
    films = {r.film_id for r in group}
    args = (records, [films], hashes, 8, LocalMap(1))
    twins, peak = traced_peak(lambda: augmented_twins(Path("/archive"), *args))
    assert twins == {}
    assert peak < 64 << 10  # tables of every augmented film: 1.5 MB
