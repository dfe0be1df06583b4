"""The audit's visit check as distributed work: the workers' visit features stay in a store
below the audit's work folder, no job or result carries descriptors, and the report is the
same whether the per-file work runs in process or over worker processes. However many pairs
the audit verifies, its page, its drawings and its console show at most ``SHOWN``."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from rich.console import Console

from curation.audit import page
from curation.audit.audit import run_audit
from curation.audit.page import shown_visits
from curation.audit.report import print_summary, write_report
from curation.core.parallel import LocalMap
from curation.core.store import ArrayStore
from curation.leaks.visits import CrossSplitMatch, visit_candidates
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures, visit_features_of
from curation.visits.find import candidates
from curation.visits.retrieval import as_tuples
from curation.visits.stored import MissingDescriptors, stored_features
from tests.audit.audit_runs import run

FILMS = 10  # distinct films per split
COPIED = 12  # train films copied byte for byte into test: a pair verified by features each
SIZE = (256, 128)


def textured(seed: int) -> bytes:
    """A smooth grey texture with grain, as a JPEG: SIFT finds hundreds of features in it."""
    rng = np.random.default_rng(seed)
    coarse = (rng.random((SIZE[1] // 16, SIZE[0] // 16)) * 255).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize(SIZE, Image.Resampling.BICUBIC))
    grain = np.clip(smooth + rng.normal(0, 8, smooth.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(grain).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def write_target(folder: Path, copies: int = 1) -> Path:
    """Two splits of distinct films; the first ``copies`` test films are byte copies of train
    films."""
    films = {
        "train": [textured(n) for n in range(FILMS)],
        "test": [textured(3 + n) for n in range(copies)]
        + [textured(100 + n) for n in range(FILMS - copies)],
    }
    folder.mkdir(parents=True)
    for split, images in films.items():
        table = pa.table({"image": pa.array(images, pa.binary())})
        pq.write_table(table, folder / f"{split}-00000-of-00001.parquet", row_group_size=4)
    return folder


class RecordingMap:
    """A map in this process that keeps every job and result it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        name = getattr(function, "__name__", None) or function.func.__name__  # type: ignore[attr-defined]
        for job in jobs:
            result = function(job)
            self.seen += [(f"{name} job", job), (f"{name} result", result)]
            yield result


