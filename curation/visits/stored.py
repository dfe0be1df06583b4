"""Visit descriptors on disk (``curation.core.store``), keyed by each film's sha256: a worker
describes a film straight into the store and returns a small record; every later job (the
vocabulary's sample, the vectors, the verification) reads the descriptors it needs from the
store by key. The driver never holds them.

The in-memory API (``curation.visits.find``: features in, pairs out, for the audit, the benches
and the tests) writes its features to a temporary store and runs the same jobs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curation.core.errors import PericurateError
from curation.core.store import Arrays, ArrayStore
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures, visit_features_of


class MissingDescriptors(PericurateError):
    """A film's descriptors vanished from the store after it was described, or a node does
    not see the folder the store is in."""


@dataclass(frozen=True)
class VisitStores:
    """Where the visits step keeps its arrays: the descriptors' store, the folder of the
    vectors' stores (one version per vocabulary), and the vocabulary's sample's folder while
    it is trained."""

    descriptors: ArrayStore
    vectors: Path
    sample: Path


@dataclass(frozen=True)
class Described:
    """What describing one film's content returns to the driver."""

    sha256: str
    descriptors: int  # how many RootSIFT descriptors the film gave


def descriptor_store(root: Path) -> ArrayStore:
    """The store of visit descriptors below ``root`` (its version: ``DESCRIPTORS_VERSION``)."""
    return ArrayStore(root, DESCRIPTORS_VERSION)


def as_arrays(features: VisitFeatures) -> Arrays:
    """A film's visit features as the store's named arrays."""
    return {
        "points": np.ascontiguousarray(features.points, np.float32),
        "descriptors": np.ascontiguousarray(features.descriptors, np.uint8),
        "size": np.array(features.size, np.int64),
    }


def stored_arrays(store: ArrayStore, key: str, what: str) -> Arrays:
    """The arrays stored under ``key``; ``what`` they are names them in the one sentence
    raised when they are gone."""
    arrays = store.get(key)
    if arrays is None:
        raise missing(store, key, what)
    return arrays


def stored_rows(
    store: ArrayStore, key: str, name: str, wanted: np.ndarray, what: str
) -> np.ndarray:
    """Rows ``wanted`` of the array ``name`` stored under ``key``, read in place
    (``ArrayStore.rows``); ``what`` it holds names it in the one sentence raised when it is
    gone."""
    read = store.rows(key, name, wanted)
    if read is None:
        raise missing(store, key, what)
    return read


def missing(store: ArrayStore, key: str, what: str) -> MissingDescriptors:
    """The one sentence that names the file of ``key`` when ``what`` it holds is gone."""
    return MissingDescriptors(
        f"{store.path(key)}: {what} missing or unreadable here (the folder removed while the "
        "run went on, or, on a cluster, not visible at the same path on every node); run again."
    )


def stored_features(store: ArrayStore, key: str) -> VisitFeatures:
    """The visit features stored under ``key``."""
    arrays = stored_arrays(store, key, "the film's visit descriptors are")
    width, height = (int(side) for side in arrays["size"])
    return VisitFeatures(arrays["points"], arrays["descriptors"], (width, height))


def describe_into(job: tuple[ArrayStore, str, str]) -> Described:
    """Worker side: describe the film at ``path`` into the store under its sha256, unless the
    store already holds it readably (another build, a lost record cache)."""
    store, sha256, path = job
    arrays = store.get(sha256)
    if arrays is None:
        arrays = as_arrays(visit_features_of(Path(path).read_bytes()))
        store.put(sha256, arrays)
    return Described(sha256, len(arrays["descriptors"]))


@contextmanager
def temporary_stores(features: Sequence[VisitFeatures]) -> Iterator[tuple[VisitStores, list[str]]]:
    """``features`` in a temporary descriptors' store, and the key of each (by position). The
    folder is on this machine: jobs that run on other nodes need the build's own stores."""
    with tempfile.TemporaryDirectory(prefix="pericurate-visits-") as folder:
        below = Path(folder)
        stores = VisitStores(
            descriptor_store(below / "descriptors"), below / "vectors", below / "sample"
        )
        keys = [f"{n:064x}" for n in range(len(features))]
        for key, film in zip(keys, features, strict=True):
            stores.descriptors.put(key, as_arrays(film))
        yield stores, keys
