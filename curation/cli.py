"""The ``pericurate`` command line: it composes the steps and shows what they did.

Every step of the chain is a subcommand that runs the chain through that step and leaves its
records in ``BUILD/work``; ``pericurate build`` runs them all. The source a run reads is the
one the last ``pericurate download`` fetched (recorded in ``BUILD/work/source.json``).

Errors: every command raises ``curation.errors.PericurateError`` for a problem a user can
cause; ``LazyCommands.invoke`` is the one handler, printing its message as one plain line
(never read as rich markup: file names and reasons come from hostile sources) and exiting
with its code (2 for usage and source errors).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from curation.download import fetch_source
from curation.errors import PericurateError
from curation.records import fate_counts
from curation.source import DEFAULT_URL, Source
from curation.vocabulary import LOOKALIKE_DISTANCE, Decode
from splits.figures import SPLITS, STAT_NAMES

if TYPE_CHECKING:
    from curation.pipeline import Outcome, Settings

# Commands whose modules import heavy libraries (datasets, scipy, pandas, the Hub client):
# imported only when run, so the other commands start in a fraction of a second.
LAZY_COMMANDS = {
    "audit": ("curation.audit", "audit_command"),
    "card": ("cards.card", "card_command"),
    "agreement": ("curation.agreement", "agreement_command"),
    "push": ("cards.push", "push_command"),
}


class LazyCommands(TyperGroup):
    """A command group that imports a ``LAZY_COMMANDS`` module when its command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *LAZY_COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in LAZY_COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, function = LAZY_COMMANDS[cmd_name]
        single = typer.Typer(add_completion=False)
        single.command(cmd_name)(getattr(importlib.import_module(module), function))
        return typer.main.get_command(single)

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a ``PericurateError`` becomes one plain line and its exit code."""
        try:
            return super().invoke(ctx)
        except PericurateError as error:
            click.echo(one_line(str(error)), err=True)
            raise click.exceptions.Exit(error.exit_code) from None


def one_line(message: str) -> str:
    """``message`` on one line: control characters (a newline in a file name) escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", message)


app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, cls=LazyCommands)
console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

EXIT_REJECTED = 3
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.")]
DEFAULT_BUILD = Path("build")


def _source_file(build: Path) -> Path:
    return build / "work" / "source.json"


def _load_source(build: Path) -> Source:
    return Source.load(_source_file(build))


@app.command()
def sample(
    dest: Annotated[Path, typer.Argument(help="Zip to write.")] = Path(
        "build/sample/periapical-sample.zip"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic films.")] = 0,
    films: Annotated[int, typer.Option(help="Number of original films.")] = 200,
) -> None:
    """Write the synthetic sample source (real layout and quirks; NOT real data)."""
    from curation.sample import write_sample_archive

    truth = write_sample_archive(dest, seed=seed, films=films)
    console.print(f"wrote {dest} (synthetic sample, seed {seed}; {len(truth.originals)} originals)")


@app.command()
def download(
    source: Annotated[
        str, typer.Argument(help="URL, local zip or extracted folder.")
    ] = DEFAULT_URL,
    build: BuildDir = DEFAULT_BUILD,
    lock: Annotated[Path, typer.Option(help="sha256/size lock of the source archive.")] = Path(
        "source.lock.json"
    ),
) -> None:
    """Step 1: fetch (resumable), check against the lock, extract safely."""
    fetched = fetch_source(source, build, lock)
    fetched.save(_source_file(build))
    console.print(f"source ready at {fetched.root}")


def _settings(seed: int, decode: Decode, workers: int) -> Settings:
    from curation.pipeline import Settings

    return Settings(seed=seed, decode=decode, workers=workers)


def _run(
    step: str, build: Path, seed: int, decode: Decode, workers: int, fail_on_rejected: bool
) -> None:
    from curation.pipeline import curate

    outcome = curate(_load_source(build), build, _settings(seed, decode, workers), stop_after=step)
    _print_summary(outcome, step)
    if outcome.rejected and fail_on_rejected:
        console.print(
            f"{outcome.rejected} source files were rejected (see the manifest).", style="yellow"
        )
        raise typer.Exit(EXIT_REJECTED)


def _print_summary(outcome: Outcome, step: str) -> None:
    fates = Table(title=f"Source files after step '{step}'")
    for column in ("kind", "fate", "files"):
        fates.add_column(column, justify="right" if column == "files" else "left")
    counts = fate_counts(outcome.records)
    for (kind, fate), n in sorted(counts.items()):
        fates.add_row(kind, fate, str(n))
    fates.add_row("all", "", str(sum(counts.values())), style="bold")
    console.print(fates)
    summary = outcome.summary
    if summary is None:
        return
    why = Table(title="Why files were dropped, rejected or ignored")
    for column in ("kind", "fate", "reason", "files"):
        why.add_column(column, justify="right" if column == "files" else "left")
    for row in summary.counts.by_reason:
        if row.fate != "kept":
            why.add_row(row.kind, row.fate, row.reason, str(row.files))
    console.print(why)
    goal = " / ".join(str(summary.targets[s]) for s in SPLITS)
    table = Table(title=f"Splits (film targets {goal})")
    table.add_column("split")
    for column in STAT_NAMES:
        table.add_column(column, justify="right")
    for split in SPLITS:
        figures = summary.splits[split]
        table.add_row(split, *(str(getattr(figures, name)) for name in STAT_NAMES))
    console.print(table)
    done = summary.counts
    largest = ", ".join(f"{c.cluster_id} ({c.films})" for c in done.largest_clusters)
    console.print(
        f"clusters: {done.clusters} ({done.multi_film_clusters} with look-alikes); "
        f"largest: {largest}; same-picture groups: {done.same_picture_groups}, dropped by "
        f"kind: {done.same_picture_dropped}"
    )


def _step_command(step: str, doc: str) -> None:
    def command(
        build: BuildDir = DEFAULT_BUILD,
        seed: Annotated[int, typer.Option(help="Split assignment seed.")] = 0,
        decode: Annotated[
            Decode, typer.Option(help="Hash decoding: draft or full.")
        ] = Decode.draft,
        workers: Annotated[int, typer.Option(help="Hash worker processes (0 = all cores).")] = 0,
        fail_on_rejected: Annotated[
            bool, typer.Option(help=f"Exit {EXIT_REJECTED} when any source file was rejected.")
        ] = True,
    ) -> None:
        _run(step, build, seed, decode, workers, fail_on_rejected)

    command.__doc__ = doc
    app.command(step)(command)


STEP_HELP = {
    "index": "Step 2: one record per source file, bad files rejected with a reason.",
    "originals": "Step 3: keep original films only (folder and stem rule).",
    "hash": "Step 4: 512-bit average hashes, parallel and cached.",
    "near-identical": "Step 5: drop augmented copies and near-identical films (pixel-confirmed).",
    "lookalikes": f"Step 6: look-alike components at Hamming distance <= {LOOKALIKE_DISTANCE}.",
    "assign": "Step 7: whole components to train / validation / test.",
    "build": "Steps 2-9: the whole chain, writing the dataset, manifest and curation.json.",
}
for _step, _help in STEP_HELP.items():  # the steps of curation.pipeline.STEPS, in order
    _step_command(_step, _help)
