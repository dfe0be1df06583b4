"""``python -m bench.search.table``: the pair search at several sizes and kinds of codes,
pericurate's search and faiss brute force interleaved, each in its own measured child.

For every size and kind: pericurate's ``self_pairs`` (``bench.search.engine faiss``), then
brute force (``bench.search.engine flat``) up to ``--brute-force-limit`` codes, one after the
other so that the machine's load falls on both. Exact means both found the same rows in the
same order (same sha256). Prints a Markdown table (``--out``: the rows as JSON too).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bench.common.measure import child_json, python_child, run_measured

KINDS = ("random", "synthetic", "films")


def _run(engine: str, n: int, kind: str) -> dict:
    load = os.getloadavg()[0]
    run = run_measured(python_child("bench.search.engine", engine, str(n), "0", kind))
    return {**child_json(run), "peak_rss_mib": run.peak_rss_mib, "load_1min_at_start": load}


def measure(sizes: list[int], kinds: list[str], brute_force_limit: int) -> list[dict]:
    """One row per size and kind: ``{"codes", "kind", "pericurate", "brute_force"}``, each
    engine's child result (``seconds``, ``found``, ``pairs_sha256``, ``peak_rss_mib``,
    ``load_1min_at_start``, ...; ``brute_force`` None above the limit) and ``exact`` (None
    when brute force did not run)."""
    rows = []
    for n in sizes:
        for kind in kinds:
            ours = _run("faiss", n, kind)
            brute = _run("flat", n, kind) if n <= brute_force_limit else None
            exact = None if brute is None else ours["pairs_sha256"] == brute["pairs_sha256"]
            rows.append(
                {"codes": n, "kind": kind, "pericurate": ours, "brute_force": brute, "exact": exact}
            )
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| codes | kind | pericurate s | peak RSS MiB | pairs | brute force s | peak RSS MiB "
        "| same pairs | load at start |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ours, brute = row["pericurate"], row["brute_force"]
        brute_cells = (
            f"{brute['seconds']:.1f} | {brute['peak_rss_mib']:.0f}" if brute else "not run | "
        )
        same = {True: "yes", False: "NO", None: "not checked"}[row["exact"]]
        loads = f"{ours['load_1min_at_start']:.1f}"
        if brute:
            loads += f" / {brute['load_1min_at_start']:.1f}"
        lines.append(
            f"| {row['codes']:,} | {row['kind']} | {ours['seconds']:.1f} "
            f"| {ours['peak_rss_mib']:.0f} | {ours['found']:,} | {brute_cells} | {same} | {loads} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search.table", description=__doc__)
    parser.add_argument("--codes", default="10000,100000,1000000")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument(
        "--brute-force-limit",
        type=int,
        default=100_000,
        help="run brute force up to this many codes (1,000,000 takes ~20 min on 2 cores)",
    )
    parser.add_argument("--out", type=Path, help="also write the rows here, as JSON")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds {unknown}; kinds are {', '.join(KINDS)}")
    sizes = [int(n) for n in args.codes.split(",") if n]
    rows = measure(sizes, kinds, args.brute_force_limit)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
