"""Step 4, hash: every film still in play, in parallel over cores, cached by file sha256.

The same decode also makes the film's review thumbnail (``curation.hashes.thumbnails``), cached
beside the hashes, so the build decodes no film again for the review page.

A film whose pixels fail to decode (truncated or corrupt JPEG) is rejected here, since this
is the first step that decodes it. The cache (``curation.core.cache``) is keyed by file sha256 and
stamped with the hash version, so a changed definition never reuses stale hashes, and a
damaged cache is only rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation.core import cache as cache_file
from curation.core.jpeg_check import decode_failure
from curation.core.parallel import LocalMap, Mapper
from curation.core.records import Fate, SourceRecord, pending_images
from curation.core.vocabulary import Decode
from curation.hashes.hashing import AverageHash512, CorruptJpeg, View
from curation.hashes.thumbnails import Thumbnail, add_thumbnails, thumbnail_of

VIEWS = tuple(View)
HASH_BYTES = 64


class Hashes(Mapping[str, dict[View, bytes]]):
    """film_id -> view -> 64-byte hash, held column-wise: one ``(films, views, 64)`` uint8
    array and each film's row, instead of five bytes objects and a dict per film (about
    750 bytes a film down to about 400, with the row index; ``bench/scale/records_memory.py``).
    Read as the mapping it replaces: ``hashes[film][view]`` is the film's bytes."""

    def __init__(self, films: Iterable[str], codes: np.ndarray) -> None:
        self._row = {film: row for row, film in enumerate(films)}
        if codes.shape != (len(self._row), len(VIEWS), HASH_BYTES):
            raise ValueError(f"{codes.shape} hashes for {len(self._row)} films")
        self._codes = codes

    @classmethod
    def from_views(cls, by_film: Mapping[str, Mapping[View, bytes]]) -> Hashes:
        """The hashes of ``{film: {view: 64 bytes}}``."""
        joined = b"".join(views[view] for views in by_film.values() for view in VIEWS)
        codes = np.frombuffer(joined, dtype=np.uint8).reshape(-1, len(VIEWS), HASH_BYTES)
        return cls(by_film, codes)

    def __getitem__(self, film: str) -> dict[View, bytes]:
        row = self._codes[self._row[film]]
        return {view: row[k].tobytes() for k, view in enumerate(VIEWS)}

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, film: object) -> bool:
        return film in self._row

    def subset(self, keep: Callable[[str], bool]) -> Hashes:
        """The hashes of the films ``keep`` accepts, still column-wise."""
        films = [film for film in self._row if keep(film)]
        return Hashes(
            films, self._codes[[self._row[f] for f in films]].reshape(-1, *self._codes.shape[1:])
        )

    def codes(self, view: View, films: Iterable[str]) -> np.ndarray:
        """The ``(len(films), 64)`` uint8 hashes of ``films`` in ``view``, without a bytes
        object per film."""
        return self._codes[[self._row[f] for f in films], VIEWS.index(view)]


CACHE_SCHEMA = pa.schema([("sha256", pa.string())] + [(view.value, pa.binary(64)) for view in View])
CHUNK = 16

HashJob = tuple[str, Decode, tuple[int, int]]  # absolute path, decode, film width and height
Hashed = tuple[dict[View, bytes] | None, Thumbnail | None, str]  # views, thumbnail, problem


def _hash_one(job: HashJob) -> Hashed:
    path, decode, size = job
    hasher = AverageHash512(decode)
    try:
        grey = hasher.open_grey(path, strict=True)
        return hasher.hash_grey_views(grey), thumbnail_of(grey, size), ""
    except CorruptJpeg as error:
        return None, None, str(error)
    except Exception as error:  # any decode failure is a property of the file: record it
        return None, None, f"image does not decode: {decode_failure(error)}"


def read_cache(path: Path, version: str) -> dict[str, dict[View, bytes]]:
    """The cached hashes of each view by file sha256; empty when the cache is missing,
    damaged or of another ``version``."""
    table = cache_file.read_cache(path, version, CACHE_SCHEMA)
    rows = table.to_pylist() if table is not None else []
    return {r["sha256"]: {v: r[v.value] for v in View} for r in rows}


def write_cache(path: Path, version: str, by_sha: dict[str, dict[View, bytes]]) -> None:
    """Write the hashes by file sha256, sorted, stamped with ``version``."""
    rows = [
        {"sha256": sha, **{v.value: views[v] for v in View}}
        for sha, views in sorted(by_sha.items())
    ]
    cache_file.write_cache(path, version, pa.Table.from_pylist(rows, schema=CACHE_SCHEMA))


def hash_films(
    root: Path,
    records: list[SourceRecord],
    *,
    decode: Decode = Decode.draft,
    map: Mapper | None = None,
    cache_path: Path | None = None,
    thumbnail_cache: Path | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[SourceRecord], Hashes]:
    """Hash every pending film with ``map`` (default: one process per core); return the
    records (undecodable films rejected) and the hashes. Thumbnails made on the way are
    added to ``thumbnail_cache``."""
    version = AverageHash512(decode).version
    cache = read_cache(cache_path, version) if cache_path else {}
    cached = len(cache)
    films = pending_images(records)
    todo = sorted(
        {f.sha256: f for f in films if f.sha256 not in cache}.values(), key=lambda f: f.path
    )
    failures: dict[str, str] = {}
    thumbnails: dict[str, Thumbnail] = {}
    jobs: list[HashJob] = [(str(root / f.path), decode, (f.width, f.height)) for f in todo]
    results: Iterable[Hashed] = (map or LocalMap())(_hash_one, jobs, chunksize=CHUNK)
    for film, (views, thumbnail, problem) in zip(todo, results, strict=True):
        if views is None:
            failures[film.sha256] = problem
        else:
            cache[film.sha256] = views
        if thumbnail is not None:
            thumbnails[film.sha256] = thumbnail
        if on_progress:
            on_progress(1)
    if on_progress:
        on_progress(len(films) - len(todo))
    if cache_path and len(cache) > cached:
        write_cache(cache_path, version, cache)
    if thumbnail_cache:
        add_thumbnails(thumbnail_cache, thumbnails)
    film_paths = {f.path for f in films}
    by_film: dict[str, dict[View, bytes]] = {}
    out = []
    for record in records:
        if record.path in film_paths and record.sha256 in failures:
            record = record.settle(Fate.rejected, failures[record.sha256])
        elif record.path in film_paths:
            by_film[record.film_id] = cache[record.sha256]
        out.append(record)
    return out, Hashes.from_views(by_film)
