"""Films with the same decoded pixels, decoded at full size only where cheaper keys allow it.

Decoding every film at full size to compare pixels cost most of the audit (~30 ms a film, a
second decode beside the hash's reduced one). Equal pixels imply an equal header (mode and
size) and nearly equal average hashes, so only films sharing a header with another film whose
hash lies within ``PIXEL_CHECK_RADIUS`` bits are decoded; the check itself stays exact (sha256
of the header and every decoded pixel), so the groups found are those a full decode of every
film finds. Films with the same bytes are decoded once.

Why the radius holds: the hash of a JPEG is taken from a reduced decode (``draft``), so the
same pixels stored differently (another encoding, another format) may hash a few bits apart.
Between the reduced and the full decode of one film the bench corpus measured at most 17 bits
(``bench/RESULTS.md``, "draft vs full hash agreement"); two stored forms of one picture are
then at most 34 apart, and 48 leaves a margin.

Each row group's digests are kept in the audit's work folder (``KEPT_FOLDER``), known by the
row group (``curation.leaks.target.row_group_key``) and its rows: an audit that stops midway
decodes again only the row groups it had not.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from functools import partial
from pathlib import Path

import numpy as np

from curation.core.parallel import LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.hashes.mapped_pairs import mapped_range_pairs
from curation.hashes.pairs import as_codes
from curation.leaks.target import (
    Film,
    RowGroup,
    pixels_digest,
    read_images,
    row_group_key,
    row_groups,
)

PIXEL_CHECK_RADIUS = 48
KEPT_FOLDER = "pixel-digests"  # below the work folder: each row group's digests, kept
KEPT_VERSION = "pixels-digest-1"  # what they are: ``pixels_digest``'s sha256, as bytes


def representatives(films: list[Film]) -> list[int]:
    """Per film, the first film of its split with the same bytes (itself when it is the
    first): copies agree in every hash, feature and pixel, so the pairwise checks compare
    one film of each such set and a group of identical films costs memory in proportion to
    its size, not to its square."""
    first: dict[tuple[str, str], int] = {}
    return [first.setdefault((film.split, film.sha256), i) for i, film in enumerate(films)]


def pixel_candidates(
    films: list[Film], folder: Path, map: Mapper | None = None, radius: int = PIXEL_CHECK_RADIUS
) -> list[int]:
    """Films sharing their header with another film within ``radius`` bits of average hash.
    Films with the same bytes are searched once: all of a set are chosen when it has two.
    Each header's search runs through ``map`` (``mapped_range_pairs``), its codes below
    ``folder``."""
    by_header: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, film in enumerate(films):
        by_header[film.header][film.sha256].append(index)
    chosen: set[int] = set()
    for by_bytes in by_header.values():
        sets = list(by_bytes.values())
        chosen.update(i for members in sets if len(members) > 1 for i in members)
        if len(sets) < 2:
            continue
        codes = as_codes([films[members[0]].ahash for members in sets])
        (rows,) = mapped_range_pairs(codes, [None], radius, folder, map)
        for i, j, _ in rows.tolist():
            chosen.update((*sets[i], *sets[j]))
    return sorted(chosen)


def _digests(job: tuple[RowGroup, tuple[int, ...]], image: str, kept: ArrayStore) -> list[str]:
    """Worker side: the pixels digests of ``rows`` of one row group, or as kept of them."""
    group, rows = job

    def decoded() -> Arrays:
        digests = read_images(group, image, rows, pixels_digest)
        joined = b"".join(bytes.fromhex(digest) for digest in digests)
        return {"digests": np.frombuffer(joined, np.uint8).reshape(len(digests), 32)}

    key = hashlib.sha256(f"{row_group_key(group)}\n{image}\n{rows}".encode()).hexdigest()
    return [bytes(row).hex() for row in kept.kept(key, decoded)["digests"]]


def fill_pixels(
    films: list[Film],
    shards: list[Path],
    image: str,
    folder: Path,
    map: Mapper | None = None,
    radius: int = PIXEL_CHECK_RADIUS,
) -> None:
    """Set ``Film.pixels`` of every ``pixel_candidates`` film (searched with ``folder``),
    decoding each distinct image once, a row group per job through ``map`` (default: one
    process per core); each job's digests are kept below ``folder``."""
    chosen = pixel_candidates(films, folder, map, radius)
    first_with: dict[str, Film] = {}
    for index in chosen:
        first_with.setdefault(films[index].sha256, films[index])
    wanted: dict[RowGroup, list[int]] = defaultdict(list)  # row group -> shard rows
    groups = row_groups(shards)
    for film in first_with.values():
        group = next(g for g in groups if g.shard == film.shard and film.row < g.first_row + g.rows)
        wanted[group].append(film.row)
    jobs = [(group, tuple(sorted(rows))) for group, rows in wanted.items()]
    digest_at: dict[tuple[int, int], str] = {}
    kept = ArrayStore(folder / KEPT_FOLDER, KEPT_VERSION)
    work = partial(_digests, image=image, kept=kept)
    for (group, rows), digests in zip(
        jobs, (map or LocalMap())(work, jobs, chunksize=1), strict=True
    ):
        digest_at.update({(group.shard, row): d for row, d in zip(rows, digests, strict=True)})
    for index in chosen:
        first = first_with[films[index].sha256]
        films[index].pixels = digest_at[(first.shard, first.row)]
