"""``pericurate next``: the short "what now" table ``make splits`` ends with, so a first run
shows where its results are and the next commands to type (each one runs as printed).

Reads ``curation.json`` with the stdlib only: the table costs an interpreter start, no more.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from curation.source.source import LOCK_NAME, lock_path


@dataclass(frozen=True)
class NextStep:
    """One row of the table: what it is, where to find it, and a note."""

    what: str
    where: str  # a path to open, or a command to type
    note: str


def _quoted(path: Path) -> str:
    return shlex.quote(str(path))


def pericurate_command() -> str:
    """How to run pericurate from here: the environment's own script (``.venv/bin/pericurate``
    from the project folder). Never ``uv run``: ``make`` may have installed uv off PATH, and
    with uv on PATH ``uv run`` would first install the dev tools."""
    script = Path(sys.executable).parent / "pericurate"
    if script.is_relative_to(Path.cwd()):
        script = script.relative_to(Path.cwd())
    return _quoted(script)


def next_steps(build: Path) -> list[NextStep]:
    """Where the build's results are and the commands that come next; empty before a build."""
    try:
        summary = json.loads((build / "curation.json").read_text(encoding="utf-8"))
        synthetic = bool(summary["source"]["synthetic"])
    except (OSError, ValueError, KeyError, TypeError):
        return []
    folder = _quoted(build)
    lock = lock_path(build, None)
    pericurate = pericurate_command()
    push = f"{pericurate} push --repo OWNER/NAME --build {folder} --dry-run"
    if lock != build / LOCK_NAME:
        push += f" --lock {_quoted(lock)}"
    if synthetic:
        push += " --allow-synthetic"
    sample = "; synthetic sample: its figures say nothing of the real archive" if synthetic else ""
    return [
        NextStep("dataset", str(build / "dataset" / "data"), f"one parquet file per split{sample}"),
        NextStep("review page", str(build / "review" / "index.html"), "open it in a browser"),
        NextStep("dataset card", str(build / "dataset" / "README.md"), "figures of this build"),
        NextStep(
            "audit",
            f"{pericurate} audit {folder}",
            f"leak check of the splits; report in {build / 'audit'}",
        ),
        NextStep("push, dry run", push, "lists what would be published; sends nothing"),
    ]


def next_table(build: Path) -> str:
    """The steps as plain lines (no table borders: the commands stay whole to copy)."""
    steps = next_steps(build)
    if not steps:
        return f"{build / 'curation.json'}: no build yet; run `make splits` first."
    width = max(len(step.what) for step in steps)
    lines = ["What now:"]
    for step in steps:
        lines.append(f"  {step.what:<{width}}  {step.where}")
        lines.append(f"  {'':<{width}}  ({step.note})")
    return "\n".join(lines)
