"""The 512-bit average hash that links look-alike films.

Definition (version ``hash_version(decode)``; every output records it):

1. Decode the JPEG. With ``decode="draft"`` (the default) Pillow's reduced-DCT decoding
   (``Image.draft("L", (256, 128))``) decodes at 1/2, 1/4 or 1/8 scale straight to luma,
   never below 256 x 128; with ``decode="full"`` the whole image is decoded.
2. Convert to grayscale (``"L"``, ITU-R 601-2 luma) and resize to 32 x 16 (width x height)
   with Lanczos resampling.
3. Bit ``i`` (row-major, top-left first) is 1 when that cell is brighter than the mean of
   the 512 cells. Bits are packed most significant first into 64 bytes (128 hex digits).

Each film is also hashed mirrored and turned, so that an augmented copy filed among the
originals can be recognised by image (see ``curation.index.originals``): the mirror and half-turn
grids are the identity grid flipped, the three-quarter-turn grid the quarter-turn grid
half-turned (a 32 x 16 grid of a portrait picture), so a film costs two resizes, not five.

``imagehash.average_hash`` only makes square hashes, and packing its bits through
``imagehash.ImageHash`` costs a share of every film's hash, so the grid and the packing
(``numpy.packbits``, the same bits as ``ImageHash``'s hex form) are written here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

import imagehash
import numpy as np
import simplejpeg
from PIL import Image

from curation.core.jpeg_check import check_decodable
from curation.core.vocabulary import Decode

GRID = (32, 16)
DRAFT_REQUEST = (GRID[0] * 8, GRID[1] * 8)
HASH_BYTES = GRID[0] * GRID[1] // 8
JPEG_START = b"\xff\xd8"  # start-of-image marker


class CorruptJpeg(ValueError):
    """A JPEG whose data is corrupt or ends early: libjpeg warned while decoding it."""


class RefusedJpeg(CorruptJpeg):
    """A JPEG that ``curation.core.jpeg_check`` does not clear for decoding (lossless, 12-bit,
    ...)."""


class View(StrEnum):
    """The orientations each film is hashed in; ``identity`` is the film's own hash."""

    identity = "identity"
    mirror = "mirror"
    rot90 = "rot90"
    rot180 = "rot180"
    rot270 = "rot270"


# How a picture is turned into each view (Pillow's transposes), and the view that turns it back.
TRANSPOSES = {
    View.mirror: Image.Transpose.FLIP_LEFT_RIGHT,
    View.rot90: Image.Transpose.ROTATE_90,
    View.rot180: Image.Transpose.ROTATE_180,
    View.rot270: Image.Transpose.ROTATE_270,
}


def turned_back(view: View) -> View:
    """The view that undoes ``view`` (a quarter turn undoes the other; the rest undo
    themselves)."""
    return {View.rot90: View.rot270, View.rot270: View.rot90}.get(view, view)


def hash_version(decode: Decode) -> str:
    """The version string recorded next to every hash made with this definition."""
    return f"ahash512-v2/{GRID[0]}x{GRID[1]}-lanczos-gt-mean/{decode}"


@dataclass(frozen=True)
class AverageHash512:
    """One public way in: ``AverageHash512(decode).hash_views(path)``."""

    decode: Decode = Decode.draft

    @property
    def version(self) -> str:
        """The version string of this definition (``hash_version``)."""
        return hash_version(self.decode)

    def open_grey(self, path: str | Path | BinaryIO, *, strict: bool = False) -> Image.Image:
        """Decode a film to grayscale, at reduced scale when ``decode == "draft"``.

        ``strict``: a JPEG is decoded by ``simplejpeg`` with libjpeg's warnings as errors
        (``CorruptJpeg``), since Pillow decodes a truncated or corrupt film "with warnings"
        and keeps it. Its reduced-scale pixels are Pillow's draft pixels exactly (one
        libjpeg-turbo scaled IDCT; ``tests/hashes/test_hashing.py`` checks), so the check costs no
        second decode."""
        if not strict:
            return self._pillow_grey(path)
        data = path.read() if hasattr(path, "read") else Path(path).read_bytes()
        if not data.startswith(JPEG_START):  # not a JPEG: Pillow decodes it as before
            return self._pillow_grey(io.BytesIO(data))
        refused = check_decodable(data)
        if refused:  # a legal JPEG can still crash libjpeg-turbo's scaled decode
            raise RefusedJpeg(refused)
        smallest = DRAFT_REQUEST if self.decode == "draft" else (1, 1)
        try:
            pixels = simplejpeg.decode_jpeg(
                data, colorspace="GRAY", strict=True, min_width=smallest[0], min_height=smallest[1]
            )
        except ValueError as error:
            raise CorruptJpeg(f"corrupt JPEG data: {error}") from None
        if self.decode == "draft":
            return Image.fromarray(pixels[:, :, 0])
        return self._pillow_grey(io.BytesIO(data))

    def _pillow_grey(self, path: str | Path | BinaryIO) -> Image.Image:
        with Image.open(path) as image:
            if self.decode == Decode.draft:
                image.draft("L", DRAFT_REQUEST)
            return image.convert("L")

    @staticmethod
    def grid(grey: Image.Image) -> Image.Image:
        """The 32 x 16 cells of an already decoded grayscale image."""
        return grey.resize(GRID, Image.Resampling.LANCZOS)

    @staticmethod
    def bits(cells: Image.Image) -> bytes:
        """The 64-byte hash of a grid: a cell brighter than the mean is 1, row-major, MSB first."""
        values = np.asarray(cells, dtype=np.float64)
        return np.packbits(values > values.mean()).tobytes()

    def hash_image(self, grey: Image.Image) -> bytes:
        """The 64-byte hash of an already decoded grayscale image."""
        return self.bits(self.grid(grey))

    def hash_grey_views(self, grey: Image.Image) -> dict[View, bytes]:
        """The hash of a decoded grayscale film in each orientation of ``View``."""
        cells = self.grid(grey)
        turned = self.grid(grey.transpose(Image.Transpose.ROTATE_90))
        grids = {
            View.identity: cells,
            View.mirror: cells.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
            View.rot90: turned,
            View.rot180: cells.transpose(Image.Transpose.ROTATE_180),
            View.rot270: turned.transpose(Image.Transpose.ROTATE_180),
        }
        return {view: self.bits(grids[view]) for view in View}

    def hash_views(self, path: str | Path | BinaryIO, *, strict: bool = False) -> dict[View, bytes]:
        """The film's hash in each orientation of ``View`` (``strict``: see ``open_grey``)."""
        return self.hash_grey_views(self.open_grey(path, strict=strict))


def short_hashes(grey: Image.Image) -> dict[str, bytes]:
    """imagehash's 64-bit perceptual and difference hashes of a decoded grayscale film (the
    audit's ``--method phash/dhash``)."""
    return {
        "phash": bytes.fromhex(str(imagehash.phash(grey))),
        "dhash": bytes.fromhex(str(imagehash.dhash(grey))),
    }


def hamming(a: bytes, b: bytes) -> int:
    """Number of differing bits between two equal-length hashes."""
    return int.from_bytes(a, "big").__xor__(int.from_bytes(b, "big")).bit_count()
