"""Versioned parquet caches that can only cost a rebuild, never a traceback.

A cache is a parquet file whose schema metadata names the version of what it remembers.
``read_cache`` hands back its table only when the file is whole, was written for this
version and has the expected columns; a truncated, corrupt, foreign or other-version file is
discarded with a one-line warning (logger ``pericurate``) and removed, and the caller rebuilds
it: a caller that finds nothing new to store writes no cache, and a bad file left in place
would be warned about on every run.
``write_cache`` writes atomically, so a reader never sees half a cache.

Use: ``table = read_cache(path, VERSION, SCHEMA)`` (``None``: start empty), then
``write_cache(path, VERSION, pa.Table.from_pylist(rows, schema=SCHEMA))``.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from curation.core.atomic_parquet import write_parquet

VERSION_KEY = b"pericurate.cache_version"
log = logging.getLogger("pericurate")


def read_cache(path: Path | None, version: str, schema: pa.Schema) -> pa.Table | None:
    """The cache at ``path`` when it is usable for ``version`` and ``schema``, else ``None``
    (no file, or a warning saying why it is discarded)."""
    if path is None or not path.exists():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        problem = f"unreadable ({type(error).__name__})"
    else:
        written_for = (table.schema.metadata or {}).get(VERSION_KEY, b"").decode("utf-8", "replace")
        if written_for != version:
            problem = f"written for version {written_for or 'unknown'!r}, not {version!r}"
        elif not table.schema.remove_metadata().equals(schema.remove_metadata()):
            problem = "its columns are not the expected ones"
        else:
            return table
    log.warning("%s: cache discarded and rebuilt: %s.", path, problem)
    with suppress(OSError):  # a cache we may not remove is only warned about again
        path.unlink()
    return None


def write_cache(path: Path, version: str, table: pa.Table) -> None:
    """Write ``table`` to ``path`` atomically, stamped with ``version``."""
    metadata = {**(table.schema.metadata or {}), VERSION_KEY: version.encode("utf-8")}
    write_parquet(path, table.replace_schema_metadata(metadata))
