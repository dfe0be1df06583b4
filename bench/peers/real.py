"""``python -m bench.peers.real``: pericurate beside fastdup, imagededup and cleanvision on one
folder of real films with altered copies, in one interleaved run, by CPU.

The folder: every real development film (``../shared/realfilms-dev``: the 512-px films and the
grey archive-sized ones, read in place; the part says so and stops when they are absent), each
filed with ``COPIES`` altered copies among the originals (``bench.same_picture.alterations``,
the alterations taken in turn, so each is planted about equally often), written in the
archive's layout under ``bench/corpus/`` (git-ignored). Every film has one box of annotation,
so that pericurate reads the folder as it reads the archive.

The runs, interleaved so that load falls on all: pericurate (``download`` and a cold
``build``); pericurate up to its same-picture groups only (``download``, then the chain
through the keeper step: ``bench.peers.copies_child``), the row labelled "pericurate, copies
only", like for like with the peers, which find copies and write no dataset; the floor
(``bench.peers.floor_child``: each film read, its sha256 taken, decoded once and its local
features detected, and each copy's features matched to its original's, in one process: the
least a design that keeps pericurate's features on every film pays; it finds nothing, and the
table gives the goal, half the fastest peer's CPU, beneath it); each peer in the peers' own
environment (``bench/peers/env``, installed by ``uv sync --frozen --project bench/peers/env``:
fastdup needs numpy below 2, which the environments' verifiers does not allow), pericurate up
to its groups again, pericurate again. Each run is one measured child
(``bench.common.measure``): its CPU (user and system, with every process it reaped), wall and
peak memory; every file is read once before each run, untimed.

Scoring, per copy: found when the tool puts the copy and its original in one group (the
connected components of the pairs it reports; pericurate's same-picture groups, a dropped
film joined to the film kept in its place). A false pair is two films of different originals
in one group. A peer that gives each pair a closeness (fastdup's cosine similarity,
imagededup's Hamming distance) is scored at its own default and at the loosest cut that
makes no false pair (the most it finds when tuned on the answer, which a curator cannot do).

With ``--against CHECKOUT``, pericurate alone: that checkout's cold build and this one's
(``--copies-only``: their copies-only parts), interleaved ``--rounds`` times, each with its
CPU and each step's, what it finds and a digest of its groups and kept films (equal when both
keep the same film of the same groups).

    uv sync --frozen --project bench/peers/env
    uv run --frozen python -m bench.peers.real
    uv run --frozen python -m bench.peers.real --against ../main --rounds 2
    uv run --frozen python -m bench.peers.real --against ../main --rounds 2 --copies-only
    uv run --frozen python -m bench.peers.real --archive-sized

``--archive-sized`` makes the folder of the grey archive-sized films alone (2,943 x 1,435, the
size the archive's films have; the 512-px films are squashed copies, cheap for a tool that
decodes every pixel), with their copies, and writes ``real-archive-sized.json``; its 25
originals are too few for the splits, so pericurate runs up to its groups only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import pyarrow.parquet as pq

from bench.common.corpus import CORPUS_DIR
from bench.common.measure import ChildFailed, child_json, python_child, run_measured
from bench.common.real_films import REAL_FILMS
from bench.common.splits_bench import pericurate
from bench.peers.compare import (
    FASTDUP_DEFAULT,
    IMAGEDEDUP_DEFAULT,
    Groups,
    peer_python,
    run_peer,
    timed_child,
    warm,
)
from bench.peers.real_folder import COPIES, NATIVE_FILMS, TRUTH_FILE, write_folder
from curation.chain.runner import TIMES_FILE
from curation.sample.layout import ORIGINAL_DIR

RESULTS = Path(__file__).with_name("real.json")
ARCHIVE_SIZED_RESULTS = Path(__file__).with_name("real-archive-sized.json")
PEERS = ("fastdup", "imagededup-phash", "cleanvision")
# pericurate's like-for-like row: its CPU up to the same-picture groups (what the peers do).
COPIES_ONLY = "pericurate, copies only"
# The least a design with pericurate's features on every film pays (``bench.peers.floor_child``).
FLOOR = "floor: features of every film"
# Each peer's own default cut, and which way its closeness runs.
DEFAULT_CUT = {"fastdup": FASTDUP_DEFAULT, "imagededup-phash": IMAGEDEDUP_DEFAULT}
HIGHER_IS_CLOSER = {"fastdup": True, "imagededup-phash": False}

Pair = tuple[str, str]


def scored(groups: Groups, truth: dict[str, str]) -> dict[str, int]:
    """Copies found in their original's group, and false pairs among the groups."""
    found = sum(
        groups.find(stem) == groups.find(original)
        for stem, original in truth.items()
        if stem != original
    )
    false_pairs = 0
    for members in groups.members():
        by_original: dict[str, int] = {}
        for film in members:
            by_original[truth[film]] = by_original.get(truth[film], 0) + 1
        same = sum(n * (n - 1) // 2 for n in by_original.values())
        false_pairs += len(members) * (len(members) - 1) // 2 - same
    return {"copies_found": found, "false_pairs": false_pairs}


def _groups(pairs: Iterable[Pair]) -> Groups:
    groups = Groups()
    for a, b in pairs:
        groups.join(a, b)
    return groups


def peer_scores(tool: str, pairs: list[tuple[str, str, float]], truth: dict[str, str]) -> dict:
    """A peer at its default, and (when it gives a closeness) at the loosest cut with no false
    pair."""
    if tool not in DEFAULT_CUT:
        return {"default": scored(_groups((a, b) for a, b, _ in pairs), truth)}
    sign = 1.0 if HIGHER_IS_CLOSER[tool] else -1.0

    def at(cut: float) -> dict[str, int]:
        return scored(_groups((a, b) for a, b, c in pairs if sign * c >= sign * cut), truth)

    best: dict = {"cut": None, "copies_found": 0, "false_pairs": 0}
    for cut in sorted({c for _, _, c in pairs}, key=lambda c: -sign * c):
        result = at(cut)
        if result["false_pairs"]:
            break
        best = {"cut": cut, **result}
    return {"default": {"cut": DEFAULT_CUT[tool], **at(DEFAULT_CUT[tool])}, "no_false_pair": best}


def kept_for(build: Path) -> dict[str, str]:
    """Every film pericurate dropped as a same picture -> the film kept in its place: its
    groups and each group's kept film at once."""
    return {
        row["film_id"]: row["related"]
        for row in pq.read_table(build / "manifest.parquet").to_pylist()
        if row["kind"] == "image" and row["fate"] == "dropped" and row["related"]
    }


def step_cpu(build: Path) -> dict[str, float]:
    """Each chain step's CPU seconds in the build's ``work/times.json`` (the build's own
    record): a cut in one step shows there before it shows above the whole run's spread."""
    times = json.loads((build / "work" / TIMES_FILE).read_text())
    return {step["step"]: step["cpu_s"] for step in times["steps"]}


def _joined(kept: dict[str, str]) -> Groups:
    return _groups(kept.items())


def _digest(kept: dict[str, str]) -> str:
    """One digest of the groups and each group's kept film: equal between runs that agree."""
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def _in_checkout(code: Path, statement: str) -> list[str]:
    """A command running ``statement`` with the checkout at ``code`` first on the path."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(code)!r}); {statement}"]


def _commands(code: Path | None) -> list[str]:
    """How to run pericurate's command line: this checkout's, or the one at ``code``."""
    if code is None:
        return pericurate(sys.executable)
    return _in_checkout(code, "from curation.cli.app import app; app()")


def _download_then(
    source: Path, build: Path, code: Path | None, then: list[str]
) -> tuple[dict, str]:
    """A cold ``download`` of ``source`` into ``build`` (by the checkout at ``code``, else this
    one), then the command ``then``: their summed CPU and wall, the larger peak, the load when
    they started, and what ``then`` printed."""
    shutil.rmtree(build, ignore_errors=True)
    lock = str(build / "source.lock.json")
    load = os.getloadavg()[0]
    download = run_measured(
        [*_commands(code), "download", str(source), "--build", str(build), "--lock", lock]
    )
    after = run_measured(then)
    measured = {
        "cpu_s": round(download.cpu_s + after.cpu_s, 2),
        "wall_s": round(download.wall_s + after.wall_s, 2),
        "peak_rss_mib": max(download.peak_rss_mib, after.peak_rss_mib),
        "load_1min_at_start": load,
    }
    return measured, after.stdout


def _run_pericurate(
    source: Path, build: Path, code: Path | None = None
) -> tuple[dict, dict[str, str]]:
    """A cold ``download`` and ``build`` (of the checkout at ``code``, else this one)."""
    build_command = ["build", "--build", str(build), "--no-fail-on-rejected"]
    measured, _ = _download_then(source, build, code, [*_commands(code), *build_command])
    return measured, kept_for(build)


def _find_copies(
    source: Path, build: Path, code: Path | None = None
) -> tuple[dict, dict[str, str]]:
    """pericurate (of the checkout at ``code``, else this one) up to its same-picture groups
    only, what the peers do (``download``, then the chain through the keeper step:
    ``bench.peers.copies_child``)."""
    if code is None:
        child = python_child("bench.peers.copies_child", str(build))
    else:
        child = _in_checkout(
            code, f"from bench.peers.copies_child import main; main([{str(build)!r}])"
        )
    measured, printed = _download_then(source, build, code, child)
    return measured, json.loads(printed.splitlines()[-1])


def _floor(folder: Path, truth: Path) -> dict:
    """The floor's run (``bench.peers.floor_child``): its CPU, wall, peak memory and what it
    did."""
    measured, run = timed_child(python_child("bench.peers.floor_child", str(folder), str(truth)))
    return {**measured, **child_json(run)}


def measure(
    work: Path | None = None,
    copies: int = COPIES,
    films: int | None = None,
    peers: tuple[str, ...] = PEERS,
    archive_sized: bool = False,
) -> dict:
    """Every tool on the real folder (``archive_sized``: of the archive-sized films alone); see
    the module docstring."""
    needed = NATIVE_FILMS if archive_sized else REAL_FILMS
    if not needed.is_dir():
        return {"measured": False, "why": f"skipped: the real films are absent ({needed})"}
    if peers and not peer_python().exists():
        why = "skipped: the peers are not installed (uv sync --frozen --project bench/peers/env)"
        return {"measured": False, "why": why}
    work = work or CORPUS_DIR / ("peers-real-archive-sized" if archive_sized else "peers-real")
    truth = write_folder(work, copies, films, archive_sized)
    source = work / "source"
    folder = source / ORIGINAL_DIR
    result: dict = {
        "measured": True,
        "folder": {"films": len(truth), "copies": len(truth) - len(set(truth.values()))},
        "runs": [],
    }
    # The archive-sized films alone are too few for splits (25 originals): no whole build.
    whole = () if archive_sized else ("pericurate",)
    for tool in (*whole, COPIES_ONLY, FLOOR, *peers, COPIES_ONLY, *whole):
        warm(source)
        try:
            if tool == FLOOR:
                run = _floor(folder, work / TRUTH_FILE)
            elif tool in ("pericurate", COPIES_ONLY):
                build = work / f"build-{len(result['runs'])}"
                run_tool = _run_pericurate if tool == "pericurate" else _find_copies
                run, kept = run_tool(source, build)
                run["default"] = scored(_joined(kept), truth)
                run["kept_sha256"] = _digest(kept)
            else:
                run, pairs = run_peer(tool, folder, work / tool)
                run |= peer_scores(tool, pairs, truth)
        except ChildFailed as failure:
            run = {"error": str(failure)[-1500:]}
        result["runs"].append({"tool": tool, **run})
    return result


def table(result: dict) -> str:
    """The runs as a Markdown table."""
    if not result["measured"]:
        return result["why"]
    copies = result["folder"]["copies"]
    head = ["tool", "CPU s", "wall s", "peak MiB", "copies found (default)", "false pairs"]
    head.append("copies found, no false pair (cut)")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for run in result["runs"]:
        if "error" in run:
            lines.append(f"| {run['tool']} | failed | | | | | |")
            continue
        cells = [
            run["tool"],
            f"{run['cpu_s']:.1f}",
            f"{run['wall_s']:.1f}",
            f"{run['peak_rss_mib']:.0f}",
        ]
        if "default" in run:
            default, best = run["default"], run.get("no_false_pair")
            tuned = f"{best['copies_found']}/{copies} ({best['cut']})" if best else ""
            cells += [f"{default['copies_found']}/{copies}", str(default["false_pairs"]), tuned]
        else:  # the floor finds no copy: it is the least a design with the features pays
            cells += ["", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    peers = [run["cpu_s"] for run in result["runs"] if run["tool"] in PEERS and "cpu_s" in run]
    if peers:
        lines.append(f"\nThe goal, half the fastest peer's CPU: {min(peers) / 2:.1f} s.")
    return "\n".join(lines)


def against(
    code: Path, rounds: int, work: Path = CORPUS_DIR / "peers-real", copies_only: bool = False
) -> dict:
    """pericurate of the checkout at ``code`` (the baseline) and of this one on the real
    folder, interleaved (baseline, current, ...) ``rounds`` times: each cold build's CPU
    (``copies_only``: of the part up to the same-picture groups, the peers' like), what it
    finds, and whether the groups and kept films agree."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: the real films are absent ({REAL_FILMS})"}
    truth = write_folder(work)
    source = work / "source"
    run_tool = _find_copies if copies_only else _run_pericurate
    runs: list[dict] = []
    for _ in range(rounds):
        for side, checkout in (("baseline", code), ("current", None)):
            warm(source)
            build = work / f"build-{side}"
            run, kept = run_tool(source, build, checkout)
            found = scored(_joined(kept), truth)
            run |= {**found, "kept": _digest(kept), "step_cpu_s": step_cpu(build)}
            runs.append({"side": side, **run})
    part = COPIES_ONLY if copies_only else "pericurate"
    return {"measured": True, "against": str(code), "part": part, "runs": runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.real", description=__doc__)
    parser.add_argument("--copies", type=int, default=COPIES, help="altered copies per film")
    parser.add_argument("--films", type=int, help="the first FILMS real films only")
    parser.add_argument(
        "--archive-sized",
        action="store_true",
        help=f"the archive-sized films alone (results: {ARCHIVE_SIZED_RESULTS.name})",
    )
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--against", type=Path, help="pericurate only: this checkout, then ours")
    parser.add_argument("--rounds", type=int, default=2, help="with --against: rounds of both")
    parser.add_argument(
        "--copies-only",
        action="store_true",
        help="with --against: the part up to the same-picture groups, not the whole build",
    )
    args = parser.parse_args(argv)
    if args.against:
        compared = against(args.against.resolve(), args.rounds, copies_only=args.copies_only)
        print(json.dumps(compared, indent=1))
        return
    peers = tuple(p for p in args.peers.split(",") if p)
    result = measure(None, args.copies, args.films, peers, args.archive_sized)
    if result["measured"] and args.films is None:
        written = ARCHIVE_SIZED_RESULTS if args.archive_sized else RESULTS
        written.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
