"""Command-line options that several commands share, each defined once. Only typer is
imported here, so that the commands' help stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DEFAULT_BUILD = Path("build")
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.")]
