"""Look-alikes: films that look alike stay together, so no chain of look-alikes (or
of one patient's films) can cross a split.

Two films are linked when one of them, in any orientation (``View``), is within Hamming
distance 30 of 512 of the other: a superset of "within 30 bits", so that even a turned copy
the pixel check missed stays with its original. Films dropped as
copies of a kept film pass their links on to it, except copies under another frame (cropped,
padded, turned or re-toned): their hash is the reframing's (four distinct real films, 44 bits
and more apart, were joined by their padded copies' hashes, black borders dominating), so only
their same-picture group holds them. Films whose annotations name the same patient
number are linked, unless implausibly many films share that number (``MAX_FILMS_PER_PATIENT``:
a copied template, not a patient). With ``--link-visits``, visits of one patient found by the visits
step (``curation.visits``) are linked too; without it they are only counted (the card says how
many cross splits). Clusters are the connected components (networkx).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import networkx as nx
import numpy as np

from curation.core.parallel import Mapper
from curation.core.records import SourceRecord
from curation.core.vocabulary import LOOKALIKE_DISTANCE
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.hashes.orientations import orientation_pairs

# A panoramic series of one patient rarely passes a handful of films; a number on more films
# than this is treated as a template left in the annotation tool and ignored.
MAX_FILMS_PER_PATIENT = 12


@dataclass(frozen=True, slots=True)
class Link:
    """Why two films must share a split: a hash distance (in a view, for the average hash),
    or one patient."""

    first: str
    second: str
    method: str  # "ahash", "patient" or "visit"
    view: View | None = None  # the average hash's orientation
    distance: int | None = None  # None for a patient link
    inliers: int | None = None  # a visit's matched features under the fitted geometry


@dataclass(frozen=True, slots=True)
class Cluster:
    """A look-alike component, named by its smallest film id. Slots: a build holds one per
    kept film that no link joins (docs/scale.md, "The driver's memory per source file")."""

    cluster_id: str
    film_ids: tuple[str, ...]


def lookalike_links(
    hashes: Mapping[str, Mapping[View, bytes]],
    max_distance: int = LOOKALIKE_DISTANCE,
    folder: Path | None = None,
    map: Mapper | None = None,
) -> list[Link]:
    """Every pair of films within ``max_distance`` in some orientation (exact search), each
    pair once with its smallest distance (ties: the first view), sorted. Each view's codes
    are taken from the column-wise ``Hashes`` (made of a plain mapping first), never as a
    bytes object per film. Searched a table a job through ``map`` with its codes below
    ``folder`` when given, else in this process (``orientation_pairs``)."""
    columns = Hashes.column_wise(hashes)
    ids = sorted(hashes)
    best: dict[tuple[str, str], tuple[int, int, View]] = {}
    order = {view: n for n, view in enumerate(View)}

    def offer(i: int, j: int, distance: int, view: View) -> None:
        key = (ids[min(i, j)], ids[max(i, j)])
        if key not in best or (distance, order[view]) < best[key][:2]:
            best[key] = (distance, order[view], view)

    def codes_in(view: View) -> np.ndarray:
        return columns.codes(view, ids)

    for view, rows in orientation_pairs(codes_in, max_distance, folder, map):
        assert view is not None  # no negatives were asked for
        for i, j, distance in rows.tolist():
            offer(i, j, distance, view)
    return [Link(a, b, "ahash", view, d) for (a, b), (d, _, view) in sorted(best.items())]


def patient_links(numbers: dict[str, str]) -> tuple[list[Link], int]:
    """Links between films naming one patient number (film id -> number, in memory only),
    and how many films were left out because their number is on too many films."""
    films_of: dict[str, list[str]] = defaultdict(list)
    for film, number in numbers.items():
        films_of[number].append(film)
    links: list[Link] = []
    templated = 0
    for films in films_of.values():
        if len(films) > MAX_FILMS_PER_PATIENT:
            templated += len(films)
            continue
        first, *rest = sorted(films)
        links.extend(Link(first, other, "patient") for other in rest)
    return sorted(links, key=lambda link: (link.first, link.second)), templated


def lookalike_components(
    film_ids: list[str], links: list[Link], kept_as: dict[str, str] | None = None
) -> list[Cluster]:
    """Connected components of the kept films (singletons included), largest first, then by
    id; ``kept_as`` maps a dropped film to the film kept in its place, which inherits its
    links."""
    kept_as = kept_as or {}
    graph = nx.Graph()
    graph.add_nodes_from(film_ids)
    for link in links:
        a, b = kept_as.get(link.first, link.first), kept_as.get(link.second, link.second)
        if a != b and a in graph and b in graph:
            graph.add_edge(a, b)
    clusters = [Cluster(min(c), tuple(sorted(c))) for c in nx.connected_components(graph)]
    return sorted(clusters, key=lambda c: (-len(c.film_ids), c.cluster_id))


@dataclass(frozen=True)
class Lookalikes:
    """The lookalikes step's result: the components, the hash links and patient links that
    made them, how many films named a template patient number (left unlinked), and the
    distance the hash links were drawn within (the review page shows it)."""

    clusters: list[Cluster]
    links: list[Link]
    patient_links: list[Link]
    templated: int
    distance: int  # bits of 512: the hash links' largest distance
    visit_links: list[Link] = field(default_factory=list)  # verified visits of kept films
    visits_linked: bool = False  # whether ``visit_links`` joined the clusters
    decided_links: list[Link] = field(default_factory=list)  # the curator's: one patient

    @property
    def joining_links(self) -> list[Link]:
        """Every link that joined the components: visits only when they were linked."""
        visits = self.visit_links if self.visits_linked else []
        return self.links + self.patient_links + visits + self.decided_links


def lookalike_clusters(
    films: dict[str, SourceRecord],
    hashes: Hashes,
    kept_as: dict[str, str],
    max_distance: int,
    visit_links: list[Link] | None = None,
    link_visits: bool = False,
    decided_links: list[Link] | None = None,
    reframed: frozenset[str] = frozenset(),
    searched_in: Path | None = None,
    map: Mapper | None = None,
) -> Lookalikes:
    """The look-alike components of ``films`` (film id -> record); the films dropped as copies
    (``kept_as``: dropped film -> kept film) are hashed in too and pass their links on, but
    for those dropped under another frame (``reframed``), whose hash is not the picture's.
    ``visit_links`` join the components only when ``link_visits``; ``decided_links`` (films
    the curator declared one patient) always do. The links are searched a table a job through
    ``map``, their codes in ``searched_in`` (a folder its workers see) when given, else in this
    process."""
    hashed = {film for film in kept_as if film not in reframed}
    compared = hashes.subset(lambda film: film in films or film in hashed)
    links = lookalike_links(compared, max_distance, searched_in, map)
    numbers = {f: number for f, r in films.items() if (number := r.patient_number)}
    patients, templated = patient_links(numbers)
    found = Lookalikes(
        [],
        links,
        patients,
        templated,
        max_distance,
        visit_links or [],
        link_visits,
        decided_links or [],
    )
    clusters = lookalike_components(sorted(films), found.joining_links, kept_as)
    return replace(found, clusters=clusters)
