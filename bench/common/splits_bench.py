"""``make splits`` end to end on the corpus: the Makefile's four commands, each measured.

Cold: a fresh build folder (``download`` = hash and extract the zip, ``build``, ``card``,
``agreement``). Warm: the same four again in the same folder, with its caches. Full: a second
fresh folder built with ``--decode full``, whose look-alike components and splits are
compared with the draft build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from bench.common.measure import run_measured

COMMANDS = ("download", "build", "card", "agreement")


def pericurate(python: str, *args: str) -> list[str]:
    return [python, "-c", "from curation.cli.app import app; app()", *args]


def _make_splits(python: str, archive: Path, build: Path, *build_args: str) -> dict:
    """The Makefile's commands in ``build``; seconds and peak RSS per command, and the total."""
    lock = build / "source.lock.json"
    arguments = {
        "download": ("download", str(archive), "--build", str(build), "--lock", str(lock)),
        "build": ("build", "--build", str(build), "--no-fail-on-rejected", *build_args),
        "card": ("card", "--build", str(build)),
        "agreement": ("agreement", "--build", str(build)),
    }
    result: dict = {}
    for command in COMMANDS:
        run = run_measured(pericurate(python, *arguments[command]))
        result[f"{command}_s"] = run.wall_s
        result[f"{command}_peak_rss_mib"] = run.peak_rss_mib
    result["total_s"] = round(sum(result[f"{c}_s"] for c in COMMANDS), 3)
    result["peak_rss_mib"] = max(result[f"{c}_peak_rss_mib"] for c in COMMANDS)
    return result


def _assignment(build: Path) -> list[tuple]:
    """Every kept film with its look-alike cluster and split, from the build's outputs."""
    clusters = pq.read_table(build / "clusters.parquet").to_pylist()
    return sorted(tuple(sorted(row.items())) for row in clusters)


def draft_build(folder: Path) -> Path:
    """The build folder of the draft (default) build, which the audit part reads."""
    return folder / "build-draft"


def build_draft(python: str, archive: Path, folder: Path) -> Path:
    """The draft build alone, for the parts that read it when ``measure`` has not run."""
    build = draft_build(folder)
    shutil.rmtree(build, ignore_errors=True)
    _make_splits(python, archive, build)
    return build


def measure(python: str, archive: Path, folder: Path) -> dict:
    draft, full = draft_build(folder), folder / "build-full"
    for build in (draft, full):
        shutil.rmtree(build, ignore_errors=True)
    result = {"cold": _make_splits(python, archive, draft)}
    result["warm"] = _make_splits(python, archive, draft)
    result["full_decode"] = _make_splits(python, archive, full, "--decode", "full")
    result["components_and_splits_identical"] = _assignment(draft) == _assignment(full)
    return result
