"""A tiny build from a hostile folder source, loaded back with ``datasets``: what a user sees
must agree with the labels, and nothing the source carries about patients may leak out."""

from __future__ import annotations

import json

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, Source, curate
from tests.hostile_films import (
    FILM_SIZE,
    bit_flipped_jpeg,
    film_bytes,
    truncated_header_jpeg,
    voc,
    write_source,
)

PATIENT = "PN73019"


@pytest.fixture(scope="module")
def hostile_build(tmp_path_factory) -> tuple:
    root = tmp_path_factory.mktemp("hostile-source")
    films = {f"{2000 + k}1": (film_bytes(10 + k), voc(f"{2000 + k}1")) for k in range(6)}
    films["10001"] = (film_bytes(30, orientation=6), voc("10001"))  # turned by readers
    films["10011"] = (film_bytes(31, orientation=3), voc("10011"))
    films["10021"] = (film_bytes(32), "<html><body><p>Session expired</p></body></html>")
    films["10031"] = (truncated_header_jpeg(), voc("10031", []))
    films["10041"] = (bit_flipped_jpeg(), voc("10041"))
    films["10051"] = (film_bytes(33), voc("10051", filename=f"{PATIENT} pano.jpg"))
    # enough plain films that no split is empty (a smaller source is refused)
    films.update({f"{4000 + k}1": (film_bytes(400 + k), voc(f"{4000 + k}1")) for k in range(35)})
    write_source(root, films)
    build = tmp_path_factory.mktemp("hostile-build")
    curate(Source(root, str(root)), build, Settings(), executor=LocalExecutor(1))
    manifest = {
        r["film_id"]: r
        for r in pq.read_table(build / "manifest.parquet").to_pylist()
        if r["kind"] == "image"
    }
    return build, manifest


def test_every_box_lies_on_its_lesion_in_the_picture_datasets_shows(hostile_build):
    build, _ = hostile_build
    loaded = datasets.load_dataset("parquet", data_dir=str(build / "dataset"))
    rows = [row for split in loaded.values() for row in split]
    assert len(rows) == 7 + 35
    for row in rows:
        picture = np.asarray(row["image"].convert("L"), dtype=np.float64)
        height, width = picture.shape
        assert (width, height) == (row["width"], row["height"]) == FILM_SIZE, row["film_id"]
        (lesion,) = row["lesions"]
        x1, y1, x2, y2 = (
            round(v * s) for v, s in zip(lesion["box"], (width, height) * 2, strict=True)
        )
        region = picture[y1:y2, x1:x2]
        inside = region.mean()
        outside = (picture.sum() - region.sum()) / (picture.size - region.size)
        assert inside > 200 and outside < 120, row["film_id"]


def test_films_that_would_mislead_are_rejected_with_a_reason(hostile_build):
    _, manifest = hostile_build
    expected = {
        "10001": "EXIF orientation 6",
        "10011": "EXIF orientation 3",
        "10021": "not a VOC annotation",
        "10031": "corrupt JPEG data",
        "10041": "corrupt JPEG data",
    }
    for film_id, problem in expected.items():
        assert manifest[film_id]["fate"] == "rejected", manifest[film_id]
        assert problem in manifest[film_id]["reason"]
    assert manifest["10051"]["fate"] == "kept"


def test_no_patient_number_reaches_any_output_cache_or_record_file(hostile_build):
    build, _ = hostile_build
    files = [p for p in build.rglob("*") if p.is_file()]
    assert any(p.name == "index.parquet" for p in files)
    for path in files:
        data = path.read_bytes()
        assert PATIENT.encode() not in data and b"73019" not in data, path
    summary = json.loads((build / "curation.json").read_text())
    assert "PN" not in json.dumps(summary["counts"])
