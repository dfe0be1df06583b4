"""Exact Hamming range searches as per-file work on the executor: one job per table of the
multi-index (``curation.hashes.multi_index``).

Why: at a million films the audit's searches in every orientation (its turned copies, its
recomputed clusters) are multi-index searches of the upright codes by five sets of queries
(four turned views and the negatives, or five orientations), minutes of faiss in the driver
while a cluster's workers wait. Each table of a multi-index finds its own share of the pairs
(``table_pairs``), so a job builds one table once and searches every query set with it: the
tables spread over the nodes, and a table is built once for all the orientations, not once
for each. The codes go to files in a folder
every worker sees (the audit's work folder, as for ``curation.leaks.nearest``): a job carries
paths and its table's bit positions, never the codes. Searches too small for the multi-index
(``curation.hashes.pairs``) run here. Either way the rows are those of ``range_pairs`` and
``self_pairs``, in their order.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from curation.core.atomic import write_bytes
from curation.core.parallel import LocalMap, Mapper
from curation.hashes.multi_index import sorted_rows, substrings, table_pairs
from curation.hashes.pairs import INDEX_PAIRS, range_pairs, self_pairs

SEARCH_FOLDER = "range-search"  # below the folder given: the codes of the search running


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


def _codes(path: Path, width: int) -> np.ndarray:
    return np.fromfile(path, np.uint8).reshape(-1, width)


def _search_table(job: TableJob) -> list[np.ndarray]:
    """Worker side: the rows table ``job.table`` finds for each query set, on one thread."""
    indexed = _codes(job.indexed, job.width)
    sets = [(indexed, True) if q is None else (_codes(q, job.width), False) for q in job.queries]
    with one_openmp_thread():
        return table_pairs(indexed, sets, job.max_distance, job.tables, job.table)


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
    so only one set's codes are held here at once."""
    width = indexed.shape[1]
    paths: list[Path | None] = []
    folder = folder / SEARCH_FOLDER
    write_bytes(folder / "indexed.codes", indexed.tobytes())
    longest = len(indexed)
    for number, queries in enumerate(query_sets):
        if queries is None:
            paths.append(None)
            continue
        path = folder / f"queries-{number}.codes"
        write_bytes(path, queries.tobytes())
        paths.append(path)
        longest = max(longest, len(queries))
    tables = substrings(indexed, max_distance)
    if tables is None or len(indexed) * longest <= INDEX_PAIRS:  # small: brute force, here
        found = [_here(indexed, path, max_distance) for path in paths]
    else:
        jobs = [
            TableJob(folder / "indexed.codes", tuple(paths), width, max_distance, tables, table)
            for table in range(len(tables))
        ]
        by_table = list((map or LocalMap())(_search_table, jobs, chunksize=1))
        found = [sorted_rows([rows[number] for rows in by_table]) for number in range(len(paths))]
    shutil.rmtree(folder)  # the next search writes its own
    return found


def _here(indexed: np.ndarray, queries: Path | None, max_distance: int) -> np.ndarray:
    if queries is None:
        return self_pairs(indexed, max_distance)
    return sorted_rows(list(range_pairs(indexed, _codes(queries, indexed.shape[1]), max_distance)))
