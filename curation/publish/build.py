"""The build step: the dataset shards and the files that account for them.

Writes, below the build folder: ``dataset/data/{split}-00000-of-00001.parquet`` (the films,
in ``curation.publish.schema``), ``manifest.parquet`` (every source file, its fate and reason),
``clusters.parquet``, ``agreement.parquet`` and ``curation.json`` (source, parameters, hash
version, counts, package versions; no timestamps, so equal inputs give equal bytes).
Images are the source JPEG's segments, never re-encoded, without what it carries beside the
picture (``curation.core.jpeg_publish``); each source film is read again here and refused unless
its sha256 is the one the index recorded (and the hash and pixel steps keyed their work by),
so a film rewritten during the build never enters a shard. The manifest records each kept
film's ``published_sha256``, and ``curation.publish.build_check`` verifies the written outputs
together before the build counts as done. Shards are written in row groups so
memory stays bounded by a batch of films, without compressing or taking statistics of the
JPEG bytes (neither gains anything on JPEG; together they took half the write time). A shard
whose every row (each image by its sha256) and writer are as last time, and whose file is
untouched since, is not written again: ``cache/shards.json`` remembers its fingerprint.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TypedDict

import pyarrow as pa

from curation.core.atomic import write_json
from curation.core.atomic_parquet import parquet_writer, write_parquet_rows
from curation.core.errors import PericurateError
from curation.core.jpeg_publish import UnpublishableJpeg, publishable_jpeg
from curation.core.records import LESION_STRUCT, Fate, Kind, Lesion, SourceRecord
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.keeper.settle import AgreementPair
from curation.lookalikes.components import Cluster
from curation.publish import schema as schema_module
from curation.publish.referrals import referral_for
from curation.publish.schema import SPLITS, features, shard_name
from splits.assign import empty_splits_problem

ROW_GROUP = 64
SHARD_WRITER = "shards-v3/published-jpeg-segments/uncompressed/no-jpeg-statistics"
_LESIONS = pa.list_(LESION_STRUCT)


class BuildError(PericurateError):
    """The build cannot publish what it was asked to; the message names the file."""


def published_bytes(path: Path, indexed_sha256: str) -> bytes:
    """The bytes a film is published with, refused when the file is not the one the index
    read (rewritten since) or its segments cannot be walked."""
    data = path.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != indexed_sha256:
        raise BuildError(
            f"{path}: changed during the build (its sha256 is now {found[:16]}..., the index "
            f"read {indexed_sha256[:16]}...); run the build again on a source nobody writes to."
        )
    try:
        return publishable_jpeg(data)
    except UnpublishableJpeg as error:
        raise BuildError(f"{path}: its JPEG segments cannot be copied ({error}).") from None


def refuse_empty_splits(kept: dict[str, list[SourceRecord]], fractions: tuple[float, ...]) -> None:
    """A source too small for the splits is refused before anything is written: ``datasets``
    cannot load an empty shard, and a benchmark without a test split is none."""
    problem = empty_splits_problem({s: len(kept.get(s, [])) for s in SPLITS}, fractions)
    if problem:
        raise BuildError(problem)


class ImageRef(TypedDict):
    """A shard image before its bytes are read: the source file's sha256 and its name."""

    sha256: str
    path: str


class ShardRow(TypedDict):
    """One film's row of a shard (``curation.publish.schema``), its image by reference."""

    film_id: str
    image: ImageRef
    width: int
    height: int
    lesions: list[dict[str, object]]
    referral: dict[str, object]
    cluster_id: str
    ahash: str


def _lesion_rows(lesions: tuple[Lesion, ...]) -> list[dict[str, object]]:
    return [les.as_row() for les in lesions]


def _shard_rows(
    films: list[SourceRecord], hashes: Hashes, cluster_of: dict[str, str], salt: str
) -> Iterator[ShardRow]:
    """The shard's rows with each image named by its sha256 instead of its bytes, made as
    they are asked for: a split of a million films is never all rows at once."""
    for film in films:
        yield {
            "film_id": film.film_id,
            "image": {"sha256": film.sha256, "path": f"{film.film_id}.jpg"},
            "width": film.width,
            "height": film.height,
            "lesions": _lesion_rows(film.lesions),
            "referral": referral_for(film.film_id, salt).as_row(),
            "cluster_id": cluster_of[film.film_id],
            "ahash": hashes[film.film_id][View.identity].hex(),
        }


def _fingerprint(rows: Iterable[ShardRow]) -> str:
    """Everything a shard's bytes depend on: its rows, the schema's definition (the source of
    ``curation.publish.schema`` and the ``datasets`` version, so that ``datasets`` need not be
    imported to tell), the writer and the pyarrow version; hashed a row at a time."""
    schema_source = Path(schema_module.__file__ or "").read_bytes().decode()
    versions = [importlib.metadata.version(p) for p in ("pyarrow", "datasets")]
    digest = hashlib.sha256(json.dumps([SHARD_WRITER, versions, ROW_GROUP, schema_source]).encode())
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True).encode() + b"\n")
    return digest.hexdigest()


