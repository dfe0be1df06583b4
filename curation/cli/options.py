"""Command-line options that several commands share, each defined once. Only typer and the
configs (standard library) are imported here, so that the commands' help stays fast."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from curation.lookalikes import LookalikeConfig
from curation.source.source import LOCK_NAME

DEFAULT_BUILD = Path("build")
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.", file_okay=False)]
Workers = Annotated[
    int, typer.Option(help="Local worker processes for per-file work (0 = all cores).", min=0)
]


def setting_range(config: type, name: str) -> dict[str, Any]:
    """The ``min`` and ``max`` a config declares on its field ``name`` (for an option of the
    same quantity outside the chain, such as the audit's threshold)."""
    (field,) = (f for f in fields(config) if f.name == name)
    return {k: field.metadata[k] for k in ("min", "max") if k in field.metadata}


LookalikeThreshold = Annotated[
    int,
    typer.Option(
        "--threshold",
        help="Look-alike distance in bits of 512 (scaled for 64-bit hashes).",
        **setting_range(LookalikeConfig, "lookalike_distance"),
    ),
]

SourceLock = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        help=f"sha256/size lock of the source archive [default: BUILD/{LOCK_NAME}, or "
        f"./{LOCK_NAME} when an earlier version left one there].",
        show_default=False,
    ),
]
