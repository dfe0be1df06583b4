"""Hostile data through the curation: labels never lost to XML the reader does not fully
understand, patient text outside the picture, fullwidth digits, a source too small for the
splits, a film rewritten during a build, and outputs verified together."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, Source, curate
from curation.core.errors import PericurateError
from curation.core.jpeg_publish import publishable_jpeg
from curation.index.voc import AnnotationError, read_voc
from curation.lookalikes import LookalikeConfig
from curation.publish import build as build_module
from curation.publish.build_check import BuildMismatch, verify_build
from tests.hostile.hostile_data_source import (
    FULLWIDTH,
    PATIENT,
    UNDERSTOOD_NOT,
    good_films,
    move_first_film,
    rewrite_rows,
)
from tests.hostile_films import BOX, FILMS, film_bytes, voc, write_source


@pytest.mark.parametrize("case", sorted(UNDERSTOOD_NOT))
def test_annotations_not_fully_understood_are_refused_with_the_reason(case):
    text, reason = UNDERSTOOD_NOT[case]
    with pytest.raises(AnnotationError, match=reason.replace("(", r"\(")):
        read_voc(io.BytesIO(text.encode()))


def test_a_plain_voc_annotation_still_reads():
    (box,) = read_voc(io.BytesIO(voc("00011").encode())).boxes
    assert (box.xmin, box.ymin, box.xmax, box.ymax, box.grade) == (*map(float, BOX), "4")


@pytest.fixture(scope="module")
def hostile_build(hostile_source, tmp_path_factory) -> tuple[Path, dict]:
    build = tmp_path_factory.mktemp("hostile-data-build")
    curate(
        Source(hostile_source, str(hostile_source)), build, Settings(), executor=LocalExecutor(1)
    )
    manifest = {
        r["path"].rpartition("/")[2]: r
        for r in pq.read_table(build / "manifest.parquet").to_pylist()
        if r["kind"] == "image"
    }
    return build, manifest


def test_films_whose_labels_cannot_be_trusted_are_rejected_not_made_lesion_free(hostile_build):
    _, manifest = hostile_build
    for k, case in enumerate(sorted(UNDERSTOOD_NOT)):
        row = manifest[f"{5000 + k}1.jpg"]
        assert row["fate"] == "rejected", (case, row)
        assert "bad annotation" in row["reason"], (case, row)
        assert UNDERSTOOD_NOT[case][1] in row["reason"], (case, row)


def test_fullwidth_digits_are_not_a_film_id(hostile_build):
    build, manifest = hostile_build
    row = manifest[f"{FULLWIDTH}.jpg"]
    assert row["fate"] == "rejected" and "5-6 digit numeric stem" in row["reason"]
    shards = pq.read_table(build / "dataset" / "data").column("film_id").to_pylist()
    assert "39991" not in shards and FULLWIDTH not in shards


def test_no_patient_text_of_a_film_leaves_in_any_output(hostile_build, hostile_source):
    build, manifest = hostile_build
    assert manifest["60001.jpg"]["fate"] == "kept"
    for path in (p for p in build.rglob("*") if p.is_file()):
        assert PATIENT not in path.read_bytes(), path
    source = (hostile_source / FILMS / "60001.jpg").read_bytes()
    loaded = datasets.load_dataset("parquet", data_dir=str(build / "dataset"))
    (row,) = [r for s in loaded.values() for r in s if r["film_id"] == "60001"]
    assert np.array_equal(np.asarray(row["image"]), np.asarray(Image.open(io.BytesIO(source))))


def test_published_bytes_are_recorded_and_a_clean_jpeg_is_published_as_it_is(hostile_build):
    build, manifest = hostile_build
    table = pq.read_table(build / "dataset" / "data", columns=["film_id", "image"]).to_pylist()
    published = {r["film_id"]: hashlib.sha256(r["image"]["bytes"]).hexdigest() for r in table}
    kept = {r["film_id"]: r for r in manifest.values() if r["fate"] == "kept"}
    assert published == {f: r["published_sha256"] for f, r in kept.items()}
    assert kept["60001"]["published_sha256"] != kept["60001"]["sha256"]  # stripped
    buffer = io.BytesIO()  # JFIF, tables, frame, scan: nothing to strip
    Image.open(io.BytesIO(film_bytes(5))).save(buffer, "JPEG", quality=90)
    assert publishable_jpeg(buffer.getvalue()) == buffer.getvalue()


def test_every_split_of_a_build_loads_with_datasets(hostile_build):
    build, _ = hostile_build
    loaded = datasets.load_dataset("parquet", data_dir=str(build / "dataset"))
    assert sorted(loaded) == ["test", "train", "validation"]
    assert all(len(split) > 0 for split in loaded.values())


def test_a_source_too_small_for_the_splits_is_refused_with_the_numbers(tmp_path):
    root = write_source(tmp_path / "source", good_films(12))
    build = tmp_path / "build"
    with pytest.raises(PericurateError) as refused:
        curate(Source(root, str(root)), build, Settings(), executor=LocalExecutor(1))
    message = str(refused.value)
    assert "keeps 12 films" in message and "validation and test would be empty" in message
    assert "35 films" in message
    assert not list((build / "dataset" / "data").glob("*.parquet"))


def test_films_in_one_look_alike_group_are_refused_naming_the_group_not_the_count(tmp_path):
    """40 films are enough for the splits; joined into one group (every film within the
    largest look-alike distance) they can only go to train, and the refusal says so."""
    root = write_source(tmp_path / "source", good_films(40))
    build = tmp_path / "build"
    settings = Settings(LookalikeConfig(lookalike_distance=512))
    with pytest.raises(PericurateError) as refused:
        curate(Source(root, str(root)), build, settings, executor=LocalExecutor(1))
    message = str(refused.value)
    assert "keeps 40 films" in message and "too few" not in message
    assert "40 of them are in look-alike groups of more than 1 film" in message
    assert "holds 40 films" in message
    assert not (build / "dataset").exists()


def test_a_film_rewritten_during_the_build_is_refused_by_name(tmp_path, monkeypatch):
    root = write_source(tmp_path / "source", good_films())
    victim = root / FILMS / "30051.jpg"
    write_dataset = build_module.write_dataset

    def rewritten_first(*args, **kwargs):
        victim.write_bytes(film_bytes(999))  # another picture, after the index hashed it
        return write_dataset(*args, **kwargs)

    monkeypatch.setattr(build_module, "write_dataset", rewritten_first)
    with pytest.raises(PericurateError, match="changed during the build") as refused:
        curate(Source(root, str(root)), tmp_path / "build", Settings(), executor=LocalExecutor(1))
    assert str(victim) in str(refused.value)


def _copy(build: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(build, copy, ignore=shutil.ignore_patterns("cache", "work", "review"))
    return copy


def _summary_of_another_run(copy: Path) -> None:
    summary = json.loads((copy / "curation.json").read_text())
    summary["splits"]["test"]["films"] += 1
    summary["splits"]["train"]["films"] -= 1
    (copy / "curation.json").write_text(json.dumps(summary))


def _shard_of_another_run(copy: Path) -> None:
    data = copy / "dataset" / "data"
    shutil.copy(data / "validation-00000-of-00001.parquet", data / "test-00000-of-00001.parquet")


def _first_row(path: Path, **changed: object) -> None:
    rewrite_rows(path, lambda rows: rows[0].update(changed))


def _train_shard(copy: Path) -> Path:
    return copy / "dataset" / "data" / "train-00000-of-00001.parquet"


MIXED = {
    "clusters of another run": (
        lambda c: rewrite_rows(c / "clusters.parquet", move_first_film),
        "clusters.parquet",
    ),
    "summary of another run": (_summary_of_another_run, "curation.json"),
    "shard of another run": (_shard_of_another_run, "test-00000-of-00001.parquet"),
    "manifest without published bytes": (
        lambda c: rewrite_rows(
            c / "manifest.parquet", lambda rows: [r.update(published_sha256="") for r in rows]
        ),
        "manifest.parquet",
    ),
    "manifest's digests in capitals": (
        lambda c: rewrite_rows(
            c / "manifest.parquet",
            lambda rows: [
                r.update(published_sha256=(r["published_sha256"] or "").upper()) for r in rows
            ],
        ),
        "manifest.parquet",
    ),
    "cluster sizes of another run": (
        lambda c: rewrite_rows(
            c / "clusters.parquet",
            lambda rows: rows[0].update(cluster_size=rows[0]["cluster_size"] + 1),
        ),
        "clusters.parquet",
    ),
    "image bytes of another film": (
        lambda c: _first_row(_train_shard(c), image={"bytes": b"another film", "path": "x.jpg"}),
        "train-00000-of-00001.parquet",
    ),
    "a film twice in clusters.parquet": (
        lambda c: rewrite_rows(c / "clusters.parquet", lambda rows: rows.append(rows[0])),
        "clusters.parquet",
    ),
    "a film twice in a shard": (
        lambda c: rewrite_rows(_train_shard(c), lambda rows: rows.append(rows[0])),
        "train-00000-of-00001.parquet",
    ),
    "a film missing from a shard": (
        lambda c: rewrite_rows(_train_shard(c), lambda rows: rows.pop()),
        "train-00000-of-00001.parquet",
    ),
    "cluster of another run in a shard": (
        lambda c: _first_row(_train_shard(c), cluster_id="another cluster"),
        "train-00000-of-00001.parquet",
    ),
}


def test_a_build_verifies_as_it_is(hostile_build):
    verify_build(hostile_build[0])


@pytest.mark.parametrize("case", sorted(MIXED))
def test_outputs_that_do_not_belong_together_are_refused_by_name(hostile_build, tmp_path, case):
    copy = _copy(hostile_build[0], tmp_path)
    mix, named = MIXED[case]
    mix(copy)
    with pytest.raises(BuildMismatch) as refused:
        verify_build(copy)
    (line,) = str(refused.value).splitlines()
    assert line.startswith(str(copy / named)) or line.startswith(
        str(copy / "dataset" / "data" / named)
    ), line
