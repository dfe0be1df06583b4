"""Fixtures of the process-fault tests (``tests/hostile/test_hostile_process.py``): a lossless JPEG
written by hand, JPEGs whose frame claims another process, film sources, a ``pericurate``
child process in its own process group and what ``/proc`` says of it, zips that lie."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from curation.cli.app import app
from tests.hostile_films import film_bytes, voc, write_source

WAIT_SECONDS = 120  # a bound on a child run, never a measurement
ENOUGH_FILMS = 40  # a source must fill the three splits (``splits.assign.smallest_source``)
BUSY_FILM = (1024, 512)  # large enough that the steps take a while, not minutes


def lossless_jpeg(pixels: np.ndarray) -> bytes:
    """A grey lossless JPEG (SOF3, predictor 1, one Huffman table) written by hand: no
    library here writes one. Categories 0-8 all get 4-bit codes."""
    pixels = np.asarray(pixels, dtype=np.int32)
    height, width = pixels.shape
    dht = bytes([0x00, 0, 0, 0, 9] + [0] * 12) + bytes(range(9))
    sof = struct.pack(">BHHB", 8, height, width, 1) + bytes([1, 0x11, 0])
    sos = bytes([1, 1, 0x00, 1, 0, 0])
    bits = []
    for y in range(height):
        for x in range(width):
            if x:
                predicted = pixels[y, x - 1]
            elif y:
                predicted = pixels[y - 1, 0]
            else:
                predicted = 128  # 2 ** (precision - 1)
            difference = int(pixels[y, x] - predicted)
            size = abs(difference).bit_length()
            bits.append(format(size, "04b"))
            if size:
                value = difference if difference > 0 else difference - 1
                bits.append(format(value & ((1 << size) - 1), f"0{size}b"))
    stream = "".join(bits)
    stream += "1" * (-len(stream) % 8)
    scan = bytearray()
    for start in range(0, len(stream), 8):
        scan.append(int(stream[start : start + 8], 2))
        if scan[-1] == 0xFF:
            scan.append(0)  # byte stuffing

    def segment(marker: int, payload: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload

    return (
        b"\xff\xd8"
        + segment(0xC4, dht)
        + segment(0xC3, sof)
        + segment(0xDA, sos)
        + (bytes(scan) + b"\xff\xd9")
    )


def sof3_film() -> tuple[bytes, np.ndarray]:
    pixels = (np.random.default_rng(3).random((160, 320)) * 200).astype(np.uint8)
    return lossless_jpeg(pixels), pixels


def with_frame(marker: int, precision: int = 8) -> bytes:
    """A baseline film whose frame header claims another process or precision."""
    data = bytearray(film_bytes(5))
    at = data.index(b"\xff\xc0")
    data[at + 1] = marker
    data[at + 4] = precision
    return bytes(data)


def jpeg_of(mode: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, (320, 160), 90).save(buffer, format="JPEG", **options)
    return buffer.getvalue()


def film_source(root: Path, films: int, size: tuple[int, int] = (320, 160)) -> Path:
    stems = [f"{1000 + k}1" for k in range(films)]
    return write_source(root, {s: (film_bytes(k, size=size), voc(s)) for k, s in enumerate(stems)})


def pericurate_child(*args: str | Path, **options: object) -> subprocess.Popen:
    """``pericurate ARGS`` in a child process of its own process group, with Ctrl-C acted on
    as in a terminal: a test run started in the background by a shell (``make test &``)
    ignores SIGINT, and its children would inherit that."""
    program = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from curation.cli.app import app; app()"
    )
    command = [sys.executable, "-c", program, *map(str, args)]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,  # type: ignore[arg-type]
    )


def downloaded(source: Path, build: Path) -> Path:
    result = CliRunner().invoke(app, ["download", str(source), "--build", str(build)])
    assert result.exit_code == 0, result.output
    return build


def mirrored(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        buffer = io.BytesIO()
        image.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def busy_source(root: Path) -> Path:
    """Films large enough that each step takes a while, and mirrored copies filed among the
    originals, so that the pixel check runs in worker processes."""
    films = {}
    for k in range(ENOUGH_FILMS):
        data = film_bytes(100 + k, size=BUSY_FILM)
        films[f"{3000 + k}1"] = (data, voc(f"{3000 + k}1"))
        if k < ENOUGH_FILMS // 3:
            films[f"{6000 + k}1"] = (mirrored(data), voc(f"{6000 + k}1"))
    return write_source(root, films)


def wait_for(condition, child: subprocess.Popen) -> bool:
    """Poll ``condition`` until it holds (True) or the child ends first (False)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return True
        if child.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("the build neither reached the point nor ended")


def group_gone(group: int) -> bool:
    """True once no live process is left in the process group (zombies count as gone)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return False
    return True


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def settle(condition, seconds: float = 10.0) -> bool:
    """Whether ``condition`` comes to hold within ``seconds`` (a bound, not a measurement)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def zip_with_patched_member(
    data: bytes, name: str, flags: int = 0, extra: int = 0, method: int | None = None
) -> bytes:
    """``data`` with member ``name``'s general-purpose flags OR-ed with ``flags``, the sizes
    its central directory records raised by ``extra`` bytes, and its compression ``method``."""
    data = bytearray(data)
    at = 0
    while True:
        at = data.index(b"PK\x01\x02", at)
        length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46 : at + 46 + length]) == name.encode():
            break
        at += 4
    local = struct.unpack_from("<I", data, at + 42)[0]
    for flag_at in (at + 8, local + 6):
        struct.pack_into("<H", data, flag_at, struct.unpack_from("<H", data, flag_at)[0] | flags)
    for size_at in (at + 20, at + 24):
        struct.pack_into("<I", data, size_at, struct.unpack_from("<I", data, size_at)[0] + extra)
    if method is not None:
        for method_at in (at + 10, local + 8):
            struct.pack_into("<H", data, method_at, method)
    return bytes(data)
