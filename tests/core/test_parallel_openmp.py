"""A worker forked after the parent ran faiss on two OpenMP threads must still finish its
faiss work (GNU libgomp is not fork-safe: without ``curation.core.parallel`` putting each
worker on one OpenMP thread, the worker's first parallel region waited for ever, and so did
the build)."""

from __future__ import annotations

import subprocess

import pytest

from tests.child_process import child_json

SECONDS = 120  # the child takes about 2 s; a hung worker never ends


def test_workers_forked_after_the_parent_ran_openmp_finish_with_the_same_results():
    try:
        found = child_json("tests.core.openmp_fork_child", timeout=SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the forked workers' faiss search did not finish within {SECONDS} s")
    assert found["forked"] == found["here"]
