"""Which film of a same-picture pair is the copy, from what the files themselves say.

The archive's augmented copies were written by a script, its originals exported by the
imaging system. Encoders leave a signature in the JPEG header: the quantization tables,
chroma subsampling, the number of components and the marker segments (JFIF, EXIF, Adobe,
comments, ICC profile, progressive scan). The signatures are learned from the archive's own
augmentation folder against its originals folder; a film whose signature is markedly more
typical of the augmentation folder than the other film's is the copy.

Only the header is read (Pillow parses it on open without decoding pixels).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, JpegImagePlugin

# How much more typical of the augmentation folder one film's signature must be than the
# other's (a likelihood ratio) before it decides which is the copy.
DECISIVE_RATIO = 8.0
_MARKERS = ("jfif", "exif", "adobe", "comment", "icc_profile", "progressive")


def encoder_signature(path: Path) -> str:
    """A short text naming how the file was encoded (header only; never decodes pixels)."""
    try:
        with Image.open(path) as image:
            if image.format != "JPEG":
                return f"format={image.format}"
            tables = getattr(image, "quantization", None) or {}
            digest = hashlib.sha256(b"".join(bytes(tables[k]) for k in sorted(tables))).hexdigest()[
                :12
            ]
            sampling = JpegImagePlugin.get_sampling(image)
            markers = ",".join(m for m in _MARKERS if m in image.info)
            return f"{image.mode}|sampling={sampling}|tables={digest}|{markers}"
    except (OSError, ValueError, SyntaxError):
        return "unreadable"


@dataclass(frozen=True)
class EncoderEvidence:
    """Signature counts among the archive's augmented copies and among its originals."""

    augmented: dict[str, int]
    originals: dict[str, int]

    @classmethod
    def learn(cls, augmented: Iterable[Path], originals: Iterable[Path]) -> EncoderEvidence:
        return cls(
            dict(Counter(map(encoder_signature, augmented))),
            dict(Counter(map(encoder_signature, originals))),
        )

    def copy_likeness(self, signature: str) -> float:
        """How much more often the signature occurs among augmented copies than among
        originals (add-one-half smoothed; 1.0 when nothing was learned)."""
        n_aug, n_orig = sum(self.augmented.values()), sum(self.originals.values())
        share_aug = (self.augmented.get(signature, 0) + 0.5) / (n_aug + 1)
        share_orig = (self.originals.get(signature, 0) + 0.5) / (n_orig + 1)
        return share_aug / share_orig

    def which_is_copy(self, signatures: dict[str, str]) -> tuple[str, str] | None:
        """For two films (id -> signature): ``(copy, evidence)`` when one film's signature is
        decisively more typical of augmented copies, else None."""
        (a, sig_a), (b, sig_b) = sorted(signatures.items())
        like_a, like_b = self.copy_likeness(sig_a), self.copy_likeness(sig_b)
        if max(like_a, like_b) < DECISIVE_RATIO * min(like_a, like_b):
            return None
        copy = a if like_a > like_b else b
        ratio = max(like_a, like_b) / min(like_a, like_b)
        return copy, f"encoder signature {ratio:.0f}x more typical of the augmentation folder"
