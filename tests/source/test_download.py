"""Step 1 (download) over HTTP, against a local server: resume after a cut, redirects, lock
pinning, and an upstream file that changed or was spliced is never pinned."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from curation.source import download
from curation.source.download import SourceError, fetch_source
from tests.source_archives import assert_real_layout, real_layout_zip, sha


@dataclass
class Served:
    """What the test server serves and what it saw."""

    payload: bytes
    honour_range: bool = True
    cut_after: int = 0
    cuts_left: int = 0
    ranges: list[str | None] = field(default_factory=list)
    content_length: bool = True  # False: the body ends when the connection closes
    etag: bool = False  # True: send an ETag and honour If-Range
    changes: list[bytes] = field(default_factory=list)  # payloads served after each cut


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path.startswith("/moved"):
            self.send_response(302)
            self.send_header("Location", "/source.zip")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        served = self.server.served
        header = self.headers.get("Range")
        served.ranges.append(header)
        match = re.fullmatch(r"bytes=(\d+)-", header or "")
        start = int(match.group(1)) if match and served.honour_range else 0
        tag = f'"{hashlib.sha256(served.payload).hexdigest()[:16]}"'
        if served.etag and self.headers.get("If-Range") not in (None, tag):
            start = 0  # the file changed since the client's copy: send all of it
        size = len(served.payload)
        if start >= size > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = served.payload[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        if served.etag:
            self.send_header("ETag", tag)
        if served.content_length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if served.cuts_left:
            self.wfile.write(body[: served.cut_after])
            served.cuts_left -= 1
            if served.changes:
                served.payload = served.changes.pop(0)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


class _Server(ThreadingHTTPServer):
    served: Served


@pytest.fixture
def server() -> Iterator[tuple[_Server, str]]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.served = Served(real_layout_zip())
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}/source.zip"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(download, "RETRY_BACKOFF_SECONDS", 0.0)


def test_download_resumes_after_a_cut_connection(server, tmp_path: Path) -> None:
    httpd, url = server
    cut = 300
    httpd.served.cut_after, httpd.served.cuts_left = cut, 1
    fetched = fetch_source(url, tmp_path / "work", tmp_path / "source.lock.json")
    assert httpd.served.ranges == [None, f"bytes={cut}-"]
    assert_real_layout(fetched, httpd.served.payload)
    assert fetched.origin == url
    assert not list((tmp_path / "work" / "downloads").glob("*.part"))


def test_a_partial_file_from_an_earlier_run_is_resumed(server, tmp_path: Path) -> None:
    httpd, url = server
    dest = tmp_path / "archive.zip"
    dest.with_name("archive.zip.part").write_bytes(httpd.served.payload[:123])
    download.download_url(url, dest, progress=False)
    assert httpd.served.ranges == ["bytes=123-"]
    assert dest.read_bytes() == httpd.served.payload


def test_a_complete_partial_file_is_finished_on_416(server, tmp_path: Path) -> None:
    httpd, url = server
    dest = tmp_path / "archive.zip"
    dest.with_name("archive.zip.part").write_bytes(httpd.served.payload)
    download.download_url(url, dest, progress=False)
    assert httpd.served.ranges == [f"bytes={len(httpd.served.payload)}-"]
    assert dest.read_bytes() == httpd.served.payload


def test_retries_are_bounded_and_keep_the_partial_file(server, tmp_path: Path) -> None:
    httpd, url = server
    httpd.served.cut_after, httpd.served.cuts_left = 10, 99
    dest = tmp_path / "archive.zip"
    with pytest.raises(SourceError, match=f"after {download.RETRY_ATTEMPTS} attempts"):
        download.download_url(url, dest, progress=False)
    attempts = download.RETRY_ATTEMPTS
    assert httpd.served.ranges == [None] + [f"bytes={10 * i}-" for i in range(1, attempts)]
    assert dest.with_name("archive.zip.part").read_bytes() == httpd.served.payload[: 10 * attempts]
    assert not dest.exists()


def test_a_server_ignoring_range_still_yields_the_right_file(server, tmp_path: Path) -> None:
    httpd, url = server
    httpd.served.honour_range = False
    httpd.served.cut_after, httpd.served.cuts_left = 300, 1
    fetched = fetch_source(url, tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert httpd.served.ranges == [None, "bytes=300-"]
    assert_real_layout(fetched, httpd.served.payload)


def test_redirects_are_followed_and_tokens_never_recorded(server, tmp_path: Path) -> None:
    httpd, url = server
    moved = url.replace("/source.zip", "/moved?token=s3cr3t&v=3")
    lock = tmp_path / "lock.json"
    fetched = fetch_source(moved, tmp_path / "work", lock, progress=False)
    assert_real_layout(fetched, httpd.served.payload)
    assert "s3cr3t" not in lock.read_text() + fetched.origin
    assert "v=3" in fetched.origin


@pytest.mark.parametrize("same_size", [True, False])
def test_a_changed_source_at_the_same_url_is_refused(server, tmp_path: Path, same_size) -> None:
    httpd, url = server
    lock = tmp_path / "source.lock.json"
    fetch_source(url, tmp_path / "first", lock, progress=False)
    pinned = lock.read_bytes()
    changed = real_layout_zip(variant=1) if same_size else real_layout_zip() + b"junk"
    assert changed != httpd.served.payload
    assert (len(changed) == len(httpd.served.payload)) == same_size
    httpd.served.payload = changed
    with pytest.raises(SourceError, match=r"lock") as raised:
        fetch_source(url, tmp_path / "second", lock, progress=False)
    assert lock.read_bytes() == pinned
    assert url in str(raised.value)
    assert not (tmp_path / "second" / "extracted").exists()
    kept = list((tmp_path / "second" / "downloads").glob("*.zip"))
    assert [p.read_bytes() for p in kept] == ([changed] if same_size else [])
    if same_size:
        assert sha(changed) in str(raised.value)


def test_a_page_that_is_not_a_zip_is_never_pinned(server, tmp_path: Path) -> None:
    httpd, url = server
    httpd.served.payload = b"<html>please log in</html>"
    lock = tmp_path / "lock.json"
    with pytest.raises(SourceError, match=re.escape(f"(fetched from {url}): not a complete zip")):
        fetch_source(url, tmp_path / "work", lock, progress=False)
    assert not lock.exists()


def test_the_lock_is_byte_identical_across_runs(server, tmp_path: Path) -> None:
    httpd, url = server
    local_zip = tmp_path / "local.zip"
    local_zip.write_bytes(real_layout_zip(variant=2))
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    fetch_source(url, tmp_path / "w1", first, progress=False)
    fetch_source(str(local_zip), tmp_path / "w1", first, progress=False)
    fetch_source(str(local_zip), tmp_path / "w2", second, progress=False)
    fetch_source(url, tmp_path / "w2", second, progress=False)
    once = first.read_bytes()
    fetch_source(url, tmp_path / "w3", first, progress=False)
    assert first.read_bytes() == once == second.read_bytes()
    assert b"date" not in once and b"time" not in once
    assert once.count(sha(httpd.served.payload).encode()) == 1
    assert b'"local.zip"' in once


def test_the_sample_archive_downloads_through_a_cut(server, tmp_path: Path) -> None:
    """The end-to-end case from the issue: the embedded sample served over HTTP, cut midway."""
    from curation.sample import write_sample_archive

    archive = tmp_path / "sample.zip"
    write_sample_archive(archive, seed=0, films=30)
    httpd, url = server
    payload = archive.read_bytes()
    half = len(payload) // 2
    httpd.served.payload = payload
    httpd.served.cut_after, httpd.served.cuts_left = half, 1
    fetched = fetch_source(url, tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert httpd.served.ranges == [None, f"bytes={half}-"]
    assert (fetched.sha256, fetched.size) == (sha(payload), len(payload))
    with zipfile.ZipFile(archive) as zf:
        files = [info for info in zf.infolist() if not info.is_dir()]
        rars = tuple(info.filename for info in files if info.filename.endswith(".rar"))
        assert rars and fetched.skipped == rars
        for info in files:
            extracted = fetched.root / info.filename
            if info.filename in rars:
                assert not extracted.exists()
            else:
                assert extracted.read_bytes() == zf.read(info)


def test_a_cut_without_content_length_is_resumed_not_taken_as_complete(server, tmp_path):
    """Without Content-Length a dropped connection looks like the end of the file: only a
    complete zip archive is taken as the whole download."""
    httpd, url = server
    httpd.served.content_length = False
    httpd.served.cut_after, httpd.served.cuts_left = 700, 1
    fetched = fetch_source(url, tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert httpd.served.ranges == [None, "bytes=700-"]
    assert_real_layout(fetched, httpd.served.payload)


def test_a_download_that_never_completes_is_never_renamed_nor_pinned(server, tmp_path):
    httpd, url = server
    httpd.served.content_length = False
    httpd.served.cut_after, httpd.served.cuts_left = 100, 99
    lock = tmp_path / "lock.json"
    with pytest.raises(SourceError, match="download failed after"):
        fetch_source(url, tmp_path / "work", lock, progress=False)
    assert not lock.exists()
    assert not list((tmp_path / "work" / "downloads").glob("*.zip"))
    httpd.served.cuts_left = 0  # the next run resumes and finishes
    fetched = fetch_source(url, tmp_path / "work", lock, progress=False)
    assert_real_layout(fetched, httpd.served.payload)


SPLICE_CUT = 1130  # past the member data, before the central directory's CRC of it


def test_a_resume_after_the_upstream_file_changed_starts_over(server, tmp_path):
    httpd, url = server
    changed = real_layout_zip(variant=1)
    httpd.served.etag = True
    httpd.served.cut_after, httpd.served.cuts_left = SPLICE_CUT, 1
    httpd.served.changes = [changed]
    lock = tmp_path / "lock.json"
    fetched = fetch_source(url, tmp_path / "work", lock, progress=False)
    assert httpd.served.ranges == [None, f"bytes={SPLICE_CUT}-"]
    assert_real_layout(fetched, changed)
    assert sha(changed) in lock.read_text()


def test_a_spliced_archive_is_never_pinned_and_is_fetched_again(server, tmp_path):
    """A server without validators cannot say the file changed; the splice fails the CRC
    check on extraction, before the lock is written, and the damaged download is removed."""
    httpd, url = server
    changed = real_layout_zip(variant=1)
    httpd.served.cut_after, httpd.served.cuts_left = SPLICE_CUT, 1
    httpd.served.changes = [changed]
    lock = tmp_path / "lock.json"
    with pytest.raises(SourceError, match="cannot extract member") as raised:
        fetch_source(url, tmp_path / "work", lock, progress=False)
    assert "fetched again" in str(raised.value)
    assert not lock.exists()
    assert not list((tmp_path / "work" / "downloads").iterdir())
    fetched = fetch_source(url, tmp_path / "work", lock, progress=False)
    assert_real_layout(fetched, changed)


def test_a_redirect_loop_is_one_sentence(httpserver, tmp_path):
    httpserver.expect_request("/loop").respond_with_data(
        "", status=302, headers={"Location": "/loop"}
    )
    with pytest.raises(SourceError, match="redirect"):
        fetch_source(httpserver.url_for("/loop"), tmp_path / "w", tmp_path / "l.json")
