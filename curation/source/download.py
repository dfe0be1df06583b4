"""``download``: fetch the pinned source archive, pin its sha256, extract it safely.

The source is an http(s) URL, a local ``.zip`` or an already extracted folder (a ``file://``
URL is read as the local path it names). Archives are
checked against ``source.lock.json`` (sha256 and size per origin): the first fetch records
them, every later fetch must match, so a silently changed upstream file can never slip into
a benchmark. Downloads resume with a ``Range`` request because the real archive is ~8.9 GB,
guarded by ``If-Range`` with the server's ETag so a changed file is fetched whole rather than
spliced; a download counts as complete only when its declared length arrived and it is a
complete zip archive. The lock is written only after the archive extracted cleanly (every
member's CRC checked, ``curation.source.extract``), and one build folder takes one download at a
time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from curation.core.atomic import settled, write_bytes, write_json
from curation.core.errors import DamagedArchiveError, SourceError, naming_full_disk
from curation.source.extract import CHUNK_BYTES, EXTRACTED_FILES, extract_archive, progress_bar
from curation.source.source import Source

if TYPE_CHECKING:
    import httpx
    from rich.progress import Progress, TaskID

DATASET_DIR = "Periapical Dataset"
RETRY_ATTEMPTS = 5
RETRY_BACKOFF_SECONDS = 2.0
DIGESTS_NAME = "archive-digests.json"
BUILD_LOCK_NAME = ".pericurate-download.lock"
SECRET_QUERY_WORDS = ("token", "key", "sig", "secret", "password", "auth", "credential")


def fetch_source(source: str, work_dir: Path, lock_path: Path, *, progress: bool = True) -> Source:
    """Make ``source`` available as a folder holding ``Periapical Dataset/``, pinned by the lock.

    An archive is fetched and extracted under ``work_dir``, which one run holds at a time."""
    from filelock import FileLock, Timeout  # only when there is work to do

    source = local_path_of(source)
    remote = urlsplit(source).scheme in ("http", "https")
    if not remote and Path(source).is_dir():
        return Source(find_dataset_root(Path(source), source), source, None, None, ())
    if not remote and not Path(source).is_file():  # before the build folder is made
        raise SourceError(f"{source}: no such file or folder.")
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(work_dir / BUILD_LOCK_NAME, timeout=0):
            return _fetch_archive(source, remote, work_dir, lock_path, progress)
    except Timeout:
        raise SourceError(
            f"{work_dir}: another pericurate download is using this build folder; "
            "wait for it to finish or use another --build."
        ) from None


def local_path_of(source: str) -> str:
    """A ``file://`` URL as the local path it names (percent-escapes decoded); any other
    source as it is. A ``file`` URL naming another host is refused."""
    from urllib.request import url2pathname

    parts = urlsplit(source)
    if parts.scheme.lower() != "file":
        return source
    if parts.netloc not in ("", "localhost"):
        raise SourceError(
            f"{source}: a file URL on another host ({parts.netloc}) cannot be read; "
            "give a local path or an http(s) URL."
        )
    return url2pathname(parts.path)


def _fetch_archive(
    source: str, remote: bool, work_dir: Path, lock_path: Path, progress: bool
) -> Source:
    if remote:
        origin = redact_url(source)
        archive = work_dir / "downloads" / download_name(source)
        if not archive.is_file():
            entry = read_lock(lock_path).get(origin)
            expected = entry["size"] if entry is not None else None
            download_url(source, archive, expected_size=expected, progress=progress)
        lock_key = origin
    else:
        origin = source
        archive = Path(source)
        if not archive.is_file():
            raise SourceError(f"{source}: no such file or folder.")
        lock_key = archive.name
    if not zipfile.is_zipfile(archive):
        fetched_from = "" if archive == Path(origin) else f" (fetched from {origin})"
        raise SourceError(f"{archive}{fetched_from}: not a complete zip archive.")
    sha256 = remembered_sha256(archive, work_dir / DIGESTS_NAME, progress=progress)
    size = archive.stat().st_size
    check_lock(lock_path, lock_key, sha256, size, archive)
    target = work_dir / "extracted" / archive.name.removesuffix(".zip")
    try:
        skipped = extract_archive(archive, target, sha256, progress=progress)
    except DamagedArchiveError as error:
        if not remote:
            raise
        archive.unlink(missing_ok=True)
        raise DamagedArchiveError(
            f"{error} The download (from {origin}) was removed and will be fetched again; "
            "nothing was pinned."
        ) from None
    record_lock(lock_path, lock_key, sha256, size)
    with zipfile.ZipFile(archive) as zf:
        comment = zf.comment.decode("utf-8", "replace")
    return Source(
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
    """Stream ``url`` into ``dest`` via ``dest.part``, resuming a partial file with ``Range``
    (and ``If-Range`` with the ETag of the response that began it, kept in ``dest.part.etag``);
    ``dest`` appears only when it holds a complete zip archive. httpx is imported here: it
    costs ~0.3 s, which a run from a local zip or a run with nothing to do need not pay."""
    import httpx

    shown = redact_url(url)
    part = dest.with_name(dest.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    headers = {"Accept-Encoding": "identity"}
    timeout = httpx.Timeout(60.0, connect=30.0)
    with (
        _quiet_httpx_logs(),
        httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
        progress_bar(progress) as bar,
    ):
        task = bar.add_task(f"download {dest.name}", total=expected_size)
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                problem = _download_attempt(client, url, part, expected_size, bar, task)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            except httpx.TooManyRedirects:
                raise SourceError(f"{shown}: the server redirects in a loop.") from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # a bad redirect target, ...
                raise SourceError(f"{shown}: cannot download ({type(exc).__name__}).") from None
            if problem is None:
                part.replace(dest)
                _etag_file(part).unlink(missing_ok=True)
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
    task: TaskID,
) -> str | None:
    """One request; None when ``part`` now holds the whole file, else why to try again."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    etag = _etag_file(part)
    if offset and etag.is_file():
        headers["If-Range"] = etag.read_text(encoding="utf-8")
    with client.stream("GET", url, headers=headers) as response:
        status = response.status_code
        if status == 416:
            total = _content_range_total(response)
            if total is not None and total == offset:
                return _incomplete(part, total, url)
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
            _remember_etag(etag, response.headers.get("ETag"))
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
        kept = "what arrived is kept in it and the next run resumes from there"
        with naming_full_disk(part, kept), part.open(mode) as out:
            # No chunk size: a buffering chunker would lose its buffer when the link drops.
            for chunk in response.iter_raw():
                out.write(chunk)
                bar.advance(task, len(chunk))
    return _incomplete(part, total, url)


