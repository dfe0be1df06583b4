"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from curation.core.errors import naming_full_disk


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; it replaces ``target`` only on success.

    The temporary name is this process's and thread's own (``tempfile``'s random names cost
    about a fifth more over thousands of review thumbnails). The file is created here,
    refusing a link in its place. A run killed here leaves its temporary file under its own
    pid, which no later run would write again: ``remove_leftovers`` removes such files at
    the start of a run, under the build folder's lock (``curation.core.build_lock``)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with naming_full_disk(target):  # one sentence naming the file, never a traceback
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644))
            yield tmp
            os.chmod(tmp, 0o644)  # whatever the umask: outputs are for everyone to read
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


LEFTOVER = re.compile(r"\..+\.([0-9]+)-[0-9]+\.tmp")  # the name ``atomic_path`` gives
SOURCE_FOLDERS = ("extracted", "downloads")  # the source's files, never ours to remove


def remove_leftovers(folder: Path) -> list[Path]:
    """Remove the temporary files (``atomic_path``'s names) that earlier runs killed midway
    left below the build ``folder`` (partial shards, caches, thumbnails), and return them.
    The source below ``extracted/`` and ``downloads/`` is never touched, and a file whose
    process still runs is left alone (a ``pericurate sample`` writing beside the build)."""
    removed = []
    for parent, folders, names in os.walk(folder):
        if Path(parent) == folder:
            folders[:] = [f for f in folders if f not in SOURCE_FOLDERS]
        for name in names:
            found = LEFTOVER.fullmatch(name)
            if found and not _running(int(found.group(1))):
                path = Path(parent) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return sorted(removed)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such pid at all)
        return False
    except PermissionError:  # another user's process
        return True
    return True


def write_bytes(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically: a reader sees the old file or the whole new one."""
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
