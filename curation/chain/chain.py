"""The curation chain, declared once: source -> films -> hashes -> same-picture pairs -> one
film kept per picture -> visits of one patient -> look-alike components -> splits -> dataset.

``CHAIN`` lists the steps in order. Each entry gives the step's name (its subcommand), its
help, its function, the products of earlier steps it reads, the products it writes, its
config (a frozen dataclass next to its logic: the step's user settings, from which the
command line makes its options and ``curation.json`` records them), and the build files it
leaves (what the up-to-date check watches). A step function is

    def step(run: Run, [config: StepConfig,] **reads) -> dict[str, object]  # its ``writes``

and knows nothing of where it runs: it hands its per-file work to ``run.map``, which the
executor (``curation.chain.executors``) provides. Step functions import their heavy
libraries inside their bodies, so this declaration (read by ``pericurate --help``) stays light.
A step is given its own config only: what a later step needs of it (the hash version, the
split targets, the look-alike distance) is a product it writes.

To add a step: write its module and function (and its config, if it has settings), and add
one entry to ``CHAIN``; its number, command, options, recorded settings and README row follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import Any, Protocol

from curation.chain import steps
from curation.chain.run import Products, Run, StepTime
from curation.chain.settings import Settings
from curation.core.errors import PericurateError
from curation.core.parallel import Mapper
from curation.core.vocabulary import LOOKALIKE_DISTANCE
from curation.hashes import HashConfig
from curation.lookalikes import LookalikeConfig
from curation.publish import PublishConfig
from curation.same_picture import SamePictureConfig
from splits import AssignConfig


class ChainError(PericurateError):
    """A step is unknown, reads what no earlier step writes, or writes what it did not declare."""


class Executor(Protocol):
    """Runs steps in order on a run and returns every product they made; ``times`` holds
    each step's time once it ran (``curation.chain.executors``)."""

    times: list[StepTime]

    def run(self, steps: Sequence[Step], run: Run) -> Products:
        """Run ``steps`` in order on ``run``.

        Args:
            steps: the steps to run, a prefix of ``CHAIN`` (``through``).
            run: the run's build folder, settings and cache.

        Returns:
            Every product the steps made, by name.
        """
        ...

    def mapping(self, work: str) -> AbstractContextManager[Mapper]:
        """A context in which ``run.map`` hands per-file work to this executor.

        Args:
            work: what the work is, for the progress line.

        Returns:
            A context manager giving the mapper.
        """
        ...


@dataclass(frozen=True)
class Step:
    """One step of the chain: what it reads and writes, and how it runs.

    Args:
        name: the step's name, also its subcommand.
        help: one line for ``--help`` and the README's table.
        function: ``function(run, [config,] **reads)``, returning its ``writes`` by name.
        reads: the products of earlier steps it is given, by name.
        writes: the products it returns, by name.
        config: its settings, a frozen dataclass with defaults (``None``: no settings).
        outputs: the build files (or folders, ending in "/") it leaves.
    """

    name: str
    help: str
    function: Callable[..., dict[str, Any]]
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    config: type | None = None  # the step's settings (a frozen dataclass with defaults)
    outputs: tuple[str, ...] = ()  # build files (or folders, ending in "/") it leaves

    def apply(self, run: Run, products: Products) -> dict[str, object]:
        """Run the step on what earlier steps made; it must write exactly what it declares.

        Args:
            run: the run, whose settings give the step's config.
            products: every product made so far, by name.

        Returns:
            ``products`` with what this step wrote.

        Raises:
            ChainError: a product it reads is missing, or it wrote other products than
                it declares.
        """
        missing = [name for name in self.reads if name not in products]
        if missing:
            raise ChainError(f"step {self.name!r} reads {', '.join(missing)}, not made yet.")
        arguments = {name: products[name] for name in self.reads}
        if self.config is not None:
            arguments["config"] = run.settings.of(self.config)
        written = self.function(run, **arguments)
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
        steps.index_files,
        writes=("records",),
    ),
    Step(
        "originals",
        "keep original films only (folder and stem rule).",
        steps.keep_originals,
        reads=("records",),
        writes=("records",),
    ),
    Step(
        "hash",
        "512-bit average hashes, parallel and cached; a film that does not decode or shows no"
        " content rejected.",
        steps.hash_all,
        reads=("records",),
        writes=("records", "hashes", "hash_version"),
        config=HashConfig,
    ),
    Step(
        "same-picture",
        "same-picture pairs confirmed in pixels or under another frame, with their evidence.",
        steps.find_same_picture,
        reads=("records", "hashes"),
        writes=("same_picture_pairs",),
        config=SamePictureConfig,
    ),
    Step(
        "keeper",
        "one film kept per same-picture group, by evidence from the files.",
        steps.keep_one_per_picture,
        reads=("records", "hashes", "same_picture_pairs"),
        writes=("records", "kept_groups"),
    ),
    Step(
        "visits",
        "visits of one patient among the kept films (retrieval, then verification).",
        steps.find_visits,
        reads=("records",),
        writes=("visits",),
    ),
    Step(
        "lookalikes",
        f"look-alike components at Hamming distance <= {LOOKALIKE_DISTANCE}.",
        steps.join_lookalikes,
        reads=("records", "hashes", "kept_groups", "visits"),
        writes=("lookalikes",),
        config=LookalikeConfig,
    ),
    Step(
        "assign",
        "whole components to train / validation / test.",
        steps.assign_splits,
        reads=("records", "lookalikes"),
        writes=("records", "split_of", "split_targets"),
        config=AssignConfig,
    ),
    Step(
        "build",
        "the whole chain, then referrals, the dataset, manifest, review page and curation.json.",
        steps.write_build,
        reads=(
            "records",
            "hashes",
            "hash_version",
            "same_picture_pairs",
            "kept_groups",
            "lookalikes",
            "split_of",
            "split_targets",
        ),
        writes=("summary",),
        config=PublishConfig,
        outputs=(
            "manifest.parquet",
            "clusters.parquet",
            "agreement.parquet",
            "curation.json",
            "dataset/data/",
            "review/",
        ),
    ),
)


