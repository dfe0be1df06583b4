"""The one error base class of the ``pericurate`` command line.

Anything a user can cause (a bad source, a bad build folder, a refused push) raises a
``PericurateError`` whose message is one sentence naming the file and the problem; the CLI
prints it as one plain line and exits with its ``exit_code``.
"""

from __future__ import annotations

EXIT_USAGE = 2  # usage and source errors


class PericurateError(Exception):
    """A problem a user will meet, told in one sentence; never a traceback."""

    exit_code = EXIT_USAGE


class SourceError(PericurateError):
    """The source cannot be used; the message names the file or URL and the problem."""


class DamagedArchiveError(SourceError):
    """The archive's data does not match its own checksums (a broken or spliced download)."""
