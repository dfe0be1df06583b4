"""Every part of ``make bench`` (``bench.run.PARTS``) run at the tiny sizes ``bench.run.TINY``,
so a change that breaks a part fails here instead of at the next ``make bench``: the part
runs, and what it records has its entries with figures in them. No figure is checked
against a goal (this is not a timing test); real films are not read, and the parts that
need what a machine may lack (``bench.run.MAY_SKIP``) may record a plain skip."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench import run

SKIP_KEYS = {"measured", "why"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> run.Sizes:
    """The tiny sizes with one corpus folder for the whole module: the parts that read the
    draft build of ``splits`` find it, as in ``make bench``."""
    return replace(run.TINY, corpus_dir=tmp_path_factory.mktemp("bench-corpus"))


def _is_skip(record: object) -> bool:
    return (
        isinstance(record, dict)
        and set(record) == SKIP_KEYS
        and record["measured"] is False
        and str(record["why"]).startswith("skipped: ")
    )


def test_the_tiny_sizes_read_no_real_films() -> None:
    assert run.TINY.real_films == 0


@pytest.mark.parametrize("part", list(run.PARTS))
def test_every_bench_part_runs_at_a_tiny_size(part: str, tiny: run.Sizes) -> None:
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
