"""What the frame check keeps on disk, below the build's cache folder: each file content's
local features (the features store, ``ArrayStore`` at ``features/``), the driver's small record
of each (``feature-records.parquet``), and each pair's frame comparison (``frames/``, keyed by
the two contents' sha256). Workers fill and read the stores; the driver keeps the records.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation.core.cache import read_cache, write_cache
from curation.core.parallel import Mapper, Tracker
from curation.core.records import SourceRecord
from curation.core.store import Arrays, ArrayStore
from curation.features.features import (
    FEATURES_VERSION,
    decoded_grey,
    stored_features,
)
from curation.features.shortlist import SHORTLIST_VERSION, voting
from curation.same_picture import frame_check
from curation.same_picture.frame_check import FrameComparison

FEATURES_STORE = "features"  # below the cache folder: the features store
FRAMES_STORE = "frames"  # below the cache folder: every pair's frame comparison
RECORDS_CACHE = "feature-records.parquet"  # the driver's record of each stored content
RECORDS_VERSION = f"{FEATURES_VERSION}|{SHORTLIST_VERSION}"  # the voters count is the shortlist's
FRAMES_VERSION = f"{FEATURES_VERSION}|{frame_check.FRAME_CHECK_VERSION}"
_RECORDS = pa.schema(
    [
        ("sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("voters", pa.int32()),
        ("stored_bytes", pa.int64()),
    ]
)


def film_grey(path: str) -> tuple[np.ndarray, tuple[int, int]]:
    """The film at ``path`` as the frame check reads it (``features.decoded_grey``)."""
    return decoded_grey(Path(path).read_bytes())


def features_store(cache_folder: Path) -> ArrayStore:
    """The local features store below a build's cache folder."""
    return ArrayStore(cache_folder / FEATURES_STORE, FEATURES_VERSION)


@dataclass(frozen=True, slots=True)
class StoredFilm:
    """What the driver keeps of one content's features: the film's size, its voting
    descriptors (``shortlist.voting``), and the bytes of its store file, which tell a
    truncated or replaced file without reading it."""

    width: int
    height: int
    voters: int
    stored_bytes: int


@dataclass(frozen=True, slots=True)
class FeaturesJob:
    """One file content for a worker: a film with those bytes, and the store to fill."""

    path: str
    sha256: str
    store: ArrayStore


def features_job(job: FeaturesJob) -> StoredFilm:
    """Worker side: the content's features in the store (computed unless readable there),
    and the record the driver keeps of them."""
    features = stored_features(job.store, job.sha256, job.path)
    stored_bytes = job.store.path(job.sha256).stat().st_size
    return StoredFilm(*features.size, int(voting(features).sum()), stored_bytes)


def pair_key(sha_a: str, sha_b: str) -> str:
    """A pair of contents' key in the frames store (ordered: A is the frame B sits in)."""
    return f"{sha_a}-{sha_b}"


# A comparison's figures in the frames store, in this order (counts held exactly as float64).
FIGURES = tuple(f.name for f in fields(FrameComparison) if f.name != "transform")


def comparison_arrays(frame: FrameComparison) -> Arrays:
    """A comparison as the frames store holds it: ``figures`` (``FIGURES``) and
    ``transform``, float64."""
    values = asdict(frame)
    return {
        "figures": np.array([values[name] for name in FIGURES], np.float64),
        "transform": np.array(frame.transform, np.float64).reshape(-1),
    }


def read_comparison(store: ArrayStore, key: str) -> FrameComparison | None:
    """The comparison stored under ``key``, or ``None`` (absent, unreadable, or not as
    ``comparison_arrays`` writes it: then it is made again)."""
    arrays = store.get(key)
    if arrays is None or sorted(arrays) != ["figures", "transform"]:
        return None
    figures, transform = arrays["figures"], arrays["transform"]
    if figures.shape != (len(FIGURES),) or transform.ndim != 1:
        return None
    return comparison_of(figures, transform)


