"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; it replaces ``target`` only on success.

    The temporary name is this process's and thread's own (``tempfile``'s random names cost
    about a fifth more over thousands of review thumbnails). The file is created here,
    refusing a link in its place; a leftover of a crashed run is overwritten."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644))
        yield tmp
        os.chmod(tmp, 0o644)  # whatever the umask: outputs are for everyone to read
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(target: Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_json(target: Path, value: Any) -> None:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes(target, text.encode("utf-8"))


# A file modified within this long before it was read could be rewritten again, at the same
# size, inside the filesystem's timestamp granularity; caches keyed by size and modification
# time do not remember such a file (git's "racy" rule).
RACY_SECONDS = 2.0


def settled(mtime_ns: int, read_started_ns: int) -> bool:
    """True when a file last modified at ``mtime_ns`` may be remembered by its stat."""
    return mtime_ns < read_started_ns - RACY_SECONDS * 1e9
