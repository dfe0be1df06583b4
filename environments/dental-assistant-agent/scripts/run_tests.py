"""Run this package's tests and save their outcomes under validation/.

    python scripts/run_tests.py [pytest args...]

Writes validation/test_results.json: every test id with its outcome and the counts, sorted
and without timings, so the same code gives the same file. Exits with pytest's code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
OUTPUT = PACKAGE / "validation" / "test_results.json"


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed / failed / error / skipped, from a JUnit XML report."""
    results = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        results[name] = {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"
    return dict(sorted(results.items()))


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "tests", "-q", f"--junitxml={junit}"]
        code = subprocess.run([*command, *sys.argv[1:]], cwd=PACKAGE, check=False).returncode
        if not junit.exists():
            raise SystemExit(f"{junit}: pytest wrote no report (exit code {code})")
        results = outcomes(junit)
    counts = {kind: list(results.values()).count(kind) for kind in sorted(set(results.values()))}
    report = {"counts": counts, "pytest_exit_code": code, "tests": results}
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=OUTPUT.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(json.dumps(report, indent=2) + "\n")
    os.replace(tmp.name, OUTPUT)
    print(f"{counts} -> {OUTPUT}")
    raise SystemExit(code)


if __name__ == "__main__":
    main()
