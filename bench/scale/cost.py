"""The cost of a change: cold ``make splits`` of a baseline commit and of this checkout on
one corpus, in one run, interleaved (baseline, current, baseline, current), so that other
load on the machine weighs on both sides alike.

The baseline is checked out with ``git worktree add --detach`` into a temporary folder and
run with this interpreter (its dependencies are a subset of today's); each side builds into
a fresh folder with the Makefile's four commands, then runs the four again with nothing
changed (the no-op rerun), and, with ``audit=True``, ``pericurate audit`` of its last build.
The current side's last build stays in ``builds/current`` with its ``work/times.json`` (CPU
per step). ``python -m bench.scale.cost --baseline b9ab0a2`` prints the table; ``measure`` returns
the figures for ``python -m bench.run``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common.measure import run_measured

REPO = Path(__file__).resolve().parents[2]
COMMANDS = ("download", "build", "card", "agreement")
# Where the command-line app lives: today's package, or the single module of commits before
# issue 24 moved the code into subpackages (a baseline may be either).
ENTRIES = (("curation/cli/app.py", "curation.cli.app"), ("curation/cli.py", "curation.cli"))
ISSUE_11_BASELINE = "b9ab0a2"  # the commit issue 11 measured on: "at most 20% more than now"


def _commands(archive: Path, build: Path) -> dict[str, list[str]]:
    return {
        "download": ["download", str(archive), "--build", str(build), "--lock", str(build / "l")],
        "build": ["build", "--build", str(build), "--no-fail-on-rejected"],
        "card": ["card", "--build", str(build)],
        "agreement": ["agreement", "--build", str(build)],
    }


def _program(checkout: Path) -> list[str]:
    module = next((m for path, m in ENTRIES if (checkout / path).is_file()), None)
    if module is None:
        raise FileNotFoundError(f"{checkout} holds no pericurate checkout")
    entry = f"from {module} import app; app()"
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(checkout)!r})\n{entry}"]


def _step_seconds(build: Path) -> dict[str, float]:
    """Wall seconds of each step of the build in ``build`` (its ``work/times.json``), as
    ``step_<name>``: what a change costs in the steps it touches, apart from the others."""
    times = build / "work" / "times.json"
    if not times.is_file():
        return {}
    return {f"step_{s['step']}": s["wall_s"] for s in json.loads(times.read_text())["steps"]}


def cold_splits(checkout: Path, archive: Path, build: Path) -> dict[str, float]:
    """Seconds per command of a cold ``make splits`` with ``checkout``'s code, then of the
    same four commands rerun with nothing changed (``noop_*``)."""
    shutil.rmtree(build, ignore_errors=True)
    program = _program(checkout)
    seconds = {}
    for prefix in ("", "noop_"):
        for name, arguments in _commands(archive, build).items():
            measured = run_measured([*program, *arguments])
            seconds[prefix + name] = measured.wall_s
            if name == "build":
                seconds[prefix + "build_cpu_s"] = measured.cpu_s
                seconds[prefix + "build_peak_rss_mib"] = measured.peak_rss_mib
                if not prefix:
                    seconds.update(_step_seconds(build))
        seconds[prefix + "total"] = round(sum(seconds[prefix + c] for c in COMMANDS), 3)
    return seconds


def audit_measured(checkout: Path, build: Path, rounds: int = 1) -> dict[str, float]:
    """Wall and CPU seconds and peak RSS of ``pericurate audit`` of ``build`` with
    ``checkout``'s code, medians of ``rounds`` runs (exit 1, leakage found, counts as a run
    too). Two audits of one build differed by up to 5 s of 40 here, hence the median."""
    command = [*_program(checkout), "audit", str(build), "--out", str(build.parent / "audit")]
    runs = [run_measured(command, ok_codes=(0, 1)) for _ in range(rounds)]
    return {
        "wall_s": statistics.median(m.wall_s for m in runs),
        "cpu_s": statistics.median(m.cpu_s for m in runs),
        "peak": statistics.median(m.peak_rss_mib for m in runs),
    }


@contextmanager
def _checkouts(baseline: str | None) -> Iterator[tuple[tuple[str, Path], ...]]:
    """Each side's checkout: ``baseline`` in a temporary ``git worktree``, then this one;
    with no baseline, this checkout alone (the smoke test's tiny sizes: the code measured
    once, no checkout made)."""
    if baseline is None:
        yield (("current", REPO),)
        return
    with tempfile.TemporaryDirectory(prefix="pericurate-cost-") as scratch:
        old = Path(scratch) / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), baseline],
            check=True,
            capture_output=True,
        )
        try:
            yield (("baseline", old), ("current", REPO))
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )


def measure(
    archive: Path,
    baseline: str | None,
    rounds: int = 2,
    audit: bool = False,
    builds: Path | None = None,
) -> dict:
    """Interleaved cold builds and no-op reruns of ``baseline`` and this checkout, medians
    and the ratio; with ``audit``, each side's audit of its last build. Build folders go
    below ``builds`` (default: beside the archive). With no baseline, this checkout alone
    and no ratio."""
    builds = builds or archive.parent / f"{archive.stem}-cost"
    cold = (*COMMANDS, "total", "build_cpu_s", "build_peak_rss_mib")
    figures = (*cold, *(f"noop_{c}" for c in (*COMMANDS, "total")))
    with _checkouts(baseline) as sides:
        runs: dict[str, list[dict[str, float]]] = {side: [] for side, _ in sides}
        for _ in range(rounds):
            for side, checkout in sides:
                runs[side].append(cold_splits(checkout, archive, builds / side))
        audits = (
            {side: audit_measured(c, builds / side, rounds) for side, c in sides} if audit else {}
        )
    steps = sorted({k for rs in runs.values() for r in rs for k in r if k.startswith("step_")})
    medians = {
        side: {
            c: statistics.median(r[c] for r in rs)
            for c in (*figures, *steps)
            if all(c in r for r in rs)
        }
        for side, rs in runs.items()
    }
    times = builds / "current" / "work" / "times.json"
    return {
        "archive": archive.name,
        "baseline": baseline,
        "rounds": rounds,
        "runs": runs,
        "median": medians,
        "ratio": (
            round(medians["current"]["total"] / medians["baseline"]["total"], 3)
            if "baseline" in medians
            else None
        ),
        "audit_s": {side: a["wall_s"] for side, a in audits.items()},
        "audit_cpu_s": {side: a["cpu_s"] for side, a in audits.items()},
        "audit_peak_rss_mib": {side: a["peak"] for side, a in audits.items()},
        "step_times": json.loads(times.read_text()) if times.is_file() else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.cost", description=__doc__)
    parser.add_argument("--baseline", default=ISSUE_11_BASELINE, help="commit to compare with")
    parser.add_argument("--zip", type=Path, required=True, help="corpus archive")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--audit", action="store_true", help="also audit each side's build")
    parser.add_argument("--out", type=Path, help="also write the figures here, as JSON")
    args = parser.parse_args(argv)
    result = measure(args.zip, args.baseline, args.rounds, args.audit)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| side | " + " | ".join(COMMANDS) + " | total | no-op rerun | audit |")
    print("|---|" + "---|" * (len(COMMANDS) + 3))
    for side, figures in result["median"].items():
        cells = " | ".join(f"{figures[c]:.1f}" for c in (*COMMANDS, "total", "noop_total"))
        audit = result["audit_s"].get(side)
        print(f"| {side} (median of {args.rounds}) | {cells} | {audit or '':} |")
    print(f"current / baseline: {result['ratio']:.2f}")


if __name__ == "__main__":
    main()
