"""The originals step: keep original films only.

By name: the real archive files augmented copies under ``Augmentation JPG Images`` and gives
them the original's stem with a last digit of 2 (noise), 3 (scaling), 4 (mirror) or 5
(rotation); originals end in 1. A film is dropped by its name only when the original its name
points to is a film of the source: a film found only in the augmentation folder (its original
never filed) is the only copy of its picture, so it goes on as the film, annotations read, and
the same-picture step judges it like any other. Copies filed among the originals are found
by image later (``curation.same_picture.candidates``).
"""

from __future__ import annotations

from collections.abc import Iterable

from curation.core.records import Fate, Kind, SourceRecord, settle_many
from curation.core.vocabulary import Reason, reason_text

ORIGINALS_FOLDER = "original jpg images"
AUGMENTATION_KINDS = {"2": "noise", "3": "scaling", "4": "mirror", "5": "rotation"}


def named_original(folder: str, stem: str) -> bool:
    """True for a film the archive files as an original: its folder and its last digit."""
    return folder.lower() == ORIGINALS_FOLDER and stem.endswith("1")


def original_stems(records: Iterable[SourceRecord]) -> frozenset[str]:
    """The stems of the images the archive files as originals: what a copy's name may name."""
    return frozenset(
        r.stem for r in records if r.kind is Kind.image and named_original(r.folder, r.stem)
    )


def original_named(folder: str, stem: str, originals: frozenset[str]) -> str:
    """The original film a copy's name points to, when it is one of ``originals`` (the
    source's); "" for an original, or a film whose original is not in the source."""
    if named_original(folder, stem):
        return ""
    named = stem[:-1] + "1"
    return named if named in originals and named != stem else ""


def drop_augmented_by_name(records: list[SourceRecord]) -> list[SourceRecord]:
    """Drop every pending image that its folder or stem marks as an augmented copy of a film
    of the source; ``related`` names that film."""
    originals = original_stems(records)
    decisions = {}
    for r in records:
        if r.kind is not Kind.image or r.fate is not Fate.pending:
            continue
        original = original_named(r.folder, r.stem, originals)
        if not original:
            continue
        kind = AUGMENTATION_KINDS.get(r.stem[-1], "unknown kind")
        where = "augmentation folder" if r.folder.lower() != ORIGINALS_FOLDER else "stem rule"
        decisions[r.path] = (
            Fate.dropped,
            reason_text(Reason.augmented_copy, f"{kind} ({where})"),
            original,
        )
    return settle_many(records, decisions)
