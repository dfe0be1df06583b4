"""The toolkit as Python functions, for a notebook or a script: each returns a ``pyarrow.Table``
(``table.to_pandas()`` where pandas is installed, ``table.to_pylist()`` everywhere).

- ``curate(source, build)``: what ``make splits`` does, returning the manifest;
- ``audit_splits(target)``: the leak check of published splits, returning the flagged pairs;
- ``find_same_pictures(folder)``, ``find_lookalikes(folder)``, ``find_visits(folder)``: the
  chain's own checks run on any folder of JPEG films, returning pairs.

Examples that run as printed are in ``docs/api.md``. Heavy libraries are imported inside the
functions, so ``import curation`` (and ``pericurate --help``) stays light.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.core.errors import PericurateError
from curation.core.vocabulary import LOOKALIKE_DISTANCE, SAME_PICTURE_RADIUS

if TYPE_CHECKING:
    import pyarrow as pa

    from curation.core.parallel import Mapper
    from curation.core.records import SourceRecord
    from curation.hashes.hash_films import Hashes
    from curation.keeper.step import KeptGroups
    from curation.source.source import Source

DEFAULT_PERMUTATIONS = 999  # the CLI's 9,999 take longer than a notebook wants


class CurationError(PericurateError):
    """A problem with what the API was given, told in one sentence."""


def download(source: str | Path, build: str | Path = "build") -> Source:
    """Fetch ``source`` (a URL, a local zip or an extracted folder) into ``build``, check it
    against the build's source lock and extract it safely: ``pericurate download``.

    Args:
        source: the archive's URL, a local zip or an extracted folder.
        build: the build folder (held for the download: another run waits).

    Returns:
        The fetched source, also recorded in ``build/work/source.json``.
    """
    from curation.core.build_lock import holding_build_folder

    build = Path(build)
    with holding_build_folder(build, "download"):
        return fetch(source, build)


def fetch(source: str | Path, build: Path, lock: Path | None = None) -> Source:
    """``download`` for a caller that already holds the build folder (the command line).

    Args:
        source: the archive's URL, a local zip or an extracted folder.
        build: the build folder.
        lock: the source lock to check against (default: the build's).

    Returns:
        The fetched source, also recorded in ``build/work/source.json``.
    """
    from curation.source.download import fetch_source
    from curation.source.source import lock_path

    fetched = fetch_source(str(source), build, lock or lock_path(build, None))
    fetched.save(build / "work" / "source.json")
    return fetched


def curate(
    source: str | Path,
    build: str | Path = "build",
    *,
    fail_on_rejected: bool = False,
    workers: int = 0,
    **settings: Any,
) -> pa.Table:
    """Curate ``source`` into leakage-free splits in the folder ``build``: download, every
    step of the chain, and the dataset card (what ``make splits`` runs).

    Args:
        source: the archive's URL, a local zip or an extracted folder.
        build: the build folder (its ``decisions.toml``, if any, is honoured).
        fail_on_rejected: raise ``CurationError`` when any source file was rejected.
        workers: local worker processes (0: one per core).
        **settings: any step setting by its option name with ``_`` for ``-``, e.g.
            ``seed=1``, ``lookalike_distance=24`` (``pericurate build --help``).

    Returns:
        The manifest: one row per source file (``path``, ``kind``, ``film_id``, ``fate``,
        ``reason``, ...), with each kept film's ``cluster_id`` and ``split``.

    Example:
        >>> from curation import curate
        >>> manifest = curate("build/sample/periapical-sample.zip", "build")  # doctest: +SKIP
        >>> import pyarrow.compute as pc
        >>> manifest.filter(pc.field("fate") == "rejected")  # doctest: +SKIP
    """
    from curation.chain.chain import CHAIN, settings_from_options, step_settings
    from curation.chain.executors import executor_for
    from curation.chain.runner import curate as run_chain
    from curation.core.build_lock import holding_build_folder
    from curation.core.vocabulary import ExecutorName
    from curation.publish.card import write_card

    known = {f.name for step in CHAIN for f in step_settings(step)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise CurationError(f"unknown setting {unknown[0]!r}; the settings are {sorted(known)}.")
    build = Path(build)
    fetched = download(source, build)
    with holding_build_folder(build, "build"):
        executor = executor_for(ExecutorName.local, workers)
        outcome = run_chain(fetched, build, settings_from_options(settings), executor=executor)
        write_card(build)
    if fail_on_rejected and outcome.rejected:
        raise CurationError(
            f"{outcome.rejected} source files were rejected (reasons in "
            f"{build / 'manifest.parquet'}); the outputs are written without them."
        )
    return manifest(build)


def manifest(build: str | Path = "build") -> pa.Table:
    """The manifest of a finished build.

    Args:
        build: the build folder.

    Returns:
        One row per source file (``path``, ``kind``, ``film_id``, ``fate``, ``reason``,
        ...), with each kept film's ``cluster_id`` and ``split`` (from ``clusters.parquet``),
        sorted by path.
    """
    import pyarrow.parquet as pq

    build = Path(build)
    files = pq.read_table(build / "manifest.parquet")
    clusters = pq.read_table(build / "clusters.parquet", columns=["film_id", "cluster_id", "split"])
    joined = files.join(clusters, "film_id", join_type="left outer")
    return joined.sort_by("path")


def audit_splits(
    target: str | Path,
    *,
    out: str | Path | None = None,
    threshold: int = LOOKALIKE_DISTANCE,
    methods: tuple[str, ...] = ("ahash",),
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> pa.Table:
    """Audit published splits for leakage: ``pericurate audit`` without its exit status
    (named apart from the ``curation.audit`` package, which holds its checks).

    Args:
        target: a build folder, a folder of parquet shards, or a Hub dataset as
            ``OWNER/NAME@REVISION``.
        out: where to write ``report.json``, ``report.html`` and ``nearest.png`` (none
            written when ``None``).
        threshold: look-alike distance in bits of 512.
        methods: hash methods flagging pairs: ``ahash``, and ``phash``/``dhash``.
        permutations: permutations per referral association test.
        seed: seed of the permutation tests.

    Returns:
        One row per flagged cross-split pair: ``kind``, ``film_id``, ``split``,
        ``other_film_id``, ``other_split``, ``distance`` (bits, where a hash found it) and
        ``detail``; the audit's sentences are in the schema metadata under ``findings``
        (``json.loads(table.schema.metadata[b"findings"])``). No rows: nothing leaks.
    """
    import json

    import pyarrow as pa

    from curation.audit.audit import run_audit
    from curation.audit.report import write_report

    found = run_audit(str(target), None, threshold, methods, permutations, seed)
    if out is not None:
        write_report(found, Path(out))
    films = found.films
    rows: list[tuple[str, int, int, int | None, str]] = [
        (f"look-alike ({p.method})", p.a, p.b, p.distance, "") for p in found.pairs
    ]
    rows += [(f"same picture, {t.view}", t.a, t.b, t.distance, "") for t in found.turned]
    for v in found.visits:
        kind = "same picture, reframed" if v.same_picture else "visit of one patient"
        detail = f"the curator: {v.decided}" if v.decided else f"{v.inliers} matched features"
        rows.append((kind, v.a, v.b, None, detail))
    table = pa.table(
        {
            "kind": [r[0] for r in rows],
            "film_id": [films[r[1]].film_id for r in rows],
            "split": [films[r[1]].split for r in rows],
            "other_film_id": [films[r[2]].film_id for r in rows],
            "other_split": [films[r[2]].split for r in rows],
            "distance": pa.array([r[3] for r in rows], pa.int32()),
            "detail": [r[4] for r in rows],
        }
    )
    return table.replace_schema_metadata({"findings": json.dumps(found.findings)})


@dataclass(frozen=True)
class _Folder:
    """A folder of films read as the chain reads a source: records, hashes, a mapper."""

    root: Path
    records: list[SourceRecord]
    hashes: Hashes
    map: Mapper


def _read_folder(folder: str | Path, workers: int) -> _Folder:
    """Every readable JPEG below ``folder`` as a film named by its file stem; a file that
    cannot be read, or shares its stem with another, is skipped with a warning naming it."""
    from curation.core.parallel import LocalMap
    from curation.core.records import Fate, Kind, SourceRecord
    from curation.hashes.hash_films import hash_films
    from curation.index.index import file_kind, read_facts, source_files

    root = Path(folder)
    if not root.is_dir():
        raise CurationError(f"{root}: no such folder.")
    map = LocalMap(workers)
    images = [rel for rel in source_files(root) if file_kind(rel) is Kind.image]
    facts = read_facts(str(root.resolve()), images, [Kind.image] * len(images), None, map)
    stems = Counter(Path(rel).stem for rel in images)
    records: list[SourceRecord] = []
    for rel, found in zip(images, facts, strict=True):
        path = Path(rel)
        problem = found.problem
        if stems[path.stem] > 1:  # as the index does: two files under one id are both left out
            problem = f"{stems[path.stem]} files share the film id {path.stem}"
        if problem:
            warnings.warn(f"{root / rel}: skipped ({problem}).", stacklevel=3)
            continue
        records.append(
            SourceRecord(
                rel, Kind.image, path.stem, found.sha256, found.size, path.parent.name,
                found.width, found.height, encoder=found.encoder,
            )
        )  # fmt: skip
    records, hashes = hash_films(root, records, map=map)
    for record in records:
        if record.fate is Fate.rejected:
            warnings.warn(f"{root / record.path}: skipped ({record.reason}).", stacklevel=3)
    return _Folder(root, [r for r in records if r.fate is not Fate.rejected], hashes, map)


class _Quiet:
    """A progress bar that shows nothing (the API prints no progress)."""

    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def _same_pictures(films: _Folder, radius: int) -> KeptGroups:
    """The chain's same-picture and keeper steps on ``films``: the groups, one film kept in
    each (the pixel comparisons and grain held in memory only)."""
    from curation.keeper.step import keep_one_per_group
    from curation.same_picture.detect import Progress, find_same_pictures
    from curation.same_picture.pixel_cache import ComparisonCache

    quiet = _Quiet()
    cache = ComparisonCache(None)
    progress = Progress(quiet.total, quiet.advance, lambda _what, _total: quiet)
    confirmed = find_same_pictures(
        films.root, films.records, films.hashes, radius, cache, films.map, progress
    )
    _, kept = keep_one_per_group(
        films.root, films.records, films.hashes, confirmed, cache, films.map
    )
    return kept


def find_same_pictures(
    folder: str | Path, *, radius: int = SAME_PICTURE_RADIUS, workers: int = 0
) -> pa.Table:
    """Copies of one picture among the films of ``folder`` (turned, mirrored, cropped,
    re-encoded, re-toned or filed twice), confirmed in pixels, one film kept per picture by
    evidence from the files: the chain's same-picture and keeper steps.

    Args:
        folder: a folder of JPEG films (below it, at any depth); film ids are file stems.
        radius: hash distance (bits of 512, any orientation) of the candidates compared.
        workers: local worker processes (0: one per core).

    Returns:
        One row per film that copies another: ``film_id``, ``same_as`` (the film kept),
        ``kind`` (``rotated``, ``re-filing``, ...), ``view``, ``distance`` (bits),
        ``difference`` (pixels) and ``evidence``.
    """
    import pyarrow as pa

    outcome = _same_pictures(_read_folder(folder, workers), radius)
    dropped = [(g.kept, d) for g in outcome.groups for d in g.dropped]
    return pa.table(
        {
            "film_id": [d.film_id for _, d in dropped],
            "same_as": [kept for kept, _ in dropped],
            "kind": [d.kind for _, d in dropped],
            "view": [d.view.value for _, d in dropped],
            "distance": pa.array([d.distance for _, d in dropped], pa.int32()),
            "difference": pa.array([d.difference for _, d in dropped], pa.float64()),
            "evidence": [d.evidence for _, d in dropped],
        }
    )


def find_lookalikes(
    folder: str | Path, *, distance: int = LOOKALIKE_DISTANCE, workers: int = 0
) -> pa.Table:
    """Pairs of films of ``folder`` that look alike: within ``distance`` bits of 512 of
    each other in some orientation (the rule that keeps look-alikes in one split).

    Args:
        folder: a folder of JPEG films (below it, at any depth); film ids are file stems.
        distance: the look-alike distance, in bits of 512.
        workers: local worker processes (0: one per core).

    Returns:
        One row per pair: ``film_id``, ``other_film_id``, ``distance``, ``view`` (the
        orientation of the closest match) and ``component`` (the look-alike component both
        belong to, named by its smallest film id).
    """
    import pyarrow as pa

    from curation.lookalikes.components import lookalike_components, lookalike_links

    films = _read_folder(folder, workers)
    links = lookalike_links(films.hashes, distance)
    component = {
        film: cluster.cluster_id
        for cluster in lookalike_components(sorted(films.hashes), links)
        for film in cluster.film_ids
    }
    return pa.table(
        {
            "film_id": [link.first for link in links],
            "other_film_id": [link.second for link in links],
            "distance": pa.array([link.distance for link in links], pa.int32()),
            "view": [link.view.value if link.view else None for link in links],
            "component": [component[link.first] for link in links],
        }
    )


def find_visits(folder: str | Path, *, workers: int = 0) -> pa.Table:
    """Visits of one patient among the films of ``folder``: two films that are not the same
    picture but show one patient's anatomy (the chain's visits step: RootSIFT on the anatomy,
    retrieval, verification fitted per strip of the arch, run on the films left once copies
    are set aside).

    Args:
        folder: a folder of JPEG films (below it, at any depth); film ids are file stems.
        workers: local worker processes (0: one per core).

    Returns:
        One row per pair: ``film_id``, ``other_film_id``, ``matches``, ``inliers`` and
        ``cells`` (grid cells holding a verified match, the fewer of the two films).
    """
    import pyarrow as pa

    from curation.visits.step import kept_film_visits

    films = _read_folder(folder, workers)
    outcome = _same_pictures(films, SAME_PICTURE_RADIUS)
    copies = set(outcome.kept_as)
    kept = {r.film_id: r for r in films.records if r.film_id not in copies}
    visits = kept_film_visits(kept, films.root, None, films.map, lambda name, total: _Quiet())
    return pa.table(
        {
            "film_id": [v.first for v in visits],
            "other_film_id": [v.second for v in visits],
            "matches": pa.array([v.matches for v in visits], pa.int32()),
            "inliers": pa.array([v.inliers for v in visits], pa.int32()),
            "cells": pa.array([v.cells for v in visits], pa.int32()),
        }
    )
