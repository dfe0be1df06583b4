"""The audit's driver memory per row: what the auditing process itself holds, at two sizes.

The dataset of ``bench.scale.audit_cluster`` is audited in this process (the per-file work on
two worker processes), with Python's allocations traced (``tracemalloc``; numpy's arrays are
traced too), after a small audit has imported every module: the peak over the whole audit,
and what the finished audit keeps (its per-row records). Per row: each figure over the
rows, and the growth between the two sizes over the rows added, which leaves out what does
not grow with the dataset (the caches). Where it comes from: the lines that allocated what
the finished audit keeps (per row), and the traced peak while the visit check trains its
vocabulary (``curation.visits.find.stored_vocabulary``: with one job, the map runs it in
this process), whose sample grows with the rows up to ``TRAINING_MAX`` descriptors and then
stays: sizes on both sides of that cap give different growths.

``python -m bench.scale.audit_driver --rows 1000,4000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import curation.visits.find
from bench.scale.audit_cluster import write_dataset
from curation.audit.audit import run_audit
from curation.core.parallel import LocalMap

ROWS = (1000, 4000)
WORKERS = 2
WARM_UP = 40  # rows of an audit run first, untraced: the modules it imports are not per row
TOP_LINES = 5


@contextmanager
def vocabulary_peak() -> Iterator[dict[str, int]]:
    """The traced peak while the visit check trains its vocabulary, over what was held
    before (``vocabulary_peak_bytes``)."""
    found = {"vocabulary_peak_bytes": 0}
    train = curation.visits.find.stored_vocabulary

    @functools.wraps(train)
    def traced(*args: Any, **kwargs: Any) -> Any:
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        vocabulary = train(*args, **kwargs)
        found["vocabulary_peak_bytes"] = tracemalloc.get_traced_memory()[1] - held
        return vocabulary

    with mock.patch.object(curation.visits.find, "stored_vocabulary", traced):
        yield found


def top_lines(snapshot: tracemalloc.Snapshot, rows: int) -> dict[str, int]:
    """The lines that allocated most of what is kept, in bytes per row."""
    statistics = snapshot.statistics("lineno")[:TOP_LINES]
    return {str(s.traceback[0]): round(s.size / rows) for s in statistics}


def traced_audit(target: Path) -> dict[str, Any]:
    """The traced peak of one audit of ``target``, what its result holds (in bytes) and
    where that was allocated."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    with vocabulary_peak() as vocabulary:
        audit = run_audit(str(target), permutations=99, map=LocalMap(WORKERS))
    kept, peak = tracemalloc.get_traced_memory()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    rows = len(audit.films)
    return {
        "rows": rows,
        "peak_bytes": peak - before,
        "kept_bytes": kept - before,
        **vocabulary,
        "kept_top_lines_bytes_per_row": top_lines(snapshot, rows),
    }


def measure(rows: tuple[int, ...], scratch: Path) -> dict:
    """Each size written and audited; the figures per row and their growth per row added."""
    write_dataset(scratch / "warm-up", WARM_UP)
    run_audit(str(scratch / "warm-up"), permutations=99, map=LocalMap(WORKERS))
    found = {}
    for n in rows:
        target = scratch / f"target-{n}"
        write_dataset(target, n)
        traced = traced_audit(target)
        found[str(n)] = {
            **traced,
            "peak_bytes_per_row": round(traced["peak_bytes"] / n),
            "kept_bytes_per_row": round(traced["kept_bytes"] / n),
        }
    small, large = found[str(min(rows))], found[str(max(rows))]
    added = max(rows) - min(rows)
    growth = {
        "peak_bytes_per_row_added": round((large["peak_bytes"] - small["peak_bytes"]) / added),
        "kept_bytes_per_row_added": round((large["kept_bytes"] - small["kept_bytes"]) / added),
    }
    return {"sizes": found, **(growth if added else {})}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_driver", description=__doc__)
    parser.add_argument("--rows", default=",".join(map(str, ROWS)), help="dataset sizes")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.rows.split(",") if n)
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-driver-", dir="/tmp") as scratch:
        print(json.dumps(measure(sizes, Path(scratch)), indent=1))


if __name__ == "__main__":
    main()
