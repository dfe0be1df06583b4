"""The curation chain, declared once as data: source -> films -> hashes -> same pictures ->
look-alike components -> splits -> dataset.

``CHAIN`` lists the steps in order. Each entry gives the step's name (its subcommand), its
help, its function, the products of earlier steps it reads, the products it writes and the
settings it uses (the options its subcommand shows). A step function is

    def step(run: Run, **reads) -> dict[str, object]  # exactly the products in ``writes``

and knows nothing of where it runs: an executor (``curation.chain.executors``) calls it and may
hand it other places to read or hash files (``Run.reader``, ``Run.hasher``). Functions are
named as ``"module:function"`` and imported when the step runs, so that this module, which
the command line reads to build its subcommands, imports nothing heavy.

To add a step: write its module with such a function and add one entry to ``CHAIN``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from curation.core.errors import PericurateError
from curation.core.vocabulary import LOOKALIKE_DISTANCE

if TYPE_CHECKING:
    from curation.chain.settings import Settings
    from curation.hashes.hash_films import FilmHasher
    from curation.index.index import FactsReader
    from curation.source.source import Source

Products = Mapping[str, object]


class ChainError(PericurateError):
    """A step is unknown, reads what no earlier step writes, or writes what it did not declare."""


@dataclass(frozen=True)
class StepTime:
    """How long one step took: wall seconds, and CPU seconds of this process and of the
    worker processes the step started and joined (its per-file work)."""

    step: str
    wall_s: float
    cpu_s: float


class Executor(Protocol):
    """Runs steps in order on a run and returns every product they made; ``times`` holds
    each step's time once it ran (``curation.chain.executors``)."""

    times: list[StepTime]

    def run(self, steps: Sequence[Step], run: Run) -> Products: ...


class Tracker(Protocol):
    """A progress bar a step reports to."""

    def total(self, count: int) -> None: ...

    def advance(self, count: int) -> None: ...


@dataclass(frozen=True)
class Run:
    """What every step may use besides the products of the steps before it."""

    source: Source
    out: Path  # the build folder
    settings: Settings
    track: Callable[[str, int | None], Tracker]  # a progress bar: description, total if known
    reader: FactsReader | None = None  # where the index step reads files (None: local cores)
    hasher: FilmHasher | None = None  # where the hash step hashes films (None: local cores)

    def cache(self, name: str) -> Path:
        """A step's cache file, below ``BUILD/cache``."""
        return self.out / "cache" / name


@dataclass(frozen=True)
class Step:
    name: str
    help: str
    function: str  # "module:function", imported when the step runs
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()  # the fields of ``Settings`` the step uses

    def load(self) -> Callable[..., Products]:
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)

    def apply(self, run: Run, products: Products) -> dict[str, object]:
        """``products`` with what this step wrote; it must write exactly what it declares."""
        missing = [name for name in self.reads if name not in products]
        if missing:
            raise ChainError(f"step {self.name!r} reads {', '.join(missing)}, not made yet.")
        written = self.load()(run, **{name: products[name] for name in self.reads})
        if set(written) != set(self.writes):
            raise ChainError(
                f"step {self.name!r} wrote {', '.join(sorted(written)) or 'nothing'} but "
                f"declares {', '.join(self.writes) or 'nothing'}."
            )
        return {**products, **written}


CHAIN: tuple[Step, ...] = (
    Step(
        "index",
        "one record per source file, bad files rejected with a reason.",
        "curation.chain.steps:index_files",
        writes=("records",),
        settings=("workers",),
    ),
    Step(
        "originals",
        "keep original films only (folder and stem rule).",
        "curation.chain.steps:keep_originals",
        reads=("records",),
        writes=("records",),
    ),
    Step(
        "hash",
        "512-bit average hashes, parallel and cached.",
        "curation.chain.steps:hash_all",
        reads=("records",),
        writes=("records", "hashes"),
        settings=("decode", "workers"),
    ),
    Step(
        "near-identical",
        "drop augmented copies and near-identical films (pixel-confirmed).",
        "curation.chain.steps:drop_same_pictures",
        reads=("records", "hashes"),
        writes=("records", "same_picture"),
        settings=("same_picture_distance", "workers"),
    ),
    Step(
        "lookalikes",
        f"look-alike components at Hamming distance <= {LOOKALIKE_DISTANCE}.",
        "curation.chain.steps:join_lookalikes",
        reads=("records", "hashes", "same_picture"),
        writes=("lookalikes",),
        settings=("lookalike_distance", "link_visits", "workers"),
    ),
    Step(
        "assign",
        "whole components to train / validation / test.",
        "curation.chain.steps:assign_splits",
        reads=("records", "lookalikes"),
        writes=("records", "split_of"),
        settings=("fractions", "seed"),
    ),
    Step(
        "build",
        "the whole chain, then referrals, the dataset, manifest, review page and curation.json.",
        "curation.chain.steps:write_build",
        reads=("records", "hashes", "same_picture", "lookalikes", "split_of"),
        writes=("summary",),
        settings=("referral_salt",),
    ),
)


def check_chain(steps: Sequence[Step]) -> None:
    """Refuse a chain with a repeated name or a step reading what no earlier step writes."""
    made: set[str] = set()
    names: set[str] = set()
    for step in steps:
        if step.name in names:
            raise ChainError(f"step {step.name!r} is declared twice.")
        missing = [name for name in step.reads if name not in made]
        if missing:
            raise ChainError(f"step {step.name!r} reads {', '.join(missing)}, not made before it.")
        names.add(step.name)
        made.update(step.writes)


def through(name: str, steps: Sequence[Step] = CHAIN) -> tuple[Step, ...]:
    """The steps up to and including ``name``."""
    names = [step.name for step in steps]
    if name not in names:
        raise ChainError(f"unknown step {name!r}; the steps are {', '.join(names)}.")
    return tuple(steps[: names.index(name) + 1])


def checkpoint_name(step: Step, steps: Sequence[Step] = CHAIN) -> str:
    """``NN-step.parquet``: where a run stopping after ``step`` leaves its records."""
    return f"{list(steps).index(step) + 1:02d}-{step.name}.parquet"


def number(step: Step, steps: Sequence[Step] = CHAIN) -> int:
    """The step's number in the README and the help (``download`` is step 1)."""
    return list(steps).index(step) + 2
