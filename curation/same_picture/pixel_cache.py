"""What the pixel check measured, remembered by the files' sha256 (``curation.core.cache``), so
that a rerun over the same films decodes nothing; a changed check starts afresh."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pyarrow as pa

from curation.core.cache import read_cache, write_cache
from curation.same_picture.pixels import GRAIN_VERSION, PIXEL_CHECK_VERSION, Comparison, Exposure

PairKey = tuple[str, str, str]  # sha256 of film A, of film B, A's view

_COMPARISONS = pa.schema(
    [
        ("sha_a", pa.string()),
        ("sha_b", pa.string()),
        ("view", pa.string()),
        ("difference", pa.float64()),
        (
            "exposure",
            pa.struct([("offset", pa.float64()), ("gain", pa.float64()), ("gamma", pa.float64())]),
        ),
        ("same_size", pa.bool_()),
    ]
)
_GRAINS = pa.schema([("sha256", pa.string()), ("grain", pa.float64())])


def _grain_path(path: Path) -> Path:
    """The grain figures' file, next to the comparisons' file at ``path``."""
    return path.with_name(path.stem + "-grain.parquet")


class ComparisonCache:
    """Comparisons by ``(sha_a, sha_b, view)``; grain figures by sha256."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.comparisons: dict[PairKey, Comparison] = {}
        self.grains: dict[str, float] = {}
        self.added = 0
        table = read_cache(path, PIXEL_CHECK_VERSION, _COMPARISONS)
        for row in table.to_pylist() if table is not None else []:
            exposure = Exposure(**row["exposure"]) if row["exposure"] is not None else None
            key = (row["sha_a"], row["sha_b"], row["view"])
            self.comparisons[key] = Comparison(row["difference"], exposure, row["same_size"])
        grains = read_cache(_grain_path(path) if path is not None else None, GRAIN_VERSION, _GRAINS)
        for row in grains.to_pylist() if grains is not None else []:
            self.grains[row["sha256"]] = row["grain"]

    def add_comparisons(self, found: dict[PairKey, Comparison]) -> None:
        """Remember comparisons measured in workers (saved by ``save``)."""
        self.comparisons.update(found)
        self.added += len(found)

    def add_grains(self, found: dict[str, float]) -> None:
        """Remember grains measured in workers, by the film's sha256 (saved by ``save``)."""
        self.grains.update(found)
        self.added += len(found)

    def save(self) -> None:
        """Write the cache, unless nothing was measured since it was read."""
        if self.path is None or not self.added:
            return
        rows = [
            {"sha_a": a, "sha_b": b, "view": v, **asdict(c)}
            for (a, b, v), c in sorted(self.comparisons.items())
        ]
        write_cache(self.path, PIXEL_CHECK_VERSION, pa.Table.from_pylist(rows, schema=_COMPARISONS))
        grains = [{"sha256": sha, "grain": g} for sha, g in sorted(self.grains.items())]
        write_cache(
            _grain_path(self.path), GRAIN_VERSION, pa.Table.from_pylist(grains, schema=_GRAINS)
        )
