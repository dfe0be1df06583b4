"""Broken caches cost a rebuild and a one-line warning, never a traceback."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from curation.core import cache
from curation.core.parallel import LocalMap
from curation.core.records import Kind
from curation.hashes.hash_films import hash_films
from curation.index import facts, index
from tests.hostile_films import film_bytes, voc, write_source

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


def _table(n: int) -> pa.Table:
    return pa.table({"key": [f"k{i}" for i in range(n)], "value": list(range(n))}, schema=SCHEMA)


def test_a_cache_is_read_back_only_for_its_version_and_schema(tmp_path, caplog):
    path = tmp_path / "c.parquet"
    assert cache.read_cache(path, "v1", SCHEMA) is None and not caplog.records
    cache.write_cache(path, "v1", _table(3))
    assert cache.read_cache(path, "v1", SCHEMA).to_pylist() == _table(3).to_pylist()
    with caplog.at_level(logging.WARNING, "pericurate"):
        assert cache.read_cache(path, "v2", SCHEMA) is None
        cache.write_cache(path, "v1", _table(3))
        other = pa.schema([("key", pa.string())])
        assert cache.read_cache(path, "v1", other) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: cache discarded and rebuilt: written for version 'v1', not 'v2'.",
        f"{path}: cache discarded and rebuilt: its columns are not the expected ones.",
    ]


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_damaged_cache_is_discarded_with_a_warning(tmp_path, caplog, damage):
    path = tmp_path / "c.parquet"
    cache.write_cache(path, "v1", _table(1000))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"PAR1 not parquet")
    with caplog.at_level(logging.WARNING, "pericurate"):
        assert cache.read_cache(path, "v1", SCHEMA) is None
    assert len(caplog.records) == 1 and "unreadable" in caplog.records[0].getMessage()


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_truncated_index_and_hash_caches_are_rebuilt(tmp_path, caplog):
    root = write_source(
        tmp_path / "source",
        {"00011": (film_bytes(1), voc("00011")), "00021": (film_bytes(2), voc("00021", []))},
    )
    index_cache, hash_cache = tmp_path / "index.parquet", tmp_path / "hashes.parquet"
    records = index.index_source(root, cache_path=index_cache, map=LocalMap(1))
    _, hashes = hash_films(root, records, map=LocalMap(1), cache_path=hash_cache)
    _truncate(index_cache)
    _truncate(hash_cache)
    with caplog.at_level(logging.WARNING, "pericurate"):
        again = index.index_source(root, cache_path=index_cache, map=LocalMap(1))
        _, hashes_again = hash_films(root, again, map=LocalMap(1), cache_path=hash_cache)
    assert again == records and hashes_again == hashes
    assert {r.getMessage().split(":")[0] for r in caplog.records} == {
        str(index_cache),
        str(hash_cache),
    }
    assert cache.read_cache(index_cache, facts.FACTS_VERSION, facts.FACTS_SCHEMA) is not None
    assert [r.kind for r in again].count(Kind.image) == 2


def test_a_bad_cache_is_removed_so_a_run_storing_nothing_new_is_not_warned_again(tmp_path, caplog):
    """The pixel check's caches are written only when something new was measured: a bad file
    left in place was "discarded and rebuilt" on every later run."""
    from curation.same_picture.pixel_cache import ComparisonCache, _grain_path

    path = tmp_path / "pixels.parquet"
    path.write_bytes(b"PAR1 not parquet")
    _grain_path(path).write_bytes(b"")
    with caplog.at_level(logging.WARNING, "pericurate"):
        ComparisonCache(path).save()  # nothing measured: nothing written
        assert len(caplog.records) == 2
        caplog.clear()
        second = ComparisonCache(path)
    assert not caplog.records and not path.exists() and not _grain_path(path).exists()
    assert second.comparisons == {} and second.grains == {}
