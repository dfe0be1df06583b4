"""Reading a parquet file row by row holds one row group, not the file: a shard of images is
gigabytes, and pyarrow's default pre-buffering read all of it before the first row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.core.parquet_rows import parquet_rows
from curation.publish.build import ROW_GROUP
from curation.publish.build_check import read_rows

GROUPS = 16
ROWS_PER_GROUP = ROW_GROUP  # as the build writes its shards
IMAGE_BYTES = 2**20 // ROW_GROUP  # a row group of 1 MiB, the file 16 MiB
MIB = 2**20
A_FEW_GROUPS = 4 * MIB  # the group read, its batch, the next group's buffer: not all 16


@pytest.fixture(scope="module")
def shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rows") / "shard.parquet"
    random = np.random.default_rng(0)
    rows = [
        {"film_id": f"film{i:03d}", "image": random.bytes(IMAGE_BYTES)}
        for i in range(GROUPS * ROWS_PER_GROUP)
    ]
    pq.write_table(
        pa.Table.from_pylist(rows), path, row_group_size=ROWS_PER_GROUP, compression="none"
    )
    return path


def _pool_peak_while_reading(rows: object) -> tuple[int, list[str]]:
    """pyarrow's pool at its largest above where it started, and the rows' film ids."""
    start = peak = pa.total_allocated_bytes()
    films = []
    for row in rows:  # type: ignore[attr-defined]
        peak = max(peak, pa.total_allocated_bytes())
        films.append(row["film_id"])
    return peak - start, films


def test_rows_are_read_a_row_group_at_a_time(shard: Path) -> None:
    held, films = _pool_peak_while_reading(parquet_rows(shard, ["film_id", "image"], ROW_GROUP))
    assert films == [f"film{i:03d}" for i in range(GROUPS * ROWS_PER_GROUP)]
    assert held < A_FEW_GROUPS  # 18 MB, the whole file, when every row group is pre-buffered


def test_the_build_check_reads_shards_a_row_group_at_a_time(shard: Path) -> None:
    held, films = _pool_peak_while_reading(read_rows(shard, ["film_id", "image"]))
    assert len(films) == GROUPS * ROWS_PER_GROUP
    assert held < A_FEW_GROUPS


def test_only_the_asked_columns_are_read(shard: Path) -> None:
    rows = list(parquet_rows(shard, ["film_id"], 64))
    assert rows[0] == {"film_id": "film000"} and len(rows) == GROUPS * ROWS_PER_GROUP
