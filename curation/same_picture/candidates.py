"""Same picture, candidates: film A in each orientation (``View``) against every film's own
hash, within ``SAME_PICTURE_RADIUS`` bits, then each candidate confirmed in pixels
(``curation.same_picture.pixels``). A pair the frame check confirmed
(``curation.same_picture.frame_step``) carries its kinds (``cropped``, ``padded``, ``rotated``,
``rescaled`` or ``re-toned``) and the fitted transform. The confirmed pairs are handed to
``curation.keeper``, which groups them and keeps one film per group.

Crops to 60 % of each side reach the frame check by a path of their own
(``crop_candidates``): their local features sit at another scale than their original's
(ORB's pyramid spans 1.7x), so few of them vote and the pair may miss the feature
shortlist's vote share while the frame check confirms it; each film's best-voted partners
are checked whatever their share (margins: docs/margins.md, "Shortlist")."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from curation.core.parallel import Mapper
from curation.features.shortlist import best_partners
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.hashes.orientations import orientation_pairs
from curation.same_picture.pixels import Comparison

Candidate = tuple[str, str, View, int]  # film A, film B, A's view, hash distance
CROP_PARTNERS = 3  # best-voted partners per film checked whatever their vote share


@dataclass(frozen=True)
class SamePicture:
    """A confirmed pair: film ``a`` turned by ``view`` is film ``b``."""

    a: str
    b: str
    view: View
    distance: int
    comparison: Comparison
    # Same picture under another frame (``curation.same_picture.frame_step``): the kind of B
    # relative to A and of A relative to B, and the transform as evidence; empty for
    # whole-frame pairs.
    frame_kinds: tuple[str, str] | tuple[()] = ()
    frame_evidence: str = ""


def candidate_pairs(
    hashes: Mapping[str, Mapping[View, bytes]],
    max_distance: int,
    folder: Path | None = None,
    map: Mapper | None = None,
) -> list[Candidate]:
    """Every ``(a, b, view, distance)`` where film A turned by ``view`` is within
    ``max_distance`` bits of film B, in ``View`` order; an unturned pair only once (a < b).
    Then the negatives: film A's upright hash inverted within ``max_distance`` bits of film
    B's, compared upright (the exposure fit maps grey levels by a negative gain). Searched a
    table a job through ``map`` with its codes below ``folder`` when given, else in this
    process (``curation.hashes.orientations.orientation_pairs``). Each view's codes are taken
    from the column-wise ``Hashes`` (made of a plain mapping first), never as a bytes object
    per film."""
    columns = Hashes.column_wise(hashes)
    ids = sorted(hashes)
    found = orientation_pairs(
        lambda view: columns.codes(view, ids),
        max_distance,
        folder,
        map,
        negatives=True,
    )
    return [
        (ids[a], ids[b], View.identity if view is None else view, distance)  # None: a negative
        for view, rows in found
        for a, b, distance in rows.tolist()
    ]


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


def crop_candidates(
    votes: Mapping[tuple[int, int], int],
    proposed: Sequence[tuple[int, int]],
    per_film: int = CROP_PARTNERS,
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, not in ``proposed``: each film's ``per_film``
    best-voted partners among ``votes`` (``pair_votes`` at ``MIN_VOTES``, the votes the
    shortlist was drawn from), whatever their share. A crop keeping 60 % of each side
    collects fewer votes than the shortlist's share asks but is among its original's
    best-voted partners; an unrelated pair proposed here is refused by its features alone,
    before any pixel is decoded."""
    return sorted(best_partners(votes, per_film) - set(proposed))


def next_round(
    pairs: np.ndarray, strength: np.ndarray, groups: np.ndarray, unchecked: np.ndarray
) -> np.ndarray:
    """Which of ``pairs`` (film numbers, one row a pair) to check next, as their rows in
    order: each group's strongest pair (most ``strength``, then first in ``pairs``) among the
    ``unchecked`` ones whose two films are in different ``groups`` (each film's group under
    the pairs confirmed so far). A pair already joined is never checked: it could only add an
    edge inside a group, so the groups are those of checking every pair; and a round's pairs
    do not depend on each other, so they run in parallel anywhere. One pair a group, not one
    a film: an original and its whole-frame copies, already joined, each shortlist the same
    framed copy, and one confirmed check joins it to all of them."""
    open_rows = np.flatnonzero(unchecked & (groups[pairs[:, 0]] != groups[pairs[:, 1]]))
    ranked = open_rows[np.lexsort((open_rows, -strength[open_rows]))]
    _, first = np.unique(groups[pairs[ranked]].ravel(), return_index=True)
    return np.unique(ranked[first // 2])
