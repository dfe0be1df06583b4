"""The originals step: keep original films only.

By name: the real archive files augmented copies under ``Augmentation JPG Images`` and gives
them the original's stem with a last digit of 2 (noise), 3 (scaling), 4 (mirror) or 5
(rotation); originals end in 1. Copies filed among the originals are found by image later
(``curation.near_identical.candidates``).
"""

from __future__ import annotations

from curation.core.records import Fate, Kind, SourceRecord, settle_many
from curation.core.vocabulary import Reason, reason_text

ORIGINALS_FOLDER = "original jpg images"
AUGMENTATION_KINDS = {"2": "noise", "3": "scaling", "4": "mirror", "5": "rotation"}


def named_original(folder: str, stem: str) -> bool:
    """True for a film the archive files as an original: its folder and its last digit."""
    return folder.lower() == ORIGINALS_FOLDER and stem.endswith("1")


def drop_augmented_by_name(records: list[SourceRecord]) -> list[SourceRecord]:
    """Drop every pending image that its folder or stem marks as an augmented copy."""
    decisions = {}
    for r in records:
        if (
            r.kind is not Kind.image
            or r.fate is not Fate.pending
            or named_original(r.folder, r.stem)
        ):
            continue
        kind = AUGMENTATION_KINDS.get(r.stem[-1], "unknown kind")
        where = "augmentation folder" if r.folder.lower() != ORIGINALS_FOLDER else "stem rule"
        decisions[r.path] = (
            Fate.dropped,
            reason_text(Reason.augmented_copy, f"{kind} ({where})"),
            r.stem[:-1] + "1",
        )
    return settle_many(records, decisions)
