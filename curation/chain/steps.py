"""The functions of the chain's steps (``curation.chain.chain.CHAIN``): each binds its step's
plain function to the run (source folder, caches, its config, progress, ``run.map`` for its
per-file work) and returns the products it declares. The step logic lives in the step
modules, which import numpy, pyarrow and the rest: they are imported inside the functions, so
that the declaration, which ``pericurate --help`` reads, stays light."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.core.build_origin import SAMPLE_COMMENT
from curation.core.vocabulary import Reason, reason_text
from curation.hashes import HashConfig
from curation.lookalikes import LookalikeConfig
from curation.publish import PublishConfig
from curation.same_picture import SamePictureConfig
from curation.source.source import SOURCE_CITATION, SOURCE_DOI, SOURCE_LICENSE, Source
from splits import AssignConfig
from splits.figures import SPLITS, Figures

if TYPE_CHECKING:
    from curation.chain.run import Run
    from curation.core.records import SourceRecord
    from curation.hashes.hash_films import Hashes
    from curation.keeper.step import SamePictureOutcome
    from curation.lookalikes.components import Cluster, Lookalikes
    from curation.publish.summary import ClusterSize, Summary
    from curation.visits.step import Visit

VERSIONED_PACKAGES = (
    "pericurate",
    "datasets",
    "faiss-cpu",
    "imagehash",
    "networkx",
    "numpy",
    "pillow",
    "pyarrow",
)


def index_files(run: Run) -> dict[str, object]:
    """The archive members not extracted, then every file of the source folder; the films
    the curator rejected (``BUILD/decisions.toml``) settled with the curator's reason."""
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
    """Augmented copies dropped by folder and name, before any film is decoded."""
    from curation.index.originals import drop_augmented_by_name

    return {"records": drop_augmented_by_name(records)}


def hash_all(run: Run, config: HashConfig, records: list[SourceRecord]) -> dict[str, object]:
    """Every film still in play hashed in every orientation (cached by sha256)."""
    from curation.core.records import pending_images
    from curation.hashes.hash_films import hash_films
    from curation.hashes.thumbnails import THUMBNAILS_CACHE

    bar = run.track("hash films", len(pending_images(records)))
    records, hashes = hash_films(
        run.source.root,
        records,
        decode=config.decode,
        map=run.map,
        cache_path=run.cache("hashes.parquet"),
        thumbnail_cache=run.cache(THUMBNAILS_CACHE),
        on_progress=bar.advance,
    )
    return {"records": records, "hashes": hashes}


def find_same_picture(
    run: Run, config: SamePictureConfig, records: list[SourceRecord], hashes: Hashes
) -> dict[str, object]:
    """Step 5: same-picture pairs found and confirmed (``curation.same_picture``), then one
    film kept per group (``curation.keeper``), never grouping two films the curator declared
    not the same picture.

    Args:
        run: the run (its source, cache, executor and build folder).
        config: the step's setting (the candidates' hash radius).
        records: every record so far.
        hashes: each pending film's hash in every view.

    Returns:
        ``records`` (the dropped films settled) and ``same_picture`` (the outcome).
    """
    from curation.decisions import read_decisions
    from curation.keeper.step import keep_one_per_group
    from curation.same_picture.detect import Progress, find_same_pictures
    from curation.same_picture.pixel_cache import ComparisonCache

    bar = run.track("compare pixels", None)
    cache = ComparisonCache(run.cache("pixels.parquet"))
    root = run.source.root
    confirmed = find_same_pictures(
        root,
        records,
        hashes,
        config.same_picture_distance,
        cache,
        run.map,
        Progress(on_total=bar.total, on_progress=bar.advance, track=run.track),
        apart=read_decisions(run.out).apart,
    )
    same = keep_one_per_group(root, records, hashes, confirmed, cache, run.map)
    return {"records": same.records, "same_picture": same}


