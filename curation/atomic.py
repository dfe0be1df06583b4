"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; it replaces ``target`` only on success."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; outputs are for everyone to read
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically. The temporary name is this process's and
    thread's own (``tempfile`` draws a random one, which cost about a fifth more in writing
    thousands of review thumbnails); a leftover of a crashed run is overwritten, a link in
    its place is refused."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        with open(os.open(tmp, flags, 0o644), "wb") as file:
            os.fchmod(file.fileno(), 0o644)  # whatever the umask: outputs are for everyone
            file.write(data)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


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
