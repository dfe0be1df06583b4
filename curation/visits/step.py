"""The visits step, wired to files: every kept film described once (cached by sha256 under
``DESCRIPTORS_VERSION``), retrieval and verification over them (``curation.visits.find``),
the verified pairs named by film id.

Runs after the same-picture step, on the films it kept: two kept films are never the same
picture, so every verified pair is a visit of one patient.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation.core.cache import read_cache, write_cache
from curation.core.parallel import Mapper, Tracker
from curation.core.records import SourceRecord
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures, visit_features_of
from curation.visits.find import candidates, verified_pairs

DESCRIPTORS_CACHE = "visit-descriptors.parquet"
_DESCRIPTORS = pa.schema(
    [
        ("sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("points", pa.binary()),  # float32 x, y pairs, fractions of the frame
        ("descriptors", pa.binary()),  # 128 bytes per point
    ]
)


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


def cached_features(
    films: dict[str, SourceRecord],
    root: Path,
    cache_path: Path | None,
    map: Mapper,
    bar: Tracker | None = None,
) -> list[VisitFeatures]:
    """The visit features of ``films`` (by id, in id order): cached ones by sha256, the rest
    described through ``map``, once per file content; the cache is rewritten when any was
    described."""
    known: dict[str, VisitFeatures] = {}
    table = read_cache(cache_path, DESCRIPTORS_VERSION, _DESCRIPTORS)
    for row in table.to_pylist() if table is not None else []:
        points = np.frombuffer(row["points"], np.float32).reshape(-1, 2)
        described = np.frombuffer(row["descriptors"], np.uint8).reshape(-1, 128)
        known[row["sha256"]] = VisitFeatures(points, described, (row["width"], row["height"]))
    ids = sorted(films)
    todo: dict[str, str] = {}
    for film in ids:
        if films[film].sha256 not in known:
            todo.setdefault(films[film].sha256, film)
    if bar is not None:
        bar.total(len(todo))
    for sha, found in zip(
        todo, map(describe_file, [str(root / films[f].path) for f in todo.values()]), strict=True
    ):
        known[sha] = found
        if bar is not None:
            bar.advance(1)
    if todo and cache_path is not None:
        shas = sorted(known)
        kept = [known[sha] for sha in shas]
        columns = {
            "sha256": shas,
            "width": [f.size[0] for f in kept],
            "height": [f.size[1] for f in kept],
            "points": [np.ascontiguousarray(f.points, np.float32).tobytes() for f in kept],
            "descriptors": [np.ascontiguousarray(f.descriptors, np.uint8).tobytes() for f in kept],
        }
        write_cache(
            cache_path, DESCRIPTORS_VERSION, pa.Table.from_pydict(columns, schema=_DESCRIPTORS)
        )
    return [known[films[f].sha256] for f in ids]


def kept_film_visits(
    films: dict[str, SourceRecord],
    root: Path,
    cache_path: Path | None,
    map: Mapper,
    track: Callable[[str, int | None], Tracker],
) -> list[Visit]:
    """The visits of one patient among the kept ``films`` (by id), sorted by ids."""
    ids = sorted(films)
    features = cached_features(films, root, cache_path, map, track("describe anatomy", None))
    pairs = candidates(features, map)
    bar = track("verify visits", len(pairs))
    found = verified_pairs(features, pairs, map, bar.advance)
    return [Visit(ids[v.first], ids[v.second], v.matches, v.inliers, v.cells) for v in found]
