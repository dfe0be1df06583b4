"""Exact Hamming range searches as per-file work on the executor: one job per table of the
multi-index (``curation.hashes.multi_index``).

Why: at a million films the searches in every orientation (the audit's turned copies and
recomputed clusters, the build's same-picture candidates and look-alike links) are multi-index
searches of the upright codes by several sets of queries (the turned views, the negatives),
minutes of faiss in the driver while a cluster's workers wait. Each table of a multi-index
finds its own share of the pairs (``table_pairs``), so a job builds one table once and searches
every query set with it: the tables spread over the nodes, and a table is built once for all
the orientations, not once for each. The codes go to files in a folder every worker sees (the
audit's work folder, as for ``curation.leaks.nearest``; a build's step's scratch folder,
``Run.scratch``): a job carries paths and its table's bit positions, never the codes. Searches
too small for the multi-index (``curation.hashes.pairs``) run here. Either way the rows are
those of ``range_pairs`` and ``self_pairs``, in their order.

Each table's rows (or a small search's) are kept in the same folder, known by the search's
codes and radius (``KEPT_FOLDER``): the audit's searches took minutes at a million rows, and an
audit that stops midway runs again only the tables it had not searched.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import faiss
import numpy as np

from curation.core.atomic import write_bytes
from curation.core.parallel import LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.hashes.multi_index import sorted_rows, substrings, table_pairs
from curation.hashes.pairs import INDEX_PAIRS, range_pairs, self_pairs

SEARCH_FOLDER = "range-search"  # below the folder given: the codes of the search running
KEPT_FOLDER = "range-kept"  # below the folder given: the rows of each search's tables
KEPT_VERSION = "range-pairs-1"  # what the kept rows are: those of range_pairs and self_pairs


@contextmanager
def one_openmp_thread() -> Iterator[None]:
    """faiss on one OpenMP thread inside the block, the process's setting put back after:
    the executor's processes fill the cores, and idle OpenMP threads spin (training the
    vocabulary on every thread burned about twenty times the CPU of one thread: docs/design.md,
    "Visits of one patient"); one thread also sums in one order on every machine."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


@dataclass(frozen=True)
class TableJob:
    """One table of a search, for a worker: the files of the indexed codes and of each query
    set (``None``: the indexed codes themselves), and the table's place among ``tables``."""

    indexed: Path
    queries: tuple[Path | None, ...]
    width: int  # bytes a code
    max_distance: int
    tables: np.ndarray
    table: int
    kept: ArrayStore  # where the table's rows are kept, under ``key``
    key: str


def _codes(path: Path, width: int) -> np.ndarray:
    return np.fromfile(path, np.uint8).reshape(-1, width)


def _as_arrays(found: list[np.ndarray]) -> Arrays:
    return {f"rows-{number}": rows for number, rows in enumerate(found)}


def _from_arrays(arrays: Arrays) -> list[np.ndarray]:
    return [arrays[f"rows-{number}"] for number in range(len(arrays))]


def _search_table(job: TableJob) -> list[np.ndarray]:
    """Worker side: the rows table ``job.table`` finds for each query set, on one thread, or
    the rows kept of it."""

    def searched() -> Arrays:
        indexed = _codes(job.indexed, job.width)
        sets = [
            (indexed, True) if q is None else (_codes(q, job.width), False) for q in job.queries
        ]
        with one_openmp_thread():
            return _as_arrays(table_pairs(indexed, sets, job.max_distance, job.tables, job.table))

    return _from_arrays(job.kept.kept(job.key, searched))


def _table_key(search: str, table: int) -> str:
    """The key of one table's rows: the search's, and the table's place."""
    return hashlib.sha256(f"{search}\ntable {table}".encode()).hexdigest()


def mapped_range_pairs(
    indexed: np.ndarray,
    query_sets: Iterable[np.ndarray | None],
    max_distance: int,
    folder: Path,
    map: Mapper | None = None,
) -> list[np.ndarray]:
    """For each query set, every row ``[query_row, indexed_row, distance]`` at distance <=
    ``max_distance``, sorted: ``range_pairs``'s rows, or for ``None`` (the indexed codes
    themselves) ``self_pairs``'s, each pair once with ``query_row < indexed_row``. Large
    searches run a table a job through ``map`` (default: one process per core), the codes
    written below ``folder``, which the workers must see; the sets are taken one at a time,
    so only one set's codes are held here at once. Each table's rows (a small search's, all
    of them) are kept below ``folder`` too, by the codes and the radius, and read there by a
    search of the same codes."""
    width = indexed.shape[1]
    paths: list[Path | None] = []
    kept = ArrayStore(folder / KEPT_FOLDER, KEPT_VERSION)
    folder = folder / SEARCH_FOLDER
    search = hashlib.sha256(f"{width} {max_distance}\n".encode())
    write_codes(folder / "indexed.codes", indexed, search.update)
    longest = len(indexed)
    for number, queries in enumerate(query_sets):
        if queries is None:
            paths.append(None)
            search.update(b"\nthe indexed codes")
            continue
        path = folder / f"queries-{number}.codes"
        search.update(f"\n{len(queries)} queries\n".encode())
        write_codes(path, queries, search.update)
        paths.append(path)
        longest = max(longest, len(queries))
    key = search.hexdigest()
    # A small search is brute force, here, as ``range_pairs`` decides: the tables are not
    # drawn for it (counting the bits unpacks the codes, 512 bytes a film up to ``BLOCK``).
    small = len(indexed) * longest <= INDEX_PAIRS
    tables = None if small else substrings(indexed, max_distance)
    if tables is None:
        found = _from_arrays(kept.kept(key, partial(_here, indexed, paths, max_distance)))
    else:
        jobs = [
            TableJob(
                folder / "indexed.codes",
                tuple(paths),
                width,
                max_distance,
                tables,
                table,
                kept,
                _table_key(key, table),
            )
            for table in range(len(tables))
        ]
        by_table = list((map or LocalMap())(_search_table, jobs, chunksize=1))
        found = [sorted_rows([rows[number] for rows in by_table]) for number in range(len(paths))]
    shutil.rmtree(folder)  # the next search writes its own
    return found


def write_codes(path: Path, codes: np.ndarray, digest: Callable[[bytes], None]) -> None:
    """Write ``codes`` to ``path`` (a file the workers read) and add them to ``digest`` (what
    a search's kept results are known by), from one copy of them."""
    data = codes.tobytes()
    write_bytes(path, data)
    digest(data)


def _here(indexed: np.ndarray, paths: list[Path | None], max_distance: int) -> Arrays:
    """A small search's rows, each query set's searched in this process."""
    found = [
        self_pairs(indexed, max_distance)
        if queries is None
        else sorted_rows(
            list(range_pairs(indexed, _codes(queries, indexed.shape[1]), max_distance))
        )
        for queries in paths
    ]
    return _as_arrays(found)
