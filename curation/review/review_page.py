"""The build's review page: the chain's same-picture groups and look-alike clusters, turned
into ``curation.review.review``'s plain records, so a curator can check every decision at a
glance: every rejected file with its reason, every film with its lesion boxes."""

from __future__ import annotations

from pathlib import Path

from curation.core.records import Fate, Kind, SourceRecord
from curation.core.store import ArrayStore
from curation.features.features import FilmFeatures, read_features
from curation.hashes.thumbnails import Thumbnail, read_thumbnails
from curation.keeper.groups import SamePictureGroup
from curation.lookalikes.components import Cluster, Link
from curation.review.closeness import (
    RejectedFile,
    ReviewCluster,
    ReviewGroup,
    ReviewLink,
    ReviewMember,
    RuleCounts,
)
from curation.review.review import write_review_page
from curation.same_picture.pixels import SAME_PICTURE_LIMIT


def review_groups(groups: list[SamePictureGroup]) -> list[ReviewGroup]:
    """The chain's same-picture groups as the page's records."""
    return [
        ReviewGroup(
            g.kept,
            tuple(
                ReviewMember(
                    d.film_id,
                    False,
                    d.kind,
                    d.view.value,
                    d.distance,
                    d.difference,
                    SAME_PICTURE_LIMIT,
                    d.evidence,
                    framed=bool(d.frame),
                )
                for d in g.dropped
            ),
        )
        for g in groups
    ]


def review_clusters(
    clusters: list[Cluster],
    links: list[Link],
    kept_as: dict[str, str],
    limit: int,
) -> list[ReviewCluster]:
    """Every multi-film cluster with the links (between kept films) that joined it."""
    cluster_of = {f: c.cluster_id for c in clusters for f in c.film_ids}
    joined: dict[str, list[ReviewLink]] = {c.cluster_id: [] for c in clusters}
    for link in links:
        a, b = kept_as.get(link.first, link.first), kept_as.get(link.second, link.second)
        if a == b or a not in cluster_of:
            continue
        inherited = " (through a dropped copy)" if (a, b) != (link.first, link.second) else ""
        if link.method == "patient":
            reason = "same patient number"
        elif link.method == "curator":  # BUILD/decisions.toml
            reason = "one patient (the curator's decision)"
        elif link.method == "visit":  # --link-visits: verified by local features
            reason = f"visit of one patient ({link.inliers} matched features, --link-visits)"
        else:
            reason = f"hash distance {link.distance} ({link.view}){inherited}"
        visit = link.method == "visit"
        joined[cluster_of[a]].append(ReviewLink(a, b, reason, link.distance, limit, visit))
    return [
        ReviewCluster(c.cluster_id, c.film_ids, tuple(joined[c.cluster_id]))
        for c in clusters
        if len(c.film_ids) > 1
    ]


def rule_counts(records: list[SourceRecord], groups: list[SamePictureGroup]) -> RuleCounts:
    """How many films each rule kept out of the dataset: dropped films outside any same-picture
    group were dropped by the folder rule; rejected images were bad files."""
    in_groups = {d.film_id for g in groups for d in g.dropped}
    dropped = {r.film_id for r in records if r.kind is Kind.image and r.fate is Fate.dropped}
    rejected = sum(r.kind is Kind.image and r.fate is Fate.rejected for r in records)
    return RuleCounts(len(dropped - in_groups), len(dropped & in_groups), rejected)


def write_review(
    out: Path,
    root: Path,
    records: list[SourceRecord],
    groups: list[SamePictureGroup],
    clusters: list[Cluster],
    links: list[Link],
    limit: int,
    synthetic: bool,
    thumbnails: ArrayStore,
    workers: int = 0,
    features_store: ArrayStore | None = None,
    split_of: dict[str, str] | None = None,
    decisions: list[str] | None = None,
) -> Path:
    """``out/review/index.html`` with thumbnails of every film it shows (those the hash step
    stored in ``thumbnails``, the others made for the page over ``workers`` processes);
    the local features of the films it draws matches for are the same-picture step's, read
    from its ``features_store`` (``curation.same_picture.frame_store``) when it holds them;
    ``split_of`` maps each kept film to its split; ``decisions``: the curator's, in words."""
    fates = (Fate.kept, Fate.dropped)
    films = {r.film_id: r for r in records if r.kind is Kind.image and r.fate in fates}

    def known(batch: list[str]) -> dict[str, Thumbnail]:
        by_sha = read_thumbnails(thumbnails, (films[film].sha256 for film in batch))
        return {film: by_sha[films[film].sha256] for film in batch if films[film].sha256 in by_sha}

    def features(film: str) -> FilmFeatures | None:
        return read_features(features_store, films[film].sha256) if features_store else None

    kept_as = {d.film_id: g.kept for g in groups for d in g.dropped}
    rejected = [
        RejectedFile(r.path, r.kind.value, r.reason) for r in records if r.fate is Fate.rejected
    ]
    return write_review_page(
        out / "review",
        review_groups(groups),
        review_clusters(clusters, links, kept_as, limit),
        lambda film_id: root / films[film_id].path,
        title="pericurate: same-picture and look-alike decisions",
        synthetic=synthetic,
        split_of=split_of,
        rules=rule_counts(records, groups),
        workers=workers,
        known=known,
        features=features,
        decisions=decisions or [],
        lesions=lambda film: films[film].lesions if film in films else (),
        rejected=rejected,
    )
