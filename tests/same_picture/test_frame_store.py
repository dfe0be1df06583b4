"""The frame check's files (``curation.same_picture.frame_store``): each content's features in
the features store, each pair's comparison in the frames store, so the driver holds neither.

A rerun must compute nothing, a damaged store file must cost only its recomputation (the
outputs stay the same), and no worker job or result may carry a film's descriptors.
"""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from curation.api import _read_folder
from curation.core.store import ArrayStore
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.features import features as features_module
from curation.features.features import FEATURES_VERSION
from curation.same_picture.detect import Progress, find_same_pictures
from curation.same_picture.pixel_cache import ComparisonCache
from support import film_kit as kit

# A job names its films and their contents; a film's descriptors alone are 32 bytes a feature
# (thousands of features a film here).
JOB_BYTES = 2048
RESULT_BYTES = 1024


def _visit(picture: np.ndarray) -> np.ndarray:
    """Another visit: turned by 1 degree, 2% closer (the shortlist proposes it; the frame
    check refuses it)."""
    height, width = picture.shape
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), 1.0, 1.02)
    return cv2.warpAffine(picture.astype(np.float32), matrix, (width, height))


@pytest.fixture(scope="module")
def films(tmp_path_factory) -> Path:
    """Two films, each with a crop, one with a pad and a visit, one filed twice, and an
    unrelated film."""
    folder = tmp_path_factory.mktemp("films")
    for seed in (5, 17):
        picture = kit.film(seed)
        kit.save(picture, folder / f"{seed}0.jpg")
        kit.save(kit.cropped(picture, 0.06), folder / f"{seed}1.jpg")
    picture = kit.film(5)
    kit.save(kit.padded(picture, 0.10), folder / "52.jpg")
    kit.save(_visit(picture), folder / "53.jpg")
    (folder / "again").mkdir()
    shutil.copyfile(folder / "170.jpg", folder / "again" / "172.jpg")
    kit.save(kit.film(105), folder / "1050.jpg")
    return folder


class _Bar:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


class RecordingMap:
    """Runs jobs in this process, keeping the pickled size of every job and result of the
    frame check's worker functions."""

    def __init__(self) -> None:
        self.jobs: dict[str, list[int]] = {}
        self.results: dict[str, list[int]] = {}

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 16
    ) -> Iterator[Any]:
        results = [function(job) for job in jobs]
        if function.__module__.startswith("curation.same_picture.frame_"):
            sizes = self.jobs.setdefault(function.__name__, [])
            sizes.extend(len(pickle.dumps(job)) for job in jobs)
            sizes = self.results.setdefault(function.__name__, [])
            sizes.extend(len(pickle.dumps(result)) for result in results)
        return iter(results)


def _find(folder: Path, cache: Path, map: RecordingMap | None = None) -> str:
    """The confirmed pairs, as text, of the films of ``folder`` with the caches in ``cache``."""
    films = _read_folder(folder, 1)
    progress = Progress(_Bar().total, _Bar().advance, lambda _what, _total: _Bar())
    confirmed = find_same_pictures(
        films.root,
        films.records,
        films.hashes,
        SAME_PICTURE_RADIUS,
        ComparisonCache(cache / "pixels.parquet"),
        map or RecordingMap(),
        progress,
    )
    return repr(confirmed.pairs)


@pytest.fixture(scope="module")
def first_build(films, tmp_path_factory) -> tuple[Path, str, RecordingMap]:
    cache = tmp_path_factory.mktemp("cache")
    recorded = RecordingMap()
    return cache, _find(films, cache, recorded), recorded


def _files(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in sorted(folder.rglob("*")) if p.is_file()}


class _NoFeatures:
    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"local features computed or matched again (cv2.{name})")


def _feature_file(cache: Path, films: Path, name: str) -> Path:
    records = _read_folder(films, 1).records
    by_name = {Path(r.path).name: r.sha256 for r in records}
    return ArrayStore(cache / "features", FEATURES_VERSION).path(by_name[name])


def test_every_content_is_stored_once_and_a_rerun_computes_nothing(
    films, first_build, tmp_path, monkeypatch
):
    cache, pairs, _ = first_build
    assert "cropped" in pairs and "padded" in pairs  # the frame check confirmed them
    records = _read_folder(films, 1).records
    store = ArrayStore(cache / "features", FEATURES_VERSION)
    assert all(r.sha256 in store for r in records)
    assert len(list(store.folder.glob("*/*.arrays"))) == len({r.sha256 for r in records})
    again = tmp_path / "cache"
    shutil.copytree(cache, again)
    before = _files(again)
    monkeypatch.setattr(features_module, "cv2", _NoFeatures())
    assert _find(films, again) == pairs
    assert _files(again) == before  # nothing computed, nothing written


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "removed"])
def test_a_damaged_feature_file_is_computed_again_with_the_same_outputs(
    films, first_build, tmp_path, damage
):
    cache, pairs, _ = first_build
    again = tmp_path / "cache"
    shutil.copytree(cache, again)
    damaged = _feature_file(again, films, "51.jpg")  # a crop the frame check confirms
    whole = damaged.read_bytes()
    if damage == "truncated":
        damaged.write_bytes(whole[: len(whole) // 2])
    elif damage == "overwritten":  # same size: only reading it tells
        damaged.write_bytes(bytes(len(whole)))
    else:
        damaged.unlink()
    assert _find(films, again) == pairs
    assert damaged.read_bytes() == whole


def test_damaged_frame_comparisons_are_made_again_with_the_same_outputs(
    films, first_build, tmp_path
):
    cache, pairs, _ = first_build
    again = tmp_path / "cache"
    shutil.copytree(cache, again)
    stored = sorted((again / "frames").glob("*/*/*.arrays"))
    assert len(stored) >= 3  # the confirmed crops and pad, and the refused visit
    whole = [path.read_bytes() for path in stored]
    for path in stored:
        path.write_bytes(b"not a comparison")
    assert _find(films, again) == pairs
    assert [path.read_bytes() for path in stored] == whole


def test_no_worker_job_or_result_carries_descriptors(first_build):
    _, _, recorded = first_build
    assert len(recorded.jobs) == 2  # the features' and the frames' worker functions
    for function, sizes in recorded.jobs.items():
        assert sizes and max(sizes) < JOB_BYTES, function
    for function, sizes in recorded.results.items():
        assert max(sizes) < RESULT_BYTES, function
