"""A rerun of ``make splits`` with nothing changed: every command should see it has nothing
to do (``curation.cli.up_to_date``) and leave every file of the build as it was.

- ``commands_noop(python, source, build)``: the Makefile's four commands (``download``,
  ``build``, ``card``, ``agreement``) in ``build``, run once to settle (that run may do real
  work: a build made by older code, or inputs too recent to be trusted), then once more,
  timed: seconds per command and in total, which commands said they were up to date, and
  whether every file of the build kept its inode and modification time.
- ``make_noop(repo, runs)``: ``make splits`` (the bundled sample) in the checkout ``repo``,
  once to settle, then ``runs`` times, timed: the fastest and the median.
- ``measure(runs)`` (``make bench``, part ``noop``): the bundled sample built in a scratch
  folder, then ``pericurate splits`` (what ``make splits`` runs: one process) and the five
  commands it replaced (``download``, ``build``, ``card``, ``agreement``, ``next``: five
  processes), each rerun with nothing changed, interleaved ``runs`` times: the fastest and the
  median of each side, against the goal (<= 1 s on an idle machine).

Times are wall seconds of child processes (no relay, so nothing is added to a ~0.2 s
command), with the load average at the start and end, since the machine may be shared.
``python -m bench.scale.noop [--build DIR --source ZIP] [--runs N]`` prints the figures as
JSON (the sample through ``make`` always; the four commands on ``--build`` when given).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common.report_cells import met
from bench.common.splits_bench import COMMANDS, pericurate

UP_TO_DATE = "up to date"
REPO = Path(__file__).resolve().parents[2]
NOOP_GOAL_S = 1.0  # a rerun of `make splits` with nothing changed, idle machine


def _arguments(source: Path, build: Path) -> dict[str, tuple[str, ...]]:
    """The Makefile's commands for a local source (a zip or folder), as
    ``bench.common.splits_bench`` runs them on the corpus."""
    lock = build / "source.lock.json"
    return {
        "download": ("download", str(source), "--build", str(build), "--lock", str(lock)),
        "build": ("build", "--build", str(build), "--no-fail-on-rejected"),
        "card": ("card", "--build", str(build)),
        "agreement": ("agreement", "--build", str(build)),
    }


def _timed(command: list[str], cwd: Path | None = None) -> tuple[float, str]:
    """Wall seconds and stderr of ``command``; raises when it fails. Bytecode is written, as
    ``make splits`` lets it be, even where PYTHONDONTWRITEBYTECODE is set."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return round(wall, 3), done.stderr


