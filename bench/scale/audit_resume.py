"""An audit stopped while it verifies its visit check's pairs, then run again (issue 39).

At 1,000,000 rows the search for each film's nearest films took some 50 minutes and the
verification over half an hour on two nodes; an audit keeps both in its work folder (the
search's pairs beside the vectors, the verification a window of pairs a file), so the run after
a stop does neither again for what it had. This measures it on the audit bench's dataset
(``bench.scale.audit_cluster.write_dataset``), searching through the lists as at a million
rows: one audit run whole, then another into a second folder whose process group is killed
(SIGKILL, as a session's end does) once ``--windows`` windows of verified pairs are kept, and
the same command again, run to its end. The two reports must be byte-identical.

``python -m bench.scale.audit_resume --rows 16000 [--executor ray] [--windows 4] [--scratch S]``
prints the figures as JSON and writes them to ``audit_resume.json`` beside this file, under the
size and the executor (``ray``: a two-node cluster on this machine, each node's Ray processes'
CPU counted, as ``bench.scale.audit_cluster`` counts it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.scale.audit_cluster import STORE_MIB, audit_command, audit_run, write_dataset
from bench.scale.curve import _environment
from bench.scale.ray_cluster import two_nodes
from curation.audit.audit import WORK_FOLDER
from curation.core.atomic import write_bytes
from curation.leaks.visits import VERIFIED_FOLDER

RESULTS = Path(__file__).with_name("audit_resume.json")
POLL_SECONDS = 0.2
SEARCH = "lists"  # as at a million rows


def _kept_windows(out: Path) -> int:
    return sum(1 for _ in (out / WORK_FOLDER / VERIFIED_FOLDER).rglob("*.arrays"))


def stopped_while_verifying(target: Path, out: Path, executor: str, windows: int) -> dict:
    """An audit into ``out`` killed with its workers once ``windows`` windows are kept."""
    start = time.perf_counter()
    audit = subprocess.Popen(  # its own process group: the workers are killed with it
        audit_command(target, out, executor, SEARCH), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    while audit.poll() is None and _kept_windows(out) < windows:
        time.sleep(POLL_SECONDS)
    if audit.poll() is not None:
        raise SystemExit(f"the audit into {out} ended before {windows} windows were kept")
    os.killpg(audit.pid, signal.SIGKILL)
    audit.wait()
    return {"killed_after_s": round(time.perf_counter() - start, 1), "windows_kept": windows}


def _runs(target: Path, scratch: Path, executor: str, windows: int, roots: dict) -> dict:
    found: dict = {}
    for name in ("whole", "resumed"):
        out = scratch / f"{executor}-{name}"
        shutil.rmtree(out, ignore_errors=True)  # an earlier run's report or work folder
        if name == "resumed":
            found["stopped"] = stopped_while_verifying(target, out, executor, windows)
        measured = audit_run(target, out, executor, roots, SEARCH)
        found[name] = {k: measured[k] for k in ("wall_s", "cpu_s", "driver_peak_rss_mib")}
    whole, resumed = (scratch / f"{executor}-{n}" / "report.json" for n in ("whole", "resumed"))
    found["reports_identical"] = whole.read_bytes() == resumed.read_bytes()
    return found


def measure(rows: int, windows: int, scratch: Path, executor: str) -> dict:
    """The whole audit and the one run again after a stop, on ``executor`` (``ray``: a
    two-node cluster on this machine, the nodes' CPU counted)."""
    target = scratch / f"target-{rows}"
    if not target.is_dir():
        write_dataset(target, rows)
    found: dict = {"rows": rows, "visit_search": SEARCH, "executor": executor}
    if executor != "ray":
        return found | _runs(target, scratch, executor, windows, {})
    with two_nodes(store_mib=STORE_MIB) as cluster:
        roots = {"head": cluster.head.pid, "worker": cluster.worker.pid}
        keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
        with _environment({k: cluster.env[k] for k in keys}):
            return found | _runs(target, scratch, executor, windows, roots)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16000, help="the dataset's rows")
    parser.add_argument("--windows", type=int, default=4, help="windows kept when stopped")
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--scratch", type=Path, help="keep the dataset and reports here")
    args = parser.parse_args(argv)
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(args.rows, args.windows, args.scratch, args.executor)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-audit-resume-", dir="/tmp") as scratch:
            found = measure(args.rows, args.windows, Path(scratch), args.executor)
    print(json.dumps(found, indent=1))
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    kept[f"{args.rows} {args.executor}"] = found  # in place of this size's and executor's
    write_bytes(RESULTS, (json.dumps(kept, indent=1, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
