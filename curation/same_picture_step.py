"""Step 5 wired to files: learn encoder signatures, compare candidates in pixels (cached,
parallel), group, and settle each group; the look-alike step then inherits dropped films'
links. Kept apart from ``curation.same_picture`` so that the rules there read without I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curation.hash_films import Hashes
from curation.hashing import View
from curation.near_identical import AgreementPair, settle_same_picture
from curation.originals import ORIGINALS_FOLDER
from curation.pixels import Comparison, ComparisonCache
from curation.provenance import EncoderEvidence, encoder_signature
from curation.records import Fate, Kind, SourceRecord, pending_images
from curation.same_picture import (
    FilmFacts,
    SamePictureGroup,
    candidate_pairs,
    confirmed_pairs,
    same_picture_groups,
)

# Enough files of each folder to learn the encoders' signatures; taken evenly by path.
SIGNATURE_SAMPLE = 1000


@dataclass(frozen=True)
class SamePictureOutcome:
    records: list[SourceRecord]
    groups: list[SamePictureGroup]
    agreement: list[AgreementPair]
    candidates: int

    @property
    def kept_as(self) -> dict[str, str]:
        """Dropped film -> the film kept in its place."""
        return {d.film_id: g.kept for g in self.groups for d in g.dropped}


def _evenly(paths: list[str], count: int) -> list[str]:
    step = max(1, len(paths) // count)
    return sorted(paths)[::step][:count]


def learn_encoders(root: Path, records: list[SourceRecord]) -> EncoderEvidence:
    """Signatures of the archive's augmentation folder (an even sample of it)."""
    images = [r for r in records if r.kind is Kind.image and r.fate is not Fate.rejected]
    augmented = [r.path for r in images if r.folder.lower() != ORIGINALS_FOLDER]
    return EncoderEvidence.learn(root / p for p in _evenly(augmented, SIGNATURE_SAMPLE))


def run_same_picture(
    root: Path,
    records: list[SourceRecord],
    hashes: Hashes,
    radius: int,
    cache: ComparisonCache,
    workers: int,
    on_total: Callable[[int], None],
    on_progress: Callable[[int], None],
) -> SamePictureOutcome:
    films = {r.film_id: r for r in pending_images(records)}
    candidates = candidate_pairs({k: v for k, v in hashes.items() if k in films}, radius)
    on_total(len(candidates))

    def compare(jobs: list[tuple[str, str, View]]) -> list[Comparison]:
        def paths(a: str, b: str, view: View) -> tuple[Path, str, Path, str, View]:
            fa, fb = films[a], films[b]
            return root / fa.path, fa.sha256, root / fb.path, fb.sha256, view

        return cache.compare_many([paths(*job) for job in jobs], workers, on_progress)

    pairs = confirmed_pairs(candidates, compare, on_progress)
    cache.save()
    in_pairs = sorted({f for p in pairs for f in (p.a, p.b)})
    encoders = learn_encoders(root, records) if in_pairs else EncoderEvidence({})
    facts = {
        f: FilmFacts(
            films[f].width,
            films[f].height,
            films[f].lesions,
            encoders.script_share(encoder_signature(root / films[f].path)),
        )
        for f in in_pairs
    }
    typical_height = float(np.median([r.height for r in films.values()])) if films else 0.0
    groups = same_picture_groups(pairs, facts, typical_height)
    settled, agreement = settle_same_picture(records, groups)
    return SamePictureOutcome(settled, groups, agreement, len(candidates))
