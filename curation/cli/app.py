"""The ``pericurate`` command line, built from the declared chain (``curation.chain.chain``): one
subcommand per step, each running the chain through that step with only the options its
steps use; ``download``, ``sample`` and the publishing commands beside them.

Importing this module (``pericurate --help``) imports typer and the chain's declaration,
nothing heavier: each command imports what it needs when it runs, and the publishing
commands (``LAZY_COMMANDS``) are listed by their help alone until one of them is used.

Errors: every command raises ``curation.core.errors.PericurateError`` for a problem a user can
cause; ``LazyCommands.invoke`` is the one handler, printing its message as one plain line
(never read as markup: file names and reasons come from hostile sources) and exiting with
its code (2 for usage and source errors). A Ctrl-C anywhere ends the command with one line
and exit 130 (``curation.core.errors.exit_interrupted``); a full disk with one line naming the file.
"""
# ruff: noqa: E402  (the excepthook is set before the imports it guards)

from __future__ import annotations

import sys

from curation.core.errors import interrupts_end_in_one_line

sys.excepthook = interrupts_end_in_one_line  # first: a Ctrl-C while the rest is imported

import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from curation.chain.chain import CHAIN, Step, number, through
from curation.cli.options import (
    DEFAULT_BUILD,
    BuildDir,
    SourceLock,
    lock_path,
    old_lock_note,
)
from curation.cli.up_to_date import skip_when_unchanged
from curation.core.build_lock import holds_build_folder
from curation.core.errors import (
    EXIT_FAILED,
    PericurateError,
    exit_interrupted,
    full_disk_message,
    is_disk_full,
)
from curation.core.vocabulary import Decode, ExecutorName
from curation.source.source import DEFAULT_URL, Source
from splits.figures import SPLITS, STAT_NAMES

if TYPE_CHECKING:
    from rich.table import Table

    from curation.chain.runner import Outcome

HELP = (
    "Curate the periapical-lesion radiographs into leakage-free splits.\n\n"
    "Every step of the chain is a command that runs the chain through that step and leaves "
    "its records in BUILD/work; 'pericurate build' runs them all. The source a run reads is "
    "the one the last 'pericurate download' fetched (recorded in BUILD/work/source.json)."
)

# The publishing commands import heavy libraries (datasets, scipy, the Hub client): each is
# "module:function" and its one-line help, imported only when it runs or shows its own help.
LAZY_COMMANDS = {
    "audit": (
        "curation.audit.audit:audit_command",
        "Audit published splits for look-alike leakage and referral hints (exit 1 if found). "
        "TARGET is a build folder, a folder of parquet files, or a Hub dataset as "
        "OWNER/NAME@REVISION.",
    ),
    "card": (
        "cards.card:card_command",
        "Write the dataset card, LICENSE and NOTICE into BUILD/dataset from the build's figures.",
    ),
    "agreement": (
        "curation.publish.agreement:agreement_command",
        "Score the double-annotated films against each other with the environment's scorer.",
    ),
    "push": (
        "cards.push:push_command",
        "Publish the build as one pinned Hub commit and pin the environment to it.",
    ),
}


# The lazy commands that hold their build folder while they run (``curation.core.build_lock``),
# by the argument naming it; ``audit`` holds a TARGET only when it is a build folder.
LOCKING_COMMANDS = {"card": "build", "push": "build", "audit": "target"}


class _LazyCommand(click.Command):
    """A command known by its name and help until it runs or shows its own help."""

    def __init__(self, name: str, target: str, help: str) -> None:
        super().__init__(name, help=help)
        self.target = target

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        module, _, function = self.target.partition(":")
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        run = getattr(importlib.import_module(module), function)
        if self.name in LOCKING_COMMANDS:  # one command at a time per build folder
            argument = LOCKING_COMMANDS[self.name]
            run = holds_build_folder(self.name, argument, builds_only=argument != "build")(run)
        single.command(self.name, help=self.help)(run)
        command = typer.main.get_command(single)
        return command.make_context(info_name, args, parent=parent, **extra)


