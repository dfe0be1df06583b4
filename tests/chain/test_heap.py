"""A local run keeps freed memory on the heap (``curation.core.heap``): a pair's exposure fit
maps no fresh pages at every call, in the driver or in a worker."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).parents[2]
FEW_FAULTS = 50  # a call's pages reused: 2 to 3 faults measured, against about 1,100


def _faults(mode: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.chain.heap_child", mode],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    faults: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return faults


def test_the_exposure_fit_reuses_its_memory_in_the_driver_and_the_workers():
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc's limits are set on glibc only")
    without = _faults("without")["driver"]
    if without <= FEW_FAULTS:
        pytest.skip(f"this C library reuses the fit's memory unasked ({without} faults a fit)")
    faults = _faults("session")
    assert faults["driver"] <= FEW_FAULTS, faults
    assert max(faults["workers"]) <= FEW_FAULTS, faults
