"""Safe extraction of the source archive: into a temporary folder that replaces the target
only when every member is out, reused when a marker records the same archive sha256.

Any member that could write outside the target (absolute paths, ``..``, drive letters,
backslashes, links), that the filesystem cannot name, that cannot be read (encrypted, an
unknown compression method, data that ends before the size its central directory records),
or an archive that expands suspiciously (zip bomb by size or by member count) refuses the
whole archive.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import stat
import struct
import tempfile
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from curation.core.atomic import write_json
from curation.core.errors import DamagedArchiveError, DiskFullError, SourceError, is_disk_full

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

MARKER_NAME = ".pericurate-extraction.json"
EXTRACTED_FILES = "files"  # members go here, the marker beside it, so no step mistakes it for data
SKIPPED_SUFFIXES = (".rar",)
# The real archive is mostly JPEGs (ratio ~1) and XML (~10); a bomb expands by 1000s.
MAX_EXPANSION_RATIO = 100
# The real layout has ~4.4 files per film (~17,500 for 4,000 films); empty members cost
# nothing by size but a file each.
MAX_MEMBERS = 50_000
MAX_NAME_BYTES = 255  # what Linux and macOS filesystems allow for one path component
CHUNK_BYTES = 1 << 20
EXTRACT_THREADS = 2
ENCRYPTED_FLAG = 0x1  # general purpose bit 0 (APPNOTE 4.4.4)
READ_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
# A local file header: signature, 22 fixed bytes, then the name's and the extra field's lengths
# (APPNOTE 4.3.7); zipfile has no public way to ask where a member's data starts.
LOCAL_HEADER = struct.Struct("<4s22xHH")
LOCAL_SIGNATURE = b"PK\x03\x04"


def progress_bar(enabled: bool) -> Progress:
    """The byte progress bar of downloading, hashing and extracting, on stderr (rich is
    imported here, so the command line starts without it when nothing is to be done)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


