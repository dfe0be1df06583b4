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
4. fine grain, among films that 1-3 leave tied and whose annotations repeat each other's
   boxes exactly (as a script copies them): the grainier film (measured only then, since it
   costs a full-size decode: ``films_needing_grain``);
5. fallback when nothing in the files separates them: the lower film number is kept.

Grain alone does not decide that a pair is a copy: on test films, noise of sigma 4 raised
the grain by 1.5x-1.6x while re-encoding and re-exposure moved it by up to 1.1x, too close
for a threshold with margin. A same-frame pair with no such evidence is a re-filing.

A dropped film's kind says how it relates to the film it was confirmed against: ``mirror``,
``rotation``, ``rescaled``, ``noised`` (same frame, a copy) or ``re-filing`` (the same
radiograph filed twice with its own annotation: inter-annotator evidence).
"""

from __future__ import annotations

from collections import Counter
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


def _strong_evidence(
    film: str, group: set[str], facts: Mapping[str, FilmFacts], typical: float
) -> tuple[tuple[float, str], ...]:
    """Evidence from the files that ``film`` is a copy (lower = more original), each with the
    sentence that explains it when it decides: signature, orientation, height."""
    fact = facts[film]
    by_script = scripted(fact.script_share, (facts[f].script_share for f in group))
    has_landscape = any(facts[f].width >= facts[f].height for f in group)
    portrait = fact.height > fact.width and has_landscape
    sizes = {(facts[f].width, facts[f].height) for f in group}
    off_height = abs(fact.height - typical) if len(sizes) > 1 else 0.0
    return (
        (float(by_script), "its encoder signature is that of the archive's augmented copies"),
        (float(portrait), "it is portrait: a quarter-turned copy of a landscape film"),
        (off_height, "its height is further from the archive's typical film height"),
    )


def _grain_contest(group: set[str], facts: Mapping[str, FilmFacts], typical: float) -> set[str]:
    """The films whose grain decides which is kept: tied on the stronger evidence, of one
    size, and repeating each other's boxes exactly (as a script copies them). A re-filing,
    annotated anew, never enters one."""
    strong = {f: [k for k, _ in _strong_evidence(f, group, facts, typical)] for f in group}
    best = min(strong.values())
    tied = {f for f in group if strong[f] == best}
    copies = Counter(_frame(facts[f]) for f in tied)
    return {f for f in tied if facts[f].lesions and copies[_frame(facts[f])] > 1}


def _frame(fact: FilmFacts) -> tuple[int, int, tuple[Lesion, ...]]:
    return fact.width, fact.height, fact.lesions


def _keeper_key(
    film: str,
    group: set[str],
    facts: Mapping[str, FilmFacts],
    contest: set[str],
    grains: Mapping[str, float],
    typical: float,
) -> tuple[tuple[float, str], ...]:
    """All the evidence that ``film`` is a copy, strongest first; grain only in a contest."""
    rivals = [grains[f] for f in contest if _frame(facts[f]) == _frame(facts[film])]
    grainier = film in contest and grains[film] > min(rivals)
    return (
        *_strong_evidence(film, group, facts, typical),
        (
            float(grainier),
            f"it repeats the other film's boxes and is grainier ({grains.get(film, 0):.2f})",
        ),
        (0.0, "fallback: nothing in the files separates them, the lower number is kept"),
    )


def _typical(facts: Mapping[str, FilmFacts], typical_height: float | None) -> float:
    if typical_height is not None:
        return typical_height
    return float(np.median([f.height for f in facts.values()] or [0]))


def _graph(pairs: list[SamePicture]) -> nx.Graph:
    graph = nx.Graph()
    for pair in pairs:
        graph.add_edge(pair.a, pair.b, pair=pair)
    return graph


def films_needing_grain(
    pairs: list[SamePicture], facts: Mapping[str, FilmFacts], typical_height: float | None = None
) -> list[str]:
    """The films whose grain ``same_picture_groups`` will read: grain costs a full-size
    decode, so it is measured only where nothing stronger decides."""
    typical = _typical(facts, typical_height)
    return sorted(
        film
        for component in nx.connected_components(_graph(pairs))
        for film in _grain_contest(component, facts, typical)
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
    pairs: list[SamePicture],
    facts: Mapping[str, FilmFacts],
    typical_height: float | None = None,
    grains: Mapping[str, float] | None = None,
) -> list[SamePictureGroup]:
    """Group confirmed pairs and pick each group's keeper by evidence (module docstring);
    ``grains`` holds the grain of every film ``films_needing_grain`` names."""
    graph = _graph(pairs)
    typical = _typical(facts, typical_height)
    groups = []
    for component in nx.connected_components(graph):
        contest = _grain_contest(component, facts, typical)
        keys = {
            f: _keeper_key(f, component, facts, contest, grains or {}, typical) for f in component
        }
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
