"""The keeper step, settled: each same-picture group keeps one film; re-filings feed the
agreement table.

The groups and their keepers come from ``curation.keeper.groups``. A dropped augmented copy is
recorded with its kind, the film it copies and the evidence that named it the copy; a
re-filing (the same radiograph filed twice, each with its own annotation) is recorded as
near-identical, and both annotation sets go to the agreement table: the source's
double-annotated films are the only inter-annotator evidence it has.
"""

from __future__ import annotations

from dataclasses import dataclass

from curation.core.records import Fate, Kind, Lesion, SourceRecord, settle_many
from curation.core.vocabulary import Reason, reason_text
from curation.keeper.groups import SamePictureGroup


@dataclass(frozen=True)
class AgreementPair:
    """Two annotation sets of one radiograph."""

    film_id: str
    other_film_id: str
    distance: int
    difference: float
    lesions: tuple[Lesion, ...]
    other_lesions: tuple[Lesion, ...]


def settle_same_picture(
    records: list[SourceRecord], groups: list[SamePictureGroup]
) -> tuple[list[SourceRecord], list[AgreementPair]]:
    """Drop every group's other films; return the agreement pairs of the re-filings."""
    grouped = {film for g in groups for film in (g.kept, *(d.film_id for d in g.dropped))}
    by_id = {
        r.film_id: r
        for r in records
        if r.film_id in grouped and r.kind is Kind.image and r.fate is Fate.pending
    }
    decisions = {}
    agreement = []
    for group in groups:
        for film in group.dropped:
            measured = f"hash distance {film.distance}, pixel difference {film.difference:g}"
            if film.frame:  # same picture under another frame: the transform is the evidence
                measured = f"hash distance {film.distance}; {film.frame}"
            if film.kind == "re-filing":
                reason = reason_text(
                    Reason.refiling,
                    f"the same radiograph as {group.kept} (re-filing; {measured}; {film.evidence})",
                )
                first, second = sorted((group.kept, film.film_id))
                agreement.append(
                    AgreementPair(
                        first,
                        second,
                        film.distance,
                        film.difference,
                        by_id[first].lesions,
                        by_id[second].lesions,
                    )
                )
            else:
                reason = reason_text(
                    Reason.augmented_copy_among_originals,
                    f"{film.kind} of {film.relative_to} ({measured}; {film.evidence})",
                )
            decisions[by_id[film.film_id].path] = (Fate.dropped, reason, group.kept)
    return settle_many(records, decisions), sorted(
        agreement, key=lambda p: (p.film_id, p.other_film_id)
    )
