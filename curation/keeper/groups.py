"""Which film is kept, per group: confirmed pairs (``curation.same_picture``) form groups
(connected components), so chains of copies (a mirror of a re-filing, say) are one group; each
group keeps exactly one film.

Which film is kept is decided by evidence from the files, strongest first, and the rule that
decided is recorded with its sentence: the order and why are in ``curation.keeper.rules`` (an
augmentation-folder twin, the script's encoder, a turn, a pad, an upscale, fewer pixels, a grey
film re-saved in colour, lower JPEG quality, an unusual encoder, black corners, tone, a
re-encoding, grain among script copies, and only then, recorded as undecided, the lower
number, compared as a number).

A dropped film's kind says how it relates to the film it was confirmed against: ``mirror``,
``rotation``, ``rescaled``, ``noised`` (same frame, a copy), ``negative`` (grey levels
inverted) or ``re-filing`` (the same radiograph filed twice with its own annotation:
inter-annotator evidence); a pair the frame check confirmed is ``cropped``, ``padded``,
``rotated``, ``rescaled`` or ``re-toned``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from curation.hashes.hashing import View, turned_back
from curation.keeper.rules import (
    COPY_RULES,
    FilmFacts,
    deciding,
    grain_contest,
    keeper,
    keeper_key,
    one_content,
    tied,
)
from curation.same_picture.candidates import SamePicture


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
    """One picture's films: the one kept and the others, each with why it was dropped."""

    kept: str
    dropped: tuple[DroppedFilm, ...]


def _graph(pairs: list[SamePicture]) -> nx.Graph:
    """The films joined by their confirmed pairs, each edge carrying its pair."""
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
