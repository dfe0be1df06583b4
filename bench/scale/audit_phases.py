"""Where the audit's CPU goes, phase by phase, at one size: which parts grow with the rows
and which with their square (``bench.scale.audit_search`` measures the search alone).

The dataset of ``bench.scale.audit_cluster`` is audited in this process, the per-file work on
``WORKERS`` worker processes; each phase is timed from outside (its module's function
patched for the run): CPU seconds of this process and of the worker pools the phase joined
(each map starts and joins its own pool), and wall seconds. The phases of the visit check
nest: ``cross_split_matches`` holds the vocabulary, the vectors, the search, the
verification and the aligned checks.

``python -m bench.scale.audit_phases --rows 2000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from bench.scale.audit_cluster import write_dataset
from curation.audit.audit import run_audit
from curation.core.parallel import LocalMap

ROWS = 2000
WORKERS = 2
PHASES = {
    "curation.leaks.scan": ("scan",),
    "curation.leaks.identical": ("fill_pixels",),
    "curation.leaks.leakage": ("cross_split_pairs", "closest_pairs", "nearest_to_train"),
    "curation.leaks.nearest": ("split_searches",),
    "curation.leaks.turned": ("turned_same_picture",),
    "curation.leaks.visits": ("describe_films", "cross_split_matches"),
    "curation.visits.find": ("stored_vocabulary", "stored_vectors", "stored_nearest"),
}


def _cpu_seconds() -> float:
    """This process's CPU seconds and its joined children's."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def _timed(name: str, function: Callable[..., Any], found: list[dict[str, Any]]) -> Any:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = _cpu_seconds(), time.perf_counter()
        result = function(*args, **kwargs)
        cpu_s, wall_s = round(_cpu_seconds() - cpu, 2), round(time.perf_counter() - wall, 2)
        found.append({"phase": name, "cpu_s": cpu_s, "wall_s": wall_s})
        return result

    return timed


@contextmanager
def timed_phases() -> Iterator[list[dict[str, Any]]]:
    """Each phase's CPU and wall seconds, in the order the phases end."""
    found: list[dict[str, Any]] = []
    with ExitStack() as patches:
        for module_name, names in PHASES.items():
            module = importlib.import_module(module_name)
            for name in names:
                timed = _timed(name, getattr(module, name), found)
                patches.enter_context(mock.patch.object(module, name, timed))
        yield found


def measure(rows: int, scratch: Path) -> dict[str, Any]:
    """The phases of one audit of ``rows`` rows, and the whole audit's CPU."""
    target = scratch / "target"
    write_dataset(target, rows)
    cpu, wall = _cpu_seconds(), time.perf_counter()
    with timed_phases() as phases:
        audit = run_audit(str(target), permutations=99, map=LocalMap(WORKERS))
    total = {"cpu_s": round(_cpu_seconds() - cpu, 2), "wall_s": round(time.perf_counter() - wall)}
    per_row = {p["phase"]: round(1000 * p["cpu_s"] / rows, 2) for p in phases}
    return {"rows": len(audit.films), "total": total, "phases": phases, "cpu_ms_per_row": per_row}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_phases", description=__doc__)
    parser.add_argument("--rows", type=int, default=ROWS, help="dataset size")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-phases-", dir="/tmp") as scratch:
        print(json.dumps(measure(args.rows, Path(scratch)), indent=1))


if __name__ == "__main__":
    main()