def write_split(
    path: Path,
    root: Path,
    films: list[SourceRecord],
    rows: Iterable[ShardRow],
    on_film: Callable[[int], None] | None = None,
) -> dict[str, str]:
    """One split's shard: ``rows`` (from ``_shard_rows``, one a film) with the films'
    published bytes, a row group at a time; returns each film's published sha256."""
    schema = features().arrow_schema
    statistics = [c for c in schema.names if c != "image"] + ["image.path"]
    published = {}
    remaining = zip(films, rows, strict=True)
    with parquet_writer(path, schema, compression="none", write_statistics=statistics) as writer:
        for _ in range(0, max(len(films), 1), ROW_GROUP):
            batch = []
            for film, row in islice(remaining, ROW_GROUP):
                data = published_bytes(root / film.path, film.sha256)
                published[film.film_id] = hashlib.sha256(data).hexdigest()
                batch.append({**row, "image": {"bytes": data, "path": row["image"]["path"]}})
                if on_film:
                    on_film(1)
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return published


MANIFEST_COLUMNS = (
    "path",
    "kind",
    "film_id",
    "sha256",
    "size_bytes",
    "fate",
    "reason",
    "related",
    "published_sha256",
)


def write_manifest(path: Path, records: list[SourceRecord], published: dict[str, str]) -> None:
    """Every source file; ``sha256`` is the source file's, ``published_sha256`` that of the
    bytes a kept film is published with (empty for the others)."""
    rows = (
        {
            "path": r.path,
            "kind": r.kind.value,
            "film_id": r.stem,
            "sha256": r.sha256,
            "size_bytes": r.size_bytes,
            "fate": r.fate.value,
            "reason": r.reason,
            "related": r.related,
            "published_sha256": published.get(r.stem, "") if _is_kept_film(r) else "",
        }
        for r in sorted(records, key=lambda r: r.path)
    )
    schema = pa.schema(
        [(k, pa.int64() if k == "size_bytes" else pa.string()) for k in MANIFEST_COLUMNS]
    )
    write_parquet_rows(path, schema, rows)


def _is_kept_film(record: SourceRecord) -> bool:
    return record.kind is Kind.image and record.fate is Fate.kept


def write_clusters(path: Path, clusters: list[Cluster], split_of: dict[str, str]) -> None:
    """Write ``clusters.parquet``: each kept film's look-alike cluster, its size and split."""
    members = sorted(((f, c) for c in clusters for f in c.film_ids), key=lambda fc: fc[0])
    rows = (
        {
            "film_id": f,
            "cluster_id": c.cluster_id,
            "cluster_size": len(c.film_ids),
            "split": split_of[c.cluster_id],
        }
        for f, c in members
    )
    schema = pa.schema(
        [
            ("film_id", pa.string()),
            ("cluster_id", pa.string()),
            ("cluster_size", pa.int32()),
            ("split", pa.string()),
        ]
    )
    write_parquet_rows(path, schema, rows)


def write_agreement(path: Path, pairs: list[AgreementPair]) -> None:
    """Write ``agreement.parquet``: each double-annotated film with both annotations' lesions."""
    rows = (
        {
            "film_id": p.film_id,
            "other_film_id": p.other_film_id,
            "distance": p.distance,
            "difference": p.difference,
            "lesions": _lesion_rows(p.lesions),
            "other_lesions": _lesion_rows(p.other_lesions),
        }
        for p in pairs
    )
    schema = pa.schema(
        [
            ("film_id", pa.string()),
            ("other_film_id", pa.string()),
            ("distance", pa.int32()),
            ("difference", pa.float64()),
            ("lesions", _LESIONS),
            ("other_lesions", _LESIONS),
        ]
    )
    write_parquet_rows(path, schema, rows)


def write_dataset(
    out: Path,
    root: Path,
    kept: dict[str, list[SourceRecord]],
    hashes: Hashes,
    clusters: list[Cluster],
    salt: str,
    on_film: Callable[[int], None] | None = None,
) -> dict[str, str]:
    """All split shards under ``out/dataset/data``; stale shards of other names removed; a
    shard unchanged since the last build (``out/cache/shards.json``, which also remembers
    its films' published sha256) is left as it is. Returns every film's published sha256."""
    cluster_of = {f: c.cluster_id for c in clusters for f in c.film_ids}
    data = out / "dataset" / "data"
    data.mkdir(parents=True, exist_ok=True)
    wanted = {shard_name(s) for s in SPLITS}
    for stale in data.glob("*.parquet"):
        if stale.name not in wanted:
            stale.unlink()
    memo_path = out / "cache" / "shards.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    published: dict[str, str] = {}
    for split in SPLITS:
        films = sorted(kept.get(split, []), key=lambda r: r.film_id)
        path = data / shard_name(split)
        fingerprint = _fingerprint(_shard_rows(films, hashes, cluster_of, salt))
        stamp = _stamp(path, fingerprint)
        remembered = memo.get(split) if isinstance(memo.get(split), dict) else {}
        was = remembered.get("published")
        if stamp is None or {k: remembered.get(k) for k in stamp} != stamp or was is None:
            rows = _shard_rows(films, hashes, cluster_of, salt)
            now = write_split(path, root, films, rows, on_film)
            memo[split] = {**(_stamp(path, fingerprint) or {}), "published": now}
        else:
            now = was
            if on_film:
                on_film(len(films))
        published.update(now)
    write_json(memo_path, memo)
    return published


def _stamp(path: Path, fingerprint: str) -> dict[str, object] | None:
    """What identifies a written shard: its fingerprint and its file's size and mtime."""
    if not path.exists():
        return None
    info = path.stat()
    return {"fingerprint": fingerprint, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