def extract_archive(
    archive: Path, target: Path, sha256: str, *, progress: bool = True
) -> tuple[str, ...]:
    """Extract ``archive`` into ``target`` atomically; reuse it when its marker has ``sha256``.

    Returns the members deliberately skipped (``.rar`` duplicates), in archive order.
    """
    reused = _marker_skipped(target, sha256)
    if reused is not None:
        return reused
    target.parent.mkdir(parents=True, exist_ok=True)
    for kind in ("tmp", "old"):
        for stale in target.parent.glob(f".{target.name}.{kind}-*"):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            members, skipped = checked_members(zf, archive)
            _copy_members(members, tmp / EXTRACTED_FILES, archive, progress)
        write_json(tmp / MARKER_NAME, {"archive_sha256": sha256, "skipped": list(skipped)})
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            target.replace(old / "previous")
            tmp.replace(target)
            shutil.rmtree(old)
        else:
            tmp.replace(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return skipped


def _marker_skipped(target: Path, sha256: str) -> tuple[str, ...] | None:
    try:
        marker = json.loads((target / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("archive_sha256") != sha256:
        return None
    return tuple(marker.get("skipped", ()))


def checked_members(
    zf: zipfile.ZipFile, archive: Path
) -> tuple[list[zipfile.ZipInfo], tuple[str, ...]]:
    """The members to extract and those skipped; any unsafe member refuses the whole archive."""
    seen: set[str] = set()
    members: list[zipfile.ZipInfo] = []
    skipped: list[str] = []
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise SourceError(
            f"{archive}: {len(infos)} members, more than {MAX_MEMBERS} (a zip bomb?); "
            "refusing the whole archive."
        )
    for info in infos:
        problem = _unsafe_reason(info)
        if problem is None and info.filename in seen:
            problem = "appears twice"
        if problem is not None:
            raise SourceError(
                f"{archive}: member {info.filename!r} {problem}; refusing the whole archive."
            )
        seen.add(info.filename)
        if info.filename.lower().endswith(SKIPPED_SUFFIXES):
            skipped.append(info.filename)
        else:
            members.append(info)
    _refuse_overrunning_data(infos, archive)
    expanded = sum(info.file_size for info in members)
    bound = MAX_EXPANSION_RATIO * archive.stat().st_size
    if expanded > bound:
        raise SourceError(
            f"{archive}: members would expand to {expanded} bytes, more than "
            f"{MAX_EXPANSION_RATIO} times the archive (a zip bomb?); refusing the whole archive."
        )
    return members, tuple(skipped)


def _refuse_overrunning_data(infos: list[zipfile.ZipInfo], archive: Path) -> None:
    """A member whose recorded size runs into the next member is refused here, before any
    extraction: Python's zipfile stops it as "overlapped" in some releases and reads on into
    the next member in others, so the sentence would depend on the interpreter."""
    starts = sorted(info.header_offset for info in infos)
    next_start = dict(itertools.pairwise(starts))
    with archive.open("rb") as handle:
        for info in infos:
            if info.header_offset not in next_start:
                continue  # the last member: reading past the archive's end is caught on copy
            handle.seek(info.header_offset)
            header = handle.read(LOCAL_HEADER.size)
            if len(header) < LOCAL_HEADER.size:
                continue
            signature, name_length, extra_length = LOCAL_HEADER.unpack(header)
            if signature != LOCAL_SIGNATURE:
                continue  # zipfile names a missing header itself when the member is opened
            data_start = info.header_offset + LOCAL_HEADER.size + name_length + extra_length
            if data_start + info.compress_size > next_start[info.header_offset]:
                raise DamagedArchiveError(_cut_member(archive, info))


def _cut_member(archive: Path, info: zipfile.ZipInfo) -> str:
    return (
        f"{archive}: member {info.filename!r} ends before the {info.compress_size} bytes its "
        "central directory records (a cut archive, or a directory that lies); refusing the "
        "whole archive."
    )


def _unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if not name.strip("/"):
        return "has an empty name"
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/"):
        return "is an absolute path"
    if re.match(r"[A-Za-z]:", name):
        return "starts with a drive letter"
    if ".." in name.split("/"):
        return "has a '..' component"
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in name.split("/")):
        return f"has a path component longer than {MAX_NAME_BYTES} bytes"
    if file_type == stat.S_IFLNK:
        return "is a symbolic link"
    if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "is a special file"
    if info.flag_bits & ENCRYPTED_FLAG:
        return "is encrypted (no password is known)"
    if info.compress_type not in READ_METHODS:
        return f"is stored with compression method {info.compress_type}, which is not read here"
    return None


def _copy_members(
    members: list[zipfile.ZipInfo],
    dest: Path,
    archive: Path,
    progress: bool,
) -> None:
    """Folders first, then files on ``EXTRACT_THREADS`` threads, each with its own handle on
    the archive: writing files is mostly kernel time, which a second core halves."""
    for info in members:
        folder = dest / info.filename if info.is_dir() else (dest / info.filename).parent
        folder.mkdir(parents=True, exist_ok=True)
    files = [info for info in members if not info.is_dir()]
    with progress_bar(progress) as bar, ThreadPoolExecutor(EXTRACT_THREADS) as pool:
        task = bar.add_task(f"extract {archive.name}", total=sum(m.file_size for m in files))
        shares = [files[k::EXTRACT_THREADS] for k in range(EXTRACT_THREADS)]
        list(pool.map(lambda share: _copy_share(archive, share, dest, bar, task), shares))


def _copy_share(
    archive: Path, share: list[zipfile.ZipInfo], dest: Path, bar: Progress, task: TaskID
) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in share:
            try:
                with zf.open(info) as src, (dest / info.filename).open("xb") as out:
                    shutil.copyfileobj(src, out, CHUNK_BYTES)
            except (zipfile.BadZipFile, zlib.error) as exc:
                raise DamagedArchiveError(
                    f"{archive}: cannot extract member {info.filename!r} ({exc})."
                ) from None
            except EOFError:  # zipfile reads past the archive's end: click would say "Aborted."
                raise DamagedArchiveError(_cut_member(archive, info)) from None
            except OSError as exc:
                if is_disk_full(exc):
                    raise DiskFullError(
                        f"{archive}: no space left on the device to extract member "
                        f"{info.filename!r}; nothing was extracted: free space and rerun."
                    ) from None
                raise SourceError(
                    f"{archive}: cannot extract member {info.filename!r} ({exc.strerror})."
                ) from None
            bar.advance(task, info.file_size)
