"""The ``pericurate`` command line. The chain's steps are click commands made from their
declaration (``curation.chain.chain``): one per step, running the chain through it, with the
options of the configs of the steps it runs (``step_command``). ``sample``, ``download``,
``next`` and the publishing commands (``curation.cli.publishing``) are typer functions.

Importing this module (``pericurate --help``) imports typer, click and the chain's
declaration, nothing heavier: each command imports what it needs when it runs.

Errors: every command raises ``curation.core.errors.PericurateError`` for a problem a user can
cause; ``Commands.invoke`` is the one handler, printing its message as one plain line
(never read as markup: file names and reasons come from hostile sources) and exiting with
its code (2 for usage and source errors). A Ctrl-C anywhere ends the command with one line
and exit 130 (``curation.core.errors.exit_interrupted``); a full disk, or a file the user may
not write (a read-only folder), with one line naming the file.
"""
# ruff: noqa: E402  (the excepthook is set before the imports it guards)

from __future__ import annotations

import sys

from curation.core.errors import interrupts_end_in_one_line

sys.excepthook = interrupts_end_in_one_line  # first: a Ctrl-C while the rest is imported

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from curation.chain.chain import (
    CHAIN,
    DOWNLOAD_STEP,
    Step,
    number,
    settings_from_options,
    step_settings,
    through,
)
from curation.cli import publishing
from curation.cli.options import DEFAULT_BUILD, BuildDir, SourceLock, setting_option
from curation.cli.splits_command import SPLITS_CONTEXT, splits_command
from curation.cli.up_to_date import Force, run_unless_unchanged, skip_when_unchanged
from curation.core.build_lock import NOT_WRITABLE, holds_build_folder, unwritable_message
from curation.core.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    PericurateError,
    exit_interrupted,
    full_disk_message,
    is_disk_full,
)
from curation.core.vocabulary import ExecutorName
from curation.source.source import DEFAULT_URL, Source, lock_path, old_lock_note
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


class Commands(TyperGroup):
    """The command group: the chain's step commands (made from the declaration) listed after
    ``next``, and the one handler of ``PericurateError``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Lists the chain's step commands right after ``next``."""
        typed = super().list_commands(ctx)
        after = typed.index("next") + 1 if "next" in typed else len(typed)
        return [*typed[:after], *(step.name for step in CHAIN), *typed[after:]]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command named by ``args[0]``; an unknown name is a usage error suggesting the
        one closest command name, if any is close (``difflib``)."""
        if args and self.get_command(ctx, args[0]) is None and not args[0].startswith("-"):
            names = self.list_commands(ctx)
            close = difflib.get_close_matches(args[0], names, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            ctx.fail(f"No such command '{args[0]}'.{hint}")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Makes a chain step's command from the declaration; other names as typer has them."""
        step = next((s for s in CHAIN if s.name == cmd_name), None)
        return step_command(step) if step else super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a ``PericurateError`` becomes one plain line and its exit code."""
        try:
            return super().invoke(ctx)
        except PericurateError as error:
            click.echo(one_line(str(error)), err=True)
            raise click.exceptions.Exit(error.exit_code) from None
        except KeyboardInterrupt:  # after the unwinding: temporary files gone, locks freed
            exit_interrupted()
        except (
            OSError
        ) as error:  # a full disk or a file not ours to write, where no writer named it
            if is_disk_full(error):
                message = full_disk_message(error.filename, "every output is a whole file")
                click.echo(one_line(message), err=True)
                raise click.exceptions.Exit(EXIT_FAILED) from None
            if error.errno in NOT_WRITABLE and error.filename:
                click.echo(one_line(unwritable_message(error)), err=True)
                raise click.exceptions.Exit(EXIT_USAGE) from None
            raise

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Turns a Ctrl-C while the command line is parsed into the one-line exit (exit 130)."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt:
            exit_interrupted()


def one_line(message: str) -> str:
    """``message`` on one line: control characters (a newline in a file name) escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", message)


app = typer.Typer(
    add_completion=False, no_args_is_help=True, help=HELP, cls=Commands, rich_markup_mode=None
)
console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

EXIT_REJECTED = 3


def _source_file(build: Path) -> Path:
    return build / "work" / "source.json"


