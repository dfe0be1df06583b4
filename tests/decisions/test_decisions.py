"""Curator decisions (``BUILD/decisions.toml``): the build honours them, records them in
``curation.json``, the card and the review page, the audit of the build reads them, and a
changed file makes the build run again. A bad file is refused in one sentence."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from curation.cli.app import app
from tests.hostile_films import film_bytes, voc, write_source

COPY, ITS_FILM = "00991", "00051"  # a re-encoded copy filed as a film of its own
UP_TO_DATE = "up to date"


def pericurate(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def _reencoded(jpeg: bytes) -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(jpeg)).save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


@pytest.fixture
def build(tmp_path: Path) -> Path:
    """A folder source of 40 films and a re-encoded copy of one, downloaded into a build."""
    films = {f"{i:04d}1": (film_bytes(i), voc(f"{i:04d}1")) for i in range(1, 41)}
    films[COPY] = (_reencoded(films[ITS_FILM][0]), voc(COPY))
    source = write_source(tmp_path / "source", films)
    folder = tmp_path / "build"
    assert pericurate("download", source, "--build", folder).exit_code == 0
    return folder


def _build(folder: Path, *extra: str):
    result = pericurate("build", "--build", folder, "--workers", "1", *extra)
    assert result.exit_code == 0, result.output
    return result


def _fates(folder: Path) -> dict[str, tuple[str, str]]:
    rows = pq.read_table(folder / "manifest.parquet").to_pylist()
    return {r["film_id"]: (r["fate"], r["reason"]) for r in rows if r["path"].endswith(".jpg")}


def _splits(folder: Path) -> dict[str, tuple[str, str]]:
    """Film id -> (cluster id, split)."""
    rows = pq.read_table(folder / "clusters.parquet").to_pylist()
    return {r["film_id"]: (r["cluster_id"], r["split"]) for r in rows}


def _decide(folder: Path, text: str) -> str:
    (folder / "decisions.toml").write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def _shown(folder: Path, text: str) -> None:
    """Recorded in curation.json's decisions, and shown on the card and the review page."""
    pericurate("card", "--build", folder)
    recorded = json.loads((folder / "curation.json").read_text())["decisions"]
    assert text in json.dumps(recorded)
    assert text in (folder / "dataset" / "README.md").read_text()
    assert text in (folder / "review" / "index.html").read_text()


def _audit(folder: Path, *extra: str) -> tuple[int, dict]:
    out = folder.parent / "audit"
    result = pericurate("audit", folder, "--out", out, "--permutations", "9", *extra)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads((out / "report.json").read_text())


def _move_to_test(folder: Path, film_id: str) -> None:
    """Move one film's row from its shard to the test shard (a leak made by hand)."""
    data = folder / "dataset" / "data"
    test = next(data.glob("test-*.parquet"))
    for shard in sorted(data.glob("*.parquet")):
        table = pq.read_table(shard)
        ids = table.column("film_id").to_pylist()
        if film_id in ids and shard != test:
            row = ids.index(film_id)
            moved = table.slice(row, 1)
            rest = pa.concat_tables([table.slice(0, row), table.slice(row + 1)])
            pq.write_table(rest, shard)
            pq.write_table(pa.concat_tables([pq.read_table(test), moved]), test)
            return
    raise AssertionError(f"{film_id} is not outside the test shard")


def test_a_same_picture_drop_overruled(build: Path):
    _build(build)
    assert _fates(build)[COPY][0] == "dropped"  # the chain's own call: the same picture
    sha256 = _decide(
        build,
        f'[[not_same_picture]]\nfilms = ["{ITS_FILM}", "{COPY}"]\nreason = "two exposures"\n',
    )

    rebuilt = _build(build, "--lookalike-distance", "0")  # 0: no look-alike joins them

    assert f"build: {UP_TO_DATE}" not in rebuilt.stderr
    fates = _fates(build)
    assert fates[COPY][0] == fates[ITS_FILM][0] == "kept"
    recorded = json.loads((build / "curation.json").read_text())["decisions"]
    assert recorded["sha256"] == sha256
    assert recorded["not_same_picture"] == [{"films": [ITS_FILM, COPY], "reason": "two exposures"}]
    _shown(build, "two exposures")
    # the audit: with the copy in another split, its pair is set aside with a note, not
    # reported; without the decisions file, the same dataset leaks
    _move_to_test(build, COPY if _splits(build)[COPY][1] != "test" else ITS_FILM)
    _, report = _audit(build)
    assert not any("ahash distance" in finding for finding in report["findings"])
    assert any("two exposures" in note for note in report["set_aside_by_curator"])
    (build / "decisions.toml").unlink()
    _, report = _audit(build)
    assert any("ahash distance" in finding for finding in report["findings"])


def test_two_films_joined_as_one_patient(build: Path):
    _build(build)
    split_of = _splits(build)
    train = next(f for f, (_, s) in sorted(split_of.items()) if s == "train")
    test = next(f for f, (_, s) in sorted(split_of.items()) if s == "test")
    _decide(build, f'[[one_patient]]\nfilms = ["{train}", "{test}"]\nreason = "same patient"\n')
    # the audit of the build made before the decision reads it: one patient across splits
    code, report = _audit(build, "--strict-patients")
    listed = report["cross_split_visits"]["listed"]
    assert code == 1
    assert {(v["film"]["film_id"], v["other"]["film_id"]) for v in listed} >= {(train, test)}
    assert any(v.get("curator_reason") == "same patient" for v in listed)

    rebuilt = _build(build)

    assert f"build: {UP_TO_DATE}" not in rebuilt.stderr  # the decisions file is an input
    assert f"build: {UP_TO_DATE}" in _build(build).stderr  # and only a changed one counts
    split_of = _splits(build)
    assert split_of[train] == split_of[test]  # one component, one split
    _shown(build, "same patient")
    assert (
        "one patient (the curator&#39;s decision)" in (build / "review" / "index.html").read_text()
    )
    code, report = _audit(build, "--strict-patients")
    assert not any(v.get("curator_reason") for v in report["cross_split_visits"]["listed"])


def test_a_film_rejected_by_the_curator(build: Path):
    _decide(build, '[[reject]]\nfilm = "00071"\nreason = "film of a child"\n')

    _build(build)  # without --no-fail-on-rejected: a decision is not a fault of the source

    assert _fates(build)["00071"] == ("rejected", "rejected by the curator: film of a child")
    _shown(build, "film of a child")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[reject]\n", "not valid TOML"),
        ('[[merge]]\nfilms = ["00011", "00021"]\nreason = "x"\n', "unknown section 'merge'"),
        ('[[one_patient]]\nfilms = ["00011"]\nreason = "x"\n', "at least two different films"),
        ('[[reject]]\nfilm = 11\nreason = "x"\n', "quoted strings"),
        ('[[reject]]\nfilm = "00011"\n', "needs a reason"),
        ('[[not_same_picture]]\nfilms = ["00011", "77777"]\nreason = "x"\n', "77777"),
    ],
)
def test_a_bad_decisions_file_is_one_sentence(build: Path, text: str, said: str):
    _decide(build, text)

    result = pericurate("build", "--build", build, "--workers", "1")

    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert said in message and str(build / "decisions.toml") in message
    assert len(message.splitlines()) == 1 and "Traceback" not in result.output
