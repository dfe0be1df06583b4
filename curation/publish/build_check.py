"""A build's outputs verified together, by ``build`` before it counts as done and by ``push``
before anything is sent: the shards, ``manifest.parquet``, ``clusters.parquet`` and
``curation.json`` must tell one story.

- every shard holds exactly the films the manifest keeps in its split, each image's bytes
  with the ``published_sha256`` the manifest records for that film (the bytes published from
  the source file whose sha256 the index recorded, ``curation.publish.build``), each row with the
  cluster ``clusters.parquet`` gives that film;
- ``clusters.parquet`` names exactly the kept films, each in its shard's split, with the
  size of its cluster;
- ``curation.json`` counts the same films per split, source files, kept films, clusters and
  double-annotated pairs (``agreement.parquet``'s rows).

Two runs that wrote into one folder (another seed's shards beside this manifest) or a file
copied in from another build fail here, in one sentence naming the file.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from curation.core.errors import PericurateError
from curation.core.parquet_rows import parquet_rows
from curation.core.vocabulary import Reason
from curation.publish.schema import SPLITS, shard_name
from curation.publish.summary import Summary, SummaryError

BATCH = 64  # shard rows read at a time: a shard holds gigabytes of films
REBUILD = "the build folder's outputs do not belong together; run the build again"


class BuildMismatch(PericurateError):
    """The build's outputs disagree; the message names the file and what differs."""


def read_rows(path: Path, columns: list[str] | None) -> Iterator[dict[str, Any]]:
    """The rows of a parquet file, a batch at a time; a missing or unreadable file refused."""
    if not path.is_file():
        raise BuildMismatch(f"{path}: missing from the build; run the build again.")
    try:
        yield from parquet_rows(path, columns, BATCH)
    except (OSError, pa.ArrowException, KeyError) as error:
        raise BuildMismatch(
            f"{path}: not a readable parquet file with the build's columns "
            f"({type(error).__name__}); run the build again."
        ) from None


def verify_build(build: Path) -> None:
    """Refuse (``BuildMismatch``) a build whose outputs disagree (module docstring)."""
    manifest = build / "manifest.parquet"
    columns = ["kind", "film_id", "fate", "reason", "published_sha256"]
    rows = 0
    kept: dict[str, tuple[str, str]] = {}  # film_id -> (split, published sha256)
    for row in read_rows(manifest, columns):
        rows += 1
        if row["kind"] == "image" and row["fate"] == "kept":
            split = str(row["reason"]).removeprefix(f"{Reason.kept}: ")
            if split not in SPLITS or not row["published_sha256"] or row["film_id"] in kept:
                raise BuildMismatch(f"{manifest}: kept film {row['film_id']} is {REBUILD}.")
            kept[row["film_id"]] = (split, row["published_sha256"])
    clusters = _clusters(build / "clusters.parquet", kept)
    in_shards = {split: _check_shard(build, split, kept, clusters) for split in SPLITS}
    pairs = sum(1 for _ in read_rows(build / "agreement.parquet", ["film_id"]))
    _check_summary(build / "curation.json", rows, kept, clusters, in_shards, pairs)


def _clusters(path: Path, kept: dict[str, tuple[str, str]]) -> dict[str, str]:
    """film_id -> cluster_id, checked against the manifest's kept films and their splits."""
    cluster_of: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for row in read_rows(path, ["film_id", "cluster_id", "cluster_size", "split"]):
        film = row["film_id"]
        if film not in kept or film in cluster_of or kept[film][0] != row["split"]:
            raise BuildMismatch(
                f"{path}: film {film} in {row['split']} is not a film the manifest keeps "
                f"there; {REBUILD}."
            )
        cluster_of[film] = row["cluster_id"]
        sizes[film] = row["cluster_size"]
    members = Counter(cluster_of.values())
    if cluster_of.keys() != kept.keys() or any(
        members[cluster_of[f]] != n for f, n in sizes.items()
    ):
        raise BuildMismatch(
            f"{path}: its films or cluster sizes differ from the manifest's kept films; {REBUILD}."
        )
    return cluster_of


def _check_shard(
    build: Path, split: str, kept: dict[str, tuple[str, str]], cluster_of: dict[str, str]
) -> int:
    """The shard's film count, after checking every row (bytes hashed a batch at a time)."""
    shard = build / "dataset" / "data" / shard_name(split)
    seen: set[str] = set()
    for row in read_rows(shard, ["film_id", "image", "cluster_id"]):
        film = row["film_id"]
        data = (row["image"] or {}).get("bytes") or b""
        if film in seen or kept.get(film, ("", ""))[0] != split:
            raise BuildMismatch(
                f"{shard}: does not match the manifest (it holds film {film}, which the "
                f"manifest does not keep in {split}); {REBUILD}."
            )
        if hashlib.sha256(data).hexdigest() != kept[film][1]:
            raise BuildMismatch(
                f"{shard}: does not match the manifest (the image bytes of film {film} are "
                f"not the ones it records); {REBUILD}."
            )
        if row["cluster_id"] != cluster_of[film]:
            raise BuildMismatch(
                f"{shard}: film {film} names cluster {row['cluster_id']}, clusters.parquet "
                f"{cluster_of[film]}; {REBUILD}."
            )
        seen.add(film)
    wanted = sum(1 for s, _ in kept.values() if s == split)
    if len(seen) != wanted:
        raise BuildMismatch(
            f"{shard}: does not match the manifest (it holds {len(seen)} films, the manifest "
            f"keeps {wanted} in {split}); {REBUILD}."
        )
    return len(seen)


def _check_summary(
    path: Path,
    source_files: int,
    kept: dict[str, tuple[str, str]],
    cluster_of: dict[str, str],
    in_shards: dict[str, int],
    agreement_pairs: int,
) -> None:
    try:
        summary = Summary.load(path)
    except SummaryError as error:
        raise BuildMismatch(str(error)) from None
    if set(summary.splits) != set(SPLITS):
        raise BuildMismatch(f"{path}: its splits are not {', '.join(SPLITS)}; {REBUILD}.")
    counts = summary.counts
    told = {
        "source files": (counts.source_files, source_files),
        "kept films": (counts.by_kind_and_fate.get("image/kept", 0), len(kept)),
        "clusters": (counts.clusters, len(set(cluster_of.values()))),
        "agreement pairs": (counts.agreement_pairs, agreement_pairs),
        **{f"{split} films": (summary.splits[split].films, in_shards[split]) for split in SPLITS},
    }
    wrong = [
        f"{what} {said} (the files hold {held})"
        for what, (said, held) in told.items()
        if said != held
    ]
    if wrong:
        raise BuildMismatch(f"{path}: counts {', '.join(wrong)}; {REBUILD}.")
