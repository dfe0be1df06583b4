"""The audit's same-picture check in every orientation.

The most common augmentation leak is a test film mirrored or turned and filed in train under
its own id and cluster: its upright hash is far from the original's, so an upright-only
search (and the usual near-duplicate tools) never sees it. Here every film's mirrored and
turned hashes are searched against the other splits' upright hashes, and each candidate is
confirmed with the chain's own pixel check (``curation.same_picture.pixels``). A negative
(grey levels inverted) is searched the same way, by its inverted upright hash.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curation.core.parallel import Mapper
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.hashes.hashing import HASH_BYTES, View
from curation.hashes.orientations import mapped_pairs_in_any_orientation
from curation.hashes.pairs import as_codes
from curation.leaks.target import TURNED_VIEWS
from curation.same_picture.pixels import compare


@dataclass(frozen=True)
class TurnedPair:
    """Film ``a`` (one split) turned by ``view`` is the same picture as film ``b`` (another)."""

    a: int
    b: int
    view: View
    distance: int
    difference: float
    negative: bool = False  # film ``a``'s grey levels inverted (compared upright)


def turned_same_picture(
    splits_of: Sequence[str],
    upright: Sequence[bytes],
    turned: Sequence[bytes],
    image_bytes: Callable[[int], bytes],
    folder: Path,
    map: Mapper | None = None,
    radius: int = SAME_PICTURE_RADIUS,
) -> list[TurnedPair]:
    """Cross-split same-picture pairs in a mirrored or turned orientation, pixel-confirmed.
    ``splits_of``, ``upright`` and ``turned`` (``Film.turned``: the codes of ``TURNED_VIEWS``
    one after the other) are per film (index); ``image_bytes`` reads one. The search runs
    through ``map`` (``mapped_pairs_in_any_orientation``), its codes below ``folder``."""

    def codes_in(view: View) -> np.ndarray:
        if view is View.identity:
            return as_codes(list(upright))
        at = TURNED_VIEWS.index(view) * HASH_BYTES
        return as_codes([t[at : at + HASH_BYTES] for t in turned])

    found_rows = mapped_pairs_in_any_orientation(
        codes_in, radius, TURNED_VIEWS, folder, map, negatives=True
    )
    candidates = [
        (a, b, View.identity if view is None else view, distance)  # None: a negative, upright
        for view, rows in found_rows
        for a, b, distance in rows.tolist()
        if splits_of[a] != splits_of[b]
    ]
    found: dict[tuple[int, int], TurnedPair] = {}
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-") as images:

        def path(index: int) -> Path:
            file = Path(images) / f"{index}.jpg"
            if not file.exists():
                file.write_bytes(image_bytes(index))
            return file

        for a, b, view, distance in sorted(candidates, key=lambda c: (c[3], c[0], c[1])):
            key = (min(a, b), max(a, b))
            if key in found:
                continue
            result = compare(path(a), path(b), view)
            if result.same_picture:
                negative = view is View.identity
                found[key] = TurnedPair(a, b, view, distance, round(result.difference, 4), negative)
    return sorted(found.values(), key=lambda p: (p.distance, p.a, p.b))
