"""What a command's outputs depend on, told without importing anything heavy (stdlib only).

A rerun of ``make splits`` with nothing changed would pay mostly for interpreter start-up
and imports; a fingerprint lets a command see it has nothing to do before it imports numpy,
pyarrow or the Hub client (docs/design.md, "Reruns with nothing to do"). A fingerprint is a
JSON record beside the outputs (``BUILD/work/<command>.fingerprint``) holding:

- ``key``: sha256 of the command, its parameters and the code (``code_digest``);
- ``inputs``: an identity per input, taken *before* the run (``Identity``);
- ``outputs``: the size and modification time of every output file, taken after the run;
- ``stdout``: what the run printed on stdout (its result), shown again when nothing changed.

Identities are by content where that is cheap (small files, a parquet footer, a folder's
names) and by size and modification time otherwise; an input identified by its stat that was
modified within ``RACY_SECONDS`` before the run started cannot be told from a same-size
rewrite in the same timestamp tick, so no fingerprint is written for that run (git's racy
rule, as the caches use). Outputs are compared by size and modification time in nanoseconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from curation.core.atomic import settled, write_json

RECORD_FORMAT = "pericurate-fingerprint-v1"
# The packages whose source a run's outputs may depend on: the project's own, and the
# scoring environment the agreement figure comes from.
CODE_PACKAGES = ("curation", "cards", "splits", "periapical_lesions")
CODE_SUFFIXES = (".py", ".json", ".toml", ".txt", ".html", ".css", ".js", ".md")  # .md: the card
PARQUET_TAIL = 8  # footer length (4 bytes, little-endian) and the magic b"PAR1"
PROJECT = "pericurate"
LOCK = Path(__file__).resolve().parents[2] / "uv.lock"  # curation/cli/ -> the project
# In the environment (``sys.prefix``), beside the Makefile's sync stamp: the runtime
# dependencies' names read from the lock, by the lock's sha256.
RUNTIME_CACHE = ".pericurate-runtime-packages.json"


@dataclass(frozen=True)
class Identity:
    """What an input is: ``value`` (JSON-able) and, when it is told by modification time,
    the newest such time (nanoseconds), for the racy rule."""

    value: Any
    newest_mtime_ns: int | None = None


def stat_of(path: Path | str) -> list[int] | None:
    """``[size, mtime_ns]`` of a file, or ``None`` when it is missing."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def by_stat(path: Path) -> Identity:
    """A (large) file told by its size and modification time."""
    found = stat_of(path)
    return Identity(found, found[1] if found else None)


def by_content(path: Path) -> Identity:
    """A small file told by its sha256 (``None`` when missing)."""
    try:
        return Identity(hashlib.sha256(path.read_bytes()).hexdigest())
    except OSError:
        return Identity(None)


def parquet_footer(path: Path) -> Identity:
    """A parquet file told by its size and the sha256 of its footer (row count, schema and
    row groups): all that a reader of its metadata sees, without reading its data."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size < PARQUET_TAIL:
                return Identity([size, None])
            handle.seek(size - PARQUET_TAIL)
            length = int.from_bytes(handle.read(4), "little")
            handle.seek(max(0, size - PARQUET_TAIL - length))
            return Identity([size, hashlib.sha256(handle.read()).hexdigest()])
    except OSError:
        return Identity(None)


def folder_names(root: Path, depth: int | None = None) -> Identity:
    """A folder told by the names below it (``depth`` levels, all when ``None``): what was
    added, removed or renamed, not what was rewritten in place."""
    return _walk(root, with_stat=False, depth=depth)


def folder_stats(root: Path) -> Identity:
    """A folder told by the name, size and modification time of every file below it."""
    return _walk(root, with_stat=True, depth=None)


def _walk(root: Path, with_stat: bool, depth: int | None) -> Identity:
    if not root.is_dir():
        return Identity(None)
    digest = hashlib.sha256()
    newest: int | None = None
    stack: list[tuple[str, str, int]] = [(str(root), "", 0)]  # folder, its relative path, level
    while stack:
        folder, relative, level = stack.pop()
        with os.scandir(folder) as entries:
            ordered = sorted(entries, key=lambda e: e.name)
        for entry in ordered:
            name = f"{relative}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                digest.update(f"d {name}\n".encode("utf-8", "surrogateescape"))
                if depth is None or level + 1 < depth:
                    stack.append((entry.path, f"{name}/", level + 1))
                continue
            line = f"f {name}"
            if with_stat:
                info = entry.stat(follow_symlinks=False)
                line += f" {info.st_size} {info.st_mtime_ns}"
                newest = max(newest or 0, info.st_mtime_ns)
            digest.update(f"{line}\n".encode("utf-8", "surrogateescape"))
    return Identity(digest.hexdigest(), newest)


def code_files() -> list[Path]:
    """Every source file of ``CODE_PACKAGES``, and the lock beside the project if there is one."""
    files: list[Path] = []
    for package in CODE_PACKAGES:
        spec = find_spec(package)  # finds a package without running it
        for location in (spec.submodule_search_locations or []) if spec else []:
            files += sorted(
                p
                for p in Path(location).rglob("*")
                if p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts
            )
    return [*files, LOCK] if LOCK.is_file() else files


def normal_name(name: str) -> str:
    """A distribution's name as PEP 503 compares them (``Foo_bar`` is ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_runtime_names(lock: bytes) -> list[str]:
    """The packages the toolkit needs at run time, by the lock (``uv.lock``): its own locked
    dependencies followed transitively, with the extras they ask for, but none of its own
    extras or dependency groups (the dev tools ``make test`` installs)."""
    import tomllib  # stdlib, but ~0.2 s on the lock: its result is cached (runtime_names)

    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in tomllib.loads(lock.decode("utf-8")).get("package", []):
        by_name.setdefault(normal_name(package["name"]), []).append(package)
    seen: set[tuple[str, str]] = set()
    todo = [(PROJECT, "")]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        for package in by_name.get(name, []):
            needs = (
                package.get("optional-dependencies", {}).get(extra, [])
                if extra
                else package.get("dependencies", [])
            )
            for need in needs:
                wanted = normal_name(need["name"])
                todo += [(wanted, ""), *((wanted, e) for e in need.get("extra", []))]
    return sorted({name for name, _ in seen} - {PROJECT})


