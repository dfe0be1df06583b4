"""Writing the shards: bytes as in the source, and an unchanged shard left alone."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.core.records import Kind, Lesion, SourceRecord
from curation.hashes.hashing import View
from curation.lookalikes.components import Cluster
from curation.publish.build import write_dataset
from curation.publish.schema import shard_name


@pytest.fixture
def films(tmp_path) -> tuple[Path, dict[str, list[SourceRecord]]]:
    root = tmp_path / "source"
    root.mkdir()
    records = []
    for i, stem in enumerate(("00011", "00021", "00031")):
        path = root / f"{stem}.jpg"
        Image.new("L", (64, 32), 40 * i).save(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        lesions = (Lesion((0.1, 0.2, 0.3, 0.4), 4),) if i else ()
        records.append(SourceRecord(path.name, Kind.image, stem, sha, 1, "", 64, 32, "", lesions))
    return root, {"train": records[:2], "validation": records[2:], "test": []}


def _write(out: Path, root: Path, kept: dict, salt: str = "salt") -> None:
    ids = [r.film_id for split in kept.values() for r in split]
    hashes = {f: {v: bytes(64) for v in View} for f in ids}
    write_dataset(out, root, kept, hashes, [Cluster(f, (f,)) for f in ids], salt)


def test_shards_carry_the_source_bytes(films, tmp_path):
    root, kept = films
    _write(tmp_path / "out", root, kept)
    rows = pq.read_table(tmp_path / "out/dataset/data" / shard_name("train")).to_pylist()
    assert [r["image"]["bytes"] for r in rows] == [
        (root / r.path).read_bytes() for r in kept["train"]
    ]


def test_an_unchanged_shard_is_not_written_again_and_a_changed_one_is(films, tmp_path):
    root, kept = films
    out = tmp_path / "out"
    _write(out, root, kept)
    shard = {s: out / "dataset/data" / shard_name(s) for s in ("train", "validation", "test")}
    first = {s: (p.read_bytes(), p.stat().st_mtime_ns) for s, p in shard.items()}
    _write(out, root, kept)
    assert {s: (p.read_bytes(), p.stat().st_mtime_ns) for s, p in shard.items()} == first
    _write(out, root, kept, salt="another salt")  # every referral changes
    assert all(shard[s].read_bytes() != first[s][0] for s in ("train", "validation"))
    again = shard["train"].read_bytes()
    shard["train"].write_bytes(b"damaged")
    _write(out, root, kept, salt="another salt")
    assert shard["train"].read_bytes() == again
    shard["test"].unlink()
    _write(out, root, kept, salt="another salt")
    assert pq.read_table(shard["test"]).num_rows == 0


def _held_while_writing(out: Path, root: Path, sha: str, count: int) -> int:
    lesion = Lesion((0.1, 0.2, 0.3, 0.4), 4)
    records = [
        SourceRecord("film.jpg", Kind.image, f"{n:06d}", sha, 1, "", 64, 32, "", (lesion,))
        for n in range(count)
    ]
    ids = [r.film_id for r in records]
    hashes = {f: {v: bytes(64) for v in View} for f in ids}
    clusters = [Cluster(f, (f,)) for f in ids]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        write_dataset(out, root, {"train": records}, hashes, clusters, "salt")
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_a_split_s_rows_are_made_a_row_group_at_a_time(tmp_path):
    """The fingerprint and the shard take the rows as they are made: a split's rows (about
    1.4 KB a film, and its fingerprint's text) were all held at once (traced)."""
    root = tmp_path / "source"
    root.mkdir()
    Image.new("L", (64, 32), 40).save(root / "film.jpg")
    sha = hashlib.sha256((root / "film.jpg").read_bytes()).hexdigest()
    _held_while_writing(tmp_path / "warm", root, sha, 10)  # pyarrow's and datasets' imports
    small, large = 500, 2000
    grew = _held_while_writing(tmp_path / "large", root, sha, large) - _held_while_writing(
        tmp_path / "small", root, sha, small
    )
    assert grew / (large - small) < 800  # what a film keeps: its published sha256 and cluster
