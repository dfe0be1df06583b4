"""Run a command as a child process and measure it: wall time and the child's peak RSS.

``os.wait4`` returns the resource usage of that one child (and its reaped descendants, such
as hash worker processes), so each measurement starts from zero; ``ru_maxrss`` is the largest
resident set of any single process in that tree (KiB on Linux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_rss_mib: float
    stdout: str
    exit_code: int = 0


class ChildFailed(RuntimeError):
    """A measured command exited non-zero; the message carries the tail of its stderr."""


def run_measured(command: list[str], ok_codes: tuple[int, ...] = (0,)) -> Measured:
    """Run ``command`` to the end; raise ``ChildFailed`` naming it when its exit code is not
    one of ``ok_codes``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if child.returncode not in ok_codes:
        raise ChildFailed(f"{' '.join(command)} exited {child.returncode}: {stderr[-2000:]}")
    return Measured(round(wall, 3), round(usage.ru_maxrss / 1024, 1), stdout, child.returncode)


def python_child(module: str, *args: str) -> list[str]:
    """A command running ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def child_json(measured: Measured) -> dict:
    """The JSON object a bench child prints as its last line."""
    return json.loads(measured.stdout.strip().splitlines()[-1])
