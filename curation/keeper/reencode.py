"""Which of two films was written from the other: re-encode one film's picture with the
other's own JPEG tables and see whether that gives the other's pixels.

A copy written by a script (a mirror, a turn, a re-save) is the JPEG encoding of its
source's decoded picture. Encoding that picture again, turned the same way and with the
copy's quantisation tables, gives the copy's pixels exactly; going the other way, the
original's pixels are not the encoding of the copy's picture, since the original was written
from the imaging system's own data. This is the only evidence left when a copy is written at
its source's size, quality and encoder: a mirror of a nearly symmetric panoramic film, say,
which no statistic of the picture tells from its original (``curation.keeper.rules``).

It is read only for films that every earlier keeper rule leaves tied (a full decode and an
encode per film and direction: ``pairs_to_reencode`` in ``curation.keeper.groups``).

Measured on the 120 real films of ``../shared/realfilms-dev`` (``python -m bench.keeper.altered``,
``reencoding`` in ``bench/keeper/keeper.json``: every alteration of ``bench.keeper.altered``'s table
written by Pillow at quality 75 and at the originals' own 95, and 24 films upscaled to archive sizes
with their mirrors): re-encoding the original gave every re-encoded, grey, mirrored and
turned copy's pixels exactly (share missed 0.0000, at 512 px and upscaled, where a mirror
moves the 8 x 8 block grid), while re-encoding such a copy missed at least 0.0408 of the
original's pixels at 512 px and 0.0314 upscaled. Every other alteration of one frame (tone
curves, CLAHE, rotation by a few degrees; blur, noise, sharpening) missed at least 0.70
both ways, the two ways within 1% of each other, so the rule stays silent there (a crop or
a pad changes the frame: nothing to re-encode). ``REENCODED_SHARE`` sits at about
half the original's smallest miss: a script whose encoder rounds otherwise than libjpeg's
integer DCT may miss a little. Smooth drawings re-encode almost unchanged (a project-made
film at quality 90 missed 0.0003 re-encoded from its mirror), so the copy must also miss
``REENCODED_RATIO`` times fewer than the other way: on the real films the copy missed none.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from curation.hashes.hashing import TRANSPOSES, View, turned_back

REENCODED_SHARE = 0.015  # largest share of pixels a re-encoding may miss and still reproduce
REENCODED_RATIO = 10  # and it must miss ten times fewer than the re-encoding the other way


@dataclass(frozen=True)
class ReencodeJob:
    """A confirmed pair: film ``a`` (at ``path_a``) turned by ``view`` is film ``b``."""

    path_a: str
    path_b: str
    view: View


def reencoding_miss(target: Image.Image, source: Image.Image, view: View) -> float | None:
    """Share of ``target``'s pixels that encoding ``source``'s picture, turned by ``view``,
    with ``target``'s own quantisation tables does not give; ``None`` when the frames differ
    or ``target`` carries no tables (not a grey or colour JPEG)."""
    tables = getattr(target, "quantization", None)
    if not tables or target.mode not in ("L", "RGB"):
        return None
    picture = source.convert(target.mode)
    if view in TRANSPOSES:
        picture = picture.transpose(TRANSPOSES[view])
    if picture.size != target.size:
        return None
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", qtables=tables)
    with Image.open(buffer) as again:
        redone = np.asarray(again.convert("L"))
    return float(np.mean(redone != np.asarray(target.convert("L"))))


def reencoding_misses(job: ReencodeJob) -> tuple[float | None, float | None]:
    """Both directions of one pair (worker side): B from A's picture, A from B's."""
    with Image.open(Path(job.path_a)) as a, Image.open(Path(job.path_b)) as b:
        a.load()
        b.load()
        b_from_a = reencoding_miss(b, a, job.view)
        a_from_b = reencoding_miss(a, b, turned_back(job.view))
    return b_from_a, a_from_b


def _reproduced(miss: float | None, other: float | None) -> bool:
    """Re-encoding gives this film's pixels (to ``REENCODED_SHARE``), and misses at least
    ``REENCODED_RATIO`` times fewer of them than the re-encoding the other way."""
    if miss is None or miss > REENCODED_SHARE:
        return False
    return other is None or miss * REENCODED_RATIO < other


def written_from(
    a: str, b: str, misses: tuple[float | None, float | None]
) -> tuple[str, str] | None:
    """``(copy, source)`` when one film of the pair is its partner re-encoded and the other
    is not (both, or neither: the rule is silent)."""
    b_from_a, a_from_b = misses
    if _reproduced(b_from_a, a_from_b):
        return b, a
    if _reproduced(a_from_b, b_from_a):
        return a, b
    return None
