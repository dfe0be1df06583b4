"""The one way this project reads a parquet file row by row: a batch at a time, with about one
row group in memory (a batch no longer than a row group; the build writes its shards in row
groups of the batch the build check reads).

pyarrow's ``ParquetFile`` pre-buffers by default, and ``iter_batches`` then reads every
requested row group before it yields the first batch. For a split shard that is every film's
bytes at once: 219 MB for a shard of 1,517 films, where one row group of 64 films is 9 MB.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def parquet_rows(
    path: Path, columns: list[str] | None, batch_size: int
) -> Iterator[dict[str, Any]]:
    """The rows of ``path`` (only ``columns``; all when ``None``), ``batch_size`` at a time.

    Raises what pyarrow raises for an unreadable file (``OSError``, ``ArrowException``) or a
    missing column (``KeyError``); the caller says what to do about it."""
    reader = pq.ParquetFile(path, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=batch_size, columns=columns):
        yield from batch.to_pylist()
