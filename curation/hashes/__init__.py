"""Hashes: the 512-bit average hash of every film in every orientation, the pair search
over them, and the thumbnails made from the same decode. ``HashConfig`` is the hash step's
setting (standard library only: the command line reads it for its options)."""

from __future__ import annotations

from dataclasses import dataclass, field

from curation.core.vocabulary import Decode


@dataclass(frozen=True)
class HashConfig:
    """The hash step's setting."""

    decode: Decode = field(
        default=Decode.draft,
        metadata={"help": "Hash decoding: at reduced JPEG scale, or whole."},
    )
