"""Pairs of films that show the same picture, possibly mirrored, rotated, rescaled or noised.

Candidates come from the hashes: film A in each orientation (``View``) against every film's
own hash, within ``max_distance`` bits. Each candidate is then confirmed at pixel level
(``curation.pixels``) and given a kind, which decides its fate later:

- ``mirror`` / ``rotation``: A turned is B (an augmented copy filed among the originals);
- ``rescaled``: same picture at another pixel size (augmented copy);
- ``noised``: same size, same picture, one markedly grainier (augmented copy);
- ``near-identical``: same size and the same pixels up to re-encoding (a film filed twice).

For augmented copies the pair also names which film is the copy, where the pixels say: the
grainier one of a noised pair, the portrait one of a quarter-turn, the one whose height is
further from the archive's typical film height of a rescaled pair. A mirror or half-turn
carries no such evidence, and the higher film id is called the copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from curation.hash_films import Hashes
from curation.hashing import View
from curation.pairs import as_codes, range_pairs
from curation.pixels import Comparison

# Re-encoding at another JPEG quality moves the fine grain by well under one grey level;
# added noise of a few grey levels doubles it at least.
NOISED_GRAIN_GAIN = 1.5
NOISED_GRAIN_RATIO = 2.0


@dataclass(frozen=True)
class SamePicture:
    """A confirmed pair; ``first < second`` by film id."""

    first: str
    second: str
    kind: str
    view: View
    distance: int
    reduced_mad: float
    full_mad: float | None
    copy: str = ""  # for augmented kinds: the film judged to be the copy
    evidence: str = ""


def _judge(
    a: str,
    b: str,
    view: View,
    result: Comparison,
    sizes: dict[str, tuple[int, int]],
    typical_height: float,
) -> tuple[str, str, str]:
    """``(kind, copy, evidence)`` for a confirmed pair where A turned by ``view`` is B."""
    later = max(a, b)
    if view is View.mirror:
        return "mirror", later, "a mirror image carries no evidence of which is the copy"
    if view is not View.identity:
        portrait = [f for f in (a, b) if sizes[f][1] > sizes[f][0]]
        if len(portrait) == 1:
            return "rotation", portrait[0], "the quarter-turned film is portrait"
        return "rotation", later, "a half-turn carries no evidence of which is the copy"
    if not result.same_size:
        off = {f: abs(sizes[f][1] - typical_height) for f in (a, b)}
        if off[a] != off[b]:
            return (
                "rescaled",
                max((a, b), key=off.get),
                "its height is further from the typical film height",
            )
        return "rescaled", later, "both heights are as typical"
    grain_a, grain_b = result.grain or (0.0, 0.0)
    low, high = sorted((grain_a, grain_b))
    if high - low > NOISED_GRAIN_GAIN and high > NOISED_GRAIN_RATIO * low:
        return "noised", a if grain_a > grain_b else b, f"fine grain {high:.2f} vs {low:.2f}"
    return "near-identical", "", ""


Candidate = tuple[str, str, View, int]  # film A, film B, A's view, hash distance


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


def same_picture_pairs(
    sizes: dict[str, tuple[int, int]],
    candidates: list[Candidate],
    compare_many: Callable[[list[tuple[str, str, View]]], list[Comparison]],
) -> list[SamePicture]:
    """Confirmed same-picture pairs among the ``candidate_pairs``, with ``sizes`` (film id ->
    width, height) from the index; ``compare_many`` compares each film A turned by the view
    with film B in pixels (``curation.pixels``). A pair confirmed in several views keeps the
    first."""
    typical_height = float(np.median([h for _, h in sizes.values()])) if sizes else 0.0
    results = compare_many([(a, b, view) for a, b, view, _ in candidates])
    found: dict[tuple[str, str], SamePicture] = {}
    for (a, b, view, distance), result in zip(candidates, results, strict=True):
        pair = tuple(sorted((a, b)))
        if pair in found or not result.same_picture:
            continue
        kind, copy, evidence = _judge(a, b, view, result, sizes, typical_height)
        found[pair] = SamePicture(
            *pair,
            kind,
            view,
            distance,
            round(result.reduced_mad, 4),
            None if result.full_mad is None else round(result.full_mad, 4),
            copy,
            evidence,
        )
    return [found[k] for k in sorted(found)]
