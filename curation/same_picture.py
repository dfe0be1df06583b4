"""Step 5, same picture: films that show one radiograph, grouped, one film kept per group.

Candidates come from the hashes: film A in each orientation (``View``) against every film's
own hash, within ``SAME_PICTURE_RADIUS`` bits. Each candidate is confirmed in pixels
(``curation.pixels``). Confirmed pairs form groups (connected components), so chains of
copies (a mirror of a re-filing, say) are one group; each group keeps exactly one film.

Which film is kept is decided by evidence, strongest first, and the evidence is recorded:

1. the encoder signature (``curation.provenance``): the film written like the archive's
   augmented copies is a copy;
2. orientation: in a group with a landscape film, a portrait film is a quarter-turned copy;
3. size: of films of different sizes, the height further from the archive's typical film
   height is a rescaled copy;
4. fine grain, for a pair already known to be a noised copy (by 1, or by annotations that
   repeat the other film's boxes exactly, as a script copies them): the grainier film;
5. fallback when nothing in the files separates them: the lower film number is kept.

Grain alone does not decide that a pair is a copy: on test films, noise of sigma 4 raised
the grain by 1.5x-1.6x while re-encoding and re-exposure moved it by up to 1.1x, too close
for a threshold with margin. A same-frame pair with no such evidence is a re-filing.

A dropped film's kind says how it relates to the film it was confirmed against: ``mirror``,
``rotation``, ``rescaled``, ``noised`` (same frame, a copy) or ``re-filing`` (the same
radiograph filed twice with its own annotation: inter-annotator evidence).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np

from curation.hash_films import Hashes
from curation.hashing import View
from curation.pairs import as_codes, range_pairs
from curation.pixels import Comparison
from curation.provenance import scripted
from curation.records import Lesion

Candidate = tuple[str, str, View, int]  # film A, film B, A's view, hash distance
CONFIRM_BATCH = 256  # candidates compared in parallel between two checks of the groups

# Copies reach 16 bits in their best orientation on real films (issue 11's measurements) and
# 15 on the sample; distinct films start at 61 bits on real films and at 50 on the sample
# (nearest distinct film, python -m bench.margins): the radius keeps a quarter of margin from
# both. Visits of one patient fall inside it; the pixel check tells them apart.
SAME_PICTURE_RADIUS = 32


_INVERSE = {View.rot90: View.rot270, View.rot270: View.rot90}


@dataclass(frozen=True)
class FilmFacts:
    """What the keeper rule reads about a film."""

    width: int
    height: int
    lesions: tuple[Lesion, ...]
    script_share: float  # share of the augmentation folder written with its signature


@dataclass(frozen=True)
class SamePicture:
    """A confirmed pair: film ``a`` turned by ``view`` is film ``b``."""

    a: str
    b: str
    view: View
    distance: int
    comparison: Comparison


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


@dataclass(frozen=True)
class SamePictureGroup:
    kept: str
    dropped: tuple[DroppedFilm, ...]


def candidate_pairs(hashes: Hashes, max_distance: int) -> list[Candidate]:
    """Every ``(a, b, view, distance)`` where film A turned by ``view`` is within
    ``max_distance`` bits of film B, in ``View`` order; an unturned pair only once (a < b)."""
    ids = sorted(hashes)
    own = as_codes([hashes[i][View.identity] for i in ids])
    candidates = []
    for view in View:
        turned = as_codes([hashes[i][view] for i in ids])
        for block in range_pairs(own, turned, max_distance):
            for q, t, distance in block.tolist():
                if q < t or (q > t and view is not View.identity):
                    candidates.append((ids[q], ids[t], view, distance))
    return candidates


def confirmed_pairs(
    candidates: list[Candidate],
    compare_many: Callable[[list[tuple[str, str, View]]], list[Comparison]],
    on_skipped: Callable[[int], None] | None = None,
) -> list[SamePicture]:
    """The candidates whose pixels agree; a pair confirmed in several views keeps the first.

    Candidates go closest first, ``CONFIRM_BATCH`` at a time; a turned candidate whose two
    films are already joined by confirmed pairs is not compared (``on_skipped`` counts it): it
    could only add an edge inside a group, so the groups are the same as comparing every pair,
    at a fraction of the full-size decoding when a film has several copies. Upright pairs are
    always compared: a re-filing is told from a copy by its direct comparison."""
    order = {view: n for n, view in enumerate(View)}
    ranked = sorted(candidates, key=lambda c: (c[3], order[c[2]], c[0], c[1]))
    joined = nx.utils.UnionFind()
    found: dict[tuple[str, str], SamePicture] = {}
    for start in range(0, len(ranked), CONFIRM_BATCH):
        batch = [
            c
            for c in ranked[start : start + CONFIRM_BATCH]
            if c[2] is View.identity or joined[c[0]] != joined[c[1]]
        ]
        if on_skipped:
            on_skipped(min(CONFIRM_BATCH, len(ranked) - start) - len(batch))
        results = compare_many([(a, b, view) for a, b, view, _ in batch])
        for (a, b, view, distance), result in zip(batch, results, strict=True):
            key = (min(a, b), max(a, b))
            if key not in found and result.same_picture:
                found[key] = SamePicture(a, b, view, distance, result)
                joined.union(a, b)
    return [found[k] for k in sorted(found)]


def _grains(pairs: list[SamePicture]) -> dict[str, float]:
    grains: dict[str, float] = {}
    for pair in pairs:
        if pair.comparison.grain is not None:
            grains[pair.a], grains[pair.b] = pair.comparison.grain
    return grains


def _keeper_key(
    film: str,
    group: set[str],
    facts: Mapping[str, FilmFacts],
    grains: dict[str, float],
    typical: float,
) -> tuple[tuple[float, str], ...]:
    """Evidence that ``film`` is a copy, strongest first (lower = more original), each with
    the sentence that explains it when it decides."""
    fact = facts[film]
    by_script = scripted(fact.script_share, (facts[f].script_share for f in group))
    has_landscape = any(facts[f].width >= facts[f].height for f in group)
    portrait = fact.height > fact.width and has_landscape
    same_size = [
        grains[f]
        for f in group
        if f in grains and (facts[f].width, facts[f].height) == (fact.width, fact.height)
    ]
    grainier = film in grains and grains[film] > min(same_size, default=grains[film])
    copied = _copied_boxes(film, group, facts)
    sizes = {(facts[f].width, facts[f].height) for f in group}
    off_height = abs(fact.height - typical) if len(sizes) > 1 else 0.0
    return (
        (float(by_script), "its encoder signature is that of the archive's augmented copies"),
        (float(portrait), "it is portrait: a quarter-turned copy of a landscape film"),
        (off_height, "its height is further from the archive's typical film height"),
        (
            float(grainier and copied),
            f"it repeats the other film's boxes and is grainier ({grains.get(film, 0):.2f})",
        ),
        (0.0, "fallback: nothing in the files separates them, the lower number is kept"),
    )


def _copied_boxes(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> bool:
    """True when another film of the group carries exactly this film's (non-empty) boxes."""
    mine = facts[film].lesions
    return bool(mine) and any(facts[f].lesions == mine for f in group if f != film)


