"""Hostile fixtures built inside the tests (the sample source is not changed for them): films
with a bright lesion where their annotation says, and the ways a film or an XML can lie."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image

LESIONS = "Periapical Dataset/Periapical Lesions"
FILMS = f"{LESIONS}/Original JPG Images"
ANNOTS = f"{LESIONS}/Image Annots"
FILM_SIZE = (320, 160)  # width, height: above the index's minimum film size
BOX = (40, 30, 120, 70)  # x1, y1, x2, y2 in pixels of the stored frame
ORIENTATION_TAG = 0x0112


def film_bytes(seed: int, *, orientation: int | None = None, size=FILM_SIZE) -> bytes:
    """A film textured by ``seed`` (grey levels up to 160) with a bright lesion at ``BOX``,
    saved with an EXIF orientation tag when one is given."""
    rng = np.random.default_rng(seed)
    width, height = size
    coarse = (rng.random((max(height // 16, 1), max(width // 16, 1))) * 160).astype(np.uint8)
    pixels = np.asarray(Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC))
    pixels = pixels.copy()
    x1, y1, x2, y2 = BOX
    pixels[y1:y2, x1:x2] = 240
    buffer = io.BytesIO()
    exif = Image.Exif()
    if orientation is not None:
        exif[ORIENTATION_TAG] = orientation
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=95, exif=exif.tobytes())
    return buffer.getvalue()


def voc(stem: str, boxes: list[tuple] | None = None, *, filename: str | None = None) -> str:
    """A VOC annotation: ``boxes`` of ``(grade, x1, y1, x2, y2)``, by default one grade-4 box at
    ``BOX``; ``filename`` is what the XML claims its image is called."""
    boxes = [(4, *BOX)] if boxes is None else boxes
    objects = "".join(
        f"<object><name>{g}</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin>"
        f"<xmax>{c}</xmax><ymax>{d}</ymax></bndbox></object>"
        for g, a, b, c, d in boxes
    )
    name = filename if filename is not None else f"{stem}.jpg"
    return f"<annotation><filename>{name}</filename>{objects}</annotation>"


def write_source(root: Path, films: dict[str, tuple[bytes, str]]) -> Path:
    """A folder source in the real layout: ``{stem: (jpeg bytes, xml text)}``; every file
    dated long ago, so a cache may remember it."""
    (root / FILMS).mkdir(parents=True, exist_ok=True)
    (root / ANNOTS).mkdir(parents=True, exist_ok=True)
    for stem, (jpeg, xml) in films.items():
        (root / FILMS / f"{stem}.jpg").write_bytes(jpeg)
        (root / ANNOTS / f"{stem}.xml").write_text(xml, encoding="utf-8")
    for path in root.rglob("*.*"):
        os.utime(path, ns=(10**18, 10**18))
    return root


def truncated_header_jpeg() -> bytes:
    """A 64 x 64 JPEG whose header claims 6300 x 6300: Pillow decodes it "with warnings"."""
    data = bytearray(film_bytes(1, size=(64, 64)))
    frame = data.index(b"\xff\xc0")
    data[frame + 5 : frame + 9] = (6300).to_bytes(2, "big") * 2
    return bytes(data)


def bit_flipped_jpeg() -> bytes:
    """A film with one bit of its entropy-coded data flipped (libjpeg warns and goes on)."""
    data = bytearray(film_bytes(2))
    start = data.index(b"\xff\xda") + 40
    data[start + (len(data) - start) * 4 // 10] ^= 0x08
    return bytes(data)