@app.command()
def sample(
    dest: Annotated[Path, typer.Argument(help="Zip to write.", dir_okay=False)] = Path(
        "build/sample/periapical-sample.zip"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic films.", min=0)] = 0,
    films: Annotated[int, typer.Option(help="Number of original films.")] = 200,
    force: Annotated[bool, typer.Option("--force", help="Write over an existing DEST.")] = False,
) -> None:
    """Write the synthetic sample source (real layout and quirks; NOT real data) to the zip
    DEST."""
    from curation.sample import write_sample_archive

    if dest.exists() and not force:
        raise PericurateError(f"{dest}: already exists; pass --force to write over it.")
    truth = write_sample_archive(dest, seed=seed, films=films, progress=True)
    console.print(f"wrote {dest} (synthetic sample, seed {seed}; {len(truth.originals)} originals)")


@app.command(
    help=f"Step {DOWNLOAD_STEP}: fetch (resumable), check against the lock, extract safely. "
    "SOURCE is a URL, a local zip or an extracted folder (default: the real archive's URL)."
)
@holds_build_folder("download")
@skip_when_unchanged("download")
def download(
    source: Annotated[
        str, typer.Argument(help="URL, local zip or extracted folder.")
    ] = DEFAULT_URL,
    build: BuildDir = DEFAULT_BUILD,
    lock: SourceLock = None,
    force: Force = False,
) -> None:
    """Fetch the source into the build folder (its help, with its step number, is above)."""
    from curation.api import fetch

    lock = lock_path(build, lock)
    if note := old_lock_note(lock):
        console.print(note)
    fetched = fetch(source, build, lock)
    console.print(f"source ready at {fetched.root}")


app.command("splits", context_settings=SPLITS_CONTEXT)(splits_command)


@app.command("next")
def next_command(build: BuildDir = DEFAULT_BUILD) -> None:
    """What now: where the build's dataset, review page and card are; the audit and push."""
    from curation.cli.next_steps import next_table

    print(next_table(build))


def _options_of(step: Step, steps: Sequence[Step]) -> list[click.Option]:
    """The options of every setting of the steps a step command runs, in chain order."""
    options = []
    for done in through(step.name, steps):
        if done.config is None:
            continue
        hints = get_type_hints(done.config)
        options += [setting_option(done.config, f, hints[f.name]) for f in step_settings(done)]
    return options


def step_command(step: Step, steps: Sequence[Step] = CHAIN) -> click.Command:
    """The command that runs the chain through ``step``, with the options of its steps."""
    params: list[click.Parameter] = [
        click.Option(
            ["--build"],
            type=click.Path(file_okay=False, path_type=Path),
            default=DEFAULT_BUILD,
            show_default=True,
            help="Build folder.",
        ),
        *_options_of(step, steps),
        click.Option(
            ["--executor"],
            type=click.Choice([e.value for e in ExecutorName]),
            default=ExecutorName.local.value,
            show_default=True,
            help="Where per-file work runs: this machine, or a Ray cluster (needs the ray extra).",
        ),
        click.Option(
            ["--workers"],
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Local worker processes for per-file work (0 = all cores).",
        ),
        click.Option(
            ["--fail-on-rejected/--no-fail-on-rejected"],
            default=True,
            show_default=True,
            help=f"Exit {EXIT_REJECTED} when any source file was rejected.",
        ),
        click.Option(
            ["--force"],
            is_flag=True,
            default=False,
            help="Run even when inputs, parameters and code are unchanged since last run.",
        ),
    ]

    @holds_build_folder(step.name)
    def command(build: Path, force: bool, **options: Any) -> None:
        def body() -> None:
            _run(step.name, build, options)

        run_unless_unchanged(step.name, {"build": build, **options}, force, body)

    return click.Command(
        step.name, params=params, callback=command, help=f"Step {number(step, steps)}: {step.help}"
    )


def _run(step: str, build: Path, options: dict[str, Any]) -> None:
    from curation.chain.executors import executor_for
    from curation.chain.runner import curate

    settings = settings_from_options(options)
    executor = executor_for(ExecutorName(options["executor"]), options["workers"])
    outcome = curate(Source.load(_source_file(build)), build, settings, step, executor)
    _print_summary(outcome, step)
    if outcome.rejected and options["fail_on_rejected"]:
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
    for row in times["steps"]:
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


for _command in (
    publishing.audit_command,
    publishing.card_command,
    publishing.agreement_command,
    publishing.push_command,
):
    app.command(_command.__name__.removesuffix("_command"))(_command)


def main() -> None:
    """The ``pericurate`` program: the commands, then the process ends with their exit
    status. After a command that ran on Ray, it ends without the interpreter's teardown
    (``curation.chain.executors.leave_process``: Ray's native teardown at exit can abort a
    finished run)."""
    from curation.chain.executors import leave_process

    try:
        app()
    except SystemExit as leaving:
        code = leaving.code
        leave_process(code if isinstance(code, int) else 0 if code is None else 1)
        raise
