"""The audit's exhaustive searches between splits by average hash, as per-file work: each
film of a later split with its nearest films of each earlier split (the report's closest
cross-split pairs and its nearest distances to train read them).

Nothing finds a film's nearest film in Hamming space but comparing it with every film: at
1,000,000 rows (800,000 train, 100,000 each for validation and test) that is some 1.7 x 10^11
comparisons, many minutes of faiss on one machine's cores. So the searches go through the
executor's map, like the hashing: each job searches one block of a later split's films
against every film of the earlier split. The earlier split's codes are written once to a
file in the audit's work folder, which every node sees (as it sees the visit features), and
each job reads them from there: a job carries its block's codes (512 KB) and the file's
path, never the 51 MB of a large split's codes. A query's nearest films do not depend on
the block it was searched in, so the results are those of one search of all the films.

Each block's results are kept in the work folder, known by the block's codes, the earlier
split's and the count (``KEPT_FOLDER``): the searches took about six minutes of a 1,000,000-row
audit on two nodes, and an audit that stops midway searches again only the blocks it had not.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import faiss
import numpy as np

from curation.core.parallel import LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.hashes.hashing import HASH_BYTES
from curation.hashes.mapped_pairs import one_openmp_thread, write_codes
from curation.hashes.pairs import as_codes

if TYPE_CHECKING:
    from curation.leaks.target import Film

QUERY_BLOCK = 8_192  # films of the later split a job searches (512 KB of codes)
CODES_FOLDER = "split-codes"  # below the work folder: one file of codes a split
KEPT_FOLDER = "split-nearest"  # below the work folder: each block's nearest films, kept
KEPT_VERSION = "faiss-binary-flat-1"  # what found them: an exact search, ties as faiss breaks them

# (earlier split, later split) -> faiss's distances and labels (positions among the earlier
# split's films) of each later film's nearest earlier films, nearest first
SplitSearches = dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]


def _nearest_block(
    job: tuple[Path, bytes, int, ArrayStore, str],
) -> tuple[np.ndarray, np.ndarray]:
    """Worker side: each film of a block (its codes) with its ``k`` nearest films among the
    codes stored in the file, on one OpenMP thread (the executor's processes fill the cores),
    or as kept under ``key``."""
    path, block, k, kept, key = job

    def searched() -> Arrays:
        index = faiss.IndexBinaryFlat(HASH_BYTES * 8)
        index.add(np.fromfile(path, np.uint8).reshape(-1, HASH_BYTES))
        queries = np.frombuffer(block, np.uint8).reshape(-1, HASH_BYTES)
        with one_openmp_thread():
            distances, labels = index.search(queries, k)
        return {"distances": distances, "labels": labels}

    found = kept.kept(key, searched)
    return found["distances"], found["labels"]


def _block_key(indexed: str, block: bytes, k: int) -> str:
    """A block's search by the earlier split's codes (their digest), its own codes and ``k``."""
    return hashlib.sha256(f"{indexed}\n{k}\n".encode() + block).hexdigest()


def split_members(films: list[Film], splits: list[str]) -> dict[str, list[int]]:
    """The indexes of each split's films, in order."""
    members: dict[str, list[int]] = {split: [] for split in splits}
    for index, film in enumerate(films):
        members[film.split].append(index)
    return members


def split_searches(
    films: list[Film],
    splits: list[str],
    folder: Path,
    count: int,
    map: Mapper | None = None,
) -> SplitSearches:
    """Every film of each later split with its ``count`` nearest films of each earlier split
    by average hash, one block of films a job through ``map`` (default: one process per
    core); the splits' codes are written below ``folder``, which the workers must see, and
    each block's results are kept there."""
    members = split_members(films, splits)
    codes = {split: as_codes([films[i].ahash for i in members[split]]) for split in splits}
    kept = ArrayStore(folder / KEPT_FOLDER, KEPT_VERSION)
    paths, digests = {}, {}
    for number, split in enumerate(splits[:-1]):  # by number: a name may be any text
        paths[split] = folder / CODES_FOLDER / f"split-{number}.codes"  # the last is no index
        digest = hashlib.sha256()
        write_codes(paths[split], codes[split], digest.update)
        digests[split] = digest.hexdigest()
    searched = [
        (first, second)
        for i, first in enumerate(splits)
        for second in splits[i + 1 :]
        if members[first] and members[second]
    ]
    jobs = [
        (paths[first], block, k, kept, _block_key(digests[first], block, k))
        for first, second in searched
        for k in [min(count, len(members[first]))]
        for start in range(0, len(members[second]), QUERY_BLOCK)
        for block in [codes[second][start : start + QUERY_BLOCK].tobytes()]
    ]
    found = iter((map or LocalMap())(_nearest_block, jobs, chunksize=1))
    searches = {}
    for first, second in searched:
        blocks = [next(found) for _ in range(0, len(members[second]), QUERY_BLOCK)]
        searches[first, second] = (
            np.concatenate([distances for distances, _ in blocks]),
            np.concatenate([labels for _, labels in blocks]),
        )
    return searches
