"""Every part of ``make bench`` (``bench.run.PARTS``) run at the tiny sizes ``bench.sizes.TINY``,
so a change that breaks a part fails here instead of at the next ``make bench``: the part
runs, and what it records has its entries with figures in them. No figure is checked
against a goal (this is not a timing test); real films are not read, and the parts that
need what a machine may lack (``bench.run.MAY_SKIP``) may record a plain skip."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from filelock import FileLock

from bench import run, sizes
from bench.common.corpus import corpus_zip
from bench.common.splits_bench import build_draft, draft_build
from curation.sample import truth_path

SKIP_KEYS = {"measured", "why"}


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The tiny corpus in both its layouts and the bundled sample, with their truth files,
    and the draft build that ``audit`` and ``planted`` read, made once per session: under
    ``pytest -n`` the workers share the folder above their own, one making it while the
    others wait on its lock."""
    own = tmp_path_factory.getbasetemp()
    shared = (own if worker_id == "master" else own.parent) / "bench-tiny-corpus"
    shared.mkdir(exist_ok=True)
    with FileLock(shared.with_suffix(".lock")):
        archive = corpus_zip(sizes.TINY.films, folder=shared)
        corpus_zip(sizes.TINY.films, folder=shared, all_copies_among_originals=False)
        run.sample(replace(sizes.TINY, corpus_dir=shared), sizes.TINY.films)
        if not (draft_build(shared / "builds") / "manifest.parquet").is_file():
            build_draft(sys.executable, archive, shared / "builds")
    return shared


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, tiny_corpus: Path) -> sizes.Sizes:
    """The tiny sizes with one corpus folder per worker, holding copies of the shared
    archives and draft build (as ``splits`` leaves them in ``make bench``), so no two
    workers build into one folder."""
    folder = tmp_path_factory.mktemp("bench-corpus")
    for archive in tiny_corpus.glob("*.zip"):
        shutil.copyfile(archive, folder / archive.name)
        shutil.copyfile(truth_path(archive), truth_path(folder / archive.name))
    shutil.copytree(tiny_corpus / "builds", folder / "builds")
    return replace(sizes.TINY, corpus_dir=folder)


def _is_skip(record: object) -> bool:
    return (
        isinstance(record, dict)
        and set(record) == SKIP_KEYS
        and record["measured"] is False
        and str(record["why"]).startswith("skipped: ")
    )


def test_the_tiny_sizes_read_no_real_films() -> None:
    assert sizes.TINY.real_films == 0


@pytest.mark.parametrize("part", list(run.PARTS))
def test_every_bench_part_runs_at_a_tiny_size(part: str, tiny: sizes.Sizes) -> None:
    recorded = run.PARTS[part](tiny)
    assert recorded, f"{part} recorded nothing"
    json.dumps(recorded)  # what bench/results.json will hold
    for key, record in recorded.items():
        if _is_skip(record):
            assert part in run.MAY_SKIP, f"{part} skipped {key}: {record['why']}"
            continue
        assert isinstance(record, dict | list) and record, f"{part}: {key} is empty"
        if isinstance(record, dict):
            assert record.get("measured", True) is not False, f"{part}: {key}: {record}"
