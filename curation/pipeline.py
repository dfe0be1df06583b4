"""The curation chain composed: source -> films -> hashes -> same pictures -> look-alike
components -> splits -> dataset. Each step is a plain function from its own module; this
module only calls them in order, shows progress and gathers the counts for the summary.
"""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from curation import build
from curation.hash_films import hash_films
from curation.hashing import AverageHash512
from curation.index import index_source
from curation.lookalikes import (
    LOOKALIKE_DISTANCE,
    Cluster,
    Link,
    lookalike_components,
    lookalike_links,
    patient_links,
)
from curation.originals import drop_augmented_by_name
from curation.pixels import ComparisonCache
from curation.records import (
    Fate,
    Kind,
    SourceRecord,
    fate_counts,
    pending_images,
    reason_class,
    settle_annotations,
    settle_many,
    write_records,
)
from curation.referrals import DEFAULT_SALT
from curation.review_page import write_review
from curation.same_picture import SAME_PICTURE_RADIUS
from curation.same_picture_step import SamePictureOutcome, run_same_picture
from curation.sample import SAMPLE_COMMENT
from curation.source import SOURCE_CITATION, SOURCE_DOI, SOURCE_LICENSE, Source
from curation.summary import ClusterSize, Counts, Parameters, ReasonCount, SourceFacts, Summary
from curation.vocabulary import Decode
from splits.assign import Group, assign_groups, target_counts
from splits.figures import SPLITS, Figures

STEPS = ("index", "originals", "hash", "near-identical", "lookalikes", "assign", "build")
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


@dataclass(frozen=True)
class Settings:
    """Every parameter of a run; all of them are recorded in ``curation.json``."""

    seed: int = 0
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    lookalike_distance: int = LOOKALIKE_DISTANCE
    same_picture_distance: int = SAME_PICTURE_RADIUS
    decode: Decode = Decode.draft
    referral_salt: str = DEFAULT_SALT
    workers: int = 0


@dataclass
class Outcome:
    """What a run produced, for the summary table and the exit status."""

    records: list[SourceRecord]
    summary: Summary | None  # only when the run built the dataset

    @property
    def rejected(self) -> int:
        return sum(1 for r in self.records if r.fate is Fate.rejected)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


def _skipped_records(source: Source) -> list[SourceRecord]:
    return [
        SourceRecord(name, Kind.other, Path(name).stem, folder=str(Path(name).parent)).settle(
            Fate.ignored, "archive member not extracted: duplicate .rar archive"
        )
        for name in source.skipped
    ]


def _figures(films: list[SourceRecord]) -> Figures:
    return Figures.of((lesion.pai for lesion in film.lesions) for film in films)


def _groups(clusters: list[Cluster], films: dict[str, SourceRecord]) -> list[Group]:
    return [
        Group(c.cluster_id, **asdict(_figures([films[f] for f in c.film_ids]))) for c in clusters
    ]


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