def _incomplete(part: Path, total: int | None, url: str) -> str | None:
    """Why ``part`` is not yet the whole download (None when it is). Without a declared
    length a dropped connection looks like the end of the file, so only a complete zip
    archive counts; a whole response that is not a zip is refused and removed."""
    if total is not None and part.stat().st_size != total:
        return "the server did not send the whole file"
    if zipfile.is_zipfile(part):
        return None
    if total is None:
        return "the connection ended before a complete zip archive arrived"
    part.unlink()
    _etag_file(part).unlink(missing_ok=True)
    raise SourceError(
        f"{part.with_suffix('')} (fetched from {redact_url(url)}): not a complete zip archive; "
        "nothing was kept or pinned."
    )


def _etag_file(part: Path) -> Path:
    return part.with_name(part.name + ".etag")


def _remember_etag(path: Path, etag: str | None) -> None:
    """Keep a strong ETag for ``If-Range`` (weak ones may not be used there)."""
    if etag and not etag.startswith("W/"):
        write_bytes(path, etag.encode("utf-8"))
    else:
        path.unlink(missing_ok=True)


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


def file_sha256(path: Path, *, progress: bool = True) -> str:
    """The sha256 of the file at ``path``, read in chunks (with a progress bar unless
    ``progress`` is false)."""
    digest = hashlib.sha256()
    with progress_bar(progress) as bar, path.open("rb") as handle:
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


class LockEntry(TypedDict):
    """What the lock records of one origin's archive."""

    sha256: str
    size: int


def read_lock(lock_path: Path) -> dict[str, LockEntry]:
    """The lock's ``{origin: {"sha256", "size"}}`` table (empty when there is no lock yet)."""
    if not lock_path.exists():
        return {}
    try:
        sources = json.loads(lock_path.read_text(encoding="utf-8"))["sources"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{lock_path}: not a valid source lock ({exc}).") from exc
    if not isinstance(sources, dict) or not all(isinstance(v, dict) for v in sources.values()):
        raise SourceError(f"{lock_path}: not a valid source lock ('sources' is not a table).")
    for origin, entry in sources.items():
        size = entry.get("size")
        if not isinstance(entry.get("sha256"), str) or type(size) is not int:
            raise SourceError(
                f"{lock_path}: not a valid source lock (the entry of {origin} needs a text "
                "'sha256' and a whole-number 'size')."
            )
    return sources


def record_lock(lock_path: Path, key: str, sha256: str, size: int) -> None:
    """Record ``key`` on its first fetch, once its archive has been verified."""
    sources = read_lock(lock_path)
    if key not in sources:
        write_json(lock_path, {"sources": {**sources, key: {"sha256": sha256, "size": size}}})


def check_lock(lock_path: Path, key: str, sha256: str, size: int, archive: Path) -> None:
    """Refuse an archive that differs from what the lock records for ``key``."""
    recorded = read_lock(lock_path).get(key)
    if recorded is not None and recorded != {"sha256": sha256, "size": size}:
        raise SourceError(
            f"{archive} does not match {lock_path} for {key}: expected sha256 "
            f"{recorded['sha256']} ({recorded['size']} bytes), found {sha256} "
            f"({size} bytes); nothing was deleted: remove the file to fetch again, or its lock "
            f"entry to accept the new source."
        )


def find_dataset_root(folder: Path, origin: str) -> Path:
    """The folder holding ``Periapical Dataset/``: ``folder`` itself or one wrapper below it."""
    if folder.name == DATASET_DIR:
        return folder.parent
    candidates = [folder, *sorted(p for p in folder.iterdir() if p.is_dir())]
    for candidate in candidates:
        if (candidate / DATASET_DIR).is_dir():
            return candidate
    raise SourceError(f"{origin}: no '{DATASET_DIR}' folder at its top level or one level down.")
