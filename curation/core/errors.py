"""The one error base class of the ``pericurate`` command line, and how a run ends on faults.

Anything a user can cause (a bad source, a bad build folder, a refused push) raises a
``PericurateError`` whose message is one sentence naming the file and the problem; the CLI
prints it as one plain line and exits with its ``exit_code``. A full disk is told the same
way (``naming_full_disk``), and a Ctrl-C ends any command with one line and exit 130
(``exit_interrupted``).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import NoReturn

EXIT_FAILED = 1  # the machine failed the run (a full disk), not its input
EXIT_USAGE = 2  # usage and source errors
EXIT_INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a Ctrl-C
INTERRUPTED = (
    "Interrupted: every output is a whole file, from this run or an earlier one; "
    "rerun the command to finish."
)
FULL = (errno.ENOSPC, errno.EDQUOT)


class PericurateError(Exception):
    """A problem a user will meet, told in one sentence; never a traceback."""

    exit_code = EXIT_USAGE


class SourceError(PericurateError):
    """The source cannot be used; the message names the file or URL and the problem."""


class DamagedArchiveError(SourceError):
    """The archive's data does not match its own checksums (a broken or spliced download)."""


class SplitsError(PericurateError):
    """The kept films cannot fill every split; the message names why (too few films, or
    look-alike groups too large for the small splits)."""


class DiskFullError(PericurateError):
    """No space (or quota) left while writing a file; the message names the file."""

    exit_code = EXIT_FAILED


def is_disk_full(error: BaseException) -> bool:
    """True for the error a write gets on a full disk or an exhausted quota (pyarrow's
    writers raise it with the same errno)."""
    return isinstance(error, OSError) and error.errno in FULL


def full_disk_message(path: Path | str | None, kept: str) -> str:
    """One sentence: the file (when the error knows it), what was kept, what to do."""
    if path is None:
        return f"No space left on the device while writing an output; {kept}: free space and rerun."
    return f"{path}: no space left on the device while writing it; {kept}: free space and rerun."


@contextmanager
def naming_full_disk(
    path: Path | str, kept: str = "the previous file, if any, is unchanged"
) -> Iterator[None]:
    """A full disk while writing ``path`` becomes a ``DiskFullError`` naming it and saying
    what was kept."""
    try:
        yield
    except OSError as error:
        if is_disk_full(error):
            raise DiskFullError(full_disk_message(path, kept)) from None
        raise


def exit_interrupted() -> NoReturn:
    """End the process after a Ctrl-C: one line, exit 130, without waiting for threads or
    workers (a thread blocked in an interrupted import would hang an ordinary exit; workers
    exit with their parent, ``curation.core.parallel``). Call it once the main thread has unwound,
    so that every ``finally`` (temporary files, locks) has run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing now
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed or broken stream has nothing to keep
            stream.flush()
    os.write(2, (INTERRUPTED + "\n").encode())
    os._exit(EXIT_INTERRUPTED)


def interrupts_end_in_one_line(
    kind: type[BaseException], value: BaseException, tb: TracebackType | None
) -> None:
    """``sys.excepthook``: a Ctrl-C that reached the top (while modules were still being
    imported) ends like any other; everything else as Python would."""
    if issubclass(kind, KeyboardInterrupt):
        exit_interrupted()
    sys.__excepthook__(kind, value, tb)
