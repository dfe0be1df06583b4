"""Small grey thumbnails of films, for the review page.

The hash step makes each film's thumbnail from the grey picture it has just decoded for the hash
(at draft scale, the same 1/8 scale a thumbnail of a panoramic film would be decoded at), so no
film is decoded a second time for the page, whose own decoding would be a good share of a build.
The worker that makes a thumbnail stores it (an ``ArrayStore`` by file sha256, below the build's
cache), so thumbnails never travel to the driver: held there until written, they were most of
the hash step's driver memory (about 4 KB a film). The page reads those it shows and makes
only those it does not find (a film whose hash was cached before its thumbnail). Like the
hash, EXIF orientation is ignored: a thumbnail shows the pixels the decisions were made on.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from curation.core.store import ArrayStore

THUMBNAILS_STORE = "thumbnails"  # below BUILD/cache, beside the hashes
THUMB_BOX = (192, 192)  # a panoramic film becomes about 192 x 100, a turned one 100 x 192
THUMB_QUALITY = 80
THUMB_VERSION = f"thumbs-v1/{THUMB_BOX[0]}x{THUMB_BOX[1]}-lanczos-q{THUMB_QUALITY}-optimized"


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


def thumbnail_store(root: Path) -> ArrayStore:
    """The thumbnails below ``root``, one file per film content, for this thumbnail version."""
    return ArrayStore(root, THUMB_VERSION)


def store_thumbnail(store: ArrayStore, sha256: str, thumbnail: Thumbnail) -> None:
    """Keep ``thumbnail`` as the one of the content ``sha256``."""
    jpeg = np.frombuffer(thumbnail.jpeg, np.uint8)
    store.put(sha256, {"jpeg": jpeg, "size": np.array(thumbnail.size, np.int32)})


def read_thumbnails(store: ArrayStore, wanted: Iterable[str]) -> dict[str, Thumbnail]:
    """The stored thumbnails of the wanted sha256s (a file missing, damaged or not a
    thumbnail's: none for that content)."""
    found = {}
    for sha256 in sorted(set(wanted)):
        arrays = store.get(sha256)
        if arrays is None or set(arrays) != {"jpeg", "size"}:
            continue
        if arrays["jpeg"].dtype != np.uint8 or arrays["size"].shape != (2,):
            continue
        width, height = (int(n) for n in arrays["size"])
        found[sha256] = Thumbnail(arrays["jpeg"].tobytes(), (width, height))
    return found
