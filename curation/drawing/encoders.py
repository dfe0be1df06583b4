"""The two encoder signatures of the archive, and the broken encodings planted as bad inputs.

Originals come from an imaging system's export: grayscale or 4:4:4 colour JPEG, its own
quantization tables, an EXIF block naming the device and a COM comment, and no JFIF header.
Augmented copies were written by an augmentation script that saved with Pillow's defaults:
RGB, JFIF header, the standard (Annex K) tables at quality 75, 4:2:0 chroma, no EXIF, no
comment. Both the augmentation folder's copies and the copies filed among the originals carry
the script's signature.
"""

from __future__ import annotations

import io
import struct

import numpy as np
from PIL import Image

from curation.drawing.sizes import BOMB_SIZE

SYSTEM = "imaging-system"
SCRIPT = "pillow-script"
SIGNATURES = {
    SYSTEM: (
        "originals: mode L (1 component) or RGB 4:4:4, own quantization tables scaled by the "
        "film's quality, EXIF (Make/Model/Software) and COM comment, no JFIF APP0"
    ),
    SCRIPT: (
        "augmented copies: Pillow defaults (RGB, JFIF APP0, standard tables at quality 75, "
        "4:2:0), no EXIF, no comment"
    ),
}
DEVICE_MAKE = "Synthetic Imaging"
DEVICE_MODEL = "SynthPan DX-1"
DEVICE_COMMENT = b"SynthPan DX-1 export"

# The device's base tables (natural order): coarser towards high frequencies, unlike Annex K.
_BASE_LUMA = [12 + 3 * (row + col) + (row * col) // 2 for row in range(8) for col in range(8)]
_BASE_CHROMA = [17 + 4 * (row + col) for row in range(8) for col in range(8)]


def _scaled(table: list[int], quality: int) -> list[int]:
    """The IJG quality scaling applied to the device's own base table."""
    factor = 5000 // quality if quality < 50 else 200 - 2 * quality
    return [min(max((value * factor + 50) // 100, 1), 255) for value in table]


def _device_exif() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = DEVICE_MAKE
    exif[0x0110] = DEVICE_MODEL
    exif[0x0131] = "pano-export 3.2"
    return exif.tobytes()


_EXIF = _device_exif()


def _without_jfif(data: bytes) -> bytes:
    """Drop the APP0 (JFIF) segment libjpeg writes, as the device's export never has one."""
    if data[2:4] != b"\xff\xe0":
        return data
    (length,) = struct.unpack(">H", data[4:6])
    return data[:2] + data[4 + length :]


def system_jpeg(film: np.ndarray, mode: str, quality: int) -> bytes:
    """An original as the imaging system exports it."""
    buffer = io.BytesIO()
    image = Image.fromarray(film).convert(mode)
    tables = [_scaled(_BASE_LUMA, quality)]
    if mode != "L":
        tables.append(_scaled(_BASE_CHROMA, quality))
    image.save(buffer, "JPEG", qtables=tables, subsampling=0, exif=_EXIF, comment=DEVICE_COMMENT)
    return _without_jfif(buffer.getvalue())


def script_jpeg(film: np.ndarray) -> bytes:
    """An augmented copy as the augmentation script saved it: Pillow's defaults."""
    buffer = io.BytesIO()
    Image.fromarray(film).convert("RGB").save(buffer, "JPEG")
    return buffer.getvalue()


def plain_jpeg(film: np.ndarray, mode: str, quality: int) -> bytes:
    """A JPEG with no signature to speak of, for planted bad inputs (e.g. CMYK)."""
    buffer = io.BytesIO()
    Image.fromarray(film).convert(mode).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def png16(film: np.ndarray) -> bytes:
    """16-bit grayscale PNG data (mode I;16), planted under a .jpg name."""
    buffer = io.BytesIO()
    Image.fromarray(film.astype(np.uint16) * 257).save(buffer, "PNG", compress_level=1)
    return buffer.getvalue()


def truncated(data: bytes) -> bytes:
    """A JPEG cut off after two fifths, like an interrupted copy."""
    return data[: len(data) * 2 // 5]


def bomb_jpeg() -> bytes:
    """A 16 x 16 JPEG whose frame header claims ``BOMB_SIZE``: a tiny file, a huge image."""
    buffer = io.BytesIO()
    Image.new("L", (16, 16), 90).save(buffer, "JPEG", quality=75)
    data = bytearray(buffer.getvalue())
    frame = data.index(b"\xff\xc0")
    width, height = BOMB_SIZE
    data[frame + 5 : frame + 9] = struct.pack(">HH", height, width)
    return bytes(data)
