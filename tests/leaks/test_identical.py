"""The audit on every core, and its exact same-pixels check where the cheaper keys collide:
the same decoded pixels stored as other bytes are still found, near-identical pixels are
not taken for the same, and the parallel reading gives what one process gives."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import simplejpeg
import typer
from PIL import Image
from typer.testing import CliRunner

from curation.cli.publishing import audit_command
from curation.core.parallel import LocalMap
from curation.hashes.hashing import AverageHash512, hamming
from curation.leaks import identical
from curation.leaks.identical import PIXEL_CHECK_RADIUS, fill_pixels, pixel_candidates
from curation.leaks.referrals import associations
from curation.leaks.scan import scan
from curation.leaks.target import (
    Columns,
    find_shards,
    image_header,
    pixels_digest,
    resolve_columns,
)
from tests.leaks.test_closest_pairs import in_process, stops_after_one

app = typer.Typer()
app.command("audit")(audit_command)
app.command("unused")(lambda: None)  # two commands keep "audit" as a named subcommand
SIZE = (1024, 512)  # large enough for the hash's reduced decode to differ from a full one


def picture(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = (rng.random((SIZE[1] // 32, SIZE[0] // 32)) * 255).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize(SIZE, Image.Resampling.BICUBIC))
    return np.clip(smooth + rng.normal(0, 12, smooth.shape), 0, 255).astype(np.uint8)


def encoded(pixels: np.ndarray, fmt: str = "JPEG") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def as_png(jpeg: bytes) -> bytes:
    """The decoded pixels of ``jpeg`` stored losslessly: other bytes, the same pixels."""
    with Image.open(io.BytesIO(jpeg)) as image:
        image.load()
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
    return buffer.getvalue()


def with_comment(jpeg: bytes, text: bytes = b"re-filed") -> bytes:
    """``jpeg`` with a comment segment after its start marker: other bytes, the same pixels."""
    return jpeg[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + jpeg[2:]


def write_splits(folder: Path, films: dict[str, list[bytes]]) -> Path:
    folder.mkdir(parents=True)
    for split, images in films.items():
        pq.write_table(
            pa.table({"image": pa.array(images, pa.binary())}),
            folder / f"{split}-00000-of-00001.parquet",
        )
    return folder


def audit_report(target: Path, out: Path) -> dict:
    result = CliRunner().invoke(app, ["audit", str(target), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    return json.loads((out / "report.json").read_text())


def same_pixels(report: dict) -> list[list[str]]:
    return [sorted(f["film_id"] for f in g) for g in report["exact_duplicates"]["same_pixels"]]


def test_the_same_pixels_in_other_bytes_are_found(tmp_path: Path):
    jpeg = encoded(picture(0))
    png, commented = as_png(jpeg), with_comment(jpeg)
    hasher = AverageHash512()
    # The reduced decode of the JPEG and the full decode of the PNG hash apart: only a check
    # that allows for it, then compares the pixels, sees they are one picture.
    assert (
        hamming(
            hasher.hash_views(io.BytesIO(jpeg))["identity"],
            hasher.hash_views(io.BytesIO(png))["identity"],
        )
        > 0
    )
    others = [encoded(picture(seed)) for seed in (1, 2)]
    folder = write_splits(
        tmp_path / "data",
        {"train": [jpeg, *others], "test": [png, commented, encoded(picture(3))]},
    )

    report = audit_report(folder, tmp_path / "out")

    assert same_pixels(report) == [["test:0", "test:1", "train:0"]]
    assert report["exact_duplicates"]["same_bytes"] == []
    assert any("same decoded pixels span two splits" in f for f in report["findings"])


def test_near_identical_pixels_are_not_the_same(tmp_path: Path):
    """One grey level changed in one pixel: the same header and the same hash, so the exact
    check runs, and it must say the pixels differ."""
    pixels = picture(4)
    changed = pixels.copy()
    changed[100, 100] = 255 - changed[100, 100]
    first, second = encoded(pixels, "PNG"), encoded(changed, "PNG")
    hasher = AverageHash512()
    assert hasher.hash_views(io.BytesIO(first)) == hasher.hash_views(io.BytesIO(second))
    folder = write_splits(tmp_path / "data", {"train": [first], "test": [second]})

    report = audit_report(folder, tmp_path / "out")

    assert same_pixels(report) == []
    assert report["cross_split_pairs"]["count"] == 1  # still a look-alike pair, at distance 0


def scanned(folder: Path, workers: int):
    shards = find_shards(folder)
    names = resolve_columns(shards, Columns())
    films = scan(shards, names, AverageHash512(), ("ahash",), map=LocalMap(workers))
    with tempfile.TemporaryDirectory() as folder:  # the search's codes
        fill_pixels(films, shards, "image", Path(folder), map=LocalMap(workers))
    return films


def test_parallel_reading_gives_what_one_process_gives(sample_dataset_dir: Path):
    one, two = scanned(sample_dataset_dir, 1), scanned(sample_dataset_dir, 2)
    assert one == two
    assert len({f.shard for f in one}) == 3 and max(f.row for f in one) >= 64  # row groups
    assert associations(one, 199, 0, workers=1) == associations(one, 199, 0, workers=2)


def test_candidates_share_a_header_and_lie_within_the_radius(
    sample_dataset_dir: Path, tmp_path: Path
):
    films = scanned(sample_dataset_dir, 1)
    chosen = set(pixel_candidates(films, tmp_path))
    for index, film in enumerate(films):
        partners = [
            other
            for j, other in enumerate(films)
            if j != index
            and other.header == film.header
            and hamming(other.ahash, film.ahash) <= PIXEL_CHECK_RADIUS
        ]
        assert (index in chosen) == bool(partners)
        assert (film.pixels is not None) == (index in chosen)


@pytest.mark.parametrize("row", [0, 7])
def test_an_undecodable_image_is_one_sentence_naming_its_row(tmp_path: Path, row: int):
    images = [encoded(picture(seed)) for seed in range(8)]
    images[row] = images[row][: len(images[row]) // 2]
    folder = write_splits(tmp_path / "data", {"train": images[:4], "test": images})
    result = CliRunner().invoke(app, ["audit", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    (line,) = [x for x in result.output.splitlines() if "parquet" in x]  # after the bar
    assert line.startswith(f"{folder / 'test-00000-of-00001.parquet'} row {row}: the image")


@pytest.mark.parametrize("mode,subsampling", [("L", 0), ("RGB", 0), ("RGB", 2), ("RGB", 1)])
def test_the_pixel_digest_is_that_of_pillows_full_decode(mode: str, subsampling: int):
    """The fast decode hashes exactly the bytes Pillow decodes (grey, and colour at 4:4:4,
    4:2:0 and 4:2:2), so the films it calls the same pixels are those Pillow's would."""
    rgb = np.random.default_rng(subsampling).integers(0, 256, (333, 517, 3), np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(rgb).convert(mode).save(buffer, "JPEG", quality=90, subsampling=subsampling)
    data = buffer.getvalue()
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        expected = hashlib.sha256(image_header(image).encode() + image.tobytes()).hexdigest()
    assert pixels_digest(data) == expected


def test_a_jpeg_with_warnings_and_other_formats_are_digested_as_pillow_decodes_them():
    rgb = np.random.default_rng(3).integers(0, 256, (64, 96, 3), np.uint8)
    png, jpeg = io.BytesIO(), io.BytesIO()
    Image.fromarray(rgb).save(png, "PNG")
    Image.fromarray(rgb).save(jpeg, "JPEG", quality=90)
    spoiled = bytearray(jpeg.getvalue())
    spoiled[len(spoiled) // 2 : len(spoiled) // 2 + 40] = bytes(40)  # corrupt, not truncated
    with pytest.raises(ValueError):  # libjpeg warns, so Pillow decodes it
        simplejpeg.decode_jpeg(bytes(spoiled), colorspace="RGB", strict=True)
    for data in (png.getvalue(), bytes(spoiled)):
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            expected = hashlib.sha256(image_header(image).encode() + image.tobytes()).hexdigest()
        assert pixels_digest(data) == expected


def test_a_large_group_of_identical_films_is_reported_as_one_group(tmp_path: Path):
    """Thirty copies of one film in train and thirty in test are 900 cross-split film pairs:
    the finding counts them all, but the report lists the group once, each side saying how
    many films it stands for, so memory follows the group's size, not its square."""
    copy = encoded(picture(5))
    others = {split: [encoded(picture(seed)) for seed in seeds] for split, seeds in
              (("train", (6, 7)), ("test", (8, 9)))}  # fmt: skip
    folder = write_splits(
        tmp_path / "data",
        {split: [copy] * 30 + others[split] for split in ("train", "test")},
    )

    report = audit_report(folder, tmp_path / "out")

    pairs = report["cross_split_pairs"]
    assert pairs["count"] == 900
    assert pairs["listed"] == [
        {
            "method": "ahash",
            "distance": 0,
            "a": {"film_id": "train:0", "split": "train", "films_with_these_bytes": 30},
            "b": {"film_id": "test:0", "split": "test", "films_with_these_bytes": 30},
        }
    ]
    assert "900 cross-split pairs at ahash distance <= 30." in report["findings"]
    [group] = report["exact_duplicates"]["same_bytes"]
    assert len(group) == 60


def test_the_digests_kept_are_read_again_and_a_stopped_check_decodes_only_the_rest(
    sample_dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each row group's digests are kept in the work folder: the check run again decodes
    nothing, one stopped after its first row group decodes only the others, and a shard
    written again (the same bytes, a new time) is decoded again."""
    dataset = shutil.copytree(sample_dataset_dir, tmp_path / "dataset")
    films = scanned(dataset, 1)
    expected = [film.pixels for film in films]  # decoded whole, without keeping
    shards = find_shards(dataset)
    decoded: list[int] = []
    digest = identical.pixels_digest
    monkeypatch.setattr(identical, "pixels_digest", lambda d: decoded.append(1) or digest(d))

    def checked(map: Any) -> list[str | None]:
        for film in films:
            film.pixels = None
        fill_pixels(films, shards, "image", tmp_path / "work", map)
        return [film.pixels for film in films]

    with pytest.raises(KeyboardInterrupt):
        checked(stops_after_one)
    first_group = len(decoded)
    whole = checked(in_process)
    every = len(decoded)
    assert 0 < first_group < every and sum(p is not None for p in whole) > first_group
    assert checked(in_process) == whole and len(decoded) == every  # none decoded again
    assert whole == expected
    shard = next(film.shard for film in films if film.pixels is not None)
    os.utime(shards[shard], ns=(1, 1))  # written again
    in_shard = {f.sha256 for f in films if f.pixels is not None and f.shard == shard}
    assert checked(in_process) == whole and len(decoded) == every + len(in_shard)
