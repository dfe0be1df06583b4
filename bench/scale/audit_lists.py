"""Does the visits' search through the lists find the audit's planted look-alikes as often
among many films as among few (issue 39: recall that does not fall as the archive grows)?

The audit bench's dataset (``bench.scale.audit_cluster.write_dataset``: grey textures, each
planted look-alike its train film 6 grey levels brighter, encoded again) is audited with
``--visit-search lists`` and killed once the search's pairs are kept; its work folder stays,
and with it the films' projected vectors the search read. They are read back in the audit's
order of films, and pools of each of ``--films`` films (both films of every planted look-alike,
the others evenly chosen) are searched in this process three ways, each a pool's pairs, its
CPU beside it: exactly (each planted film's ``PARTNERS`` nearest, faiss's flat search), through
the lists as built (``curation.visits.inverted.inverted_nearest``), and through as many lists
as 4 x sqrt(films), the rule before b4b22ef, whose lists held more films as the films grew.
A look-alike is found when its pair is among a search's pairs. The planted byte copies have
the same vector as their source and are left out.

``python -m bench.scale.audit_lists --rows 64000 [--films 8000,16000,32000,64000]
[--scratch S]`` prints the figures as JSON and writes them to ``audit_lists.json`` beside this
file, under the rows (the scratch folder may be ``bench.scale.audit_cluster``'s: the dataset
is written once).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import faiss
import numpy as np
import pyarrow.parquet as pq

from bench.scale.audit_cluster import write_dataset
from bench.scale.audit_resume import stopped_when
from curation.audit.audit import WORK_FOLDER
from curation.core.atomic import write_bytes
from curation.core.store import VERSION_FILE, ArrayStore
from curation.leaks.target import find_shards, split_from_name
from curation.leaks.visits import VERIFIED_FOLDER
from curation.visits import inverted
from curation.visits.blocks import range_rows
from curation.visits.find import block_name
from curation.visits.retrieval import PARTNERS, evenly_chosen
from curation.visits.stored import MissingDescriptors

FILMS = (8000, 16000, 32000, 64000)
BLOCK = int(faiss.cvar.distance_compute_blas_database_bs)  # films a block of vectors holds
RESULTS = Path(__file__).with_name("audit_lists.json")


def audit_order(target: Path) -> tuple[list[str], list[str]]:
    """The film ids and sha256 of the films the audit's visit check reads, in its order: the
    shards in order, each split's first film of each content."""
    ids, keys, seen = [], [], set()
    for shard in find_shards(target):
        split = split_from_name(shard)
        table = pq.read_table(shard, columns=["film_id", "image"])
        for film_id, image in zip(
            table["film_id"].to_pylist(), table["image"].to_pylist(), strict=True
        ):
            key = hashlib.sha256(image).hexdigest()
            if (split, key) not in seen:
                seen.add((split, key))
                ids.append(film_id)
                keys.append(key)
    return ids, keys


def kept_vectors(work: Path, keys: list[str]) -> np.ndarray:
    """The films' vectors from a stopped audit's work folder, in the order of ``keys``."""
    (folder,) = (work / "visit-vectors").iterdir()
    store = ArrayStore(folder.parent, (folder / VERSION_FILE).read_text().rstrip("\n"))
    names = [block_name(keys[at : at + BLOCK]) for at in range(0, len(keys), BLOCK)]
    try:
        return range_rows(store, names, 0, len(keys))
    except MissingDescriptors as error:  # not the audit's order, or its vectors not all kept
        raise SystemExit(str(error)) from None


def pool_of(count: int, planted: np.ndarray, films: int) -> np.ndarray:
    """``films`` of ``count`` films, ascending: every film of ``planted`` (pairs), the others
    evenly chosen."""
    needed = np.unique(planted)
    others = np.setdiff1d(np.arange(count), needed)
    return np.sort(
        np.concatenate([needed, others[evenly_chosen(len(others), films - len(needed))]])
    )


def found_count(pairs: np.ndarray, planted: np.ndarray) -> int:
    """How many ``planted`` pairs are among ``pairs`` (``i < j`` rows), either way round."""
    have = {(int(i), int(j)) for i, j in pairs}
    return sum((min(a, b), max(a, b)) in have for a, b in planted.tolist())


