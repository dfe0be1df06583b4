"""Step 5 wired to files: learn encoder signatures, compare candidates in pixels (cached,
parallel), add the pairs the frame check confirms (``curation.near_identical.frame_step``: same
picture
under another frame), group, and settle each group; the look-alike step then inherits dropped films'
links. Kept apart from ``curation.near_identical.candidates`` so that the rules there read without
I/O."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from curation.core.parallel import Mapper, Tracker
from curation.core.records import Fate, Kind, SourceRecord, pending_images
from curation.decisions.apply import keep_apart
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.index.originals import ORIGINALS_FOLDER
from curation.index.provenance import EncoderEvidence
from curation.near_identical import pixels
from curation.near_identical.candidates import (
    Candidate,
    SamePicture,
    SamePictureGroup,
    candidate_components,
    candidate_pairs,
    confirm_component,
    films_needing_grain,
    pairs_to_reencode,
    same_picture_groups,
)
from curation.near_identical.frame_check import FrameComparison
from curation.near_identical.frame_step import FrameCache, frame_pairs
from curation.near_identical.keeper_evidence import keeper_facts
from curation.near_identical.keeper_reencode import ReencodeJob, reencoding_misses, written_from
from curation.near_identical.pixel_cache import ComparisonCache, PairKey
from curation.near_identical.pixels import Comparison
from curation.near_identical.settle import AgreementPair, settle_same_picture


@dataclass(frozen=True)
class SamePictureOutcome:
    records: list[SourceRecord]
    groups: list[SamePictureGroup]
    agreement: list[AgreementPair]
    candidates: int
    checked: dict[tuple[str, str], FrameComparison]  # pairs the frame check compared, by id

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
    them with the headers, so the evidence costs no file read (it was a 1,000-film sample)."""
    images = [r for r in records if r.kind is Kind.image and r.fate is not Fate.rejected]
    return EncoderEvidence.learn(r.encoder for r in images if r.folder.lower() != ORIGINALS_FOLDER)


@dataclass(frozen=True)
class ComponentJob:
    """One candidate component to confirm in a worker: its candidates closest first, each
    film's path, sha256 and size, and the comparisons already known for its pairs."""

    candidates: list[Candidate]
    films: dict[str, tuple[str, str, tuple[int, int]]]
    known: dict[PairKey, Comparison]


def confirm_job(job: ComponentJob) -> tuple[list[SamePicture], dict[PairKey, Comparison]]:
    """Confirm one component (worker side): the confirmed pairs and what was newly measured.
    Its films are decoded once each, since the per-process memory of ``pixels.reduced``
    holds a component's films while it is compared."""
    measured: dict[PairKey, Comparison] = {}

    def compare(a: str, b: str, view: View) -> Comparison:
        (path_a, sha_a, size_a), (path_b, sha_b, size_b) = job.films[a], job.films[b]
        key = (sha_a, sha_b, view.value)
        if key not in job.known and key not in measured:
            measured[key] = pixels.compare(Path(path_a), Path(path_b), view, (size_a, size_b))
        return job.known.get(key) or measured[key]

    pairs, _ = confirm_component(job.candidates, compare)
    return pairs, measured


def _component_jobs(
    root: Path, films: dict[str, SourceRecord], candidates: list[Candidate], cache: ComparisonCache
) -> list[ComponentJob]:
    jobs = []
    for component in candidate_components(candidates):
        ids = sorted({f for a, b, _, _ in component for f in (a, b)})
        located = {
            f: (str(root / films[f].path), films[f].sha256, (films[f].width, films[f].height))
            for f in ids
        }
        keys = sorted({(located[a][1], located[b][1], v.value) for a, b, v, _ in component})
        known = {k: cache.comparisons[k] for k in keys if k in cache.comparisons}
        jobs.append(ComponentJob(component, located, known))
    return jobs


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


def run_same_picture(
    root: Path,
    records: list[SourceRecord],
    hashes: Hashes,
    radius: int,
    cache: ComparisonCache,
    map: Mapper,
    on_total: Callable[[int], None],
    on_progress: Callable[[int], None],
    track: Callable[[str, int | None], Tracker],
    apart: Collection[frozenset[str]] = (),
) -> SamePictureOutcome:
    """The same-picture groups of the films still in play; ``apart``: pairs of films the
    curator declared not the same picture, never grouped (``curation.decisions``)."""
    films = {r.film_id: r for r in pending_images(records)}
    candidates = candidate_pairs(hashes.subset(films.__contains__), radius)
    on_total(len(candidates))
    jobs = _component_jobs(root, films, candidates, cache)
    pairs: list[SamePicture] = []
    results = map(confirm_job, jobs, chunksize=4)
    for job, (confirmed, measured) in zip(jobs, results, strict=True):
        pairs.extend(confirmed)
        cache.add_comparisons(measured)
        on_progress(len(job.candidates))
    frames = FrameCache(cache.path.parent if cache.path else None)
    reframed = frame_pairs(root, films, hashes, pairs, frames, map, track)
    pairs.extend(reframed.same)
    frames.save()
    pairs = keep_apart(pairs, apart)
    in_pairs = sorted({f for p in pairs for f in (p.a, p.b)})
    encoders = learn_encoders(records) if in_pairs else EncoderEvidence({})
    links = [(p.a, p.b) for p in pairs]
    facts = keeper_facts(
        root, records, hashes, links, encoders, radius, map, _rescaled(films, pairs)
    )
    reencoded = _reencoded(root, films, pairs_to_reencode(pairs, facts), map)
    wanted = films_needing_grain(pairs, facts)
    grains = _grains(root, films, wanted, cache, map)
    cache.save()
    groups = same_picture_groups(pairs, facts, grains, reencoded)
    settled, agreement = settle_same_picture(records, groups)
    return SamePictureOutcome(settled, groups, agreement, len(candidates), reframed.checked)
