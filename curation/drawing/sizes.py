"""The sizes a sample film is drawn at, and a lesion box's shape."""

from __future__ import annotations

# Real films are about 2,300-2,640 x 1,252-1,292 px; most sizes are not multiples of 8.
WIDTH_RANGE = (2300, 2640)
HEIGHT_RANGE = (1252, 1292)
BOMB_SIZE = (20_000, 12_000)  # a planted decompression bomb's declared size

Box = tuple[int, int, int, int, int]
"""A lesion box in full-resolution pixels: x1, y1, x2, y2 (ordered corners) and PAI grade."""
