"""The visits step, wired to files: every kept film described once, by a worker, straight into
the descriptors' store below the build's cache (keyed by sha256, ``DESCRIPTORS_VERSION``),
retrieval and verification as jobs over the store (``curation.visits.find``), the verified
pairs named by film id.

The driver keeps a small record per content (``RECORDS_CACHE``: the sha256 and how many
descriptors): a rerun whose films are all recorded, and still in the store, describes
nothing and reads no film.

Runs after the same-picture step, on the films it kept: two kept films are never the same
picture, so every verified pair is a visit of one patient.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.core.cache import read_cache, write_cache
from curation.core.parallel import CountingMap, Mapper, Tracker
from curation.core.records import SourceRecord
from curation.core.store import ArrayStore
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures, visit_features_of
from curation.visits.find import stored_candidate_pairs, stored_verified, verified_store
from curation.visits.stored import VisitStores, describe_into, descriptor_store

DESCRIPTORS_STORE = "visit-descriptors"  # below BUILD/cache
VECTORS_STORE = "visit-vectors"
SAMPLE_FOLDER = "visit-sample"  # while the vocabulary is trained
VERIFIED_STORE = "visit-verified"  # the verification's evidence, a window of pairs a file
RECORDS_CACHE = "visit-records.parquet"
_RECORDS = pa.schema([("sha256", pa.string()), ("descriptors", pa.int32())])


@dataclass(frozen=True)
class Visit:
    """Two kept films (ids, ``first < second``) verified as one patient's."""

    first: str
    second: str
    matches: int
    inliers: int
    cells: int


def describe_file(path: str) -> VisitFeatures:
    """Worker side: the visit features of the film at ``path``."""
    return visit_features_of(Path(path).read_bytes())


def describe_films(
    films: dict[str, SourceRecord],
    root: Path,
    store: ArrayStore,
    records_path: Path,
    map: Mapper,
    bar: Tracker | None = None,
) -> None:
    """Every content of ``films`` described into ``store`` through ``map`` (a job per content
    neither recorded in ``records_path`` nor in the store); the records rewritten when any
    was described."""
    recorded = read_cache(records_path, DESCRIPTORS_VERSION, _RECORDS)
    ordered = sorted(films.values(), key=lambda r: r.film_id)
    shas = pa.array([record.sha256 for record in ordered], pa.string())
    known = np.zeros(len(ordered), bool)
    if recorded is not None:
        known = pc.is_in(shas, value_set=recorded["sha256"]).to_numpy(zero_copy_only=False)
    todo: dict[str, str] = {}
    for record, is_known in zip(ordered, known, strict=True):
        sha = record.sha256
        if sha not in todo and not (is_known and sha in store):
            todo[sha] = str(root / record.path)
    jobs = [(store, sha, path) for sha, path in todo.items()]
    counting = CountingMap(map, bar, len(jobs))
    described = counting(describe_into, jobs)  # none kept: only the counts
    counts = np.fromiter((d.descriptors for d in described), np.int32)
    if len(counts):
        fresh = pa.table({"sha256": list(todo), "descriptors": counts}, schema=_RECORDS)
        if recorded is not None:
            kept = pc.invert(pc.is_in(recorded["sha256"], value_set=fresh["sha256"]))
            fresh = pa.concat_tables([recorded.filter(kept), fresh])
        write_cache(records_path, DESCRIPTORS_VERSION, fresh.sort_by("sha256"))


@contextmanager
def _cache_folder(cache: Callable[[str], Path] | None) -> Iterator[Callable[[str], Path]]:
    """The build's cache (``run.cache``), or a temporary folder for a run without one."""
    if cache is not None:
        yield cache
        return
    with tempfile.TemporaryDirectory(prefix="pericurate-visits-") as folder:
        yield lambda name: Path(folder) / name


def kept_film_visits(
    films: dict[str, SourceRecord],
    root: Path,
    cache: Callable[[str], Path] | None,
    map: Mapper,
    track: Callable[[str, int | None], Tracker],
) -> list[Visit]:
    """The visits of one patient among the kept ``films`` (by id), sorted by ids; the stores
    below ``cache`` (``run.cache``; ``None``: a temporary folder)."""
    ids = sorted(films)
    with _cache_folder(cache) as below:
        stores = VisitStores(
            descriptor_store(below(DESCRIPTORS_STORE)), below(VECTORS_STORE), below(SAMPLE_FOLDER)
        )
        stores.descriptors.drop_other_versions()
        bar = track("describe anatomy", None)
        describe_films(films, root, stores.descriptors, below(RECORDS_CACHE), map, bar)
        keys = [films[film].sha256 for film in ids]
        pairs = stored_candidate_pairs(stores, keys, map, track=track)
        verified = verified_store(below(VERIFIED_STORE))
        verified.drop_other_versions()
        verifying = track("verify visits", len(pairs))
        found = stored_verified(stores.descriptors, keys, pairs, map, verifying.advance, verified)
    return [Visit(ids[v.first], ids[v.second], v.matches, v.inliers, v.cells) for v in found]
