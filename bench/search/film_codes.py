"""Codes with the structure of real film hashes: the bench corpus's films, hashed, perturbed.

Hashes of panoramic films are correlated: every film shows the same anatomy, so the dark
corners and the bright teeth are the same bits in nearly every film, and neighbouring cells
move together. A multi-index search splits the codes into substrings and looks codes up by
substring, so that structure (not the uniform codes of ``bench.search.codes``) decides how full its
buckets get. ``film_codes`` hashes every film of the corpus (originals and every copy) once and
caches the upright hashes as a ``.npy`` next to the zip (git-ignored); ``perturbed_codes``
draws any number of codes from them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.common.corpus import corpus_source
from curation.core.parallel import ordered_map
from curation.hashes.hashing import AverageHash512, View

GRID_ROWS, GRID_COLS = 16, 32
BLOCK = 4  # cells per side of the blocks a perturbed code takes from another film


def _upright(path: str) -> bytes | None:
    """The film's upright hash, or None for the sample's planted undecodable files."""
    try:
        return AverageHash512("draft").hash_views(path)[View.identity]
    except Exception:  # a corrupt or oversized film is not a code; the corpus plants a few
        return None


def film_codes(archive: Path) -> np.ndarray:
    """The upright hash of every decodable film in the corpus archive, ``(n, 64)`` ``uint8``,
    in path order; computed over all cores once (about a minute), then read from the cache."""
    cache = archive.with_suffix(".codes.npy")
    if cache.is_file():
        return np.load(cache)
    root = corpus_source(archive).root
    paths = sorted(str(p) for p in root.rglob("*") if p.suffix.lower() == ".jpg")
    hashes = [h for h in ordered_map(_upright, paths, chunksize=32) if h is not None]
    codes = np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(len(hashes), 64)
    np.save(cache, codes)
    return codes


def perturbed_codes(films: np.ndarray, n: int, seed: int = 0, swap: float = 0.3) -> np.ndarray:
    """``n`` codes, each a film's code with every 4 x 4 block of cells taken, with
    probability ``swap``, from another random film, then every bit flipped with probability
    0.01 times its own variability across the films (``4 p (1 - p)``, 0 for a bit no film
    changes). The films themselves come first (so their copies and look-alikes are in every
    set of at least that size). Blocks keep what makes film codes hard to index: a bit the
    corpus never changes stays the same in every code, and neighbouring cells move together.
    """
    rng = np.random.default_rng(seed)
    bits = np.unpackbits(films, axis=1).reshape(-1, GRID_ROWS, GRID_COLS)
    ones = bits.reshape(len(bits), -1).mean(axis=0)
    flip_rate = 0.01 * 4 * ones * (1 - ones)
    out = np.empty((n, 64), dtype=np.uint8)
    head = min(n, len(films))
    out[:head] = films[:head]
    blocks = (GRID_ROWS // BLOCK, GRID_COLS // BLOCK)
    for start in range(head, n, 50_000):
        size = min(50_000, n - start)
        base = bits[rng.integers(0, len(bits), size)].copy()
        donor = bits[rng.integers(0, len(bits), size)]
        taken = rng.random((size, *blocks)) < swap
        cells = np.kron(taken, np.ones((BLOCK, BLOCK), dtype=bool))
        base[cells] = donor[cells]
        flat = base.reshape(size, -1) ^ (rng.random((size, GRID_ROWS * GRID_COLS)) < flip_rate)
        out[start : start + size] = np.packbits(flat, axis=1)
    return out
