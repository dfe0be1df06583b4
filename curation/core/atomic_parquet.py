"""The one way this project writes parquet: atomically (``curation.core.atomic``), so a reader
sees the last complete file or the new one, never a shard or table cut short.

Kept apart from ``curation.core.atomic`` because it imports pyarrow, which the light modules that
write JSON (and ``pericurate --help``) must not wait for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curation.core.atomic import atomic_path


@contextmanager
def parquet_writer(target: Path, schema: pa.Schema, **options: Any) -> Iterator[pq.ParquetWriter]:
    """A ``ParquetWriter`` (``options`` are its own) on a temporary file that replaces
    ``target`` once the writer is closed without error, for tables written in parts."""
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, **options) as writer:
        yield writer


def write_parquet(target: Path, table: pa.Table) -> None:
    """``table`` as ``target``, with pyarrow's default options (``pq.write_table``'s bytes)."""
    with parquet_writer(target, table.schema) as writer:
        writer.write_table(table)
