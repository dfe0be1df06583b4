"""Step 9, build: the dataset shards and the files that account for them.

Writes, below the build folder: ``dataset/data/{split}-00000-of-00001.parquet`` (the films,
in ``curation.schema``), ``manifest.parquet`` (every source file, its fate and reason),
``clusters.parquet``, ``agreement.parquet`` and ``curation.json`` (source, parameters, hash
version, counts, package versions; no timestamps, so equal inputs give equal bytes).
Images are the source JPEG bytes, never re-encoded; shards are written in row groups so
memory stays bounded by a batch of films.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from curation.atomic import atomic_path
from curation.hash_films import Hashes
from curation.hashing import View
from curation.lookalikes import Cluster
from curation.near_identical import AgreementPair
from curation.records import Lesion, SourceRecord
from curation.referrals import referral_for
from curation.schema import FEATURES, SPLITS, shard_name

ROW_GROUP = 64
_LESIONS = pa.list_(pa.struct([("box", pa.list_(pa.float64(), 4)), ("pai", pa.int8())]))


def _lesion_rows(lesions: tuple[Lesion, ...]) -> list[dict[str, object]]:
    return [{"box": list(les.box), "pai": les.pai} for les in lesions]


def write_split(
    path: Path,
    root: Path,
    films: list[SourceRecord],
    hashes: Hashes,
    cluster_of: dict[str, str],
    salt: str,
    on_film: Callable[[], None] | None = None,
) -> None:
    """One split's shard, films in id order."""
    schema = FEATURES.arrow_schema
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, max(len(films), 1), ROW_GROUP):
            rows = []
            for film in films[start : start + ROW_GROUP]:
                rows.append(
                    {
                        "film_id": film.film_id,
                        "image": {
                            "bytes": (root / film.path).read_bytes(),
                            "path": f"{film.film_id}.jpg",
                        },
                        "width": film.width,
                        "height": film.height,
                        "lesions": _lesion_rows(film.lesions),
                        "referral": referral_for(film.film_id, salt).as_row(),
                        "cluster_id": cluster_of[film.film_id],
                        "ahash": hashes[film.film_id][View.identity].hex(),
                    }
                )
                if on_film:
                    on_film()
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))


def write_manifest(path: Path, records: list[SourceRecord]) -> None:
    rows = [
        {
            "path": r.path,
            "kind": r.kind.value,
            "film_id": r.stem,
            "sha256": r.sha256,
            "size_bytes": r.size_bytes,
            "fate": r.fate.value,
            "reason": r.reason,
            "related": r.related,
        }
        for r in sorted(records, key=lambda r: r.path)
    ]
    schema = pa.schema(
        [
            (k, pa.int64() if k == "size_bytes" else pa.string())
            for k in (
                "path",
                "kind",
                "film_id",
                "sha256",
                "size_bytes",
                "fate",
                "reason",
                "related",
            )
        ]
    )
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)


def write_clusters(path: Path, clusters: list[Cluster], split_of: dict[str, str]) -> None:
    rows = [
        {
            "film_id": f,
            "cluster_id": c.cluster_id,
            "cluster_size": len(c.film_ids),
            "split": split_of[c.cluster_id],
        }
        for c in clusters
        for f in c.film_ids
    ]
    rows.sort(key=lambda r: r["film_id"])
    schema = pa.schema(
        [
            ("film_id", pa.string()),
            ("cluster_id", pa.string()),
            ("cluster_size", pa.int32()),
            ("split", pa.string()),
        ]
    )
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)


def write_agreement(path: Path, pairs: list[AgreementPair]) -> None:
    rows = [
        {
            "film_id": p.film_id,
            "other_film_id": p.other_film_id,
            "distance": p.distance,
            "full_mad": p.full_mad,
            "lesions": _lesion_rows(p.lesions),
            "other_lesions": _lesion_rows(p.other_lesions),
        }
        for p in pairs
    ]
    schema = pa.schema(
        [
            ("film_id", pa.string()),
            ("other_film_id", pa.string()),
            ("distance", pa.int32()),
            ("full_mad", pa.float64()),
            ("lesions", _LESIONS),
            ("other_lesions", _LESIONS),
        ]
    )
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)


def write_dataset(
    out: Path,
    root: Path,
    kept: dict[str, list[SourceRecord]],
    hashes: Hashes,
    clusters: list[Cluster],
    salt: str,
    on_film: Callable[[], None] | None = None,
) -> None:
    """All split shards under ``out/dataset/data``; stale shards of other names removed."""
    cluster_of = {f: c.cluster_id for c in clusters for f in c.film_ids}
    data = out / "dataset" / "data"
    data.mkdir(parents=True, exist_ok=True)
    wanted = {shard_name(s) for s in SPLITS}
    for stale in data.glob("*.parquet"):
        if stale.name not in wanted:
            stale.unlink()
    for split in SPLITS:
        films = sorted(kept.get(split, []), key=lambda r: r.film_id)
        write_split(data / shard_name(split), root, films, hashes, cluster_of, salt, on_film)