def find_visits(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """The visits of one patient among the films the same-picture step kept."""
    from curation.core.records import pending_images
    from curation.visits.step import DESCRIPTORS_CACHE, kept_film_visits

    films = {r.film_id: r for r in pending_images(records)}
    cache = run.cache(DESCRIPTORS_CACHE)
    return {"visits": kept_film_visits(films, run.source.root, cache, run.map, run.track)}


def join_lookalikes(
    run: Run,
    config: LookalikeConfig,
    records: list[SourceRecord],
    hashes: Hashes,
    same_picture: SamePictureOutcome,
    visits: list[Visit],
) -> dict[str, object]:
    """The kept films joined into look-alike components (visits only with ``link_visits``),
    with the films the curator declared one patient."""
    from curation.core.records import pending_images
    from curation.decisions import read_decisions
    from curation.lookalikes.components import Link, lookalike_clusters

    films = {r.film_id: r for r in pending_images(records)}
    links = [Link(v.first, v.second, "visit", inliers=v.inliers) for v in visits]
    decided = [Link(a, b, "curator") for a, b, _ in read_decisions(run.out).patients]
    found = lookalike_clusters(
        films,
        hashes,
        same_picture.kept_as,
        config.lookalike_distance,
        links,
        config.link_visits,
        decided_links=decided,
        reframed=same_picture.reframed,
    )
    return {"lookalikes": found}


def _figures(films: list[SourceRecord]) -> Figures:
    return Figures.of((lesion.pai for lesion in film.lesions) for film in films)


def assign_splits(
    run: Run, config: AssignConfig, records: list[SourceRecord], lookalikes: Lookalikes
) -> dict[str, object]:
    """Whole components to splits; the films kept, their annotations settled."""
    from curation.core.errors import SplitsError
    from curation.core.records import Fate, pending_images, settle_annotations, settle_many
    from splits.assign import Group, assign_groups, assignment_problem

    films = {r.film_id: r for r in pending_images(records)}
    groups = [
        Group(c.cluster_id, **dataclasses.asdict(_figures([films[f] for f in c.film_ids])))
        for c in lookalikes.clusters
    ]
    split_of = assign_groups(groups, config.fractions, config.seed)
    if problem := assignment_problem(groups, split_of, config.fractions):
        raise SplitsError(problem)  # before anything is written, naming the cause
    decisions = {
        films[f].path: (Fate.kept, reason_text(Reason.kept, split_of[c.cluster_id]), "")
        for c in lookalikes.clusters
        for f in c.film_ids
    }
    return {"records": settle_annotations(settle_many(records, decisions)), "split_of": split_of}


def write_build(
    run: Run,
    config: PublishConfig,
    records: list[SourceRecord],
    hashes: Hashes,
    same_picture: SamePictureOutcome,
    lookalikes: Lookalikes,
    split_of: dict[str, str],
) -> dict[str, object]:
    """The dataset with its referrals, and the files that account for it."""
    from curation.core.parallel import Beside
    from curation.core.records import Fate, Kind
    from curation.decisions import read_decisions
    from curation.hashes.thumbnails import THUMBNAILS_CACHE
    from curation.publish import build
    from curation.publish.build_check import verify_build
    from curation.publish.schema import features
    from curation.review.review_page import write_review

    out, root, clusters = run.out, run.source.root, lookalikes.clusters
    film_split = {f: split_of[c.cluster_id] for c in clusters for f in c.film_ids}
    kept_films = {r.film_id: r for r in records if r.kind is Kind.image and r.fate is Fate.kept}
    kept = {s: [kept_films[f] for f in sorted(film_split) if film_split[f] == s] for s in SPLITS}
    bar = run.track("write dataset", len(kept_films))
    salt = config.referral_salt
    build.refuse_empty_splits(
        kept, run.settings.of(AssignConfig).fractions
    )  # before anything is written
    # The review page is written beside the dataset: creating thousands of thumbnail files
    # waits on the file system, not on this process (on the 4,000-film all-copies corpus the
    # step took 7.7-8.2 s with the page after the dataset, 6.2-6.6 s with it beside). The
    # thumbnails the hash step did not make are then made in this process (``workers=1``):
    # no worker is forked while another thread is writing. ``datasets`` is imported here
    # first: a Ctrl-C inside an import another thread waits on can block that thread for good,
    # and an interrupted run never waits for the page (``Beside``).
    features()
    decisions = read_decisions(out)
    review = Beside(
        write_review,
        out,
        root,
        records,
        same_picture.groups,
        clusters,
        lookalikes.links
        + lookalikes.patient_links
        + (lookalikes.visit_links if lookalikes.visits_linked else [])
        + lookalikes.decided_links,
        run.settings.of(LookalikeConfig).lookalike_distance,
        synthetic=run.source.comment == SAMPLE_COMMENT,
        thumbnail_cache=run.cache(THUMBNAILS_CACHE),
        workers=1,
        split_of=film_split,
        decisions=decisions.sentences(),
    )
    try:
        published = build.write_dataset(out, root, kept, hashes, clusters, salt, bar.advance)
        build.write_manifest(out / "manifest.parquet", records, published)
        build.write_clusters(out / "clusters.parquet", clusters, split_of)
        build.write_agreement(out / "agreement.parquet", same_picture.agreement)
    except Exception:
        review.wait()  # an ordinary error: the page's files are whole before it is told
        raise
    review.result()
    summary = summarize(run, records, same_picture, lookalikes, kept, decisions.record())
    summary.save(out / "curation.json")
    verify_build(out)  # the outputs agree, or the build is not done (no fingerprint written)
    return {"summary": summary}


def summarize(
    run: Run,
    records: list[SourceRecord],
    same: SamePictureOutcome,
    lookalikes: Lookalikes,
    kept: dict[str, list[SourceRecord]],
    decisions: dict[str, Any] | None = None,
) -> Summary:
    """What ``curation.json`` records of the run (``decisions``: the curator's, when the
    build has a decisions file)."""
    from curation.core.records import fate_counts, reason_class
    from curation.hashes.hashing import AverageHash512
    from curation.publish.summary import Counts, ReasonCount, SourceFacts, Summary
    from splits.assign import target_counts

    source, settings = run.source, run.settings
    reasons = Counter((r.kind.value, r.fate.value, reason_class(r.reason)) for r in records)
    hash_links = [link for link in lookalikes.links if link.method == "ahash"]
    clusters = lookalikes.clusters
    return Summary(
        source=SourceFacts(
            source.origin,
            source.sha256,
            source.size,
            source.comment,
            source.comment == SAMPLE_COMMENT,
            SOURCE_CITATION,
            SOURCE_DOI,
            SOURCE_LICENSE,
        ),
        parameters=settings.record(),
        hash_version=AverageHash512(settings.of(HashConfig).decode).version,
        targets=target_counts(
            sum(len(v) for v in kept.values()), settings.of(AssignConfig).fractions
        ),
        counts=Counts(
            source_files=len(records),
            by_kind_and_fate={f"{k}/{f}": n for (k, f), n in sorted(fate_counts(records).items())},
            by_reason=tuple(ReasonCount(*key, n) for key, n in sorted(reasons.items())),
            same_picture_candidates=same.candidates,
            same_picture_groups=len(same.groups),
            same_picture_dropped=dict(
                sorted(Counter(d.kind for g in same.groups for d in g.dropped).items())
            ),
            agreement_pairs=len(same.agreement),
            lookalike_edges=len(hash_links),
            lookalike_edges_turned=sum(1 for link in hash_links if link.view != "identity"),
            patient_links=len(lookalikes.patient_links),
            films_with_template_patient_number=lookalikes.templated,
            clusters=len(clusters),
            multi_film_clusters=sum(1 for c in clusters if len(c.film_ids) > 1),
            largest_clusters=tuple(_size(c) for c in clusters[:5]),
            verified_visits=len(lookalikes.visit_links),
            visits_across_splits=_visits_across(lookalikes, kept),
        ),
        splits={split: _figures(films) for split, films in kept.items()},
        versions=_versions(),
        decisions=decisions,
    )


def _visits_across(lookalikes: Lookalikes, kept: dict[str, list[SourceRecord]]) -> int:
    """Verified visits whose two films were assigned to different splits."""
    split = {film.film_id: name for name, films in kept.items() for film in films}
    return sum(split.get(v.first) != split.get(v.second) for v in lookalikes.visit_links)


def _size(cluster: Cluster) -> ClusterSize:
    from curation.publish.summary import ClusterSize

    return ClusterSize(cluster.cluster_id, len(cluster.film_ids))


def _versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
