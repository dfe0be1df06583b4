"""The record every step passes on: one per source file, carrying its fate.

Steps never delete a record; they only settle its fate, so the manifest at the end accounts
for every file in the source ("nothing is silently lost").
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pyarrow as pa

from curation.core.atomic_parquet import write_parquet_rows
from curation.core.vocabulary import Reason, reason_text


class Fate(StrEnum):
    """What became of a source file. ``pending`` only lives between steps."""

    pending = "pending"
    kept = "kept"
    dropped = "dropped"
    rejected = "rejected"
    ignored = "ignored"


class Kind(StrEnum):
    """What a source file is: a film, its annotation, or anything else."""

    image = "image"
    annotation = "annotation"
    other = "other"


# Fields whose few distinct values most records repeat: one string each, not one per record
# (the reason too, unless it is one of ``OWN_REASONS``).
SHARED_TEXTS = ("folder", "encoder")
# Reasons whose detail names the record's own film: no two records share one, so interning
# them shares nothing and costs an entry in the interpreter's table of interned texts (about
# 44 B a text; half an archive's files are annotations).
OWN_REASONS = frozenset(
    {
        Reason.annotation_of_kept,
        Reason.annotation_of_dropped,
        Reason.annotation_of_rejected,
        Reason.refiling,
        Reason.augmented_copy_among_originals,
    }
)


@dataclass(frozen=True, slots=True)
class Lesion:
    """One annotated lesion: corners as fractions of the true image size, top-left origin."""

    box: tuple[float, float, float, float]
    pai: int

    def as_row(self) -> dict[str, object]:
        """The lesion as a row of ``LESION_STRUCT``."""
        return {"box": list(self.box), "pai": self.pai}


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """A source file and everything the chain learned about it.

    Slots, and the texts most records share (folder name, encoder signature, reason)
    interned: a build holds one record per source file in memory, so each byte here is
    millions of bytes on a large archive (``bench/scale/records_memory.py``)."""

    path: str
    kind: Kind
    stem: str
    sha256: str = ""
    size_bytes: int = 0
    folder: str = ""
    width: int = 0
    height: int = 0
    annotation: str = ""
    lesions: tuple[Lesion, ...] = ()
    fate: Fate = Fate.pending
    reason: str = ""
    related: str = ""
    encoder: str = (
        ""  # image: its encoder signature, read by the index (``curation.index.provenance``)
    )
    # From the annotation's <filename>, for grouping a patient's films. In memory only: never
    # written (``write_records`` keeps to ``RECORD_SCHEMA``), cached, logged or shown.
    patient_number: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in SHARED_TEXTS:
            object.__setattr__(self, name, sys.intern(getattr(self, name)))
        if reason_class(self.reason) not in OWN_REASONS:
            object.__setattr__(self, "reason", sys.intern(self.reason))

    @property
    def film_id(self) -> str:
        """The film's id: its file stem."""
        return self.stem

    def settle(self, fate: Fate, reason: str, related: str = "") -> SourceRecord:
        """A copy with its fate decided; a settled fate is never overwritten."""
        if self.fate is not Fate.pending:
            raise ValueError(f"{self.path}: fate already {self.fate.value} ({self.reason})")
        return dataclasses.replace(self, fate=fate, reason=reason, related=related)


def pending_images(records: Iterable[SourceRecord]) -> list[SourceRecord]:
    """The films still in play."""
    return [r for r in records if r.kind is Kind.image and r.fate is Fate.pending]


def settle_many(
    records: list[SourceRecord], decisions: dict[str, tuple[Fate, str, str]]
) -> list[SourceRecord]:
    """Apply ``{path: (fate, reason, related)}`` to the matching records, keeping order."""
    return [r.settle(*decisions[r.path]) if r.path in decisions else r for r in records]


ANNOTATION_OF = {
    Fate.kept: Reason.annotation_of_kept,
    Fate.dropped: Reason.annotation_of_dropped,
    Fate.rejected: Reason.annotation_of_rejected,
}


def reason_class(reason: str) -> str:
    """Reasons read ``class: detail``; the class is what summaries count."""
    return reason.split(":", 1)[0]


def fate_counts(records: Iterable[SourceRecord]) -> Counter[tuple[str, str]]:
    """``(kind, fate)`` -> number of files; the fates always add up to the file count."""
    return Counter((r.kind.value, r.fate.value) for r in records)


# A lesion in the chain's own files (records, agreement); the published shards store the box
# as float32 (``curation.publish.schema``).
LESION_STRUCT = pa.struct([("box", pa.list_(pa.float64(), 4)), ("pai", pa.int8())])
RECORD_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("kind", pa.string()),
        ("stem", pa.string()),
        ("sha256", pa.string()),
        ("size_bytes", pa.int64()),
        ("folder", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("annotation", pa.string()),
        ("lesions", pa.list_(LESION_STRUCT)),
        ("fate", pa.string()),
        ("reason", pa.string()),
        ("related", pa.string()),
        ("encoder", pa.string()),
    ]
)


def write_records(records: list[SourceRecord], path: Path) -> None:
    """Write records as parquet, sorted by path so equal inputs give equal bytes."""
    rows = (_record_row(record) for record in sorted(records, key=lambda r: r.path))
    write_parquet_rows(path, RECORD_SCHEMA, rows)


def _record_row(record: SourceRecord) -> dict[str, Any]:
    row = {name: getattr(record, name) for name in RECORD_SCHEMA.names}  # asdict is slow
    row["kind"] = record.kind.value
    row["fate"] = record.fate.value
    row["lesions"] = [les.as_row() for les in record.lesions]
    return row


def settle_annotations(records: list[SourceRecord]) -> list[SourceRecord]:
    """An annotation shares its film's fate (by stem); the last step before the manifest."""
    # The image by stem, and a count only for the rare stems that name more than one: a list
    # for every stem cost more than the record it pointed at (docs/scale.md).
    film_of: dict[str, SourceRecord] = {}
    more_named: Counter[str] = Counter()  # a stem -> its images beyond the first
    for r in records:
        if r.kind is Kind.image:
            if r.stem in film_of:
                more_named[r.stem] += 1
            film_of[r.stem] = r
    out = []
    for r in records:
        if r.kind is Kind.annotation and r.fate is Fate.pending:
            named = (r.stem in film_of) + more_named[r.stem]
            if named == 1:
                film = film_of[r.stem]
                reason = reason_text(ANNOTATION_OF[film.fate], film.film_id)
                r = r.settle(film.fate, reason, film.path)
            else:
                detail = f"its stem names {named} images"
                r = r.settle(Fate.rejected, reason_text(Reason.ambiguous_annotation, detail))
        out.append(r)
    return out
