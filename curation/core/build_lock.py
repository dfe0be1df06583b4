"""One command at a time per build folder: ``download``, every step and ``build``, ``card``,
``audit`` of a build and ``push`` hold ``BUILD/.pericurate.lock`` (``filelock``) while they
run, and a second one is refused in one sentence instead of mixing its outputs with the
first's (two builds with different seeds once left one's shards beside the other's
manifest). Under the lock, the temporary files of earlier runs that were killed midway are
removed (``curation.core.atomic.remove_leftovers``).

The lock is taken before a command's up-to-date check, so that check never reads a folder
another run is writing; it is not taken on a folder that does not exist yet (nothing there
to mix), nor on one this user may not write to (``audit`` of someone else's files).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from curation.core.errors import PericurateError

LOCK_NAME = ".pericurate.lock"
Command = TypeVar("Command", bound=Callable[..., Any])


class BuildFolderBusy(PericurateError):
    """Another pericurate command holds the build folder."""


@contextmanager
def holding_build_folder(folder: Path, command: str) -> Iterator[None]:
    """Hold ``folder``'s lock for ``command`` (refused at once when another command holds
    it) and remove earlier runs' leftovers; a missing or read-only folder is not locked."""
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
            f"{folder}: another pericurate command is using this build folder, so "
            f"'{command}' did not start; wait for it to finish or use another build folder."
        ) from None
    except PermissionError:  # not ours to write: nothing of ours can mix there
        yield
        return
    try:
        remove_leftovers(folder)
        yield
    finally:
        lock.release()


def is_build_folder(folder: Path) -> bool:
    """A folder a build wrote (its records or its summary), not any folder of parquet files."""
    return (folder / "work").is_dir() or (folder / "curation.json").is_file()


def holds_build_folder(
    command: str, argument: str = "build", *, builds_only: bool = False
) -> Callable[[Command], Command]:
    """Decorate a command function: it runs holding the folder named by its ``argument``
    (keyword) argument, with ``builds_only`` only when that is a build folder (``audit``'s
    TARGET may be a Hub revision or anyone's parquet files); its signature, which typer
    reads, is kept (``functools.wraps``)."""

    def decorate(function: Command) -> Command:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            folder = kwargs.get(argument)
            if folder is None or (builds_only and not is_build_folder(Path(folder))):
                return function(*args, **kwargs)
            with holding_build_folder(Path(folder), command):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # same call signature as ``function``

    return decorate
