"""The re-encoding evidence ``bench.keeper.altered`` reads of its (original, copy) pairs: both ways,
for the margins, and what it decides where the same-picture step would read it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curation.hashes.hashing import View
from curation.keeper.groups import pairs_to_reencode
from curation.keeper.reencode import ReencodeJob, reencoding_misses, written_from
from curation.same_picture.candidates import SamePicture

# How each turned alteration relates the original to its copy (a pair's view).
VIEWS = {
    "mirror": View.mirror,
    "quarter turn +90": View.rot90,
    "quarter turn -90": View.rot270,
    "half turn": View.rot180,
}


class Misses:
    """The re-encoding evidence (``curation.keeper.reencode``) of every
    (original, copy) pair of one frame, both ways, and what it decides where the step would
    read it (the pair tied on every rule before: ``pairs_to_reencode``)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[float, float]]] = {}
        self.read_for = 0
        self.measured: dict[tuple[Path, Path, View], tuple[float | None, float | None]] = {}

    def read(
        self, label: str, original: Path, copy: Path, pair: SamePicture, facts: dict
    ) -> dict[str, str]:
        key = (original, copy, pair.view)
        if key not in self.measured:
            self.measured[key] = reencoding_misses(ReencodeJob(str(original), str(copy), pair.view))
            copy_from, original_from = self.measured[key]
            if copy_from is not None and original_from is not None:
                self.seen.setdefault(label, []).append((copy_from, original_from))
        copy_from, original_from = self.measured[key]
        if not pairs_to_reencode([pair], facts):
            return {}
        self.read_for += 1
        found = written_from(pair.a, pair.b, (copy_from, original_from))
        return dict([found]) if found else {}

    def summary(self) -> dict:
        """Per alteration: the copy's largest miss re-encoded from its original, the
        original's smallest miss re-encoded from its copy, and the smallest ratio of the
        larger miss to the smaller (how far apart the two ways are)."""
        found: dict = {"pairs the step would read": self.read_for}
        for label, seen in sorted(self.seen.items()):
            copy_from, original_from = np.array(seen).T
            ratio = np.maximum(copy_from, original_from) / np.maximum(
                np.minimum(copy_from, original_from), 1e-9
            )
            found[label] = {
                "copy from original, largest": round(float(copy_from.max()), 4),
                "original from copy, smallest": round(float(original_from.min()), 4),
                "ratio of the two ways, largest": round(float(ratio.max()), 2),
                "ratio of the two ways, smallest": round(float(ratio.min()), 2),
            }
        return found
