"""One command at a time per build folder: ``download``, every step and ``build``, ``card``,
``audit`` of a build and ``push`` hold ``BUILD/.pericurate.lock`` (``filelock``) while they
run, and a second one is refused in one sentence instead of mixing its outputs with the
first's (two builds with different seeds once left one's shards beside the other's
manifest). Under the lock, the temporary files of earlier runs that were killed midway are
removed (``curation.core.atomic.remove_leftovers``).

The lock is taken before a command's up-to-date check, so that check never reads a folder
another run is writing; it is not taken on a folder that does not exist yet (nothing there
to mix), nor by ``audit`` on one this user may not write to (someone else's files, a
read-only mount: the audit can write its report elsewhere). A command that writes into the
folder is refused there in one sentence (``BuildFolderReadOnly``).
"""

from __future__ import annotations

import errno
import functools
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from curation.core.errors import PericurateError

LOCK_NAME = ".pericurate.lock"
Command = TypeVar("Command", bound=Callable[..., Any])
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class BuildFolderBusy(PericurateError):
    """Another pericurate command holds the build folder."""


class BuildFolderReadOnly(PericurateError):
    """A command that writes into the build folder was given one it cannot write to."""


@contextmanager
def holding_build_folder(
    folder: Path, command: str, *, writes: bool = True, kind: str = "build folder"
) -> Iterator[None]:
    """Hold ``folder``'s lock for ``command`` (refused at once when another command holds
    it) and remove earlier runs' leftovers; a missing folder is not locked, nor a read-only
    one that ``command`` only reads (``writes=False``). ``kind`` names the folder in the
    refusal (the audit's report folder is held too)."""
    from filelock import FileLock, Timeout  # a few ms; the help never pays it

    from curation.core.atomic import remove_leftovers

    if not folder.is_dir():
        yield
        return
    lock = FileLock(folder / LOCK_NAME, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise BuildFolderBusy(
            f"{folder}: another pericurate command is using this {kind}, so "
            f"'{command}' did not start; wait for it to finish or use another {kind}."
        ) from None
    except OSError as error:
        if error.errno not in NOT_WRITABLE:
            raise
        if writes:
            raise BuildFolderReadOnly(
                f"{folder}: this {kind} cannot be written to ({error.strerror}), so "
                f"'{command}' did not start; use a {kind} you can write to."
            ) from None
        yield  # not ours to write: nothing of ours can mix there
        return
    try:
        remove_leftovers(folder)
        yield
    finally:
        lock.release()


def unwritable_message(error: OSError, path: Path | str | None = None) -> str:
    """One sentence for a write refused by the file system, naming the file (``path``, else
    the error's own)."""
    return (
        f"{path or error.filename}: cannot be written ({error.strerror}); choose a place you "
        "can write to."
    )


class FolderNotWritable(PericurateError):
    """An output folder is on a read-only file system or not ours to write."""


def check_writable(folder: Path) -> None:
    """Refuse ``folder`` in one sentence when nothing can be written there, before any work:
    a probe file is made and removed in the nearest folder that exists (nothing is left, not
    even ``folder``)."""
    existing = next((p for p in (folder, *folder.parents) if p.is_dir()), Path("."))
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        if error.errno not in NOT_WRITABLE:
            raise
        raise FolderNotWritable(unwritable_message(error, folder)) from None


def is_build_folder(folder: Path) -> bool:
    """A folder a build wrote (its records or its summary), not any folder of parquet files."""
    return (folder / "work").is_dir() or (folder / "curation.json").is_file()


def holds_build_folder(
    command: str, argument: str = "build", *, builds_only: bool = False, writes: bool = True
) -> Callable[[Command], Command]:
    """Decorate a command function: it runs holding the folder named by its ``argument``
    (keyword) argument, with ``builds_only`` only when that is a build folder (``audit``'s
    TARGET may be a Hub revision or anyone's parquet files), refused on a folder it cannot
    write to when it ``writes`` there; its signature, which typer reads, is kept
    (``functools.wraps``)."""

    def decorate(function: Command) -> Command:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            folder = kwargs.get(argument)
            if folder is None or (builds_only and not is_build_folder(Path(folder))):
                return function(*args, **kwargs)
            with holding_build_folder(Path(folder), command, writes=writes):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # same call signature as ``function``

    return decorate