def comparison_of(figures: np.ndarray, transform: np.ndarray) -> FrameComparison:
    """The comparison ``comparison_arrays`` made ``figures`` and ``transform`` of."""
    figure = dict(zip(FIGURES, figures.tolist(), strict=True))
    return FrameComparison(
        inliers=int(figure["inliers"]),
        inlier_share=figure["inlier_share"],
        transform=tuple(transform.tolist()),
        overlap_a=figure["overlap_a"],
        overlap_b=figure["overlap_b"],
        difference=figure["difference"],
        shift=figure["shift"],
        anatomy=figure["anatomy"],
        matches=int(figure["matches"]),
    )


class FrameCache:
    """The frame check's stores below a cache folder (a temporary one when ``folder`` is
    ``None``: removed by ``save``) and the driver's record of each stored content
    (``curation.core.cache``)."""

    def __init__(self, folder: Path | None) -> None:
        self._temporary = None
        if folder is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="pericurate-frames-")
            folder = Path(self._temporary.name)
        self.folder = folder
        self.features = features_store(self.folder)
        self.comparisons = ArrayStore(self.folder / FRAMES_STORE, FRAMES_VERSION)
        self.films: dict[str, StoredFilm] = {}
        self.added = 0

    def features_for(
        self,
        films: dict[str, SourceRecord],
        root: Path,
        map: Mapper,
        bar: Tracker | None = None,
    ) -> None:
        """Every content of ``films`` (by id) in the features store and in ``self.films``:
        recorded ones whose store file is whole are taken as they are, the rest go to a
        worker (``features_job``) once per content (films filed twice share their bytes);
        ``bar`` counts the contents sent."""
        self.features.drop_other_versions()
        self.comparisons.drop_other_versions()
        first: dict[str, str] = {}  # sha256 -> the first film (by id) with those bytes
        for film in sorted(films):
            first.setdefault(films[film].sha256, film)
        recorded = self._recorded(first)
        todo = [sha for sha in first if sha not in recorded]
        if bar is not None:
            bar.total(len(todo))
        jobs = [FeaturesJob(str(root / films[first[s]].path), s, self.features) for s in todo]
        for sha, found in zip(todo, map(features_job, jobs), strict=True):
            recorded[sha] = found
            self.added += 1
            if bar is not None:
                bar.advance(1)
        self.films = recorded

    def _recorded(self, wanted: dict[str, str]) -> dict[str, StoredFilm]:
        """The cached records of the ``wanted`` contents whose store file is there with the
        recorded size (keyed by ``wanted``'s own strings)."""
        table = read_cache(self._path(RECORDS_CACHE), RECORDS_VERSION, _RECORDS)
        if table is None:
            return {}
        row_of = {sha: row for row, sha in enumerate(table["sha256"].to_pylist())}
        columns = [table[name].to_pylist() for name in _RECORDS.names[1:]]
        recorded = {}
        for sha in wanted:
            row = row_of.get(sha)
            if row is not None and self._stored_bytes(sha) == columns[-1][row]:
                recorded[sha] = StoredFilm(*(column[row] for column in columns))
        return recorded

    def _stored_bytes(self, sha256: str) -> int | None:
        try:
            return self.features.path(sha256).stat().st_size
        except OSError:
            return None

    def _path(self, name: str) -> Path | None:
        return None if self._temporary else self.folder / name

    def save(self) -> None:
        """Write the records, unless none was added since they were read; remove a
        temporary folder."""
        if self._temporary is not None:
            self._temporary.cleanup()
            return
        if not self.added:
            return
        shas = sorted(self.films)
        kept = [self.films[sha] for sha in shas]
        columns = {"sha256": shas} | {
            name: [getattr(film, name) for film in kept] for name in _RECORDS.names[1:]
        }
        table = pa.Table.from_pydict(columns, schema=_RECORDS)
        write_cache(self.folder / RECORDS_CACHE, RECORDS_VERSION, table)
