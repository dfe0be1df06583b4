"""A local run keeps freed memory on the heap (``curation.core.heap``): a pair's exposure fit
maps no fresh pages at every call, in the driver or in a worker."""

from __future__ import annotations

import platform

import pytest

from tests.child_process import child_json

FEW_FAULTS = 50  # a call's pages reused: under 1 fault measured, against about 1,200


def _faults(mode: str) -> dict[str, float]:
    faults: dict[str, float] = child_json("tests.chain.heap_child", mode)
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
