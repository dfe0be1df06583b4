"""The keeper step wired to files: reads the same-picture step's ``ConfirmedPairs``
(``curation.same_picture.detect``), gathers each film's evidence (``curation.keeper.evidence``,
re-encodings, grain where nothing stronger decides), keeps one film per group
(``curation.keeper.groups``) and settles the records. Its product, ``KeptGroups``, is what
the look-alike step (dropped films pass their links on) and the build read."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from curation.core.parallel import Mapper
from curation.core.records import Fate, Kind, SourceRecord, pending_images
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.index.originals import ORIGINALS_FOLDER
from curation.index.provenance import EncoderEvidence
from curation.keeper.evidence import keeper_facts
from curation.keeper.groups import (
    SamePictureGroup,
    films_needing_grain,
    pairs_to_reencode,
    same_picture_groups,
)
from curation.keeper.reencode import ReencodeJob, reencoding_misses, written_from
from curation.keeper.settle import AgreementPair, settle_same_picture
from curation.same_picture import pixels
from curation.same_picture.candidates import SamePicture
from curation.same_picture.detect import ConfirmedPairs
from curation.same_picture.pixel_cache import ComparisonCache


@dataclass(frozen=True)
class KeptGroups:
    """The keeper step's product: each same-picture group with the film kept and each
    dropped film's rule and evidence, and the agreement pairs of the re-filings."""

    groups: list[SamePictureGroup]
    agreement: list[AgreementPair]

    @functools.cached_property
    def kept_as(self) -> dict[str, str]:
        """Dropped film -> the film kept in its place (worked out once: it is read per film)."""
        return {d.film_id: g.kept for g in self.groups for d in g.dropped}

    @functools.cached_property
    def reframed(self) -> frozenset[str]:
        """Dropped films confirmed by the frame check (cropped, padded, turned, re-toned):
        their own hash shows the reframing (a black border dominates a padded film's), not
        the picture, so it must join no look-alikes (``curation.lookalikes.components``)."""
        return frozenset(d.film_id for g in self.groups for d in g.dropped if d.frame)


def learn_encoders(records: list[SourceRecord]) -> EncoderEvidence:
    """Signatures of every readable film of the archive's augmentation folder: the index read
    them with the headers, so the evidence costs no file read."""
    return EncoderEvidence.learn(
        r.encoder
        for r in records
        if r.kind is Kind.image
        and r.fate is not Fate.rejected
        and r.folder.lower() != ORIGINALS_FOLDER
    )


def _grains(
    root: Path,
    films: dict[str, SourceRecord],
    wanted: list[str],
    cache: ComparisonCache,
    map: Mapper,
) -> dict[str, float]:
    """Grain of the ``wanted`` films, measured through ``map`` unless cached."""
    todo = [f for f in wanted if films[f].sha256 not in cache.grains]
    measured = map(pixels.film_grain, [str(root / films[f].path) for f in todo])
    cache.add_grains({films[f].sha256: g for f, g in zip(todo, measured, strict=True)})
    return {f: cache.grains[films[f].sha256] for f in wanted}


def _reencoded(
    root: Path, films: dict[str, SourceRecord], pairs: list[SamePicture], map: Mapper
) -> dict[str, str]:
    """Copy -> the film it was written from, among ``pairs`` (each read through ``map``)."""
    jobs = [
        ReencodeJob(str(root / films[p.a].path), str(root / films[p.b].path), p.view) for p in pairs
    ]
    misses = map(reencoding_misses, jobs)
    found = (written_from(p.a, p.b, m) for p, m in zip(pairs, misses, strict=True))
    return dict(pair for pair in found if pair is not None)


def _rescaled(films: dict[str, SourceRecord], pairs: list[SamePicture]) -> list[tuple[str, str]]:
    """The upright whole-frame pairs of one picture at two sizes, the larger film first: the
    only ones where the larger may be an upscale of the smaller."""
    found = []
    for pair in pairs:
        a, b = films[pair.a], films[pair.b]
        if pair.frame_kinds or pair.view is not View.identity or a.width == b.width:
            continue
        found.append((pair.a, pair.b) if a.width > b.width else (pair.b, pair.a))
    return found


def keep_one_per_group(
    root: Path,
    records: list[SourceRecord],
    hashes: Hashes,
    confirmed: ConfirmedPairs,
    cache: ComparisonCache,
    map: Mapper,
) -> tuple[list[SourceRecord], KeptGroups]:
    """One film kept per same-picture group, by evidence from the files.

    Args:
        root: the folder the records' paths are relative to.
        records: every record of the source; the dropped films' records are settled.
        hashes: each film's hash in every view (the augmentation twins are found by hash).
        confirmed: the same-picture step's product (``curation.same_picture.detect``).
        cache: grain measured before (read, then extended and saved).
        map: runs the per-film and per-pair work.

    Returns:
        The records, the dropped films settled; and the groups with each dropped film's rule
        and evidence, with the agreement pairs of the re-filings.
    """
    pairs = confirmed.pairs
    paired = {film for p in pairs for film in (p.a, p.b)}  # the only films the step reads
    films = {r.film_id: r for r in pending_images(records) if r.film_id in paired}
    encoders = learn_encoders(records) if pairs else EncoderEvidence({})
    links = [(p.a, p.b) for p in pairs]
    rescaled = _rescaled(films, pairs)
    facts = keeper_facts(root, records, hashes, links, encoders, confirmed.radius, map, rescaled)
    reencoded = _reencoded(root, films, pairs_to_reencode(pairs, facts), map)
    grains = _grains(root, films, films_needing_grain(pairs, facts), cache, map)
    cache.save()
    groups = same_picture_groups(pairs, facts, grains, reencoded)
    settled, agreement = settle_same_picture(records, groups)
    return settled, KeptGroups(groups, agreement)
