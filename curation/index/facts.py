"""What the index reads of one file (``FileFacts``), and the cache that remembers it by the
file's path, size and modification time, so that a rerun over an unchanged source reads no
file (``curation.index.index``).

The driver holds the facts of every file of the archive until the index's checks end: they
are kept compact (slots, interned texts), the files' stat is held as columns, and the cache
is searched in Arrow, never through a Python key a file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.core.cache import read_cache, write_cache
from curation.index.voc import RawBox

FACTS_VERSION = "facts-v7"  # bump when what is read from one file changes
# Rows turned into arrow at a time when the cache is written, and into Python values when it
# is read: the values of a few hundred files, never a column of the whole archive's.
CACHE_BATCH_ROWS = 256


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What one image or annotation file says about itself: a pure function of its bytes.

    The driver holds one a file until the index's checks end: slots (an unpickled dataclass
    would carry a dict of its own), and the encoder signature, a few values in a whole
    archive, interned (pickling shares it within a worker's batch of results)."""

    sha256: str
    size: int
    problem: str = ""  # image: why its header is unusable; annotation: why its XML is refused
    width: int = 0
    height: int = 0
    boxes: tuple[RawBox, ...] = ()
    encoder: str = ""  # image: its encoder signature (``curation.index.provenance``)
    patient_number: str | None = field(default=None, repr=False)  # never cached nor shown

    def __post_init__(self) -> None:
        object.__setattr__(self, "encoder", sys.intern(self.encoder))


_BOX = pa.struct(
    [(f, pa.float64()) for f in ("xmin", "ymin", "xmax", "ymax")] + [("grade", pa.string())]
)
FACTS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("sha256", pa.string()),
        ("problem", pa.string()),
        ("width", pa.int64()),
        ("height", pa.int64()),
        ("boxes", pa.list_(_BOX)),
        ("encoder", pa.string()),
    ]
)
_FACT_COLUMNS = ("sha256", "size", "problem", "width", "height", "boxes", "encoder")


def read_facts_cache(path: Path | None, listing: Listing) -> tuple[list[FileFacts | None], int]:
    """Each listed file's facts remembered in the cache, or None where its path, size or
    modification time changed (or no usable cache), and how many files the cache remembers.

    Arrow finds each file's row (``pyarrow.compute.index_in``): a dict keyed by path, size and
    time held a key of three Python objects a file, more than the facts themselves."""
    found: list[FileFacts | None] = [None] * len(listing.files)
    table = read_cache(path, FACTS_VERSION, FACTS_SCHEMA)
    if table is None:
        return found, 0
    paths = pa.array(map(listing.path, range(len(found))), pa.string(), size=len(found))
    row = pc.fill_null(pc.index_in(paths, value_set=table["path"]), -1).to_numpy()
    del paths
    listed = np.flatnonzero(row >= 0)
    rows = row[listed]
    same = (table["size"].to_numpy()[rows] == listing.sizes[listed]) & (
        table["mtime_ns"].to_numpy()[rows] == listing.mtimes_ns[listed]
    )
    listed, rows = listed[same], rows[same]
    for start in range(0, len(rows), CACHE_BATCH_ROWS):
        batch = slice(start, start + CACHE_BATCH_ROWS)
        taken = table.take(rows[batch])
        values = zip(*(taken.column(name).to_pylist() for name in _FACT_COLUMNS), strict=True)
        for at, (sha, size, problem, width, height, boxes, encoder) in zip(
            listed[batch].tolist(), values, strict=True
        ):
            boxed = tuple(RawBox(**b) for b in boxes)
            found[at] = FileFacts(sha, size, problem, width, height, boxed, encoder)
    return found, table.num_rows


@dataclass(frozen=True)
class Listing:
    """Files below one folder and their stat, which key the facts cache: columns rather than a
    key a file, since the driver holds them for every file of the archive."""

    root: str  # absolute
    files: Sequence[str]  # posix paths below ``root``
    sizes: np.ndarray  # int64, bytes
    mtimes_ns: np.ndarray  # int64

    @classmethod
    def stat(cls, root: str, files: Sequence[str]) -> Listing:
        """The size and modification time of each of ``files`` now."""
        sizes, mtimes_ns = np.empty(len(files), np.int64), np.empty(len(files), np.int64)
        for at, rel in enumerate(files):
            stat = os.stat(f"{root}/{rel}")
            sizes[at], mtimes_ns[at] = stat.st_size, stat.st_mtime_ns
        return cls(root, files, sizes, mtimes_ns)

    def path(self, at: int) -> str:
        """The absolute path of the ``at``-th file."""
        return f"{self.root}/{self.files[at]}"


def write_facts_cache(
    path: Path, listing: Listing, facts: Sequence[FileFacts], rows: np.ndarray
) -> None:
    """The facts of the ``rows``-th files of ``listing``, in path order. Facts carrying a
    patient number are never written."""
    rows = rows[[facts[at].patient_number is None for at in rows]]
    batches = [
        _facts_batch(listing, facts, rows[start : start + CACHE_BATCH_ROWS])
        for start in range(0, len(rows), CACHE_BATCH_ROWS)
    ]
    table = pa.Table.from_batches(batches, schema=FACTS_SCHEMA)
    write_cache(path, FACTS_VERSION, table.sort_by("path").combine_chunks())


def _facts_batch(listing: Listing, facts: Sequence[FileFacts], rows: np.ndarray) -> pa.RecordBatch:
    chosen = [facts[at] for at in rows]
    columns = {
        "path": [listing.path(at) for at in rows.tolist()],
        "size": listing.sizes[rows],
        "mtime_ns": listing.mtimes_ns[rows],
        "sha256": [f.sha256 for f in chosen],
        "problem": [f.problem for f in chosen],
        "width": [f.width for f in chosen],
        "height": [f.height for f in chosen],
        "boxes": [[(b.xmin, b.ymin, b.xmax, b.ymax, b.grade) for b in f.boxes] for f in chosen],
        "encoder": [f.encoder for f in chosen],
    }
    return pa.RecordBatch.from_pydict(columns, schema=FACTS_SCHEMA)
