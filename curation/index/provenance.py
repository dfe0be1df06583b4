"""Which film of a same-picture pair is the copy, from what the files themselves say.

The archive's augmented copies were written by a script, its originals exported by the
imaging system. Encoders leave a signature in the JPEG header: chroma subsampling, the
number of components and the marker segments (JFIF, EXIF, Adobe, comments, ICC profile,
progressive scan). The script's signatures are learned from the archive's own augmentation
folder (the originals folder may hold copies too, so it cannot be the reference): of a
group, a film written like the augmentation folder is a copy when another film's signature
never occurs there.

Only the header is read (Pillow parses it on open without decoding pixels): the index reads
each film's signature with its other header facts (``curation.index.index``), so this step opens
no file for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from PIL import Image, JpegImagePlugin

# A signature that wrote at least this share of the augmentation folder is the script's.
# Quantization tables are left out of the signature: they change with the quality setting,
# which a script or an imaging system may vary file by file; the structure does not.
SCRIPT_SHARE = 0.05
_MARKERS = ("jfif", "exif", "adobe", "comment", "icc_profile", "progressive")


UNREADABLE = "unreadable"  # the signature of a file whose header Pillow cannot read


def encoder_signature(image: Image.Image) -> str:
    """A short text naming how an opened image file was encoded (its header only)."""
    if image.format != "JPEG":
        return f"format={image.format}"
    sampling = JpegImagePlugin.get_sampling(image)
    markers = ",".join(m for m in _MARKERS if m in image.info)
    return f"{image.mode}|sampling={sampling}|{markers}"


@dataclass(frozen=True)
class EncoderEvidence:
    """How often each signature occurs in the archive's augmentation folder."""

    augmented: dict[str, int]

    @classmethod
    def learn(cls, signatures: Iterable[str]) -> EncoderEvidence:
        """The evidence of the augmentation folder's films' signatures."""
        return cls(dict(Counter(signatures)))

    def script_share(self, signature: str) -> float:
        """The share of the augmentation folder written with this signature (0: never)."""
        total = sum(self.augmented.values())
        return self.augmented.get(signature, 0) / total if total else 0.0


def scripted(share: float, shares: Iterable[float]) -> bool:
    """A film is named the copy by its signature when that signature wrote a real share of
    the augmentation folder and another film of its group has a signature the augmentation
    folder never shows; otherwise the signatures say nothing."""
    return share >= SCRIPT_SHARE and min(shares) == 0.0
