"""Running a test's child module in a process of its own (a fresh interpreter: nothing the test
process has loaded or set reaches it), from the repository, and reading what it printed last."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).parents[1]


def child_json(module: str, *args: str, timeout: float = 120) -> Any:
    """``python -m module args`` run from the repository; the last line it printed, as JSON.
    It must exit 0; ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
