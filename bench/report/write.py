"""Write ``results.json`` and ``RESULTS.md`` (the table of ``bench.report.tables`` above the
hand-written notes, which are kept across runs)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.report.tables import table
from curation.core.atomic import write_bytes, write_json

NOTES_MARK = "<!-- measured table above; notes below are kept across runs -->"


def _machine_line(machine: dict) -> str:
    start = ", ".join(f"{x:.1f}" for x in machine["load_average_at_start"])
    end = ", ".join(f"{x:.1f}" for x in machine.get("load_average_at_end", []))
    return (
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
        f"Python {machine['python']}; load average at start {start}, at end {end} "
        "(other work on the machine slows every figure; ratios are fairer than times)."
    )


def write_results(results: dict, json_path: Path, markdown_path: Path) -> None:
    """Write both files atomically; hand-written notes below ``NOTES_MARK`` are kept."""
    write_json(json_path, json.loads(json.dumps(results)))
    notes = ""
    if markdown_path.exists():
        old = markdown_path.read_text()
        if NOTES_MARK in old:
            notes = old.split(NOTES_MARK, 1)[1]
    text = (
        "# Benchmark results (`make bench`)\n\n"
        f"Run started {results['started']}. {_machine_line(results['machine'])}\n\n"
        f"{table(results)}\n\n{NOTES_MARK}{notes}"
    )
    write_bytes(markdown_path, text.encode("utf-8"))
