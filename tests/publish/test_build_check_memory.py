"""What the build check holds: every kept film of the archive at once, so little beside each
film's id. It held the id up to three times, the published sha256 as 64 hex digits, a split's
text and a cluster id's text per film (about 660 B a kept film at 8,000 originals; 418 B beside
the id here, against 157 B now)."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import curation.publish.build_check as build_check
from curation.core.vocabulary import Reason
from curation.publish.schema import SPLITS, shard_name

IMAGE = b"a film's bytes"


class _Checked(Exception):
    """Raised where the build check has read every file and holds what it compares."""


def _build(folder: Path, films: int) -> Path:
    """Manifest, clusters, shards and agreement of ``films`` kept films (pairs in a cluster),
    written with pyarrow alone: the check is stopped before it reads ``curation.json``."""
    ids = [f"film-{n:07d}" for n in range(films)]
    cluster_of = [f"cluster-{n // 2:07d}" for n in range(films)]  # pairs, each in one split
    split_of = [SPLITS[n // 2 % len(SPLITS)] for n in range(films)]
    sha = hashlib.sha256(IMAGE).hexdigest()
    data = folder / "dataset" / "data"
    data.mkdir(parents=True)
    manifest = {
        "kind": ["image"] * films,
        "film_id": ids,
        "fate": ["kept"] * films,
        "reason": [f"{Reason.kept}: {split}" for split in split_of],
        "published_sha256": [sha] * films,
    }
    pq.write_table(pa.table(manifest), folder / "manifest.parquet")
    sizes = [2 if films % 2 == 0 or n < films - 1 else 1 for n in range(films)]
    clusters = {"film_id": ids, "cluster_id": cluster_of, "cluster_size": sizes, "split": split_of}
    pq.write_table(pa.table(clusters), folder / "clusters.parquet")
    for split in SPLITS:
        rows = [n for n in range(films) if split_of[n] == split]
        shard = {
            "film_id": [ids[n] for n in rows],
            "image": [{"bytes": IMAGE} for _ in rows],
            "cluster_id": [cluster_of[n] for n in rows],
        }
        pq.write_table(pa.table(shard), data / shard_name(split))
    pq.write_table(pa.table({"film_id": pa.array([], pa.string())}), folder / "agreement.parquet")
    return folder


def _held_by_the_check(build: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Traced bytes the check holds once it has read every file but ``curation.json``."""
    held: list[int] = []

    def stop(*_: object) -> None:
        held.append(tracemalloc.get_traced_memory()[0])
        raise _Checked

    monkeypatch.setattr(build_check, "_check_summary", stop)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        with pytest.raises(_Checked):
            build_check.verify_build(build)
        return held[0] - start
    finally:
        tracemalloc.stop()


def test_the_build_check_holds_little_beside_each_kept_film_s_id(tmp_path, monkeypatch):
    small, large = 2_000, 8_000
    _held_by_the_check(_build(tmp_path / "warm", 10), monkeypatch)  # pyarrow's first reads
    grew = _held_by_the_check(_build(tmp_path / "large", large), monkeypatch) - _held_by_the_check(
        _build(tmp_path / "small", small), monkeypatch
    )
    film_id = len("film-0000000") + 49  # a str of ASCII: its characters and 49 bytes of header
    assert grew / (large - small) - film_id < 250, grew / (large - small)
