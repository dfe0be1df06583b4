"""``pericurate splits``: what ``make splits`` runs, in one process: ``download``, ``build``,
``card``, ``agreement`` and ``next``, each as its own command would run (its build-folder lock,
its up-to-date check, its output), one after the other. A rerun with nothing changed is mostly
interpreter start-up and imports, so one process instead of five is what keeps it short
(``make bench``, part ``noop``).

The commands are found through the command group (``click.Context``), not imported from
``curation.cli.app``, which registers this one: no import cycle. Options other than
``--build`` go to ``build`` as they are (``--no-fail-on-rejected``, ``--workers``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import click
import typer

from curation.cli.options import DEFAULT_BUILD, BuildDir
from curation.source.source import DEFAULT_URL

# The command's click settings: unknown options are the build step's, handed on to it.
SPLITS_CONTEXT = {"ignore_unknown_options": True, "allow_extra_args": True}


def _command(group: click.Context, name: str) -> click.Command:
    commands = group.command
    found = commands.get_command(group, name) if isinstance(commands, click.Group) else None
    if found is None:  # the group always has the five commands
        raise click.UsageError(f"pericurate has no '{name}' command.")
    return found


def splits_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="URL, local zip or extracted folder.")
    ] = DEFAULT_URL,
    build: BuildDir = DEFAULT_BUILD,
) -> None:
    """Download SOURCE, build, write the card, score the agreement and show what now: each
    step does nothing when up to date. Other options are the build's (see 'pericurate build
    --help'), e.g. --no-fail-on-rejected."""
    group = ctx.parent
    assert group is not None  # a subcommand always has its group's context
    ctx.invoke(_command(group, "download"), source=source, build=build)
    step = _command(group, "build")
    with step.make_context("build", ["--build", str(build), *ctx.args], parent=group) as inner:
        step.invoke(inner)
    ctx.invoke(_command(group, "card"), build=build)
    ctx.invoke(_command(group, "agreement"), build=build)
    ctx.invoke(_command(group, "next"), build=Path(build))