class LazyCommands(TyperGroup):
    """The command group: the lazy commands listed after the others, and the one handler of
    ``PericurateError``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *LAZY_COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in LAZY_COMMANDS:
            return super().get_command(ctx, cmd_name)
        return _LazyCommand(cmd_name, *LAZY_COMMANDS[cmd_name])

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a ``PericurateError`` becomes one plain line and its exit code."""
        try:
            return super().invoke(ctx)
        except PericurateError as error:
            click.echo(one_line(str(error)), err=True)
            raise click.exceptions.Exit(error.exit_code) from None
        except KeyboardInterrupt:  # after the unwinding: temporary files gone, locks freed
            exit_interrupted()
        except OSError as error:  # a full disk where no writer named the file
            if not is_disk_full(error):
                raise
            message = full_disk_message(error.filename, "every output is a whole file")
            click.echo(one_line(message), err=True)
            raise click.exceptions.Exit(EXIT_FAILED) from None

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt:
            exit_interrupted()


def one_line(message: str) -> str:
    """``message`` on one line: control characters (a newline in a file name) escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", message)


app = typer.Typer(
    add_completion=False, no_args_is_help=True, help=HELP, cls=LazyCommands, rich_markup_mode=None
)
console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

EXIT_REJECTED = 3


def _source_file(build: Path) -> Path:
    return build / "work" / "source.json"


@app.command()
def sample(
    dest: Annotated[Path, typer.Argument(help="Zip to write.")] = Path(
        "build/sample/periapical-sample.zip"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic films.")] = 0,
    films: Annotated[int, typer.Option(help="Number of original films.")] = 200,
) -> None:
    """Write the synthetic sample source (real layout and quirks; NOT real data) to the zip
    DEST."""
    from curation.sample import write_sample_archive

    truth = write_sample_archive(dest, seed=seed, films=films, progress=True)
    console.print(f"wrote {dest} (synthetic sample, seed {seed}; {len(truth.originals)} originals)")


@app.command()
@holds_build_folder("download")
@skip_when_unchanged("download")
def download(
    source: Annotated[
        str, typer.Argument(help="URL, local zip or extracted folder.")
    ] = DEFAULT_URL,
    build: BuildDir = DEFAULT_BUILD,
    lock: SourceLock = None,
) -> None:
    """Step 1: fetch (resumable), check against the lock, extract safely. SOURCE is a URL,
    a local zip or an extracted folder (default: the real archive's URL)."""
    from curation.source.download import fetch_source

    lock = lock_path(build, lock)
    if note := old_lock_note(lock):
        console.print(note)
    fetched = fetch_source(source, build, lock)
    fetched.save(_source_file(build))
    console.print(f"source ready at {fetched.root}")


@app.command("next")
def next_command(build: BuildDir = DEFAULT_BUILD) -> None:
    """What now: where the build's dataset, review page and card are; the audit and push."""
    from curation.cli.next_steps import next_table

    print(next_table(build))


def _param(name: str, annotation: Any, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _option(name: str, kind: type, default: object, help: str) -> inspect.Parameter:
    return _param(name, Annotated[kind, typer.Option(help=help)], default)


# The options of the step commands: the settings a user may change (shown by the commands
# whose steps use them, ``Step.settings``), then those every step command has.
SETTING_OPTIONS = {
    "seed": _option("seed", int, 0, "Split assignment seed."),
    "decode": _option(
        "decode", Decode, Decode.draft, "Hash decoding: at reduced JPEG scale, or whole."
    ),
    "workers": _option("workers", int, 0, "Worker processes for per-file work (0 = all cores)."),
    "link_visits": _option(
        "link_visits",
        bool,
        False,
        "Join visits of one patient verified by local features into one look-alike component "
        "(one split).",
    ),
}
COMMON_OPTIONS = (
    _option(
        "executor",
        ExecutorName,
        ExecutorName.local,
        "Where per-file work runs: this machine, or a Ray cluster (needs the ray extra).",
    ),
    _option(
        "fail_on_rejected",
        bool,
        True,
        f"Exit {EXIT_REJECTED} when any source file was rejected.",
    ),
)


def step_command(step: Step) -> Callable[..., None]:
    """The command that runs the chain through ``step``, with the options of its steps."""
    used = {name for done in through(step.name) for name in done.settings}
    build = _param("build", BuildDir, DEFAULT_BUILD)
    settings = [option for name, option in SETTING_OPTIONS.items() if name in used]

    def command(
        build: Path, executor: ExecutorName, fail_on_rejected: bool, **settings: Any
    ) -> None:
        _run(step.name, build, executor, fail_on_rejected, settings)

    command.__signature__ = inspect.Signature([build, *settings, *COMMON_OPTIONS])  # type: ignore[attr-defined]
    command.__doc__ = f"Step {number(step)}: {step.help}"
    return holds_build_folder(step.name)(skip_when_unchanged(step.name)(command))


def _run(
    step: str, build: Path, executor: ExecutorName, fail_on_rejected: bool, settings: dict
) -> None:
    from curation.chain.executors import executor_for
    from curation.chain.runner import curate
    from curation.chain.settings import Settings

    source = Source.load(_source_file(build))
    outcome = curate(source, build, Settings(**settings), step, executor_for(executor))
    _print_summary(outcome, step)
    if outcome.rejected and fail_on_rejected:
        console.print(
            f"{outcome.rejected} source files were rejected (reasons in the table above and in "
            f"{build / 'manifest.parquet'}); the outputs are written without them. To accept "
            "that and go on, pass --no-fail-on-rejected (with make: make splits SOURCE=... "
            "BUILD_FLAGS=--no-fail-on-rejected)."
        )
        raise typer.Exit(EXIT_REJECTED)


def _table(title: str, columns: tuple[str, ...], numbers: int) -> Table:
    """A table whose last ``numbers`` columns are right-aligned figures."""
    from rich.table import Table

    table = Table(title=title)
    for n, column in enumerate(columns):
        table.add_column(column, justify="right" if n >= len(columns) - numbers else "left")
    return table


def _print_times(outcome: Outcome) -> None:
    times = outcome.times_report()
    table = _table(
        f"Where the time went ({times['source_images']} source images)",
        ("step", "wall s", "CPU s", "CPU ms per image"),
        3,
    )
    for row in times["steps"]:  # type: ignore[union-attr]
        table.add_row(
            row["step"],
            f"{row['wall_s']:.2f}",
            f"{row['cpu_s']:.2f}",
            f"{row['cpu_ms_per_image']:.2f}",
        )
    console.print(table)


def _print_summary(outcome: Outcome, step: str) -> None:
    from curation.core.records import fate_counts

    fates = _table(f"Source files after step '{step}'", ("kind", "fate", "files"), 1)
    counts = fate_counts(outcome.records)
    for (kind, fate), n in sorted(counts.items()):
        fates.add_row(kind, fate, str(n))
    fates.add_row("all", "", str(sum(counts.values())), style="bold")
    console.print(fates)
    _print_times(outcome)
    summary = outcome.summary
    if summary is None:
        return
    why = _table(
        "Why files were dropped, rejected or ignored", ("kind", "fate", "reason", "files"), 1
    )
    for row in summary.counts.by_reason:
        if row.fate != "kept":
            why.add_row(row.kind, row.fate, row.reason, str(row.files))
    console.print(why)
    goal = " / ".join(str(summary.targets[s]) for s in SPLITS)
    table = _table(f"Splits (film targets {goal})", ("split", *STAT_NAMES), len(STAT_NAMES))
    for split in SPLITS:
        figures = summary.splits[split]
        table.add_row(split, *(str(getattr(figures, name)) for name in STAT_NAMES))
    console.print(table)
    counts_ = summary.counts
    largest = ", ".join(f"{c.cluster_id} ({c.films})" for c in counts_.largest_clusters)
    console.print(
        f"clusters: {counts_.clusters} ({counts_.multi_film_clusters} with look-alikes); "
        f"largest: {largest}; same-picture groups: {counts_.same_picture_groups}, dropped by "
        f"kind: {', '.join(f'{k} {n}' for k, n in counts_.same_picture_dropped.items()) or 'none'}"
    )


for _step in CHAIN:
    app.command(_step.name)(step_command(_step))
