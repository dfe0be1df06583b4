"""The child of ``tests/chain/test_heap.py``, in a fresh process each time, since malloc's
limits, once set, hold for the rest of the process (and the moving one moves with what the
process has freed):

    python -m tests.chain.heap_child without | session

prints, as JSON, the page faults a pair's exposure fit costs: with no executor (``without``),
or inside a local executor's session started first thing, in this process and in each of its
workers (``session``).
"""

from __future__ import annotations

import json
import resource
import sys

import numpy as np

from curation.chain.executors import LocalExecutor
from curation.same_picture.pixels import COMPARE_SIZE, fit_exposure

FITS = 50


def faults_per_fit(_: int = 0) -> float:
    """Minor page faults a call of the exposure fit on one grid of cells costs, on average,
    once a first call has run."""
    grey = np.random.default_rng(0).uniform(0, 255, COMPARE_SIZE[::-1])
    darker = np.clip(0.9 * grey - 5, 0, 255)
    fit_exposure(grey, darker)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(FITS):
        fit_exposure(grey, darker)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / FITS


def main() -> None:
    if sys.argv[1:] == ["without"]:
        print(json.dumps({"driver": faults_per_fit()}))
        return
    with LocalExecutor(workers=2).mapping("heap") as map:
        driver = faults_per_fit()
        workers = list(map(faults_per_fit, [0, 1, 2, 3], chunksize=1))
    print(json.dumps({"driver": driver, "workers": workers}))


if __name__ == "__main__":
    main()
