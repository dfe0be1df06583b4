"""Step 1, ``download``: fetch the pinned source archive, pin its sha256, extract it safely.

The source is an http(s) URL, a local ``.zip`` or an already extracted folder. Archives are
checked against ``source.lock.json`` (sha256 and size per origin): the first fetch records
them, every later fetch must match, so a silently changed upstream file can never slip into
a benchmark. Downloads resume with a ``Range`` request because the real archive is ~8.9 GB.
Extraction refuses any archive with a member that could write outside the target (absolute
paths, ``..``, drive letters, backslashes, links) or that expands suspiciously (zip bomb).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from curation.atomic import settled, write_json

DEFAULT_URL = "https://data.mendeley.com/public-api/zip/kx52tk2ddj/download/3"
DATASET_DIR = "Periapical Dataset"
MARKER_NAME = ".pericurate-extraction.json"
EXTRACTED_FILES = "files"  # members go here, the marker beside it, so no step mistakes it for data
SKIPPED_SUFFIXES = (".rar",)
# The real archive is mostly JPEGs (ratio ~1) and XML (~10); a bomb expands by 1000s.
MAX_EXPANSION_RATIO = 100
RETRY_ATTEMPTS = 5
RETRY_BACKOFF_SECONDS = 2.0
CHUNK_BYTES = 1 << 20
EXTRACT_THREADS = 2
DIGESTS_NAME = "archive-digests.json"
SECRET_QUERY_WORDS = ("token", "key", "sig", "secret", "password", "auth", "credential")


class SourceError(Exception):
    """The source cannot be used; the message names the file or URL and the problem."""


@dataclass(frozen=True)
class FetchedSource:
    root: Path
    origin: str
    sha256: str | None
    size: int | None
    skipped: tuple[str, ...]
    comment: str = ""  # the archive's own zip comment, kept so a build can say what it declares


def fetch_source(
    source: str, work_dir: Path, lock_path: Path, *, progress: bool = True
) -> FetchedSource:
    """Make ``source`` available as a folder holding ``Periapical Dataset/``, pinned by the lock."""
    if urlsplit(source).scheme in ("http", "https"):
        origin = redact_url(source)
        archive = work_dir / "downloads" / download_name(source)
        if not archive.is_file():
            expected = read_lock(lock_path).get(origin, {}).get("size")
            download_url(source, archive, expected_size=expected, progress=progress)
        lock_key = origin
    else:
        origin = source
        path = Path(source)
        if path.is_dir():
            return FetchedSource(find_dataset_root(path, source), origin, None, None, ())
        if not path.is_file():
            raise SourceError(f"{source}: no such file or folder.")
        archive = path
        lock_key = path.name
    if not zipfile.is_zipfile(archive):
        fetched_from = "" if archive == Path(origin) else f" (fetched from {origin})"
        raise SourceError(f"{archive}{fetched_from}: not a complete zip archive.")
    sha256 = remembered_sha256(archive, work_dir / DIGESTS_NAME, progress=progress)
    size = archive.stat().st_size
    check_lock(lock_path, lock_key, sha256, size, archive)
    target = work_dir / "extracted" / archive.name.removesuffix(".zip")
    skipped = extract_archive(archive, target, sha256, progress=progress)
    with zipfile.ZipFile(archive) as zf:
        comment = zf.comment.decode("utf-8", "replace")
    return FetchedSource(
        find_dataset_root(target / EXTRACTED_FILES, origin), origin, sha256, size, skipped, comment
    )


def redact_url(url: str) -> str:
    """The URL without user info and with secret-looking query values masked, safe to show."""
    parts = urlsplit(url)
    query = [
        (name, "REDACTED" if any(w in name.lower() for w in SECRET_QUERY_WORDS) else value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def download_name(url: str) -> str:
    """A readable, stable file name for a URL (a changed token keeps the same name)."""
    parts = urlsplit(url)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", parts.netloc.rpartition("@")[2] + parts.path)
    digest = hashlib.sha256(redact_url(url).encode()).hexdigest()[:12]
    return f"{slug.strip('-.')[-80:]}-{digest}.zip"


def download_url(
    url: str, dest: Path, *, expected_size: int | None = None, progress: bool = True
) -> None:
    """Stream ``url`` into ``dest`` via ``dest.part``, resuming a partial file with ``Range``."""
    shown = redact_url(url)
    part = dest.with_name(dest.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    headers = {"Accept-Encoding": "identity"}
    timeout = httpx.Timeout(60.0, connect=30.0)
    with (
        _quiet_httpx_logs(),
        httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
        _progress_bar(progress) as bar,
    ):
        task = bar.add_task(f"download {dest.name}", total=expected_size)
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                problem = _download_attempt(client, url, part, expected_size, bar, task)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if problem is None:
                part.replace(dest)
                return
            if attempt < RETRY_ATTEMPTS:
                time.sleep(RETRY_BACKOFF_SECONDS * attempt)
    raise SourceError(
        f"{shown}: download failed after {RETRY_ATTEMPTS} attempts ({problem}); "
        f"the partial file {part} is kept and the next run resumes it."
    )


def _download_attempt(
    client: httpx.Client,
    url: str,
    part: Path,
    expected_size: int | None,
    bar: Progress,
    task: int,
) -> str | None:
    """One request; None when ``part`` now holds the whole file, else why to try again."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", url, headers=headers) as response:
        status = response.status_code
        if status == 416:
            total = _content_range_total(response)
            if total is not None and total == offset:
                return None
            part.unlink(missing_ok=True)
            return f"the server refused to resume from byte {offset}"
        if status >= 500:
            return f"the server answered HTTP {status}"
        if status == 206 and _content_range_start(response) == offset:
            total = _content_range_total(response)
            mode = "ab"
        elif status == 200:
            offset, mode = 0, "wb"
            length = response.headers.get("Content-Length")
            total = int(length) if length is not None else None
        elif status == 206:
            part.unlink(missing_ok=True)
            return f"the server resumed from the wrong byte (asked for {offset})"
        else:
            raise SourceError(f"{redact_url(url)}: the server answered HTTP {status}.")
        if expected_size is not None and total is not None and total != expected_size:
            raise SourceError(
                f"{redact_url(url)}: the server now serves {total} bytes but the lock records "
                f"{expected_size}; refusing a changed source (nothing was deleted)."
            )
        bar.update(task, total=total, completed=offset)
        with part.open(mode) as out:
            # No chunk size: a buffering chunker would lose its buffer when the link drops.
            for chunk in response.iter_raw():
                out.write(chunk)
                bar.advance(task, len(chunk))
    if total is not None and part.stat().st_size != total:
        return "the server did not send the whole file"
    return None


