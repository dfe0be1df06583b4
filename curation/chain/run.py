"""What a step is given: ``Run`` (the source, the build folder, the settings, a progress bar
and the executor's ``map``) and the time each step took. Apart from the declaration
(``curation.chain.chain``), so that step functions can name these types without importing
the chain that lists them."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from curation.chain.settings import Settings
from curation.core.parallel import Mapper, Tracker

if TYPE_CHECKING:
    from curation.source.source import Source

Products = Mapping[str, object]


@dataclass(frozen=True)
class StepTime:
    """How long one step took: wall seconds, and CPU seconds of this process and of the
    worker processes the step started and joined (its per-file work)."""

    step: str
    wall_s: float
    cpu_s: float


@dataclass(frozen=True)
class Run:
    """What every step may use besides the products of the steps before it."""

    source: Source
    out: Path  # the build folder
    settings: Settings
    track: Callable[[str, int | None], Tracker]  # a progress bar: description, total if known
    map: Mapper  # where per-file work runs (the executor's)

    def cache(self, name: str) -> Path:
        """A step's cache file, below ``BUILD/cache``."""
        return self.out / "cache" / name

    @contextmanager
    def scratch(self, name: str) -> Iterator[Path]:
        """A step's folder for files its workers read (they see the build folder, on every
        node): ``BUILD/work/name``, emptied first (a run killed midway leaves it) and removed
        after; one build runs in a folder at a time."""
        folder = self.out / "work" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