def runtime_names(lock: bytes) -> list[str]:
    """``locked_runtime_names``, remembered per lock in the environment (``RUNTIME_CACHE``),
    so a command with nothing to do does not parse the lock again."""
    sha = hashlib.sha256(lock).hexdigest()
    cache = Path(sys.prefix) / RUNTIME_CACHE
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached["lock_sha256"] == sha and isinstance(cached["names"], list):
            return [str(name) for name in cached["names"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    names = locked_runtime_names(lock)
    with contextlib.suppress(OSError):  # a read-only environment only costs the parse
        write_json(cache, {"lock_sha256": sha, "names": names})
    return names


def installed_distributions() -> list[str]:
    """The ``*.dist-info`` folders on ``sys.path``: every installed package and its version,
    from one directory listing each (no metadata is read)."""
    names: set[str] = set()
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        names.update(n for n in listing if n.endswith((".dist-info", ".egg-info")))
    return sorted(names)


def runtime_distributions(lock: bytes | None) -> list[str]:
    """The installed distributions a run's outputs may depend on: the toolkit's runtime
    dependencies by the lock (every installed one when there is no lock). The dev tools and
    extras ``make test`` installs are not among them, so installing them changes no key."""
    installed = installed_distributions()
    if lock is None:
        return installed
    wanted = set(runtime_names(lock))
    return [n for n in installed if normal_name(n.split("-", 1)[0]) in wanted]


def code_digest() -> str:
    """sha256 of the code a run executes: the project's source files, ``uv.lock``, the
    installed versions of the toolkit's runtime dependencies and the interpreter."""
    digest = hashlib.sha256(sys.version.encode())
    lock = None
    for path in code_files():
        content = path.read_bytes()
        lock = content if path == LOCK else lock
        digest.update(f"\n{path.name}\n".encode())
        digest.update(content)
    digest.update("\n".join(runtime_distributions(lock)).encode())
    return digest.hexdigest()


def run_key(command: str, parameters: dict[str, Any]) -> str:
    """sha256 of the command, its parameters (JSON-able) and ``code_digest()``."""
    what = {"command": command, "parameters": parameters, "code": code_digest()}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def read_record(path: Path) -> dict[str, Any] | None:
    """The fingerprint at ``path``; ``None`` when missing, unreadable or of another format."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return None
    return record


def unchanged(record: dict[str, Any] | None, key: str, inputs: dict[str, Identity]) -> bool:
    """True when ``record`` was made with ``key`` from these inputs and every output it
    lists is still there, at the size and modification time it had."""
    if record is None or record.get("key") != key:
        return False
    if record.get("inputs") != {name: i.value for name, i in inputs.items()}:
        return False
    outputs = record.get("outputs")
    if not isinstance(outputs, dict):
        return False
    return all(stat_of(path) == found for path, found in outputs.items())


def write_record(
    path: Path,
    key: str,
    inputs: dict[str, Identity],
    outputs: list[Path],
    stdout: str,
    started_ns: int,
) -> bool:
    """Record a successful run (atomically); False, and nothing written, when an input told
    by its stat was modified too shortly before ``started_ns`` to be trusted."""
    if not all(
        i.newest_mtime_ns is None or settled(i.newest_mtime_ns, started_ns) for i in inputs.values()
    ):
        path.unlink(missing_ok=True)
        return False
    found = {str(p.resolve()): stat_of(p) for p in sorted(set(outputs))}
    write_json(
        path,
        {
            "format": RECORD_FORMAT,
            "key": key,
            "inputs": {name: i.value for name, i in inputs.items()},
            "outputs": {p: s for p, s in found.items() if s is not None},
            "stdout": stdout,
        },
    )
    return True
