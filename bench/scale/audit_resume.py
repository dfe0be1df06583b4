"""An audit stopped while it verifies its visit check's pairs, then run again (issue 39).

At 1,000,000 rows the search for each film's nearest films took some 50 minutes and the
verification over half an hour on two nodes; an audit keeps both in its work folder (the
search's pairs beside the vectors, the verification a window of pairs a file), so the run after
a stop does neither again for what it had. This measures it on the audit bench's dataset
(``bench.scale.audit_cluster.write_dataset``), searching through the lists as at a million
rows: one audit run whole, then another into a second folder whose process group is killed
(SIGKILL, as a session's end does) once ``--windows`` windows of verified pairs are kept, and
the same command again, run to its end. The two reports must be byte-identical. With
``--stop-at aligning`` the audit is killed once ``--windows`` batches of aligned checks (each
verified pair's two films described with ORB, aligned and compared) are kept instead, and the
figures say when each kept batch was written after the verification's last window.

With ``--stop-at describing`` the audit is killed once it starts describing films, that is
once its hashing and its checks by hash are done, and the same command run again is killed at
the same point: what a stop costs of the parts before the describing (at 1,000,000 rows,
about 25 minutes on two nodes), without running an audit of that size whole. CPU is that of
the audit's process and its workers, read before the kill.

``python -m bench.scale.audit_resume --rows 16000 [--executor ray] [--windows 4]
[--stop-at verifying|aligning|describing] [--scratch S]`` prints the figures as JSON and writes
them to ``audit_resume.json`` beside this file, under the size, the executor (``ray``: a
two-node cluster on this machine, each node's Ray processes' CPU counted, as
``bench.scale.audit_cluster`` counts it) and, but for ``verifying``, the stop.
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
from collections.abc import Callable
from pathlib import Path

from bench.scale.audit_cluster import STORE_MIB, audit_command, audit_run, write_dataset
from bench.scale.curve import _environment
from bench.scale.ray_cluster import descendants, two_nodes
from bench.scale.shortlist_nodes import process_cpu
from curation.audit.audit import VISIT_FEATURES, WORK_FOLDER
from curation.core.atomic import write_bytes
from curation.leaks.visits import ALIGNED_FOLDER, VERIFIED_FOLDER

RESULTS = Path(__file__).with_name("audit_resume.json")
POLL_SECONDS = 0.2
SEARCH = "lists"  # as at a million rows


def _kept(out: Path, folder: str) -> list[Path]:
    """The files a stage keeps in the audit's work folder: windows of verified pairs
    (``VERIFIED_FOLDER``) or batches of aligned checks (``ALIGNED_FOLDER``)."""
    return list((out / WORK_FOLDER / folder).rglob("*.arrays"))


def _aligning_s(out: Path) -> list[float]:
    """When each kept batch of aligned checks was written, in seconds after the last window of
    verified pairs (the aligned checks start once the verification ends)."""
    verified = max(p.stat().st_mtime for p in _kept(out, VERIFIED_FOLDER))
    return sorted(round(p.stat().st_mtime - verified, 1) for p in _kept(out, ALIGNED_FOLDER))


def _describing(out: Path) -> bool:
    return any((out / WORK_FOLDER / VISIT_FEATURES).rglob("*.arrays"))


def _cpu_s(pid: int) -> float:
    """CPU seconds of a process and of every process below it, living or reaped."""
    return process_cpu(descendants(pid))["all"]


def stopped_when(target: Path, out: Path, executor: str, until: Callable[[], bool]) -> dict:
    """An audit into ``out`` killed with its workers once ``until()`` holds: its wall and
    (for a local executor) its CPU up to then."""
    start = time.perf_counter()
    audit = subprocess.Popen(  # its own process group: the workers are killed with it
        audit_command(target, out, executor, SEARCH), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    cpu_s = 0.0
    while audit.poll() is None and not until():
        cpu_s = max(cpu_s, _cpu_s(audit.pid))  # the last reading before the kill
        time.sleep(POLL_SECONDS)
    if audit.poll() is not None:
        raise SystemExit(f"the audit into {out} ended before it was to be stopped")
    cpu_s = max(cpu_s, _cpu_s(audit.pid))
    os.killpg(audit.pid, signal.SIGKILL)
    audit.wait()
    killed = {"killed_after_s": round(time.perf_counter() - start, 1)}
    return killed | ({"cpu_s": round(cpu_s, 1)} if executor == "local" else {})


def stopped_while(target: Path, out: Path, executor: str, stop_at: str, windows: int) -> dict:
    """An audit into ``out`` killed with its workers once ``windows`` windows of verified pairs
    (``stop_at`` ``verifying``) or batches of aligned checks (``aligning``) are kept."""
    folder = ALIGNED_FOLDER if stop_at == "aligning" else VERIFIED_FOLDER
    stopped = stopped_when(target, out, executor, lambda: len(_kept(out, folder)) >= windows)
    found = {"killed_after_s": stopped["killed_after_s"], "windows_kept": windows}
    return found | ({"batches_kept_after_s": _aligning_s(out)} if stop_at == "aligning" else {})


def _stopped_twice_when_describing(target: Path, scratch: Path, executor: str) -> dict:
    """An audit killed once it describes, then the same command killed at the same point."""
    out = scratch / f"{executor}-describing"
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's report or work folder
    found = {}
    for name in ("first", "again"):
        found[name] = stopped_when(target, out, executor, lambda: _describing(out))
        if name == "first":
            shutil.rmtree(out / WORK_FOLDER / VISIT_FEATURES)  # to stop the next at that point
    shutil.rmtree(out)
    return found


def _runs(
    target: Path, scratch: Path, executor: str, stop_at: str, windows: int, roots: dict
) -> dict:
    found: dict = {}
    for name in ("whole", "resumed"):
        out = scratch / f"{executor}-{name}"
        shutil.rmtree(out, ignore_errors=True)  # an earlier run's report or work folder
        if name == "resumed":
            found["stopped"] = stopped_while(target, out, executor, stop_at, windows)
        measured = audit_run(target, out, executor, roots, SEARCH)
        found[name] = {k: measured[k] for k in ("wall_s", "cpu_s", "driver_peak_rss_mib")}
    whole, resumed = (scratch / f"{executor}-{n}" / "report.json" for n in ("whole", "resumed"))
    found["reports_identical"] = whole.read_bytes() == resumed.read_bytes()
    return found


def measure(rows: int, windows: int, scratch: Path, executor: str, stop_at: str) -> dict:
    """The whole audit and the one run again after a stop, on ``executor`` (``ray``: a
    two-node cluster on this machine, the nodes' CPU counted); or with ``stop_at``
    ``describing``, the two stopped runs."""
    target = scratch / f"target-{rows}"
    if not target.is_dir():
        write_dataset(target, rows)
    found: dict = {"rows": rows, "visit_search": SEARCH, "executor": executor}

    def runs(roots: dict) -> dict:
        if stop_at == "describing":
            return found | _stopped_twice_when_describing(target, scratch, executor)
        return found | _runs(target, scratch, executor, stop_at, windows, roots)

    if executor != "ray":
        return runs({})
    with two_nodes(store_mib=STORE_MIB) as cluster:
        roots = {"head": cluster.head.pid, "worker": cluster.worker.pid}
        keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
        with _environment({k: cluster.env[k] for k in keys}):
            return runs(roots)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16000, help="the dataset's rows")
    parser.add_argument(
        "--windows", type=int, default=4, help="windows (or batches) kept when stopped"
    )
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    stops = ("verifying", "aligning", "describing")
    parser.add_argument("--stop-at", choices=stops, default="verifying")
    parser.add_argument("--scratch", type=Path, help="keep the dataset and reports here")
    args = parser.parse_args(argv)
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(args.rows, args.windows, args.scratch, args.executor, args.stop_at)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-audit-resume-", dir="/tmp") as scratch:
            found = measure(args.rows, args.windows, Path(scratch), args.executor, args.stop_at)
    print(json.dumps(found, indent=1))
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stop = "" if args.stop_at == "verifying" else f" {args.stop_at}"
    kept[f"{args.rows} {args.executor}{stop}"] = found  # in place of this kind's figures
    write_bytes(RESULTS, (json.dumps(kept, indent=1, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
