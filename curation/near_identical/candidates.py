"""Step 5, same picture: films that show one radiograph, grouped, one film kept per group.

Candidates come from the hashes: film A in each orientation (``View``) against every film's
own hash, within ``SAME_PICTURE_RADIUS`` bits. Each candidate is confirmed in pixels
(``curation.near_identical.pixels``). Confirmed pairs form groups (connected components), so chains
of
copies (a mirror of a re-filing, say) are one group; each group keeps exactly one film.

Which film is kept is decided by evidence from the files, strongest first, and the rule
that decided is recorded with its sentence: the order and why are in
``curation.near_identical.keeper``
(an augmentation-folder twin, the script's encoder, a turn, a pad, an upscale, fewer pixels,
a grey film re-saved in colour, lower JPEG quality, an unusual encoder, black corners, tone,
a re-encoding, grain among script copies, and only then, recorded as undecided, the lower
number, compared as a number).

A dropped film's kind says how it relates to the film it was confirmed against: ``mirror``,
``rotation``, ``rescaled``, ``noised`` (same frame, a copy), ``negative`` (grey levels
inverted) or ``re-filing`` (the same
radiograph filed twice with its own annotation: inter-annotator evidence); a pair the frame
check confirmed (``curation.near_identical.frame_step``) is ``cropped``, ``padded``, ``rotated``,
``rescaled`` or ``re-toned``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import networkx as nx

from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View, turned_back
from curation.hashes.orientations import negative_pairs, pairs_in_any_orientation
from curation.hashes.pairs import as_codes
from curation.near_identical.keeper import (
    COPY_RULES,
    FilmFacts,
    deciding,
    grain_contest,
    keeper,
    keeper_key,
    one_content,
    tied,
)
from curation.near_identical.pixels import Comparison

Candidate = tuple[str, str, View, int]  # film A, film B, A's view, hash distance


@dataclass(frozen=True)
class SamePicture:
    """A confirmed pair: film ``a`` turned by ``view`` is film ``b``."""

    a: str
    b: str
    view: View
    distance: int
    comparison: Comparison
    # Same picture under another frame (``curation.near_identical.frame_step``): the kind of B
    # relative to
    # A and of A relative to B, and the transform as evidence; empty for whole-frame pairs.
    frame_kinds: tuple[str, str] | tuple[()] = ()
    frame_evidence: str = ""


@dataclass(frozen=True)
class DroppedFilm:
    """A film dropped from its same-picture group, and why."""

    film_id: str
    kind: str
    relative_to: str  # the film it was confirmed against
    view: View  # how ``relative_to`` turns into this film
    distance: int
    difference: float
    evidence: str
    frame: str = ""  # the fitted transform, when the frame check confirmed the pair


@dataclass(frozen=True)
class SamePictureGroup:
    kept: str
    dropped: tuple[DroppedFilm, ...]


def candidate_pairs(hashes: Hashes, max_distance: int) -> list[Candidate]:
    """Every ``(a, b, view, distance)`` where film A turned by ``view`` is within
    ``max_distance`` bits of film B, in ``View`` order; an unturned pair only once (a < b).
    Then the negatives: film A's upright hash inverted within ``max_distance`` bits of film
    B's, compared upright (the exposure fit maps grey levels by a negative gain)."""
    ids = sorted(hashes)
    turned = [
        (ids[a], ids[b], view, distance)
        for view, rows in pairs_in_any_orientation(
            lambda view: as_codes([hashes[i][view] for i in ids]), max_distance
        )
        for a, b, distance in rows.tolist()
    ]
    upright = as_codes([hashes[i][View.identity] for i in ids])
    negatives = negative_pairs(upright, max_distance).tolist()
    return turned + [(ids[a], ids[b], View.identity, distance) for a, b, distance in negatives]


def candidate_components(candidates: list[Candidate]) -> list[list[Candidate]]:
    """The candidates split by connected component of the films they join, each closest
    first (then by view, then by ids), components in order of their lowest film id.
    Confirmation in one component never depends on another, so they can run anywhere."""
    graph = nx.Graph((a, b) for a, b, _, _ in candidates)
    components = sorted((sorted(c) for c in nx.connected_components(graph)), key=lambda c: c[0])
    number = {film: n for n, films in enumerate(components) for film in films}
    order = {view: n for n, view in enumerate(View)}
    grouped: list[list[Candidate]] = [[] for _ in components]
    for candidate in sorted(candidates, key=lambda c: (c[3], order[c[2]], c[0], c[1])):
        grouped[number[candidate[0]]].append(candidate)
    return grouped


