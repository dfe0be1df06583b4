"""The functions of the chain's steps (``curation.chain.CHAIN``): each binds its step's plain
function to the run (source folder, caches, settings, progress, where files are read) and
returns the products it declares. The step logic itself lives in the step modules."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections import Counter
from pathlib import Path

from curation import build
from curation.build_check import verify_build
from curation.chain import Run
from curation.hash_films import Hashes, hash_films
from curation.hashing import AverageHash512
from curation.index import index_source
from curation.lookalikes import Cluster, Link, Lookalikes, lookalike_clusters
from curation.originals import drop_augmented_by_name
from curation.parallel import Beside
from curation.pixel_cache import ComparisonCache
from curation.records import (
    Fate,
    Kind,
    SourceRecord,
    fate_counts,
    pending_images,
    reason_class,
    settle_annotations,
    settle_many,
)
from curation.review_page import write_review
from curation.same_picture_step import SamePictureOutcome, run_same_picture
from curation.sample import SAMPLE_COMMENT
from curation.schema import features
from curation.source import SOURCE_CITATION, SOURCE_DOI, SOURCE_LICENSE, Source
from curation.summary import ClusterSize, Counts, Parameters, ReasonCount, SourceFacts, Summary
from curation.thumbnails import THUMBNAILS_CACHE
from curation.visits import kept_film_visits
from splits.assign import Group, assign_groups, target_counts
from splits.figures import SPLITS, Figures

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
    """Step 2: the archive members not extracted, then every file of the source folder."""
    bar = run.track("index files", None)
    records = _skipped_records(run.source) + index_source(
        run.source.root,
        on_total=bar.total,
        on_progress=bar.advance,
        cache_path=run.cache("index.parquet"),
        workers=run.settings.workers,
        reader=run.reader,
    )
    return {"records": records}


def _skipped_records(source: Source) -> list[SourceRecord]:
    return [
        SourceRecord(name, Kind.other, Path(name).stem, folder=str(Path(name).parent)).settle(
            Fate.ignored, "archive member not extracted: duplicate .rar archive"
        )
        for name in source.skipped
    ]


def keep_originals(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """Step 3: augmented copies dropped by folder and name, before any film is decoded."""
    return {"records": drop_augmented_by_name(records)}


def hash_all(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """Step 4: every film still in play hashed in every orientation (cached by sha256)."""
    bar = run.track("hash films", len(pending_images(records)))
    records, hashes = hash_films(
        run.source.root,
        records,
        decode=run.settings.decode,
        workers=run.settings.workers,
        cache_path=run.cache("hashes.parquet"),
        thumbnail_cache=run.cache(THUMBNAILS_CACHE),
        on_progress=bar.advance,
        hasher=run.hasher,
    )
    return {"records": records, "hashes": hashes}


def drop_same_pictures(run: Run, records: list[SourceRecord], hashes: Hashes) -> dict[str, object]:
    """Step 5: same-picture candidates confirmed in pixels; one film kept per group."""
    bar = run.track("compare pixels", None)
    same = run_same_picture(
        run.source.root,
        records,
        hashes,
        run.settings.same_picture_distance,
        ComparisonCache(run.cache("pixels.parquet")),
        run.settings.workers,
        on_total=bar.total,
        on_progress=bar.advance,
        track=run.track,
    )
    return {"records": same.records, "same_picture": same}


def join_lookalikes(
    run: Run, records: list[SourceRecord], hashes: Hashes, same_picture: SamePictureOutcome
) -> dict[str, object]:
    """Step 6: the kept films joined into look-alike components."""
    films = {r.film_id: r for r in pending_images(records)}
    visits = kept_film_visits(films, same_picture.checked)
    links = [Link(a, b, "visit", inliers=v.inliers) for a, b, v in visits]
    found = lookalike_clusters(
        films,
        hashes,
        same_picture.kept_as,
        run.settings.lookalike_distance,
        links,
        run.settings.link_visits,
    )
    return {"lookalikes": found}


def _figures(films: list[SourceRecord]) -> Figures:
    return Figures.of((lesion.pai for lesion in film.lesions) for film in films)


def assign_splits(
    run: Run, records: list[SourceRecord], lookalikes: Lookalikes
) -> dict[str, object]:
    """Step 7: whole components to splits; the films kept, their annotations settled."""
    films = {r.film_id: r for r in pending_images(records)}
    groups = [
        Group(c.cluster_id, **dataclasses.asdict(_figures([films[f] for f in c.film_ids])))
        for c in lookalikes.clusters
    ]
    split_of = assign_groups(groups, run.settings.fractions, run.settings.seed)
    decisions = {
        films[f].path: (Fate.kept, f"kept: {split_of[c.cluster_id]}", "")
        for c in lookalikes.clusters
        for f in c.film_ids
    }
    return {"records": settle_annotations(settle_many(records, decisions)), "split_of": split_of}


def write_build(
    run: Run,
    records: list[SourceRecord],
    hashes: Hashes,
    same_picture: SamePictureOutcome,
    lookalikes: Lookalikes,
    split_of: dict[str, str],
) -> dict[str, object]:
    """Step 8: the dataset with its referrals, and the files that account for it."""
    out, root, clusters = run.out, run.source.root, lookalikes.clusters
    film_split = {f: split_of[c.cluster_id] for c in clusters for f in c.film_ids}
    kept_films = {r.film_id: r for r in records if r.kind is Kind.image and r.fate is Fate.kept}
    kept = {s: [kept_films[f] for f in sorted(film_split) if film_split[f] == s] for s in SPLITS}
    bar = run.track("write dataset", len(kept_films))
    salt = run.settings.referral_salt
    build.refuse_empty_splits(kept, run.settings.fractions)  # before anything is written
    # The review page is written beside the dataset: creating thousands of thumbnail files
    # waits on the file system, not on this process (on the 4,000-film all-copies corpus the
    # step took 7.7-8.2 s with the page after the dataset, 6.2-6.6 s with it beside). The
    # thumbnails the hash step did not make are then made in this process (``workers=1``):
    # no worker is forked while another thread is writing. ``datasets`` is imported here
    # first: a Ctrl-C inside an import another thread waits on can block that thread for good,
    # and an interrupted run never waits for the page (``Beside``).
    features()
    review = Beside(
        write_review,
        out,
        root,
        records,
        same_picture.groups,
        clusters,
        lookalikes.links
        + lookalikes.patient_links
        + (lookalikes.visit_links if lookalikes.visits_linked else []),
        run.settings.lookalike_distance,
        synthetic=run.source.comment == SAMPLE_COMMENT,
        thumbnail_cache=run.cache(THUMBNAILS_CACHE),
        workers=1,
        split_of=film_split,
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
    summary = summarize(run, records, same_picture, lookalikes, kept)
    summary.save(out / "curation.json")
    verify_build(out)  # the outputs agree, or the build is not done (no fingerprint written)
    return {"summary": summary}


def summarize(
    run: Run,
    records: list[SourceRecord],
    same: SamePictureOutcome,
    lookalikes: Lookalikes,
    kept: dict[str, list[SourceRecord]],
) -> Summary:
    """What ``curation.json`` records of the run."""
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
        parameters=Parameters(
            settings.seed,
            settings.fractions,
            settings.lookalike_distance,
            settings.same_picture_distance,
            settings.decode,
            settings.referral_salt,
            link_visits=settings.link_visits,
        ),
        hash_version=AverageHash512(settings.decode).version,
        targets=target_counts(sum(len(v) for v in kept.values()), settings.fractions),
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
    )


def _visits_across(lookalikes: Lookalikes, kept: dict[str, list[SourceRecord]]) -> int:
    """Verified visits whose two films were assigned to different splits."""
    split = {film.film_id: name for name, films in kept.items() for film in films}
    return sum(split.get(v.first) != split.get(v.second) for v in lookalikes.visit_links)


def _size(cluster: Cluster) -> ClusterSize:
    return ClusterSize(cluster.cluster_id, len(cluster.film_ids))


def _versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
