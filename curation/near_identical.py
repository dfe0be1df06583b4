"""Step 5, near-identical: a radiograph filed twice is kept once.

Near-identical means a same-picture pair of kind ``near-identical``: the hashes are within a
few bits AND the pixels agree at full size up to re-encoding (``curation.same_picture``), so
two distinct films are never dropped. Films linked by such pairs form groups; the smallest
film id is kept. Every pair, with both annotation sets, goes to the agreement table: the
source's double-annotated films are the only inter-annotator evidence it has.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from curation.records import Fate, Kind, Lesion, SourceRecord, settle_many
from curation.same_picture import SamePicture


@dataclass(frozen=True)
class AgreementPair:
    """Two annotation sets of one radiograph."""

    film_id: str
    other_film_id: str
    distance: int
    full_mad: float | None
    lesions: tuple[Lesion, ...]
    other_lesions: tuple[Lesion, ...]


def drop_near_identical(
    records: list[SourceRecord], pairs: list[SamePicture]
) -> tuple[list[SourceRecord], list[AgreementPair]]:
    """Keep the smallest id of each near-identical group; return the agreement pairs."""
    by_id = {r.film_id: r for r in records if r.kind is Kind.image and r.fate is Fate.pending}
    twins = [p for p in pairs if p.kind == "near-identical" and {p.first, p.second} <= by_id.keys()]
    graph = nx.Graph((p.first, p.second) for p in twins)
    decisions = {}
    for group in nx.connected_components(graph):
        keeper = min(group)
        for film_id in sorted(group - {keeper}):
            decisions[by_id[film_id].path] = (
                Fate.dropped,
                f"near-identical: the same radiograph as {keeper}",
                keeper,
            )
    agreement = [
        AgreementPair(
            p.first,
            p.second,
            p.distance,
            p.full_mad,
            by_id[p.first].lesions,
            by_id[p.second].lesions,
        )
        for p in twins
    ]
    return settle_many(records, decisions), agreement