def carried(value: Any) -> Iterator[Any]:
    """``value`` and everything inside it (containers, dataclass fields)."""
    yield value
    if isinstance(value, list | tuple | set):
        for item in value:
            yield from carried(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from carried(item)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from carried(getattr(value, name))


def is_descriptors(value: Any) -> bool:
    """A film's visit features or RootSIFT descriptors (uint8; the vocabulary's centres,
    float32, travel once per job)."""
    return isinstance(value, VisitFeatures) or (
        isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.shape[-1:] == (128,)
    )


def test_no_visit_job_or_result_carries_descriptors(tmp_path: Path):
    target = write_target(tmp_path / "target")
    recording = RecordingMap()
    out = tmp_path / "out"
    audit = run_audit(str(target), permutations=99, map=recording, work_below=out)
    # The visit check ran and found the copy: the pair is verified from the stored features.
    assert [(audit.films[v.a].split, audit.films[v.b].split) for v in audit.visits] == [
        ("train", "test")
    ]
    carrying = [what for what, value in recording.seen if any(map(is_descriptors, carried(value)))]
    assert carrying == []
    stores = {
        v.root for _, job in recording.seen for v in carried(job) if isinstance(v, ArrayStore)
    }
    assert stores and all(store.is_relative_to(out) for store in stores)
    assert list(out.iterdir()) == []  # the work folder is removed when the audit ends


def test_report_is_the_same_in_process_and_over_two_worker_processes(tmp_path: Path):
    target = write_target(tmp_path / "target")
    one = run(target, "--out", tmp_path / "one", "--permutations", "99", "--workers", "1")
    two = run(
        target, "--out", tmp_path / "two", "--permutations", "99",
        "--executor", "local", "--workers", "2",
    )  # fmt: skip
    assert one.exit_code == two.exit_code == 1, (one.output, two.output)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*"))
    assert Path("visits/visit-001.png") in files
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*"))
    for name in files:
        if (tmp_path / "one" / name).is_file():
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_stored_candidates_are_the_in_memory_candidates(tmp_path: Path):
    images = [textured(n) for n in range(12)] + [textured(4)]
    features = [visit_features_of(data) for data in images]
    store = ArrayStore(tmp_path / "store", DESCRIPTORS_VERSION)
    keys = [f"{n:064x}" for n in range(len(images))]
    for key, found in zip(keys, features, strict=True):
        store.put(
            key,
            {
                "points": found.points,
                "descriptors": found.descriptors,
                "size": np.array(found.size, np.int64),
            },
        )
    read = stored_features(store, keys[5])
    assert np.array_equal(read.descriptors, features[5].descriptors)
    assert np.array_equal(read.points, features[5].points) and read.size == features[5].size
    assert as_tuples(visit_candidates(store, keys, LocalMap(1))) == candidates(
        features, LocalMap(1)
    )
    assert (4, 12) in candidates(features, LocalMap(1))


def test_a_store_file_a_node_cannot_read_is_one_sentence_naming_it(tmp_path: Path):
    store = ArrayStore(tmp_path / "store", DESCRIPTORS_VERSION)
    with pytest.raises(
        MissingDescriptors,
        match=r"\.arrays: the film's visit descriptors .* same path on every node",
    ):
        stored_features(store, "ab" * 32)


@pytest.fixture(scope="module")
def copied_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test film a byte copy of a train film: ``COPIED`` pairs verified across splits."""
    folder = tmp_path_factory.mktemp("copied")
    for split in ("train", "test"):
        table = pa.table({"image": pa.array([textured(n) for n in range(COPIED)], pa.binary())})
        pq.write_table(table, folder / f"{split}-00000-of-00001.parquet", row_group_size=4)
    return folder


def test_the_page_and_its_drawings_show_at_most_shown_pairs_and_report_json_lists_all(
    copied_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(page, "SHOWN", 5)
    audit = run_audit(str(copied_target), permutations=99, map=LocalMap(1))
    assert len(audit.visits) == COPIED and not audit.patient_visits
    out = tmp_path / "out"
    write_report(audit, out)
    visits = json.loads((out / "report.json").read_text())["cross_split_visits"]
    assert len(visits["listed"]) == COPIED and visits["drawn"] == 5
    drawn = sorted(entry["drawing"] for entry in visits["listed"] if entry["drawing"])
    assert drawn == [f"visits/visit-{n:03d}.png" for n in range(1, 6)]
    assert sorted(f"visits/{p.name}" for p in (out / "visits").iterdir()) == drawn
    html = (out / "report.html").read_text()
    section = html[html.index('id="visits"') : html.index('id="flagged"')]
    assert f"({COPIED}: 0 visits of one patient)" in section
    assert section.count('class="card flagged"') == 5
    assert f"the other {COPIED - 5} are listed in report.json" in section


def test_the_console_names_the_visits_of_one_patient_the_page_shows_and_counts_the_rest(
    copied_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(page, "SHOWN", 5)
    audit = run_audit(str(copied_target), permutations=99, map=LocalMap(1))
    audit.visits = [replace(v, same_picture=False) for v in audit.visits]  # all visits
    out = tmp_path / "out"
    write_report(audit, out)
    console = Console(record=True, width=400)
    print_summary(audit, out, console)
    lines = console.export_text().splitlines()
    named = [line for line in lines if line.startswith("PATIENT visit of one patient")]
    assert len(named) == 5
    assert all((out / line.split("; ")[-1].rstrip(")")).is_file() for line in named)
    more = [line for line in lines if line.startswith("PATIENT and ")]
    assert more == [
        f"PATIENT and {COPIED - 5} more visits of one patient across splits: {out / 'report.json'}"
    ]


def test_visits_of_one_patient_are_shown_first_then_the_curators_then_copies(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(page, "SHOWN", 3)
    copy = CrossSplitMatch(0, 1, 90, 80, 0.89, same_picture=True)
    visit = CrossSplitMatch(2, 3, 90, 40, 0.44, same_picture=False)
    decided = CrossSplitMatch(4, 5, 0, 0, 0.0, same_picture=False, decided="one patient")
    later_visit = CrossSplitMatch(6, 7, 90, 30, 0.33, same_picture=False)
    assert shown_visits([copy, decided, visit, later_visit]) == [visit, later_visit, decided]
    assert shown_visits([copy, decided]) == [decided, copy]