def check_chain(steps: Sequence[Step]) -> None:
    """Refuse a chain with a repeated name, a step reading what no earlier step writes, or
    two settings of one name (each is one command-line option).

    Args:
        steps: the chain to check, in order.

    Raises:
        ChainError: naming the first step that breaks a rule.
    """
    made: set[str] = set()
    names: set[str] = set()
    settings: set[str] = set()
    for step in steps:
        if step.name in names:
            raise ChainError(f"step {step.name!r} is declared twice.")
        missing = [name for name in step.reads if name not in made]
        if missing:
            raise ChainError(f"step {step.name!r} reads {', '.join(missing)}, not made before it.")
        shared = settings & {field.name for field in step_settings(step)}
        if shared:
            raise ChainError(f"step {step.name!r} repeats the setting {', '.join(shared)}.")
        settings.update(field.name for field in step_settings(step))
        names.add(step.name)
        made.update(step.writes)


def step_settings(step: Step) -> tuple[Any, ...]:
    """The step's user settings.

    Args:
        step: a step of the chain.

    Returns:
        The fields of its config in declaration order (none when it has no config).
    """
    return fields(step.config) if step.config is not None else ()


def through(name: str, steps: Sequence[Step] = CHAIN) -> tuple[Step, ...]:
    """The steps a run stopping after ``name`` runs.

    Args:
        name: a step's name.
        steps: the chain.

    Returns:
        The steps up to and including ``name``.

    Raises:
        ChainError: no step has that name.
    """
    names = [step.name for step in steps]
    if name not in names:
        raise ChainError(f"unknown step {name!r}; the steps are {', '.join(names)}.")
    return tuple(steps[: names.index(name) + 1])


def checkpoint_name(step: Step, steps: Sequence[Step] = CHAIN) -> str:
    """Where a run stopping after ``step`` leaves its records.

    Args:
        step: a step of ``steps``.
        steps: the chain.

    Returns:
        ``NN-step.parquet``, numbered by the step's place in the chain.
    """
    return f"{list(steps).index(step) + 1:02d}-{step.name}.parquet"


DOWNLOAD_STEP = 1  # fetching the source comes before the chain, which reads what it fetched


def number(step: Step, steps: Sequence[Step] = CHAIN) -> int:
    """The step's number in the README and the help: the one place step numbers come from.

    Args:
        step: a step of ``steps``.
        steps: the chain.

    Returns:
        Its number, counting the download (step 1) before the chain.
    """
    return DOWNLOAD_STEP + 1 + list(steps).index(step)


def settings_from_options(options: Mapping[str, Any], steps: Sequence[Step] = CHAIN) -> Settings:
    """Each configured step's config from command-line option values.

    Args:
        options: option values by setting name; settings not given keep their defaults.
        steps: the chain.

    Returns:
        The settings, one config per configured step.
    """
    return Settings(
        *(
            step.config(
                **{f.name: options[f.name] for f in step_settings(step) if f.name in options}
            )
            for step in steps
            if step.config is not None
        )
    )


def bound_settings(settings: Settings, steps: Sequence[Step] = CHAIN) -> Settings:
    """The settings a run of ``steps`` records in ``curation.json``.

    Args:
        settings: the run's settings.
        steps: the steps that run.

    Returns:
        ``settings`` with the config of every configured step of ``steps``, named by its step.
    """
    return settings.for_steps((step.name, step.config) for step in steps if step.config)
