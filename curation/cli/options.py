"""Command-line options that several commands share, each defined once. Only typer is
imported here, so that the commands' help stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DEFAULT_BUILD = Path("build")
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.")]

LOCK_NAME = "source.lock.json"
# Where earlier versions kept the lock: the folder the command ran in.
OLD_LOCK = Path(LOCK_NAME)
SourceLock = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        help=f"sha256/size lock of the source archive [default: BUILD/{LOCK_NAME}, or "
        f"./{LOCK_NAME} when an earlier version left one there].",
        show_default=False,
    ),
]


def lock_path(build: Path, lock: Path | None) -> Path:
    """The source lock a command uses: ``lock`` when given, else the build folder's, else one
    an earlier version left in the working folder (``OLD_LOCK``) when only that one exists."""
    if lock is not None:
        return lock
    in_build = build / LOCK_NAME
    return OLD_LOCK if not in_build.exists() and OLD_LOCK.is_file() else in_build


def old_lock_note(lock: Path) -> str | None:
    """One line saying that the lock in use is at its old place, or ``None``."""
    if lock != OLD_LOCK:
        return None
    return (
        f"using ./{LOCK_NAME} (where earlier versions kept the source lock); new builds keep "
        f"it in the build folder: move it to BUILD/{LOCK_NAME} to do the same."
    )
