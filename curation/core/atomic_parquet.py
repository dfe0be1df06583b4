"""The one way this project writes parquet: atomically (``curation.core.atomic``), so a reader
sees the last complete file or the new one, never a shard or table cut short.

Kept apart from ``curation.core.atomic`` because it imports pyarrow, which the light modules that
write JSON (and ``pericurate --help``) must not wait for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curation.core.atomic import atomic_path

# Rows made into dictionaries at a time: as dictionaries, a record's row (its lesions with it)
# is about 1.6 KB and a manifest's 0.4 KB, so a million source files at once were gigabytes.
ROWS_AT_ONCE = 4096


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


def write_parquet_rows(target: Path, schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> None:
    """``rows`` (dictionaries by column name, best made as they are asked for) as ``target``,
    ``ROWS_AT_ONCE`` at a time, each part one row group. Up to ``ROWS_AT_ONCE`` rows, the
    bytes of ``write_parquet`` of the whole table."""
    remaining = iter(rows)
    with parquet_writer(target, schema) as writer:
        written = False
        while part := list(islice(remaining, ROWS_AT_ONCE)):
            writer.write_table(pa.Table.from_pylist(part, schema=schema))
            written = True
        if not written:  # an empty table, as write_parquet writes one
            writer.write_table(schema.empty_table())
