"""The one parquet writer (``curation.core.atomic_parquet``): pyarrow's own bytes, and a write
that fails midway leaves the last complete file and nothing beside it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.core.atomic_parquet import (
    ROWS_AT_ONCE,
    parquet_writer,
    write_parquet,
    write_parquet_rows,
)

SCHEMA = pa.schema(
    [
        ("film_id", pa.string()),
        ("size", pa.int64()),
        ("boxes", pa.list_(pa.struct([("x", pa.float64()), ("grade", pa.int32())]))),
    ],
    metadata={b"pericurate.cache_version": b"v1"},
)


def _table(count: int) -> pa.Table:
    rows = [
        {"film_id": f"{n:05d}", "size": n * 1000, "boxes": [{"x": n / 7, "grade": n % 5}]}
        for n in range(count)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def test_a_table_is_written_with_the_bytes_of_pyarrows_write_table(tmp_path):
    table = _table(50)
    pq.write_table(table, tmp_path / "reference.parquet")
    write_parquet(tmp_path / "out" / "table.parquet", table)
    written = (tmp_path / "out" / "table.parquet").read_bytes()
    assert written == (tmp_path / "reference.parquet").read_bytes()
    assert pq.read_table(tmp_path / "out" / "table.parquet").equals(table)


def test_a_write_that_fails_midway_keeps_the_last_complete_file_and_leaves_nothing(tmp_path):
    target = tmp_path / "train-00000-of-00001.parquet"
    write_parquet(target, _table(3))
    before = target.read_bytes()
    with pytest.raises(RuntimeError), parquet_writer(target, SCHEMA) as writer:
        writer.write_table(_table(10))  # a first row group, then the build fails
        raise RuntimeError("a film cannot be published")
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    with parquet_writer(target, SCHEMA, compression="none") as writer:
        for start in range(0, 10, 4):
            writer.write_table(_table(10).slice(start, 4))
    shard = pq.ParquetFile(target)
    assert shard.num_row_groups == 3 and shard.read().equals(_table(10))
    assert shard.metadata.row_group(0).column(0).compression == "UNCOMPRESSED"


def _rows(count: int) -> list[dict]:
    return _table(count).to_pylist()


@pytest.mark.parametrize("count", [0, 1, ROWS_AT_ONCE])
def test_rows_written_in_parts_have_the_bytes_of_one_table_up_to_a_part(tmp_path, count):
    write_parquet(tmp_path / "table.parquet", _table(count))
    write_parquet_rows(tmp_path / "rows.parquet", SCHEMA, iter(_rows(count)))
    assert (tmp_path / "rows.parquet").read_bytes() == (tmp_path / "table.parquet").read_bytes()


def test_more_rows_than_a_part_are_written_a_row_group_a_part(tmp_path):
    count = 2 * ROWS_AT_ONCE + 5
    write_parquet_rows(tmp_path / "rows.parquet", SCHEMA, iter(_rows(count)))
    written = pq.ParquetFile(tmp_path / "rows.parquet")
    sizes = [written.metadata.row_group(g).num_rows for g in range(written.num_row_groups)]
    assert sizes == [ROWS_AT_ONCE, ROWS_AT_ONCE, 5]
    assert written.read().equals(_table(count))
