"""Progress bars (rich) for long work: the chain's steps and the audit report their per-file
work to a ``Tracker`` that ``progress_bars`` makes, one bar per piece of work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from curation.core.parallel import Tracker

Track = Callable[[str, int | None], Tracker]  # a new bar: its description, its total if known


@dataclass(frozen=True)
class Bar:
    """One bar of a progress display: a ``Tracker``."""

    progress: Progress
    task: TaskID

    def total(self, count: int) -> None:
        self.progress.update(self.task, total=count)

    def advance(self, count: int) -> None:
        self.progress.advance(self.task, count)


@contextmanager
def progress_bars(console: Console | None = None) -> Iterator[Track]:
    """A progress display on ``console`` (default: rich's), shown from its first bar on, so
    that an error before any work prints alone; yields ``track(description, total)``, which
    adds a bar."""
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn())
    progress = Progress(*columns, TimeElapsedColumn(), console=console, transient=False)
    shown: list[bool] = []

    def track(description: str, total: int | None) -> Tracker:
        if not shown:
            progress.start()
            shown.append(True)
        return Bar(progress, progress.add_task(description, total=total))

    try:
        yield track
    finally:
        if shown:
            progress.stop()
