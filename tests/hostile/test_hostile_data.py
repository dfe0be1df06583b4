"""Hostile data, round three: one command per build folder, outputs verified together, labels
never lost to XML the reader does not fully understand, a film rewritten during a build,
patient text outside the picture, fullwidth digits, a source too small for the splits, and
the temporary files of killed runs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, Source, curate
from curation.cli.app import app
from curation.core.atomic import atomic_path, remove_leftovers
from curation.core.errors import PericurateError
from curation.core.jpeg_publish import publishable_jpeg
from curation.index.voc import AnnotationError, read_voc
from curation.lookalikes import LookalikeConfig
from curation.publish import build as build_module
from curation.publish.build_check import BuildMismatch, verify_build
from tests.hostile_films import ANNOTS, BOX, FILMS, film_bytes, voc, write_source

PATIENT = b"PN12345"
FULLWIDTH = "\uff13\uff19\uff19\uff191"  # fullwidth 3999 and an ASCII 1: \d takes all five
GOOD_FILMS = 40  # above the 35 films the default splits need


def good_films(count: int = GOOD_FILMS) -> dict[str, tuple[bytes, str]]:
    return {f"{3000 + k}1": (film_bytes(100 + k), voc(f"{3000 + k}1")) for k in range(count)}


def film_with_patient_text() -> bytes:
    """A film carrying a patient number in a COM comment, in EXIF, in an APP13 segment and
    after its end marker: the places no reader of the dataset looks."""
    picture = Image.open(io.BytesIO(film_bytes(77)))
    exif = Image.Exif()
    exif[0x010E] = f"patient {PATIENT.decode()}"  # ImageDescription
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", quality=95, comment=PATIENT, exif=exif.tobytes())
    data = buffer.getvalue()
    app13 = b"Photoshop 3.0\x00" + PATIENT
    data = data[:2] + b"\xff\xed" + (len(app13) + 2).to_bytes(2, "big") + app13 + data[2:]
    return data + b"name: " + PATIENT + b"\n"


B = "<bndbox><xmin>40</xmin><ymin>30</ymin><xmax>120</xmax><ymax>70</ymax></bndbox>"
UNDERSTOOD_NOT = {
    "namespaced object": (
        f"<annotation xmlns:v='urn:v'><v:object><name>4</name>{B}</v:object></annotation>",
        "namespaced element",
    ),
    "capitalised object": (
        f"<annotation><Object><name>4</name>{B}</Object></annotation>",
        "<Object> is not VOC's <object>",
    ),
    "two names": (
        f"<annotation><object><name>3</name><name>5</name>{B}</object></annotation>",
        "<name> given twice",
    ),
    "two boxes": (
        f"<annotation><object><name>4</name>{B}{B.replace('40', '200')}</object></annotation>",
        "<bndbox> given twice",
    ),
    "two xmin": (
        "<annotation><object><name>4</name><bndbox><xmin>40</xmin><xmin>90</xmin>"
        "<ymin>30</ymin><xmax>120</xmax><ymax>70</ymax></bndbox></object></annotation>",
        "<xmin> given twice",
    ),
    "unknown element in an object": (
        f"<annotation><object><name>4</name><grade>5</grade>{B}</object></annotation>",
        "unknown element <grade> in <object>",
    ),
    "element inside a value": (
        f"<annotation><object><name>4<b>5</b></name>{B}</object></annotation>",
        "<name> holds elements",
    ),
}


@pytest.mark.parametrize("case", sorted(UNDERSTOOD_NOT))
def test_annotations_not_fully_understood_are_refused_with_the_reason(case):
    text, reason = UNDERSTOOD_NOT[case]
    with pytest.raises(AnnotationError, match=reason.replace("(", r"\(")):
        read_voc(io.BytesIO(text.encode()))


def test_a_plain_voc_annotation_still_reads():
    (box,) = read_voc(io.BytesIO(voc("00011").encode())).boxes
    assert (box.xmin, box.ymin, box.xmax, box.ymax, box.grade) == (*map(float, BOX), "4")


@pytest.fixture(scope="module")
def hostile_source(tmp_path_factory) -> Path:
    films = good_films()
    for k, case in enumerate(sorted(UNDERSTOOD_NOT)):
        films[f"{5000 + k}1"] = (film_bytes(200 + k), UNDERSTOOD_NOT[case][0])
    films["60001"] = (film_with_patient_text(), voc("60001"))
    root = write_source(tmp_path_factory.mktemp("hostile-data-source"), films)
    (root / FILMS / f"{FULLWIDTH}.jpg").write_bytes(film_bytes(300))
    (root / ANNOTS / f"{FULLWIDTH}.xml").write_text(voc("39991"), encoding="utf-8")
    return root


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


def _rewrite(path: Path, change) -> None:
    rows = pq.read_table(path).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)


def _move_first_film(rows: list[dict]) -> None:
    rows[0]["split"] = "test" if rows[0]["split"] != "test" else "train"


def _summary_of_another_run(copy: Path) -> None:
    summary = json.loads((copy / "curation.json").read_text())
    summary["splits"]["test"]["films"] += 1
    summary["splits"]["train"]["films"] -= 1
    (copy / "curation.json").write_text(json.dumps(summary))


def _shard_of_another_run(copy: Path) -> None:
    data = copy / "dataset" / "data"
    shutil.copy(data / "validation-00000-of-00001.parquet", data / "test-00000-of-00001.parquet")


MIXED = {
    "clusters of another run": (
        lambda c: _rewrite(c / "clusters.parquet", _move_first_film),
        "clusters.parquet",
    ),
    "summary of another run": (_summary_of_another_run, "curation.json"),
    "shard of another run": (_shard_of_another_run, "test-00000-of-00001.parquet"),
    "manifest without published bytes": (
        lambda c: _rewrite(
            c / "manifest.parquet", lambda rows: [r.update(published_sha256="") for r in rows]
        ),
        "manifest.parquet",
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


def pericurate(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def cli_build(hostile_source, tmp_path) -> Path:
    build = tmp_path / "build"
    assert pericurate("download", hostile_source, "--build", build).exit_code == 0
    return build


BUILD = ["--workers", "1", "--no-fail-on-rejected"]


def test_a_build_whose_outputs_disagree_fails_and_is_never_up_to_date(cli_build, monkeypatch):
    write_clusters = build_module.write_clusters

    def another_runs_clusters(path, clusters, split_of):
        write_clusters(path, clusters, split_of)
        _rewrite(path, _move_first_film)

    monkeypatch.setattr(build_module, "write_clusters", another_runs_clusters)
    failed = pericurate("build", "--build", cli_build, *BUILD)
    assert failed.exit_code == 2, failed.output
    (line,) = [x for x in failed.output.splitlines() if "clusters.parquet" in x]
    assert line.startswith(str(cli_build / "clusters.parquet"))
    assert "Traceback" not in failed.output
    assert not (cli_build / "work" / "build.fingerprint").exists()
    monkeypatch.undo()
    again = pericurate("build", "--build", cli_build, *BUILD)
    assert again.exit_code == 0 and "up to date" not in again.output, again.output
    verify_build(cli_build)


HOLDER = """
import sys
from pathlib import Path
from curation.core.build_lock import holding_build_folder
with holding_build_folder(Path(sys.argv[1]), "build"):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(cli_build):
    """The build folder held by another process, as a running build holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(cli_build)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    yield cli_build
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=30)


@pytest.mark.parametrize(
    "command",
    [
        ["build", *BUILD],
        ["index"],
        ["card"],
        ["push", "--repo", "o/n", "--dry-run"],
        ["download", "SOURCE"],
        ["audit", "BUILD"],
    ],
)
def test_a_second_command_on_a_build_folder_in_use_is_refused_in_one_sentence(
    held, hostile_source, command
):
    args = [hostile_source if a == "SOURCE" else held if a == "BUILD" else a for a in command]
    if "BUILD" not in command:
        args += ["--build", held]
    result = pericurate(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        f"{held}: another pericurate command is using this build folder, so "
        f"'{command[0]}' did not start; wait for it to finish or use another build folder."
    ]
    assert not (held / "manifest.parquet").exists()


def test_leftovers_of_killed_runs_are_removed_when_a_run_starts(cli_build):
    dead = 2**22 + 12345  # above pid_max's default: no process has it
    leftovers = [
        cli_build / "dataset" / "data" / f".train-00000-of-00001.parquet.{dead}-7.tmp",
        cli_build / "cache" / f".index.parquet.{dead}-7.tmp",
        cli_build / "work" / f".source.json.{dead}-7.tmp",
    ]
    alive = cli_build / "cache" / f".hashes.parquet.{os.getppid()}-7.tmp"
    source = cli_build / "extracted" / f".film.jpg.{dead}-7.tmp"
    for path in [*leftovers, alive, source]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    result = pericurate("index", "--build", cli_build, "--workers", "1", "--no-fail-on-rejected")
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in leftovers)
    assert alive.exists() and source.exists()  # a running process's, and the source's


def test_an_atomic_write_cut_short_leaves_a_file_the_next_run_removes(tmp_path):
    target = tmp_path / "dataset" / "data" / "train-00000-of-00001.parquet"
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\nfrom pathlib import Path\n"
            "from curation.core.atomic import atomic_path\n"
            "with atomic_path(Path(sys.argv[1])) as tmp:\n"
            "    tmp.write_bytes(b'half a shard')\n    os._exit(9)\n",
            str(target),
        ],
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert killed.returncode == 9
    (left,) = target.parent.iterdir()
    assert remove_leftovers(tmp_path) == [left] and not left.exists()
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
    assert [p.name for p in target.parent.iterdir()] == [target.name]
