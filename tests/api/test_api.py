"""The Python API (``curation.api``, importable from ``curation``): the chain's checks on a
folder of films the test draws, ``curate`` and ``audit_splits`` returning tables, and the
examples of ``docs/api.md`` run as printed."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation import (
    CurationError,
    audit_splits,
    curate,
    find_lookalikes,
    find_same_pictures,
    find_visits,
)
from curation.drawing.revisits import revisit
from curation.sample import write_sample_archive
from curation.visits.verification import MIN_CELLS
from support.film_kit import film, save, scaled, turned
from tests.decisions.test_decisions import _reencoded
from tests.hostile_films import film_bytes, voc, write_source

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SIZE = (1600, 840)


@pytest.fixture(scope="module")
def films(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six distinct films, a half-turned copy of 00001, a smaller copy of 00002, another visit
    of 00003's patient, and a file that is not a JPEG."""
    folder = tmp_path_factory.mktemp("films")
    drawn = {f"{i:05d}": film(i, SIZE) for i in range(1, 7)}
    for name, picture in drawn.items():
        save(picture, folder / f"{name}.jpg")
    save(turned(drawn["00001"], "rot180"), folder / "00011.jpg")
    save(scaled(drawn["00002"], 0.75), folder / "00012.jpg")
    save(revisit(np.clip(drawn["00003"] + 0.5, 0, 255).astype(np.uint8), 1), folder / "00013.jpg")
    (folder / "00099.jpg").write_bytes(b"not a picture")
    return folder


def _pairs(table: pa.Table, first: str, second: str) -> set[tuple[str, str]]:
    return set(zip(table[first].to_pylist(), table[second].to_pylist(), strict=True))


def test_same_pictures_in_a_folder(films: Path):
    with pytest.warns(UserWarning, match="00099.jpg: skipped"):
        copies = find_same_pictures(films)

    assert _pairs(copies, "film_id", "same_as") == {("00011", "00001"), ("00012", "00002")}
    views = dict(zip(copies["film_id"].to_pylist(), copies["view"].to_pylist(), strict=True))
    assert views["00011"] == "rot180"


def test_lookalikes_and_visits_in_a_folder(films: Path):
    with pytest.warns(UserWarning):
        lookalikes = find_lookalikes(films)
    with pytest.warns(UserWarning):
        visits = find_visits(films)

    assert _pairs(lookalikes, "film_id", "other_film_id") == {
        ("00001", "00011"),
        ("00002", "00012"),
    }
    assert lookalikes["component"].to_pylist() == ["00001", "00002"]
    assert _pairs(visits, "film_id", "other_film_id") == {("00003", "00013")}
    assert min(visits["cells"].to_pylist()) >= MIN_CELLS


def test_curate_returns_the_manifest_and_audit_the_flagged_pairs(tmp_path: Path):
    stems = [f"{i:04d}1" for i in range(1, 41)]
    sources = {stem: (film_bytes(n), voc(stem)) for n, stem in enumerate(stems, 1)}
    sources["00991"] = (_reencoded(sources["00051"][0]), voc("00991"))
    build = tmp_path / "build"

    manifest = curate(write_source(tmp_path / "source", sources), build, workers=1)

    images = {r["film_id"]: r for r in manifest.to_pylist() if r["kind"] == "image"}
    assert len(images) == 41 and images["00991"]["fate"] == "dropped"
    assert {images[s]["split"] for s in stems} == {"train", "validation", "test"}
    assert audit_splits(build, permutations=9).num_rows == 0  # the build does not leak
    with pytest.raises(CurationError, match="unknown setting 'sead'"):
        curate(tmp_path / "source", build, sead=1)
    # a dataset that leaks: 00051 in train, its re-encoded copy in test
    shards = tmp_path / "leaky"
    shards.mkdir()
    for split, names in (("train", stems[:20]), ("test", ["00991", *stems[20:]])):
        rows = {"film_id": names, "image": [{"bytes": sources[n][0]} for n in names]}
        pq.write_table(pa.table(rows), shards / f"{split}-00000-of-00001.parquet")

    flagged = audit_splits(shards, permutations=9)

    assert ("00051", "00991") in _pairs(flagged, "film_id", "other_film_id")
    assert set(flagged["split"].to_pylist()) == {"train"}
    assert json.loads(flagged.schema.metadata[b"findings"])


def test_the_examples_of_docs_api_run_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """In a folder laid out as after ``make splits`` (a smaller sample, for time)."""
    write_sample_archive(tmp_path / "build/sample/periapical-sample.zip", seed=0, films=45)
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 3
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.warns(UserWarning):
        for block in blocks:
            exec(compile(block, str(DOCS), "exec"), {})  # the docs' own examples
    said = printed.getvalue()
    assert "films kept; by split" in said and "look-alike pairs in" in said
    assert "flagged pairs; clean" in said
