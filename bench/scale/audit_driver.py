"""The audit's driver memory per row: what the auditing process itself holds, at two sizes.

The dataset of ``bench.scale.audit_cluster`` is audited in this process (the per-file work on
two worker processes), with Python's allocations traced (``tracemalloc``; numpy's arrays are
traced too), after a small audit has imported every module: the peak over the whole audit,
and what the finished audit keeps (its per-row records). Per row: each figure over the
rows, and the growth between the two sizes over the rows added, which leaves out what does
not grow with the dataset (the vocabulary, the caches).

``python -m bench.scale.audit_driver --rows 1000,4000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import tracemalloc
from pathlib import Path

from bench.scale.audit_cluster import write_dataset
from curation.audit.audit import run_audit
from curation.core.parallel import LocalMap

ROWS = (1000, 4000)
WORKERS = 2
WARM_UP = 40  # rows of an audit run first, untraced: the modules it imports are not per row


def traced_audit(target: Path) -> dict[str, int]:
    """The traced peak of one audit of ``target`` and what its result holds, in bytes."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    audit = run_audit(str(target), permutations=99, map=LocalMap(WORKERS))
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"rows": len(audit.films), "peak_bytes": peak - before, "kept_bytes": kept - before}


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
