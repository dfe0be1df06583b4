"""Faults that used to take the process down or leave it behind: a legal JPEG the decoder
crashes on, Ctrl-C, kill -9, a full disk, unreadable zip members, a sample too small.

The decode and the signal tests run ``pericurate`` in a child process: a crash there fails
the test instead of ending pytest, and signals reach a real process group."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from curation.cli.app import app
from curation.core.errors import INTERRUPTED
from curation.core.jpeg_check import check_decodable
from curation.core.parallel import interrupts_held, ordered_map
from curation.core.records import Kind
from curation.index.index import file_facts
from curation.source.download import download_name
from tests.hostile.hostile_processes import (
    ENOUGH_FILMS,
    WAIT_SECONDS,
    alive,
    busy_source,
    children_of,
    downloaded,
    film_source,
    group_gone,
    jpeg_of,
    pericurate_child,
    settle,
    sof3_film,
    wait_for,
    with_frame,
    zip_with_patched_member,
)
from tests.hostile_films import film_bytes, voc, write_source
from tests.source_archives import ORIGINAL, real_layout_zip

SOF3_STEM = "77771"


def test_the_hand_written_lossless_film_is_a_real_one():
    data, pixels = sof3_film()
    with Image.open(io.BytesIO(data)) as image:  # Pillow decodes it at full size, exactly
        assert np.array_equal(np.asarray(image), pixels)


def test_the_header_check_clears_ordinary_films_and_refuses_the_rest():
    for data in (
        film_bytes(1),
        jpeg_of("RGB"),
        jpeg_of("L", progressive=True),
        jpeg_of("RGB", progressive=True, subsampling=2),
    ):
        assert check_decodable(data) is None
    refused = {
        "lossless (SOF3)": sof3_film()[0],
        "arithmetic-coded sequential (SOF9)": with_frame(0xC9),
        "hierarchical": with_frame(0xC5),
        "12-bit": with_frame(0xC0, precision=12),
        "4 colour components": jpeg_of("CMYK"),
        "no start of scan": film_bytes(1).partition(b"\xff\xda")[0],
        "not a JPEG": b"\x89PNG\r\n",
    }
    for reason, data in refused.items():
        assert reason in (check_decodable(data) or ""), reason


def test_the_index_rejects_a_lossless_film_with_the_reason():
    facts = file_facts(sof3_film()[0], Kind.image)
    assert "lossless (SOF3)" in facts.problem


def test_the_hash_step_refuses_to_decode_a_lossless_film(tmp_path):
    """The hash step's decode on its own (a cached index may predate the check): simplejpeg's
    reduced-scale decode of this film corrupts the heap, so it runs in a child process."""
    path = tmp_path / f"{SOF3_STEM}.jpg"
    path.write_bytes(sof3_film()[0])
    code = (
        "import sys; from curation.hashes.hash_films import _hash_one; "
        "from curation.core.vocabulary import Decode; "
        f"print(_hash_one(({str(path)!r}, Decode(sys.argv[1]), (320, 160), '0' * 64, None))[1])"
    )
    for decode in ("draft", "full"):
        done = subprocess.run(
            [sys.executable, "-c", code, decode], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (decode, done.returncode, done.stderr[-500:])
        assert "lossless (SOF3)" in done.stdout, decode


def test_a_build_with_a_lossless_original_finishes_with_it_rejected(tmp_path):
    source = film_source(tmp_path / "source", ENOUGH_FILMS)
    write_source(source, {SOF3_STEM: (sof3_film()[0], voc(SOF3_STEM))})
    build = downloaded(source, tmp_path / "build")
    for decode in ("draft", "full"):
        child = pericurate_child(
            "build", "--build", build, "--workers", "2", "--decode", decode, "--no-fail-on-rejected"
        )
        _, stderr = child.communicate(timeout=WAIT_SECONDS)
        assert child.returncode == 0, (decode, child.returncode, stderr[-800:])
        manifest = pq.read_table(build / "manifest.parquet").to_pylist()
        (film,) = [r for r in manifest if r["film_id"] == SOF3_STEM and r["kind"] == "image"]
        assert film["fate"] == "rejected" and "lossless (SOF3)" in film["reason"], film


@pytest.fixture(scope="module")
def busy_build(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The busy source, a plain one of small films (its build reaches the last step soon),
    and a folder for the builds."""
    root = tmp_path_factory.mktemp("busy")
    return busy_source(root / "source"), film_source(root / "plain", ENOUGH_FILMS), root


