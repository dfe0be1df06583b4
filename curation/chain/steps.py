"""The functions of the chain's steps (``curation.chain.chain.CHAIN``): each binds its step's
plain function to the run (source folder, caches, its config, progress, ``run.map`` for its
per-file work) and returns the products it declares. The step logic lives in the step
modules, which import numpy, pyarrow and the rest: they are imported inside the functions, so
that the declaration, which ``pericurate --help`` reads, stays light."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from curation.core.vocabulary import Reason, reason_text
from curation.hashes import HashConfig
from curation.lookalikes import LookalikeConfig
from curation.publish import PublishConfig
from curation.same_picture import SamePictureConfig
from curation.source.source import Source
from splits import AssignConfig
from splits.figures import SPLITS

if TYPE_CHECKING:
    from curation.chain.run import Run
    from curation.core.records import SourceRecord
    from curation.hashes.hash_films import Hashes
    from curation.keeper.step import KeptGroups
    from curation.lookalikes.components import Lookalikes
    from curation.same_picture.detect import ConfirmedPairs
    from curation.visits.step import Visit
    from splits.assign import SplitTargets

PIXELS_CACHE = "pixels.parquet"  # below BUILD/cache: the pixel comparisons, and grain beside


def index_files(run: Run) -> dict[str, object]:
    """The archive members not extracted, then every file of the source folder; the films
    the curator rejected (``BUILD/decisions.toml``) settled with the curator's reason.

    Args:
        run: the run (its source, build folder, cache and executor).

    Returns:
        ``records``: one record per source file, a bad file rejected with its reason.

    Raises:
        DecisionsError: the decisions file cannot be read or names a film the source does
            not hold.
    """
    from curation.core.records import Kind
    from curation.decisions import read_decisions
    from curation.decisions.apply import reject_by_curator
    from curation.index.index import index_source

    bar = run.track("index files", None)
    records = _skipped_records(run.source) + index_source(
        run.source.root,
        on_total=bar.total,
        on_progress=bar.advance,
        cache_path=run.cache("index.parquet"),
        map=run.map,
    )
    decisions = read_decisions(run.out)
    decisions.check_films({r.film_id for r in records if r.kind is Kind.image})
    return {"records": reject_by_curator(records, decisions)}


def _skipped_records(source: Source) -> list[SourceRecord]:
    from curation.core.records import Fate, Kind, SourceRecord

    return [
        SourceRecord(name, Kind.other, Path(name).stem, folder=str(Path(name).parent)).settle(
            Fate.ignored, reason_text(Reason.archive_member_not_extracted, "duplicate .rar archive")
        )
        for name in source.skipped
    ]


def keep_originals(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """Augmented copies dropped by folder and name, before any film is decoded.

    Args:
        run: the run (unused: the rule reads the records only).
        records: every record so far.

    Returns:
        ``records``, the augmented copies settled.
    """
    from curation.index.originals import drop_augmented_by_name

    return {"records": drop_augmented_by_name(records)}


def hash_all(run: Run, config: HashConfig, records: list[SourceRecord]) -> dict[str, object]:
    """Every film still in play hashed in every orientation (cached by sha256).

    Args:
        run: the run (its source, cache, executor and progress).
        config: the step's setting (how films are decoded for hashing).
        records: every record so far.

    Returns:
        ``records`` (a film that does not decode or shows no radiographic content rejected),
        ``hashes`` (each pending film's hash in every view) and ``hash_version`` (the hash's
        version string, which the build records).
    """
    from curation.core.records import pending_images
    from curation.hashes.hash_films import hash_films
    from curation.hashes.hashing import AverageHash512
    from curation.hashes.thumbnails import THUMBNAILS_STORE, thumbnail_store

    bar = run.track("hash films", len(pending_images(records)))
    records, hashes = hash_films(
        run.source.root,
        records,
        decode=config.decode,
        map=run.map,
        cache_path=run.cache("hashes.parquet"),
        thumbnails=thumbnail_store(run.cache(THUMBNAILS_STORE)),
        on_progress=bar.advance,
    )
    version = AverageHash512(config.decode).version
    return {"records": records, "hashes": hashes, "hash_version": version}


def find_same_picture(
    run: Run, config: SamePictureConfig, records: list[SourceRecord], hashes: Hashes
) -> dict[str, object]:
    """Same-picture pairs found by hash and confirmed in pixels or under another frame
    (``curation.same_picture``), never a pair the curator declared not the same picture.

    Args:
        run: the run (its source, cache, executor and build folder).
        config: the step's setting (the candidates' hash radius).
        records: every record so far.
        hashes: each pending film's hash in every view.

    Returns:
        ``same_picture_pairs``: the confirmed pairs with their evidence.
    """
    from curation.decisions import read_decisions
    from curation.same_picture.detect import Progress, find_same_pictures
    from curation.same_picture.pixel_cache import ComparisonCache

    bar = run.track("compare pixels", None)
    with run.scratch("same-picture-search") as searched_in:
        confirmed = find_same_pictures(
            run.source.root,
            records,
            hashes,
            config.same_picture_distance,
            ComparisonCache(run.cache(PIXELS_CACHE)),
            run.map,
            Progress(on_total=bar.total, on_progress=bar.advance, track=run.track),
            apart=read_decisions(run.out).apart,
            searched_in=searched_in,
        )
    return {"same_picture_pairs": confirmed}


def keep_one_per_picture(
    run: Run, records: list[SourceRecord], hashes: Hashes, same_picture_pairs: ConfirmedPairs
) -> dict[str, object]:
    """One film kept per same-picture group by evidence from the files (``curation.keeper``);
    the others settled as copies or re-filings.

    Args:
        run: the run (its source, cache and executor).
        records: every record so far.
        hashes: each pending film's hash in every view (augmentation twins are found by hash).
        same_picture_pairs: the same-picture step's confirmed pairs.

    Returns:
        ``records`` (the dropped films settled) and ``kept_groups`` (each group, its kept
        film and each dropped film's rule and evidence, and the agreement pairs).
    """
    from curation.keeper.step import keep_one_per_group
    from curation.same_picture.pixel_cache import ComparisonCache

    records, kept = keep_one_per_group(
        run.source.root,
        records,
        hashes,
        same_picture_pairs,
        ComparisonCache(run.cache(PIXELS_CACHE)),
        run.map,
    )
    return {"records": records, "kept_groups": kept}


def find_visits(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """The visits of one patient among the films the keeper step kept.

    Args:
        run: the run (its source, cache, executor and progress).
        records: every record so far; the pending films are the kept ones.

    Returns:
        ``visits``: each pair of kept films verified as visits of one patient.
    """
    from curation.core.records import pending_images
    from curation.visits.step import kept_film_visits

    films = {r.film_id: r for r in pending_images(records)}
    return {"visits": kept_film_visits(films, run.source.root, run.cache, run.map, run.track)}


def join_lookalikes(
    run: Run,
    config: LookalikeConfig,
    records: list[SourceRecord],
    hashes: Hashes,
    kept_groups: KeptGroups,
    visits: list[Visit],
) -> dict[str, object]:
    """The kept films joined into look-alike components (visits only with ``link_visits``),
    with the films the curator declared one patient.

    Args:
        run: the run (its build folder, for the curator's decisions).
        config: the step's settings (the look-alike distance, whether visits join).
        records: every record so far.
        hashes: each film's hash in every view.
        kept_groups: the keeper step's groups (a dropped film passes its links on).
        visits: the visits step's verified pairs.

    Returns:
        ``lookalikes``: the components and the links that made them, with their distance.
    """
    from curation.core.records import pending_images
    from curation.decisions import read_decisions
    from curation.lookalikes.components import Link, lookalike_clusters

    films = {r.film_id: r for r in pending_images(records)}
    links = [Link(v.first, v.second, "visit", inliers=v.inliers) for v in visits]
    decided = [Link(a, b, "curator") for a, b, _ in read_decisions(run.out).patients]
    with run.scratch("lookalike-search") as searched_in:
        found = lookalike_clusters(
            films,
            hashes,
            kept_groups.kept_as,
            config.lookalike_distance,
            links,
            config.link_visits,
            decided_links=decided,
            reframed=kept_groups.reframed,
            searched_in=searched_in,
            map=run.map,
        )
    return {"lookalikes": found}


def assign_splits(
    run: Run, config: AssignConfig, records: list[SourceRecord], lookalikes: Lookalikes
) -> dict[str, object]:
    """Whole components to splits; the films kept, their annotations settled.

    Args:
        run: the run (unused: the assignment is a function of its inputs).
        config: the step's settings (the seed and the three shares).
        records: every record so far.
        lookalikes: the components, each assigned whole.

    Returns:
        ``records`` (the films kept, with their split), ``split_of`` (component -> split)
        and ``split_targets`` (the shares and each split's film target).

    Raises:
        SplitsError: no assignment can give every split films.
    """
    from curation.core.errors import SplitsError
    from curation.core.records import Fate, pending_images, settle_annotations, settle_many
    from curation.publish.summary import split_figures
    from splits.assign import Group, SplitTargets, assign_groups, assignment_problem

    films = {r.film_id: r for r in pending_images(records)}
    groups = [
        Group(c.cluster_id, **dataclasses.asdict(split_figures(films[f] for f in c.film_ids)))
        for c in lookalikes.clusters
    ]
    split_of = assign_groups(groups, config.fractions, config.seed)
    if problem := assignment_problem(groups, split_of, config.fractions):
        raise SplitsError(problem)  # before anything is written, naming the cause
    # One decision a split, shared by its films: a tuple and a text each cost more than the
    # dict's entry that points at them (docs/scale.md, "The driver's memory per source file").
    kept_in = {split: (Fate.kept, reason_text(Reason.kept, split), "") for split in SPLITS}
    decisions = {
        films[f].path: kept_in[split_of[c.cluster_id]]
        for c in lookalikes.clusters
        for f in c.film_ids
    }
    targets = SplitTargets.of(sum(g.films for g in groups), config.fractions)
    return {
        "records": settle_annotations(settle_many(records, decisions)),
        "split_of": split_of,
        "split_targets": targets,
    }


def write_build(
    run: Run,
    config: PublishConfig,
    records: list[SourceRecord],
    hashes: Hashes,
    hash_version: str,
    same_picture_pairs: ConfirmedPairs,
    kept_groups: KeptGroups,
    lookalikes: Lookalikes,
    split_of: dict[str, str],
    split_targets: SplitTargets,
) -> dict[str, object]:
    """The dataset with its referrals, and the files that account for it.

    Args:
        run: the run (its source, build folder, cache, settings as recorded, progress).
        config: the step's setting (the referrals' salt).
        records: every record, each film kept or settled.
        hashes: each film's hash in every view (a row's ``ahash``).
        hash_version: the hash step's version string, recorded in ``curation.json``.
        same_picture_pairs: the same-picture step's pairs (their count is recorded).
        kept_groups: the keeper step's groups (the review page, the agreement table).
        lookalikes: the components and their links.
        split_of: each component's split.
        split_targets: the shares and film targets the assignment aimed at.

    Returns:
        ``summary``: what ``curation.json`` records.

    Raises:
        BuildError: a split would be empty.
        BuildMismatch: the outputs disagree (``verify_build``).
    """
    from curation.core.build_origin import SAMPLE_COMMENT
    from curation.core.parallel import Beside
    from curation.core.records import Fate, Kind
    from curation.decisions import read_decisions
    from curation.hashes.thumbnails import THUMBNAILS_STORE, thumbnail_store
    from curation.publish import build
    from curation.publish.build_check import verify_build
    from curation.publish.schema import features
    from curation.publish.summary import Made, summarize
    from curation.review.review_page import write_review
    from curation.same_picture.frame_store import features_store

    out, root, clusters = run.out, run.source.root, lookalikes.clusters
    film_split = {f: split_of[c.cluster_id] for c in clusters for f in c.film_ids}
    kept_films = {r.film_id: r for r in records if r.kind is Kind.image and r.fate is Fate.kept}
    kept = {s: [kept_films[f] for f in sorted(film_split) if film_split[f] == s] for s in SPLITS}
    bar = run.track("write dataset", len(kept_films))
    salt = config.referral_salt
    build.refuse_empty_splits(kept, split_targets.fractions)  # before anything is written
    # The review page is written beside the dataset: writing thousands of thumbnail files
    # waits on the file system, not on this process. The thumbnails the hash step did not
    # make are then made in this process (``workers=1``): no worker is forked while another
    # thread is writing. ``datasets`` is imported here first: a Ctrl-C inside an import
    # another thread waits on can block that thread for good, and an interrupted run never
    # waits for the page (``Beside``).
    features()
    decisions = read_decisions(out)
    review = Beside(
        write_review,
        out,
        root,
        records,
        kept_groups.groups,
        clusters,
        lookalikes.joining_links,
        lookalikes.distance,
        synthetic=run.source.comment == SAMPLE_COMMENT,
        thumbnails=thumbnail_store(run.cache(THUMBNAILS_STORE)),
        workers=1,
        features_store=features_store(run.cache(PIXELS_CACHE).parent),  # as the step's
        split_of=film_split,
        decisions=decisions.sentences(),
    )
    try:
        published = build.write_dataset(out, root, kept, hashes, clusters, salt, bar.advance)
        build.write_manifest(out / "manifest.parquet", records, published)
        build.write_clusters(out / "clusters.parquet", clusters, split_of)
        build.write_agreement(out / "agreement.parquet", kept_groups.agreement)
    except Exception:
        review.wait()  # an ordinary error: the page's files are whole before it is told
        raise
    review.result()
    made = Made(records, same_picture_pairs, kept_groups, lookalikes, split_targets)
    summary = summarize(
        run.source, run.settings.record(), hash_version, made, kept, decisions.record()
    )
    summary.save(out / "curation.json")
    # The check reads every output again: what they were written from (a few hundred bytes a
    # kept film: its published sha256, split and record by id) is let go first.
    del published, kept, kept_films, film_split, made
    verify_build(out)  # the outputs agree, or the build is not done (no fingerprint written)
    return {"summary": summary}
