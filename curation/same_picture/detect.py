"""The same-picture step wired to files: hash candidates compared in pixels (cached,
parallel), then the pairs the frame check confirms (``curation.same_picture.frame_step``: same
picture under another frame). Its product, ``ConfirmedPairs``, is what the keeper step
(``curation.keeper.step``) reads; it decides nothing about which film stays. Kept apart from
``curation.same_picture.candidates`` so that the rules there read without I/O."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from curation.core.parallel import Mapper, Tracker
from curation.core.records import SourceRecord, pending_images
from curation.decisions.apply import keep_apart
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.same_picture import pixels
from curation.same_picture.candidates import (
    Candidate,
    SamePicture,
    candidate_components,
    candidate_pairs,
    confirm_component,
)
from curation.same_picture.frame_step import frame_pairs
from curation.same_picture.frame_store import FrameCache
from curation.same_picture.pixel_cache import ComparisonCache, PairKey
from curation.same_picture.pixels import Comparison


@dataclass(frozen=True)
class Progress:
    """Where detection reports its progress: the candidates' total, each component's
    candidates once confirmed, and a tracker per phase of the frame check."""

    on_total: Callable[[int], None]
    on_progress: Callable[[int], None]
    track: Callable[[str, int | None], Tracker]


@dataclass(frozen=True)
class ConfirmedPairs:
    """The same-picture step's product, the keeper step's input: every confirmed pair with
    its evidence (the pixel comparison, or the frame check's kinds and fitted transform).

    Args:
        pairs: the confirmed pairs, whole-frame first, then those under another frame, never
            a pair the curator declared apart.
        radius: the hash radius the candidates were drawn within (the keeper looks for
            augmentation twins within the same radius).
        candidates: how many hash candidates were compared.
    """

    pairs: list[SamePicture]
    radius: int
    candidates: int


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
        """The pair's comparison, from the cache or measured once."""
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


def find_same_pictures(
    root: Path,
    records: list[SourceRecord],
    hashes: Hashes,
    radius: int,
    cache: ComparisonCache,
    map: Mapper,
    progress: Progress,
    apart: Collection[frozenset[str]] = (),
    searched_in: Path | None = None,
) -> ConfirmedPairs:
    """The confirmed same-picture pairs among the films still in play.

    Args:
        root: the folder the records' paths are relative to.
        records: every record of the source; only pending images are compared.
        hashes: each film's hash in every view.
        radius: candidates are film pairs within this many bits in some view.
        cache: pixel comparisons already made (read, then extended and saved); its folder
            also holds the frame check's cache.
        map: runs the per-component and per-pair work.
        progress: where the progress goes.
        apart: pairs of films the curator declared not the same picture
            (``curation.decisions``): never confirmed.
        searched_in: a folder ``map``'s workers see, where the search for candidates by hash
            writes its codes to run a table a job through ``map``; ``None``: searched here.

    Returns:
        The confirmed pairs with their evidence, for ``curation.keeper.step``.
    """
    films = {r.film_id: r for r in pending_images(records)}
    candidates = candidate_pairs(hashes.subset(films.__contains__), radius, searched_in, map)
    progress.on_total(len(candidates))
    jobs = _component_jobs(root, films, candidates, cache)
    pairs: list[SamePicture] = []
    results = map(confirm_job, jobs, chunksize=4)
    for job, (confirmed, measured) in zip(jobs, results, strict=True):
        pairs.extend(confirmed)
        cache.add_comparisons(measured)
        progress.on_progress(len(job.candidates))
    frames = FrameCache(cache.path.parent if cache.path else None)
    pairs.extend(frame_pairs(root, films, hashes, pairs, frames, map, progress.track, apart))
    frames.save()
    cache.save()
    return ConfirmedPairs(keep_apart(pairs, apart), radius, len(candidates))
