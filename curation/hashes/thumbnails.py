"""Small grey thumbnails of films, for the review page.

The hash step makes each film's thumbnail from the grey picture it has just decoded for the hash
(at draft scale, the same 1/8 scale a thumbnail of a panoramic film would be decoded at), so no
film is decoded a second time for the page, whose own decoding would be a good share of a build.
Thumbnails are cached by file sha256 beside the hashes; the page makes only those it does not
find (a film hashed on Ray, or a cache from before). Like the hash, EXIF orientation is ignored:
a thumbnail shows the pixels the decisions were made on.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from PIL import Image

from curation.core import cache as cache_file

THUMBNAILS_CACHE = "thumbnails.parquet"  # below BUILD/cache, beside the hashes
THUMB_BOX = (192, 192)  # a panoramic film becomes about 192 x 100, a turned one 100 x 192
THUMB_QUALITY = 80
THUMB_VERSION = f"thumbs-v1/{THUMB_BOX[0]}x{THUMB_BOX[1]}-lanczos-q{THUMB_QUALITY}-optimized"
CACHE_SCHEMA = pa.schema(
    [("sha256", pa.string()), ("jpeg", pa.binary()), ("width", pa.int32()), ("height", pa.int32())]
)


@dataclass(frozen=True)
class Thumbnail:
    """A film's review thumbnail: its JPEG bytes and size."""

    jpeg: bytes
    size: tuple[int, int]  # width, height in pixels


def thumbnail_size(width: int, height: int) -> tuple[int, int]:
    """The size of a film's thumbnail: its shape, within ``THUMB_BOX``, never enlarged."""
    scale = min(THUMB_BOX[0] / width, THUMB_BOX[1] / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def thumbnail_of(grey: Image.Image, film_size: tuple[int, int]) -> Thumbnail:
    """The thumbnail of a film of ``film_size`` from its grey picture at any decoded scale."""
    size = thumbnail_size(*(film_size if all(film_size) else grey.size))
    buffer = io.BytesIO()
    small = grey.resize(size, Image.Resampling.LANCZOS)
    small.save(buffer, "JPEG", quality=THUMB_QUALITY, optimize=True)
    return Thumbnail(buffer.getvalue(), size)


def film_thumbnail(source: Path) -> Thumbnail | str:
    """The thumbnail of the film at ``source``, decoded at the smallest draft scale that
    covers it, or why there is none."""
    try:
        with Image.open(source) as image:
            film_size = image.size
            image.draft("L", thumbnail_size(*film_size))
            grey = image.convert("L")
    except FileNotFoundError:
        return f"{source.name} does not exist."
    except (OSError, ValueError, Image.DecompressionBombError):
        return f"{source.name} is not a readable image."
    return thumbnail_of(grey, film_size)


def read_thumbnails(path: Path, wanted: Iterable[str]) -> dict[str, Thumbnail]:
    """The cached thumbnails of the wanted sha256s (a missing or stale cache: none)."""
    table = cache_file.read_cache(path, THUMB_VERSION, CACHE_SCHEMA)
    if table is None:
        return {}
    table = table.filter(pc.is_in(table["sha256"], pa.array(sorted(set(wanted)), pa.string())))
    return {
        row["sha256"]: Thumbnail(row["jpeg"], (row["width"], row["height"]))
        for row in table.to_pylist()
    }


def add_thumbnails(path: Path, made: dict[str, Thumbnail]) -> None:
    """Add ``made`` (sha256 -> thumbnail) to the cache at ``path``."""
    if not made:
        return
    table = cache_file.read_cache(path, THUMB_VERSION, CACHE_SCHEMA)
    known = {row["sha256"]: row for row in table.to_pylist()} if table is not None else {}
    for sha, thumb in made.items():
        known[sha] = {
            "sha256": sha,
            "jpeg": thumb.jpeg,
            "width": thumb.size[0],
            "height": thumb.size[1],
        }
    rows = [known[sha] for sha in sorted(known)]
    cache_file.write_cache(path, THUMB_VERSION, pa.Table.from_pylist(rows, schema=CACHE_SCHEMA))
