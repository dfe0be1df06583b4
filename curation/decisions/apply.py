"""The curator's decisions applied where the chain decides: rejected films settled before any
step looks at them, and same-picture pairs the curator keeps apart cut from the pairs the
same-picture step groups. (One-patient decisions become look-alike links in the chain's
binding, ``curation.chain.steps.join_lookalikes``.)"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, TypeVar

import networkx as nx

from curation.core.records import Fate, Kind, SourceRecord
from curation.decisions.decisions import CURATOR_REJECTED, Decisions


class FilmPair(Protocol):
    """A pair of films (a same-picture pair: ``curation.same_picture.candidates``)."""

    @property
    def a(self) -> str:
        """The first film's id."""

    @property
    def b(self) -> str:
        """The second film's id."""


Pair = TypeVar("Pair", bound=FilmPair)


def reject_by_curator(records: list[SourceRecord], decisions: Decisions) -> list[SourceRecord]:
    """Every film still in play that the curator rejected, settled with the curator's reason;
    a film the index already refused keeps the index's reason."""
    rejected = decisions.rejected
    return [
        r.settle(Fate.rejected, f"{CURATOR_REJECTED}: {rejected[r.film_id]}")
        if r.kind is Kind.image and r.fate is Fate.pending and r.film_id in rejected
        else r
        for r in records
    ]


def keep_apart(pairs: Sequence[Pair], apart: Collection[frozenset[str]]) -> list[Pair]:
    """``pairs`` without those joining two films the curator declared not the same picture,
    and without the fewest others that would still join them through a third film (a minimum
    edge cut), so the two never end in one same-picture group."""
    kept = [p for p in pairs if frozenset((p.a, p.b)) not in apart]
    graph = nx.Graph()
    graph.add_edges_from((p.a, p.b) for p in kept)
    for first, second in sorted(tuple(sorted(pair)) for pair in apart):
        if first in graph and second in graph and nx.has_path(graph, first, second):
            graph.remove_edges_from(sorted(nx.minimum_edge_cut(graph, first, second)))
    return [p for p in kept if graph.has_edge(p.a, p.b)]
