"""Which JPEGs may be handed to a native decoder: the header check every decode relies on.

A legal but rare JPEG can take the whole process down inside libjpeg-turbo: a lossless
(SOF3) film decoded at reduced scale by simplejpeg corrupts the heap (``free(): invalid next
size``), which no ``try`` can catch. So nothing is decoded that this check has not cleared:
the markers up to the first scan are read (no pixel is decoded) and only what the archive's
films are, and every decoder here handles, passes: baseline, extended or progressive
Huffman-coded JPEG (SOF0, SOF1, SOF2) with 8-bit samples, one or three components, sane
sizes and sampling factors. Lossless, hierarchical and arithmetic-coded processes, 12- and
16-bit samples, a second frame or a scan before its frame are refused with the reason.

``check_decodable(data)`` is the one entry: the index step records its answer as the film's
rejection, and the hash step asks again before its decode (a cached index may predate it);
any new code that gives bytes to simplejpeg, Pillow or ``cv2.imdecode`` calls it first.
``decode_failure(error)`` says what a failed decode of bytes in memory found, for a message
that names the file itself.
"""

from __future__ import annotations

import struct

JPEG_START = b"\xff\xd8"
DECODED = {0xC0: "baseline", 0xC1: "extended sequential", 0xC2: "progressive"}
REFUSED = {
    0xC3: "lossless",
    0xC5: "differential sequential (hierarchical)",
    0xC6: "differential progressive (hierarchical)",
    0xC7: "differential lossless (hierarchical)",
    0xC9: "arithmetic-coded sequential",
    0xCA: "arithmetic-coded progressive",
    0xCB: "arithmetic-coded lossless",
    0xCD: "arithmetic-coded differential sequential",
    0xCE: "arithmetic-coded differential progressive",
    0xCF: "arithmetic-coded differential lossless",
}
OTHER_REFUSED = {0xCC: "arithmetic coding conditioning (DAC)", 0xDE: "hierarchical (DHP)"}
# Segments that may come before the first scan and carry nothing the check needs.
PASSED = {0xC4, 0xDB, 0xDD, 0xDF, 0xFE} | set(range(0xE0, 0xF0))
SOS, EOI = 0xDA, 0xD9
MAX_SIDE = 65_500  # libjpeg's own limit (JPEG_MAX_DIMENSION)
MAX_PIXELS = 40_000_000  # what a decode may be asked to allocate (the index's film limit too)
WHAT_IS_DECODED = "only baseline or progressive Huffman-coded 8-bit JPEG is decoded"


def check_decodable(data: bytes) -> str | None:
    """Why ``data`` must not be decoded (one phrase), or None when its header is cleared."""
    if not data.startswith(JPEG_START):
        return "not a JPEG: no start-of-image marker"
    frame: tuple[int, ...] | None = None
    at = 2
    while True:
        marker, at = _next_marker(data, at)
        if marker is None:
            return "JPEG ends before its image data (no start of scan)"
        if marker == EOI:
            return "JPEG ends before its image data (end marker before any scan)"
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # restart markers and TEM stand alone
            continue
        if at + 2 > len(data):
            return f"JPEG header cut inside the segment of marker FF{marker:02X}"
        (length,) = struct.unpack_from(">H", data, at)
        payload = data[at + 2 : at + length]
        if length < 2 or at + length > len(data):
            return f"JPEG segment FF{marker:02X} claims {length} bytes past the end of the file"
        at += length
        if marker in DECODED or marker in REFUSED:
            if frame is not None:
                return "JPEG with a second frame header; " + WHAT_IS_DECODED
            problem = _frame_problem(marker, payload)
            if problem:
                return problem
            frame = tuple(payload[6 + 3 * k] for k in range(payload[5]))
        elif marker in OTHER_REFUSED:
            return f"unsupported JPEG process: {OTHER_REFUSED[marker]}; " + WHAT_IS_DECODED
        elif marker == SOS:
            return _scan_problem(payload, frame)
        elif marker not in PASSED:
            return f"JPEG with an unknown marker FF{marker:02X} before its image data"


def _next_marker(data: bytes, at: int) -> tuple[int | None, int]:
    """The marker at ``at`` (fill bytes 0xFF skipped) and the offset after it; None at the end
    or where a marker should be and is not."""
    if at >= len(data) or data[at] != 0xFF:
        return None, at
    while at < len(data) and data[at] == 0xFF:
        at += 1
    if at >= len(data):
        return None, at
    return data[at], at + 1


def _frame_problem(marker: int, payload: bytes) -> str | None:
    if marker in REFUSED:
        name = f"{REFUSED[marker]} (SOF{marker - 0xC0})"
        return f"unsupported JPEG process: {name}; {WHAT_IS_DECODED}"
    if len(payload) < 6:
        return "JPEG frame header too short"
    precision, height, width, components = struct.unpack_from(">BHHB", payload)
    if precision != 8:
        return f"{precision}-bit JPEG samples; " + WHAT_IS_DECODED
    if components not in (1, 3):
        return f"JPEG with {components} colour components; only grey (1) or colour (3) is decoded"
    if len(payload) != 6 + 3 * components:
        return "JPEG frame header length does not match its component count"
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE) or width * height > MAX_PIXELS:
        return (
            f"JPEG frame of {width}x{height} px, outside 1..{MAX_SIDE} px a side "
            f"or over {MAX_PIXELS} px"
        )
    ids = payload[6::3]
    if len(set(ids)) != components:
        return "JPEG frame names one component twice"
    for k in range(components):
        sampling, table = payload[7 + 3 * k], payload[8 + 3 * k]
        if not (1 <= sampling >> 4 <= 4 and 1 <= sampling & 15 <= 4) or table > 3:
            return "JPEG frame with invalid sampling factors or quantisation table"
    return None


def _scan_problem(payload: bytes, frame: tuple[int, ...] | None) -> str | None:
    if frame is None:
        return "JPEG scan before its frame header"
    if not payload or not 1 <= payload[0] <= len(frame) or len(payload) != 4 + 2 * payload[0]:
        return "JPEG scan header does not match its frame"
    if any(payload[1 + 2 * k] not in frame for k in range(payload[0])):
        return "JPEG scan names a component its frame does not have"
    return None


def decode_failure(error: Exception) -> str:
    """What a failed decode found, in words fit for a message naming the file: Pillow's
    "cannot identify image file" names the in-memory buffer it was given
    (``<_io.BytesIO object at 0x...>``), which says nothing to the reader."""
    from PIL import UnidentifiedImageError  # only on the failure path

    if isinstance(error, UnidentifiedImageError):
        return "no image format recognises its bytes"
    return f"{type(error).__name__}: {error}"
