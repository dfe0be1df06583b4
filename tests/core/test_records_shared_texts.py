"""A record's texts that many records repeat (folder, encoder, a reason without a film in it)
are one string for all of them; a reason that names the record's own film is left out of the
interpreter's table of interned texts, where each entry cost about 44 B and shared nothing
(half an archive's files are annotations, each with its film's id in its reason)."""

from __future__ import annotations

import sys

import pytest

from curation.core.records import Fate, Kind, SourceRecord
from curation.core.vocabulary import Reason, reason_text


def settled(path: str, kind: Kind, reason: Reason, detail: str) -> SourceRecord:
    record = SourceRecord(path, kind, path.rsplit("/", 1)[-1].split(".")[0], folder="Images")
    return record.settle(Fate.kept, reason_text(reason, detail), "Images/film-7.jpg")


def the_interned(text: str) -> str:
    return sys.intern("".join(list(text)))  # an equal text made apart from the record's


@pytest.mark.parametrize(
    ("reason", "detail"),
    [
        (Reason.annotation_of_kept, "film-7"),
        (Reason.annotation_of_dropped, "film-7"),
        (Reason.annotation_of_rejected, "film-7"),
        (Reason.refiling, "the same radiograph as film-3 (re-filing)"),
        (Reason.augmented_copy_among_originals, "cropped of film-3 (hash distance 4)"),
    ],
)
def test_a_reason_naming_its_own_film_is_not_interned(reason: Reason, detail: str) -> None:
    record = settled("Annotations/film-7.xml", Kind.annotation, reason, detail)
    assert record.reason == f"{reason}: {detail}"
    assert the_interned(record.reason) is not record.reason


@pytest.mark.parametrize(
    ("reason", "detail"),
    [(Reason.kept, "train"), (Reason.augmented_copy, "rotated (augmentation folder)")],
)
def test_a_reason_records_share_is_one_text(reason: Reason, detail: str) -> None:
    one = settled("Images/film-7.jpg", Kind.image, reason, detail)
    other = settled("Images/film-8.jpg", Kind.image, reason, detail)
    assert one.reason is other.reason is the_interned(one.reason)
    assert one.folder is other.folder is the_interned("Images")
