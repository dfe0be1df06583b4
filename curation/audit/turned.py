"""The audit's same-picture check in every orientation.

The most common augmentation leak is a test film mirrored or turned and filed in train under
its own id and cluster: its upright hash is far from the original's, so an upright-only
search (and the usual near-duplicate tools) never sees it. Here every film's mirrored and
turned hashes are searched against the other splits' upright hashes, and each candidate is
confirmed with the chain's own pixel check (``curation.same_picture.pixels``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from curation.hashes.hashing import View
from curation.hashes.pairs import as_codes, range_pairs
from curation.same_picture.candidates import SAME_PICTURE_RADIUS
from curation.same_picture.pixels import compare


@dataclass(frozen=True)
class TurnedPair:
    """Film ``a`` (one split) turned by ``view`` is the same picture as film ``b`` (another)."""

    a: int
    b: int
    view: View
    distance: int
    difference: float


def turned_same_picture(
    splits_of: Sequence[str],
    upright: Sequence[bytes],
    turned: Sequence[dict[str, bytes]],
    image_bytes: Callable[[int], bytes],
    radius: int = SAME_PICTURE_RADIUS,
) -> list[TurnedPair]:
    """Cross-split same-picture pairs in a mirrored or turned orientation, pixel-confirmed.
    ``splits_of``, ``upright`` and ``turned`` are per film (index); ``image_bytes`` reads one."""
    own = as_codes(list(upright))
    candidates: set[tuple[int, int, View, int]] = set()
    for view in View:
        if view is View.identity:
            continue
        codes = as_codes([t[view.value] for t in turned])
        for block in range_pairs(own, codes, radius):
            for a, b, distance in block.tolist():
                if splits_of[a] != splits_of[b]:
                    candidates.add((a, b, view, distance))
    found: dict[tuple[int, int], TurnedPair] = {}
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-") as folder:

        def path(index: int) -> Path:
            file = Path(folder) / f"{index}.jpg"
            if not file.exists():
                file.write_bytes(image_bytes(index))
            return file

        for a, b, view, distance in sorted(candidates, key=lambda c: (c[3], c[0], c[1])):
            key = (min(a, b), max(a, b))
            if key in found:
                continue
            result = compare(path(a), path(b), view)
            if result.same_picture:
                found[key] = TurnedPair(a, b, view, distance, round(result.difference, 4))
    return sorted(found.values(), key=lambda p: (p.distance, p.a, p.b))
