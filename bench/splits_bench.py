"""``make splits`` end to end on the corpus: the same two ``pericurate`` commands, measured.

Cold: a fresh build folder (download = hash and extract the zip, then build). Warm: ``build``
again in the same folder, with the hash cache. Full: a second fresh folder built with
``--decode full``, whose look-alike components and splits are compared with the draft build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from bench.measure import run_measured


def pericurate(python: str, *args: str) -> list[str]:
    return [python, "-c", "from curation.cli import app; app()", *args]


def _download_and_build(python: str, archive: Path, build: Path, *build_args: str) -> dict:
    shutil.rmtree(build, ignore_errors=True)
    lock = build / "source.lock.json"
    download = run_measured(
        pericurate(python, "download", str(archive), "--build", str(build), "--lock", str(lock))
    )
    cold = run_measured(
        pericurate(python, "build", "--build", str(build), "--no-fail-on-rejected", *build_args)
    )
    return {
        "download_s": download.wall_s,
        "download_peak_rss_mib": download.peak_rss_mib,
        "build_s": cold.wall_s,
        "build_peak_rss_mib": cold.peak_rss_mib,
        "total_s": round(download.wall_s + cold.wall_s, 3),
    }


def _assignment(build: Path) -> list[tuple]:
    """Every kept film with its look-alike cluster and split, from the build's outputs."""
    clusters = pq.read_table(build / "clusters.parquet").to_pylist()
    return sorted(tuple(sorted(row.items())) for row in clusters)


def draft_build(folder: Path) -> Path:
    """The build folder of the draft (default) build, which the audit part reads."""
    return folder / "build-draft"


def measure(python: str, archive: Path, folder: Path) -> dict:
    draft_build, full_build = folder / "build-draft", folder / "build-full"
    result = {"cold": _download_and_build(python, archive, draft_build)}
    warm = run_measured(
        pericurate(python, "build", "--build", str(draft_build), "--no-fail-on-rejected")
    )
    result["warm"] = {"build_s": warm.wall_s, "build_peak_rss_mib": warm.peak_rss_mib}
    result["full_decode"] = _download_and_build(python, archive, full_build, "--decode", "full")
    result["components_and_splits_identical"] = _assignment(draft_build) == _assignment(full_build)
    return result
