"""Pixel-level confirmation that two films are the same picture.

A small hash distance only nominates a pair; two distinct films are never dropped on the
hash alone. Pictures are compared as grayscale at a fixed reduced size, after turning one of
them into the orientation in which the hashes matched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageChops, ImageFilter

from curation.atomic import atomic_path
from curation.hashing import View
from curation.parallel import ordered_map

PIXEL_CHECK_VERSION = "pixels-v2/256x128-box/mad/grain-boxblur1-8bands"
COMPARE_SIZE = (256, 128)
SAME_PICTURE_MAD = 3.0  # mean absolute grey-level difference at COMPARE_SIZE
MAX_ASPECT_CHANGE = 0.05
GRAIN_BANDS = 8

_TRANSPOSE = {
    View.mirror: Image.Transpose.FLIP_LEFT_RIGHT,
    View.rot90: Image.Transpose.ROTATE_90,
    View.rot180: Image.Transpose.ROTATE_180,
    View.rot270: Image.Transpose.ROTATE_270,
}


@dataclass(frozen=True)
class Comparison:
    """How two films compare; ``reduced_mad`` is the same-picture test."""

    reduced_mad: float
    full_mad: float | None  # only for two films of one pixel size in the same orientation
    same_size: bool
    grain: tuple[float, float] | None = None  # fine-grain energy of A and B, same cases

    @property
    def same_picture(self) -> bool:
        return self.reduced_mad <= SAME_PICTURE_MAD


def _grey(path: Path, view: View = View.identity, draft: bool = True) -> Image.Image:
    with Image.open(path) as image:
        if draft:
            image.draft("L", (COMPARE_SIZE[0] * 2, COMPARE_SIZE[1] * 2))
        grey = image.convert("L")
    return grey.transpose(_TRANSPOSE[view]) if view in _TRANSPOSE else grey


def grain(image: Image.Image) -> float:
    """Mean absolute difference from a 3 x 3 box blur over ``GRAIN_BANDS`` full-width bands,
    each 1/32 of the height, spread evenly down the film: a quarter of its pixels, which
    estimates the whole film's figure to about 0.01 grey levels at a seventh of the cost (the
    blur of a whole film took ~40 ms). Added noise raises it, re-encoding barely moves it."""
    half = max(image.height // (8 * GRAIN_BANDS), 1)
    values = []
    for k in range(GRAIN_BANDS):
        centre = (2 * k + 1) * image.height // (2 * GRAIN_BANDS)
        band = image.crop((0, max(centre - half, 0), image.width, centre + half))
        values.append(_mad(band, band.filter(ImageFilter.BoxBlur(1))))
    return sum(values) / len(values)


def _mad(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute grey-level difference of two same-size images, counted exactly from the
    histogram of ``|a - b|`` (Pillow in C: ~10x faster than numpy on a full film)."""
    histogram = ImageChops.difference(a, b).histogram()
    return sum(level * count for level, count in enumerate(histogram)) / (a.width * a.height)


def compare(path_a: Path, path_b: Path, view: View = View.identity) -> Comparison:
    """Compare film A turned by ``view`` with film B."""
    a, b = _grey(path_a, view), _grey(path_b)
    aspect_a, aspect_b = a.width / a.height, b.width / b.height
    if abs(aspect_a - aspect_b) / aspect_b > MAX_ASPECT_CHANGE:
        return Comparison(reduced_mad=float("inf"), full_mad=None, same_size=False)
    reduced = _mad(
        a.resize(COMPARE_SIZE, Image.Resampling.BOX), b.resize(COMPARE_SIZE, Image.Resampling.BOX)
    )
    with Image.open(path_a) as ia, Image.open(path_b) as ib:
        same_size = ia.size == ib.size
    if not (same_size and view is View.identity and reduced <= SAME_PICTURE_MAD):
        return Comparison(reduced_mad=reduced, full_mad=None, same_size=same_size)
    full_a, full_b = _grey(path_a, draft=False), _grey(path_b, draft=False)
    return Comparison(reduced, _mad(full_a, full_b), same_size, (grain(full_a), grain(full_b)))


def _compare_job(args: tuple[str, str, str]) -> Comparison:
    path_a, path_b, view = args
    return compare(Path(path_a), Path(path_b), View(view))


_CACHE_SCHEMA = pa.schema(
    [
        ("sha_a", pa.string()),
        ("sha_b", pa.string()),
        ("view", pa.string()),
        ("version", pa.string()),
        ("reduced_mad", pa.float64()),
        ("full_mad", pa.float64()),
        ("same_size", pa.bool_()),
        ("grain", pa.list_(pa.float64(), 2)),
    ]
)


class ComparisonCache:
    """Comparisons remembered by both files' sha256 and the view, so that a rerun over the
    same films decodes nothing; a changed check (``PIXEL_CHECK_VERSION``) starts afresh."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.known: dict[tuple[str, str, str], Comparison] = {}
        self.added = 0
        if path is not None and path.exists():
            for row in pq.ParquetFile(path).read().to_pylist():
                if row["version"] == PIXEL_CHECK_VERSION:
                    grain = tuple(row["grain"]) if row["grain"] is not None else None
                    self.known[(row["sha_a"], row["sha_b"], row["view"])] = Comparison(
                        row["reduced_mad"], row["full_mad"], row["same_size"], grain
                    )

    def compare_many(
        self,
        jobs: list[tuple[Path, str, Path, str, View]],
        workers: int = 0,
        on_progress: Callable[[int], None] | None = None,
    ) -> list[Comparison]:
        """``compare`` for each ``(path_a, sha_a, path_b, sha_b, view)``, in order; pairs not
        yet known run over ``workers`` processes (0: one per core)."""
        keys = [(sha_a, sha_b, view.value) for _, sha_a, _, sha_b, view in jobs]
        todo = {key: job for key, job in zip(keys, jobs, strict=True) if key not in self.known}
        args = [(str(a), str(b), view.value) for a, _, b, _, view in todo.values()]
        for key, result in zip(todo, ordered_map(_compare_job, args, workers, 2), strict=True):
            self.known[key] = result
            self.added += 1
            if on_progress:
                on_progress(1)
        if on_progress:
            on_progress(len(jobs) - len(todo))
        return [self.known[key] for key in keys]

    def save(self) -> None:
        """Write the cache, unless nothing was compared since it was read."""
        if self.path is None or not self.added:
            return
        rows = [
            {"sha_a": a, "sha_b": b, "view": v, "version": PIXEL_CHECK_VERSION, **asdict(c)}
            for (a, b, v), c in sorted(self.known.items())
        ]
        with atomic_path(self.path) as tmp:
            pq.write_table(pa.Table.from_pylist(rows, schema=_CACHE_SCHEMA), tmp)
