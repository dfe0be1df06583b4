"""A build folder on a read-only file system: a command that writes there says so in one
sentence before it starts; an audit that only reads it and writes its report elsewhere runs.
The lock is the first thing written, so a lock refused as on a read-only mount stands in for
one (a test cannot mount a file system)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import filelock
import pytest
from typer.testing import CliRunner

from curation.cli.app import app
from curation.core import build_lock
from curation.leaks import scan
from tests.audit.audit_runs import write_generic


class ReadOnlyLock:
    """``filelock.FileLock`` on a read-only mount: acquiring it fails as the kernel does,
    but in the folders of ``writable`` (an audit's report folder elsewhere)."""

    writable: tuple[Path, ...] = ()

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = Path(path)

    def acquire(self) -> None:
        if self.path.parent not in self.writable:
            raise OSError(errno.EROFS, "Read-only file system", str(self.path))

    def release(self) -> None:
        pass


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filelock, "FileLock", ReadOnlyLock)


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_build_in_a_read_only_folder_says_so_in_one_sentence(tmp_path, read_only, force):
    (tmp_path / "work").mkdir()
    result = CliRunner().invoke(app, ["build", "--build", str(tmp_path), *force])
    assert result.exit_code == 2, (result.output, result.exception)
    assert [line for line in result.output.splitlines() if line.strip()] == [
        f"{tmp_path}: this build folder cannot be written to (Read-only file system), so "
        "'build' did not start; use a build folder you can write to."
    ]


def test_an_audit_of_a_read_only_build_writing_elsewhere_runs(tmp_path, read_only, monkeypatch):
    build = write_generic(tmp_path / "build")
    (build / "work").mkdir()  # a build folder: the audit would take its lock
    out = tmp_path / "report"
    monkeypatch.setattr(ReadOnlyLock, "writable", (out,))
    result = CliRunner().invoke(app, ["audit", str(build), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads((out / "report.json").read_text())["splits"]["train"]["films"] == 6


def test_an_audit_whose_report_folder_cannot_be_written_names_it_before_hashing(
    tmp_path, monkeypatch
):
    build = write_generic(tmp_path / "build")
    out = tmp_path / "report"

    def refuse(*args: object, dir: Path, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(dir / "probe"))

    monkeypatch.setattr(build_lock.tempfile, "TemporaryFile", refuse)
    monkeypatch.setattr(scan, "hash_film", lambda *args, **kwargs: pytest.fail("hashed"))
    result = CliRunner().invoke(app, ["audit", str(build), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.output.splitlines()[-1] == (
        f"{out}: cannot be written (Read-only file system); choose a place you can write to."
    )
    assert not out.exists()


def test_a_refused_write_no_writer_named_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """The command line's last word on a write the file system refuses: the file, the reason."""
    from curation.source import download

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "b" / "digests"))

    monkeypatch.setattr(download, "fetch_source", refuse)
    result = CliRunner().invoke(app, ["download", str(tmp_path), "--build", str(tmp_path / "b")])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.output.splitlines() == [
        f"{tmp_path / 'b' / 'digests'}: cannot be written (Read-only file system); choose a "
        "place you can write to."
    ]