def curate(source: Source, out: Path, settings: Settings, stop_after: str = "build") -> Outcome:
    """Run the chain through ``stop_after``, whose records go to ``out/work``."""
    if stop_after not in STEPS:
        raise ValueError(f"unknown step {stop_after!r}; steps are {', '.join(STEPS)}")
    work = out / "work"
    root = source.root

    def checkpoint(step: str, records: list[SourceRecord]) -> bool:
        """Leave the requested step's records in ``work/``; True when the run stops here."""
        if step == stop_after:
            write_records(records, work / f"{STEPS.index(step) + 1:02d}-{step}.parquet")
        return step == stop_after

    with _progress() as progress:
        task = progress.add_task("index files", total=None)
        records = _skipped_records(source) + index_source(
            root,
            on_total=lambda n: progress.update(task, total=n),
            on_progress=lambda n: progress.advance(task, n),
            cache_path=out / "cache" / "index.parquet",
            workers=settings.workers,
        )
        if checkpoint("index", records):
            return Outcome(records, None)
        records = drop_augmented_by_name(records)
        if checkpoint("originals", records):
            return Outcome(records, None)
        films = pending_images(records)
        task = progress.add_task("hash films", total=len(films))
        records, hashes = hash_films(
            root,
            records,
            decode=settings.decode,
            workers=settings.workers,
            cache_path=out / "cache" / "hashes.parquet",
            on_progress=lambda n: progress.advance(task, n),
        )
        if checkpoint("hash", records):
            return Outcome(records, None)
        task = progress.add_task("compare pixels", total=None)
        same = run_same_picture(
            root,
            records,
            hashes,
            settings.same_picture_distance,
            ComparisonCache(out / "cache" / "pixels.parquet"),
            settings.workers,
            on_total=lambda n: progress.update(task, total=n),
            on_progress=lambda n: progress.advance(task, n),
        )
        records, agreement = same.records, same.agreement
        if checkpoint("near-identical", records):
            return Outcome(records, None)
        films_by_id = {r.film_id: r for r in pending_images(records)}
        compared = {k: v for k, v in hashes.items() if k in films_by_id or k in same.kept_as}
        links = lookalike_links(compared, settings.lookalike_distance)
        patients, templated = patient_links(
            {
                f: r.patient_number
                for f, r in films_by_id.items()
                if getattr(r, "patient_number", None)
            }
        )
        clusters = lookalike_components(sorted(films_by_id), links + patients, same.kept_as)
        hashes = {k: v for k, v in hashes.items() if k in films_by_id}
        if checkpoint("lookalikes", records):
            return Outcome(records, None)
        split_of = assign_groups(_groups(clusters, films_by_id), settings.fractions, settings.seed)
        film_split = {f: split_of[c.cluster_id] for c in clusters for f in c.film_ids}
        records = settle_many(
            records,
            {
                r.path: (Fate.kept, f"kept: {film_split[r.film_id]}", "")
                for r in films_by_id.values()
            },
        )
        records = settle_annotations(records)
        if checkpoint("assign", records):
            return Outcome(records, None)
        kept = {
            s: [films_by_id[f] for f in sorted(film_split) if film_split[f] == s] for s in SPLITS
        }
        task = progress.add_task("write dataset", total=len(films_by_id))
        build.write_dataset(
            out,
            root,
            kept,
            hashes,
            clusters,
            settings.referral_salt,
            on_film=lambda n: progress.advance(task, n),
        )
        build.write_manifest(out / "manifest.parquet", records)
        build.write_clusters(out / "clusters.parquet", clusters, split_of)
        build.write_agreement(out / "agreement.parquet", agreement)
        write_review(
            out,
            root,
            records,
            same.groups,
            clusters,
            links + patients,
            settings.lookalike_distance,
            synthetic=source.comment == SAMPLE_COMMENT,
        )
        summary = _summary(
            source, settings, records, same, clusters, links, patients, templated, kept
        )
        summary.save(out / "curation.json")
        checkpoint("build", records)
    return Outcome(records, summary)


def _summary(
    source: Source,
    settings: Settings,
    records: list[SourceRecord],
    same: SamePictureOutcome,
    clusters: list[Cluster],
    links: list[Link],
    patients: list[Link],
    templated: int,
    kept: dict[str, list[SourceRecord]],
) -> Summary:
    """What ``curation.json`` records of the run."""
    reasons = Counter((r.kind.value, r.fate.value, reason_class(r.reason)) for r in records)
    hash_links = [link for link in links if link.method == "ahash"]
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
            patient_links=len(patients),
            films_with_template_patient_number=templated,
            clusters=len(clusters),
            multi_film_clusters=sum(1 for c in clusters if len(c.film_ids) > 1),
            largest_clusters=tuple(
                ClusterSize(c.cluster_id, len(c.film_ids)) for c in clusters[:5]
            ),
        ),
        splits={split: _figures(films) for split, films in kept.items()},
        versions=_versions(),
    )
