"""The bytes a film is published with: the source JPEG's own segments, copied, without what
it carries beside the picture.

A source film may carry text about its patient where no reader of the dataset looks: bytes
after the end-of-image marker, COM comments, EXIF and XMP (APP1) or any other application
segment. The published bytes keep every segment the decoder reads (quantisation and Huffman
tables, frame, restart interval, scans with their entropy-coded data, copied byte for byte:
the image data is never re-encoded), plus the two application segments that decide how
libjpeg turns the samples into colours: APP0 JFIF (its fixed 14-byte header; an embedded
thumbnail is dropped) and APP14 Adobe (its colour-transform flag). Everything else goes: COM,
APP1 (EXIF: the index already refuses an orientation other than 1, so no reader turns the
published picture differently), APP2 (an ICC profile is not applied by Pillow or
``datasets``; it only tells colour-managed viewers how to show the colours) and the rest,
bytes after EOI, and fill bytes between segments. So the decoded pixels are the source's
exactly (``tests/hostile/test_hostile_data.py`` checks), and the same source gives the same bytes.
"""

from __future__ import annotations

import re
import struct

SOI, EOI, SOS = 0xD8, 0xD9, 0xDA
APP0, APP14, COM = 0xE0, 0xEE, 0xFE
STANDALONE = {0x01, *range(0xD0, 0xD8)}  # TEM and restart markers carry no length
JFIF_HEADER = 14  # "JFIF\0", version, units, densities, thumbnail width and height
ADOBE_HEADER = 12  # "Adobe", version, flags0, flags1, colour transform
# In entropy-coded data, 0xFF is a marker unless a stuffed zero or a restart marker follows
# (searched by ``re`` in C: 3x faster than a Python loop over every 0xFF, on corpus films).
_MARKER_IN_SCAN = re.compile(rb"\xff(?![\x00\xd0-\xd7])")


class UnpublishableJpeg(ValueError):
    """The film's segments cannot be walked to its end marker; the message says where."""


def publishable_jpeg(data: bytes) -> bytes:
    """``data`` with only the segments the picture needs (module docstring)."""
    if not data.startswith(b"\xff\xd8"):
        raise UnpublishableJpeg("no start-of-image marker")
    out = [b"\xff\xd8"]
    at = 2
    while True:
        if at >= len(data) or data[at] != 0xFF:
            raise UnpublishableJpeg(f"no marker at byte {at}: the file ends or is damaged there")
        while at + 1 < len(data) and data[at + 1] == 0xFF:  # fill bytes
            at += 1
        if at + 1 >= len(data):
            raise UnpublishableJpeg("the file ends before its end-of-image marker")
        marker = data[at + 1]
        if marker == EOI:
            out.append(b"\xff\xd9")
            return b"".join(out)
        if marker in STANDALONE or marker == SOI:
            out.append(data[at : at + 2])
            at += 2
            continue
        if at + 4 > len(data):
            raise UnpublishableJpeg(f"segment FF{marker:02X} cut at the end of the file")
        (length,) = struct.unpack_from(">H", data, at + 2)
        end = at + 2 + length
        if length < 2 or end > len(data):
            raise UnpublishableJpeg(f"segment FF{marker:02X} runs past the end of the file")
        segment = _kept_segment(marker, data[at + 4 : end])
        if segment is not None:
            out.append(segment)
        at = end
        if marker == SOS:
            scan_end = _scan_end(data, at)
            out.append(data[at:scan_end])
            at = scan_end


def _kept_segment(marker: int, payload: bytes) -> bytes | None:
    """The segment as published, or None when it goes."""
    if marker == APP0:
        if not payload.startswith(b"JFIF\x00") or len(payload) < JFIF_HEADER:
            return None
        payload = payload[: JFIF_HEADER - 2] + b"\x00\x00"  # no thumbnail
    elif marker == APP14:
        if not payload.startswith(b"Adobe") or len(payload) < ADOBE_HEADER:
            return None
        payload = payload[:ADOBE_HEADER]
    elif 0xE1 <= marker <= 0xEF or marker == COM:
        return None
    return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload


def _scan_end(data: bytes, at: int) -> int:
    """Where the entropy-coded data starting at ``at`` ends: the first marker other than a
    stuffed 0xFF00 or a restart marker (or the end of the file); fill bytes before a marker
    are skipped by the caller."""
    found = _MARKER_IN_SCAN.search(data, at)
    if found is None or found.start() + 1 >= len(data):
        return len(data)
    return found.start()
