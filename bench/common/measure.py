"""Run a command as a child process and measure it: wall time, the child's peak RSS and the
CPU seconds of the child and its reaped descendants.

``os.wait4`` returns the resource usage of that one child (and its reaped descendants, such
as hash worker processes); ``ru_maxrss`` is the largest resident set of any single process
in that tree (KiB on Linux). Linux counts in it the memory the child had between fork and
exec, i.e. a copy of the forking process; so the command is started by a tiny relay
(``python -m bench.common.measure FILE COMMAND...``, this module's ``__main__``) that does the
``wait4`` and writes the figure, and the large bench process never forks the measured one.
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
    cpu_s: float = 0.0  # user and system time of the child and the workers it reaped


class ChildFailed(RuntimeError):
    """A measured command exited non-zero; the message carries the tail of its stderr."""


def run_measured(command: list[str], ok_codes: tuple[int, ...] = (0,)) -> Measured:
    """Run ``command`` to the end; raise ``ChildFailed`` naming it when its exit code is not
    one of ``ok_codes``."""
    with (
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
        tempfile.NamedTemporaryFile("r") as rss,
    ):
        relay = [sys.executable, "-m", "bench.common.measure", rss.name, *command]
        start = time.perf_counter()
        code = subprocess.run(relay, stdout=out, stderr=err, text=True, check=False).returncode
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        peak_kib, cpu = (rss.read() or "0 0").split()
    if code not in ok_codes:
        raise ChildFailed(f"{' '.join(command)} exited {code}: {stderr[-2000:]}")
    return Measured(round(wall, 3), round(int(peak_kib) / 1024, 1), stdout, code, float(cpu))


def python_child(module: str, *args: str) -> list[str]:
    """A command running ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def child_json(measured: Measured) -> dict:
    """The JSON object a bench child prints as its last line."""
    return json.loads(measured.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    # The relay: run the command, write its tree's peak RSS (KiB) and CPU seconds, exit with
    # its code.
    relayed = subprocess.Popen(sys.argv[2:])
    _, relayed_status, relayed_usage = os.wait4(relayed.pid, 0)
    with open(sys.argv[1], "w") as figure:
        cpu = relayed_usage.ru_utime + relayed_usage.ru_stime
        figure.write(f"{relayed_usage.ru_maxrss} {cpu:.3f}")
    sys.exit(os.waitstatus_to_exitcode(relayed_status))