def _files(build: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for path in build.rglob("*"):
        if path.is_file():
            info = path.stat()
            found[str(path)] = (info.st_ino, info.st_mtime_ns)
    return found


def commands_noop(python: str, source: Path, build: Path) -> dict:
    """Settle the build with the four commands, then time them once more."""
    arguments = _arguments(source, build)
    for command in COMMANDS:
        _timed(pericurate(python, *arguments[command]))
    before = _files(build)
    result: dict = {"load_average_at_start": os.getloadavg()}
    for command in COMMANDS:
        wall, stderr = _timed(pericurate(python, *arguments[command]))
        result[f"{command}_s"] = wall
        result[f"{command}_up_to_date"] = UP_TO_DATE in stderr
    result["total_s"] = round(sum(result[f"{c}_s"] for c in COMMANDS), 3)
    result["outputs_untouched"] = _files(build) == before
    result["load_average_at_end"] = os.getloadavg()
    return result


def make_noop(repo: Path = REPO, runs: int = 5) -> dict:
    """``make splits`` in ``repo``: once to settle, then ``runs`` timed reruns."""
    _timed(["make", "splits"], cwd=repo)
    start_load = os.getloadavg()
    walls = [_timed(["make", "splits"], cwd=repo)[0] for _ in range(runs)]
    return {
        "runs": runs,
        "min_s": min(walls),
        "median_s": statistics.median(walls),
        "all_s": walls,
        "load_average_at_start": start_load,
        "load_average_at_end": os.getloadavg(),
    }


def _program(python: str) -> list[str]:
    """The ``pericurate`` script of ``python``'s environment, as ``make splits`` starts it
    (``bench.common.splits_bench.pericurate`` goes through ``-c``, which skips the entry point)."""
    return [str(Path(python).parent / "pericurate")]


def _one_and_five(python: str, source: Path, build: Path) -> dict[str, list[str]]:
    """``make splits``' command for the sample, and the five commands it replaced."""
    program, where = _program(python), ["--build", str(build)]
    return {
        "one": [*program, "splits", str(source), *where, "--no-fail-on-rejected"],
        "five": [
            [*program, "download", str(source), *where],
            [*program, "build", *where, "--no-fail-on-rejected"],
            [*program, "card", *where],
            [*program, "agreement", *where],
            [*program, "next", *where],
        ],
    }


def measure(
    runs: int = 5, python: str = sys.executable, films: int = 200, sample: Path | None = None
) -> dict:
    """The no-op of ``pericurate splits`` against the five commands it replaced, interleaved
    (``runs`` of each) on a scratch build of the bundled sample (``films`` originals), or of
    ``sample`` when that archive of it is already written."""
    from curation.sample import write_sample_archive

    with tempfile.TemporaryDirectory(prefix="pericurate-noop-") as scratch:
        source, build = sample or Path(scratch) / "sample.zip", Path(scratch) / "build"
        if sample is None:
            write_sample_archive(source, seed=0, films=films)
        commands = _one_and_five(python, source, build)
        _timed(commands["one"])  # the cold build, then a settling rerun
        _timed(commands["one"])
        before = _files(build)
        start_load = os.getloadavg()
        one: list[float] = []
        five: list[float] = []
        said_up_to_date = True
        for _ in range(runs):
            wall, stderr = _timed(commands["one"])
            one.append(wall)
            said_up_to_date &= all(f"{c}: {UP_TO_DATE}" in stderr for c in COMMANDS)
            five.append(round(sum(_timed(c)[0] for c in commands["five"]), 3))
        untouched = _files(build) == before
    return {
        "sample": f"write_sample_archive(seed=0, films={films})",
        "runs": runs,
        "one_process_s": {"min": min(one), "median": statistics.median(one), "all": one},
        "five_processes_s": {"min": min(five), "median": statistics.median(five), "all": five},
        "every_command_up_to_date": said_up_to_date,
        "outputs_untouched": untouched,
        "load_average_at_start": start_load,
        "load_average_at_end": os.getloadavg(),
    }


def report_rows(result: dict) -> list[list[str]]:
    """The row of the ``make bench`` table (``bench.report.tables``)."""
    one, five = result["one_process_s"], result["five_processes_s"]
    load = ", ".join(f"{x:.1f}" for x in result["load_average_at_start"])
    checked = result["every_command_up_to_date"] and result["outputs_untouched"]
    return [
        [
            "`make splits` rerun with nothing changed (`pericurate splits`, bundled sample)",
            f"{one['min']:.2f} s fastest, {one['median']:.2f} s median of {result['runs']} "
            f"(load {load}){'' if checked else '; a command ran or rewrote a file'}",
            f"{five['min']:.2f} s fastest for the five commands it replaced",
            f"{one['min'] / five['min']:.2f}x",
            f"<= {NOOP_GOAL_S:g} s idle",
            met(one["min"] <= NOOP_GOAL_S and checked),
        ]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.noop", description=__doc__)
    parser.add_argument("--build", type=Path, help="a build folder to rerun the commands in")
    parser.add_argument("--source", type=Path, help="the local zip or folder it was built from")
    parser.add_argument("--runs", type=int, default=5, help="timed `make splits` reruns")
    parser.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"))
    args = parser.parse_args(argv)
    if (args.build is None) != (args.source is None):
        parser.error("--build and --source go together")
    figures: dict = {"make_splits_sample": make_noop(REPO, args.runs)}
    if args.build is not None:
        figures["commands"] = commands_noop(args.python, args.source, args.build)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
