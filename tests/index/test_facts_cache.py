"""Reading the facts cache: a batch of rows made Python values at a time. Every column's
values at once, before the first fact was made, cost more than the facts themselves (740 B a
file at 8,000 originals, the index step's peak on a build that had run before)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

from curation.index.facts import FileFacts, Listing, read_facts_cache, write_facts_cache
from curation.index.voc import RawBox


def _cache(path: Path, files: int) -> Path:
    names = [f"Images/{n:07d}.jpg" for n in range(files)]
    sizes = np.arange(1000, 1000 + files, dtype=np.int64)
    listing = Listing("/archive", names, sizes, np.full(files, 1_700_000_000_000_000_000))
    box = (RawBox(10.0, 20.0, 30.0, 40.0, "3"),)
    facts = [FileFacts(f"{n:064x}", 1000 + n, "", 2000, 1000, box, "libjpeg") for n in range(files)]
    write_facts_cache(path, listing, facts, np.arange(files))
    return path


def _made_beside_the_facts(path: Path) -> tuple[int, int]:
    """What reading ``path`` held at its peak beyond the facts it returns, and the facts."""
    tracemalloc.start()
    try:
        facts = read_facts_cache(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - held, len(facts)


def test_the_facts_cache_is_read_a_batch_at_a_time(tmp_path: Path) -> None:
    small, large = 2_000, 8_000
    _made_beside_the_facts(_cache(tmp_path / "warm.parquet", 10))
    beside_small, read_small = _made_beside_the_facts(_cache(tmp_path / "small.parquet", small))
    beside_large, read_large = _made_beside_the_facts(_cache(tmp_path / "large.parquet", large))
    assert (read_small, read_large) == (small, large)
    grew = (beside_large - beside_small) / (large - small)
    assert grew < 60, grew