def confirm_component(
    candidates: list[Candidate], compare: Callable[[str, str, View], Comparison]
) -> tuple[list[SamePicture], int]:
    """The candidates of one component whose pixels agree, and how many were not compared.

    A pair confirmed in several views keeps the first. Candidates go closest first; a turned
    candidate whose two films are already joined by confirmed pairs is not compared: it could
    only add an edge inside a group, so the groups are the same as comparing every pair, at a
    fraction of the full-size decoding when a film has several copies. Upright pairs are
    always compared: a re-filing is told from a copy by its direct comparison."""
    joined = nx.utils.UnionFind()
    found: dict[tuple[str, str], SamePicture] = {}
    skipped = 0
    for a, b, view, distance in candidates:
        if view is not View.identity and joined[a] == joined[b]:
            skipped += 1
            continue
        result = compare(a, b, view)
        key = (min(a, b), max(a, b))
        if key not in found and result.same_picture:
            found[key] = SamePicture(a, b, view, distance, result)
            joined.union(a, b)
    return [found[k] for k in sorted(found)], skipped


def _graph(pairs: list[SamePicture]) -> nx.Graph:
    graph = nx.Graph()
    for pair in pairs:
        graph.add_edge(pair.a, pair.b, pair=pair)
    return graph


def films_needing_grain(pairs: list[SamePicture], facts: Mapping[str, FilmFacts]) -> list[str]:
    """The films whose grain ``same_picture_groups`` will read: grain costs a full-size
    decode, so it is measured only where nothing stronger decides."""
    return sorted(
        film
        for component in nx.connected_components(_graph(pairs))
        for film in grain_contest(component, facts)
    )


def pairs_to_reencode(
    pairs: list[SamePicture], facts: Mapping[str, FilmFacts]
) -> list[SamePicture]:
    """The whole-frame pairs whose two films every rule before the re-encoding leaves tied:
    the only ones where it can decide, and it costs a full decode and an encode each way.
    A film filed twice (one content, unturned) re-encodes alike both ways: it never can."""
    graph = _graph(pairs)
    even = {f for component in nx.connected_components(graph) for f in tied(component, facts)}
    return [
        p
        for p in pairs
        if not p.frame_kinds
        and p.a in even
        and p.b in even
        and not (p.view is View.identity and one_content({p.a, p.b}, facts))
    ]


def _kind(pair: SamePicture, facts: Mapping[str, FilmFacts], decided_by: str, film: str) -> str:
    """What the dropped ``film`` is to the other film of ``pair``. Two films of one frame
    (upright at one size, or re-toned only) whose annotations differ are a re-filing with
    disagreeing labels, whatever rule kept the other: a copy carries its source's boxes, so
    a lesion one of them lacks is an annotator's, and it goes to the agreement table."""
    a, b = facts[pair.a], facts[pair.b]
    labels_differ = a.lesions != b.lesions
    if pair.frame_kinds:
        kind = pair.frame_kinds[pair.a == film]
        return "re-filing" if kind == "re-toned" and labels_differ else kind
    if pair.comparison.exposure is not None and pair.comparison.exposure.gain < 0:
        return "negative"
    if pair.view is View.mirror:
        return "mirror"
    if pair.view is not View.identity:
        return "rotation"
    if not pair.comparison.same_size:
        return "rescaled"
    if labels_differ:
        return "re-filing"
    if a.lesions or decided_by in COPY_RULES:  # its source's boxes, copied
        return "noised"
    return "re-filing"


def same_picture_groups(
    pairs: list[SamePicture],
    facts: Mapping[str, FilmFacts],
    grains: Mapping[str, float] | None = None,
    reencoded: Mapping[str, str] | None = None,
) -> list[SamePictureGroup]:
    """Group confirmed pairs and pick each group's keeper by evidence (module docstring);
    ``grains`` holds the grain of every film ``films_needing_grain`` names, ``reencoded``
    each film of ``pairs_to_reencode`` found written from another (copy -> source)."""
    graph = _graph(pairs)
    groups = []
    for component in nx.connected_components(graph):
        contest = grain_contest(component, facts)
        keys = {
            f: keeper_key(f, component, facts, contest, grains or {}, reencoded or {})
            for f in component
        }
        kept = keeper(component, keys)
        dropped = []
        for film in sorted(component - {kept}):
            rule, evidence = deciding(keys[film], keys[kept])
            if graph.has_edge(film, kept):
                pair = graph.edges[film, kept]["pair"]
            else:
                towards_kept = nx.shortest_path(graph, film, kept)[1]
                pair = graph.edges[film, towards_kept]["pair"]
            relative_to = pair.a if pair.b == film else pair.b
            view = pair.view if pair.b == film else turned_back(pair.view)
            dropped.append(
                DroppedFilm(
                    film,
                    _kind(pair, facts, rule, film),
                    relative_to,
                    view,
                    pair.distance,
                    round(pair.comparison.difference, 4),
                    evidence,
                    pair.frame_evidence,
                )
            )
        groups.append(SamePictureGroup(kept, tuple(dropped)))
    return sorted(groups, key=lambda g: g.kept)
