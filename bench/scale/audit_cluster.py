"""The audit of a published dataset at scale: locally and on a two-node Ray cluster.

The dataset written here has the layout ``pericurate audit`` reads (``train-/validation-/
test-NNNNN-of-NNNNN.parquet``, an ``image`` and a ``film_id`` column, row groups of
``GROUP_ROWS``): ``rows`` distinct small films (grey textures with grain, ``SIZE`` px, JPEG),
among which one test row in ``PLANT_EVERY`` is a byte copy of a train film and one validation
row in ``PLANT_EVERY`` a look-alike of another (brighter, encoded again). Each run is measured
from outside: wall and CPU seconds (``bench.common.measure``, plus the Ray nodes' processes),
and sampled every ``SAMPLE_SECONDS`` the driver's resident memory and, per node, the summed
resident memory of the node's Ray worker processes (``bench.scale.ray_cluster`` gives the
nodes' process trees; locally: the driver's worker processes). The two reports must be
byte-identical, and every planted pair found.

``python -m bench.scale.audit_cluster --rows 4000,16000`` prints the figures as JSON (one
line per run on stderr as it goes) and writes them to ``audit_cluster.json`` beside this
file, in place of that file's figures for the same sizes and executors; ``--executors local``
skips the cluster. With ``--scratch``, the reports of both executors found there (this run's or
an earlier one's) are compared; ``--executors ''`` runs no audit and reads them again. A report
lists at most ``curation.audit.report.LISTED`` hash pairs and counts them all: past that, a
planted pair is looked for among the listed ones only, and ``report_pairs`` gives the report's
count beside what it listed. The audit runs with its default visit search (``auto``: exact up
to ``curation.core.vocabulary.EXACT_UP_TO`` films); ``--visit-search exact`` or ``lists`` asks
for one, whose figures are kept under the size and the search (``"128000 exact"``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from bench.common.measure import run_measured
from bench.common.splits_bench import pericurate
from bench.scale.curve import _environment
from bench.scale.ray_cluster import descendants, two_nodes
from curation.core.atomic import write_bytes

ROWS = (4000, 16000)
EXECUTORS = ("local", "ray")
SIZE = (384, 192)  # px: small films, so tens of thousands of rows are affordable here
SHARD_ROWS = 4096  # rows per parquet file
GROUP_ROWS = 256  # rows per row group: the audit's unit of per-file work
SHARES = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
PLANT_EVERY = 20  # one test row in this many is a planted copy, one validation row a look-alike
BRIGHTER = 6  # grey levels added to a look-alike
SAMPLE_SECONDS = 0.5
STORE_MIB = 600  # each node's object store
PERMUTATIONS = "99"
RESULTS = Path(__file__).with_name("audit_cluster.json")


def _film(seed: int, brighter: int = 0) -> bytes:
    """A smooth grey texture with grain, as a JPEG: hashes and features like a small film's."""
    rng = np.random.default_rng(seed)
    coarse = (rng.random((SIZE[1] // 16, SIZE[0] // 16)) * 255).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize(SIZE, Image.Resampling.BICUBIC))
    grain = rng.normal(0, 8, smooth.shape) + brighter
    buffer = io.BytesIO()
    Image.fromarray(np.clip(smooth + grain, 0, 255).astype(np.uint8)).save(
        buffer, format="JPEG", quality=90 if brighter == 0 else 85
    )
    return buffer.getvalue()


def write_dataset(folder: Path, rows: int) -> dict[str, list[list[str]]]:
    """``rows`` films in three splits below ``folder``; the planted pairs (film ids:
    ``copies`` train/test, ``lookalikes`` train/validation). Each parquet file is made and
    written before the next one's films are drawn, so the bench holds one file's films at a
    time, not the dataset's (6.0 GiB at 256,000 rows)."""
    counts = {split: round(rows * share) for split, share in SHARES}
    counts["train"] = rows - counts["validation"] - counts["test"]
    planted: dict[str, list[list[str]]] = {"copies": [], "lookalikes": []}
    train_ids = [f"train-{n:07d}" for n in range(counts["train"])]
    folder.mkdir(parents=True, exist_ok=True)
    for number, (split, _) in enumerate(SHARES):
        shards = max(1, -(-counts[split] // SHARD_ROWS))
        for shard in range(shards):
            ids, images = [], []
            for n in range(shard * SHARD_ROWS, min((shard + 1) * SHARD_ROWS, counts[split])):
                film_id, seed = f"{split}-{n:07d}", number * 10_000_000 + n
                if split != "train" and n % PLANT_EVERY == 0:
                    kind = "copies" if split == "test" else "lookalikes"
                    source = 2 * (n // PLANT_EVERY) + (kind == "lookalikes")  # a train film once
                    images.append(_film(source, 0 if kind == "copies" else BRIGHTER))
                    planted[kind].append([train_ids[source], film_id])
                else:
                    images.append(_film(seed))
                ids.append(film_id)
            table = pa.table({"image": pa.array(images, pa.binary()), "film_id": pa.array(ids)})
            name = f"{split}-{shard:05d}-of-{shards:05d}.parquet"
            pq.write_table(table, folder / name, row_group_size=GROUP_ROWS)
    return planted


def _resident_bytes(pid: int) -> int:
    """A process's resident memory (0 when it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    """A process's user and system CPU seconds so far (0 when it has ended)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _is_ray_worker(pid: int) -> bool:
    try:
        return b"default_worker.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@contextmanager
def sampled(roots: dict[str, int], workers_only: bool) -> Iterator[dict[str, int]]:
    """Peak memory sampled while the block runs: per root, the summed resident memory of the
    processes below it (only Ray workers when ``workers_only``), or without roots
    ``local_workers``: the audit's own worker processes; ``driver``: the largest process
    whose parent is the measuring relay, i.e. the audit's own process."""
    peaks: dict[str, int] = {name: 0 for name in (*roots, "driver")}
    cpu: dict[int, float] = {}  # per node process: CPU seconds, the last seen
    before = {p: _cpu_seconds(p) for root in roots.values() for p in descendants(root)}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_SECONDS):
            for name, root in roots.items():
                tree = descendants(root)[1:]
                pids = [p for p in tree if _is_ray_worker(p)] if workers_only else tree
                peaks[name] = max(peaks[name], sum(_resident_bytes(p) for p in pids))
                cpu.update({p: max(cpu.get(p, 0.0), _cpu_seconds(p)) for p in tree})
            audits = [p for p in descendants(os.getpid()) if _is_audit(p)]
            peaks["driver"] = max([peaks["driver"], *(_resident_bytes(p) for p in audits)])
            if not roots:  # local: the audit's own worker processes are this node's
                pool = sum(_resident_bytes(p) for a in audits for p in descendants(a)[1:])
                peaks["local_workers"] = max(peaks.get("local_workers", 0), pool)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()
        spent = sum(seconds - before.get(p, 0.0) for p, seconds in cpu.items())
        peaks["nodes_cpu_ms"] = round(1000 * spent)


def _is_audit(pid: int) -> bool:
    """Whether ``pid`` is the audit's own process (not the relay, not a worker)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"audit" in words and b"bench.common.measure" not in words and _parent_is_relay(pid)


def _parent_is_relay(pid: int) -> bool:
    try:
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        return b"bench.common.measure" in Path(f"/proc/{parent}/cmdline").read_bytes()
    except OSError:
        return False


def _found(report: dict) -> dict[str, list[list[str]]]:
    """The pairs the report names, as sorted film-id pairs: groups of the same bytes
    (``copies``), hash pairs (``lookalikes``) and the visit check's pairs (both kinds)."""
    exact = [
        sorted(f["film_id"] for f in group) for group in report["exact_duplicates"]["same_bytes"]
    ]
    listed = [
        sorted((p["a"]["film_id"], p["b"]["film_id"]))
        for p in report["cross_split_pairs"]["listed"]
    ]
    visits = [
        sorted((v["film"]["film_id"], v["other"]["film_id"]))
        for v in report["cross_split_visits"]["listed"]
    ]
    return {"copies": exact, "lookalikes": listed, "visit_check": visits}


def audit_command(target: Path, out: Path, executor: str, search: str) -> list[str]:
    """The audit of ``target`` into ``out`` on ``executor``, the visit check searching as
    ``search`` says (``pericurate audit --visit-search``)."""
    return pericurate(
        sys.executable, "audit", str(target), "--out", str(out), "--permutations", PERMUTATIONS,
        "--executor", executor, "--visit-search", search,
    )  # fmt: skip


def audit_run(target: Path, out: Path, executor: str, roots: dict[str, int], search: str) -> dict:
    """One measured ``audit_command``."""
    command = audit_command(target, out, executor, search)
    with sampled(roots, workers_only=executor == "ray") as peaks:
        run = run_measured(command, ok_codes=(1,))  # the planted copies leak: exit 1
    nodes_cpu_s = peaks.pop("nodes_cpu_ms") / 1000
    mib = {name: round(value / 2**20, 1) for name, value in peaks.items()}
    return {
        "wall_s": run.wall_s,
        "cpu_s": round(run.cpu_s + nodes_cpu_s, 2),
        "cpu_s_nodes": nodes_cpu_s,
        "driver_peak_rss_mib": mib.pop("driver"),
        "node_peak_rss_mib": mib,
    }


def measure(
    rows: tuple[int, ...], scratch: Path, executors: tuple[str, ...], search: str = "auto"
) -> dict:
    """Each size written once (kept in ``scratch`` for a rerun), audited on each executor in
    turn (the cluster started once), the reports compared; figures by size, and by size and
    search for a search other than the audit's default (``auto``)."""
    found: dict[str, dict] = {}
    targets = {}
    label = {n: str(n) if search == "auto" else f"{n} {search}" for n in rows}
    out = {(e, n): scratch / f"{e}-{label[n]}".replace(" ", "-") for e in EXECUTORS for n in rows}
    for n in rows:
        targets[n] = scratch / f"target-{n}"
        if not (scratch / f"planted-{n}.json").is_file():
            planted = write_dataset(targets[n], n)
            (scratch / f"planted-{n}.json").write_text(json.dumps(planted))
        planted = json.loads((scratch / f"planted-{n}.json").read_text())
        found[label[n]] = {"planted": {k: len(v) for k, v in planted.items()}}
    with two_nodes(store_mib=STORE_MIB) if "ray" in executors else nullcontext() as cluster:
        for n in rows:
            for executor in executors:
                roots, env = {}, {}
                if cluster is not None and executor == "ray":
                    roots = {"head": cluster.head.pid, "worker": cluster.worker.pid}
                    keys = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
                    env = {k: cluster.env[k] for k in keys}
                with _environment(env):
                    measured = audit_run(targets[n], out[executor, n], executor, roots, search)
                found[label[n]][executor] = measured
                print(json.dumps({"rows": label[n], executor: measured}), file=sys.stderr)
    for n in rows:
        planted = json.loads((scratch / f"planted-{n}.json").read_text())
        reports = {  # an executor's report from an earlier run in this scratch folder too
            e: (out[e, n] / "report.json").read_bytes()
            for e in EXECUTORS
            if (out[e, n] / "report.json").is_file()
        }
        if len(reports) == 2:
            found[label[n]]["reports_identical"] = reports["local"] == reports["ray"]
        report = json.loads(next(iter(reports.values())))
        named = _found(report)
        found[label[n]]["report_pairs"] = {
            "counted": report["cross_split_pairs"]["count"],
            "listed": len(report["cross_split_pairs"]["listed"]),
        }
        found[label[n]]["planted_found"] = {
            kind: sum(sorted(pair) in named[kind] for pair in pairs)
            for kind, pairs in planted.items()
        }
        every = [sorted(pair) for pairs in planted.values() for pair in pairs]
        found[label[n]]["planted_found"]["visit_check"] = sum(
            p in named["visit_check"] for p in every
        )
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.audit_cluster", description=__doc__
    )
    parser.add_argument("--rows", default=",".join(map(str, ROWS)), help="dataset sizes")
    parser.add_argument("--executors", default=",".join(EXECUTORS), help="local, ray or both")
    parser.add_argument("--scratch", type=Path, help="keep the datasets and reports here")
    parser.add_argument(
        "--visit-search",
        default="auto",
        choices=("auto", "lists", "exact"),
        help="the audit's option",
    )
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.rows.split(",") if n)
    executors = tuple(e for e in args.executors.split(",") if e)
    if not executors and not args.scratch:
        parser.error("--executors '' reads the reports of an earlier run: give its --scratch")
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
        found = measure(sizes, args.scratch, executors, args.visit_search)
    else:
        with tempfile.TemporaryDirectory(prefix="pericurate-audit-cluster-", dir="/tmp") as scratch:
            found = measure(sizes, Path(scratch), executors, args.visit_search)
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    for size, figures in found.items():  # a run keeps the other sizes' and executors' figures
        kept.setdefault(size, {}).update(figures)
    write_bytes(RESULTS, (json.dumps(kept, indent=1, sort_keys=True) + "\n").encode())
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
