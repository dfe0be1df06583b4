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
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from pathlib import Path

from curation.audit.target import Film, RowGroup, pixels_digest, read_images, row_groups
from curation.core.parallel import LocalMap, Mapper
from curation.hashes.pairs import as_codes, self_pairs

PIXEL_CHECK_RADIUS = 48


def pixel_candidates(films: list[Film], radius: int = PIXEL_CHECK_RADIUS) -> list[int]:
    """Films sharing their header with another film within ``radius`` bits of average hash."""
    by_header: dict[str, list[int]] = defaultdict(list)
    for index, film in enumerate(films):
        by_header[film.header].append(index)
    chosen: set[int] = set()
    for members in by_header.values():
        if len(members) < 2:
            continue
        codes = as_codes([films[i].codes["ahash"] for i in members])
        for i, j, _ in self_pairs(codes, radius).tolist():
            chosen.update((members[i], members[j]))
    return sorted(chosen)


def _digests(job: tuple[RowGroup, tuple[int, ...]], image: str) -> list[str]:
    group, rows = job
    return read_images(group, image, rows, pixels_digest)


def fill_pixels(
    films: list[Film],
    shards: list[Path],
    image: str,
    map: Mapper | None = None,
    radius: int = PIXEL_CHECK_RADIUS,
) -> None:
    """Set ``Film.pixels`` of every ``pixel_candidates`` film, decoding each distinct image
    once, a row group per job through ``map`` (default: one process per core)."""
    chosen = pixel_candidates(films, radius)
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
    for (group, rows), digests in zip(
        jobs, (map or LocalMap())(partial(_digests, image=image), jobs, chunksize=1), strict=True
    ):
        digest_at.update({(group.shard, row): d for row, d in zip(rows, digests, strict=True)})
    for index in chosen:
        first = first_with[films[index].sha256]
        films[index].pixels = digest_at[(first.shard, first.row)]
