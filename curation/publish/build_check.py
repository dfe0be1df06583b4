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
from array import array
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


class _KeptFilms:
    """The manifest's kept films, held by a build check for every kept film of the archive at
    once: each film's id once, and beside it its split as its place in ``SPLITS``, its
    published sha256 as 32 bytes and its cluster as a number (about 160 bytes a film beside
    its id, against over 400 as texts)."""

    def __init__(self) -> None:
        self.place: dict[str, int] = {}  # film_id -> its place in the arrays below
        self.splits = bytearray()
        self.digests = bytearray()
        self.clusters = array("q")  # each film's cluster (a number of ``cluster_ids``); -1: none
        self.cluster_ids: dict[str, int] = {}

    def add(self, film: str, split: str, sha256: str) -> bool:
        """Add a kept film; False for a film already kept or a split or digest not well-formed."""
        try:
            digest = bytes.fromhex(sha256)
        except ValueError:
            return False
        if film in self.place or split not in SPLITS or digest.hex() != sha256 or len(digest) != 32:
            return False
        self.place[film] = len(self.splits)
        self.splits.append(SPLITS.index(split))
        self.digests += digest
        self.clusters.append(-1)
        return True

    def split(self, film: str) -> str | None:
        """The film's split, None for a film the manifest does not keep."""
        place = self.place.get(film)
        return None if place is None else SPLITS[self.splits[place]]

    def digest(self, film: str) -> bytes:
        """The kept film's published sha256."""
        place = self.place[film]
        return bytes(self.digests[32 * place : 32 * place + 32])

    def films_in(self, split: str) -> int:
        """How many films the manifest keeps in ``split``."""
        return self.splits.count(SPLITS.index(split))


def verify_build(build: Path) -> None:
    """Refuse (``BuildMismatch``) a build whose outputs disagree (module docstring)."""
    manifest = build / "manifest.parquet"
    columns = ["kind", "film_id", "fate", "reason", "published_sha256"]
    rows = 0
    kept = _KeptFilms()
    for row in read_rows(manifest, columns):
        rows += 1
        if row["kind"] == "image" and row["fate"] == "kept":
            split = str(row["reason"]).removeprefix(f"{Reason.kept}: ")
            if not kept.add(row["film_id"], split, str(row["published_sha256"] or "")):
                raise BuildMismatch(f"{manifest}: kept film {row['film_id']} is {REBUILD}.")
    _check_clusters(build / "clusters.parquet", kept)
    in_shards = {split: _check_shard(build, split, kept) for split in SPLITS}
    pairs = sum(1 for _ in read_rows(build / "agreement.parquet", ["film_id"]))
    _check_summary(build / "curation.json", rows, kept, in_shards, pairs)


def _check_clusters(path: Path, kept: _KeptFilms) -> None:
    """Each kept film's cluster, checked against the manifest's kept films and their splits."""
    sizes: list[object] = [None] * len(kept.splits)  # each film's cluster size, as the file says
    for row in read_rows(path, ["film_id", "cluster_id", "cluster_size", "split"]):
        film = row["film_id"]
        place = kept.place.get(film, -1)
        if place < 0 or kept.clusters[place] >= 0 or kept.split(film) != row["split"]:
            raise BuildMismatch(
                f"{path}: film {film} in {row['split']} is not a film the manifest keeps "
                f"there; {REBUILD}."
            )
        kept.clusters[place] = kept.cluster_ids.setdefault(row["cluster_id"], len(kept.cluster_ids))
        sizes[place] = row["cluster_size"]
    members = Counter(kept.clusters)
    if -1 in members or any(members[c] != n for c, n in zip(kept.clusters, sizes, strict=True)):
        raise BuildMismatch(
            f"{path}: its films or cluster sizes differ from the manifest's kept films; {REBUILD}."
        )


def _check_shard(build: Path, split: str, kept: _KeptFilms) -> int:
    """The shard's film count, after checking every row (bytes hashed a batch at a time)."""
    shard = build / "dataset" / "data" / shard_name(split)
    seen = bytearray(len(kept.splits))
    for row in read_rows(shard, ["film_id", "image", "cluster_id"]):
        film = row["film_id"]
        data = (row["image"] or {}).get("bytes") or b""
        if kept.split(film) != split or seen[kept.place[film]]:
            raise BuildMismatch(
                f"{shard}: does not match the manifest (it holds film {film}, which the "
                f"manifest does not keep in {split}); {REBUILD}."
            )
        if hashlib.sha256(data).digest() != kept.digest(film):
            raise BuildMismatch(
                f"{shard}: does not match the manifest (the image bytes of film {film} are "
                f"not the ones it records); {REBUILD}."
            )
        cluster = kept.clusters[kept.place[film]]
        if kept.cluster_ids.get(row["cluster_id"]) != cluster:
            named = next(c for c, number in kept.cluster_ids.items() if number == cluster)
            raise BuildMismatch(
                f"{shard}: film {film} names cluster {row['cluster_id']}, clusters.parquet "
                f"{named}; {REBUILD}."
            )
        seen[kept.place[film]] = 1
    held, wanted = seen.count(1), kept.films_in(split)
    if held != wanted:
        raise BuildMismatch(
            f"{shard}: does not match the manifest (it holds {held} films, the manifest "
            f"keeps {wanted} in {split}); {REBUILD}."
        )
    return held


def _check_summary(
    path: Path,
    source_files: int,
    kept: _KeptFilms,
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
        "kept films": (counts.by_kind_and_fate.get("image/kept", 0), len(kept.splits)),
        "clusters": (counts.clusters, len(kept.cluster_ids)),
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