def _evidence(dropped: tuple[tuple[float, str], ...], kept: tuple[tuple[float, str], ...]) -> str:
    for (mine, why), (theirs, _) in zip(dropped, kept, strict=True):
        if mine > theirs:
            return why
    return dropped[-1][1]


def _kind(pair: SamePicture, facts: Mapping[str, FilmFacts], decided_by: str) -> str:
    if pair.view is View.mirror:
        return "mirror"
    if pair.view is not View.identity:
        return "rotation"
    if not pair.comparison.same_size:
        return "rescaled"
    a, b = facts[pair.a], facts[pair.b]
    copied_boxes = bool(a.lesions) and a.lesions == b.lesions
    if copied_boxes or "encoder" in decided_by:
        return "noised"
    return "re-filing"


def same_picture_groups(
    pairs: list[SamePicture], facts: Mapping[str, FilmFacts], typical_height: float | None = None
) -> list[SamePictureGroup]:
    """Group confirmed pairs and pick each group's keeper by evidence (module docstring)."""
    graph = nx.Graph()
    for pair in pairs:
        graph.add_edge(pair.a, pair.b, pair=pair)
    heights = [f.height for f in facts.values()]
    typical = typical_height if typical_height is not None else float(np.median(heights or [0]))
    grains = _grains(pairs)
    groups = []
    for component in nx.connected_components(graph):
        keys = {f: _keeper_key(f, component, facts, grains, typical) for f in component}
        kept = min(component, key=lambda f: ([k for k, _ in keys[f]], f))
        dropped = []
        for film in sorted(component - {kept}):
            evidence = _evidence(keys[film], keys[kept])
            if graph.has_edge(film, kept):
                pair = graph.edges[film, kept]["pair"]
            else:
                towards_kept = nx.shortest_path(graph, film, kept)[1]
                pair = graph.edges[film, towards_kept]["pair"]
            relative_to = pair.a if pair.b == film else pair.b
            view = pair.view if pair.b == film else _INVERSE.get(pair.view, pair.view)
            dropped.append(
                DroppedFilm(
                    film,
                    _kind(pair, facts, evidence),
                    relative_to,
                    view,
                    pair.distance,
                    round(pair.comparison.difference, 4),
                    evidence,
                )
            )
        groups.append(SamePictureGroup(kept, tuple(dropped)))
    return sorted(groups, key=lambda g: g.kept)
