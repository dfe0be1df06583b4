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
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from curation.atomic import write_json
from curation.download import DEFAULT_URL, fetch_source
from curation.errors import PericurateError, SourceError
from curation.up_to_date import skip_when_unchanged

if TYPE_CHECKING:
    from curation.pipeline import Outcome, Settings, Source

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
    path = _source_file(build)
    if not path.exists():
        raise SourceError(f"{path}: no source yet; run `pericurate download` first.")
    from curation.pipeline import Source

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        source = Source(
            Path(data["root"]),
            str(data["origin"]),
            data["sha256"],
            data["size"],
            tuple(data["skipped"]),
            str(data["comment"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SourceError(
            f"{path}: not a valid source record ({type(error).__name__}); "
            "run `pericurate download` again."
        ) from None
    if not all(isinstance(name, str) for name in source.skipped):
        raise SourceError(f"{path}: not a valid source record; run `pericurate download` again.")
    return source


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
@skip_when_unchanged("download")
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
    write_json(
        _source_file(build),
        {
            "root": str(fetched.root),
            "origin": fetched.origin,
            "sha256": fetched.sha256,
            "size": fetched.size,
            "skipped": list(fetched.skipped),
            "comment": fetched.comment,
        },
    )
    console.print(f"source ready at {fetched.root}")


def _settings(seed: int, decode: str, workers: int) -> Settings:
    from curation.pipeline import Settings

    if decode not in ("draft", "full"):
        raise typer.BadParameter("decode must be 'draft' or 'full'")
    return Settings(seed=seed, decode=decode, workers=workers)  # type: ignore[arg-type]


def _run(
    step: str, build: Path, seed: int, decode: str, workers: int, fail_on_rejected: bool
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
    from rich.table import Table

    from curation.records import fate_counts

    fates = Table(title=f"Source files after step '{step}'")
    for column in ("kind", "fate", "files"):
        fates.add_column(column, justify="right" if column == "files" else "left")
    counts = fate_counts(outcome.records)
    for (kind, fate), n in sorted(counts.items()):
        fates.add_row(kind, fate, str(n))
    fates.add_row("all", "", str(sum(counts.values())), style="bold")
    console.print(fates)
    reasons = outcome.summary.get("counts", {}).get("by_reason", [])
    if reasons:
        why = Table(title="Why files were dropped, rejected or ignored")
        for column in ("kind", "fate", "reason", "files"):
            why.add_column(column, justify="right" if column == "files" else "left")
        for row in reasons:
            if row["fate"] != "kept":
                why.add_row(row["kind"], row["fate"], row["reason"], str(row["files"]))
        console.print(why)
    splits = outcome.summary.get("splits")
    if not splits:
        return
    targets = outcome.summary["targets"]
    goal = " / ".join(str(targets[s]) for s in ("train", "validation", "test"))
    table = Table(title=f"Splits (film targets {goal})")
    columns = ("films", "lesions", "pai3", "pai4", "pai5", "lesion_free")
    table.add_column("split")
    for column in columns:
        table.add_column(column, justify="right")
    for split, figures in splits.items():
        table.add_row(split, *(str(figures[c]) for c in columns))
    console.print(table)
    counts_summary = outcome.summary["counts"]
    largest = ", ".join(
        f"{c['cluster_id']} ({c['films']})" for c in counts_summary["largest_clusters"]
    )
    console.print(
        f"clusters: {counts_summary['clusters']} ({counts_summary['multi_film_clusters']} with "
        f"look-alikes); largest: {largest}; same-picture groups: "
        f"{counts_summary['same_picture_groups']}, dropped by kind: "
        f"{counts_summary['same_picture_dropped']}"
    )


def _step_command(step: str, doc: str) -> None:
    @skip_when_unchanged(step)
    def command(
        build: BuildDir = DEFAULT_BUILD,
        seed: Annotated[int, typer.Option(help="Split assignment seed.")] = 0,
        decode: Annotated[str, typer.Option(help="Hash decoding: draft or full.")] = "draft",
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
    "lookalikes": "Step 6: look-alike components at Hamming distance <= 30.",
    "assign": "Step 7: whole components to train / validation / test.",
    "build": "Steps 2-9: the whole chain, writing the dataset, manifest and curation.json.",
}
for _step, _help in STEP_HELP.items():  # the steps of curation.pipeline.STEPS, in order
    _step_command(_step, _help)
