"""Step 4, hash: every film still in play, in parallel over cores, cached by file sha256.

The same decode also makes the film's review thumbnail (``curation.hashes.thumbnails``), which
the worker stores beside the hashes, so the build decodes no film again for the review page.

This is the first step that decodes a film, so a film whose pixels fail to decode (truncated
or corrupt JPEG) is rejected here, and so is one that shows no radiographic content (blank,
near-black or uniform: ``curation.hashes.content``), read on the same decode. The cache
(``curation.core.cache``) is keyed by file sha256 and stamped with the hash's and the content
check's versions, so a changed definition never reuses stale hashes or skips a film the
changed check would reject, and a damaged cache is only rebuilt.
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
from curation.core.store import ArrayStore
from curation.core.vocabulary import Decode
from curation.hashes.content import CONTENT_CHECK_VERSION, content_problem
from curation.hashes.hashing import AverageHash512, CorruptJpeg, View
from curation.hashes.thumbnails import store_thumbnail, thumbnail_of

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

    @classmethod
    def column_wise(cls, hashes: Mapping[str, Mapping[View, bytes]]) -> Hashes:
        """``hashes`` held column-wise: itself when it is, else made of the mapping."""
        return hashes if isinstance(hashes, Hashes) else cls.from_views(hashes)

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

# absolute path, decode, film width and height, file sha256, where its thumbnail goes (if made)
HashJob = tuple[str, Decode, tuple[int, int], str, ArrayStore | None]
Hashed = tuple[dict[View, bytes] | None, str]  # views, problem


def _hash_one(job: HashJob) -> Hashed:
    path, decode, size, sha256, thumbnails = job
    hasher = AverageHash512(decode)
    try:
        grey = hasher.open_grey(path, strict=True)
        if problem := content_problem(grey, size[0] or grey.width):
            return None, problem
        views = hasher.hash_grey_views(grey)
    except CorruptJpeg as error:
        return None, str(error)
    except Exception as error:  # any decode failure is a property of the file: record it
        return None, f"image does not decode: {decode_failure(error)}"
    if thumbnails is not None:
        store_thumbnail(thumbnails, sha256, thumbnail_of(grey, size))
    return views, ""


class HashCache:
    """The cached hashes, column-wise: each file sha256's row of one ``(rows, views, 64)``
    uint8 array, so the step holds no ``bytes`` object or dict per film (read, hashed or
    written: the driver's memory grows with the archive)."""

    def __init__(self, rows: dict[str, int], codes: np.ndarray) -> None:
        self.rows, self.codes = rows, codes

    @classmethod
    def read(cls, path: Path | None, version: str) -> HashCache:
        """The cache at ``path``; empty when it is missing, damaged or of another ``version``."""
        table = cache_file.read_cache(path, version, CACHE_SCHEMA) if path else None
        columns = [table[view.value].combine_chunks() for view in VIEWS] if table else []
        if table is None or any(column.null_count for column in columns):
            return cls({}, np.zeros((0, len(VIEWS), HASH_BYTES), np.uint8))
        shas = table["sha256"].to_pylist()
        codes = np.stack([_fixed_width(column) for column in columns], axis=1)
        return cls({sha: row for row, sha in enumerate(shas)}, codes)

    def add(self, shas: list[str], codes: np.ndarray) -> None:
        """Add the ``(len(shas), views, 64)`` codes of the files ``shas``."""
        first = len(self.codes)
        self.rows.update({sha: first + n for n, sha in enumerate(shas)})
        self.codes = np.concatenate([self.codes, codes]) if first else codes

    def write(self, path: Path, version: str) -> None:
        """Write the hashes by file sha256, sorted, stamped with ``version``."""
        shas = sorted(self.rows)
        order = np.array([self.rows[sha] for sha in shas], np.int64)
        views = [
            pa.Array.from_buffers(pa.binary(HASH_BYTES), len(shas), [None, pa.py_buffer(column)])
            for column in (self.codes[order, k] for k in range(len(VIEWS)))
        ]
        table = pa.Table.from_arrays([pa.array(shas, pa.string()), *views], schema=CACHE_SCHEMA)
        cache_file.write_cache(path, version, table)


def _fixed_width(column: pa.FixedSizeBinaryArray) -> np.ndarray:
    """A column of 64-byte values as a ``(rows, 64)`` uint8 array, read from its buffer."""
    data = np.frombuffer(column.buffers()[1], np.uint8)
    return data[column.offset * HASH_BYTES :][: len(column) * HASH_BYTES].reshape(-1, HASH_BYTES)


def hash_films(
    root: Path,
    records: list[SourceRecord],
    *,
    decode: Decode = Decode.draft,
    map: Mapper | None = None,
    cache_path: Path | None = None,
    thumbnails: ArrayStore | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[SourceRecord], Hashes]:
    """Hash every pending film with ``map`` (default: one process per core); return the
    records (a film that does not decode or shows no content rejected) and the hashes. The
    workers store the thumbnail of each film they hash in ``thumbnails``."""
    version = f"{AverageHash512(decode).version}+{CONTENT_CHECK_VERSION}"  # the cache's stamp
    cache = HashCache.read(cache_path, version)
    films = pending_images(records)
    todo = sorted(
        {f.sha256: f for f in films if f.sha256 not in cache.rows}.values(), key=lambda f: f.path
    )
    failures: dict[str, str] = {}
    fresh = np.zeros((len(todo), len(VIEWS), HASH_BYTES), np.uint8)
    hashed = np.zeros(len(todo), bool)
    jobs: list[HashJob] = [
        (str(root / f.path), decode, (f.width, f.height), f.sha256, thumbnails) for f in todo
    ]
    results: Iterable[Hashed] = (map or LocalMap())(_hash_one, jobs, chunksize=CHUNK)
    for n, (film, (views, problem)) in enumerate(zip(todo, results, strict=True)):
        if views is None:
            failures[film.sha256] = problem
        else:
            fresh[n] = [np.frombuffer(views[view], np.uint8) for view in VIEWS]
            hashed[n] = True
        if on_progress:
            on_progress(1)
    if on_progress:
        on_progress(len(films) - len(todo))
    cache.add(
        [todo[n].sha256 for n in np.flatnonzero(hashed)], fresh[hashed] if failures else fresh
    )
    if cache_path and hashed.any():
        cache.write(cache_path, version)
    film_paths = {f.path for f in films}
    row_of: dict[str, int] = {}  # film -> its row in the cache
    out = []
    for record in records:
        if record.path in film_paths and record.sha256 in failures:
            record = record.settle(Fate.rejected, failures[record.sha256])
        elif record.path in film_paths:
            row_of[record.film_id] = cache.rows[record.sha256]
        out.append(record)
    return out, Hashes(row_of, cache.codes[list(row_of.values())])