def exact_pairs(vectors: np.ndarray, planted: np.ndarray) -> np.ndarray:
    """Each planted film and its ``PARTNERS`` nearest films (itself aside), as ``i < j`` rows."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    films = np.unique(planted)
    nearest = index.search(vectors[films], PARTNERS + 1)[1]
    rows = [
        (int(f), int(j))
        for f, row in zip(films, nearest, strict=True)
        for j in row
        if j != f and j >= 0
    ]
    return np.array(sorted({(min(p), max(p)) for p in rows}), np.int64).reshape(-1, 2)


def root_lists(films: int) -> int:
    """The lists before b4b22ef: the power of two nearest 4 x sqrt(films)."""
    return int(2 ** round(np.log2(4 * np.sqrt(max(films, 1)))))


def timed(search: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    started = time.process_time()
    pairs = search()
    return pairs, round(time.process_time() - started, 1)


def searched(vectors: np.ndarray, planted: np.ndarray) -> dict[str, Any]:
    """The planted look-alikes ``vectors`` (a pool) yields searched exactly, through the lists
    as built and through lists as many as 4 x sqrt(films)."""
    found: dict[str, Any] = {"films": len(vectors), "lookalikes": len(planted)}
    pairs, cpu_s = timed(lambda: exact_pairs(vectors, planted))
    found["exact"] = {"found": found_count(pairs, planted), "cpu_s": cpu_s}
    for name, count in (("lists", inverted.list_count), ("root_lists", root_lists)):
        with mock.patch.object(inverted, "list_count", count):
            pairs, cpu_s = timed(lambda: inverted.inverted_nearest(vectors, PARTNERS))
        lists = count(len(vectors))
        found[name] = {"lists": lists, "found": found_count(pairs, planted), "cpu_s": cpu_s}
    return found


def measure(rows: int, films: tuple[int, ...], scratch: Path) -> dict[str, Any]:
    """The dataset written (once), audited until its search is kept, its pools searched."""
    target, out = scratch / f"target-{rows}", scratch / f"lists-{rows}"
    planted_file = scratch / f"planted-{rows}.json"
    if not planted_file.is_file():
        planted_file.write_text(json.dumps(write_dataset(target, rows)))
    work = out / WORK_FOLDER
    if not (work / VERIFIED_FOLDER).is_dir():  # an earlier run's stopped audit is read again
        shutil.rmtree(out, ignore_errors=True)
        stopped_when(target, out, "local", lambda: (work / VERIFIED_FOLDER).is_dir())
    ids, keys = audit_order(target)
    vectors = kept_vectors(work, keys)
    index = {film_id: n for n, film_id in enumerate(ids)}
    looks = json.loads(planted_file.read_text())["lookalikes"]
    planted = np.array([[index[a], index[b]] for a, b in looks], np.int64)
    found: dict[str, Any] = {}
    for size in (f for f in films if len(np.unique(planted)) <= f <= len(vectors)):
        pool = pool_of(len(vectors), planted, size)
        where = np.full(len(vectors), -1, np.int64)
        where[pool] = np.arange(len(pool))
        found[str(size)] = searched(np.ascontiguousarray(vectors[pool]), where[planted])
        print(json.dumps(found[str(size)]), flush=True)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_lists", description=__doc__)
    parser.add_argument("--rows", type=int, default=64000, help="the audited dataset's rows")
    parser.add_argument("--films", default=",".join(map(str, FILMS)), help="the pools' sizes")
    parser.add_argument("--scratch", type=Path, help="keep the dataset and the audit's work here")
    args = parser.parse_args(argv)
    films = tuple(int(n) for n in args.films.split(",") if n)
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(args.rows, films, args.scratch)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-audit-lists-", dir="/tmp") as scratch:
            found = measure(args.rows, films, Path(scratch))
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    kept[str(args.rows)] = found
    write_bytes(RESULTS, (json.dumps(kept, indent=1, sort_keys=True) + "\n").encode())
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
