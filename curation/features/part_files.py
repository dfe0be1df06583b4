"""Files of records cut into parts, from which a reader takes one part without the rest: what
one map-reduce job writes for many (``curation.features.vote_shards``), in one file rather
than one file per reader, since every file costs its creation, renaming and removal.

A file holds ``groups`` of records (numpy structured arrays, each group's rows ordered by
part) in numpy's own format, read without pickle, after an index: each group's byte offset
and its parts' row bounds. A reader seeks to its group and part and reads only those rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from curation.core.atomic import atomic_path

HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def records(**columns: np.ndarray) -> np.ndarray:
    """One structured array of equal-length ``columns`` (a column may have several values
    a row: a descriptor's 32 bytes)."""
    length = len(next(iter(columns.values())))
    dtype = [(name, column.dtype, column.shape[1:]) for name, column in columns.items()]
    joined = np.empty(length, dtype)
    for name, column in columns.items():
        joined[name] = column
    return joined


def write_parts(path: Path, groups: Sequence[tuple[np.ndarray, np.ndarray]], parts: int) -> None:
    """Write each group (each row's part, below ``parts``, and its records) with its rows
    ordered by part (stable: the rows of one part keep their order), atomically."""
    index = np.zeros((len(groups), parts + 2), np.int64)  # byte offset, then row bounds
    for n, (part, _) in enumerate(groups):
        index[n, 2:] = np.cumsum(np.bincount(part, minlength=parts))
    with atomic_path(path) as tmp, tmp.open("wb") as stream:
        np.save(stream, index)  # a placeholder of the index's size, written again at the end
        for n, (part, rows) in enumerate(groups):
            index[n, 0] = stream.tell()
            # Parts as the narrowest integers: numpy's stable sort of 8- and 16-bit
            # integers is a radix sort, several times faster than of 64-bit ones.
            narrow = part.astype(np.min_scalar_type(parts))
            np.save(stream, rows[np.argsort(narrow, kind="stable")])
        stream.seek(0)
        np.save(stream, index)


def _header(stream: BinaryIO) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and type of the array whose header starts here."""
    version = np.lib.format.read_magic(stream)
    if version not in HEADERS:
        raise ValueError(f"{stream.name}: an array of numpy format {version}, not written here.")
    shape, fortran, dtype = HEADERS[version](stream)
    if fortran:
        raise ValueError(f"{stream.name}: an array in Fortran order, not written here.")
    return shape, dtype


def read_part(path: Path, group: int, part: int) -> np.ndarray:
    """The records of part ``part`` of group ``group`` of a ``write_parts`` file."""
    with path.open("rb") as stream:
        index = np.load(stream, allow_pickle=False)
        offset, first, last = index[group, 0], index[group, part + 1], index[group, part + 2]
        stream.seek(int(offset))
        _, dtype = _header(stream)
        stream.seek(stream.tell() + int(first) * dtype.itemsize)
        data = stream.read(int(last - first) * dtype.itemsize)
        return np.frombuffer(data, dtype)
