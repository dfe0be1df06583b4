"""Smoke command: the reference policy over every default case, saved under validation/.

    uv run python -m dental_assistant_agent.smoke [output.json]

Writes per-case rewards and components (no timings, so reruns are byte-identical) and
exits non-zero unless every case scores 1.0.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from dental_assistant_agent.runner import run_policies
from dental_assistant_agent.taskset import DentalAssistantConfig, DentalAssistantTaskset

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "validation" / "reference_smoke.json"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)


async def smoke() -> dict:
    rows = []
    for split in ("train", "eval"):
        config = DentalAssistantConfig(split=split)
        tasks = list(DentalAssistantTaskset(config))
        traces = await run_policies([("reference", task) for task in tasks], config)
        for task, trace in zip(tasks, traces, strict=True):
            rows.append(
                {
                    "case_id": task.data.id,
                    "reward": trace.reward,
                    "metrics": dict(sorted(trace.metrics.items())),
                    "turns": trace.num_turns,
                    "stop": trace.stop_condition,
                    "errors": [error.message for error in trace.errors],
                }
            )
    return {
        "policy": "reference",
        "cases": len(rows),
        "all_perfect": all(row["reward"] == 1.0 for row in rows),
        "rows": rows,
    }


def main() -> None:
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUTPUT
    report = asyncio.run(smoke())
    _write_atomic(output, json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"{report['cases']} cases, all 1.0: {report['all_perfect']} -> {output}")
    sys.exit(0 if report["all_perfect"] else 1)


if __name__ == "__main__":
    main()