def _content_range_start(response: httpx.Response) -> int | None:
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", response.headers.get("Content-Range", ""))
    return int(match.group(1)) if match else None


def _content_range_total(response: httpx.Response) -> int | None:
    match = re.search(r"/(\d+)$", response.headers.get("Content-Range", ""))
    return int(match.group(1)) if match else None


@contextmanager
def _quiet_httpx_logs() -> Iterator[None]:
    """httpx logs every request URL at INFO; a URL may carry a token, so hold it back."""
    logger = logging.getLogger("httpx")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _progress_bar(enabled: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


def file_sha256(path: Path, *, progress: bool = True) -> str:
    digest = hashlib.sha256()
    with _progress_bar(progress) as bar, path.open("rb") as handle:
        task = bar.add_task(f"sha256 {path.name}", total=path.stat().st_size)
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
            bar.advance(task, len(chunk))
    return digest.hexdigest()


def remembered_sha256(archive: Path, digests: Path, *, progress: bool = True) -> str:
    """``file_sha256`` of ``archive``, remembered in ``digests`` by path, size and modification
    time so that a rerun over the same archive (~8.9 GB for the real one) does not read it."""
    info = archive.stat()
    key = str(archive.resolve())
    stamp = {"size": info.st_size, "mtime_ns": info.st_mtime_ns}
    try:
        known = json.loads(digests.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    entry = known.get(key) if isinstance(known, dict) else None
    if isinstance(entry, dict) and {k: entry.get(k) for k in stamp} == stamp:
        return str(entry["sha256"])
    started = time.time_ns()
    sha256 = file_sha256(archive, progress=progress)
    if settled(info.st_mtime_ns, started):
        known = known if isinstance(known, dict) else {}
        write_json(digests, {**known, key: {**stamp, "sha256": sha256}})
    return sha256


def read_lock(lock_path: Path) -> dict[str, dict[str, object]]:
    """The lock's ``{origin: {"sha256", "size"}}`` table (empty when there is no lock yet)."""
    if not lock_path.exists():
        return {}
    try:
        sources = json.loads(lock_path.read_text(encoding="utf-8"))["sources"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{lock_path}: not a valid source lock ({exc}).") from exc
    if not isinstance(sources, dict) or not all(isinstance(v, dict) for v in sources.values()):
        raise SourceError(f"{lock_path}: not a valid source lock ('sources' is not a table).")
    return sources


def check_lock(lock_path: Path, key: str, sha256: str, size: int, archive: Path) -> None:
    """Record ``key`` on its first fetch; refuse an archive that differs from the record."""
    sources = read_lock(lock_path)
    recorded = sources.get(key)
    if recorded is None:
        write_json(lock_path, {"sources": {**sources, key: {"sha256": sha256, "size": size}}})
    elif recorded != {"sha256": sha256, "size": size}:
        raise SourceError(
            f"{archive} does not match {lock_path} for {key}: expected sha256 "
            f"{recorded.get('sha256')} ({recorded.get('size')} bytes), found {sha256} "
            f"({size} bytes); nothing was deleted: remove the file to fetch again, or its lock "
            f"entry to accept the new source."
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
    for info in zf.infolist():
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
    expanded = sum(info.file_size for info in members)
    bound = MAX_EXPANSION_RATIO * archive.stat().st_size
    if expanded > bound:
        raise SourceError(
            f"{archive}: members would expand to {expanded} bytes, more than "
            f"{MAX_EXPANSION_RATIO} times the archive (a zip bomb?); refusing the whole archive."
        )
    return members, tuple(skipped)


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
    if file_type == stat.S_IFLNK:
        return "is a symbolic link"
    if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "is a special file"
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
    with _progress_bar(progress) as bar, ThreadPoolExecutor(EXTRACT_THREADS) as pool:
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
            except (OSError, zipfile.BadZipFile) as exc:
                raise SourceError(
                    f"{archive}: cannot extract member {info.filename!r} ({exc})."
                ) from exc
            bar.advance(task, info.file_size)


def find_dataset_root(folder: Path, origin: str) -> Path:
    """The folder holding ``Periapical Dataset/``: ``folder`` itself or one wrapper below it."""
    if folder.name == DATASET_DIR:
        return folder.parent
    candidates = [folder, *sorted(p for p in folder.iterdir() if p.is_dir())]
    for candidate in candidates:
        if (candidate / DATASET_DIR).is_dir():
            return candidate
    raise SourceError(f"{origin}: no '{DATASET_DIR}' folder at its top level or one level down.")
