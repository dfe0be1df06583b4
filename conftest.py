"""Shared fixtures: the synthetic sample source and a dataset built from it, made once per
test process (the sample is deterministic, so every process builds the same bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Outcome, Settings, Source, curate
from curation.sample import SampleTruth, write_sample_archive
from curation.source.download import fetch_source
from tests.sample_reading import SMALL_FILMS, SMALL_SEED

SAMPLE_FILMS = 120


@pytest.fixture(scope="session")
def small_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SampleTruth]:
    """A small sample archive with every planted case (the sample tests)."""
    dest = tmp_path_factory.mktemp("small") / "sample.zip"
    return dest, write_sample_archive(dest, seed=SMALL_SEED, films=SMALL_FILMS)


@pytest.fixture(scope="session")
def default_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SampleTruth]:
    """The default archive, as make splits writes it."""
    dest = tmp_path_factory.mktemp("default") / "sample.zip"
    return dest, write_sample_archive(dest)


@pytest.fixture(scope="session")
def sample_zip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SampleTruth]:
    dest = tmp_path_factory.mktemp("sample") / "periapical-sample.zip"
    return dest, write_sample_archive(dest, seed=0, films=SAMPLE_FILMS)


@pytest.fixture(scope="session")
def sample_source(sample_zip, tmp_path_factory: pytest.TempPathFactory) -> Source:
    work = tmp_path_factory.mktemp("source")
    return fetch_source(str(sample_zip[0]), work, work / "source.lock.json", progress=False)


@pytest.fixture(scope="session")
def sample_outcome(
    sample_source: Source, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Outcome]:
    build = tmp_path_factory.mktemp("build")
    return build, curate(sample_source, build, Settings(), executor=LocalExecutor(1))


@pytest.fixture(scope="session")
def sample_build(sample_outcome) -> Path:
    """A build folder made by the whole chain from the sample source."""
    return sample_outcome[0]


@pytest.fixture(scope="session")
def sample_dataset_dir(sample_build: Path) -> Path:
    """The dataset folder (``data/{split}-00000-of-00001.parquet``) of the sample build."""
    return sample_build / "dataset"
