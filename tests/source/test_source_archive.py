"""Step 1 (download) from a local zip or folder: extraction reused, unsafe or oversized
archives refused in one sentence, and one download at a time per build folder."""

from __future__ import annotations

import os
import re
import stat
import zipfile
from pathlib import Path

import pytest

from curation.source import download
from curation.source.download import SourceError, fetch_source
from curation.source.extract import MARKER_NAME
from curation.source.source import Source
from tests.source_archives import (
    FIXED_TIME,
    LESIONS,
    ORIGINAL,
    assert_real_layout,
    jpeg,
    real_layout_zip,
    sha,
    zip_bytes,
)


def test_a_local_zip_is_accepted_and_its_extraction_reused(tmp_path: Path) -> None:
    payload = real_layout_zip()
    archive = tmp_path / "source.zip"
    archive.write_bytes(payload)
    lock = tmp_path / "lock.json"
    fetched = fetch_source(str(archive), tmp_path / "work", lock, progress=False)
    assert_real_layout(fetched, payload)
    sentinel = fetched.root / "sentinel"
    sentinel.write_text("kept when the extraction is reused")
    again = fetch_source(str(archive), tmp_path / "work", lock, progress=False)
    assert again == fetched
    assert sentinel.exists()
    archive.write_bytes(real_layout_zip(variant=1))
    fresh = fetch_source(str(archive), tmp_path / "work", tmp_path / "other.json", progress=False)
    assert not sentinel.exists()
    assert_real_layout(fresh, archive.read_bytes())
    assert (fresh.root.parent / MARKER_NAME).is_file()
    assert not (fresh.root / MARKER_NAME).exists()


def test_a_folder_is_accepted_without_an_archive_hash(tmp_path: Path) -> None:
    folder = tmp_path / "unpacked"
    (folder / "wrapper" / LESIONS).mkdir(parents=True)
    lock = tmp_path / "lock.json"
    fetched = fetch_source(str(folder), tmp_path / "work", lock, progress=False)
    assert fetched == Source(folder / "wrapper", str(folder), None, None, ())
    assert not lock.exists()


def test_a_folder_without_the_dataset_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="Periapical Dataset"):
        fetch_source(str(tmp_path / "empty"), tmp_path / "work", tmp_path / "l.json")


@pytest.mark.parametrize(
    ("member", "mode", "problem"),
    [
        (f"{LESIONS}/../../escape.jpg", stat.S_IFREG, "'..'"),
        ("../escape.jpg", stat.S_IFREG, "'..'"),
        ("/etc/escape.jpg", stat.S_IFREG, "absolute"),
        ("C:/escape.jpg", stat.S_IFREG, "drive letter"),
        ("..\\escape.jpg", stat.S_IFREG, "backslash"),
        (f"{LESIONS}/link.jpg", stat.S_IFLNK, "symbolic link"),
    ],
)
def test_an_unsafe_member_refuses_the_whole_archive(
    tmp_path: Path, member: str, mode: int, problem: str
) -> None:
    archive = tmp_path / "evil.zip"
    members = {ORIGINAL: jpeg(90), member: b"/etc/passwd"}
    archive.write_bytes(zip_bytes(members, {member: mode | 0o777}))
    with pytest.raises(SourceError, match=re.escape(problem)) as raised:
        fetch_source(str(archive), tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert repr(member) in str(raised.value)
    assert not (tmp_path / "work" / "extracted" / "evil").exists()
    assert not list(tmp_path.rglob("escape.jpg"))


def test_a_zip_bomb_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(zip_bytes({ORIGINAL: bytes(10_000_000)}, compression=zipfile.ZIP_DEFLATED))
    with pytest.raises(SourceError, match="zip bomb"):
        fetch_source(str(archive), tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert not (tmp_path / "work" / "extracted" / "bomb").exists()


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "fake.zip"
    fake.write_bytes(b"not a zip at all")
    with pytest.raises(SourceError, match=re.escape("fake.zip: not a complete zip")):
        fetch_source(str(fake), tmp_path / "work", tmp_path / "lock.json")


def test_an_unchanged_archive_is_not_hashed_again(tmp_path: Path, monkeypatch) -> None:
    archive = tmp_path / "source.zip"
    archive.write_bytes(real_layout_zip())
    os.utime(archive, ns=(10**18, 10**18))
    digests = tmp_path / "work" / "digests.json"
    hashed = []
    real_sha256 = download.file_sha256

    def counting(path: Path, *, progress: bool = True) -> str:
        hashed.append(path)
        return real_sha256(path, progress=progress)

    monkeypatch.setattr(download, "file_sha256", counting)
    first = download.remembered_sha256(archive, digests, progress=False)
    assert first == sha(archive.read_bytes()) and len(hashed) == 1
    assert download.remembered_sha256(archive, digests, progress=False) == first
    assert len(hashed) == 1
    archive.write_bytes(real_layout_zip(variant=1))  # same size, other bytes
    os.utime(archive, ns=(10**18 + 1, 10**18 + 1))
    assert download.remembered_sha256(archive, digests, progress=False) != first
    assert len(hashed) == 2
    archive.write_bytes(real_layout_zip(variant=2))  # just written: never remembered
    download.remembered_sha256(archive, digests, progress=False)
    download.remembered_sha256(archive, digests, progress=False)
    assert len(hashed) == 4


def test_an_archive_of_too_many_members_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for k in range(60_000):
            zf.writestr(zipfile.ZipInfo(f"{LESIONS}/Image Annots/{k:06d}.xml", FIXED_TIME), b"")
    with pytest.raises(SourceError, match="60000 members"):
        fetch_source(str(archive), tmp_path / "work", tmp_path / "lock.json", progress=False)
    assert not (tmp_path / "work" / "extracted" / "many").exists()


@pytest.mark.parametrize("member", [f"{LESIONS}/{'d' * 300}/00011.jpg", f"{'f' * 300}.jpg"])
def test_a_member_name_too_long_for_the_filesystem_is_one_sentence(tmp_path, member):
    archive = tmp_path / "long.zip"
    archive.write_bytes(zip_bytes({ORIGINAL: jpeg(90), member: b"x"}))
    with pytest.raises(SourceError, match="longer than 255 bytes"):
        fetch_source(str(archive), tmp_path / "work", tmp_path / "lock.json", progress=False)


def test_two_downloads_into_one_build_folder_do_not_run_at_once(tmp_path: Path) -> None:
    from filelock import FileLock

    archive = tmp_path / "source.zip"
    archive.write_bytes(real_layout_zip())
    work = tmp_path / "work"
    work.mkdir()
    with FileLock(work / download.BUILD_LOCK_NAME), pytest.raises(SourceError, match="another"):
        fetch_source(str(archive), work, tmp_path / "lock.json", progress=False)
    assert not (work / "extracted").exists()
    assert_real_layout(
        fetch_source(str(archive), work, tmp_path / "lock.json", progress=False),
        archive.read_bytes(),
    )
