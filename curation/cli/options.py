"""Command-line options that several commands share, each defined once. Only typer is
imported here, so that the commands' help stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from curation.source.source import LOCK_NAME

DEFAULT_BUILD = Path("build")
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.")]

SourceLock = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        help=f"sha256/size lock of the source archive [default: BUILD/{LOCK_NAME}, or "
        f"./{LOCK_NAME} when an earlier version left one there].",
        show_default=False,
    ),
]
