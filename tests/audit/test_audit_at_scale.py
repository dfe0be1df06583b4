"""The audit's visit check as distributed work: the workers' visit features stay in a store
below the audit's work folder, no job or result carries descriptors, and the report is the
same whether the per-file work runs in process or over worker processes."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.audit.audit import run_audit
from curation.core.parallel import LocalMap
from curation.core.store import ArrayStore
from curation.leaks.visits import stored_candidates
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures, visit_features_of
from curation.visits.find import candidates
from curation.visits.stored import MissingDescriptors, stored_features
from tests.audit.audit_runs import run

FILMS = 10  # distinct films per split
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


def write_target(folder: Path) -> Path:
    """Two splits of distinct films; the first test film is a byte copy of a train film."""
    films = {
        "train": [textured(n) for n in range(FILMS)],
        "test": [textured(3)] + [textured(100 + n) for n in range(FILMS - 1)],
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
    assert stored_candidates(store, keys, LocalMap(1)) == candidates(features, LocalMap(1))
    assert (4, 12) in candidates(features, LocalMap(1))


def test_a_store_file_a_node_cannot_read_is_one_sentence_naming_it(tmp_path: Path):
    store = ArrayStore(tmp_path / "store", DESCRIPTORS_VERSION)
    with pytest.raises(
        MissingDescriptors,
        match=r"\.arrays: the film's visit descriptors .* same path on every node",
    ):
        stored_features(store, "ab" * 32)
