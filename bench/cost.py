"""The cost of a change: cold ``make splits`` of a baseline commit and of this checkout on
one corpus, in one run, interleaved (baseline, current, baseline, current), so that other
load on the machine weighs on both sides alike.

The baseline is checked out with ``git worktree add --detach`` into a temporary folder and
run with this interpreter (its dependencies are a subset of today's); each side builds into
a fresh folder with the Makefile's four commands. ``python -m bench.cost --baseline b9ab0a2``
prints the table; ``measure`` returns the figures for ``python -m bench.run``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.measure import run_measured

REPO = Path(__file__).resolve().parent.parent
COMMANDS = ("download", "build", "card", "agreement")
ENTRY = "from curation.cli import app; app()"
ISSUE_11_BASELINE = "b9ab0a2"  # the commit issue 11 measured on: "at most 20% more than now"


def _commands(archive: Path, build: Path) -> dict[str, list[str]]:
    return {
        "download": ["download", str(archive), "--build", str(build), "--lock", str(build / "l")],
        "build": ["build", "--build", str(build), "--no-fail-on-rejected"],
        "card": ["card", "--build", str(build)],
        "agreement": ["agreement", "--build", str(build)],
    }


def cold_splits(checkout: Path, archive: Path, build: Path) -> dict[str, float]:
    """Seconds per command of a cold ``make splits`` with ``checkout``'s code."""
    shutil.rmtree(build, ignore_errors=True)
    if not (checkout / "curation" / "cli.py").is_file():
        raise FileNotFoundError(f"{checkout} holds no pericurate checkout")
    program = f"import sys; sys.path.insert(0, {str(checkout)!r})\n{ENTRY}"
    seconds = {}
    for name, arguments in _commands(archive, build).items():
        run = run_measured([sys.executable, "-c", program, *arguments])
        seconds[name] = run.wall_s
    seconds["total"] = round(sum(seconds[c] for c in COMMANDS), 3)
    return seconds


def measure(archive: Path, baseline: str, rounds: int = 2) -> dict:
    """Interleaved cold builds of ``baseline`` and this checkout; medians and the ratio."""
    with tempfile.TemporaryDirectory(prefix="pericurate-cost-") as scratch:
        old = Path(scratch) / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), baseline],
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
            for _ in range(rounds):
                for side, checkout in (("baseline", old), ("current", REPO)):
                    build = Path(scratch) / f"build-{side}"
                    runs[side].append(cold_splits(checkout, archive, build))
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )
    medians = {
        side: {c: statistics.median(r[c] for r in rs) for c in (*COMMANDS, "total")}
        for side, rs in runs.items()
    }
    ratio = medians["current"]["total"] / medians["baseline"]["total"]
    return {
        "baseline": baseline,
        "rounds": rounds,
        "runs": runs,
        "median": medians,
        "ratio": round(ratio, 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__)
    parser.add_argument("--baseline", default=ISSUE_11_BASELINE, help="commit to compare with")
    parser.add_argument("--zip", type=Path, required=True, help="corpus archive")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    result = measure(args.zip, args.baseline, args.rounds)
    print("| side | " + " | ".join(COMMANDS) + " | total |")
    print("|---|" + "---|" * (len(COMMANDS) + 1))
    for side, figures in result["median"].items():
        cells = " | ".join(f"{figures[c]:.1f}" for c in (*COMMANDS, "total"))
        print(f"| {side} (median of {args.rounds}) | {cells} |")
    print(f"current / baseline: {result['ratio']:.2f}")


if __name__ == "__main__":
    main()