def working(build: Path, pid: int, cache: str) -> bool:
    """The step after the one that writes ``cache`` runs, with its worker processes."""
    return (build / "cache" / cache).exists() and len(children_of(pid)) >= 2


INTERRUPT_POINTS = {
    "hashing in workers": lambda build, pid: working(build, pid, "index.parquet"),
    "comparing pixels in workers": lambda build, pid: working(build, pid, "hashes.parquet"),
    "writing the dataset": lambda build, pid: (build / "dataset" / "data").exists(),
}


@pytest.mark.parametrize("point", INTERRUPT_POINTS)
def test_ctrl_c_ends_the_build_with_one_line_and_exit_130(busy_build, point):
    busy, plain, root = busy_build
    source = plain if point == "writing the dataset" else busy
    build = downloaded(source, root / point.replace(" ", "-"))
    child = pericurate_child("build", "--build", build, "--workers", "2")
    reached = wait_for(lambda: INTERRUPT_POINTS[point](build, child.pid), child)
    assert reached, f"the build ended before '{point}': {child.communicate()}"
    os.killpg(child.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    try:
        _, stderr = child.communicate(timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError(f"the build hangs after a Ctrl-C at '{point}'") from None
    assert child.returncode == 130, (child.returncode, stderr)
    assert stderr.strip() == INTERRUPTED, stderr
    assert settle(lambda: group_gone(child.pid)), "a worker outlived the interrupted build"


def sigint_handler(_: int) -> object:
    return signal.getsignal(signal.SIGINT)


@pytest.fixture
def ctrl_c_acted_on() -> Iterator[None]:
    """SIGINT handled as Python does by default for the test, then as it was: a test run
    started in the background by a shell (``make test &``) ignores it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_workers_ignore_ctrl_c_and_the_parent_decides(ctrl_c_acted_on):
    handlers = list(ordered_map(sigint_handler, range(4), workers=2, chunksize=1))
    assert handlers == [signal.SIG_IGN] * 4
    reached_the_end = False
    with pytest.raises(KeyboardInterrupt), interrupts_held():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # a handler runs at the next check in this thread: held, not raised
        reached_the_end = True
    assert reached_the_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_kill_9_of_the_build_takes_its_workers_with_it(busy_build):
    source, _, root = busy_build
    build = downloaded(source, root / "killed")
    child = pericurate_child("build", "--build", build, "--workers", "2")
    workers: list[int] = []
    try:
        assert wait_for(lambda: len(children_of(child.pid)) >= 2, child), child.communicate()
        workers = children_of(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=WAIT_SECONDS)  # not its pipes: a surviving worker holds them open
        assert settle(lambda: not any(alive(w) for w in workers)), "workers outlived kill -9"
    finally:  # whatever happened, nothing this test started is left running
        for pid in [child.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        child.communicate()


BLOCKED_PAGE = """
import threading
import curation.publish.build, curation.chain.steps

def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

curation.chain.steps.write_review = lambda *args, **kwargs: threading.Event().wait()
curation.publish.build.write_dataset = interrupted
from curation.cli.app import app
app()
"""


def test_ctrl_c_never_waits_for_a_blocked_review_thread(tmp_path):
    """The review page is written on a thread beside the dataset; one blocked for good (as
    after an interrupted import) must not hold up an interrupted build."""
    build = downloaded(film_source(tmp_path / "source", ENOUGH_FILMS), tmp_path / "build")
    command = [sys.executable, "-c", BLOCKED_PAGE, "build", "--build", str(build)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        raise AssertionError("the interrupted build waits for its review thread") from None
    assert done.returncode == 130 and done.stderr.strip() == INTERRUPTED, done.stderr


def full_disk(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_while_writing_a_shard_is_one_sentence_and_keeps_the_last_build(
    tmp_path, monkeypatch
):
    build = downloaded(film_source(tmp_path / "source", ENOUGH_FILMS), tmp_path / "build")
    command = ["build", "--build", str(build), "--workers", "1", "--no-fail-on-rejected"]
    assert CliRunner().invoke(app, command).exit_code == 0
    shards = {p: p.read_bytes() for p in (build / "dataset" / "data").glob("*.parquet")}
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full_disk)
    result = CliRunner().invoke(app, [*command, "--seed", "1"])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "no space left on the device" in lines[0]
    named = Path(lines[0].partition(": ")[0])
    assert named.parent == build / "dataset" / "data" and named.suffix == ".parquet", lines
    assert {p: p.read_bytes() for p in shards} == shards  # the last build's shards, whole
    assert not list(build.rglob("*.tmp"))


@pytest.fixture
def tiny_disk(tmp_path) -> Path:
    """A 400 KiB tmpfs, where mounting is permitted (root with CAP_SYS_ADMIN); else skipped."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip("mounting a small tmpfs is not permitted here")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_build_on_a_really_full_disk_is_one_sentence(tmp_path, tiny_disk):
    source = film_source(tmp_path / "source", ENOUGH_FILMS, size=(1200, 600))
    build = downloaded(source, tiny_disk / "build")
    command = ["build", "--build", str(build), "--workers", "1", "--no-fail-on-rejected"]
    result = CliRunner().invoke(app, command)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "no space left on the device" in lines[0] and lines[0].startswith(str(build)), lines


@pytest.mark.parametrize(
    ("flags", "extra", "method", "problem"),
    [
        (1, 0, None, "is encrypted"),
        (0, 20_000, None, "ends before the 20355 bytes its central directory records"),
        (0, 0, 99, "is stored with compression method 99"),  # 99: WinZip's AES
    ],
)
def test_an_unreadable_member_is_one_sentence_naming_it(tmp_path, flags, extra, method, problem):
    archive = tmp_path / "source.zip"
    patched = zip_with_patched_member(real_layout_zip(), ORIGINAL, flags, extra, method)
    archive.write_bytes(patched)
    command = ["download", str(archive), "--build", str(tmp_path / "b")]
    result = CliRunner().invoke(app, [*command, "--lock", str(tmp_path / "lock.json")])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert lines[-1].startswith(f"{archive}: member {ORIGINAL!r} {problem}"), lines
    assert not list((tmp_path / "b" / "extracted").glob("*/files"))


def test_a_sample_too_small_is_one_sentence_with_the_minimum(tmp_path):
    result = CliRunner().invoke(app, ["sample", str(tmp_path / "s.zip"), "--films", "8"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "A sample of 8 films is too small: it needs at least 30 original films to plant every case."
    )
    assert not (tmp_path / "s.zip").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_disk_while_downloading_is_one_sentence_naming_the_file(httpserver, tmp_path):
    """``/dev/full`` answers every write with ENOSPC: the partial download is made a link
    to it, so the download meets a really full device."""
    httpserver.expect_request("/source.zip").respond_with_data(real_layout_zip())
    url = httpserver.url_for("/source.zip")
    downloads = tmp_path / "build" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / f"{download_name(url)}.part").symlink_to("/dev/full")
    command = ["download", url, "--build", str(tmp_path / "build")]
    result = CliRunner().invoke(app, [*command, "--lock", str(tmp_path / "lock.json")])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and lines[-1:] == [
        f"{downloads / download_name(url)}.part: no space left on the device while writing "
        "it; what arrived is kept in it and the next run resumes from there: free space and "
        "rerun."
    ], result.output
